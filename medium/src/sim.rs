//! The MAC model in simulated time: N saturated stations (always a frame ready) on one shared
//! segment, deterministic per seed. This is how the model is checked against what was
//! published for real Ethernets, and against the real-time emulator at the same load.

use crate::config::{Medium, MediumConfig, PortSpec, SegmentSpec};
use crate::engine::{DueFrame, Engine};
use crate::frame::Synthetic;
use crate::stats::SegmentCounters;
use crate::time::{FCS_BYTES, Nanos};

#[derive(Debug, Clone)]
pub struct Saturation {
    pub stations: usize,
    /// Frame lengths as the kernel sees them (no FCS); station `i` sends them in turn,
    /// starting at `i`, so a mix is spread over the stations.
    pub frame_lens: Vec<u32>,
    pub rate_bps: u64,
    pub collision_window_ns: Nanos,
    pub turnaround_ns: Nanos,
    /// Frames each station keeps queued (saturation needs at least one).
    pub queue_limit: usize,
    pub duration: Nanos,
    pub seed: u64,
}

#[derive(Debug, Clone)]
pub struct SimResult {
    pub counters: SegmentCounters,
    pub duration: Nanos,
    /// Frames each station got across.
    pub per_station: Vec<u64>,
}

impl SimResult {
    /// Bits of frames, FCS included, per second: what Boggs, Mogul & Kent plotted.
    pub fn frame_mbit_s(&self) -> f64 {
        let bits = (self.counters.bytes + FCS_BYTES * self.counters.frames) * 8;
        bits as f64 / self.duration as f64 * 1e3
    }

    pub fn utilisation(&self) -> f64 {
        self.counters.utilisation(self.duration)
    }

    /// Jain's fairness index over the stations' frame counts (1 = perfectly fair).
    pub fn fairness(&self) -> f64 {
        let n = self.per_station.len() as f64;
        let sum: f64 = self.per_station.iter().map(|&x| x as f64).sum();
        let sq: f64 = self.per_station.iter().map(|&x| (x as f64).powi(2)).sum();
        if sq == 0.0 { 0.0 } else { sum * sum / (n * sq) }
    }
}

/// Runs `s` and returns what the segment carried.
pub fn saturate(s: &Saturation) -> SimResult {
    let config = MediumConfig {
        segments: vec![SegmentSpec {
            name: "sim".into(),
            medium: Medium::Shared,
            rate_bps: s.rate_bps,
            collision_window_ns: s.collision_window_ns,
            queue_limit: s.queue_limit.max(1),
            turnaround_ns: s.turnaround_ns,
        }],
        // One more port than senders: a silent monitor that sees every frame once.
        ports: (0..=s.stations)
            .map(|i| PortSpec {
                ifname: format!("s{i}"),
                segment: 0,
                node: None,
            })
            .collect(),
        nodes: Vec::new(),
        seed: s.seed,
    };
    let mut engine: Engine<Synthetic> = Engine::new(&config);
    let mut next_len = (0..s.stations).collect::<Vec<usize>>();
    let mut frame_of = |station: usize| {
        let len = s.frame_lens[next_len[station] % s.frame_lens.len()];
        next_len[station] += 1;
        Synthetic { len, from: station }
    };
    for st in 0..s.stations {
        for _ in 0..s.queue_limit.max(1) {
            engine.arrive(st, frame_of(st), 0);
        }
    }
    let mut per_station = vec![0u64; s.stations];
    let mut out: Vec<DueFrame<Synthetic>> = Vec::new();
    while let Some(t) = engine.next_deadline() {
        if t > s.duration {
            break;
        }
        engine.advance(t, &mut out);
        // Count each frame once, at the monitor, and give its sender the next one at once.
        for o in out.drain(..) {
            let from = o.frame.from;
            if o.port == s.stations {
                per_station[from] += 1;
                engine.arrive(from, frame_of(from), o.due);
            }
        }
    }
    SimResult {
        counters: engine.segment_counters()[0],
        duration: s.duration,
        per_station,
    }
}

/// Metcalfe & Boggs (CACM 1976): the efficiency of an Ethernet with `q` stations always
/// ready, frames of `frame_bits` and a contention slot of `slot_bits`:
/// A = (1 − 1/q)^(q−1), W = (1 − A)/A, E = P / (P + W·T).
pub fn metcalfe_boggs_efficiency(q: usize, frame_bits: f64, slot_bits: f64) -> f64 {
    if q <= 1 {
        return 1.0;
    }
    let q = q as f64;
    let a = (1.0 - 1.0 / q).powf(q - 1.0);
    let w = (1.0 - a) / a;
    frame_bits / (frame_bits + w * slot_bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stations: usize, len: u32) -> SimResult {
        saturate(&Saturation {
            stations,
            frame_lens: vec![len],
            rate_bps: 10_000_000,
            collision_window_ns: crate::config::DEFAULT_COLLISION_WINDOW_NS,
            turnaround_ns: crate::config::DEFAULT_TURNAROUND_NS,
            queue_limit: 4,
            duration: 2_000_000_000,
            seed: 42,
        })
    }

    #[test]
    fn one_station_alone_fills_the_wire_but_for_its_turnaround() {
        let r = run(1, 1514);
        assert_eq!(r.counters.collisions, 0);
        // Each frame: 1230.4 µs with its gap, of which the turnaround takes 12.8 instead of
        // the gap's 9.6.
        let expected = 1_230_400.0 / (1_220_800.0 + 12_800.0);
        assert!(
            (r.utilisation() - expected).abs() < 0.001,
            "{}",
            r.utilisation()
        );
    }

    #[test]
    fn the_formula_matches_its_known_values() {
        // Two stations: A = 1/2, W = 1; infinitely many: A -> 1/e.
        assert!((metcalfe_boggs_efficiency(2, 512.0, 512.0) - 0.5).abs() < 1e-12);
        let e = metcalfe_boggs_efficiency(100_000, 512.0, 512.0);
        assert!((e - 1.0 / std::f64::consts::E).abs() < 1e-3, "{e}");
    }

    #[test]
    fn the_same_seed_gives_the_same_run() {
        let a = run(8, 60);
        let b = run(8, 60);
        assert_eq!(a.counters, b.counters);
        assert_eq!(a.per_station, b.per_station);
    }
}
