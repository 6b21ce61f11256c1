//! The run directory: every file's name ([`layout`]), reading it back, writing it as a run
//! goes ([`write`]), and whether it may be trusted ([`trust`]).

mod layout;
pub(crate) mod trust;
mod write;

pub use layout::RunDir;
pub use write::{Ledger, RunWriter, read_ledger};
