//! Node configuration rendered as POSIX sh: for each node, an apply script that makes the
//! topology's changes and records each one in a ledger on the node, and a teardown script that
//! undoes exactly the recorded changes, in reverse. A node is left as it was found: nothing
//! that was there before the run is touched, and a half-applied script is undone as far as it
//! got.

mod script;
mod steps;

pub use script::{NodeScripts, render};
pub use steps::Step;

/// Where scripts keep the ledger on a node unless told otherwise (their first argument).
pub const DEFAULT_LEDGER: &str = "/run/orchestrate/ledger";
