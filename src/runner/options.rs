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
}
