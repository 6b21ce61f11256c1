//! `orchestrate report --compare OLD NEW --threshold 5%`: every cell of NEW against the same
//! cell of OLD, with a verdict by the rule in [`super::verdict`]. A cell is matched on its
//! measurement (pattern, protocol), configuration (topology, bonding, bond driver,
//! placement), pairs and size.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use serde::Serialize;

use super::data::{CellKey, CellSummary};
use super::format::{human, percent, size};
use super::verdict::{Estimate, Verdict, judge, rule};
use super::{ReportError, ReportOptions};
use crate::results::{RunDir, Statistic};
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

    /// The check as a text table, then a count of verdicts and the failing cells by name.
    pub fn text(&self) -> String {
        let mut s = format!(
            "{} against {}: {} throughput in Mbit/s, threshold {}\nrule: {}\n\
             intervals: the median's, with the probability that each covers it\n\n",
            self.new,
            self.old,
            self.statistic.as_str(),
            self.threshold,
            self.rule
        );
        let header = [
            "cell", "old", "interval", "new", "interval", "change", "verdict",
        ];
        let rows: Vec<[String; 7]> = self.cells.iter().map(text_row).collect();
        aligned(&mut s, &header, &rows);
        let count = |v: Verdict| self.cells.iter().filter(|c| c.verdict == v).count();
        let _ = writeln!(
            s,
            "\n{} cells: {} worse, {} missing, {} better, {} same, {} new",
            self.cells.len(),
            count(Verdict::Worse),
            count(Verdict::Missing),
            count(Verdict::Better),
            count(Verdict::Same),
            count(Verdict::New),
        );
        let failing: Vec<&CellChange> = self.failing().collect();
        if !failing.is_empty() {
            let _ = writeln!(s, "FAILED: {} cell(s) regressed:", failing.len());
            for c in failing {
                let _ = writeln!(s, "  {}: {}", describe(&c.cell), change_text(c));
            }
        }
        s
    }
}

/// Compares every cell of `new` with the same cell of `old`.
pub fn check(
    old: &Path,
    new: &Path,
    threshold: Percent,
    opts: &ReportOptions<'_>,
) -> Result<RegressionCheck, ReportError> {
    let old_run = super::load_run(&RunDir::new(old), None, opts)?;
    let new_run = super::load_run(&RunDir::new(new), None, opts)?;
    let statistic = opts
        .statistic
        .or(old_run.info.manifest.statistic)
        .unwrap_or_default();
    Ok(RegressionCheck {
        old: old.display().to_string(),
        new: new.display().to_string(),
        statistic,
        threshold,
        rule: rule(threshold),
        cells: changes(&old_run.cells, &new_run.cells, statistic, threshold),
    })
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

/// `token/tcp routed-mesh-4x4 local-wire, 7 pairs, 8 KB`.
fn describe(c: &CellName) -> String {
    let mut config = c.topology.clone();
    if c.bonding != "none" {
        config.push(' ');
        config.push_str(&c.bonding);
        if let Some(d) = &c.bond_driver {
            let _ = write!(config, " ({d} bond)");
        }
    }
    format!(
        "{}/{} {config} {}, {} pair{}, {}",
        c.pattern,
        c.protocol,
        c.placement,
        c.pairs,
        if c.pairs == 1 { "" } else { "s" },
        size(c.size_bytes)
    )
}

fn change_text(c: &CellChange) -> String {
    match (c.change_percent, c.verdict) {
        (Some(p), _) => format!("{p:+.1}%"),
        (None, Verdict::Missing) => "no value in the new run".into(),
        (None, Verdict::New) => "not in the old run".into(),
        (None, _) => "no value in either run".into(),
    }
}

/// `66.76–67.14 (97%)`; a single repetition has no interval.
pub fn interval_text(e: &Estimate) -> String {
    match e.ci_coverage {
        Some(cov) => format!(
            "{}–{} ({})",
            human(e.ci_low_mbit_s),
            human(e.ci_high_mbit_s),
            percent(cov)
        ),
        None => "n=1".into(),
    }
}

fn text_row(c: &CellChange) -> [String; 7] {
    let value = |e: &Option<Estimate>| e.map(|e| human(e.value_mbit_s)).unwrap_or("-".into());
    let interval = |e: &Option<Estimate>| e.as_ref().map(interval_text).unwrap_or("-".into());
    [
        describe(&c.cell),
        value(&c.old),
        interval(&c.old),
        value(&c.new),
        interval(&c.new),
        c.change_percent
            .map(|p| format!("{p:+.1}%"))
            .unwrap_or("-".into()),
        verdict_text(c.verdict),
    ]
}

/// Failing verdicts in capitals, so they stand out in a long table.
pub fn verdict_text(v: Verdict) -> String {
    if v.fails() {
        v.as_str().to_uppercase()
    } else {
        v.as_str().to_owned()
    }
}

/// Columns padded to equal width; numbers (every column but the first and last) right-aligned.
fn aligned<const N: usize>(s: &mut String, header: &[&str; N], rows: &[[String; N]]) {
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..N).map(width).collect();
    let line = |s: &mut String, cells: &[&str]| {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[i] - c.chars().count());
            let right = i != 0 && i != N - 1;
            if i > 0 {
                out.push_str("  ");
            }
            if right {
                out.push_str(&pad);
                out.push_str(c);
            } else {
                out.push_str(c);
                out.push_str(&pad);
            }
        }
        s.push_str(out.trim_end());
        s.push('\n');
    };
    line(s, header);
    for r in rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        line(s, &cells);
    }
}
