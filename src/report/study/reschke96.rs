//! "Against the 1996 paper": each finding of Reschke et al., "A Design Study of Alternative
//! Network Topologies for the Beowulf Parallel Workstation" (HPDC-5, 1996), beside what this
//! run measured, with a verdict and the reason for any difference.
//!
//! The section appears when a run measured the study's token test on the bonded dual net and
//! at least one of the segmented meshes, recognised by the topology names the project ships
//! (`topologies/*.toml`); a finding whose cells the run lacks says so. Throughput here counts
//! the producer's tokens only (tokens written × size / elapsed, the study's definition); where
//! the paper's absolute figure only fits if both directions were counted, the text says so.
//!
//! [`names`] holds the study's topologies, [`measured`] looks the run up for the findings,
//! [`tokens`] and [`disk`] judge the token-test and disk-test findings.

pub(super) mod criteria;
mod disk;
mod finding;
mod measured;
pub(super) mod names;
#[cfg(test)]
mod tests;
mod tokens;

use super::section::{Evidence, Finding, StudySection};
use crate::report::data::CellSummary;
use crate::report::emulator_stats::MediaReport;
use crate::report::predicted::ModelRow;
use crate::results::Statistic;
use finding::{PaperComparison, PaperFinding};
use measured::Measured;
use names::{BONDED_DUAL_NET, MESHES, as_in_the_study};
use orchestrate_worker::record::Pattern;

/// The 1996 paper's findings as a section of the report.
pub struct Reschke96;

impl StudySection for Reschke96 {
    fn applies(&self, run: &Evidence<'_>) -> bool {
        InTheStudy::of(run.cells, run.model, run.media).applies()
    }

    fn findings(&self, run: &Evidence<'_>) -> Vec<Finding> {
        InTheStudy::of(run.cells, run.model, run.media)
            .measured(run.statistic)
            .comparison()
            .findings
            .into_iter()
            .map(PaperFinding::into_finding)
            .collect()
    }

    fn title(&self) -> &'static str {
        "Against the 1996 paper"
    }

    fn introduction(&self, _findings: &[Finding]) -> String {
        "Reschke, Sterling, Ridge, Savarese, Becker and Merkey, \"A Design Study of Alternative \
         Network Topologies for the Beowulf Parallel Workstation\", HPDC-5, 1996: 16 nodes \
         (486 DX4-100) with two 10 Mbit/s Ethernet NICs each. Each finding with this run's \
         figure beside it. Throughput counts the producer's tokens (tokens written × size / \
         elapsed), in MB/s (10^6 bytes) as the paper gives it."
            .to_owned()
    }
}

/// A run's cells, model rows and medium statistics of the configurations the study measured
/// only: a run that also sweeps multipath modes measures the bonded dual net under MPTCP or
/// without its bond too, under the same topology name.
struct InTheStudy {
    cells: Vec<CellSummary>,
    model: Vec<ModelRow>,
    media: MediaReport,
}

impl InTheStudy {
    fn of(cells: &[CellSummary], model: &[ModelRow], media: &MediaReport) -> InTheStudy {
        InTheStudy {
            cells: cells
                .iter()
                .filter(|c| as_in_the_study(&c.key.config.topology, &c.key.config.bonding))
                .cloned()
                .collect(),
            model: model
                .iter()
                .filter(|r| as_in_the_study(&r.key.config.topology, &r.key.config.bonding))
                .cloned()
                .collect(),
            media: MediaReport {
                present: media.present,
                untimed: media.untimed,
                exclusion: media.exclusion,
                cells: media
                    .cells
                    .iter()
                    .filter(|c| as_in_the_study(&c.key.topology, &c.key.bonding))
                    .cloned()
                    .collect(),
                configs: media
                    .configs
                    .iter()
                    .filter(|c| as_in_the_study(&c.topology, &c.bonding))
                    .cloned()
                    .collect(),
                // The study's sections read cells, not single points.
                points: Default::default(),
            },
        }
    }

    /// Whether the run measured the study's token test on the bonded dual net and at least
    /// one of the segmented meshes.
    fn applies(&self) -> bool {
        let token_on = |t: &str| {
            self.cells.iter().any(|c| {
                c.key.measure.pattern == Pattern::Token
                    && c.key.config.topology == t
                    && c.key.config.run.is_none()
            })
        };
        token_on(BONDED_DUAL_NET) && MESHES.iter().any(|t| token_on(t))
    }

    fn measured(&self, stat: Statistic) -> Measured<'_> {
        Measured {
            cells: &self.cells,
            model: &self.model,
            media: &self.media,
            stat,
        }
    }
}

impl Measured<'_> {
    /// Every finding, in the paper's order.
    fn comparison(&self) -> PaperComparison {
        PaperComparison {
            findings: vec![
                self.local_wire_peak(),
                self.remote_wire(),
                self.switched_bonding(),
                self.software_routing(),
                self.disk_balance(),
            ],
        }
    }
}
