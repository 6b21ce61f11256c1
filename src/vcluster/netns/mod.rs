//! Nodes without containers (`kind = "netns"`), as Mininet makes them: each node and each
//! switch of the topology is a network namespace on this host; each node also gets its own
//! sshd, whose sessions see a hostname of their own (UTS namespace) and a private /run, /root,
//! /tmp and /var/tmp (mount namespace, tmpfs), and otherwise this host's programs and files.
//!
//! The rest is the docker kind's: the same wires (`wires::veth`, made into the namespaces by
//! name), the same medium emulator, the same inventory, ssh_config and known_hosts, the same
//! state file (with the namespaces, management network and sshd processes recorded in it
//! before they are made), so `down` and the runner treat both kinds alike.
//!
//! One job per file:
//! - `record`: what a netns cluster is made of, planned from its name and wiring alone;
//! - `subnet`: a management subnet no route or address of this host overlaps;
//! - `namespaces`: making, entering and deleting the namespaces, and what runs in them;
//! - `mgmt`: the management bridge on the host and each node's `mgmt0`;
//! - `sshd`: each node's sshd, and whether a recorded one still runs;
//! - `enter`: what the sshd's process makes of itself before it becomes sshd (namespaces,
//!   mounts, hostname, receive steering), in system calls alone;
//! - `up`, `down`, `status`: the commands for this kind (`by_kind` hands them their clusters).
//!
//! Nothing is re-exported here: each file is named by its own path, so that no import passes
//! through this one.
//!
//! Segments shaped by token buckets (`emulation = "rate"`) are docker networks in the docker
//! kind; a netns cluster refuses them (the medium emulator carries every shipped topology).

pub mod down;
mod enter;
mod mgmt;
mod namespaces;
pub mod record;
pub mod sshd;
pub mod status;
mod subnet;
pub mod up;
