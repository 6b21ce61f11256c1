//! `allreduce`: the element-wise sum of every rank's vector of 32-bit floats, at every rank
//! (`MPI_Allreduce` with `MPI_SUM` on `MPI_FLOAT`, as `osu_allreduce` times it), by one of
//! Open MPI's algorithms, step for step:
//!
//! - `ring`: the vector in N blocks; N − 1 steps of reduce-scatter (each rank sends the block
//!   it last summed to the next rank and sums the block it receives from the previous one),
//!   then N − 1 steps of allgather around the same ring. Each rank sends 2(N − 1)/N of the
//!   vector, in messages of 1/N of it. With fewer elements than ranks it runs as recursive
//!   doubling, as Open MPI's does (the record names what ran).
//! - `recursive-doubling`: log₂ N steps, in each of which a rank swaps its whole vector with
//!   the rank whose number differs in one bit and sums; with N not a power of two, the first
//!   2·(N − P) ranks (P the power of two below N) pair off first and the even ones get the
//!   result at the end.

use clap::{Args, ValueEnum};

use crate::argv::{Argv, value_name};
use crate::error::Result;
use crate::ranks::args::RankArgs;
use crate::ranks::collective::Collective;
use crate::ranks::comm::{Buf, BufferLens, Bufs, Comm};
use crate::ranks::world::World;
use crate::record::Pattern;

/// Bytes of one element.
const ELEMENT: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AllreduceAlgorithm {
    /// Reduce-scatter and allgather around a ring (Open MPI's algorithm 4).
    Ring,
    /// Pairwise exchanges of the whole vector at doubling distances (Open MPI's algorithm 3).
    RecursiveDoubling,
}

/// `orchestrate-worker allreduce`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct AllreduceArgs {
    #[command(flatten)]
    pub ranks: RankArgs,
    /// The algorithm every rank runs.
    #[arg(long, value_enum, default_value = "ring")]
    pub algorithm: AllreduceAlgorithm,
}

impl AllreduceArgs {
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Argv::new("allreduce");
        self.ranks.write(&mut a);
        a.opt("--algorithm", value_name(&self.algorithm));
        a.into_vec()
    }
}

pub struct Allreduce {
    pub algorithm: AllreduceAlgorithm,
}

impl Allreduce {
    /// What runs at `size` bytes among `world.size` ranks.
    fn effective(&self, world: World, size: usize) -> AllreduceAlgorithm {
        match self.algorithm {
            AllreduceAlgorithm::Ring if size / ELEMENT < world.size => {
                AllreduceAlgorithm::RecursiveDoubling
            }
            a => a,
        }
    }
}

impl Collective for Allreduce {
    fn pattern(&self) -> Pattern {
        Pattern::Allreduce
    }

    fn algorithm(&self, world: World, size: usize) -> String {
        value_name(&self.effective(world, size))
    }

    fn refuse(&self, _world: World, size: usize) -> Option<String> {
        (size == 0 || size % ELEMENT != 0).then(|| {
            format!("an allreduce sums 4-byte floats: {size} B is not a positive multiple of 4")
        })
    }

    fn buffers(&self, world: World, size: usize) -> BufferLens {
        let scratch = match self.effective(world, size) {
            AllreduceAlgorithm::Ring => Blocks::new(world.size, size).largest(),
            AllreduceAlgorithm::RecursiveDoubling => size,
        };
        BufferLens {
            send: size,
            recv: size,
            scratch,
        }
    }

    fn fill(&self, world: World, _size: usize, bufs: &mut Bufs) {
        for (i, e) in bufs.send.chunks_exact_mut(ELEMENT).enumerate() {
            e.copy_from_slice(&input(world.rank, i).to_le_bytes());
        }
        bufs.recv.fill(0);
    }

    fn iterate(&self, comm: &mut Comm, size: usize, bufs: &mut Bufs) -> Result<()> {
        // MPI_Allreduce leaves the input alone: the sum is formed in the output.
        bufs.recv.copy_from_slice(&bufs.send);
        match self.effective(comm.world, size) {
            AllreduceAlgorithm::Ring => ring(comm, size, bufs)?,
            AllreduceAlgorithm::RecursiveDoubling => recursive_doubling(comm, size, bufs)?,
        }
        Ok(())
    }

    fn check(&self, world: World, _size: usize, bufs: &Bufs) -> std::result::Result<(), String> {
        for (i, e) in bufs.recv.chunks_exact(ELEMENT).enumerate() {
            let got = f32::from_le_bytes(e.try_into().expect("4 bytes"));
            let want: f32 = (0..world.size).map(|r| input(r, i)).sum();
            if got != want {
                return Err(format!("element {i} is {got}, not {want}"));
            }
        }
        Ok(())
    }
}

/// Rank `rank`'s element `i`: small integers, so every order of summing them is exact.
fn input(rank: usize, i: usize) -> f32 {
    (rank + 1 + i % 5) as f32
}

/// The vector's N blocks as Open MPI's ring cuts them: the first `count mod N` blocks one
/// element longer than the rest.
struct Blocks {
    n: usize,
    count: usize,
}

impl Blocks {
    fn new(n: usize, size: usize) -> Blocks {
        Blocks {
            n,
            count: size / ELEMENT,
        }
    }

    /// Byte range of block `b`.
    fn range(&self, b: usize) -> std::ops::Range<usize> {
        let (late, split) = (self.count / self.n, self.count % self.n);
        let early = late + 1;
        let start = if b < split {
            b * early
        } else {
            split * early + (b - split) * late
        };
        let len = if b < split { early } else { late };
        start * ELEMENT..(start + len) * ELEMENT
    }

    fn largest(&self) -> usize {
        self.count.div_ceil(self.n) * ELEMENT
    }
}

fn ring(comm: &mut Comm, size: usize, bufs: &mut Bufs) -> Result<()> {
    let w = comm.world;
    let blocks = Blocks::new(w.size, size);
    let (right, left) = (w.after(1), w.before(1));
    // Reduce-scatter: after step k this rank holds the sum of k + 1 ranks' block rank − k.
    for k in 1..w.size {
        let (send, recv) = (blocks.range(w.before(k - 1)), blocks.range(w.before(k)));
        comm.send(right, Buf::Recv, send);
        comm.recv(left, Buf::Scratch, 0..recv.len());
        comm.complete(bufs)?;
        let len = recv.len();
        sum_into(&mut bufs.recv[recv], &bufs.scratch[..len]);
    }
    // Allgather: the finished blocks, each passed on around the ring.
    for k in 0..w.size - 1 {
        let send = blocks.range((w.rank + 1 + w.size - k) % w.size);
        let recv = blocks.range(w.before(k));
        comm.send(right, Buf::Recv, send);
        comm.recv(left, Buf::Recv, recv);
        comm.complete(bufs)?;
    }
    Ok(())
}

fn recursive_doubling(comm: &mut Comm, size: usize, bufs: &mut Bufs) -> Result<()> {
    let w = comm.world;
    let power = 1usize << w.size.ilog2();
    let extra = w.size - power;
    // Fold the ranks beyond the power of two into their odd neighbours.
    let virtual_rank = if w.rank < 2 * extra {
        if w.rank % 2 == 0 {
            comm.send(w.rank + 1, Buf::Recv, 0..size);
            comm.complete(bufs)?;
            None
        } else {
            comm.recv(w.rank - 1, Buf::Scratch, 0..size);
            comm.complete(bufs)?;
            sum_into(&mut bufs.recv, &bufs.scratch[..size]);
            Some(w.rank / 2)
        }
    } else {
        Some(w.rank - extra)
    };
    if let Some(me) = virtual_rank {
        let mut distance = 1;
        while distance < power {
            let other = me ^ distance;
            let peer = if other < extra {
                other * 2 + 1
            } else {
                other + extra
            };
            comm.send(peer, Buf::Recv, 0..size);
            comm.recv(peer, Buf::Scratch, 0..size);
            comm.complete(bufs)?;
            sum_into(&mut bufs.recv, &bufs.scratch[..size]);
            distance <<= 1;
        }
    }
    // The folded ranks get the result back.
    if w.rank < 2 * extra {
        if w.rank % 2 == 0 {
            comm.recv(w.rank + 1, Buf::Recv, 0..size);
        } else {
            comm.send(w.rank - 1, Buf::Recv, 0..size);
        }
        comm.complete(bufs)?;
    }
    Ok(())
}

/// `acc += add`, element by element.
fn sum_into(acc: &mut [u8], add: &[u8]) {
    for (a, b) in acc.chunks_exact_mut(ELEMENT).zip(add.chunks_exact(ELEMENT)) {
        let sum = f32::from_le_bytes((&*a).try_into().expect("4 bytes"))
            + f32::from_le_bytes(b.try_into().expect("4 bytes"));
        a.copy_from_slice(&sum.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_blocks_cover_the_vector_once_the_first_ones_longer() {
        let b = Blocks::new(4, 10 * ELEMENT);
        let ranges: Vec<_> = (0..4).map(|i| b.range(i)).collect();
        assert_eq!(ranges, [0..12, 12..24, 24..32, 32..40]);
        assert_eq!(b.largest(), 12);
    }

    #[test]
    fn a_ring_of_fewer_elements_than_ranks_runs_as_recursive_doubling() {
        let ring = Allreduce {
            algorithm: AllreduceAlgorithm::Ring,
        };
        let w = World { rank: 0, size: 16 };
        assert_eq!(ring.algorithm(w, 8), "recursive-doubling");
        assert_eq!(ring.algorithm(w, 64), "ring");
        assert!(ring.refuse(w, 6).is_some() && ring.refuse(w, 0).is_some());
        assert!(ring.refuse(w, 8).is_none());
    }
}
