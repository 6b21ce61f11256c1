//! A frame-by-frame emulator of 1990s Ethernet for the virtual cluster.
//!
//! A shared segment (bus or hub) is one CSMA/CD medium: each frame spends its serialization
//! time on the wire, stations that start together collide, jam and back off; a full-duplex
//! switched segment clocks each port's frames each way. Nodes may carry host costs (the time a
//! 1996 PC spent per frame). The model ([`mac`], [`link`], [`segment`], [`host`], joined in
//! [`engine`]) is told the time and never reads a clock, so it runs both in simulated time
//! ([`sim`], how it is validated) and in real time against the cluster's veths
//! ([`realtime`]: the event clock, the AF_PACKET ports and the control socket).
//!
//! The crate has no Polars and no controller code: it is the instrument, kept small.

pub mod config;
pub mod engine;
pub mod frame;
pub mod host;
pub mod learn;
pub mod link;
pub mod mac;
pub mod realtime;
pub mod segment;
pub mod sim;
pub mod stats;
pub mod time;
