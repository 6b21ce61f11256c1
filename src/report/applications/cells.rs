//! The section's cells: each counted point attempt's figure, combined per cell, the ratio to
//! the baseline, the model, and how much each collective's time depends on the network.

use std::collections::BTreeMap;

use orchestrate_worker::record::Pattern;

use super::ranks::RankRecord;
use crate::report::stats::{MedianCi, rep_stats};
use crate::results::{PlacementKind, PointRow, PointStatus, Statistic};

/// Below this ratio between a collective's slowest and fastest configuration, the network
/// barely matters to it...
pub const LITTLE: f64 = 1.25;
/// ...and from this one on, it matters a great deal.
pub const STRONG: f64 = 2.0;

/// The model's time per iteration for one collective cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectiveCellPrediction {
    pub topology: String,
    pub bonding: String,
    pub pattern: String,
    pub ranks: u32,
    pub size_bytes: u64,
    pub time_us: f64,
    pub limit: String,
}

/// The section.
#[derive(Debug, Clone, PartialEq)]
pub struct Applications {
    pub statistic: Statistic,
    pub baseline: Option<String>,
    /// The worker's, by collective, size, topology and bonding.
    pub cells: Vec<AppCell>,
    /// The same collectives run by an MPI library on the same cluster (`implementation =
    /// "open-mpi"`), by collective, size, topology and bonding: the worker's check.
    pub peer_cells: Vec<AppCell>,
    /// Per collective and size: the fastest and slowest configuration.
    pub spreads: Vec<Spread>,
    /// Per collective: how much the network choice matters to it, over its sizes.
    pub sensitivity: Vec<Sensitivity>,
}

/// How far an MPI library's time may be from the worker's for the two to agree: the bound
/// the model is held to as well.
pub const PEER_AGREEMENT: f64 = 0.15;

impl Applications {
    /// Each cell an MPI library ran, beside the worker's same cell where there is one.
    pub fn against_peer(&self) -> Vec<(&AppCell, Option<&AppCell>)> {
        self.peer_cells
            .iter()
            .map(|m| {
                let twin = self.cells.iter().find(|w| w.same_cell(m));
                (m, twin)
            })
            .collect()
    }
}

/// One collective at one size on one configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct AppCell {
    pub topology: String,
    pub bonding: String,
    pub placement: PlacementKind,
    pub ranks: u32,
    pub pattern: Pattern,
    /// The algorithm that ran, as the ranks' records say (`ring`; `recursive-doubling`
    /// where a ring had fewer elements than ranks).
    pub algorithm: String,
    pub size_bytes: u64,
    /// Who ran the ranks when not the worker (`open-mpi`), and the library its records name
    /// (`Open MPI v4.1.4 (mpi4py 3.1.4)`).
    pub implementation: Option<String>,
    pub library: Option<String>,
    /// Each counted attempt's figure: the mean over ranks of their time per iteration, µs.
    pub repetitions: Vec<f64>,
    /// The report's statistic of them (the best is the shortest).
    pub value_us: f64,
    pub interval: Option<MedianCi>,
    /// The fastest and the slowest rank's time per iteration over the counted attempts.
    pub fastest_rank_us: f64,
    pub slowest_rank_us: f64,
    /// Timed iterations, all ranks' counted attempts together (each rank ran the same).
    pub iterations: u64,
    /// Segments the ranks' connections retransmitted during the counted attempts.
    pub retransmissions: Option<u64>,
    /// Attempts that did not count: failed, or measured while the emulator missed its bound.
    pub not_counted: usize,
    /// The model's time per iteration, µs, and what bounds it.
    pub model: Option<(f64, String)>,
    /// This cell's time over the baseline's at the same collective and size.
    pub to_baseline: Option<f64>,
}

impl AppCell {
    /// The configuration's name in tables: the topology, with its multipath mode when that
    /// is not the topology's only one.
    pub fn config(&self) -> String {
        if self.bonding == "none" {
            self.topology.clone()
        } else {
            format!("{} ({})", self.topology, self.bonding)
        }
    }

    /// Whether `other` is this cell's collective, size, configuration, placement and ranks,
    /// whoever ran it.
    pub fn same_cell(&self, other: &AppCell) -> bool {
        fn key(c: &AppCell) -> (Pattern, u64, &str, &str, PlacementKind, u32) {
            (
                c.pattern,
                c.size_bytes,
                &c.topology,
                &c.bonding,
                c.placement,
                c.ranks,
            )
        }
        key(self) == key(other)
    }

    /// The collective as the tables name it: `allreduce ring`, and `allreduce ring
    /// (open-mpi)` where not the worker ran it.
    pub fn collective(&self) -> String {
        let label = collective_label(self.pattern, &self.algorithm);
        match &self.implementation {
            Some(i) => format!("{label} ({i})"),
            None => label,
        }
    }
}

/// `allreduce ring`, `halo 4x4 open`.
fn collective_label(p: Pattern, algorithm: &str) -> String {
    format!("{} {algorithm}", p.as_str())
}

/// One collective at one size: its fastest and slowest configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    pub pattern: Pattern,
    pub size_bytes: u64,
    pub fastest: (String, f64),
    pub slowest: (String, f64),
}

impl Spread {
    pub fn ratio(&self) -> f64 {
        self.slowest.1 / self.fastest.1
    }
}

/// How much one collective's time depends on the network, at the size where it depends most.
#[derive(Debug, Clone, PartialEq)]
pub struct Sensitivity {
    pub pattern: Pattern,
    pub at: Spread,
}

impl Sensitivity {
    /// `little`, `moderate` or `strong`, by [`LITTLE`] and [`STRONG`].
    pub fn degree(&self) -> &'static str {
        match self.at.ratio() {
            r if r < LITTLE => "little",
            r if r < STRONG => "moderate",
            _ => "strong",
        }
    }
}

type Key = (
    Option<String>,
    Pattern,
    u64,
    String,
    String,
    PlacementKind,
    u32,
);

/// The section from the collectives' point attempts and their ranks' records.
pub fn applications(
    points: &[PointRow],
    records: &[RankRecord],
    model: &[CollectiveCellPrediction],
    statistic: Statistic,
    baseline: Option<&str>,
) -> Applications {
    let mut by_attempt: BTreeMap<(u32, u32, u32), Vec<&RankRecord>> = BTreeMap::new();
    for r in records {
        by_attempt
            .entry((r.point, r.rep, r.attempt))
            .or_default()
            .push(r);
    }
    let mut cells: BTreeMap<Key, AppCell> = BTreeMap::new();
    for p in points.iter().filter(|p| !p.drift_check) {
        let key: Key = (
            p.implementation.clone(),
            p.pattern,
            p.size_bytes,
            p.topology.clone(),
            p.bonding.clone(),
            p.placement,
            p.pairs,
        );
        let ranks = by_attempt
            .get(&(p.point, p.rep, p.attempt))
            .map(Vec::as_slice)
            .unwrap_or_default();
        let cell = cells.entry(key).or_insert_with(|| AppCell {
            topology: p.topology.clone(),
            bonding: p.bonding.clone(),
            placement: p.placement,
            ranks: p.pairs,
            pattern: p.pattern,
            algorithm: String::new(),
            size_bytes: p.size_bytes,
            implementation: p.implementation.clone(),
            library: None,
            repetitions: Vec::new(),
            value_us: f64::NAN,
            interval: None,
            fastest_rank_us: f64::INFINITY,
            slowest_rank_us: 0.0,
            iterations: 0,
            retransmissions: Some(0),
            not_counted: 0,
            model: None,
            to_baseline: None,
        });
        let times: Vec<f64> = ranks.iter().filter_map(|r| r.latency_us).collect();
        let complete = p.status == PointStatus::Ok
            && !times.is_empty()
            && times.len() == ranks.len()
            && times.len() == p.pairs as usize;
        if !complete {
            cell.not_counted += 1;
            continue;
        }
        cell.repetitions
            .push(times.iter().sum::<f64>() / times.len() as f64);
        for &t in &times {
            cell.fastest_rank_us = cell.fastest_rank_us.min(t);
            cell.slowest_rank_us = cell.slowest_rank_us.max(t);
        }
        cell.iterations += ranks.iter().map(|r| r.iterations).sum::<u64>();
        cell.retransmissions = match (cell.retransmissions, sum_retrans(ranks)) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        if let Some(a) = ranks.iter().find_map(|r| r.algorithm.clone()) {
            cell.algorithm = a;
        }
        if let Some(l) = ranks.iter().find_map(|r| r.implementation.clone()) {
            cell.library = Some(l);
        }
    }
    let (mut cells, peer_cells): (Vec<AppCell>, Vec<AppCell>) = cells
        .into_values()
        .filter(|c| !c.repetitions.is_empty())
        .map(|mut c| {
            let s = rep_stats(&c.repetitions).expect("some repetitions");
            c.value_us = match statistic {
                Statistic::Best => c.repetitions.iter().copied().fold(f64::INFINITY, f64::min),
                Statistic::Median => s.median,
                Statistic::Mean => s.mean,
            };
            c.interval = s.ci;
            c.model = model
                .iter()
                .find(|m| {
                    m.topology == c.topology
                        && m.bonding == c.bonding
                        && m.pattern == c.pattern.as_str()
                        && m.ranks == c.ranks
                        && m.size_bytes == c.size_bytes
                })
                .map(|m| (m.time_us, m.limit.clone()));
            c
        })
        .partition(|c| c.implementation.is_none());
    set_baseline_ratios(&mut cells, baseline);
    let spreads = spreads(&cells);
    let sensitivity = sensitivity(&spreads);
    Applications {
        statistic,
        baseline: baseline.map(str::to_owned),
        cells,
        peer_cells,
        spreads,
        sensitivity,
    }
}

fn sum_retrans(ranks: &[&RankRecord]) -> Option<u64> {
    ranks.iter().map(|r| r.tcp_retrans).sum()
}

fn set_baseline_ratios(cells: &mut [AppCell], baseline: Option<&str>) {
    let Some(b) = baseline else {
        return;
    };
    let base: BTreeMap<(Pattern, u64, u32), f64> = cells
        .iter()
        .filter(|c| c.topology == b)
        .map(|c| ((c.pattern, c.size_bytes, c.ranks), c.value_us))
        .collect();
    for c in cells {
        c.to_baseline = base
            .get(&(c.pattern, c.size_bytes, c.ranks))
            .map(|v| c.value_us / v);
    }
}

/// Per collective and size, the fastest and slowest configuration (two or more measured).
fn spreads(cells: &[AppCell]) -> Vec<Spread> {
    let mut groups: BTreeMap<(Pattern, u64), Vec<&AppCell>> = BTreeMap::new();
    for c in cells {
        groups.entry((c.pattern, c.size_bytes)).or_default().push(c);
    }
    groups
        .into_iter()
        .filter(|(_, g)| g.len() >= 2)
        .map(|((pattern, size_bytes), g)| {
            let by = |f: fn(f64, f64) -> bool| {
                g.iter()
                    .copied()
                    .reduce(|a, b| if f(b.value_us, a.value_us) { b } else { a })
                    .map(|c| (c.config(), c.value_us))
                    .expect("two or more")
            };
            Spread {
                pattern,
                size_bytes,
                fastest: by(|b, a| b < a),
                slowest: by(|b, a| b > a),
            }
        })
        .collect()
}

/// Per collective, its largest spread over the sizes.
fn sensitivity(spreads: &[Spread]) -> Vec<Sensitivity> {
    let mut most: BTreeMap<Pattern, &Spread> = BTreeMap::new();
    for s in spreads {
        let e = most.entry(s.pattern).or_insert(s);
        if s.ratio() > e.ratio() {
            *e = s;
        }
    }
    most.into_iter()
        .map(|(pattern, s)| Sensitivity {
            pattern,
            at: s.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(point: u32, topology: &str, size: u64, status: PointStatus) -> PointRow {
        PointRow {
            point,
            topology: topology.into(),
            bonding: "none".into(),
            bond_driver: None,
            placement: PlacementKind::RowMajor,
            pairs: 2,
            pattern: Pattern::Allreduce,
            protocol: orchestrate_worker::record::Protocol::Tcp,
            size_bytes: size,
            rep: point,
            attempt: 0,
            status,
            error: None,
            window_start_unix_ns: None,
            window_end_unix_ns: None,
            skew_ns: None,
            drift_check: false,
            sampled_records: None,
            implementation: None,
        }
    }

    fn rank(point: u32, rank: u32, us: Option<f64>) -> RankRecord {
        RankRecord {
            point,
            rep: point,
            attempt: 0,
            rank,
            latency_us: us,
            iterations: 10,
            algorithm: Some("ring".into()),
            tcp_retrans: Some(1),
            implementation: None,
        }
    }

    #[test]
    fn a_cell_is_the_mean_over_ranks_and_only_complete_attempts_count() {
        let points = [
            point(0, "fast", 8, PointStatus::Ok),
            point(1, "fast", 8, PointStatus::Ok),
            point(2, "fast", 8, PointStatus::Untimed),
            point(3, "fast", 8, PointStatus::Ok),
            point(4, "slow", 8, PointStatus::Ok),
        ];
        let records = [
            rank(0, 0, Some(100.0)),
            rank(0, 1, Some(300.0)),
            rank(1, 0, Some(150.0)),
            rank(1, 1, Some(250.0)),
            rank(2, 0, Some(1.0)),
            rank(2, 1, Some(1.0)),
            // A rank that failed: the attempt does not count.
            rank(3, 0, Some(1.0)),
            rank(3, 1, None),
            rank(4, 0, Some(500.0)),
            rank(4, 1, Some(700.0)),
        ];
        let a = applications(&points, &records, &[], Statistic::Best, Some("fast"));
        let fast = a.cells.iter().find(|c| c.topology == "fast").unwrap();
        assert_eq!(fast.repetitions, [200.0, 200.0]);
        assert_eq!(fast.not_counted, 2);
        assert_eq!((fast.fastest_rank_us, fast.slowest_rank_us), (100.0, 300.0));
        assert_eq!(fast.iterations, 40);
        assert_eq!(fast.retransmissions, Some(4));
        let slow = a.cells.iter().find(|c| c.topology == "slow").unwrap();
        assert_eq!(slow.to_baseline, Some(3.0));
        assert_eq!(a.spreads.len(), 1);
        assert_eq!(a.spreads[0].ratio(), 3.0);
        assert_eq!(a.sensitivity[0].degree(), "strong");
    }

    /// Cells Open MPI ran stay out of the worker's tables, spreads and baseline, and each is
    /// paired with the worker's same cell.
    #[test]
    fn cells_an_mpi_library_ran_are_kept_apart_and_paired_with_the_workers() {
        let mut mpi = point(1, "fast", 8, PointStatus::Ok);
        mpi.implementation = Some("open-mpi".into());
        let mut mpi_slow = point(3, "slow", 8, PointStatus::Ok);
        mpi_slow.implementation = Some("open-mpi".into());
        let points = [
            point(0, "fast", 8, PointStatus::Ok),
            mpi,
            point(2, "slow", 8, PointStatus::Ok),
            mpi_slow,
        ];
        let mut records = vec![
            rank(0, 0, Some(100.0)),
            rank(0, 1, Some(100.0)),
            rank(1, 0, Some(110.0)),
            rank(1, 1, Some(130.0)),
            rank(2, 0, Some(400.0)),
            rank(2, 1, Some(400.0)),
            rank(3, 0, Some(9000.0)),
            rank(3, 1, Some(9000.0)),
        ];
        for r in records.iter_mut().filter(|r| r.point % 2 == 1) {
            r.implementation = Some("Open MPI v4.1.4 (mpi4py 3.1.4)".into());
        }
        let a = applications(&points, &records, &[], Statistic::Best, Some("fast"));
        assert_eq!(a.cells.len(), 2);
        assert!(a.cells.iter().all(|c| c.implementation.is_none()));
        // The spread is the worker's: 400 over 100, not MPI's 9000.
        assert_eq!(a.spreads[0].ratio(), 4.0);
        let pairs = a.against_peer();
        assert_eq!(pairs.len(), 2);
        let (m, w) = pairs.iter().find(|(m, _)| m.topology == "fast").unwrap();
        assert_eq!(m.value_us, 120.0);
        assert_eq!(m.library.as_deref(), Some("Open MPI v4.1.4 (mpi4py 3.1.4)"));
        assert_eq!(w.map(|w| w.value_us), Some(100.0));
        assert_eq!(m.to_baseline, None);
    }
}
