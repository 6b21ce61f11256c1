//! What a run shows while it goes and leaves for its report: the progress on stderr
//! ([`progress`], with the time left from [`eta`]), the events for programs ([`events`]), and
//! the topology drawings and model predictions a run directory gives its report
//! ([`drawings`]).

pub(super) mod drawings;
pub(super) mod eta;
pub(super) mod events;
pub(super) mod progress;
