//! Statistics leave the event thread only when the control socket asks for them: the control
//! thread raises a flag, rings the event thread's doorbell and waits; the event thread, at
//! the end of its pass, copies its counters and lateness into [`Published`] and clears its
//! own. Merging histograms every few milliseconds instead held up the frames due meanwhile.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

use crate::config::MediumConfig;
use crate::engine::Engine;
use crate::host::HostCounters;
use crate::stats::{SegmentCounters, SegmentReport};
use crate::time::Nanos;

use super::clock::Clock;
use super::control::{HostReport, Request, Snapshot};
use super::measured::Measured;

/// How long a request waits for the event thread before it is answered with what was last
/// published.
const PUBLISH_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Statistics as the control thread reads them; the event thread publishes into it when the
/// control thread asks.
pub struct Published<C> {
    clock: C,
    names: Vec<(String, &'static str, u64)>,
    /// The nodes whose CPU costs something per frame (indices into the config's nodes).
    costly: Vec<usize>,
    node_names: Vec<String>,
    started: Nanos,
    counters: Vec<SegmentCounters>,
    hosts: Vec<HostCounters>,
    total: Measured,
    interval: Measured,
    interval_start: Nanos,
    interval_base: Vec<SegmentCounters>,
    interval_hosts: Vec<HostCounters>,
    realtime_priority: bool,
}

impl<C: Clock> Published<C> {
    /// Nothing counted yet, for `config`'s segments and its costly nodes; intervals and the
    /// total start now on `clock`.
    fn new(config: &MediumConfig, clock: C, realtime_priority: bool) -> Published<C> {
        let segments = config.segments.len();
        let costly: Vec<usize> = (0..config.nodes.len())
            .filter(|&i| !config.nodes[i].costs.is_free())
            .collect();
        let now = clock.now();
        Published {
            clock,
            names: config
                .segments
                .iter()
                .map(|s| (s.name.clone(), s.medium.as_str(), s.rate_bps))
                .collect(),
            node_names: costly
                .iter()
                .map(|&i| config.nodes[i].name.clone())
                .collect(),
            hosts: vec![Default::default(); costly.len()],
            interval_hosts: vec![Default::default(); costly.len()],
            costly,
            started: now,
            counters: vec![SegmentCounters::default(); segments],
            total: Measured::new(segments),
            interval: Measured::new(segments),
            interval_start: now,
            interval_base: vec![SegmentCounters::default(); segments],
            realtime_priority,
        }
    }

    /// The answer to `r` from what is published; `interval` starts a new interval.
    pub fn snapshot(&mut self, r: Request) -> Snapshot {
        let now = self.clock.now();
        let (since, base, measured) = match r {
            Request::Total => (self.started, None, &self.total),
            _ => (
                self.interval_start,
                Some(&self.interval_base),
                &self.interval,
            ),
        };
        let segments = self
            .names
            .iter()
            .enumerate()
            .map(|(i, (name, medium, rate))| SegmentReport {
                segment: name.clone(),
                medium: (*medium).to_owned(),
                rate_bps: *rate,
                elapsed_ns: now.saturating_sub(since),
                counters: match base {
                    Some(b) => self.counters[i].since(&b[i]),
                    None => self.counters[i],
                },
                lateness: measured.egress[i].summary(),
                ingress: measured.ingress[i].summary(),
                entry: measured.entry[i].summary(),
            })
            .collect();
        let hosts = self
            .node_names
            .iter()
            .enumerate()
            .map(|(i, node)| {
                let c = match base {
                    Some(_) => self.hosts[i].since(&self.interval_hosts[i]),
                    None => self.hosts[i],
                };
                HostReport {
                    node: node.clone(),
                    counters: c,
                }
            })
            .collect();
        let snap = Snapshot {
            segments,
            hosts,
            realtime_priority: self.realtime_priority,
        };
        if r == Request::Interval {
            self.interval_start = now;
            self.interval_base = self.counters.clone();
            self.interval_hosts = self.hosts.clone();
            self.interval.clear();
        }
        snap
    }
}

/// What the event thread and the control thread share: the published statistics, whether
/// the control thread wants them brought up to date, and its doorbell.
pub struct Shared<C> {
    pub published: Mutex<Published<C>>,
    /// Read by the event thread once a pass (an atomic load; the lock is taken only when set).
    pub wanted: AtomicBool,
    done: Condvar,
    /// Wakes a sleeping event thread. Rung once per control request, never on the event
    /// thread, so a boxed closure costs nothing that matters.
    ring: Box<dyn Fn() + Send + Sync>,
}

impl<C: Clock> Shared<C> {
    pub fn new(
        config: &MediumConfig,
        clock: C,
        realtime_priority: bool,
        ring: Box<dyn Fn() + Send + Sync>,
    ) -> Shared<C> {
        Shared {
            published: Mutex::new(Published::new(config, clock, realtime_priority)),
            wanted: AtomicBool::new(false),
            done: Condvar::new(),
            ring,
        }
    }

    /// The control thread's side: has the event thread publish, waits for it (a bounded
    /// time), and answers `r` from what is published.
    pub fn answer(&self, r: Request) -> Snapshot {
        let mut p = self.published.lock().expect("stats lock");
        self.wanted.store(true, Ordering::Release);
        (self.ring)();
        let deadline = std::time::Instant::now() + PUBLISH_WAIT;
        while self.wanted.load(Ordering::Acquire) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            p = self.done.wait_timeout(p, left).expect("stats lock").0;
        }
        p.snapshot(r)
    }

    /// The event thread's side: hands the counters and the lateness seen since the last call
    /// to the control thread, which asked for them and waits.
    pub fn publish(&self, engine: &Engine<Vec<u8>>, lateness: &mut Measured) {
        let mut guard = self.published.lock().expect("stats lock");
        let p = &mut *guard;
        p.counters = engine.segment_counters();
        let hosts = engine.host_counters();
        p.hosts = p.costly.iter().map(|&i| hosts[i]).collect();
        p.total.merge(lateness);
        p.interval.merge(lateness);
        lateness.clear();
        self.wanted.store(false, Ordering::Release);
        self.done.notify_all();
    }
}
