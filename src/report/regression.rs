//! `orchestrate report --compare OLD NEW --threshold 5%`: every cell of NEW's report against
//! the same cell of OLD's, with a verdict by the rule in [`super::verdict`]. A cell is matched
//! on its measurement (pattern, protocol), configuration (topology, bonding, bond driver,
//! placement), pairs and size. The check consumes two built reports; the terminal shows it
//! through [`super::terminal`].

use std::collections::BTreeMap;

use serde::Serialize;

use super::data::{CellKey, CellSummary};
use super::document::Report;
use super::verdict::{Estimate, Verdict, judge, rule};
use crate::results::Statistic;
use crate::spec::reference::Percent;

/// One cell in both runs.
#[derive(Debug, Clone, Serialize)]
pub struct CellChange {
    #[serde(flatten)]
    pub cell: CellName,
    pub old: Option<Estimate>,
    pub new: Option<Estimate>,
    /// `(new − old) / old` in percent, when both have a value.
    pub change_percent: Option<f64>,
    pub verdict: Verdict,
}

/// The columns that identify a cell, named as in `summary.csv`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CellName {
    pub pattern: String,
    pub protocol: String,
    pub topology: String,
    pub bonding: String,
    pub bond_driver: Option<String>,
    pub placement: String,
    pub pairs: u32,
    pub size_bytes: u64,
}

impl CellName {
    fn of(key: &CellKey) -> CellName {
        CellName {
            pattern: key.measure.pattern.as_str().into(),
            protocol: key.measure.protocol.as_str().into(),
            topology: key.config.topology.clone(),
            bonding: key.config.bonding.clone(),
            bond_driver: key.config.bond_driver.map(|d| d.as_str().into()),
            placement: key.config.placement.as_str().into(),
            pairs: key.pairs,
            size_bytes: key.size_bytes,
        }
    }
}

/// The check of NEW against OLD.
#[derive(Debug, Clone, Serialize)]
pub struct RegressionCheck {
    pub old: String,
    pub new: String,
    pub statistic: Statistic,
    pub threshold: Percent,
    pub rule: String,
    pub cells: Vec<CellChange>,
}

impl RegressionCheck {
    /// The cells that fail the check: worse, or measured in OLD and not in NEW.
    pub fn failing(&self) -> impl Iterator<Item = &CellChange> {
        self.cells.iter().filter(|c| c.verdict.fails())
    }

    pub fn passed(&self) -> bool {
        self.failing().next().is_none()
    }
}

/// Compares every cell of `new` with the same cell of `old`, under OLD's headline statistic;
/// `old_name` and `new_name` say where the runs came from.
pub fn check(
    old_name: String,
    new_name: String,
    old: &Report,
    new: &Report,
    threshold: Percent,
) -> RegressionCheck {
    let statistic = old.statistic;
    RegressionCheck {
        old: old_name,
        new: new_name,
        statistic,
        threshold,
        rule: rule(threshold),
        cells: changes(&old.cells, &new.cells, statistic, threshold),
    }
}

/// Every cell of either run, in key order, with its verdict.
pub fn changes(
    old: &[CellSummary],
    new: &[CellSummary],
    statistic: Statistic,
    threshold: Percent,
) -> Vec<CellChange> {
    let mut both: BTreeMap<&CellKey, (Option<&CellSummary>, Option<&CellSummary>)> =
        BTreeMap::new();
    for c in old {
        both.entry(&c.key).or_default().0 = Some(c);
    }
    for c in new {
        both.entry(&c.key).or_default().1 = Some(c);
    }
    both.into_iter()
        .map(|(key, (o, n))| {
            let old = o.and_then(|c| Estimate::of_cell(c, statistic));
            let new = n.and_then(|c| Estimate::of_cell(c, statistic));
            let (change, verdict) = match (&old, &new) {
                (Some(o), Some(n)) => {
                    let (change, verdict) = judge(o, n, threshold);
                    (Some(change * 100.0), verdict)
                }
                (Some(_), None) => (None, Verdict::Missing),
                (None, Some(_)) => (None, Verdict::New),
                // Failed in both: nothing was lost.
                (None, None) => (None, Verdict::Same),
            };
            CellChange {
                cell: CellName::of(key),
                old,
                new,
                change_percent: change,
                verdict,
            }
        })
        .collect()
}
