//! Topologies: the graph of nodes, wires, addresses and routes, the generators that build the
//! study's configurations, and the checks that prove every pair of nodes can reach each other.

mod checks;
pub mod draft;
pub mod draw;
pub mod forwarding;
pub mod generators;
pub mod graph;
pub mod load;
pub mod paths;
pub mod resolve;
pub mod routing;

pub use graph::*;
pub use load::{from_source, load, load_unbonded};
