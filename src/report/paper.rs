//! "Against the 1996 paper": each finding of Reschke et al., "A Design Study of Alternative
//! Network Topologies for the Beowulf Parallel Workstation" (HPDC-5, 1996), beside what this
//! run measured, with a verdict and the reason for any difference.
//!
//! The section appears when a run measured the study's token test on the bonded dual net and
//! at least one of the segmented meshes, recognised by the topology names the project ships
//! (`topologies/*.toml`); a finding whose cells the run lacks says so. Throughput here counts
//! the producer's tokens only (tokens written × size / elapsed, the study's definition); where
//! the paper's absolute figure only fits if both directions were counted, the text says so.

use super::data::CellSummary;
use super::emulator_stats::{CellMedia, MediaReport};
use super::format::{human, percent, ratio, size};
use super::predicted::ModelRow;
use crate::results::{PlacementKind, Statistic};
use orchestrate_worker::record::Pattern;

pub const BONDED_DUAL_NET: &str = "bonded-dual-net";
pub const ROUTED_MESH: &str = "routed-mesh-4x4";
pub const SWITCHED_MESH: &str = "switched-mesh-4x4";
pub const SWITCHED_BONDED_MESH: &str = "switched-bonded-mesh-4x4";
const MESHES: [&str; 2] = [ROUTED_MESH, SWITCHED_MESH];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Agrees,
    /// The direction holds, the size of the effect does not (or only one half holds).
    Partly,
    Disagrees,
    NotMeasured,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Agrees => "agrees",
            Verdict::Partly => "agrees in part",
            Verdict::Disagrees => "disagrees",
            Verdict::NotMeasured => "not measured in this run",
        }
    }
}

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

#[derive(Debug, Clone, PartialEq)]
pub struct PaperComparison {
    pub findings: Vec<PaperFinding>,
}

/// The comparison, or `None` when the run did not measure the study's configurations.
pub fn against_reschke96(
    cells: &[CellSummary],
    model: &[ModelRow],
    media: &MediaReport,
    stat: Statistic,
) -> Option<PaperComparison> {
    // Only the study's own configurations: a run that also sweeps multipath modes measures
    // the bonded dual net under MPTCP or without its bond too, under the same topology name.
    let cells: Vec<CellSummary> = cells
        .iter()
        .filter(|c| as_in_the_study(&c.key.config.topology, &c.key.config.bonding))
        .cloned()
        .collect();
    let model: Vec<ModelRow> = model
        .iter()
        .filter(|r| as_in_the_study(&r.key.config.topology, &r.key.config.bonding))
        .cloned()
        .collect();
    let media = MediaReport {
        present: media.present,
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
    };
    let (cells, model, media) = (&cells[..], &model[..], &media);
    let m = Measured {
        cells,
        model,
        media,
        stat,
    };
    let token_on = |t: &str| {
        cells.iter().any(|c| {
            c.key.measure.pattern == Pattern::Token
                && c.key.config.topology == t
                && c.key.config.run.is_none()
        })
    };
    if !token_on(BONDED_DUAL_NET) || !MESHES.iter().any(|t| token_on(t)) {
        return None;
    }
    Some(PaperComparison {
        findings: vec![
            m.local_wire_peak(),
            m.remote_wire(),
            m.switched_bonding(),
            m.software_routing(),
            m.disk_balance(),
        ],
    })
}

/// Whether a configuration is one the 1996 study measured: its bonded topologies with their
/// balance-rr bonds, the others as they are.
fn as_in_the_study(topology: &str, bonding: &str) -> bool {
    if topology.contains("bonded") {
        bonding == "balance-rr"
    } else {
        bonding == "none"
    }
}

struct Measured<'a> {
    cells: &'a [CellSummary],
    model: &'a [ModelRow],
    /// What the emulated wires did (empty for runs on token buckets or real machines).
    media: &'a MediaReport,
    stat: Statistic,
}

/// MB/s (10^6 bytes) from Mbit/s, as the paper gives its figures.
fn mb_s(mbit_s: f64) -> String {
    format!("{:.2} MB/s", mbit_s / 8.0)
}

impl Measured<'_> {
    fn cell(
        &self,
        pattern: Pattern,
        topology: &str,
        placement: PlacementKind,
        pairs: u32,
        size_bytes: u64,
    ) -> Option<f64> {
        self.cells
            .iter()
            .find(|c| {
                let k = &c.key;
                k.measure.pattern == pattern
                    && k.config.run.is_none()
                    && k.config.topology == topology
                    && k.config.placement == placement
                    && k.pairs == pairs
                    && k.size_bytes == size_bytes
            })
            .and_then(|c| c.value(self.stat))
    }

    /// The medium during a cell's points, when the run recorded it.
    fn medium(
        &self,
        pattern: Pattern,
        topology: &str,
        placement: PlacementKind,
        pairs: u32,
        size_bytes: u64,
    ) -> Option<&CellMedia> {
        self.media.cells.iter().find(|c| {
            let k = &c.key;
            k.pattern == pattern
                && k.topology == topology
                && k.placement == placement
                && k.pairs == pairs
                && k.size_bytes == size_bytes
        })
    }

    fn token(
        &self,
        topology: &str,
        placement: PlacementKind,
        pairs: u32,
        size: u64,
    ) -> Option<f64> {
        self.cell(Pattern::Token, topology, placement, pairs, size)
    }

    fn predicted(
        &self,
        topology: &str,
        placement: PlacementKind,
        pairs: u32,
        size: u64,
    ) -> Option<f64> {
        self.model
            .iter()
            .find(|r| {
                r.key.config.topology == topology
                    && r.key.config.placement == placement
                    && r.key.pairs == pairs
                    && r.key.size_bytes == size
            })
            .map(|r| r.predicted_mbit_s)
    }

    /// The heaviest token cell of the bonded dual net: its largest size at its most pairs.
    fn heaviest(&self) -> Option<(u32, u64)> {
        self.cells
            .iter()
            .filter(|c| {
                c.key.measure.pattern == Pattern::Token
                    && c.key.config.topology == BONDED_DUAL_NET
                    && c.key.config.run.is_none()
            })
            .map(|c| (c.key.pairs, c.key.size_bytes))
            .max()
    }

    fn token_sizes(&self) -> Vec<u64> {
        let mut s: Vec<u64> = self
            .cells
            .iter()
            .filter(|c| c.key.measure.pattern == Pattern::Token)
            .map(|c| c.key.size_bytes)
            .collect();
        s.sort_unstable();
        s.dedup();
        s
    }

    /// The better of the two meshes at a cell: (topology, value).
    fn best_mesh(
        &self,
        placement: PlacementKind,
        pairs: u32,
        size: u64,
    ) -> Option<(&'static str, f64)> {
        MESHES
            .iter()
            .filter_map(|t| self.token(t, placement, pairs, size).map(|v| (*t, v)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    fn bond_driver(&self, topology: &str) -> Option<&'static str> {
        self.cells
            .iter()
            .find(|c| c.key.config.topology == topology)
            .and_then(|c| c.key.config.bond_driver)
            .map(|d| d.as_str())
    }

    fn not_measured(title: &'static str, paper: &'static str, what: &str) -> PaperFinding {
        PaperFinding {
            title,
            paper,
            measured: format!("This run has no {what}."),
            verdict: Verdict::NotMeasured,
            why: String::new(),
        }
    }

    fn mesh_vs_bonded(
        &self,
        placement: PlacementKind,
        title: &'static str,
        paper: &'static str,
        expected: f64,
    ) -> Result<(PaperFinding, f64, f64, f64, Option<f64>), PaperFinding> {
        let what = format!(
            "{} token cells at the bonded dual net's heaviest load",
            placement.as_str()
        );
        let Some((pairs, sz)) = self.heaviest() else {
            return Err(Self::not_measured(title, paper, &what));
        };
        let (Some((mesh, v)), Some(b)) = (
            self.best_mesh(placement, pairs, sz),
            self.token(BONDED_DUAL_NET, PlacementKind::LocalWire, pairs, sz),
        ) else {
            return Err(Self::not_measured(title, paper, &what));
        };
        let r = v / b;
        let model_ratio = self
            .predicted(mesh, placement, pairs, sz)
            .zip(self.predicted(BONDED_DUAL_NET, PlacementKind::LocalWire, pairs, sz))
            .map(|(pm, pb)| pm / pb);
        let verdict = if (r / expected - 1.0).abs() <= 0.25 {
            Verdict::Agrees
        } else if r > 1.0 {
            Verdict::Partly
        } else {
            Verdict::Disagrees
        };
        let measured = format!(
            "{mesh} {} at {} and {pairs} pairs: {} ({} Mbit/s), {} the bonded dual net's {} \
             ({} Mbit/s){}.",
            placement.as_str(),
            size(sz),
            mb_s(v),
            human(v),
            ratio(r),
            mb_s(b),
            human(b),
            model_ratio
                .map(|m| format!("; the model predicts {}", ratio(m)))
                .unwrap_or_default()
        );
        Ok((
            PaperFinding {
                title,
                paper,
                measured,
                verdict,
                why: String::new(),
            },
            v,
            b,
            r,
            model_ratio,
        ))
    }

    /// What the bonded dual net reached against its model, as a sentence, when known.
    fn bonded_shortfall(&self, pairs: u32, sz: u64, b: f64) -> String {
        let Some(pb) = self.predicted(BONDED_DUAL_NET, PlacementKind::LocalWire, pairs, sz) else {
            return String::new();
        };
        let driver = match self.bond_driver(BONDED_DUAL_NET) {
            Some("userspace") => "the userspace bond (this kernel has no bonding driver)",
            _ => "the bond",
        };
        format!(
            " The bonded dual net reached {} of its model here: {driver} stripes packets \
             round-robin over the two buses, and today's TCP takes the resulting reordering for \
             loss (duplicate acknowledgements, fast retransmits, a smaller window), which costs \
             most when seven pairs keep both buses full.",
            percent(b / pb)
        )
    }

    fn local_wire_peak(&self) -> PaperFinding {
        const TITLE: &str = "Local-wire peak";
        const PAPER: &str = "Local-wire traffic peaked at 6.3 MB/s with 8 KiB tokens, almost 4x \
                             the bonded dual net.";
        let (mut f, v, b, r, model) =
            match self.mesh_vs_bonded(PlacementKind::LocalWire, TITLE, PAPER, 4.0) {
                Ok(x) => x,
                Err(f) => return f,
            };
        let (pairs, sz) = self.heaviest().unwrap_or_default();
        let mut why = format!(
            "Each local-wire pair has a 10 Mbit/s bus to itself, while on the bonded dual net all \
             {pairs} pairs share two buses: the wires alone allow {pairs}/2 = {:.1}×{}.",
            pairs as f64 / 2.0,
            model
                .map(|m| format!(
                    ", and the model, which also counts framing and acknowledgements, predicts {}",
                    ratio(m)
                ))
                .unwrap_or_default()
        );
        if r > 5.0 {
            why += &self.bonded_shortfall(pairs, sz, b);
        }
        why += &format!(
            " In absolute terms the paper's 6.3 MB/s is more than seven pairs can move one way when \
             every token comes back over the same 10 Mbit/s bus (7 × 5 Mbit/s = 4.4 MB/s), so it \
             likely counts the returned tokens too; counted that way this run's figure is {}.",
            mb_s(2.0 * v)
        );
        f.why = why;
        f
    }

    fn remote_wire(&self) -> PaperFinding {
        const TITLE: &str = "Remote-wire traffic";
        const PAPER: &str = "Remote-wire traffic reached almost 2x the bonded dual net.";
        let (mut f, _v, b, r, model) =
            match self.mesh_vs_bonded(PlacementKind::RemoteWire, TITLE, PAPER, 2.0) {
                Ok(x) => x,
                Err(f) => return f,
            };
        let (pairs, sz) = self.heaviest().unwrap_or_default();
        let mut why = format!(
            "A remote-wire pair crosses two buses and a forwarding node or a switch, so every \
             pair loads two of the eight buses and the mesh's advantage halves against local-wire \
             traffic{}.",
            model
                .map(|m| format!(" (the model predicts {})", ratio(m)))
                .unwrap_or_default()
        );
        if r > 2.5 {
            why += &self.bonded_shortfall(pairs, sz, b);
        }
        f.why = why;
        f
    }

    fn switched_bonding(&self) -> PaperFinding {
        const TITLE: &str = "Switched channel bonding";
        const PAPER: &str = "Switched channel-bonded configurations did not beat the same switches \
                             without bonding, and degraded under heavy load.";
        let Some((pairs, sz)) = self.heaviest() else {
            return Self::not_measured(TITLE, PAPER, "token cells");
        };
        let ratio_at = |placement: PlacementKind, p: u32| {
            self.token(SWITCHED_BONDED_MESH, placement, p, sz)
                .zip(self.token(SWITCHED_MESH, placement, p, sz))
                .map(|(b, s)| b / s)
        };
        let mut parts = Vec::new();
        let mut no_better = true;
        let mut degrades = true;
        let mut any = false;
        for placement in [PlacementKind::LocalWire, PlacementKind::RemoteWire] {
            let (Some(heavy), Some(light)) = (ratio_at(placement, pairs), ratio_at(placement, 1))
            else {
                continue;
            };
            any = true;
            no_better &= heavy <= 1.05;
            degrades &= heavy < light;
            parts.push(format!(
                "{}: bonded/unbonded {} with 1 pair, {} with {pairs} pairs",
                placement.as_str(),
                ratio(light),
                ratio(heavy)
            ));
        }
        if !any {
            return Self::not_measured(
                TITLE,
                PAPER,
                "switched mesh cells with and without bonding at the same load",
            );
        }
        let verdict = match (no_better, degrades) {
            (true, true) => Verdict::Agrees,
            (false, false) => Verdict::Disagrees,
            _ => Verdict::Partly,
        };
        PaperFinding {
            title: TITLE,
            paper: PAPER,
            measured: format!("At {}: {}.", size(sz), parts.join("; ")),
            verdict,
            why: format!(
                "A bond over a node's row and column interfaces sends half of its packets over the \
                 other network, where they cross a switch and a second bus to reach the peer: \
                 traffic that stayed on one bus without bonding now loads two, the 'packet \
                 replication inherent to routing' the paper names. With one pair the spare \
                 capacity absorbs it{}; with {pairs} pairs every bus is busy and the extra load \
                 costs more than the second path gives.",
                if self.bond_driver(SWITCHED_BONDED_MESH) == Some("userspace") {
                    " (the userspace bond's reordering costs are paid in both cases)"
                } else {
                    ""
                }
            ),
        }
    }

    fn software_routing(&self) -> PaperFinding {
        const TITLE: &str = "Software routing vs switches";
        const PAPER: &str = "Software routing came close to the switches except under light \
                             traffic, where its latency dominated.";
        let sizes = self.token_sizes();
        let (Some(&small), Some(&large)) = (sizes.first(), sizes.last()) else {
            return Self::not_measured(TITLE, PAPER, "token cells");
        };
        let pairs = self.heaviest().map_or(7, |h| h.0);
        let r = |p: u32, sz: u64| {
            self.token(ROUTED_MESH, PlacementKind::RemoteWire, p, sz)
                .zip(self.token(SWITCHED_MESH, PlacementKind::RemoteWire, p, sz))
                .map(|(a, b)| a / b)
        };
        let (Some(heavy), Some(light)) = (r(pairs, large), r(1, small)) else {
            return Self::not_measured(
                TITLE,
                PAPER,
                "remote-wire cells on both the routed and the switched mesh",
            );
        };
        let latency = |t: &str| {
            self.cells
                .iter()
                .find(|c| {
                    let k = &c.key;
                    k.measure.pattern == Pattern::Token
                        && k.config.run.is_none()
                        && k.config.topology == t
                        && k.config.placement == PlacementKind::RemoteWire
                        && k.pairs == 1
                        && k.size_bytes == small
                })
                .and_then(|c| c.latency.p50_us)
        };
        let lat = latency(ROUTED_MESH)
            .zip(latency(SWITCHED_MESH))
            .map(|(a, b)| {
                format!(
                    " One-way latency (median) at 1 pair and {}: routed {} µs, switched {} µs.",
                    size(small),
                    human(a),
                    human(b)
                )
            })
            .unwrap_or_default();
        let close = heavy >= 0.85;
        let light_penalty = light < heavy - 0.05;
        let verdict = match (close, light_penalty) {
            (true, true) => Verdict::Agrees,
            (true, false) | (false, true) => Verdict::Partly,
            (false, false) => Verdict::Disagrees,
        };
        PaperFinding {
            title: TITLE,
            paper: PAPER,
            measured: format!(
                "Remote-wire, routed/switched: {} at {} and {pairs} pairs (heavy traffic), {} at \
                 {} and 1 pair (light traffic).{lat}",
                ratio(heavy),
                size(large),
                ratio(light),
                size(small)
            ),
            verdict,
            why: if light_penalty {
                "A routed token crosses a forwarding node's IP stack twice per round trip where a \
                 switch forwards in hardware; with small tokens and one pair that latency is most \
                 of the exchange, and under heavy traffic the wires, not the forwarding, limit \
                 both."
                    .into()
            } else {
                "Forwarding here is the kernel's IP forwarding on a modern CPU, a few microseconds \
                 per packet against the 10 Mbit/s wire's 50 µs and more per small frame; in 1996 \
                 a 100 MHz 486 took far longer per forwarded packet, so the light-traffic penalty \
                 the paper saw mostly disappears today."
                    .into()
            },
        }
    }

    fn disk_balance(&self) -> PaperFinding {
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
        Verdict::Partly
    } else {
        Verdict::Disagrees
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::throughput_model::{Bound, Prediction};
    use crate::report::data::{CellKey, Config, Latency, Measure};
    use crate::report::predicted::{CellPrediction, rows};
    use crate::report::stats::rep_stats;
    use orchestrate_worker::record::Protocol;

    fn cell(
        pattern: Pattern,
        topology: &str,
        placement: PlacementKind,
        pairs: u32,
        size: u64,
        v: f64,
    ) -> CellSummary {
        CellSummary {
            key: CellKey {
                measure: Measure {
                    pattern,
                    protocol: Protocol::Tcp,
                },
                config: Config {
                    run: None,
                    topology: topology.into(),
                    bonding: if topology.contains("bonded") {
                        "balance-rr"
                    } else {
                        "none"
                    }
                    .into(),
                    bond_driver: None,
                    placement,
                },
                pairs,
                size_bytes: size,
            },
            aggregate: rep_stats(&[v]),
            per_pair_mean_mbit_s: None,
            per_pair_min_mbit_s: None,
            latency: Latency::default(),
            failed_attempts: 0,
            failed_trials: 0,
        }
    }

    fn token(
        topology: &str,
        placement: PlacementKind,
        pairs: u32,
        size: u64,
        v: f64,
    ) -> CellSummary {
        cell(Pattern::Token, topology, placement, pairs, size, v)
    }

    fn find<'a>(c: &'a PaperComparison, title: &str) -> &'a PaperFinding {
        c.findings.iter().find(|f| f.title == title).unwrap()
    }

    const L: PlacementKind = PlacementKind::LocalWire;
    const R: PlacementKind = PlacementKind::RemoteWire;

    #[test]
    fn the_disk_finding_names_the_collisions_behind_a_degrading_bonded_net() {
        use crate::report::emulator_stats::{CellMedia, MediaCellKey};
        let mb = 2 << 20;
        let cells = vec![
            token(BONDED_DUAL_NET, L, 7, 8192, 8.0),
            token(SWITCHED_MESH, L, 7, 8192, 30.0),
            cell(Pattern::Filecopy, BONDED_DUAL_NET, L, 1, mb, 17.0),
            cell(Pattern::Filecopy, BONDED_DUAL_NET, L, 7, mb, 12.0),
            cell(Pattern::Filecopy, SWITCHED_BONDED_MESH, R, 1, mb, 18.0),
            cell(Pattern::Filecopy, SWITCHED_BONDED_MESH, R, 7, mb, 27.0),
        ];
        let medium = |topology: &str, placement, pairs, collisions, drops| CellMedia {
            key: MediaCellKey {
                topology: topology.into(),
                bonding: "balance-rr".into(),
                placement,
                pattern: Pattern::Filecopy,
                protocol: Protocol::Tcp,
                pairs,
                size_bytes: mb,
            },
            points: 2,
            frames: 1000,
            collisions,
            busiest_segment: "bus-a".into(),
            busiest_utilisation: 0.9,
            excess_collision_drops: drops,
            queue_drops: 0,
            lateness_p99_us: 10.0,
            flagged_points: 0,
        };
        let media = MediaReport {
            present: true,
            cells: vec![
                medium(BONDED_DUAL_NET, L, 1, 30, 0),
                medium(BONDED_DUAL_NET, L, 7, 520, 400),
                medium(SWITCHED_BONDED_MESH, R, 7, 200, 30),
            ],
            configs: Vec::new(),
        };
        let c = against_reschke96(&cells, &[], &media, Statistic::Best).unwrap();
        let f = find(&c, "Disk/net balance");
        // One bonded configuration degrades, the other does not: in part.
        assert_eq!(f.verdict, Verdict::Partly, "{f:?}");
        assert!(
            f.why.contains(
                "bonded-dual-net degrades as the paper says: with seven copies its buses saw \
                 0.52 collisions per frame and dropped 400 frames after 16 collisions, against \
                 0.03 collisions per frame with one copy"
            ),
            "{}",
            f.why
        );
        assert!(
            f.why
                .contains("switched-bonded-mesh-4x4 does not degrade: with seven")
        );
        // Without medium statistics (token buckets) the text says what those wires lacked.
        let c = against_reschke96(&cells, &[], &MediaReport::default(), Statistic::Best).unwrap();
        assert!(find(&c, "Disk/net balance").why.contains("token buckets"));
    }

    #[test]
    fn no_section_without_the_study_configurations() {
        let cells = vec![token("single-net", L, 1, 8192, 5.0)];
        assert!(against_reschke96(&cells, &[], &MediaReport::default(), Statistic::Best).is_none());
    }

    #[test]
    fn verdicts_follow_the_measured_ratios() {
        let cells = vec![
            token(BONDED_DUAL_NET, L, 7, 8192, 8.0),
            // 4x local-wire: agrees; 3x remote-wire against "almost 2x": in part.
            token(ROUTED_MESH, L, 7, 8192, 32.0),
            token(ROUTED_MESH, R, 7, 8192, 24.0),
            token(SWITCHED_MESH, R, 7, 8192, 25.0),
            token(ROUTED_MESH, R, 1, 4, 0.5),
            token(SWITCHED_MESH, R, 1, 4, 0.5),
            // Bonding helps the switched mesh with one pair and hurts it with seven.
            token(SWITCHED_BONDED_MESH, R, 1, 8192, 6.0),
            token(SWITCHED_MESH, R, 1, 8192, 4.0),
            token(SWITCHED_BONDED_MESH, R, 7, 8192, 20.0),
        ];
        let c = against_reschke96(&cells, &[], &MediaReport::default(), Statistic::Best).unwrap();
        assert_eq!(find(&c, "Local-wire peak").verdict, Verdict::Agrees);
        assert!(find(&c, "Local-wire peak").measured.contains("4.0×"));
        assert_eq!(find(&c, "Remote-wire traffic").verdict, Verdict::Partly);
        assert_eq!(
            find(&c, "Switched channel bonding").verdict,
            Verdict::Agrees
        );
        // Routing within 4% of the switch under heavy traffic, equal under light: no light
        // traffic penalty, so only half of the finding holds.
        let routing = find(&c, "Software routing vs switches");
        assert_eq!(routing.verdict, Verdict::Partly);
        assert!(routing.why.contains("disappears"), "{}", routing.why);
        assert_eq!(find(&c, "Disk/net balance").verdict, Verdict::NotMeasured);
    }

    #[test]
    fn bonded_mesh_beating_the_plain_switches_disagrees() {
        let cells = vec![
            token(BONDED_DUAL_NET, L, 7, 8192, 8.0),
            token(SWITCHED_MESH, L, 7, 8192, 30.0),
            token(SWITCHED_MESH, L, 1, 8192, 5.0),
            token(SWITCHED_BONDED_MESH, L, 7, 8192, 40.0),
            token(SWITCHED_BONDED_MESH, L, 1, 8192, 5.0),
        ];
        let c = against_reschke96(&cells, &[], &MediaReport::default(), Statistic::Best).unwrap();
        assert_eq!(
            find(&c, "Switched channel bonding").verdict,
            Verdict::Disagrees
        );
    }

    #[test]
    fn disk_test_degrading_bonded_copies_agree_and_rank_all_configurations() {
        let mut cells = vec![
            token(BONDED_DUAL_NET, L, 7, 8192, 8.0),
            token(ROUTED_MESH, L, 7, 8192, 30.0),
        ];
        let mb2 = 2 << 20;
        cells.push(cell(Pattern::Filecopy, BONDED_DUAL_NET, L, 1, mb2, 16.0));
        cells.push(cell(Pattern::Filecopy, BONDED_DUAL_NET, L, 7, mb2, 12.0));
        cells.push(cell(Pattern::Filecopy, ROUTED_MESH, R, 7, mb2, 40.0));
        let c = against_reschke96(&cells, &[], &MediaReport::default(), Statistic::Best).unwrap();
        let d = find(&c, "Disk/net balance");
        assert_eq!(d.verdict, Verdict::Agrees);
        assert!(
            d.measured
                .contains("routed-mesh-4x4 (5.00 MB/s) > bonded-dual-net (1.50 MB/s)"),
            "{}",
            d.measured
        );
    }

    #[test]
    fn the_model_ratio_is_quoted_and_cells_outside_the_tolerance_get_a_cause() {
        let cells = vec![
            token(BONDED_DUAL_NET, L, 7, 8192, 5.0),
            token(ROUTED_MESH, L, 7, 8192, 31.0),
        ];
        let pred = |t: &str, bonding: &str, v: f64| CellPrediction {
            topology: t.into(),
            bonding: bonding.into(),
            placement: L,
            pairs: 7,
            token_bucket: false,
            prediction: Prediction {
                size_bytes: 8192,
                aggregate_mbit_s: v,
                per_pair_mbit_s: vec![v / 7.0; 7],
                bound: Bound::Segment("bus-a".parse().unwrap()),
                host_bound: None,
                one_way_us: 0.0,
            },
        };
        let model = rows(
            &cells,
            &[
                pred(BONDED_DUAL_NET, "balance-rr", 9.0),
                pred(ROUTED_MESH, "none", 31.5),
            ],
            Statistic::Best,
        );
        assert_eq!(model.len(), 2);
        let bonded = model
            .iter()
            .find(|r| r.key.config.topology == BONDED_DUAL_NET)
            .unwrap();
        assert!(!bonded.within_tolerance());
        assert!(
            bonded
                .likely_cause
                .unwrap()
                .explanation()
                .contains("out of order")
        );
        let routed = model
            .iter()
            .find(|r| r.key.config.topology == ROUTED_MESH)
            .unwrap();
        assert!(routed.within_tolerance() && routed.likely_cause.is_none());
        let c =
            against_reschke96(&cells, &model, &MediaReport::default(), Statistic::Best).unwrap();
        let f = find(&c, "Local-wire peak");
        // 31/5 = 6.2x against the model's 3.5x: the bond's shortfall is explained.
        assert_eq!(f.verdict, Verdict::Partly);
        assert!(
            f.measured.contains("the model predicts 3.5×"),
            "{}",
            f.measured
        );
        assert!(f.why.contains("55.6% of its model"), "{}", f.why);
    }
}
