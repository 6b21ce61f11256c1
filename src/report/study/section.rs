//! What every study implements ([`StudySection`]) and what its section of a report holds
//! ([`StudyFindings`]). The general report knows studies only through these two: it hands a
//! study the run's evidence and renders whatever findings come back.

use crate::report::data::CellSummary;
use crate::report::emulator_stats::MediaReport;
use crate::report::predicted::{ModelRow, PredictThroughput};
use crate::report::verdict::Verdict;
use crate::results::Statistic;

/// What a study may look at in a run.
#[derive(Clone, Copy)]
pub struct Evidence<'a> {
    /// The run's topologies, by name, as its manifest lists them.
    pub topologies: &'a [String],
    pub cells: &'a [CellSummary],
    /// Token-test cells beside the analytic model's prediction.
    pub model: &'a [ModelRow],
    /// What the emulated wires did (empty for runs on token buckets or real machines).
    pub media: &'a MediaReport,
    /// The report's headline statistic.
    pub statistic: Statistic,
    /// Whoever knows the run's topologies: the simulated twin's figures on request.
    pub simulate: Option<&'a dyn PredictThroughput>,
}

/// A study's questions, asked of a run.
pub trait StudySection {
    /// Whether the run measured what the study's questions need; a study that does not apply
    /// gets no section.
    fn applies(&self, run: &Evidence<'_>) -> bool;

    /// Each finding or question with its verdict, in the order the section shows them.
    fn findings(&self, run: &Evidence<'_>) -> Vec<Finding>;

    /// The section's heading.
    fn title(&self) -> &'static str;

    /// The paragraph before the findings (Markdown), which may depend on what was asked.
    fn introduction(&self, findings: &[Finding]) -> String;

    /// Every cell the findings rest on, when the study shows them.
    fn table(&self, _run: &Evidence<'_>) -> Option<StudyTable> {
        None
    }

    /// The section for `run`, or `None` when the study does not apply.
    fn section(&self, run: &Evidence<'_>) -> Option<StudyFindings> {
        if !self.applies(run) {
            return None;
        }
        let findings = self.findings(run);
        Some(StudyFindings {
            title: self.title(),
            introduction: self.introduction(&findings),
            findings,
            table: self.table(run),
        })
    }
}

/// A study's section of a report: its heading, its introduction and its findings.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyFindings {
    pub title: &'static str,
    pub introduction: String,
    pub findings: Vec<Finding>,
    pub table: Option<StudyTable>,
}

/// A study's cells as a table after its findings.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyTable {
    /// What the table shows and where its figures come from (Markdown).
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Per column, whether it is right-aligned (figures).
    pub right: Vec<bool>,
}

/// One finding (or question) of a study and what this run says about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The finding's title or the question asked.
    pub heading: &'static str,
    pub verdict: Verdict,
    /// What the finding rests on, a sentence or a figure each (Markdown).
    pub points: Vec<String>,
}
