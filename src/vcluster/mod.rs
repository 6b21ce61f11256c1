//! The virtual cluster: any topology as a cluster of docker containers on one machine, with the
//! topology's wires emulated at their rates, reached over SSH like real machines.
//!
//! Start at [`up`] (`up.rs`): it reads in order, each step recorded in the cluster's state file
//! (`state.rs`) so that [`down`] can undo it. `status` and `verify` look at a running cluster, and
//! [`VirtualClusters`] (`node_source.rs`) is the runner's way in: nodes for a topology, from a
//! cluster already up or one brought up for the run. Below the commands, three groups:
//! - `wires/`: the tool's own wires: what the cluster needs to know about a topology
//!   ([`Wiring`]), their emulation on the host (token buckets, or the medium emulator's
//!   process, which clocks every frame across), the links in the nodes' namespaces, and the
//!   goodput meter `verify` uses;
//! - `docker/`: the node image and the containers and networks, described once as a project,
//!   rendered as a compose file for people and created through the engine;
//! - `ssh/`: keys, known_hosts and the `ssh` command line, as on a real cluster;
//! - `netns/`: the other kind of node (`--kind netns`): network namespaces of this host with
//!   an sshd each, no container and no image, on the same wires and emulator.
//!
//! Shared by all of them: the cluster's name and the names derived from it (`names`), where
//! its files live ([`ClusterDir`]), running host programs (`cmd`), doing a thing for many
//! containers a few at a time (`parallel`), and the error type.
//!
//! Design in brief:
//! - one internal docker network for SSH; every port of a segment the medium emulator carries
//!   (the default) is a veth pair the tool makes itself and moves into the node under the
//!   topology's name, as containerlab does: the engine keeps no network or endpoint for it,
//!   so nothing of it can outlive its container in the engine's books. Only a segment shaped
//!   by token buckets (`emulation = "rate"`) is still a docker bridge network: a bridge of the
//!   tool's own on this host would pass its frames through the firewall's FORWARD chain
//!   (br_netfilter is loaded, policy DROP), where docker adds the rules for its own;
//! - a switch is a small container bridging one port on each segment it joins, so traffic
//!   between segments crosses (and is shaped by) each segment, as through a real switch;
//! - interface names: docker's `ethN` are renamed by MAC address to the topology's names
//!   (`mgmt0` for management) from the host, and the experiment interfaces lose docker's
//!   addresses: the controller's scripts number them;
//! - the wires are emulated on the host side of every veth, out of reach of the nodes: by
//!   default the medium emulator (`orchestrate_medium`) owns a segment's host-side ports and
//!   clocks every frame across (CSMA/CD on shared segments); `emulation = "rate"` shapes them
//!   with ifb + tbf instead.
//!
//! The SSH controller only ever sees the inventory `up` writes: nothing after `up` needs to
//! know the nodes are containers.

mod by_kind;
mod cluster_dir;
mod cmd;
mod docker;
mod down;
mod error;
mod names;
mod netns;
mod node_source;
mod parallel;
mod process;
mod shell;
mod ssh;
mod state;
mod status;
mod up;
mod verify;
mod vm;
mod wires;

pub use by_kind::{DownAll, down, down_all, status, up};
pub use cluster_dir::{ClusterDir, DEFAULT_STATE_DIR};
pub use docker::{
    BaseSource, Docker, ImageOptions, NodeImage, ensure_image, locate_worker, offline_base_tag,
};
pub use down::{DownReport, known_clusters};
pub use error::{Error, Result};
pub use names::{ClusterName, LABEL_CLUSTER, MGMT_IFNAME};
pub use node_source::VirtualClusters;
pub use shell::ssh_to_node;
pub use ssh::command as ssh_command;
pub use state::Kind;
pub use status::{MemberStatus, Status, list_clusters};
pub use up::{DEFAULT_MEDIUM_SEED, NODE_USER, UpOptions, UpReport};
pub use verify::{
    Check, DEFAULT_PARALLEL as DEFAULT_VERIFY_PARALLEL, TCP_GOODPUT_RATIO, VerifyOptions,
    table as verify_table, verify,
};
pub use wires::{
    Emulation, Flow, HostCosts, Medium, Node, Port, Segment, SegmentId, Switch,
    WIRE_OVERHEAD_BYTES, Wiring, WiringBuilder,
};
