//! The disk test's finding: bonded configurations against more file copies at once.

use super::finding::PaperFinding;
use super::measured::{Measured, mb_s};
use super::names::{BONDED_DUAL_NET, SWITCHED_BONDED_MESH};
use crate::report::verdict::Verdict;
use crate::results::PlacementKind;
use orchestrate_worker::record::Pattern;

impl Measured<'_> {
    pub(super) fn disk_balance(&self) -> PaperFinding {
        const TITLE: &str = "Disk/net balance";
        const PAPER: &str = "In the disk test the bonded configurations peaked at 7.2 MB/s for \
                             one remote copy, then degraded as copies were added.";
        let bonded: Vec<CopyTrend> = [BONDED_DUAL_NET, SWITCHED_BONDED_MESH]
            .iter()
            .filter_map(|t| {
                Some(CopyTrend {
                    topology: t,
                    one: self.file_copy(t, 1)?.1,
                    seven: self.file_copy(t, 7)?.1,
                })
            })
            .collect();
        if bonded.is_empty() {
            return Self::not_measured(
                TITLE,
                PAPER,
                "2 MiB file copies with 1 and 7 pairs on a bonded configuration",
            );
        }
        let trend: Vec<String> = bonded
            .iter()
            .map(|b| {
                format!(
                    "{} {} with one copy, {} with seven",
                    b.topology,
                    mb_s(b.one),
                    mb_s(b.seven)
                )
            })
            .collect();
        PaperFinding {
            title: TITLE,
            paper: PAPER,
            measured: format!(
                "{}. With seven copies the configurations rank {}.",
                trend.join("; "),
                self.seven_copies_ranking()
                    .iter()
                    .map(|(t, v)| format!("{t} ({})", mb_s(*v)))
                    .collect::<Vec<_>>()
                    .join(" > ")
            ),
            verdict: disk_verdict(&bonded),
            why: self.disk_why(&bonded),
        }
    }

    /// A 2 MiB file copy on `topology` with `pairs` copies at once: the placement it ran with
    /// (remote wire when measured, as in the paper, else local) and its throughput.
    fn file_copy(&self, topology: &str, pairs: u32) -> Option<(PlacementKind, f64)> {
        [PlacementKind::RemoteWire, PlacementKind::LocalWire]
            .iter()
            .find_map(|&p| {
                self.cell(Pattern::Filecopy, topology, p, pairs, DISK_FILE)
                    .map(|v| (p, v))
            })
    }

    /// Every configuration of the disk test by its throughput with seven copies, fastest
    /// first.
    fn seven_copies_ranking(&self) -> Vec<(&str, f64)> {
        let mut topologies: Vec<&str> = self
            .cells
            .iter()
            .filter(|c| c.key.measure.pattern == Pattern::Filecopy && c.key.config.run.is_none())
            .map(|c| c.key.config.topology.as_str())
            .collect();
        topologies.dedup();
        let mut ranking: Vec<(&str, f64)> = topologies
            .iter()
            .filter_map(|t| self.file_copy(t, 7).map(|(_, v)| (*t, v)))
            .collect();
        ranking.sort_by(|a, b| b.1.total_cmp(&a.1));
        ranking
    }

    /// Why the disk test came out as it did: the paper's peak was not the network's, and per
    /// bonded configuration why it degrades or not.
    fn disk_why(&self, bonded: &[CopyTrend]) -> String {
        let mut why = "7.2 MB/s is more than two 10 Mbit/s buses can carry (2.5 MB/s), so the \
                       paper's one-copy peak cannot have been bound by the network alone: its \
                       disks and page cache took part. Here the copies read and write a \
                       container's file system, far faster than 1996's disks, so the buses bound \
                       every copy and the ranking follows the wires: the segmented meshes give \
                       seven copies more buses than the two the bonded dual net shares."
            .to_owned();
        for b in bonded {
            let t = b.topology;
            let counts = self.copy_collisions(t);
            why += &if b.seven < b.one {
                format!(
                    " {t} degrades as the paper says{counts}: more stations contending for the \
                     same buses lose capacity to CSMA/CD collisions and back-off, as 1996's \
                     Ethernets did."
                )
            } else if self.media.present {
                format!(
                    " {t} does not degrade{counts}: its copies spread over more buses, so each \
                     carries fewer contending stations."
                )
            } else {
                format!(
                    " {t} does not degrade: these wires were token buckets, one fair queue per \
                     bus without collisions, where 1996's CSMA/CD Ethernet lost more of its \
                     capacity to collisions and back-off the more stations transmitted at once."
                )
            };
        }
        why
    }

    /// What the medium counted on `topology`'s buses with seven copies (and one), as a clause
    /// to follow the configuration's name; empty when the run has no medium statistics.
    fn copy_collisions(&self, topology: &str) -> String {
        let placement = self
            .file_copy(topology, 7)
            .map_or(PlacementKind::LocalWire, |(p, _)| p);
        let medium = |pairs| self.medium(Pattern::Filecopy, topology, placement, pairs, DISK_FILE);
        medium(7)
            .map(|m| {
                format!(
                    ": with seven copies its buses saw {:.2} collisions per frame and \
                     dropped {} frames after 16 collisions{}",
                    m.collisions_per_frame(),
                    m.excess_collision_drops,
                    medium(1)
                        .map(|m1| format!(
                            ", against {:.2} collisions per frame with one copy",
                            m1.collisions_per_frame()
                        ))
                        .unwrap_or_default()
                )
            })
            .unwrap_or_default()
    }
}

/// The size of the disk test's file copies (2 MiB).
const DISK_FILE: u64 = 2 << 20;

/// One bonded configuration in the disk test: throughput with one copy and with seven.
struct CopyTrend<'a> {
    topology: &'a str,
    one: f64,
    seven: f64,
}

/// Agrees when every bonded configuration degrades with more copies, partly when some do or
/// none changes by more than 5%, disagrees when they gain.
fn disk_verdict(bonded: &[CopyTrend]) -> Verdict {
    let degraded = bonded.iter().filter(|b| b.seven < b.one).count();
    let flat = bonded.iter().all(|b| (b.seven / b.one - 1.0).abs() <= 0.05);
    if degraded == bonded.len() {
        Verdict::Agrees
    } else if degraded > 0 || flat {
        Verdict::AgreesInPart
    } else {
        Verdict::Disagrees
    }
}
