//! The token-test findings: local-wire peak, remote-wire traffic, switched channel bonding
//! and software routing against switches.

use super::criteria;
use super::finding::PaperFinding;
use super::measured::{Measured, mb_s};
use super::names::{BONDED_DUAL_NET, ROUTED_MESH, SWITCHED_BONDED_MESH, SWITCHED_MESH};
use crate::report::format::{human, percent, ratio, size};
use crate::report::predicted::Cause;
use crate::results::PlacementKind;
use orchestrate_worker::record::Pattern;

impl Measured<'_> {
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
        let verdict = criteria::mesh_over_bonded(r, expected);
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
        let counted = match self.model_cause(BONDED_DUAL_NET, PlacementKind::LocalWire, pairs, sz) {
            Some(Cause::Counted(list)) => format!(
                " During these points the run counted {}, which the model has no room for.",
                list.iter().map(|c| c.text()).collect::<Vec<_>>().join(", ")
            ),
            Some(Cause::Unexplained) => " The run counted no retransmission, reordering or \
                                          drop during these points: the shortfall is \
                                          unexplained."
                .into(),
            Some(Cause::OverTheWire) | None => String::new(),
        };
        format!(
            " The bonded dual net reached {} of its model here; {driver} stripes packets \
             round-robin over the two buses.{counted}",
            percent(b / pb)
        )
    }

    pub(super) fn local_wire_peak(&self) -> PaperFinding {
        const TITLE: &str = criteria::LOCAL_WIRE.0;
        const PAPER: &str = criteria::LOCAL_WIRE.1;
        let (mut f, v, b, r, model) = match self.mesh_vs_bonded(
            PlacementKind::LocalWire,
            TITLE,
            PAPER,
            criteria::LOCAL_WIRE_FACTOR,
        ) {
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

    pub(super) fn remote_wire(&self) -> PaperFinding {
        const TITLE: &str = criteria::REMOTE_WIRE.0;
        const PAPER: &str = criteria::REMOTE_WIRE.1;
        let (mut f, _v, b, r, model) = match self.mesh_vs_bonded(
            PlacementKind::RemoteWire,
            TITLE,
            PAPER,
            criteria::REMOTE_WIRE_FACTOR,
        ) {
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

    pub(super) fn switched_bonding(&self) -> PaperFinding {
        const TITLE: &str = criteria::SWITCHED_BONDING.0;
        const PAPER: &str = criteria::SWITCHED_BONDING.1;
        let Some((pairs, sz)) = self.heaviest() else {
            return Self::not_measured(TITLE, PAPER, "token cells");
        };
        let ratio_at = |placement: PlacementKind, p: u32| {
            self.token(SWITCHED_BONDED_MESH, placement, p, sz)
                .zip(self.token(SWITCHED_MESH, placement, p, sz))
                .map(|(b, s)| b / s)
        };
        let Some(judged) = criteria::switched_bonding(pairs, ratio_at) else {
            return Self::not_measured(
                TITLE,
                PAPER,
                "switched mesh cells with and without bonding at the same load",
            );
        };
        let parts: Vec<String> = judged
            .per_placement
            .iter()
            .map(|&(placement, light, heavy)| {
                format!(
                    "{}: bonded/unbonded {} with 1 pair, {} with {pairs} pairs",
                    placement.as_str(),
                    ratio(light),
                    ratio(heavy)
                )
            })
            .collect();
        let verdict = judged.verdict;
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

    pub(super) fn software_routing(&self) -> PaperFinding {
        const TITLE: &str = criteria::SOFTWARE_ROUTING.0;
        const PAPER: &str = criteria::SOFTWARE_ROUTING.1;
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
        let (verdict, light_penalty) = criteria::software_routing(heavy, light);
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
}
