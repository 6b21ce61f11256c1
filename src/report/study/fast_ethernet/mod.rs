//! "The Fast Ethernet forecast": the 1996 paper closes with "An important intermediate step
//! will be to use Fast Ethernet without switches but rather with the lower cost repeaters and
//! control traffic through software routing. It can be anticipated that many of the
//! performance attributes will be retained." This section asks each of the paper's token
//! findings of the study's configurations on 100 Mbit/s repeaters (the `fast-*` topologies),
//! with the same rules the comparison with the paper uses
//! ([`super::reschke96::criteria`]), beside the same finding on 1996's wires and hosts.
//!
//! The emulator's bound at 100 Mbit/s is a 5.12 µs contention slot, which a machine whose
//! veth write alone takes 15–21 µs (p99) cannot keep; a 100 Mbit/s cell is a measurement only
//! where an attempt kept it. A finding is decided by measured cells where every cell it needs
//! was measured, and otherwise by the simulated twin ([`crate::plan::twin`]), never by a mix
//! of the two; the section says which, and the appendix gives every cell from both with the
//! twin's agreement with the emulator at 10 Mbit/s, where the emulator keeps its bound.
//!
//! The section appears when the run measured the token test on the Fast Ethernet bonded dual
//! net and at least one Fast Ethernet mesh.

mod figures;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use super::reschke96::criteria;
use super::reschke96::names::{
    BONDED_DUAL_NET, MESHES, ROUTED_MESH, SWITCHED_BONDED_MESH, SWITCHED_MESH,
};
use super::section::{Evidence, Finding, StudySection, StudyTable};
use crate::plan::throughput_model::ModelParams;
use crate::report::format::{human, percent, ratio, size};
use crate::report::predicted::PredictThroughput;
use crate::report::simulated::{TwinSetup, TwinWires};
use crate::report::verdict::Verdict;
use crate::results::PlacementKind;
use crate::spec::HostProfile;
use figures::{FAST_PREFIX, Figures, in_1996, is_1996};

/// How far the twin may be from a measured cell and still agree with it.
const TWIN_AGREEMENT: f64 = 0.15;

/// The forecast as a section of the report.
pub struct FastEthernet;

/// The four sides a finding is asked of.
struct Sides {
    /// The twin on 1996's wires and hosts (10 Mbit/s, 486DX4), the fast configurations rewired.
    in_1996: Figures,
    /// The run's own 10 Mbit/s cells, measured.
    ten: Figures,
    /// The twin on the run's 10 Mbit/s configurations.
    ten_twin: Figures,
    /// The run's 100 Mbit/s cells the emulator kept its bound for, measured.
    hundred_measured: Figures,
    /// The twin on the run's 100 Mbit/s configurations.
    hundred_twin: Figures,
    stack: Stack,
}

/// What the nodes' own stacks add per hop and direction in the twin.
struct Stack {
    ns: u64,
    /// The measured cell it was fitted on, and that cell's figure; `None` when the run has no
    /// such cell and the twin takes the analytic model's figure.
    fitted_on: Option<(figures::CellId, f64)>,
}

impl Stack {
    /// Fits the stacks' time on the one cell that shows nothing else: one local-wire pair on
    /// the routed mesh at 10 Mbit/s (an idle bus, one hop each way), the smallest token. The
    /// twin with no stack time gives the rest of its exchange (hosts' costs and wire); half the
    /// measured exchange's excess over that is one hop's stack. The analytic model assumes
    /// 60 µs; the run's own cell says what its nodes take (11 µs in the committed run, where
    /// the hosts carry a profile: why they take less than the model assumes is not measured).
    fn fit(model: &dyn PredictThroughput, ten: &Figures) -> Stack {
        let model_figure = Stack {
            ns: u64::try_from(ModelParams::default().hop_latency.as_nanos()).unwrap_or(0),
            fitted_on: None,
        };
        let Some((id, measured)) = ten
            .values
            .iter()
            .filter(|((t, p, n, _), _)| {
                t == ROUTED_MESH && *p == PlacementKind::LocalWire && *n == 1
            })
            .min_by_key(|((.., size), _)| *size)
            .map(|(id, v)| (id.clone(), *v))
        else {
            return model_figure;
        };
        let bare = Figures::simulated(
            &model.twin_cells(TwinSetup {
                wires: TwinWires::AsRun,
                stack_ns: 0,
            }),
            is_1996,
        );
        let Some(&bare) = bare.values.get(&id) else {
            return model_figure;
        };
        // An exchange's time, µs, from a size in bytes and Mbit/s.
        let exchange_us = |mbit_s: f64| id.3 as f64 * 8.0 / mbit_s;
        let per_hop_us = (exchange_us(measured) - exchange_us(bare)) / 2.0;
        Stack {
            ns: (per_hop_us * 1e3).max(0.0).round() as u64,
            fitted_on: Some((id, measured)),
        }
    }
}

impl Sides {
    fn of(run: &Evidence<'_>) -> Option<Sides> {
        let model = run.simulate?;
        let ten = Figures::measured(run.cells, run.statistic, is_1996);
        let stack = Stack::fit(model, &ten);
        let as_run = model.twin_cells(TwinSetup {
            wires: TwinWires::AsRun,
            stack_ns: stack.ns,
        });
        let rewired = model.twin_cells(TwinSetup {
            wires: TwinWires::Rewired {
                rate_bps: 10_000_000,
                host: HostProfile::I486Dx4,
            },
            stack_ns: stack.ns,
        });
        Some(Sides {
            in_1996: Figures::simulated(&rewired, in_1996),
            ten,
            ten_twin: Figures::simulated(&as_run, is_1996),
            hundred_measured: Figures::measured(run.cells, run.statistic, in_1996),
            hundred_twin: Figures::simulated(&as_run, in_1996),
            stack,
        })
    }

    /// The heaviest load of the bonded dual net at 100 Mbit/s: most pairs, largest token.
    fn heaviest(&self) -> Option<(u32, u64)> {
        self.hundred_twin
            .values
            .keys()
            .filter(|(t, ..)| t == BONDED_DUAL_NET)
            .map(|(_, _, p, s)| (*p, *s))
            .max()
    }

    fn smallest(&self) -> Option<u64> {
        self.hundred_twin.values.keys().map(|(.., s)| *s).min()
    }
}

/// A finding asked of one side: what it shows, and the verdict.
struct Judged {
    text: String,
    verdict: Verdict,
}

fn mesh_over_bonded(
    f: &Figures,
    placement: PlacementKind,
    at: (u32, u64),
    factor: f64,
) -> Option<Judged> {
    let (pairs, sz) = at;
    let (mesh, m) = f.best_mesh(placement, pairs, sz)?;
    let b = f.get(BONDED_DUAL_NET, PlacementKind::LocalWire, pairs, sz)?;
    let r = m / b;
    Some(Judged {
        text: format!(
            "{mesh} {} at {} and {pairs} pairs, {} Mbit/s: {} the bonded dual net's {} Mbit/s",
            placement.as_str(),
            size(sz),
            human(m),
            ratio(r),
            human(b)
        ),
        verdict: criteria::mesh_over_bonded(r, factor),
    })
}

fn switched_bonding(f: &Figures, at: (u32, u64)) -> Option<Judged> {
    let (pairs, sz) = at;
    let ratio_at = |placement: PlacementKind, p: u32| {
        Some(
            f.get(SWITCHED_BONDED_MESH, placement, p, sz)?
                / f.get(SWITCHED_MESH, placement, p, sz)?,
        )
    };
    let judged = criteria::switched_bonding(pairs, ratio_at)?;
    let parts: Vec<String> = judged
        .per_placement
        .iter()
        .map(|&(placement, light, heavy)| {
            format!(
                "{} bonded/unbonded {} with 1 pair, {} with {pairs}",
                placement.as_str(),
                ratio(light),
                ratio(heavy)
            )
        })
        .collect();
    let verdict = judged.verdict;
    Some(Judged {
        text: format!("at {}: {}", size(sz), parts.join("; ")),
        verdict,
    })
}

fn software_routing(f: &Figures, at: (u32, u64), small: u64) -> Option<Judged> {
    let (pairs, large) = at;
    let r = |p: u32, sz: u64| {
        Some(
            f.get(ROUTED_MESH, PlacementKind::RemoteWire, p, sz)?
                / f.get(SWITCHED_MESH, PlacementKind::RemoteWire, p, sz)?,
        )
    };
    let (heavy, light) = (r(pairs, large)?, r(1, small)?);
    let (verdict, _) = criteria::software_routing(heavy, light);
    Some(Judged {
        text: format!(
            "remote-wire routed/switched {} at {} and {pairs} pairs, {} at {} and 1 pair",
            ratio(heavy),
            size(large),
            ratio(light),
            size(small)
        ),
        verdict,
    })
}

impl StudySection for FastEthernet {
    fn applies(&self, run: &Evidence<'_>) -> bool {
        let known = |t: &str| {
            run.topologies
                .iter()
                .any(|n| n == &format!("{FAST_PREFIX}{t}"))
        };
        run.simulate.is_some() && known(BONDED_DUAL_NET) && MESHES.iter().any(|m| known(m))
    }

    fn findings(&self, run: &Evidence<'_>) -> Vec<Finding> {
        let Some(sides) = Sides::of(run) else {
            return Vec::new();
        };
        let (Some(heavy), Some(small)) = (sides.heaviest(), sides.smallest()) else {
            return Vec::new();
        };
        type Ask = dyn Fn(&Figures) -> Option<Judged>;
        let asks: [((&str, &str), Box<Ask>); 4] = [
            (
                criteria::LOCAL_WIRE,
                Box::new(move |f| {
                    mesh_over_bonded(
                        f,
                        PlacementKind::LocalWire,
                        heavy,
                        criteria::LOCAL_WIRE_FACTOR,
                    )
                }),
            ),
            (
                criteria::REMOTE_WIRE,
                Box::new(move |f| {
                    mesh_over_bonded(
                        f,
                        PlacementKind::RemoteWire,
                        heavy,
                        criteria::REMOTE_WIRE_FACTOR,
                    )
                }),
            ),
            (
                criteria::SWITCHED_BONDING,
                Box::new(move |f| switched_bonding(f, heavy)),
            ),
            (
                criteria::SOFTWARE_ROUTING,
                Box::new(move |f| software_routing(f, heavy, small)),
            ),
        ];
        asks.iter()
            .map(|((title, paper), ask)| {
                let mut points = vec![format!("1996: {paper}")];
                let mut line = |label: &str, j: Option<Judged>| {
                    if let Some(j) = j {
                        points.push(format!("{label}: {} ({}).", j.text, j.verdict.as_str()));
                    }
                };
                line(
                    "On 1996's wires and hosts (10 Mbit/s, 486DX4), simulated twin",
                    ask(&sides.in_1996),
                );
                line(
                    "At 10 Mbit/s with this run's hosts, measured",
                    ask(&sides.ten),
                );
                // Measured where every cell the finding needs kept the emulator's bound in some
                // attempt; the twin's figure beside it, or in its place.
                let measured = ask(&sides.hundred_measured);
                let twin = ask(&sides.hundred_twin);
                let verdict = measured
                    .as_ref()
                    .or(twin.as_ref())
                    .map_or(Verdict::NotMeasured, |j| j.verdict);
                if let Some(j) = &measured {
                    points.push(format!(
                        "At 100 Mbit/s on repeaters with this run's hosts, measured: {}.",
                        j.text
                    ));
                }
                match (&measured, twin) {
                    (Some(_), Some(j)) => points.push(format!(
                        "The same, simulated twin: {} ({}).",
                        j.text,
                        j.verdict.as_str()
                    )),
                    (None, Some(j)) => points.push(format!(
                        "At 100 Mbit/s on repeaters with this run's hosts, simulated twin (the \
                         emulator kept its bound for too few of these cells): {}.",
                        j.text
                    )),
                    (Some(_), None) => {}
                    (None, None) => points.push(
                        "This run has no 100 Mbit/s cells for this finding, measured or \
                         simulated."
                            .into(),
                    ),
                }
                Finding {
                    heading: title,
                    verdict,
                    points,
                }
            })
            .collect()
    }

    fn title(&self) -> &'static str {
        "The Fast Ethernet forecast"
    }

    fn introduction(&self, _findings: &[Finding]) -> String {
        "The 1996 paper's last words: \"An important intermediate step will be to use Fast \
         Ethernet without switches but rather with the lower cost repeaters and control \
         traffic through software routing. It can be anticipated that many of the performance \
         attributes will be retained.\" Each token finding of the paper asked of the study's \
         configurations on 100 Mbit/s repeaters (one collision domain per segment, 5.12 µs \
         slot), judged by the same rules as \"Against the 1996 paper\": *agrees* means the \
         finding is retained at 100 Mbit/s, *agrees in part* that its direction is, \
         *disagrees* that it is not. Beside it, the same finding on 1996's wires and hosts and \
         at 10 Mbit/s with this run's hosts, so that what the wires change can be told from \
         what the hosts change."
            .to_owned()
    }

    fn table(&self, run: &Evidence<'_>) -> Option<StudyTable> {
        let sides = Sides::of(run)?;
        let mut ids: Vec<_> = sides.hundred_twin.values.keys().cloned().collect();
        ids.extend(sides.ten.values.keys().cloned());
        ids.sort();
        ids.dedup();
        let fmt = |f: &Figures, id: &figures::CellId| {
            f.values
                .get(id)
                .map_or_else(|| "–".to_owned(), |v| human(*v))
        };
        let rows: Vec<Vec<String>> = ids
            .iter()
            .map(|id| {
                let twins = sides
                    .ten_twin
                    .values
                    .get(id)
                    .zip(sides.hundred_twin.values.get(id));
                vec![
                    id.0.clone(),
                    id.1.as_str().to_owned(),
                    id.2.to_string(),
                    size(id.3),
                    fmt(&sides.in_1996, id),
                    fmt(&sides.ten, id),
                    fmt(&sides.ten_twin, id),
                    fmt(&sides.hundred_measured, id),
                    fmt(&sides.hundred_twin, id),
                    twins.map_or_else(|| "–".into(), |(a, b)| ratio(b / a)),
                ]
            })
            .collect();
        let kept = sides.hundred_measured.values.len();
        let fast_cells = sides.hundred_twin.values.len().max(kept);
        let lateness = run
            .media
            .configs
            .iter()
            .filter(|c| c.topology.starts_with(FAST_PREFIX))
            .flat_map(|c| &c.segments)
            .map(|s| s.lateness_p99_us)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        let mut caption = format!(
            "Every token cell, aggregate Mbit/s (the producers' tokens). At 100 Mbit/s the \
             emulator's bound is one 5.12 µs contention slot at p99; {kept} of the {fast_cells} \
             100 Mbit/s cells kept it in at least one attempt and are measured{}; every cell is \
             also given by the simulated twin (the emulator's own MAC in simulated time, with \
             TCP's segments and ACKs as the analytic model has them). ×10→100 is the twin at \
             100 Mbit/s over the twin at 10 Mbit/s, one source on both sides.",
            lateness
                .map(|l| format!(
                    " (its 100 Mbit/s segments' p99 lateness reached {} µs)",
                    human(l)
                ))
                .unwrap_or_default()
        );
        caption += &match &sides.stack.fitted_on {
            Some((id, measured)) => format!(
                " The nodes' own stacks take {:.1} µs per hop and direction in the twin, fitted on \
                 the {} {} cell with {} pair at {} ({} Mbit/s measured), which the agreement \
                 below leaves out.",
                sides.stack.ns as f64 / 1e3,
                id.0,
                id.1.as_str(),
                id.2,
                size(id.3),
                human(*measured)
            ),
            None => format!(
                " The nodes' own stacks take the analytic model's {:.1} µs per hop and direction in \
                 the twin (the run has no one-pair local-wire routed-mesh cell at 10 Mbit/s to \
                 fit them on).",
                sides.stack.ns as f64 / 1e3
            ),
        };
        let mut validation = sides.ten.clone();
        if let Some((id, _)) = &sides.stack.fitted_on {
            validation.values.remove(id);
        }
        let sizes: BTreeSet<u64> = validation.values.keys().map(|(.., s)| *s).collect();
        let agreement: Vec<String> = sizes
            .iter()
            .filter_map(|&sz| {
                let (agree, compared, median) =
                    twin_against_measured(&validation, &sides.ten_twin, sz);
                (compared > 0).then(|| {
                    format!(
                        "{agree} of {compared} cells at {} (median twin/measured {})",
                        size(sz),
                        ratio(median)
                    )
                })
            })
            .collect();
        if !agreement.is_empty() {
            caption += &format!(
                " The twin against the emulator at 10 Mbit/s, where the emulator keeps its \
                 bound, within ±{}: {}.",
                percent(TWIN_AGREEMENT),
                agreement.join("; ")
            );
        }
        Some(StudyTable {
            caption,
            header: [
                "configuration",
                "placement",
                "pairs",
                "token",
                "1996 (twin)",
                "10 Mbit/s",
                "10 Mbit/s twin",
                "100 Mbit/s",
                "100 Mbit/s twin",
                "×10→100",
            ]
            .map(str::to_owned)
            .to_vec(),
            right: vec![false, false, true, true, true, true, true, true, true, true],
            rows,
        })
    }
}

/// How the twin fares against the measured cells of tokens of `size` bytes: (within
/// [`TWIN_AGREEMENT`], compared, median twin/measured).
fn twin_against_measured(measured: &Figures, twin: &Figures, size: u64) -> (usize, usize, f64) {
    let mut ratios: Vec<f64> = measured
        .values
        .iter()
        .filter(|((.., s), _)| *s == size)
        .filter_map(|(id, m)| twin.values.get(id).map(|t| t / m))
        .collect();
    ratios.sort_by(f64::total_cmp);
    let agree = ratios
        .iter()
        .filter(|r| (**r - 1.0).abs() <= TWIN_AGREEMENT)
        .count();
    let n = ratios.len();
    let median = match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => ratios[n / 2],
        _ => (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0,
    };
    (agree, ratios.len(), median)
}
