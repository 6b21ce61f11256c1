//! The simulated twin's figures beside a run ([`crate::plan::twin`]): what the token test
//! gives on the run's wires (or on other wires and hosts) in simulated time, for the cells the
//! real-time emulator could not keep its timing bound for. Like the analytic model, the
//! report gets them from whoever knows the run's topologies ([`super::PredictThroughput`]).

use crate::results::PlacementKind;
use crate::spec::HostProfile;

/// Which wires and hosts the twin runs a cell on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TwinWires {
    /// The run's own.
    AsRun,
    /// The same wiring with every segment at `rate_bps` and every node of `host`.
    Rewired { rate_bps: u64, host: HostProfile },
}

/// What the twin is asked to run: on which wires, and what each node's own stack adds per
/// hop and direction (the analytic model's `hop_latency`; a study may fit it to the run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TwinSetup {
    pub wires: TwinWires,
    pub stack_ns: u64,
}

/// One token cell in the twin.
#[derive(Debug, Clone, PartialEq)]
pub struct TwinCell {
    pub topology: String,
    pub bonding: String,
    pub placement: PlacementKind,
    pub pairs: u32,
    pub size_bytes: u64,
    /// Producer's tokens, summed over the pairs, Mbit/s.
    pub aggregate_mbit_s: f64,
    pub collisions_per_frame: f64,
    pub retransmissions: u64,
}
