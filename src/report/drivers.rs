//! The userspace bond against the kernel's bonding driver it stands in for: every cell a run
//! measured with both drivers on an otherwise equal configuration (bonding mode, placement,
//! pairs, size, measurement), side by side with the ratio's 95% interval and TCP's own
//! counters and the nodes' CPU from both, so that a reader sees where the stand-in differs, by
//! how much, and what TCP and the nodes' CPUs saw while it did.

use std::collections::BTreeMap;

use super::contrast::{self, RatioEstimate};
use super::data::{CellSummary, CpuEvidence, Measure, TcpEvidence};
use crate::results::{BondDriver, PlacementKind, Statistic};

/// How much more CPU per byte the userspace bond must cost before a report names it: a fifth
/// more. The count is good to a 10 ms tick per CPU per trial read, well under a fifth of the
/// second-long trials' totals; smaller differences are left unexplained rather than guessed.
pub const MORE_CPU: f64 = 1.2;

/// One cell measured with both drivers.
#[derive(Debug, Clone, PartialEq)]
pub struct DriverRow {
    pub measure: Measure,
    pub bonding: String,
    pub placement: PlacementKind,
    pub pairs: u32,
    pub size_bytes: u64,
    pub kernel: Side,
    pub userspace: Side,
    /// Userspace ÷ kernel, from the repetitions of both; `None` with fewer than 2 on a side.
    pub ratio: Option<RatioEstimate>,
}

/// One driver's cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    pub topology: String,
    pub value: Option<f64>,
    pub tcp: Option<TcpEvidence>,
    pub cpu: Option<CpuEvidence>,
}

impl Side {
    fn of(c: &CellSummary, statistic: Statistic) -> Side {
        Side {
            topology: c.key.config.topology.clone(),
            value: c.value(statistic),
            tcp: c.tcp,
            cpu: c.cpu,
        }
    }
}

/// What the row says about the stand-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// The interval includes 1: no difference shown.
    Same,
    /// The userspace bond differs, and TCP saw more reordering or loss with it.
    DiffersWithTcpEvents,
    /// The userspace bond differs, TCP's counters do not, and the nodes spent at least
    /// [`MORE_CPU`] times the kernel driver's CPU per byte with it: the difference is the
    /// stand-in's work per frame.
    DiffersWithMoreCpu,
    /// The userspace bond differs, and neither TCP's counters nor the nodes' CPU per byte do:
    /// the cause is something this run did not measure.
    DiffersUnexplained,
    /// The userspace bond differs, and TCP's counters do not; the records carry no CPU count,
    /// so the nodes' work per frame, the likely difference, was not counted.
    DiffersInTheHosts,
    /// The userspace bond differs, and the records carry no TCP counters to say more.
    DiffersUncounted,
    /// Too few repetitions for an interval.
    Unknown,
}

impl DriverRow {
    pub fn reading(&self) -> Reading {
        let Some(r) = self.ratio else {
            return Reading::Unknown;
        };
        if !r.excludes_one() {
            return Reading::Same;
        }
        let per_trial = |t: Option<TcpEvidence>| {
            t.filter(|t| t.trials > 0)
                .map(|t| (t.retransmissions + t.out_of_order) as f64 / t.trials as f64)
        };
        match (per_trial(self.kernel.tcp), per_trial(self.userspace.tcp)) {
            // Twice the events per trial, and more than one: TCP saw the stand-in's frames
            // differently.
            (Some(k), Some(u)) if u > 2.0 * k && u >= 1.0 => Reading::DiffersWithTcpEvents,
            (Some(_), Some(_)) => match self.cpu_factor() {
                // More work per byte explains a slower stand-in, never a faster one.
                Some(f) if f >= MORE_CPU && r.ratio < 1.0 => Reading::DiffersWithMoreCpu,
                Some(_) => Reading::DiffersUnexplained,
                None => Reading::DiffersInTheHosts,
            },
            _ => Reading::DiffersUncounted,
        }
    }

    /// The userspace bond's CPU per byte over the kernel driver's, where both were counted.
    pub fn cpu_factor(&self) -> Option<f64> {
        let per_mb = |s: &Side| s.cpu.and_then(|c| c.ms_per_mb()).filter(|&v| v > 0.0);
        Some(per_mb(&self.userspace)? / per_mb(&self.kernel)?)
    }
}

/// Every cell measured with both drivers, in key order.
pub fn compare_drivers(cells: &[CellSummary], statistic: Statistic) -> Vec<DriverRow> {
    type Key = (Measure, String, PlacementKind, u32, u64, Option<String>);
    let mut sides: BTreeMap<Key, (Vec<&CellSummary>, Vec<&CellSummary>)> = BTreeMap::new();
    for c in cells {
        let k = &c.key;
        let key = (
            k.measure,
            k.config.bonding.clone(),
            k.config.placement,
            k.pairs,
            k.size_bytes,
            k.config.run.clone(),
        );
        match k.config.bond_driver {
            Some(BondDriver::Kernel) => sides.entry(key).or_default().0.push(c),
            Some(BondDriver::Userspace) => sides.entry(key).or_default().1.push(c),
            None => {}
        }
    }
    sides
        .into_iter()
        .filter_map(
            |((measure, bonding, placement, pairs, size_bytes, _), (k, u))| {
                // One of each: with several topologies per driver, which pairs with which is not
                // the report's to guess.
                let ([kernel], [userspace]) = (k.as_slice(), u.as_slice()) else {
                    return None;
                };
                Some(DriverRow {
                    measure,
                    bonding,
                    placement,
                    pairs,
                    size_bytes,
                    ratio: contrast::ratio(&userspace.repetitions, &kernel.repetitions),
                    kernel: Side::of(kernel, statistic),
                    userspace: Side::of(userspace, statistic),
                })
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::data::CellKey;

    fn cell(driver: BondDriver, topology: &str, reps: &[f64], tcp: TcpEvidence) -> CellSummary {
        cell_with_cpu(driver, topology, reps, tcp, None)
    }

    fn cell_with_cpu(
        driver: BondDriver,
        topology: &str,
        reps: &[f64],
        tcp: TcpEvidence,
        cpu_ms_per_mb: Option<f64>,
    ) -> CellSummary {
        let mut key = CellKey::token(topology, 8192);
        key.config.bonding = "balance-rr".into();
        key.config.bond_driver = Some(driver);
        let mut repetitions = reps.to_vec();
        repetitions.sort_by(f64::total_cmp);
        CellSummary {
            key,
            aggregate: crate::report::stats::rep_stats(reps),
            repetitions,
            per_pair_mean_mbit_s: None,
            per_pair_min_mbit_s: None,
            latency: Default::default(),
            tcp: Some(tcp),
            cpu: cpu_ms_per_mb.map(|ms| CpuEvidence {
                trials: tcp.trials,
                busy_ms: ms * 10.0,
                bytes: 10_000_000,
            }),
            failed_attempts: 0,
            failed_trials: 0,
        }
    }

    fn tcp(trials: u64, retransmissions: u64, out_of_order: u64) -> TcpEvidence {
        TcpEvidence {
            trials,
            retransmissions,
            out_of_order,
            ..TcpEvidence::default()
        }
    }

    #[test]
    fn a_cell_measured_with_both_drivers_is_paired_and_its_ratio_is_userspace_over_kernel() {
        let cells = [
            cell(
                BondDriver::Kernel,
                "k",
                &[10.0, 10.1, 9.9, 10.0, 10.2, 9.8],
                tcp(12, 0, 2),
            ),
            cell(
                BondDriver::Userspace,
                "u",
                &[5.0, 5.1, 4.9, 5.0, 5.2, 4.8],
                tcp(12, 40, 900),
            ),
        ];
        let rows = compare_drivers(&cells, Statistic::Median);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(
            (r.kernel.topology.as_str(), r.userspace.topology.as_str()),
            ("k", "u")
        );
        let ratio = r.ratio.unwrap();
        assert!((ratio.ratio - 0.5).abs() < 0.01, "{ratio:?}");
        assert!(ratio.high < 1.0);
        assert_eq!(r.reading(), Reading::DiffersWithTcpEvents);
    }

    #[test]
    fn a_difference_tcp_did_not_see_is_put_down_to_the_hosts_and_none_to_nothing() {
        let slower = [
            cell(
                BondDriver::Kernel,
                "k",
                &[10.0, 10.1, 9.9, 10.0, 10.2, 9.8],
                tcp(12, 1, 2),
            ),
            cell(
                BondDriver::Userspace,
                "u",
                &[8.0, 8.1, 7.9, 8.0, 8.2, 7.8],
                tcp(12, 1, 3),
            ),
        ];
        assert_eq!(
            compare_drivers(&slower, Statistic::Median)[0].reading(),
            Reading::DiffersInTheHosts
        );
        let same = [
            cell(
                BondDriver::Kernel,
                "k",
                &[10.0, 10.5, 9.5, 10.0, 10.4, 9.6],
                tcp(12, 1, 2),
            ),
            cell(
                BondDriver::Userspace,
                "u",
                &[10.1, 10.4, 9.6, 9.9, 10.5, 9.5],
                tcp(12, 1, 3),
            ),
        ];
        assert_eq!(
            compare_drivers(&same, Statistic::Median)[0].reading(),
            Reading::Same
        );
    }

    #[test]
    fn a_difference_tcp_did_not_see_is_put_down_to_cpu_only_where_the_nodes_spent_more() {
        let with_cpu = |kernel: f64, userspace: f64| {
            let cells = [
                cell_with_cpu(
                    BondDriver::Kernel,
                    "k",
                    &[10.0, 10.1, 9.9, 10.0, 10.2, 9.8],
                    tcp(12, 1, 2),
                    Some(kernel),
                ),
                cell_with_cpu(
                    BondDriver::Userspace,
                    "u",
                    &[8.0, 8.1, 7.9, 8.0, 8.2, 7.8],
                    tcp(12, 1, 3),
                    Some(userspace),
                ),
            ];
            let row = compare_drivers(&cells, Statistic::Median).remove(0);
            (row.reading(), row.cpu_factor().unwrap())
        };
        let (reading, factor) = with_cpu(40.0, 100.0);
        assert_eq!(reading, Reading::DiffersWithMoreCpu);
        assert!((factor - 2.5).abs() < 1e-9, "{factor}");
        // A tenth more is within what the count can tell apart: not named as the cause.
        assert_eq!(with_cpu(40.0, 44.0).0, Reading::DiffersUnexplained);
        // Less CPU with the stand-in cannot explain its being slower either.
        assert_eq!(with_cpu(40.0, 20.0).0, Reading::DiffersUnexplained);
    }

    #[test]
    fn a_difference_without_tcp_counters_is_still_a_difference() {
        let mut cells = [
            cell(
                BondDriver::Kernel,
                "k",
                &[10.0, 10.1, 9.9, 10.0, 10.2, 9.8],
                tcp(0, 0, 0),
            ),
            cell(
                BondDriver::Userspace,
                "u",
                &[8.0, 8.1, 7.9, 8.0, 8.2, 7.8],
                tcp(0, 0, 0),
            ),
        ];
        for c in &mut cells {
            c.tcp = None;
        }
        assert_eq!(
            compare_drivers(&cells, Statistic::Median)[0].reading(),
            Reading::DiffersUncounted
        );
    }

    #[test]
    fn cells_without_a_twin_of_the_other_driver_are_left_out() {
        let cells = [
            cell(BondDriver::Kernel, "k", &[10.0, 10.0], tcp(2, 0, 0)),
            cell(BondDriver::Kernel, "k2", &[10.0, 10.0], tcp(2, 0, 0)),
            cell(BondDriver::Userspace, "u", &[5.0, 5.0], tcp(2, 0, 0)),
        ];
        // Two kernel topologies: which is the userspace one's twin is not guessed.
        assert!(compare_drivers(&cells, Statistic::Median).is_empty());
        assert!(compare_drivers(&cells[..1], Statistic::Median).is_empty());
    }
}
