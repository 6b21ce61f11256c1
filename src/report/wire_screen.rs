//! No figure above what the wires can carry: every point's aggregate is checked against the
//! capacity of the wires its pairs use (the plan's bound, [`CellCapacity`]), and a point above
//! it is set aside as a failure (listed with both figures) instead of entering a cell. Such a
//! figure is not a measurement but an artefact of how it was taken; a cell built from it would
//! carry the artefact into every ratio and verdict.

use std::path::Path;

use super::data::{CellKey, Failure, FailureReason, PointSample};
use crate::results::PlacementKind;
use orchestrate_worker::record::{Pattern, Protocol};

/// The most one cell's wires can carry, from the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct CellCapacity {
    pub topology: String,
    pub bonding: String,
    pub placement: PlacementKind,
    pub pairs: u32,
    pub pattern: Pattern,
    /// The size it holds for; `None` for every size (a one-way stream's bound).
    pub size_bytes: Option<u64>,
    pub capacity_mbit_s: f64,
}

impl CellCapacity {
    fn covers(&self, k: &CellKey) -> bool {
        // Bounds are computed for TCP's frames (MPTCP cells are measured as TCP but get none).
        k.measure.protocol == Protocol::Tcp
            && k.measure.pattern == self.pattern
            && k.config.topology == self.topology
            && k.config.bonding == self.bonding
            && k.config.placement == self.placement
            && k.pairs == self.pairs
            && self.size_bytes.is_none_or(|s| s == k.size_bytes)
    }
}

/// Where the capacities of any run's wires come from (its plan): a comparison of several runs
/// and the regression check screen each run against its own wires, as its own report does.
pub trait RunWires {
    fn capacities_of(&self, run_dir: &Path) -> Vec<CellCapacity>;
}

/// A part in a million of slack for the rounding of the figures compared.
const SLACK: f64 = 1e-6;

/// Keeps the samples within their cell's capacity; each one above it becomes a failure.
pub fn set_aside(
    samples: Vec<PointSample>,
    capacities: &[CellCapacity],
    failures: &mut Vec<Failure>,
) -> Vec<PointSample> {
    samples
        .into_iter()
        .filter(|s| {
            let Some(cap) = capacities.iter().find(|c| c.covers(&s.key)) else {
                return true;
            };
            if s.aggregate_mbit_s <= cap.capacity_mbit_s * (1.0 + SLACK) {
                return true;
            }
            failures.push(Failure {
                key: s.key.clone(),
                point: s.point,
                rep: s.rep,
                // The sample's attempt counted: its counters are in its cell's.
                tcp: None,
                reason: FailureReason::OverTheWire {
                    measured_kbit_s: kbit(s.aggregate_mbit_s),
                    capacity_kbit_s: kbit(cap.capacity_mbit_s),
                },
            });
            false
        })
        .collect()
}

fn kbit(mbit_s: f64) -> u64 {
    (mbit_s * 1e3).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::data::{Config, Measure};

    fn key(pattern: Pattern, size: u64) -> CellKey {
        CellKey {
            measure: Measure {
                pattern,
                protocol: Protocol::Tcp,
            },
            config: Config {
                run: None,
                topology: "one-bus".into(),
                bonding: "none".into(),
                bond_driver: None,
                placement: PlacementKind::LocalWire,
            },
            pairs: 7,
            size_bytes: size,
        }
    }

    fn sample(point: u32, key: CellKey, mbit_s: f64) -> PointSample {
        PointSample {
            point,
            rep: 0,
            key,
            aggregate_mbit_s: mbit_s,
            pair_mbit_s: vec![mbit_s],
            window_ns: 1_000_000_000,
            window_start_unix_ns: 0,
        }
    }

    fn bound(pattern: Pattern, size: Option<u64>, mbit_s: f64) -> CellCapacity {
        CellCapacity {
            topology: "one-bus".into(),
            bonding: "none".into(),
            placement: PlacementKind::LocalWire,
            pairs: 7,
            pattern,
            size_bytes: size,
            capacity_mbit_s: mbit_s,
        }
    }

    #[test]
    fn a_point_over_its_wire_is_listed_not_counted() {
        // The committed single-net 7-pair 512 B token cell: 5.35 Mbit/s on a bus that carries
        // at most 4.25 of such tokens; a 9.8 Mbit/s stream on a bus that carries 9.5.
        let caps = [
            bound(Pattern::Token, Some(512), 4.2525),
            bound(Pattern::Stream, None, 9.5),
        ];
        let samples = vec![
            sample(0, key(Pattern::Token, 512), 5.35),
            sample(1, key(Pattern::Token, 512), 4.1),
            sample(2, key(Pattern::Token, 64), 5.35),
            sample(3, key(Pattern::Stream, 65536), 9.8),
            sample(4, key(Pattern::Stream, 1024), 9.4),
            sample(5, key(Pattern::Filecopy, 1 << 21), 9.8),
        ];
        let mut failures = Vec::new();
        let kept = set_aside(samples, &caps, &mut failures);
        let kept: Vec<u32> = kept.iter().map(|s| s.point).collect();
        // 64 B tokens and file copies have no bound here: nothing is claimed about them.
        assert_eq!(kept, vec![1, 2, 4, 5]);
        assert_eq!(failures.len(), 2);
        assert_eq!(
            failures[0].reason,
            FailureReason::OverTheWire {
                measured_kbit_s: 5350,
                capacity_kbit_s: 4253
            }
        );
        assert_eq!(failures[1].point, 3);
        assert!(
            failures[0]
                .reason
                .to_string()
                .contains("5.35 Mbit/s is more than its wires carry (4.25 Mbit/s)"),
            "{}",
            failures[0].reason
        );
    }

    #[test]
    fn a_figure_at_the_bound_is_possible() {
        let mut failures = Vec::new();
        let kept = set_aside(
            vec![sample(0, key(Pattern::Stream, 1), 9.5)],
            &[bound(Pattern::Stream, None, 9.5)],
            &mut failures,
        );
        assert_eq!(kept.len(), 1);
        assert!(failures.is_empty());
    }
}
