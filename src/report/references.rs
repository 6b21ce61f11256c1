//! An experiment's `[[reference]]` values (see [`crate::spec::reference`]) checked against a
//! run, as ReFrame checks performance references: a reference passes when the measured figure
//! (the cell's throughput in the headline statistic, or its median latency) lies within its
//! bounds, and fails when it lies below the lower or above the upper bound, or when the run has
//! no value for its cell. References for other kinds of cluster than the run's are listed and
//! not checked. report.md shows the checks (`export::markdown`), the terminal too
//! ([`super::terminal`]), and [`super::history`] keeps them across runs.

use std::path::Path;

use serde::Serialize;

use super::data::{CellKey, CellSummary, Failure};
use super::error::ReportError;
use super::format::human;
use super::verdict::{Estimate, Verdict};
use crate::results::Statistic;
use crate::spec::SourceFile;
use crate::spec::experiment::ClusterKind;
use crate::spec::reference::{Expected, ReferenceSpec, ReferencesOnly};

/// One reference and what the run measured for it.
#[derive(Debug, Clone, Serialize)]
pub struct ReferenceCheck {
    /// The reference in words: `<topology> token/tcp 7 pairs 8KiB local-wire`.
    pub reference: String,
    /// `throughput` or `latency`.
    pub quantity: &'static str,
    /// The unit of `expected`, the bounds and `measured`: `Mbit/s` or `µs`.
    pub unit: &'static str,
    pub expected: f64,
    /// The bounds as written: `-10% … +10%`.
    pub bounds: String,
    /// The lowest and highest figure that passes, absolute; `None`: not bounded that way.
    pub lower_bound: Option<f64>,
    pub upper_bound: Option<f64>,
    pub measured: Option<f64>,
    /// The median's interval over the repetitions, for throughput.
    pub interval: Option<Estimate>,
    pub change_percent: Option<f64>,
    pub verdict: Verdict,
    /// Why there is no measurement, when there is none.
    pub note: Option<String>,
}

impl ReferenceCheck {
    pub fn passed(&self) -> bool {
        !self.verdict.fails()
    }

    /// `measured 28.4 Mbit/s [28.3–28.5 (97%)] (-0.3%)`, or why there is no measurement.
    pub fn measured_text(&self) -> String {
        match (self.measured, self.change_percent) {
            (Some(m), Some(p)) => format!(
                "measured {} {}{} ({p:+.1}%)",
                human(m),
                self.unit,
                self.interval_suffix()
            ),
            _ => self.note.clone().unwrap_or_default(),
        }
    }

    /// ` [66.8–67.1 (97%)]` after a throughput whose cell has an interval; empty otherwise.
    pub fn interval_suffix(&self) -> String {
        match &self.interval {
            Some(e) if e.ci_coverage.is_some() => format!(" [{}]", e.interval_text()),
            _ => String::new(),
        }
    }
}

/// Every reference of an experiment against one run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReferenceChecks {
    /// The kind of cluster the run used.
    pub cluster: &'static str,
    pub checks: Vec<ReferenceCheck>,
    /// References for other kinds of cluster, in words with their kinds: not checked.
    pub other_clusters: Vec<String>,
}

impl ReferenceChecks {
    pub fn failed(&self) -> usize {
        self.checks.iter().filter(|c| !c.passed()).count()
    }

    pub fn all_passed(&self) -> bool {
        self.failed() == 0
    }

    pub fn is_empty(&self) -> bool {
        self.checks.is_empty() && self.other_clusters.is_empty()
    }
}

/// The references of the experiment file at `path` (a run directory's copy of its
/// experiment) and the kind of cluster it names; none when there is no such file (older runs,
/// synthetic ones). A malformed entry is a located error.
pub fn read(path: &Path) -> Result<(Vec<ReferenceSpec>, ClusterKind), ReportError> {
    if !path.is_file() {
        return Ok((Vec::new(), ClusterKind::default()));
    }
    let source = SourceFile::read(path).map_err(ReportError::Spec)?;
    let only: ReferencesOnly = source.parse().map_err(ReportError::Spec)?;
    let kind = only.cluster_kind();
    Ok((only.reference, kind))
}

/// Each reference for `cluster` against the cells of one run, under the report's headline
/// statistic.
pub fn check(
    references: &[ReferenceSpec],
    cluster: ClusterKind,
    cells: &[CellSummary],
    failures: &[Failure],
    statistic: Statistic,
) -> ReferenceChecks {
    let (mine, others): (Vec<&ReferenceSpec>, Vec<&ReferenceSpec>) =
        references.iter().partition(|r| r.applies_to(cluster));
    ReferenceChecks {
        cluster: cluster.as_str(),
        checks: mine
            .into_iter()
            .map(|r| check_one(r, cells, failures, statistic))
            .collect(),
        other_clusters: others
            .into_iter()
            .map(|r| {
                let kinds: Vec<&str> = r.cluster.iter().map(|k| k.as_str()).collect();
                format!("{} ({})", r.describe(), kinds.join(", "))
            })
            .collect(),
    }
}

/// Why a cell the run planned has no figure.
const NONE_COUNTED: &str = "no attempt of the cell counted (each failed or missed the emulator's \
                            timing bound; see Failed points): `orchestrate run --resume` \
                            measures them again";

fn check_one(
    r: &ReferenceSpec,
    cells: &[CellSummary],
    failures: &[Failure],
    statistic: Statistic,
) -> ReferenceCheck {
    let expected = r.expected.value();
    let (lower_bound, upper_bound) = r.bounds.around(expected);
    let mut out = ReferenceCheck {
        reference: r.describe(),
        quantity: r.expected.quantity(),
        unit: r.expected.unit(),
        expected,
        bounds: r.bounds.text(),
        lower_bound,
        upper_bound,
        measured: None,
        interval: None,
        change_percent: None,
        verdict: Verdict::Missing,
        note: None,
    };
    let matching: Vec<&CellSummary> = cells.iter().filter(|c| matches(r, &c.key)).collect();
    let cell = match matching.as_slice() {
        [] => {
            // A cell whose every attempt was set aside (failed, or outside the emulator's
            // timing bound) is not in the cells; its attempts are in the failures.
            let set_aside = failures.iter().any(|f| matches(r, &f.key));
            out.note = Some(
                if set_aside {
                    NONE_COUNTED
                } else {
                    "the run has no such cell"
                }
                .into(),
            );
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
    let measured = match r.expected {
        Expected::Throughput(_) => {
            let Some(estimate) = Estimate::of_cell(cell, statistic) else {
                out.note = Some(NONE_COUNTED.into());
                return out;
            };
            out.interval = Some(estimate);
            estimate.value_mbit_s
        }
        Expected::Latency(_) => match cell.latency.p50_us.filter(|v| *v > 0.0) {
            Some(v) => v,
            None => {
                out.note = Some("the cell's trials recorded no latency".into());
                return out;
            }
        },
    };
    out.measured = Some(measured);
    out.change_percent = Some((measured - expected) / expected * 100.0);
    out.verdict = if lower_bound.is_some_and(|l| measured < l) {
        Verdict::Below
    } else if upper_bound.is_some_and(|u| measured > u) {
        Verdict::Above
    } else {
        Verdict::Within
    };
    out
}

fn matches(r: &ReferenceSpec, k: &CellKey) -> bool {
    k.measure.pattern == *r.pattern.get_ref()
        && k.measure.protocol == r.protocol
        && k.config.topology == r.topology.get_ref().as_str()
        && r.bonding.as_ref().is_none_or(|b| *b == k.config.bonding)
        && k.config.placement == *r.placement.get_ref()
        && k.pairs == *r.pairs.get_ref()
        && k.size_bytes == r.size.get_ref().0
}
