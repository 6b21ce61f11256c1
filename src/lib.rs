//! orchestrate: declarative experiments for interconnect topology studies.

pub mod report;
pub mod results;
