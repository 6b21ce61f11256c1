//! What every collective is to the rank that runs it: its buffers, its input, one iteration
//! and the check of its output.

use super::comm::{BufferLens, Bufs, Comm};
use super::world::World;
use crate::error::Result;
use crate::record::Pattern;

/// One collective, as every rank runs it.
pub trait Collective {
    fn pattern(&self) -> Pattern;

    /// The algorithm that runs at `size` bytes, as records name it (a ring allreduce of fewer
    /// elements than ranks runs as recursive doubling, as Open MPI's does).
    fn algorithm(&self, world: World, size: usize) -> String;

    /// Why this collective cannot run at `size` bytes among `world.size` ranks, if it cannot.
    fn refuse(&self, _world: World, _size: usize) -> Option<String> {
        None
    }

    fn buffers(&self, world: World, size: usize) -> BufferLens;

    /// Fills this rank's input so that [`Collective::check`] can tell a right result from a
    /// wrong one, and clears what the collective will write.
    fn fill(&self, world: World, size: usize, bufs: &mut Bufs);

    /// One iteration (the [`Comm`] counts the payload it sends).
    fn iterate(&self, comm: &mut Comm, size: usize, bufs: &mut Bufs) -> Result<()>;

    /// Whether the output after one iteration from [`Collective::fill`]'s input is right.
    fn check(&self, world: World, size: usize, bufs: &Bufs) -> std::result::Result<(), String>;
}

/// The byte a rank's input holds at `index` of the block meant for `to` (or of its `slot`):
/// different for every sender, receiver and place, so a block delivered to the wrong rank
/// or place, shifted or cut short, does not pass for the right one.
pub fn pattern_byte(from: usize, to: usize, index: usize) -> u8 {
    (from.wrapping_mul(31) ^ to.wrapping_mul(7)).wrapping_add(index.wrapping_mul(13)) as u8
}

/// The first place where `got` differs from what `expect` says it should hold.
pub fn first_difference(got: &[u8], expect: impl Fn(usize) -> u8) -> Option<usize> {
    got.iter().enumerate().position(|(i, &b)| b != expect(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_bytes_tell_senders_receivers_and_places_apart() {
        assert_ne!(pattern_byte(1, 2, 0), pattern_byte(2, 1, 0));
        assert_ne!(pattern_byte(1, 2, 0), pattern_byte(1, 3, 0));
        assert_ne!(pattern_byte(1, 2, 0), pattern_byte(1, 2, 1));
        assert_eq!(first_difference(&[1, 2, 4], |i| i as u8 + 1), Some(2));
        assert_eq!(first_difference(&[1, 2, 3], |i| i as u8 + 1), None);
    }
}
