//! `bcast`: one rank's message to every other (`MPI_Bcast`, as `osu_bcast` times it) down
//! Open MPI's binomial tree, unsegmented: a rank receives the whole message from its parent,
//! then sends it to each of its children at once. Counted from the root, rank v's parent is v
//! with its lowest set bit cleared and its children are v + 1, v + 2, v + 4, ... below that
//! bit, so the root sends ⌈log₂ N⌉ messages and the tree is that many levels deep.

use clap::Args;

use crate::argv::Argv;
use crate::error::Result;
use crate::ranks::args::RankArgs;
use crate::ranks::collective::{Collective, first_difference, pattern_byte};
use crate::ranks::comm::{Buf, BufferLens, Bufs, Comm};
use crate::ranks::world::World;
use crate::record::Pattern;

/// `orchestrate-worker bcast`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct BcastArgs {
    #[command(flatten)]
    pub ranks: RankArgs,
    /// The rank whose message everyone receives.
    #[arg(long, value_name = "R", default_value_t = 0)]
    pub root: u32,
}

impl BcastArgs {
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Argv::new("bcast");
        self.ranks.write(&mut a);
        a.opt_unless("--root", self.root, 0);
        a.into_vec()
    }
}

pub struct Bcast {
    pub root: usize,
}

/// A rank's place in the binomial tree, counted from the root.
struct Tree {
    parent: Option<usize>,
    children: Vec<usize>,
}

impl Bcast {
    fn tree(&self, w: World) -> Tree {
        let v = (w.rank + w.size - self.root) % w.size;
        let real = |v: usize| (v + self.root) % w.size;
        let mut children = Vec::new();
        let mut mask = 1;
        while mask < w.size {
            if v & mask != 0 {
                return Tree {
                    parent: Some(real(v ^ mask)),
                    children,
                };
            }
            if v + mask < w.size {
                children.push(real(v + mask));
            }
            mask <<= 1;
        }
        Tree {
            parent: None,
            children,
        }
    }
}

impl Collective for Bcast {
    fn pattern(&self) -> Pattern {
        Pattern::Bcast
    }

    fn algorithm(&self, _world: World, _size: usize) -> String {
        "binomial".to_owned()
    }

    fn refuse(&self, world: World, size: usize) -> Option<String> {
        if self.root >= world.size {
            Some(format!(
                "--root {} is not among the {} ranks",
                self.root, world.size
            ))
        } else {
            (size == 0).then(|| "a broadcast of 0 bytes sends nothing".to_owned())
        }
    }

    fn buffers(&self, _world: World, size: usize) -> BufferLens {
        BufferLens {
            recv: size,
            ..BufferLens::default()
        }
    }

    fn fill(&self, world: World, _size: usize, bufs: &mut Bufs) {
        if world.rank == self.root {
            for (i, b) in bufs.recv.iter_mut().enumerate() {
                *b = pattern_byte(self.root, 0, i);
            }
        } else {
            bufs.recv.fill(0);
        }
    }

    fn iterate(&self, comm: &mut Comm, size: usize, bufs: &mut Bufs) -> Result<()> {
        // Rebuilt per iteration is a few words; kept out of the way of the sockets' time.
        let tree = self.tree(comm.world);
        if let Some(p) = tree.parent {
            comm.recv(p, Buf::Recv, 0..size);
            comm.complete(bufs)?;
        }
        for &c in &tree.children {
            comm.send(c, Buf::Recv, 0..size);
        }
        comm.complete(bufs)?;
        Ok(())
    }

    fn check(&self, _world: World, _size: usize, bufs: &Bufs) -> std::result::Result<(), String> {
        match first_difference(&bufs.recv, |i| pattern_byte(self.root, 0, i)) {
            Some(i) => Err(format!("byte {i} is not the root's")),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(rank: usize, size: usize, root: usize) -> (Option<usize>, Vec<usize>) {
        let t = Bcast { root }.tree(World { rank, size });
        (t.parent, t.children)
    }

    #[test]
    fn the_binomial_tree_is_open_mpis() {
        assert_eq!(tree(0, 16, 0), (None, vec![1, 2, 4, 8]));
        assert_eq!(tree(8, 16, 0), (Some(0), vec![9, 10, 12]));
        assert_eq!(tree(6, 16, 0), (Some(4), vec![7]));
        assert_eq!(tree(15, 16, 0), (Some(14), vec![]));
        // Not a power of two: children past the last rank are left out.
        assert_eq!(tree(4, 6, 0), (Some(0), vec![5]));
        // Another root: the same tree, turned.
        assert_eq!(tree(3, 4, 3), (None, vec![0, 1]));
        assert_eq!(tree(1, 4, 3), (Some(3), vec![2]));
    }

    #[test]
    fn every_rank_but_the_root_has_one_parent_and_is_reached() {
        for size in 2..20 {
            let mut reached = vec![false; size];
            reached[0] = true;
            for rank in 0..size {
                for c in tree(rank, size, 0).1 {
                    assert_eq!(tree(c, size, 0).0, Some(rank));
                    assert!(!reached[c]);
                    reached[c] = true;
                }
            }
            assert!(reached.iter().all(|&r| r), "{size}");
        }
    }
}
