//! The measurement patterns, one file each, behind the [`PatternImpl`] trait.
//!
//! A pattern runs one trial on each side of an established session; the session driver
//! ([`crate::client`], [`crate::serve`]) does the handshake, the start barrier and the records.
//! Timed loops use blocking sockets and reuse the session's buffers: no allocation, formatting
//! or locking happens between the two clock reads. Each pattern's file also holds its command
//! line ([`crate::invocation`]).

use crate::record;

pub mod client_args;
mod exchange;
pub mod filecopy;
pub mod load;
pub mod pingpong;
pub mod pipeline;
pub mod stream;
pub mod token;
mod trial;

pub use trial::{Measure, PatternImpl, Percentiles, Repeats, mbit_s};

pub fn lookup(p: record::Pattern) -> &'static dyn PatternImpl {
    match p {
        record::Pattern::Pingpong => &pingpong::Pingpong,
        record::Pattern::Stream => &stream::Stream,
        record::Pattern::Token => &token::Token,
        record::Pattern::Pipeline => &pipeline::Pipeline,
        record::Pattern::Load => &load::Load,
        record::Pattern::Filecopy => &filecopy::Filecopy,
    }
}
