//! The virtual cluster: any topology as a cluster of docker containers on one machine, with the
//! topology's wires emulated at their rates, reached over SSH like real machines.
//!
//! `up` builds (once) the node image, writes the cluster's directory (compose file, keys,
//! known_hosts, inventory: see [`paths`]), starts the containers, names their interfaces as the
//! topology does, emulates the wires on the host ([`emulation`] for token buckets, [`medium`]
//! for the frame-by-frame medium emulator) and waits until every node
//! answers over SSH. `down` removes all of it, and nothing else. The SSH controller only ever
//! sees the inventory: nothing after `up` needs to know the nodes are containers.
//!
//! Design in brief:
//! - one docker bridge network per segment, one internal management network for SSH;
//! - a switch is a small container bridging one port on each segment it joins, so traffic
//!   between segments crosses (and is shaped by) each segment, as through a real switch;
//! - interface names: docker's `ethN` are renamed by MAC address to the topology's names
//!   (`mgmt0` for management) from the host, and the experiment interfaces lose docker's
//!   addresses: the controller's scripts number them;
//! - the wires are emulated on the host side of every veth, out of reach of the nodes: by
//!   default the medium emulator (`orchestrate_medium`) owns a segment's host-side ports and
//!   clocks every frame across (CSMA/CD on shared segments); `emulation = "rate"` shapes them
//!   with ifb + tbf instead.

mod cmd;
mod compose;
mod create;
mod docker;
mod down;
mod emulation;
mod error;
mod image;
mod kernel;
mod keys;
mod medium;
mod meter;
mod names;
mod netns;
mod parallel;
pub mod paths;
mod project;
mod source;
mod ssh;
mod state;
mod status;
mod up;
mod verify;
mod wiring;

pub use docker::Docker;
pub use down::{DownReport, down};
pub use emulation::WIRE_OVERHEAD_BYTES;
pub use error::{Error, Result};
pub use image::{
    BaseSource, ImageOptions, NodeImage, ensure as ensure_image, locate_worker, offline_base_tag,
};
pub use meter::Flow;
pub use names::{ClusterName, LABEL_CLUSTER, MGMT_IFNAME};
pub use paths::ClusterDir;
pub use source::VirtualClusters;
pub use ssh::command as ssh_command;
pub use status::{MemberStatus, Status, list_clusters, status};
pub use up::{NODE_USER, UpOptions, UpReport, up};
pub use verify::{Check, TCP_GOODPUT_RATIO, VerifyOptions, table as verify_table, verify};
pub use wiring::{
    Emulation, HostCosts, Medium, Node, Port, Segment, SegmentId, Switch, Wiring, WiringBuilder,
};

/// Seeds the medium emulator's backoff draws (the study's year): the same seed, the same
/// sequence of draws for the same sequence of contentions.
pub const DEFAULT_MEDIUM_SEED: u64 = 1996;

/// The default root of the clusters' directories, relative to the working directory.
pub const DEFAULT_STATE_DIR: &str = ".orchestrate";
