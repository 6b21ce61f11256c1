//! `run --events FILE|-`: what happens during a run as JSON lines, one object per event, each
//! with its `type` and `time` (RFC 3339, UTC), written and flushed as it happens so that a
//! program can follow a run live. The run directory stays the record; this is the feed.
//!
//! A sink that fails (a reader that went away) stops taking events after one warning: the run
//! it reports on matters more than the report.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::results::{PointStatus, RecordRow};
use crate::spec::experiment::{Pattern, PlacementKind, Protocol};
use orchestrate_worker::record::Role;

/// One thing that happened in a run. The `type` of each is its name in snake case.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The run directory is open; `done_before` points are kept from an earlier attempt.
    RunStarted {
        experiment: String,
        run_dir: PathBuf,
        points: usize,
        done_before: usize,
        configurations: usize,
        estimate_s: f64,
    },
    /// A configuration is applied on every node and its paths are proved.
    ConfigurationUp {
        configuration: usize,
        topology: String,
        bonding: String,
        nodes: usize,
    },
    PointStarted {
        point: usize,
        configuration: usize,
        topology: String,
        bonding: String,
        pattern: Pattern,
        protocol: Protocol,
        placement: PlacementKind,
        pairs: u32,
        size_bytes: u64,
        rep: u32,
        estimate_s: f64,
    },
    PointFinished {
        point: usize,
        status: PointStatus,
        error: Option<String>,
        seconds: f64,
        figures: Figures,
        /// Points done of all, counting those of an earlier attempt.
        done: usize,
        total: usize,
        /// The estimated time left (see `runner::eta`).
        left_s: f64,
    },
    /// Something failed: a point (`point` set), a configuration, or the run.
    Failure {
        configuration: Option<usize>,
        point: Option<usize>,
        message: String,
    },
    Warning {
        message: String,
    },
    /// A configuration's teardown ran; `nodes_left` still hold changes (kept in the ledger).
    Teardown {
        configuration: usize,
        clean: bool,
        nodes_left: Vec<String>,
    },
    /// The last event: counts, why the run stopped early or failed, if it did.
    RunFinished {
        ok: usize,
        failed: usize,
        untimed: usize,
        skipped: usize,
        stopped: Option<String>,
        error: Option<String>,
        seconds: f64,
    },
}

/// What a point measured, as far as its records say at once (the report does the statistics).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Pairs with at least one client trial without error.
    pub pairs: usize,
    /// Sum over those pairs of each pair's mean rate (the worker's per-trial rate), Mbit/s.
    pub throughput_mbit_s: Option<f64>,
    /// Median of the clients' one-way latencies, µs.
    pub latency_us: Option<f64>,
}

impl Figures {
    pub fn of(records: &[RecordRow]) -> Figures {
        let clients: Vec<&RecordRow> = records
            .iter()
            .filter(|r| r.record.role == Role::Client && r.record.error.is_none())
            .collect();
        let mut pairs: Vec<u32> = clients.iter().map(|r| r.pair).collect();
        pairs.sort_unstable();
        pairs.dedup();
        let pair_means: Vec<f64> = pairs
            .iter()
            .filter_map(|p| {
                mean(
                    clients
                        .iter()
                        .filter(|r| r.pair == *p)
                        .filter_map(|r| r.record.throughput_mbit_s),
                )
            })
            .collect();
        let latencies: Vec<f64> = clients.iter().filter_map(|r| r.record.latency_us).collect();
        Figures {
            pairs: pairs.len(),
            throughput_mbit_s: (!pair_means.is_empty()).then(|| pair_means.iter().sum()),
            latency_us: median(latencies),
        }
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// Where `--events` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventsTo {
    Stdout,
    File(PathBuf),
}

impl std::str::FromStr for EventsTo {
    type Err = std::convert::Infallible;

    /// `-` is stdout; anything else a file.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "-" => EventsTo::Stdout,
            path => EventsTo::File(path.into()),
        })
    }
}

/// An event as written: its time, then its type and fields.
#[derive(Serialize)]
struct Stamped<'a> {
    time: String,
    #[serde(flatten)]
    event: &'a Event,
}

/// The events' destination, if `--events` was given.
#[derive(Default)]
pub struct EventLog {
    out: Mutex<Option<Box<dyn Write + Send>>>,
}

impl EventLog {
    pub fn open(to: Option<&EventsTo>) -> anyhow::Result<EventLog> {
        let out: Option<Box<dyn Write + Send>> = match to {
            None => None,
            Some(EventsTo::Stdout) => Some(Box::new(std::io::stdout())),
            Some(EventsTo::File(path)) => {
                Some(Box::new(std::fs::File::create(path).map_err(|e| {
                    anyhow::anyhow!("--events {}: {e}", path.display())
                })?))
            }
        };
        Ok(EventLog::to(out))
    }

    fn to(out: Option<Box<dyn Write + Send>>) -> EventLog {
        EventLog {
            out: Mutex::new(out),
        }
    }

    /// Writes `event` as one line, now.
    pub fn emit(&self, event: Event) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let Some(w) = out.as_mut() else {
            return;
        };
        let written = line(&event, SystemTime::now()).and_then(|l| {
            w.write_all(l.as_bytes())?;
            w.flush()
        });
        if let Err(e) = written {
            tracing::warn!("--events: {e}; no more events are written");
            *out = None;
        }
    }
}

/// `event` as one JSON line stamped `at`.
fn line(event: &Event, at: SystemTime) -> std::io::Result<String> {
    let stamped = Stamped {
        time: humantime::format_rfc3339_millis(at).to_string(),
        event,
    };
    Ok(serde_json::to_string(&stamped)? + "\n")
}

/// Seconds as events give them: to the millisecond.
pub fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn parse(line: &str) -> serde_json::Value {
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn each_event_is_one_line_with_its_type_time_and_fields() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let finished = Event::PointFinished {
            point: 17,
            status: PointStatus::Failed,
            error: Some("n03 stopped answering".into()),
            seconds: 44.5,
            figures: Figures {
                pairs: 3,
                throughput_mbit_s: Some(9.25),
                latency_us: None,
            },
            done: 18,
            total: 320,
            left_s: 3600.0,
        };
        let v = parse(&line(&finished, at).unwrap());
        assert_eq!(v["type"], "point_finished");
        assert_eq!(v["time"], "2023-11-14T22:13:20.123Z");
        assert_eq!(v["status"], "failed");
        assert_eq!(v["error"], "n03 stopped answering");
        assert_eq!(v["figures"]["pairs"], 3);
        assert_eq!(v["figures"]["throughput_mbit_s"], 9.25);
        assert!(v["figures"]["latency_us"].is_null());
        assert_eq!(
            (v["done"].as_u64(), v["total"].as_u64()),
            (Some(18), Some(320))
        );

        let started = Event::PointStarted {
            point: 17,
            configuration: 2,
            topology: "routed-mesh-4x4".into(),
            bonding: "none".into(),
            pattern: Pattern::Token,
            protocol: Protocol::Tcp,
            placement: PlacementKind::RemoteWire,
            pairs: 3,
            size_bytes: 8192,
            rep: 1,
            estimate_s: 12.5,
        };
        let v = parse(&line(&started, at).unwrap());
        assert_eq!(v["type"], "point_started");
        assert_eq!(v["pattern"], "token");
        assert_eq!(v["placement"], "remote-wire");
        let v = parse(
            &line(
                &Event::Teardown {
                    configuration: 2,
                    clean: false,
                    nodes_left: vec!["n03".into()],
                },
                at,
            )
            .unwrap(),
        );
        assert_eq!(v["type"], "teardown");
        assert_eq!(v["nodes_left"][0], "n03");
    }

    fn record(pair: u32, role: Role, mbit_s: f64, latency_us: f64) -> RecordRow {
        let mut record =
            orchestrate_worker::record::Record::new(Pattern::Token, Protocol::Tcp, role);
        record.throughput_mbit_s = Some(mbit_s);
        record.latency_us = Some(latency_us);
        RecordRow {
            point: 0,
            topology: "t".into(),
            bonding: "none".into(),
            bond_driver: None,
            placement: PlacementKind::LocalWire,
            pairs: 2,
            pair,
            rep: 0,
            attempt: 0,
            client_node: "a".into(),
            server_node: "b".into(),
            record,
        }
    }

    #[test]
    fn figures_sum_the_pairs_mean_rates_and_take_the_clients_median_latency() {
        let mut failed = record(2, Role::Client, 1000.0, 1.0);
        failed.record.error = Some("reset".into());
        let records = [
            record(0, Role::Client, 4.0, 100.0),
            record(0, Role::Client, 6.0, 300.0),
            record(1, Role::Client, 2.0, 200.0),
            record(1, Role::Server, 500.0, 9000.0),
            failed,
        ];
        let f = Figures::of(&records);
        // Pair 0 averages 5, pair 1 gives 2; the server's and the failed trial's count not.
        assert_eq!(
            f,
            Figures {
                pairs: 2,
                throughput_mbit_s: Some(7.0),
                latency_us: Some(200.0),
            }
        );
        assert_eq!(Figures::of(&[]), Figures::default());
    }

    /// A writer whose bytes the test can read back, that fails when told to.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<(Vec<u8>, bool)>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let mut s = self.0.lock().unwrap();
            if s.1 {
                return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
            }
            s.0.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failing_sink_is_dropped_and_the_run_goes_on() {
        let sink = Shared::default();
        let log = EventLog::to(Some(Box::new(sink.clone())));
        log.emit(Event::Warning {
            message: "one".into(),
        });
        sink.0.lock().unwrap().1 = true;
        log.emit(Event::Warning {
            message: "two".into(),
        });
        sink.0.lock().unwrap().1 = false;
        log.emit(Event::Warning {
            message: "three".into(),
        });
        let text = String::from_utf8(sink.0.lock().unwrap().0.clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert_eq!(parse(&format!("{}\n", text.trim_end()))["message"], "one");
        assert!(log.out.lock().unwrap().is_none());
    }

    #[test]
    fn dash_is_stdout_and_anything_else_a_file() {
        assert_eq!("-".parse::<EventsTo>(), Ok(EventsTo::Stdout));
        assert_eq!(
            "ev.jsonl".parse::<EventsTo>(),
            Ok(EventsTo::File("ev.jsonl".into()))
        );
    }
}
