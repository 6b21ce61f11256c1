//! `orchestrate run`: reaches every node, configures it, runs each point through the nodes'
//! agents, stores every record as it arrives, and leaves every node as it found it — on real
//! machines from an inventory, or on the virtual cluster, through the same path: nodes come
//! from a [`NodeSource`](crate::remote::NodeSource), and nothing here knows whether a node is
//! a container.
//!
//! Read it in the order a run goes:
//! 1. [`start`]: open a new run directory, or the one of a run to resume (same plan, read back
//!    only when nobody else could have written it);
//! 2. [`run`]: the run as a whole — an earlier attempt's ledger undone, each configuration in
//!    plan order, then the report — with the user's [`options`]; [`state`] is what every stage
//!    writes to, and ends as the run's summary;
//! 3. per configuration (a topology under one bonding mode), [`configuration`] drives, in
//!    order: obtain nodes from the source and connect; [`prepare`]: install the worker, probe,
//!    settle bond drivers, render scripts; [`programs`]: every program the run calls is on each
//!    node; write the ledger and [`apply`] every node's script; [`path_proofs`]: prove every
//!    planned path's hop count; [`measure`]: one agent and one server per node, clock offsets,
//!    then each [`point`], with the medium emulator's statistics ([`medium_stats`]);
//!    [`teardown`] — on success, failure and Ctrl-C alike;
//! 4. `orchestrate teardown <run-dir>` finishes what a run left in its ledger
//!    ([`teardown_from_ledger`]), running only the teardown scripts this controller renders
//!    itself ([`verified_teardown`]).
//!
//! Beside the stages: [`node`] is what runs on or reaches a node (sessions, fan-out, the
//! worker's install, the agents), [`show`] what a run shows (progress, time left, events, the
//! report's drawings). The run directory — every file's name, reading it, writing it, whether
//! to trust it — is [`crate::results::run_dir`], shared with the report that reads it.

// The stages, in the order a run goes through them.
// Opening the run directory: new, or resumed.
mod start;
// The run as a whole: an earlier attempt's ledger undone, each configuration, the report.
mod run;
// What the user chose beyond the experiment.
mod options;
// What every stage writes to, and the summary it ends as.
mod state;
// One configuration, driving the stages below in turn.
mod configuration;
// Worker installed, nodes probed, scripts rendered.
mod prepare;
// Every program the run calls is on each node.
mod programs;
// The ledger written, every node's apply script run.
mod apply;
// Every planned path's hop count proven.
mod path_proofs;
// Agents, servers and clock offsets, then each point.
mod measure;
// Where a node's workers listen.
mod listen;
// One point.
mod point;
// A collective point's ranks: each one's command line.
mod ranks;
// A collective point run by Open MPI instead: mpirun over the run's own SSH connections.
mod mpi;
// The medium emulator's statistics around each point.
mod medium_stats;
// Every node's teardown script; the ledger keeps what failed.
mod teardown;
// Only teardown scripts this controller renders run from a run directory.
mod verified_teardown;

// Beside the stages: what runs on or reaches a node, and what a run shows.
mod node;
mod show;

pub use node::agent::Agent;
pub use options::{OnError, RunOptions, Timing};
pub use run::run;
pub use show::drawings::{PlannedWires, RunDrawings, RunModel};
pub use show::events::EventsTo;
pub use show::progress::LogWriter;
pub use start::{OpenRun, RunStart};
pub use state::{Stopped, Summary};
pub use teardown::teardown_from_ledger;
