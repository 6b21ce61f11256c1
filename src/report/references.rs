//! An experiment's `[[reference]]` values (see [`crate::spec::reference`]) checked against a
//! run: each reference is the "old" side of the rule in [`super::verdict`], an interval of one
//! point, and its tolerance is the threshold. So a reference fails when the measured value is
//! more than the tolerance below it and the measured interval lies wholly below it, or when the
//! run has no value for its cell. report.md shows the checks (`export::markdown`), the
//! terminal too ([`super::terminal`]).

use std::path::Path;

use serde::Serialize;

use super::data::CellSummary;
use super::error::ReportError;
use super::verdict::{Estimate, Verdict, judge};
use crate::results::Statistic;
use crate::spec::SourceFile;
use crate::spec::reference::{ReferenceSpec, ReferencesOnly};

/// One reference and what the run measured for it.
#[derive(Debug, Clone, Serialize)]
pub struct ReferenceCheck {
    /// The reference in words: `<topology> token/tcp 7 pairs 8KiB local-wire`.
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

    /// The tolerance as written in the experiment: `10`, `12.5` (percent).
    pub fn tolerance_text(&self) -> String {
        format!("{}", (self.tolerance_percent * 1e4).round() / 1e4)
    }
}

/// The references of the experiment file at `path` (a run directory's copy of its
/// experiment); none when there is no such file (older runs, synthetic ones). A malformed
/// entry is a located error.
pub fn read(path: &Path) -> Result<Vec<ReferenceSpec>, ReportError> {
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let source = SourceFile::read(path).map_err(ReportError::Spec)?;
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
