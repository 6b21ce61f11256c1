//! The cluster's wires, which the tool owns rather than the docker engine: what the cluster
//! needs to know about a topology's wires ([`Wiring`]), the host side of each segment's ports
//! (`emulation`: a token bucket per segment or port for `emulation = "rate"`), the veth pairs
//! the tool makes for the segments the medium emulator carries (`veth`), the emulator's
//! process (`emulator`), the links inside the containers' namespaces (`netns`), the kernel
//! features all of it needs (`kernel`), and the goodput meter that checks the result
//! (`meter`).
//!
//! Nothing here knows about containers beyond a namespace's pid: the docker side builds on
//! these wires, never the other way round.

mod emulation;
mod emulator;
mod kernel;
mod meter;
mod netns;
pub mod veth;
mod wiring;

pub use emulation::{
    WIRE_OVERHEAD_BYTES, apply as apply_emulation, check_kernel, find_ifbs, remove_ifbs,
    setup as emulation_setup,
};
pub use emulator::{
    config as emulator_config, find as find_emulators, private_dir, start as start_emulator,
    stop as stop_emulators,
};
pub use meter::{Flow, Station, measure as measure_goodput};
pub use netns::{
    Ns, Wanted, ip_batch, links as ns_links, offloads_off, rename_plan, steer_receive,
};
pub use wiring::{
    Emulation, HostCosts, Medium, Node, Port, Segment, SegmentId, Switch, Wiring, WiringBuilder,
    switch_service,
};

#[cfg(test)]
pub(crate) use wiring::tests::mesh;
