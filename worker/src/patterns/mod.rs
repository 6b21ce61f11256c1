//! The measurement patterns, one file each, behind the [`PatternImpl`] trait.
//!
//! A pattern runs one trial on each side of an established session; the session driver
//! ([`crate::client`], [`crate::serve`]) does the handshake, the start barrier and the records.
//! Timed loops use blocking sockets and reuse the session's buffers: no allocation, formatting
//! or locking happens between the two clock reads. Each pattern's file also holds its command
//! line ([`crate::invocation`]).
//!
//! The collectives (`halo`, `alltoall`, `allreduce`, `bcast`) are run by N ranks together
//! rather than by a client and a server: they implement [`crate::ranks::Collective`] and run
//! under [`crate::ranks::run`].

use crate::record;

pub mod allreduce;
pub mod alltoall;
pub mod bcast;
pub mod client_args;
mod exchange;
pub mod filecopy;
pub mod halo;
pub mod load;
pub mod pingpong;
pub mod pipeline;
pub mod stream;
pub mod token;
mod trial;

pub use trial::{Measure, PatternImpl, Percentiles, Repeats, mbit_s};

/// The client-server pattern `p`; `None` for a collective.
pub fn lookup(p: record::Pattern) -> Option<&'static dyn PatternImpl> {
    Some(match p {
        record::Pattern::Pingpong => &pingpong::Pingpong,
        record::Pattern::Stream => &stream::Stream,
        record::Pattern::Token => &token::Token,
        record::Pattern::Pipeline => &pipeline::Pipeline,
        record::Pattern::Load => &load::Load,
        record::Pattern::Filecopy => &filecopy::Filecopy,
        record::Pattern::Halo
        | record::Pattern::Alltoall
        | record::Pattern::Allreduce
        | record::Pattern::Bcast => return None,
    })
}
