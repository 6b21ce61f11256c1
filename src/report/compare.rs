//! Configurations side by side: one table per measurement, a row per (pairs, size), a column
//! per configuration, the ratio to the baseline, the winner and whether the win is real.

use std::collections::{BTreeMap, BTreeSet};

use super::contrast::{self, RatioEstimate};
use super::data::{CellSummary, Config, Measure};
use super::same_paths::SamePaths;
use crate::results::{PlacementKind, Statistic};

/// Whether a row's winner among its alternatives is told apart from the runner-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Significance {
    /// The two differ: Welch's test on the logarithms rejects equality after Holm's
    /// correction over every comparison in the report ([`super::contrast`]).
    Clear,
    /// The test does not reject equality once every comparison is accounted for.
    NotShown,
    /// Winner and runner-up send their pairs the same way ([`super::same_paths`]): one path
    /// measured twice, a tie whatever the numbers.
    SamePath,
    /// Winner or runner-up has fewer than 3 repetitions: no claim either way.
    TooFew,
    /// Only one configuration of this placement has data in the row.
    Alone,
}

impl Significance {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Clear => "clear",
            Self::NotShown => "not shown",
            Self::SamePath => "same path: tie",
            Self::TooFew => "n<3",
            Self::Alone => "only one",
        }
    }

    /// The same as a snake_case value for machine-readable outputs.
    pub fn slug(self) -> &'static str {
        match self {
            Self::Clear => "clear",
            Self::NotShown => "not_shown",
            Self::SamePath => "same_path",
            Self::TooFew => "too_few",
            Self::Alone => "alone",
        }
    }
}

/// The contest among a row's alternatives: configurations with the same placement (the
/// measurement is the table's), so a pair placed on one wire is never ranked against pairs
/// placed across the network.
#[derive(Debug, Clone, PartialEq)]
pub struct Contest {
    pub placement: PlacementKind,
    /// Column with the highest value under the report's statistic.
    pub winner: usize,
    pub runner_up: Option<usize>,
    /// Winner over runner-up, with its 95% interval; `None` without a runner-up or with
    /// fewer than 2 repetitions on a side.
    pub difference: Option<RatioEstimate>,
    pub significance: Significance,
}

/// How a configuration relates to the baseline.
pub enum BaselineRule<'a> {
    /// Compare with the named topology: its configuration with the same bonding and placement
    /// in the row, else the one with the same placement, else its only one in the row.
    Topology(&'a str),
    /// Compare each configuration with the same configuration of the named run.
    Run(&'a str),
    None,
}

#[derive(Debug, Clone)]
pub struct ComparisonRow {
    pub pairs: u32,
    pub size_bytes: u64,
    /// Index into the table's `cells`, one per configuration column.
    pub cells: Vec<Option<usize>>,
    /// Ratio of each configuration's value to its baseline's value in this row.
    pub ratio: Vec<Option<f64>>,
    /// The 95% interval for each configuration's ratio to its baseline (of their geometric
    /// means, [`super::contrast`]); `None` with fewer than 2 repetitions on a side.
    pub ratio_interval: Vec<Option<RatioEstimate>>,
    /// Baseline column of each configuration in this row.
    pub baseline: Vec<Option<usize>>,
    /// One per placement present in the row, in placement order.
    pub contests: Vec<Contest>,
}

impl ComparisonRow {
    /// The contest `column` takes part in.
    pub fn contest_of(&self, configs: &[Config], column: usize) -> Option<&Contest> {
        self.contests
            .iter()
            .find(|c| c.placement == configs[column].placement)
    }
}

#[derive(Debug, Clone)]
pub struct ComparisonTable {
    pub measure: Measure,
    pub configs: Vec<Config>,
    pub rows: Vec<ComparisonRow>,
    /// The cells the rows point into.
    pub cells: Vec<CellSummary>,
}

impl ComparisonTable {
    pub fn cell(&self, row: &ComparisonRow, column: usize) -> Option<&CellSummary> {
        row.cells[column].map(|i| &self.cells[i])
    }
}

/// Builds one table per measurement from `cells` (sorted by key). A contest's "clear" holds
/// over all the tables' contests together (Holm's correction over the report).
pub fn compare(
    cells: &[CellSummary],
    statistic: Statistic,
    rule: &BaselineRule<'_>,
    paths: &SamePaths,
) -> Vec<ComparisonTable> {
    let mut by_measure: BTreeMap<Measure, Vec<&CellSummary>> = BTreeMap::new();
    for c in cells {
        by_measure.entry(c.key.measure).or_default().push(c);
    }
    let mut tables: Vec<ComparisonTable> = by_measure
        .into_iter()
        .map(|(measure, cells)| table(measure, &cells, statistic, rule, paths))
        .collect();
    correct_for_multiplicity(&mut tables);
    tables
}

/// How many comparisons the report's "clear" was corrected for.
pub fn tested_contests(tables: &[ComparisonTable]) -> usize {
    tested(tables).count()
}

fn tested(tables: &[ComparisonTable]) -> impl Iterator<Item = &Contest> {
    tables
        .iter()
        .flat_map(|t| t.rows.iter().flat_map(|r| r.contests.iter()))
        .filter(|c| {
            c.significance == Significance::NotShown || c.significance == Significance::Clear
        })
}

/// Holm over every tested contest: those it rejects become [`Significance::Clear`].
fn correct_for_multiplicity(tables: &mut [ComparisonTable]) {
    let p: Vec<f64> = tested(tables)
        .map(|c| c.difference.map_or(1.0, |d| d.p_value))
        .collect();
    let mut clear = contrast::holm(&p).into_iter();
    for c in tables
        .iter_mut()
        .flat_map(|t| t.rows.iter_mut().flat_map(|r| r.contests.iter_mut()))
        .filter(|c| c.significance == Significance::NotShown)
    {
        if clear.next() == Some(true) {
            c.significance = Significance::Clear;
        }
    }
}

fn table(
    measure: Measure,
    cells: &[&CellSummary],
    statistic: Statistic,
    rule: &BaselineRule<'_>,
    paths: &SamePaths,
) -> ComparisonTable {
    let is_baseline = |c: &Config| match rule {
        BaselineRule::Topology(t) => c.topology == *t,
        BaselineRule::Run(r) => c.run.as_deref() == Some(*r),
        BaselineRule::None => false,
    };
    // Baseline configurations first, so the reference column is the first one read.
    let mut configs: Vec<Config> = cells
        .iter()
        .map(|c| c.key.config.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    configs.sort_by_key(|c| !is_baseline(c));
    let column: BTreeMap<&Config, usize> =
        configs.iter().enumerate().map(|(i, c)| (c, i)).collect();

    let mut rows: BTreeMap<(u32, u64), Vec<Option<usize>>> = BTreeMap::new();
    for (i, c) in cells.iter().enumerate() {
        rows.entry((c.key.pairs, c.key.size_bytes))
            .or_insert_with(|| vec![None; configs.len()])[column[&c.key.config]] = Some(i);
    }

    let rows = rows
        .into_iter()
        .map(|((pairs, size_bytes), slots)| {
            let value = |col: usize| slots[col].and_then(|i| cells[i].value(statistic));
            let baseline: Vec<Option<usize>> = (0..configs.len())
                .map(|col| baseline_column(&configs, col, &slots, rule, &is_baseline))
                .collect();
            let ratio = (0..configs.len())
                .map(|col| match (value(col), baseline[col].and_then(value)) {
                    (Some(v), Some(b)) if b > 0.0 => Some(v / b),
                    _ => None,
                })
                .collect();
            let ratio_interval = (0..configs.len())
                .map(|col| {
                    let b = baseline[col]?;
                    let (me, base) = (cells[slots[col]?], cells[slots[b]?]);
                    contrast::ratio(&me.repetitions, &base.repetitions)
                })
                .collect();
            let contests = contests(&configs, &slots, cells, statistic, paths, pairs);
            ComparisonRow {
                pairs,
                size_bytes,
                cells: slots,
                ratio,
                ratio_interval,
                baseline,
                contests,
            }
        })
        .collect();

    ComparisonTable {
        measure,
        configs,
        rows,
        cells: cells.iter().map(|c| (*c).clone()).collect(),
    }
}

/// A row's contests: per placement, its configurations ranked by value (ties go to the
/// earlier column, so the result is stable), the winner against the runner-up. "Clear" is
/// only provisional here ([`Significance::NotShown`] with a p-value) until
/// [`correct_for_multiplicity`] has seen every contest.
fn contests(
    configs: &[Config],
    slots: &[Option<usize>],
    cells: &[&CellSummary],
    statistic: Statistic,
    paths: &SamePaths,
    pairs: u32,
) -> Vec<Contest> {
    let value = |col: usize| slots[col].and_then(|i| cells[i].value(statistic));
    let placements: BTreeSet<PlacementKind> = configs.iter().map(|c| c.placement).collect();
    placements
        .into_iter()
        .filter_map(|placement| {
            let mut ranked: Vec<(usize, f64)> = (0..configs.len())
                .filter(|&c| configs[c].placement == placement)
                .filter_map(|c| value(c).map(|v| (c, v)))
                .collect();
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let winner = ranked.first()?.0;
            let runner_up = ranked.get(1).map(|r| r.0);
            let (difference, significance) = match runner_up {
                None => (None, Significance::Alone),
                Some(r) => {
                    let (w, r_cell) = (cells[slots[winner]?], cells[slots[r]?]);
                    let difference = contrast::ratio(&w.repetitions, &r_cell.repetitions);
                    let significance = if paths.same(&configs[winner], &configs[r], pairs) {
                        Significance::SamePath
                    } else if w.n() < 3 || r_cell.n() < 3 {
                        Significance::TooFew
                    } else {
                        Significance::NotShown
                    };
                    (difference, significance)
                }
            };
            Some(Contest {
                placement,
                winner,
                runner_up,
                difference,
                significance,
            })
        })
        .collect()
}

fn baseline_column(
    configs: &[Config],
    col: usize,
    slots: &[Option<usize>],
    rule: &BaselineRule<'_>,
    is_baseline: &dyn Fn(&Config) -> bool,
) -> Option<usize> {
    let me = &configs[col];
    if is_baseline(me) {
        return None;
    }
    let present: Vec<usize> = (0..configs.len())
        .filter(|&c| slots[c].is_some() && is_baseline(&configs[c]))
        .collect();
    let find =
        |pred: &dyn Fn(&Config) -> bool| present.iter().copied().find(|&c| pred(&configs[c]));
    match rule {
        BaselineRule::Run(_) => find(&|b| {
            b.topology == me.topology && b.bonding == me.bonding && b.placement == me.placement
        }),
        BaselineRule::Topology(_) => {
            find(&|b| b.bonding == me.bonding && b.placement == me.placement)
                .or_else(|| find(&|b| b.placement == me.placement))
                .or_else(|| (present.len() == 1).then(|| present[0]))
        }
        BaselineRule::None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::data::CellKey;
    use crate::report::same_paths::{DescribePaths, PlacementPaths};
    use crate::report::stats::rep_stats;
    use PlacementKind::{LocalWire, RemoteWire};
    use orchestrate_worker::record::{Pattern, Protocol};

    fn cell(topology: &str, placement: PlacementKind, size: u64, values: &[f64]) -> CellSummary {
        let mut repetitions = values.to_vec();
        repetitions.sort_by(f64::total_cmp);
        CellSummary {
            key: CellKey {
                measure: Measure {
                    pattern: Pattern::Token,
                    protocol: Protocol::Tcp,
                },
                config: Config {
                    run: None,
                    topology: topology.into(),
                    bonding: "none".into(),
                    bond_driver: None,
                    placement,
                },
                pairs: 1,
                size_bytes: size,
            },
            aggregate: rep_stats(values),
            repetitions,
            per_pair_mean_mbit_s: None,
            per_pair_min_mbit_s: None,
            latency: Default::default(),
            tcp: None,
            cpu: None,
            failed_attempts: 0,
            failed_trials: 0,
        }
    }

    /// Six repetitions around `v`, ±1%.
    fn six(v: f64) -> Vec<f64> {
        [0.99, 1.0, 1.01, 0.995, 1.005, 1.0]
            .iter()
            .map(|f| f * v)
            .collect()
    }

    fn sorted(mut cells: Vec<CellSummary>) -> Vec<CellSummary> {
        cells.sort_by(|a, b| a.key.cmp(&b.key));
        cells
    }

    fn label(t: &ComparisonTable, col: usize) -> String {
        t.configs[col].label()
    }

    #[test]
    fn winners_are_named_among_the_same_placement_only() {
        // The remote-wire mesh is the fastest figure of the row, but it has no alternative of
        // its placement; the local-wire contest is the bus against the local mesh.
        let cells = sorted(vec![
            cell("bus", LocalWire, 64, &six(1.0)),
            cell("mesh", LocalWire, 64, &six(2.0)),
            cell("mesh", RemoteWire, 64, &six(5.0)),
        ]);
        let t = &compare(
            &cells,
            Statistic::Median,
            &BaselineRule::None,
            &SamePaths::default(),
        )[0];
        let row = &t.rows[0];
        assert_eq!(row.contests.len(), 2);
        let local = &row.contests[0];
        assert_eq!(local.placement, LocalWire);
        assert_eq!(label(t, local.winner), "mesh local-wire");
        assert_eq!(label(t, local.runner_up.unwrap()), "bus local-wire");
        assert_eq!(local.significance, Significance::Clear);
        let d = local.difference.unwrap();
        assert!((d.ratio - 2.0).abs() < 1e-9 && d.low < 2.0 && d.high > 2.0);
        let remote = &row.contests[1];
        assert_eq!(
            (remote.runner_up, remote.significance),
            (None, Significance::Alone)
        );
    }

    #[test]
    fn the_same_path_measured_twice_is_a_tie_however_far_apart() {
        struct Known;
        impl DescribePaths for Known {
            fn paths(&self) -> Vec<PlacementPaths> {
                ["routed", "switched"]
                    .map(|t| PlacementPaths {
                        topology: t.into(),
                        bonding: "none".into(),
                        placement: LocalWire,
                        pairs: 1,
                        signature: "n01>n02 over row1".into(),
                    })
                    .into()
            }
        }
        let cells = sorted(vec![
            cell("routed", LocalWire, 64, &six(1.0)),
            cell("switched", LocalWire, 64, &six(1.2)),
        ]);
        let known = SamePaths::of(Some(&Known));
        let t = &compare(&cells, Statistic::Median, &BaselineRule::None, &known)[0];
        assert_eq!(t.rows[0].contests[0].significance, Significance::SamePath);
        // Without the paths the same numbers are a clear win.
        let t = &compare(
            &cells,
            Statistic::Median,
            &BaselineRule::None,
            &SamePaths::default(),
        )[0];
        assert_eq!(t.rows[0].contests[0].significance, Significance::Clear);
    }

    #[test]
    fn clear_is_corrected_for_every_comparison_in_the_report() {
        // A 1.5% difference with ±1% noise is clear on its own...
        let a: Vec<f64> = six(1.0);
        let b: Vec<f64> = six(1.015);
        let p = contrast::ratio(&b, &a).unwrap().p_value;
        assert!(0.05 / 40.0 < p && p < 0.05, "{p}");
        let one = sorted(vec![
            cell("bus", LocalWire, 64, &a),
            cell("mesh", LocalWire, 64, &b),
        ]);
        let t = compare(
            &one,
            Statistic::Median,
            &BaselineRule::None,
            &SamePaths::default(),
        );
        assert_eq!(t[0].rows[0].contests[0].significance, Significance::Clear);
        assert_eq!(tested_contests(&t), 1);
        // ...but not as one of 40 comparisons where the other 39 show nothing: Holm holds
        // the smallest p-value to 0.05/40 = 0.00125.
        let with = |other: f64| {
            let mut many = one.clone();
            for size in 1..40 {
                many.push(cell("bus", LocalWire, 64 + size, &six(1.0)));
                many.push(cell("mesh", LocalWire, 64 + size, &six(other)));
            }
            compare(
                &sorted(many),
                Statistic::Median,
                &BaselineRule::None,
                &SamePaths::default(),
            )
        };
        let sig = |t: &[ComparisonTable], size: u64| {
            t[0].rows
                .iter()
                .find(|r| r.size_bytes == size)
                .unwrap()
                .contests[0]
                .significance
        };
        let nulls = with(1.0);
        assert_eq!(tested_contests(&nulls), 40);
        assert!((64..104).all(|s| sig(&nulls, s) == Significance::NotShown));
        // Step-down: once 39 large differences are rejected, the last p-value is held to
        // 0.05 itself, and the small difference is clear again.
        let large = with(3.0);
        assert!((64..104).all(|s| sig(&large, s) == Significance::Clear));
    }

    #[test]
    fn ratios_to_the_baseline_carry_an_interval() {
        let cells = sorted(vec![
            cell("bus", LocalWire, 64, &six(2.0)),
            cell("mesh", LocalWire, 64, &six(3.0)),
        ]);
        let t = &compare(
            &cells,
            Statistic::Median,
            &BaselineRule::Topology("bus"),
            &SamePaths::default(),
        )[0];
        let row = &t.rows[0];
        let mesh = (0..t.configs.len())
            .find(|&c| t.configs[c].topology == "mesh")
            .unwrap();
        let i = row.ratio_interval[mesh].unwrap();
        assert!((row.ratio[mesh].unwrap() - 1.5).abs() < 1e-9);
        assert!(i.low < 1.5 && 1.5 < i.high && i.excludes_one());
        let bus = 1 - mesh;
        assert_eq!(row.ratio_interval[bus], None, "the baseline has no ratio");
    }
}
