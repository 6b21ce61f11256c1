//! Each study's own questions, asked of a run: the 1996 paper's findings
//! ([`reschke96`]) and what that study would find today ([`today`]), each behind
//! [`StudySection`] and judged with the report's one [`Verdict`](super::verdict::Verdict).
//!
//! A study knows its topologies by the names the project ships (`topologies/*.toml`); those
//! names stay in this folder, so the general report names no topology.

mod fast_ethernet;
mod reschke96;
mod section;
mod today;

pub use section::{Evidence, StudyFindings, StudySection};

/// The studies a report asks, in the order their sections appear.
const STUDIES: [&dyn StudySection; 3] = [
    &reschke96::Reschke96,
    &fast_ethernet::FastEthernet,
    &today::Today,
];

/// The section of every study that applies to the run.
pub fn sections(run: &Evidence<'_>) -> Vec<StudyFindings> {
    STUDIES.iter().filter_map(|s| s.section(run)).collect()
}
