//! Where one rank stands among the others.

/// Where one rank stands among `size` ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct World {
    pub rank: usize,
    pub size: usize,
}

impl World {
    /// The rank `k` places after this one, around the ring.
    pub fn after(&self, k: usize) -> usize {
        (self.rank + k) % self.size
    }

    /// The rank `k` places before this one, around the ring.
    pub fn before(&self, k: usize) -> usize {
        (self.rank + self.size - k % self.size) % self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_neighbours_wrap_around() {
        let w = World { rank: 0, size: 4 };
        assert_eq!((w.after(1), w.before(1)), (1, 3));
        assert_eq!((w.after(3), w.before(3)), (3, 1));
        let w = World { rank: 3, size: 4 };
        assert_eq!((w.after(1), w.before(1), w.before(4)), (0, 2, 3));
    }
}
