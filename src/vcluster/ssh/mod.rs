//! SSH as on a real cluster: the cluster's key pair and the nodes' host keys, the known_hosts
//! lines that pin them, and the `ssh` command line that reaches a node exactly as the
//! inventory says.

mod client;
mod keys;

pub use client::{command, wait_ready};
pub use keys::{generate as generate_key, known_hosts_line};
