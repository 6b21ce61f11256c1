//! Reaching nodes: the inventory of which machine plays which node, and SSH sessions to them.
//! Nothing here knows whether a node is a container or a machine in a rack.

pub mod inventory;

pub use inventory::{Host, Inventory};
pub mod session;

pub use session::{Cluster, ConnectOptions, Output, RemoteError};
