//! The forecast's verdicts, sources and table on small synthetic runs.

use super::*;
use crate::report::data::{CellKey, CellSummary};
use crate::report::emulator_stats::MediaReport;
use crate::report::predicted::{CellPrediction, PredictThroughput};
use crate::report::simulated::{TwinCell, TwinSetup};
use crate::results::Statistic;

const L: PlacementKind = PlacementKind::LocalWire;
const R: PlacementKind = PlacementKind::RemoteWire;
const HEAVY: u64 = 8192;
const SMALL: u64 = 64;

fn bonding(topology: &str) -> String {
    if topology.contains("bonded") {
        "balance-rr".into()
    } else {
        "none".into()
    }
}

fn measured(
    topology: &str,
    placement: PlacementKind,
    pairs: u32,
    size: u64,
    v: f64,
) -> CellSummary {
    let mut key = CellKey::token(topology, size);
    key.config.bonding = bonding(topology);
    key.config.placement = placement;
    key.pairs = pairs;
    CellSummary::of_value(key, v)
}

/// Every cell of the four configurations the findings ask of, at `scale` × a base figure:
/// meshes `local`× and `remote`× the bonded dual net at the heaviest load.
fn cells(
    prefix: &str,
    scale: f64,
    local: f64,
    remote: f64,
) -> Vec<(String, PlacementKind, u32, u64, f64)> {
    let t = |n: &str| format!("{prefix}{n}");
    let mut out = Vec::new();
    for (pairs, size) in [(1, SMALL), (1, HEAVY), (7, SMALL), (7, HEAVY)] {
        let base = scale
            * if pairs == 7 && size == HEAVY {
                1.0
            } else {
                0.5
            };
        out.push((t("bonded-dual-net"), L, pairs, size, base));
        out.push((t("routed-mesh-4x4"), L, pairs, size, base * local));
        out.push((t("switched-mesh-4x4"), L, pairs, size, base * local * 0.9));
        // Routing costs a light exchange more than a switch does.
        let routed_remote = if pairs == 1 { 0.7 } else { 0.95 };
        out.push((
            t("routed-mesh-4x4"),
            R,
            pairs,
            size,
            base * remote * routed_remote,
        ));
        out.push((t("switched-mesh-4x4"), R, pairs, size, base * remote));
        // Bonding helps one pair and costs seven.
        let bonded = if pairs == 1 { 1.1 } else { 0.9 };
        for p in [L, R] {
            let unbonded = if p == L { local * 0.9 } else { remote };
            out.push((
                t("switched-bonded-mesh-4x4"),
                p,
                pairs,
                size,
                base * unbonded * bonded,
            ));
        }
    }
    out
}

struct Twin {
    as_run: Vec<TwinCell>,
    in_1996: Vec<TwinCell>,
}

fn twin_cells(list: Vec<(String, PlacementKind, u32, u64, f64)>) -> Vec<TwinCell> {
    list.into_iter()
        .map(|(topology, placement, pairs, size_bytes, v)| TwinCell {
            bonding: bonding(&topology),
            topology,
            placement,
            pairs,
            size_bytes,
            aggregate_mbit_s: v,
            collisions_per_frame: 0.0,
            retransmissions: 0,
        })
        .collect()
}

impl PredictThroughput for Twin {
    fn predictions(&self) -> Vec<CellPrediction> {
        Vec::new()
    }

    fn twin_cells(&self, setup: TwinSetup) -> Vec<TwinCell> {
        match setup.wires {
            TwinWires::AsRun => self.as_run.clone(),
            TwinWires::Rewired { .. } => self.in_1996.clone(),
        }
    }
}

fn topologies() -> Vec<String> {
    IN_THE_STUDY_NAMES
        .iter()
        .flat_map(|n| [n.to_string(), format!("fast-{n}")])
        .collect()
}

const IN_THE_STUDY_NAMES: [&str; 4] = [
    "bonded-dual-net",
    "routed-mesh-4x4",
    "switched-mesh-4x4",
    "switched-bonded-mesh-4x4",
];

fn section(cells: &[CellSummary], twin: &Twin, topologies: &[String]) -> Option<StudyFindings> {
    let media = MediaReport::default();
    let run = Evidence {
        topologies,
        cells,
        model: &[],
        media: &media,
        statistic: Statistic::Best,
        simulate: Some(twin),
    };
    FastEthernet.section(&run)
}

use super::super::section::StudyFindings;

fn finding<'a>(s: &'a StudyFindings, heading: &str) -> &'a Finding {
    s.findings.iter().find(|f| f.heading == heading).unwrap()
}

fn as_measured(list: Vec<(String, PlacementKind, u32, u64, f64)>) -> Vec<CellSummary> {
    list.into_iter()
        .map(|(t, p, n, s, v)| measured(&t, p, n, s, v))
        .collect()
}

#[test]
fn with_no_measured_100_mbit_cell_the_twin_answers_and_says_so() {
    // 1996: 4x and 2x. At 100 Mbit/s the twin has the meshes 1.5x and 0.8x the bonded net.
    let twin = Twin {
        as_run: twin_cells([cells("", 4.0, 3.0, 1.5), cells("fast-", 40.0, 1.5, 0.8)].concat()),
        in_1996: twin_cells(cells("fast-", 2.0, 4.0, 2.0)),
    };
    let ten = as_measured(cells("", 4.0, 3.0, 1.5));
    let s = section(&ten, &twin, &topologies()).expect("the forecast applies");
    let local = finding(&s, "Local-wire peak");
    assert_eq!(local.verdict, Verdict::AgreesInPart, "{local:?}");
    let last = local.points.last().unwrap();
    assert!(
        last.contains("simulated twin (the emulator kept") && last.contains("1.5×"),
        "{last}"
    );
    assert!(
        local
            .points
            .iter()
            .any(|p| p.contains("486DX4") && p.contains("(agrees)")),
        "{:?}",
        local.points
    );
    let remote = finding(&s, "Remote-wire traffic");
    assert_eq!(remote.verdict, Verdict::Disagrees);
    let bonding = finding(&s, "Switched channel bonding");
    assert_eq!(bonding.verdict, Verdict::Agrees, "{bonding:?}");
    let routing = finding(&s, "Software routing vs switches");
    assert_eq!(routing.verdict, Verdict::Agrees, "{routing:?}");
    let table = s.table.as_ref().unwrap();
    assert!(table.caption.contains("0 of the 28"), "{}", table.caption);
    // The twin here is the measurement at 10 Mbit/s, cell for cell, at both sizes.
    assert!(
        table.caption.contains(
            "13 of 13 cells at 64 B (median twin/measured 1.0×); 14 of 14 \
                                cells at 8 KiB"
        ),
        "{}",
        table.caption
    );
    // One row per cell, both rates side by side.
    assert_eq!(table.rows.len(), 28);
    let row = table
        .rows
        .iter()
        .find(|r| r[0] == "bonded-dual-net" && r[2] == "7" && r[3] == "8 KiB")
        .unwrap();
    // The twin's 40 at 100 Mbit/s over its 4 at 10: the ×10→100 column.
    assert_eq!(row[9], "10.0×", "{row:?}");
    assert_eq!(row[7], "–", "nothing measured at 100 Mbit/s");
}

#[test]
fn a_measured_100_mbit_cell_takes_the_twins_place() {
    let twin = Twin {
        as_run: twin_cells(cells("fast-", 40.0, 1.5, 0.8)),
        in_1996: twin_cells(cells("fast-", 2.0, 4.0, 2.0)),
    };
    // Measured at 100 Mbit/s: the meshes 4x and 2x, every cell.
    let fast = as_measured(cells("fast-", 40.0, 4.0, 2.0));
    let s = section(&fast, &twin, &topologies()).unwrap();
    let local = finding(&s, "Local-wire peak");
    assert_eq!(local.verdict, Verdict::Agrees);
    // The measurement decides; the twin's figure and verdict stand beside it.
    assert!(
        local
            .points
            .iter()
            .any(|p| p.contains(", measured:") && p.contains("4.0×")),
        "{:?}",
        local.points
    );
    let last = local.points.last().unwrap();
    assert!(
        last.starts_with("The same, simulated twin") && last.contains("(agrees in part)"),
        "{last}"
    );
    assert!(s.table.as_ref().unwrap().caption.contains("28 of the 28"));
    // One measured cell among simulated ones is not mixed with them: the twin decides.
    let one = vec![measured("fast-bonded-dual-net", L, 7, HEAVY, 160.0)];
    let s = section(&one, &twin, &topologies()).unwrap();
    let local = finding(&s, "Local-wire peak");
    assert_eq!(local.verdict, Verdict::AgreesInPart);
    assert!(
        local
            .points
            .last()
            .unwrap()
            .contains("simulated twin (the emulator kept")
    );
}

#[test]
fn without_the_fast_configurations_or_a_twin_there_is_no_forecast() {
    let twin = Twin {
        as_run: Vec::new(),
        in_1996: Vec::new(),
    };
    let only_1996: Vec<String> = IN_THE_STUDY_NAMES.iter().map(|n| n.to_string()).collect();
    assert!(section(&[], &twin, &only_1996).is_none());
    let media = MediaReport::default();
    let names = topologies();
    let run = Evidence {
        topologies: &names,
        cells: &[],
        model: &[],
        media: &media,
        statistic: Statistic::Best,
        simulate: None,
    };
    assert!(FastEthernet.section(&run).is_none());
}

/// A twin whose one-pair routed-mesh exchange at 64 B takes 200 µs plus two hops' stack time.
struct StackTwin;

impl PredictThroughput for StackTwin {
    fn predictions(&self) -> Vec<CellPrediction> {
        Vec::new()
    }

    fn twin_cells(&self, setup: TwinSetup) -> Vec<TwinCell> {
        let exchange_us = 200.0 + 2.0 * setup.stack_ns as f64 / 1e3;
        let mut list = cells("fast-", 40.0, 3.0, 1.5);
        list.push((
            "routed-mesh-4x4".into(),
            L,
            1,
            SMALL,
            SMALL as f64 * 8.0 / exchange_us,
        ));
        twin_cells(list)
    }
}

#[test]
fn the_twins_stack_time_is_fitted_on_the_one_pair_local_wire_cell() {
    // Measured: 230 µs an exchange, so 15 µs per hop and direction beyond the bare twin's 200.
    let ten = vec![measured(
        "routed-mesh-4x4",
        L,
        1,
        SMALL,
        SMALL as f64 * 8.0 / 230.0,
    )];
    let media = MediaReport::default();
    let names = topologies();
    let run = Evidence {
        topologies: &names,
        cells: &ten,
        model: &[],
        media: &media,
        statistic: Statistic::Best,
        simulate: Some(&StackTwin),
    };
    let s = FastEthernet.section(&run).unwrap();
    let caption = &s.table.as_ref().unwrap().caption;
    assert!(
        caption.contains(
            "take 15.0 µs per hop and direction in the twin, fitted on the \
                          routed-mesh-4x4 local-wire cell with 1 pair at 64 B"
        ),
        "{caption}"
    );
    // The fitted twin meets the cell it was fitted on, and the agreement leaves it out.
    let row = s
        .table
        .as_ref()
        .unwrap()
        .rows
        .iter()
        .find(|r| r[0] == "routed-mesh-4x4" && r[2] == "1" && r[3] == "64 B")
        .unwrap();
    assert_eq!(row[5], row[6], "{row:?}");
    assert!(!caption.contains("cells at 64 B"), "{caption}");
    // Without that cell the twin keeps the model's 60 µs and says why.
    let run = Evidence { cells: &[], ..run };
    let s = FastEthernet.section(&run).unwrap();
    assert!(
        s.table
            .unwrap()
            .caption
            .contains("the analytic model's 60.0 µs")
    );
}
