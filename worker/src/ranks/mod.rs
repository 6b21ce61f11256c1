//! The collectives' N-rank mode: ranks on several nodes run one collective together, as MPI
//! processes do, where every other pattern is one client against one server.
//!
//! Each rank is one worker process started with the same command line but its own `--rank`
//! and its own view of where the others are (`--peers`: in a routed mesh the address a rank
//! reaches another at depends on where it stands). The ranks connect all to all
//! ([`mesh`]), each connection proved with the run's secret as a session is; print
//! `{"ready":true,...}`; wait for the go on stdin; then, per message size, run the collective
//! as the OSU micro-benchmarks do ([`run`]): warm-up, then timed iterations each followed by
//! an untimed barrier, then one more iteration whose result is checked. Every rank writes one
//! record per size with its own mean time per iteration; the point's figure (the mean over
//! ranks, with their minimum and maximum) is the controller's to form.
//!
//! The collectives themselves are in [`crate::patterns`], one file each, behind
//! [`Collective`]; they post sends and receives on a [`Comm`] and complete them together, as
//! MPI's `Isend`/`Irecv`/`Waitall` do.

pub mod args;
pub mod collective;
pub mod comm;
mod mesh;
mod run;
pub mod world;

pub use args::{Iterations, RankArgs};
pub use collective::{Collective, first_difference, pattern_byte};
pub use comm::{Buf, BufferLens, Bufs, Comm};
pub use run::run;
pub use world::World;
