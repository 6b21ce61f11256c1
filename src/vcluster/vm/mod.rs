//! VM nodes (`kind = "vm"`): a netns cluster whose every node runs a QEMU guest booting
//! Debian's own kernel, for what containers and namespaces cannot have: a kernel of the
//! node's own, with its bonding driver. Each guest runs inside its node's network namespace
//! with its NICs spliced to the namespace's interfaces, so the wires, the medium emulator,
//! the management network, the inventory and `down` are the netns kind's (`netns/`), which
//! calls [`boot::boot`] once its nodes are up.
//!
//! One job per file:
//! - `accel`: KVM where a probe guest boots under it, TCG otherwise;
//! - `kernel`: Debian's kernel, fetched and unpacked into a cache every cluster shares;
//! - `initramfs`: the guest's first root, which mounts this host's root over 9p;
//! - `guest`: one guest: its taps and splices, its QEMU command line and its init script;
//! - `record`: what the state file keeps of the guests;
//! - `boot`: all of them, for a cluster.
//!
//! Nothing is re-exported here: each file is named by its own path.

pub mod accel;
pub mod boot;
pub mod guest;
pub mod initramfs;
pub mod kernel;
pub mod record;
