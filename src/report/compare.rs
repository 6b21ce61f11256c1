//! Configurations side by side: one table per measurement, a row per (pairs, size), a column
//! per configuration, the ratio to the baseline, the winner and whether the win is real.

use std::collections::{BTreeMap, BTreeSet};

use super::data::{CellSummary, Config, Measure};
use crate::results::Statistic;

/// Whether the winner of a row is distinguishable from the runner-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Significance {
    /// The median confidence intervals do not overlap.
    Clear,
    /// They overlap: the data do not show a difference.
    Overlap,
    /// Winner or runner-up has fewer than 3 repetitions: no claim either way.
    TooFew,
    /// Only one configuration has data in the row.
    Alone,
}

impl Significance {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Clear => "clear",
            Self::Overlap => "CIs overlap",
            Self::TooFew => "n<3",
            Self::Alone => "only one",
        }
    }

    /// The same as a snake_case value for machine-readable outputs.
    pub fn slug(self) -> &'static str {
        match self {
            Self::Clear => "clear",
            Self::Overlap => "overlap",
            Self::TooFew => "too_few",
            Self::Alone => "alone",
        }
    }
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
    /// Baseline column of each configuration in this row.
    pub baseline: Vec<Option<usize>>,
    pub winner: Option<usize>,
    pub runner_up: Option<usize>,
    pub significance: Significance,
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

/// Builds one table per measurement from `cells` (sorted by key).
pub fn compare(
    cells: &[CellSummary],
    statistic: Statistic,
    rule: &BaselineRule<'_>,
) -> Vec<ComparisonTable> {
    let mut by_measure: BTreeMap<Measure, Vec<&CellSummary>> = BTreeMap::new();
    for c in cells {
        by_measure.entry(c.key.measure).or_default().push(c);
    }
    by_measure
        .into_iter()
        .map(|(measure, cells)| table(measure, &cells, statistic, rule))
        .collect()
}

fn table(
    measure: Measure,
    cells: &[&CellSummary],
    statistic: Statistic,
    rule: &BaselineRule<'_>,
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
            // Rank by value; ties go to the earlier column so the result is stable.
            let mut ranked: Vec<(usize, f64)> = (0..configs.len())
                .filter_map(|c| value(c).map(|v| (c, v)))
                .collect();
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let winner = ranked.first().map(|r| r.0);
            let runner_up = ranked.get(1).map(|r| r.0);
            let significance = match (winner, runner_up) {
                (Some(w), Some(r)) => {
                    let (cw, cr) = (cells[slots[w].unwrap()], cells[slots[r].unwrap()]);
                    significance(cw, cr)
                }
                _ => Significance::Alone,
            };
            ComparisonRow {
                pairs,
                size_bytes,
                cells: slots,
                ratio,
                baseline,
                winner,
                runner_up,
                significance,
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

/// Whether two cells' medians are distinguishable.
pub fn significance(a: &CellSummary, b: &CellSummary) -> Significance {
    if a.n() < 3 || b.n() < 3 {
        return Significance::TooFew;
    }
    match (a.ci(), b.ci()) {
        (Some(x), Some(y)) if !x.overlaps(&y) => Significance::Clear,
        _ => Significance::Overlap,
    }
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
