//! What every configuration of a run writes to: the run directory, the manifest, the tally of
//! points ([`Summary`], what the run did in the end), the progress display and the events, and
//! whether the user asked to stop.

use std::path::PathBuf;

use tokio::sync::watch;

use crate::results::Manifest;
use crate::results::run_dir::RunWriter;

use super::show::events::{self, Event, EventLog};
use super::show::progress::Progress;

pub struct RunState {
    pub writer: RunWriter,
    pub manifest: Manifest,
    pub summary: Summary,
    pub progress: Progress,
    pub events: EventLog,
    /// Turns true on Ctrl-C.
    pub interrupted: watch::Receiver<bool>,
}

impl RunState {
    pub fn is_interrupted(&self) -> bool {
        *self.interrupted.borrow()
    }

    /// Logs `msg` to `run.log`, shows it as a warning above the progress display, and
    /// reports it as an event.
    pub fn warn(&self, msg: &str) {
        self.writer.log(msg);
        self.progress.say(&format!("warning: {msg}"));
        self.events.emit(Event::Warning {
            message: msg.to_owned(),
        });
    }

    /// The run is over, having failed with `error` if it did: the progress display goes, the
    /// last event says how it ended.
    pub fn finished(&mut self, error: Option<String>) {
        self.progress.finish();
        let s = &self.summary;
        self.events.emit(Event::RunFinished {
            ok: s.ok,
            failed: s.failed,
            untimed: s.untimed,
            skipped: s.skipped,
            stopped: s.stopped.as_ref().map(|why| match why {
                Stopped::Interrupted => "interrupted".to_owned(),
                Stopped::PointFailed(why) => why.clone(),
            }),
            error,
            seconds: events::secs(self.progress.elapsed()),
        });
    }

    /// Marks the run as stopped early, for `why`.
    pub fn stop(&mut self, why: Stopped) {
        self.summary.stopped = Some(why);
    }

    /// Writes the manifest as it stands.
    pub fn save_manifest(&self) -> anyhow::Result<()> {
        self.writer.write_manifest(&self.manifest)
    }
}

/// What a run did.
#[derive(Debug)]
pub struct Summary {
    pub dir: PathBuf,
    pub ok: usize,
    pub failed: usize,
    /// Points the medium emulator never kept time for, however often measured: they count
    /// nowhere, but nothing failed ([`crate::results::PointStatus::Untimed`]).
    pub untimed: usize,
    pub skipped: usize,
    /// Why the run stopped early, if it did.
    pub stopped: Option<Stopped>,
    /// The experiment's reference values checked by the run's report, as the terminal shows
    /// them (empty when it has none), and how many failed.
    pub references: String,
    pub references_failed: usize,
}

/// Why a run stopped before its last point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// Ctrl-C.
    Interrupted,
    /// A point failed under `--on-error stop`: which, and why.
    PointFailed(String),
}
