//! `halo`: the nearest-neighbour exchange of a stencil code on a 2-D process grid. Ranks sit
//! on a ROWS×COLS grid in row-major order (rank r at row r / COLS, column r mod COLS); in one
//! iteration every rank sends one message of the given size to each of its four neighbours
//! (west, east, north, south) and receives one from each, all posted at once and completed
//! together (`MPI_Isend`/`MPI_Irecv`/`MPI_Waitall`). Edges are open (a rank on the border has
//! fewer neighbours) unless `--periodic` wraps them into a torus.

use std::fmt;
use std::str::FromStr;

use clap::Args;

use crate::argv::Argv;
use crate::error::Result;
use crate::ranks::args::RankArgs;
use crate::ranks::collective::{Collective, first_difference, pattern_byte};
use crate::ranks::comm::{Buf, BufferLens, Bufs, Comm};
use crate::ranks::world::World;
use crate::record::Pattern;

/// `orchestrate-worker halo`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct HaloArgs {
    #[command(flatten)]
    pub ranks: RankArgs,
    /// The process grid, ROWSxCOLS, its product the number of ranks; the most nearly square
    /// one by default, as MPI_Dims_create chooses (4x4 for 16 ranks, 4x2 for 8).
    #[arg(long, value_name = "ROWSxCOLS")]
    pub grid: Option<Grid>,
    /// Wrap the grid's edges: every rank has four neighbours.
    #[arg(long)]
    pub periodic: bool,
}

impl HaloArgs {
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Argv::new("halo");
        self.ranks.write(&mut a);
        a.opt_some("--grid", self.grid);
        a.flag("--periodic", self.periodic);
        a.into_vec()
    }

    pub fn collective(&self) -> Halo {
        let size = self.ranks.peers.len();
        Halo {
            grid: self.grid.unwrap_or_else(|| Grid::square(size)),
            periodic: self.periodic,
        }
    }
}

/// A process grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    pub rows: usize,
    pub cols: usize,
}

impl Grid {
    /// The most nearly square grid of `n` ranks, rows at least columns (MPI_Dims_create).
    pub fn square(n: usize) -> Grid {
        let cols = (1..=n.isqrt()).rev().find(|c| n % c == 0).unwrap_or(1);
        Grid {
            rows: n / cols.max(1),
            cols,
        }
    }
}

impl fmt::Display for Grid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.rows, self.cols)
    }
}

impl FromStr for Grid {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Grid, String> {
        let bad = || format!("`{s}` is not a grid: write ROWSxCOLS, e.g. 4x4");
        let (r, c) = s.split_once(['x', 'X']).ok_or_else(bad)?;
        let rows: usize = r.trim().parse().map_err(|_| bad())?;
        let cols: usize = c.trim().parse().map_err(|_| bad())?;
        if rows == 0 || cols == 0 {
            return Err(bad());
        }
        Ok(Grid { rows, cols })
    }
}

/// The four directions, in the order messages are posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    West = 0,
    East = 1,
    North = 2,
    South = 3,
}

const SIDES: [Side; 4] = [Side::West, Side::East, Side::North, Side::South];

impl Side {
    fn opposite(self) -> Side {
        match self {
            Side::West => Side::East,
            Side::East => Side::West,
            Side::North => Side::South,
            Side::South => Side::North,
        }
    }
}

pub struct Halo {
    pub grid: Grid,
    pub periodic: bool,
}

impl Halo {
    /// The rank on `side` of `rank`, if the grid has one there.
    fn neighbour(&self, rank: usize, side: Side) -> Option<usize> {
        let Grid { rows, cols } = self.grid;
        let (row, col) = ((rank / cols) as isize, (rank % cols) as isize);
        let (r, c) = match side {
            Side::West => (row, col - 1),
            Side::East => (row, col + 1),
            Side::North => (row - 1, col),
            Side::South => (row + 1, col),
        };
        let (rows, cols) = (rows as isize, cols as isize);
        let inside = (0..rows).contains(&r) && (0..cols).contains(&c);
        match (inside, self.periodic) {
            (true, _) => Some((r * cols + c) as usize),
            (false, true) => Some((r.rem_euclid(rows) * cols + c.rem_euclid(cols)) as usize),
            (false, false) => None,
        }
    }
}

/// Bytes of face or halo slot `side`, of `size` each.
fn slot(side: Side, size: usize) -> std::ops::Range<usize> {
    let i = side as usize;
    i * size..(i + 1) * size
}

impl Collective for Halo {
    fn pattern(&self) -> Pattern {
        Pattern::Halo
    }

    fn algorithm(&self, _world: World, _size: usize) -> String {
        let edges = if self.periodic { "periodic" } else { "open" };
        format!("{} {edges}", self.grid)
    }

    fn refuse(&self, world: World, size: usize) -> Option<String> {
        if self.grid.rows * self.grid.cols != world.size {
            Some(format!(
                "the {} grid holds {} ranks, not {}",
                self.grid,
                self.grid.rows * self.grid.cols,
                world.size
            ))
        } else {
            (size == 0).then(|| "a halo of 0 bytes sends nothing".to_owned())
        }
    }

    fn buffers(&self, _world: World, size: usize) -> BufferLens {
        BufferLens {
            send: 4 * size,
            recv: 4 * size,
            scratch: 0,
        }
    }

    fn fill(&self, world: World, size: usize, bufs: &mut Bufs) {
        for side in SIDES {
            for (i, b) in bufs.send[slot(side, size)].iter_mut().enumerate() {
                *b = pattern_byte(world.rank, side as usize, i);
            }
        }
        bufs.recv.fill(0);
    }

    fn iterate(&self, comm: &mut Comm, size: usize, bufs: &mut Bufs) -> Result<()> {
        let me = comm.world.rank;
        // Sends in SIDES order; a neighbour receives what was sent to its west as coming
        // from its east, and posts its receives in the matching order, so that two messages
        // between the same two ranks (a periodic grid two wide) pair up.
        for side in SIDES {
            match self.neighbour(me, side) {
                Some(n) if n == me => {
                    bufs.recv[slot(side.opposite(), size)]
                        .copy_from_slice(&bufs.send[slot(side, size)]);
                }
                Some(n) => comm.send(n, Buf::Send, slot(side, size)),
                None => {}
            }
        }
        for side in SIDES {
            let from = side.opposite();
            match self.neighbour(me, from) {
                Some(n) if n != me => comm.recv(n, Buf::Recv, slot(from, size)),
                _ => {}
            }
        }
        comm.complete(bufs)?;
        Ok(())
    }

    fn check(&self, world: World, size: usize, bufs: &Bufs) -> std::result::Result<(), String> {
        for side in SIDES {
            let got = &bufs.recv[slot(side, size)];
            let diff = match self.neighbour(world.rank, side) {
                Some(n) => first_difference(got, |i| pattern_byte(n, side.opposite() as usize, i)),
                None => first_difference(got, |_| 0),
            };
            if let Some(i) = diff {
                return Err(format!("byte {i} of the {side:?} halo is wrong"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_are_as_square_as_mpi_makes_them() {
        assert_eq!(Grid::square(16), Grid { rows: 4, cols: 4 });
        assert_eq!(Grid::square(8), Grid { rows: 4, cols: 2 });
        assert_eq!(Grid::square(7), Grid { rows: 7, cols: 1 });
        assert_eq!("2x8".parse::<Grid>(), Ok(Grid { rows: 2, cols: 8 }));
        assert!("2x0".parse::<Grid>().is_err() && "4".parse::<Grid>().is_err());
    }

    #[test]
    fn neighbours_on_open_and_periodic_grids() {
        let open = Halo {
            grid: Grid { rows: 4, cols: 4 },
            periodic: false,
        };
        let n = |h: &Halo, r| SIDES.map(|s| h.neighbour(r, s));
        assert_eq!(n(&open, 0), [None, Some(1), None, Some(4)]);
        assert_eq!(n(&open, 5), [Some(4), Some(6), Some(1), Some(9)]);
        let torus = Halo {
            periodic: true,
            ..open
        };
        assert_eq!(n(&torus, 0), [Some(3), Some(1), Some(12), Some(4)]);
        assert_eq!(n(&torus, 15), [Some(14), Some(12), Some(11), Some(3)]);
    }
}
