//! Reaching nodes: the inventory of which machine plays which node, where a configuration's
//! nodes come from, and SSH sessions to them. Nothing here knows whether a node is a container
//! or a machine in a rack.

pub mod installed_worker;
pub mod inventory;
pub mod session;
pub mod slurm;
pub mod source;

pub use inventory::{Host, Inventory, LocatedInventory, SshSettings};
pub use session::{Channel, ConnectOptions, Output, RemoteError, Sessions};
pub use slurm::SlurmAllocation;
pub use source::{InventoryFile, MediumFiles, NodeSource, Nodes};
