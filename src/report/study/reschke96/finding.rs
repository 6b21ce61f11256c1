//! One finding of the paper beside this run, and the whole comparison.

use crate::report::study::section::Finding;
use crate::report::verdict::Verdict;

/// One of the paper's findings beside this run.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperFinding {
    pub title: &'static str,
    /// What the paper reports.
    pub paper: &'static str,
    /// What this run measured, in one or two sentences.
    pub measured: String,
    pub verdict: Verdict,
    /// Why the two agree or differ.
    pub why: String,
}

/// Every finding of the paper beside this run.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperComparison {
    pub findings: Vec<PaperFinding>,
}

impl PaperFinding {
    /// As the report shows it: the paper's words, this run's, and why, when there is a why.
    pub fn into_finding(self) -> Finding {
        let mut points = vec![
            format!("1996: {}", self.paper),
            format!("Here: {}", self.measured),
        ];
        if !self.why.is_empty() {
            points.push(format!("Why: {}", self.why));
        }
        Finding {
            heading: self.title,
            verdict: self.verdict,
            points,
        }
    }
}
