//! The run's progress on stderr: a bar (points done of all, elapsed, estimated time left) when
//! stderr is a terminal, one line per point otherwise (and always in `run.log`). Log lines and
//! warnings printed while the bar is shown go above it, through [`LogWriter`], so neither
//! garbles the other; nothing of this reaches stdout.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// The bar being shown, for [`LogWriter`]; `None` when there is none.
static SHOWN: Mutex<Option<ProgressBar>> = Mutex::new(None);

pub struct Progress {
    total: usize,
    started: Instant,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Progress over `total` points, `done` of which finished before (a resumed run).
    pub fn start(total: usize, done: usize) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total as u64).with_position(done as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} points, {elapsed_precise} elapsed, about {eta} left  {msg}",
                )
                .expect("a valid template"),
            );
            bar.enable_steady_tick(Duration::from_millis(500));
            *SHOWN.lock().unwrap_or_else(|p| p.into_inner()) = Some(bar.clone());
            bar
        });
        Progress {
            total,
            started: Instant::now(),
            bar,
        }
    }

    pub fn total(&self) -> usize {
        self.total
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// A point finished: `line` says which and how.
    pub fn point_done(&self, line: &str) {
        match &self.bar {
            Some(bar) => {
                bar.println(line);
                bar.inc(1);
            }
            None => eprintln!("{line}"),
        }
    }

    /// A message for the person watching (a warning), above the bar.
    pub fn say(&self, msg: &str) {
        match &self.bar {
            Some(bar) => bar.println(msg),
            None => eprintln!("{msg}"),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            *SHOWN.lock().unwrap_or_else(|p| p.into_inner()) = None;
            bar.finish_and_clear();
        }
    }
}

/// Where the log (tracing) writes: stderr, with a shown progress bar hidden for the moment
/// the lines are written.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

/// One log event's bytes, written in one piece when the event is done.
pub struct LogLine(Vec<u8>);

impl Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        let write = || {
            let _ = std::io::stderr().write_all(&self.0);
        };
        let shown = SHOWN.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match shown {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogLine;

    fn make_writer(&'a self) -> LogLine {
        LogLine(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_terminal_there_is_no_bar_and_log_lines_go_straight_out() {
        // Tests run with stderr captured or piped, never a terminal.
        let p = Progress::start(10, 3);
        assert!(p.bar.is_none());
        assert!(SHOWN.lock().unwrap().is_none());
        assert_eq!(p.total(), 10);
        let mut line = LogWriter.make_writer_for_test();
        line.write_all(b"a log line\n").unwrap();
        assert_eq!(line.0, b"a log line\n");
    }

    impl LogWriter {
        fn make_writer_for_test(&self) -> LogLine {
            tracing_subscriber::fmt::MakeWriter::make_writer(self)
        }
    }
}
