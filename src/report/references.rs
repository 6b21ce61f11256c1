//! An experiment's `[[reference]]` values (see [`crate::spec::reference`]) checked against a
//! run: each reference is the "old" side of the rule in [`super::verdict`], an interval of one
//! point, and its tolerance is the threshold. So a reference fails when the measured value is
//! more than the tolerance below it and the measured interval lies wholly below it, or when the
//! run has no value for its cell.

use std::fmt::Write;

use serde::Serialize;

use super::ReportError;
use super::data::CellSummary;
use super::format::{human, md_cell};
use super::regression::{interval_text, verdict_text};
use super::verdict::{Estimate, Verdict, judge};
use crate::results::{RunDir, Statistic};
use crate::spec::SourceFile;
use crate::spec::reference::{ReferenceSpec, ReferencesOnly};

/// One reference and what the run measured for it.
#[derive(Debug, Clone, Serialize)]
pub struct ReferenceCheck {
    /// The reference in words: `routed-mesh-4x4 token/tcp 7 pairs 8KiB local-wire`.
    pub reference: String,
    pub expected_mbit_s: f64,
    pub tolerance_percent: f64,
    pub measured: Option<Estimate>,
    pub change_percent: Option<f64>,
    pub verdict: Verdict,
    /// Why there is no measurement, when there is none.
    pub note: Option<String>,
}

impl ReferenceCheck {
    pub fn passed(&self) -> bool {
        !self.verdict.fails()
    }
}

/// The references of the experiment a run directory holds; none when the run has no copy of
/// its experiment (older runs, synthetic ones). A malformed entry is a located error.
pub fn load(run: &RunDir) -> Result<Vec<ReferenceSpec>, ReportError> {
    let path = run.experiment_toml();
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let source = SourceFile::read(&path).map_err(ReportError::Spec)?;
    let only: ReferencesOnly = source.parse().map_err(ReportError::Spec)?;
    Ok(only.reference)
}

/// Each reference against the cells of one run, under the report's headline statistic.
pub fn check(
    references: &[ReferenceSpec],
    cells: &[CellSummary],
    statistic: Statistic,
) -> Vec<ReferenceCheck> {
    references
        .iter()
        .map(|r| check_one(r, cells, statistic))
        .collect()
}

fn check_one(r: &ReferenceSpec, cells: &[CellSummary], statistic: Statistic) -> ReferenceCheck {
    let expected = r.value.mbit_s();
    let mut out = ReferenceCheck {
        reference: r.describe(),
        expected_mbit_s: expected,
        tolerance_percent: r.tolerance.fraction() * 100.0,
        measured: None,
        change_percent: None,
        verdict: Verdict::Missing,
        note: None,
    };
    let matching: Vec<&CellSummary> = cells.iter().filter(|c| matches(r, c)).collect();
    let cell = match matching.as_slice() {
        [] => {
            out.note = Some("the run has no such cell".into());
            return out;
        }
        [one] => *one,
        many => {
            let bondings: Vec<&str> = many.iter().map(|c| c.key.config.bonding.as_str()).collect();
            out.note = Some(format!(
                "matches {} configurations (bonding {}): name `bonding`",
                many.len(),
                bondings.join(", ")
            ));
            return out;
        }
    };
    let Some(measured) = Estimate::of_cell(cell, statistic) else {
        out.note = Some("every attempt of the cell failed".into());
        return out;
    };
    let (change, verdict) = judge(&Estimate::exact(expected), &measured, r.tolerance);
    out.measured = Some(measured);
    out.change_percent = Some(change * 100.0);
    out.verdict = verdict;
    out
}

fn matches(r: &ReferenceSpec, c: &CellSummary) -> bool {
    let k = &c.key;
    k.measure.pattern == *r.pattern.get_ref()
        && k.measure.protocol == r.protocol
        && k.config.topology == r.topology.get_ref().as_str()
        && r.bonding.as_ref().is_none_or(|b| *b == k.config.bonding)
        && k.config.placement == *r.placement.get_ref()
        && k.pairs == *r.pairs.get_ref()
        && k.size_bytes == r.size.get_ref().0
}

/// The checks as lines for the terminal; empty when there are none.
pub fn text(checks: &[ReferenceCheck], statistic: Statistic) -> String {
    if checks.is_empty() {
        return String::new();
    }
    let failed = checks.iter().filter(|c| !c.passed()).count();
    let mut s = format!(
        "references ({} throughput): {} of {} pass\n",
        statistic.as_str(),
        checks.len() - failed,
        checks.len()
    );
    for c in checks {
        let _ = writeln!(
            s,
            "  {:<7} {}: expected {} Mbit/s, tolerance {}%, {}",
            verdict_text(c.verdict),
            c.reference,
            human(c.expected_mbit_s),
            plain(c.tolerance_percent),
            measured_text(c)
        );
    }
    s
}

/// A percentage as written in the experiment: `10`, `12.5`.
fn plain(percent: f64) -> String {
    format!("{}", (percent * 1e4).round() / 1e4)
}

fn measured_text(c: &ReferenceCheck) -> String {
    match (&c.measured, c.change_percent) {
        (Some(m), Some(p)) => format!(
            "measured {} Mbit/s [{}] ({p:+.1}%)",
            human(m.value_mbit_s),
            interval_text(m)
        ),
        _ => c.note.clone().unwrap_or_default(),
    }
}

/// The "Reference values" section of report.md; empty when the experiment has none.
pub fn markdown(checks: &[ReferenceCheck], statistic: Statistic) -> String {
    if checks.is_empty() {
        return String::new();
    }
    let failed = checks.iter().filter(|c| !c.passed()).count();
    let mut s = String::from("## Reference values\n\n");
    let _ = writeln!(
        s,
        "The experiment's `[[reference]]` values against the measured {} (Mbit/s): a \
         reference fails when the measurement is more than its tolerance below it and the \
         measured interval lies wholly below it, or when the run has no value for it. \
         {} of {} pass.\n",
        statistic.as_str(),
        checks.len() - failed,
        checks.len()
    );
    s.push_str("| reference | expected | tolerance | measured | interval | change | verdict |\n");
    s.push_str("|---|---:|---:|---:|---|---:|---|\n");
    for c in checks {
        let (measured, interval, change) = match (&c.measured, c.change_percent) {
            (Some(m), Some(p)) => (human(m.value_mbit_s), interval_text(m), format!("{p:+.1}%")),
            _ => (
                "-".into(),
                md_cell(c.note.as_deref().unwrap_or("")),
                "-".into(),
            ),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {}% | {measured} | {interval} | {change} | {} |",
            md_cell(&c.reference),
            human(c.expected_mbit_s),
            plain(c.tolerance_percent),
            verdict_text(c.verdict)
        );
    }
    s.push('\n');
    s
}
