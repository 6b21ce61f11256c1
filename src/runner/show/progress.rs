//! The run's progress on stderr: a bar (points done of all, elapsed, estimated time left,
//! the configuration and point at hand) when stderr is a terminal, one plain line per
//! configuration and per point otherwise (and always in `run.log`), nothing with `-q`. Log
//! lines and warnings printed while the bar is shown go above it, through [`LogWriter`], so
//! neither garbles the other; nothing of this reaches stdout.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

use crate::plan::render::human;
use crate::plan::{Configuration, Plan, Point};

use super::eta::Eta;

/// The bar being shown, for [`LogWriter`]; `None` when there is none.
static SHOWN: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// How progress is shown.
enum Shown {
    /// A live bar, on a terminal.
    Bar(ProgressBar),
    /// One line per configuration and point: piped, logged, or on a terminal that cannot
    /// draw.
    Lines,
    /// `-q`: nothing but warnings.
    Quiet,
}

/// The time left as of an instant, for the bar to count down from between points.
type Countdown = Arc<Mutex<(Instant, Duration)>>;

pub struct Progress {
    total: usize,
    done: usize,
    started: Instant,
    shown: Shown,
    eta: Eta,
    countdown: Countdown,
    /// The configurations with points to measure, and how many of them have started.
    configurations: usize,
    configurations_started: usize,
    /// The configuration at hand, for the bar.
    configuration: String,
    /// When the configuration at hand started, until its first point starts.
    setting_up: Option<Instant>,
}

impl Progress {
    /// Progress over the points of `plan`, those in `done` finished before (a resumed run).
    pub fn start(plan: &Plan, done: &std::collections::BTreeSet<u32>, quiet: bool) -> Progress {
        let todo = || {
            plan.points
                .iter()
                .filter(|p| !done.contains(&(p.id as u32)))
        };
        let mut configurations: Vec<usize> = todo().map(|p| p.configuration).collect();
        configurations.dedup();
        let eta = Eta::new(todo().map(|p| p.estimate), configurations.len() as u32);
        let countdown = Arc::new(Mutex::new((Instant::now(), eta.left())));
        let (total, done) = (plan.points.len(), plan.points.len() - todo().count());
        let shown = if quiet {
            Shown::Quiet
        } else if std::io::stderr().is_terminal() {
            Shown::Bar(bar(total, done, countdown.clone()))
        } else {
            Shown::Lines
        };
        Progress {
            total,
            done,
            started: Instant::now(),
            shown,
            eta,
            countdown,
            configurations: configurations.len(),
            configurations_started: 0,
            configuration: String::new(),
            setting_up: None,
        }
    }

    pub fn total(&self) -> usize {
        self.total
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The estimated time left.
    pub fn left(&self) -> Duration {
        self.eta.left()
    }

    /// Setting up `c` on `nodes` nodes begins.
    pub fn configuration_started(&mut self, c: &Configuration, nodes: usize) {
        self.eta.configuration_started();
        self.setting_up = Some(Instant::now());
        self.configurations_started += 1;
        self.configuration = format!(
            "configuration {}/{}: {} ({}){}",
            self.configurations_started,
            self.configurations,
            c.topology.name,
            c.bonding_label(),
            if c.repeats.is_some() {
                " again, the drift check"
            } else {
                ""
            }
        );
        self.note(&format!("{} on {nodes} node(s)", self.configuration));
        self.restart_countdown();
        if let Shown::Bar(bar) = &self.shown {
            bar.set_message(format!("{}, setting up", self.configuration));
        }
    }

    /// Point `p` begins.
    pub fn point_started(&mut self, p: &Point) {
        if let Some(since) = self.setting_up.take() {
            self.eta.configuration_set_up(since.elapsed());
            self.restart_countdown();
        }
        if let Shown::Bar(bar) = &self.shown {
            bar.set_message(format!("{}, point {}", self.configuration, describe(p)));
        }
    }

    /// Point `p` finished after `took`: the line that says so, ending in the time left.
    pub fn point_finished(&mut self, p: &Point, took: Duration, outcome: &str) -> String {
        self.done += 1;
        self.eta.point_finished(p.estimate, took);
        self.restart_countdown();
        let line = format!(
            "[{}/{}] point {}: {outcome} in {:.1}s (elapsed {}, about {} left)",
            self.done,
            self.total,
            describe(p),
            took.as_secs_f64(),
            human(self.elapsed()),
            human(self.left()),
        );
        match &self.shown {
            Shown::Bar(bar) => {
                bar.println(&line);
                bar.inc(1);
            }
            Shown::Lines => eprintln!("{line}"),
            Shown::Quiet => {}
        }
        line
    }

    /// Something the person watching may want to know, unless `-q`.
    pub fn note(&self, msg: &str) {
        match &self.shown {
            Shown::Bar(bar) => bar.println(msg),
            Shown::Lines => eprintln!("{msg}"),
            Shown::Quiet => {}
        }
    }

    /// A warning, shown even with `-q`, above the bar if there is one.
    pub fn say(&self, msg: &str) {
        match &self.shown {
            Shown::Bar(bar) => bar.println(msg),
            Shown::Lines | Shown::Quiet => eprintln!("{msg}"),
        }
    }

    /// Takes the bar away; what is said from now on is said in plain lines.
    pub fn finish(&mut self) {
        if let Shown::Bar(bar) = &self.shown {
            *SHOWN.lock().unwrap_or_else(|p| p.into_inner()) = None;
            bar.finish_and_clear();
            self.shown = Shown::Lines;
        }
    }

    fn restart_countdown(&self) {
        *self.countdown.lock().unwrap_or_else(|p| p.into_inner()) = (Instant::now(), self.left());
    }
}

/// A point as the progress shows it: `17 routed-mesh-4x4 token remote-wire 3 pair(s) 8192 B
/// rep 1`.
fn describe(p: &Point) -> String {
    // A collective's counts are ranks.
    let who = if p.pattern.is_collective() {
        "rank(s)"
    } else {
        "pair(s)"
    };
    format!(
        "{} {} {} {} {} {who} {} B rep {}",
        p.id,
        p.topology,
        p.pattern.as_str(),
        p.placement.as_str(),
        p.pairs,
        p.size_bytes,
        p.rep
    )
}

/// The bar's look: points, elapsed, the time left counted down from the last estimate
/// between points, and the configuration and point at hand.
fn style(countdown: Countdown) -> ProgressStyle {
    let left = move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
        let (at, left) = *countdown.lock().unwrap_or_else(|p| p.into_inner());
        let _ = write!(w, "{}", human(left.saturating_sub(at.elapsed())));
    };
    ProgressStyle::with_template(
        "{bar:25} {pos}/{len} points, {elapsed} elapsed, about {left} left  {wide_msg}",
    )
    .expect("a valid template")
    .with_key("left", left)
}

/// The bar on stderr, shown to [`LogWriter`].
fn bar(total: usize, done: usize, countdown: Countdown) -> ProgressBar {
    let bar = ProgressBar::new(total as u64)
        .with_position(done as u64)
        .with_style(style(countdown));
    bar.enable_steady_tick(Duration::from_millis(500));
    *SHOWN.lock().unwrap_or_else(|p| p.into_inner()) = Some(bar.clone());
    bar
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
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
    fn with_no_bar_shown_log_lines_go_straight_out() {
        // Tests run with stderr captured or piped, never a terminal.
        let mut line = LogWriter.make_writer_for_test();
        line.write_all(b"a log line\n").unwrap();
        assert_eq!(line.0, b"a log line\n");
        assert!(SHOWN.lock().unwrap().is_none());
    }

    fn grid4x4() -> Plan {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/grid4x4.toml");
        crate::plan::expand(&crate::plan::load(&path).unwrap()).unwrap()
    }

    #[test]
    fn off_a_terminal_each_point_is_a_plain_line_ending_in_the_time_left() {
        let plan = grid4x4();
        let done = [0u32, 1].into_iter().collect();
        let mut p = Progress::start(&plan, &done, false);
        assert!(matches!(p.shown, Shown::Lines));
        let before = p.left();
        let first = &plan.points[2];
        p.configuration_started(&plan.configurations[first.configuration], 16);
        let line = p.point_finished(first, first.estimate * 2, "ok");
        assert!(
            line.starts_with(&format!(
                "[3/{}] point 2 {} token ",
                plan.points.len(),
                first.topology
            )),
            "{line}"
        );
        assert!(
            line.contains(": ok in ") && line.ends_with(" left)"),
            "{line}"
        );
        assert!(!line.contains('\x1b'), "{line:?}");
        // Twice as slow as estimated: what is left doubles, less the setup now done.
        let points_left = plan.points[3..]
            .iter()
            .map(|q| q.estimate)
            .sum::<Duration>();
        assert!(
            p.left() > points_left.mul_f64(1.99) && before < p.left(),
            "{:?}",
            p.left()
        );
    }

    /// A terminal that keeps what is drawn on it.
    #[derive(Debug, Default, Clone)]
    struct Screen(Arc<Mutex<String>>);

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            160
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(&format!("{s}\n"))
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push_str(s);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_bar_shows_points_time_left_and_what_is_being_measured() {
        let screen = Screen::default();
        let countdown = Arc::new(Mutex::new((Instant::now(), Duration::from_secs(754))));
        let target = indicatif::ProgressDrawTarget::term_like(Box::new(screen.clone()));
        let bar = ProgressBar::with_draw_target(Some(320), target)
            .with_position(17)
            .with_style(style(countdown));
        bar.set_message("configuration 2/3: routed-mesh-4x4 (none), point 17 token");
        bar.tick();
        let drawn = screen.0.lock().unwrap().clone();
        assert!(drawn.contains(" 17/320 points, "), "{drawn}");
        // 754 s, less the moment since: 12m 33s or 12m 34s.
        assert!(drawn.contains("about 12m 3"), "{drawn}");
        assert!(
            drawn.contains("left  configuration 2/3: routed-mesh-4x4 (none), point 17 token"),
            "{drawn}"
        );
    }

    #[test]
    fn quiet_shows_no_progress() {
        let p = Progress::start(&grid4x4(), &Default::default(), true);
        assert!(matches!(p.shown, Shown::Quiet));
    }

    impl LogWriter {
        fn make_writer_for_test(&self) -> LogLine {
            tracing_subscriber::fmt::MakeWriter::make_writer(self)
        }
    }
}
