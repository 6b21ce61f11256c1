//! What the user chose for a run beyond its experiment: what a failed point does, the port,
//! the worker build, how much to show and where the events go.

use std::path::PathBuf;

use super::show::events::EventsTo;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnError {
    /// Stop at the first failed point (after tearing down every reachable node).
    Stop,
    /// Record the failure and go on with the next point.
    Continue,
}

/// What happens to a point during which the medium emulator did not keep its timing bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Timing {
    /// Mark it untimed, measure it again (`--remeasure` times), and leave it out of the
    /// report if it never keeps the bound.
    Enforce,
    /// Keep it as measured; the report still flags it. For checking the tool's chain on a
    /// machine too busy to keep time (a test suite running in parallel), not for results.
    Record,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub on_error: OnError,
    /// Port the worker servers listen on.
    pub port: u16,
    /// The worker binary to install on nodes.
    pub worker: PathBuf,
    /// No progress on stderr (`-q`): warnings and errors only.
    pub quiet: bool,
    /// Where to write the run's events as JSON lines, if anywhere.
    pub events: Option<EventsTo>,
    /// How many more times a point is measured when the medium emulator did not keep its
    /// timing bound during it ([`crate::results::PointStatus::Untimed`]).
    pub remeasure: u32,
    pub timing: Timing,
}
