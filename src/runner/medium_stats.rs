//! The medium emulator's statistics around each point: an `interval` request just before the
//! point's traffic starts (its answer is discarded: it only starts a new interval) and one
//! right after the traffic ends (kept), turned into `media.jsonl` and `hosts.jsonl` lines; at
//! the end of a configuration a `total` request for `media-total.jsonl`.
//!
//! The statistics are an addition to the measurement, never a reason to lose it: a socket
//! that does not answer is reported once, the sampler stops asking for the rest of the
//! configuration, and the points measured without statistics are listed in the
//! configuration's `media-total.jsonl` line so that the report can say so.

use std::path::{Path, PathBuf};

use orchestrate_medium::realtime::control::{self, Request, Snapshot};
use orchestrate_medium::stats::{SegmentReport, timing_kept};

use crate::results::{HostRow, HostStats, MediaContext, MediaRow, MediaTotal, SegmentStats};

/// Asks one configuration's emulator for its statistics.
pub struct Sampler {
    socket: PathBuf,
    /// Set by the first failure; no further requests are made after it.
    error: Option<String>,
    /// Whether the current point's interval was started.
    started: bool,
    /// The answer to the request after the current point's traffic.
    last: Option<Snapshot>,
    /// Points measured without statistics.
    missing: Vec<u32>,
}

impl Sampler {
    /// A sampler for the emulator behind `socket`; `None` when there is none (real machines,
    /// or a virtual cluster whose segments use `rate` emulation and so run no emulator).
    pub fn open(socket: Option<&Path>) -> Option<Sampler> {
        let socket = socket?;
        if !socket.exists() {
            tracing::info!(
                "no medium emulator socket at {}: no per-segment statistics (rate emulation?)",
                socket.display()
            );
            return None;
        }
        Some(Sampler {
            socket: socket.to_owned(),
            error: None,
            started: false,
            last: None,
            missing: Vec::new(),
        })
    }

    /// The first failure, if any (reported once by the caller).
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    async fn ask(&mut self, request: Request) -> Option<Snapshot> {
        if self.error.is_some() {
            return None;
        }
        let socket = self.socket.clone();
        let answer = tokio::task::spawn_blocking(move || control::query(&socket, request)).await;
        match answer {
            Ok(Ok(Some(s))) => Some(s),
            Ok(Ok(None)) => {
                self.error = Some(format!(
                    "the medium emulator answered {request:?} with nothing"
                ));
                None
            }
            Ok(Err(e)) => {
                self.error = Some(e.to_string());
                None
            }
            Err(e) => {
                self.error = Some(format!("asking the medium emulator: {e}"));
                None
            }
        }
    }

    /// Just before a point's traffic: starts a new interval.
    pub async fn begin(&mut self) {
        self.last = None;
        self.started = self.ask(Request::Interval).await.is_some();
    }

    /// Right after a point's traffic: keeps what happened since [`Sampler::begin`].
    pub async fn end(&mut self) {
        self.last = if self.started {
            self.ask(Request::Interval).await
        } else {
            None
        };
        self.started = false;
    }

    /// The lines of the point just measured (as `context`), and forgets them. A point whose
    /// statistics could not be read is remembered as missing.
    pub fn take(&mut self, context: &MediaContext) -> (Vec<MediaRow>, Vec<HostRow>) {
        match self.last.take() {
            Some(s) => rows(context, &s),
            None => {
                self.missing.push(context.point);
                (Vec::new(), Vec::new())
            }
        }
    }

    /// At the end of a configuration: everything since the emulator started, with the points
    /// that lack statistics and why.
    pub async fn total(&mut self, configuration: u32, topology: &str, bonding: &str) -> MediaTotal {
        let snapshot = self.ask(Request::Total).await;
        let mut t = MediaTotal {
            configuration,
            topology: topology.to_owned(),
            bonding: bonding.to_owned(),
            missing_points: std::mem::take(&mut self.missing),
            error: self.error.clone(),
            ..Default::default()
        };
        if let Some(s) = snapshot {
            t.realtime_priority = Some(s.realtime_priority);
            t.segments = s.segments.iter().map(segment_stats).collect();
            t.hosts = s.hosts.iter().map(host_stats).collect();
        }
        t
    }
}

/// A segment's report as stored, with utilisation, collisions per frame and the lateness flag.
pub fn segment_stats(r: &SegmentReport) -> SegmentStats {
    let c = &r.counters;
    SegmentStats {
        segment: r.segment.clone(),
        medium: r.medium.clone(),
        rate_bps: r.rate_bps,
        elapsed_ns: r.elapsed_ns,
        frames: c.frames,
        bytes: c.bytes,
        carried_ns: c.carried_ns,
        collisions: c.collisions,
        collided_attempts: c.collided_attempts,
        collision_ns: c.collision_ns,
        excess_collision_drops: c.excess_collision_drops,
        queue_drops: c.queue_drops,
        deferrals: c.deferrals,
        utilisation: r.utilisation(),
        collisions_per_frame: c.collisions_per_frame(),
        lateness_samples: r.lateness.samples,
        lateness_p50_us: r.lateness.p50_us,
        lateness_p99_us: r.lateness.p99_us,
        lateness_p999_us: r.lateness.p999_us,
        lateness_max_us: r.lateness.max_us,
        ingress_samples: r.ingress.samples,
        ingress_p50_us: r.ingress.p50_us,
        ingress_p99_us: r.ingress.p99_us,
        ingress_p999_us: r.ingress.p999_us,
        ingress_max_us: r.ingress.max_us,
        entry_samples: r.entry.samples,
        entry_p99_us: r.entry.p99_us,
        entry_max_us: r.entry.max_us,
        lateness_flagged: !timing_kept(r),
    }
}

fn host_stats(h: &orchestrate_medium::realtime::control::HostReport) -> HostStats {
    HostStats {
        node: h.node.clone(),
        sent: h.counters.sent,
        received: h.counters.received,
        forwarded: h.counters.forwarded,
        backlog_drops: h.counters.backlog_drops,
        busy_ns: h.counters.busy_ns,
    }
}

/// One `media.jsonl` line per segment and one `hosts.jsonl` line per node of a snapshot.
pub fn rows(context: &MediaContext, s: &Snapshot) -> (Vec<MediaRow>, Vec<HostRow>) {
    let media = s
        .segments
        .iter()
        .map(|r| MediaRow {
            context: context.clone(),
            stats: segment_stats(r),
            realtime_priority: s.realtime_priority,
        })
        .collect();
    let elapsed_ns = s.segments.iter().map(|r| r.elapsed_ns).max().unwrap_or(0);
    let hosts = s
        .hosts
        .iter()
        .map(|h| HostRow {
            context: context.clone(),
            stats: host_stats(h),
            elapsed_ns,
        })
        .collect();
    (media, hosts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use orchestrate_medium::host::HostCounters;
    use orchestrate_medium::realtime::control::HostReport;
    use orchestrate_medium::stats::{Lateness, SegmentCounters};
    use orchestrate_worker::record::{Pattern, Protocol};

    use crate::results::PlacementKind;

    fn context(point: u32) -> MediaContext {
        MediaContext {
            configuration: 0,
            point,
            topology: "bus".into(),
            bonding: "none".into(),
            placement: PlacementKind::LocalWire,
            pairs: 2,
            pattern: Pattern::Token,
            protocol: Protocol::Tcp,
            size_bytes: 64,
            rep: 0,
        }
    }

    fn snapshot(p99_us: f64) -> Snapshot {
        Snapshot {
            segments: vec![SegmentReport {
                segment: "bus0".into(),
                medium: "shared".into(),
                rate_bps: 10_000_000,
                elapsed_ns: 1_000_000_000,
                counters: SegmentCounters {
                    frames: 1000,
                    bytes: 64_000,
                    carried_ns: 250_000_000,
                    collisions: 50,
                    ..Default::default()
                },
                lateness: Lateness {
                    samples: 1000,
                    p50_us: 1.0,
                    p99_us,
                    p999_us: p99_us,
                    max_us: p99_us,
                },
                ingress: Lateness {
                    samples: 1000,
                    p50_us: 3.0,
                    p99_us: 12.0,
                    p999_us: 20.0,
                    max_us: 30.0,
                },
                entry: Lateness {
                    samples: 1000,
                    p99_us: 2.0,
                    max_us: 4.0,
                    ..Lateness::default()
                },
            }],
            hosts: vec![HostReport {
                node: "n01".into(),
                counters: HostCounters {
                    sent: 500,
                    ..Default::default()
                },
            }],
            realtime_priority: true,
        }
    }

    #[test]
    fn a_snapshot_becomes_a_line_per_segment_and_host_with_the_points_keys() {
        let (m, h) = rows(&context(7), &snapshot(2.0));
        assert_eq!(m.len(), 1);
        let r = &m[0];
        assert_eq!((r.context.point, r.stats.segment.as_str()), (7, "bus0"));
        assert!((r.stats.utilisation - 0.25).abs() < 1e-12);
        assert!((r.stats.collisions_per_frame - 0.05).abs() < 1e-12);
        assert!(!r.stats.lateness_flagged);
        assert_eq!((h[0].stats.node.as_str(), h[0].stats.sent), ("n01", 500));
        assert_eq!(h[0].elapsed_ns, 1_000_000_000);
        assert_eq!(
            (r.stats.ingress_samples, r.stats.ingress_p99_us),
            (1000, 12.0)
        );
        // A slot is 51.2 µs at 10 Mbit/s: a p99 of 60 µs is outside the bound.
        let (m, _) = rows(&context(7), &snapshot(60.0));
        assert!(m[0].stats.lateness_flagged);
        // The line is flat JSON with the keys records.jsonl joins on.
        let v = serde_json::to_value(&m[0]).unwrap();
        for k in [
            "configuration",
            "point",
            "rep",
            "segment",
            "frames",
            "lateness_p99_us",
        ] {
            assert!(v.get(k).is_some(), "{k} missing in {v}");
        }
        let back: MediaRow = serde_json::from_value(v).unwrap();
        assert_eq!(back, m[0]);
    }

    #[test]
    fn no_socket_means_no_sampler_and_a_dead_one_is_missing_not_fatal() {
        assert!(Sampler::open(None).is_none());
        assert!(Sampler::open(Some(Path::new("/nonexistent/medium.sock"))).is_none());
        let dir = std::env::temp_dir().join(format!("runner-media-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A file that is not a socket: every request fails.
        let path = dir.join("medium.sock");
        std::fs::write(&path, "").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut s = Sampler::open(Some(&path)).unwrap();
            s.begin().await;
            s.end().await;
            assert!(s.error().is_some());
            assert_eq!(s.take(&context(3)), (Vec::new(), Vec::new()));
            let t = s.total(0, "bus", "none").await;
            assert_eq!(t.missing_points, vec![3]);
            assert!(t.error.is_some() && t.segments.is_empty());
        });
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_live_emulator_is_asked_around_the_point() {
        let dir = std::env::temp_dir().join(format!("runner-media-live-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("medium.sock");
        let listener = control::bind(&path).unwrap();
        std::thread::spawn(move || {
            control::serve(listener, |r| match r {
                Request::Total => snapshot(3.0),
                _ => snapshot(2.0),
            })
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut s = Sampler::open(Some(&path)).unwrap();
            s.begin().await;
            s.end().await;
            let (m, h) = s.take(&context(1));
            assert_eq!((m.len(), h.len()), (1, 1));
            let t = s.total(0, "bus", "none").await;
            assert!(t.error.is_none() && t.missing_points.is_empty());
            assert_eq!(t.segments[0].lateness_p99_us, 3.0);
            assert_eq!(t.realtime_priority, Some(true));
        });
        let _ = std::fs::remove_dir_all(&dir);
    }
}
