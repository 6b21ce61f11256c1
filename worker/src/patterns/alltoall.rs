//! `alltoall`: every rank sends its own message to every other (`MPI_Alltoall`, as
//! `osu_alltoall` times it; the transpose of a spectral transform), by one of Open MPI's
//! algorithms:
//!
//! - `pairwise`: N − 1 steps; in step k a rank sends to the rank k after it and receives from
//!   the rank k before it (Open MPI's algorithm 2).
//! - `linear`: every send and receive posted at once and completed together (algorithm 1).
//!
//! The message size is per destination: each rank sends (N − 1) messages of that size.

use clap::{Args, ValueEnum};

use crate::argv::{Argv, value_name};
use crate::error::Result;
use crate::ranks::args::RankArgs;
use crate::ranks::collective::{Collective, first_difference, pattern_byte};
use crate::ranks::comm::{Buf, BufferLens, Bufs, Comm};
use crate::ranks::world::World;
use crate::record::Pattern;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AlltoallAlgorithm {
    /// One partner per step, N − 1 steps (Open MPI's algorithm 2).
    Pairwise,
    /// Everything posted at once (Open MPI's algorithm 1, basic linear).
    Linear,
}

/// `orchestrate-worker alltoall`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct AlltoallArgs {
    #[command(flatten)]
    pub ranks: RankArgs,
    /// The algorithm every rank runs.
    #[arg(long, value_enum, default_value = "pairwise")]
    pub algorithm: AlltoallAlgorithm,
}

impl AlltoallArgs {
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Argv::new("alltoall");
        self.ranks.write(&mut a);
        a.opt("--algorithm", value_name(&self.algorithm));
        a.into_vec()
    }
}

pub struct Alltoall {
    pub algorithm: AlltoallAlgorithm,
}

impl Collective for Alltoall {
    fn pattern(&self) -> Pattern {
        Pattern::Alltoall
    }

    fn algorithm(&self, _world: World, _size: usize) -> String {
        value_name(&self.algorithm)
    }

    fn refuse(&self, _world: World, size: usize) -> Option<String> {
        (size == 0).then(|| "an all-to-all of 0 bytes sends nothing".to_owned())
    }

    fn buffers(&self, world: World, size: usize) -> BufferLens {
        BufferLens {
            send: world.size * size,
            recv: world.size * size,
            scratch: 0,
        }
    }

    fn fill(&self, world: World, size: usize, bufs: &mut Bufs) {
        for (to, block) in bufs.send.chunks_exact_mut(size).enumerate() {
            for (i, b) in block.iter_mut().enumerate() {
                *b = pattern_byte(world.rank, to, i);
            }
        }
        bufs.recv.fill(0);
    }

    fn iterate(&self, comm: &mut Comm, size: usize, bufs: &mut Bufs) -> Result<()> {
        let w = comm.world;
        let block = |r: usize| r * size..(r + 1) * size;
        bufs.recv[block(w.rank)].copy_from_slice(&bufs.send[block(w.rank)]);
        for k in 1..w.size {
            let (to, from) = (w.after(k), w.before(k));
            comm.recv(from, Buf::Recv, block(from));
            comm.send(to, Buf::Send, block(to));
            if self.algorithm == AlltoallAlgorithm::Pairwise {
                comm.complete(bufs)?;
            }
        }
        comm.complete(bufs)?;
        Ok(())
    }

    fn check(&self, world: World, size: usize, bufs: &Bufs) -> std::result::Result<(), String> {
        for (from, block) in bufs.recv.chunks_exact(size).enumerate() {
            if let Some(i) = first_difference(block, |i| pattern_byte(from, world.rank, i)) {
                return Err(format!("byte {i} of rank {from}'s block is not its"));
            }
        }
        Ok(())
    }
}
