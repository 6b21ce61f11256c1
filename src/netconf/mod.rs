//! Node configuration rendered as POSIX sh: for each node, an apply script that makes the
//! topology's changes and records each one in a ledger on the node, and a teardown script that
//! undoes exactly the recorded changes, in reverse. A node is left as it was found: nothing
//! that was there before the run is touched, and a half-applied script is undone as far as it
//! got. The apply script prints the ledger when done, and the controller keeps that copy: on
//! a node whose ledger is lost, the teardown script undoes from the copy each change that is
//! still there exactly as the run made it, and names the others.

mod drivers;
mod script;
mod steps;

pub use drivers::settle_bond_drivers;
pub use script::{
    DEFAULT_LEDGER, FROM_COPY_PREFIX, LEDGER_COPY_PREFIX, NO_LEDGER_LINE, NodeScripts,
    copy_preamble, render,
};
pub use steps::Step;
