//! What every configuration of a run writes to: the run directory, the manifest, the tally of
//! points and the progress display, and whether the user asked to stop.

use tokio::sync::watch;

use crate::results::Manifest;

use super::progress::Progress;
use super::rundir::RunWriter;
use super::{Stopped, Summary};

pub struct RunState {
    pub writer: RunWriter,
    pub manifest: Manifest,
    pub summary: Summary,
    pub progress: Progress,
    /// Turns true on Ctrl-C.
    pub interrupted: watch::Receiver<bool>,
}

impl RunState {
    pub fn is_interrupted(&self) -> bool {
        *self.interrupted.borrow()
    }

    /// Logs `msg` to `run.log` and shows it as a warning above the progress display.
    pub fn warn(&self, msg: &str) {
        self.writer.log(msg);
        self.progress.say(&format!("warning: {msg}"));
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
