use super::*;
use crate::plan::placement::place;
use crate::plan::throughput_model::predict_token;
use crate::spec::experiment::PlacementKind;
use crate::spec::{HostProfile, HostSpec, SourceFile};

fn topo(text: &str) -> Topology {
    crate::topology::from_source(&SourceFile::new("t.toml", text)).unwrap()
}

const BUS: &str = "[generator]\nkind = \"single\"\nnodes = 16\n";
const ROUTED: &str =
    "[generator]\nkind = \"grid\"\nrows = 4\ncols = 4\ninterconnect = \"routed\"\n";
const SWITCHED: &str =
    "[generator]\nkind = \"grid\"\nrows = 4\ncols = 4\ninterconnect = \"switched\"\n";
const BONDED: &str = "[generator]\nkind = \"bus\"\nnodes = 16\nbuses = 2\n\
                      bond = { mode = \"balance-rr\", miimon = 100 }\n";

fn i486() -> NamedHostCosts {
    NamedHostCosts::from_spec(&HostSpec::Profile(HostProfile::I486Dx4))
}

fn cell(t: &Topology, kind: PlacementKind, pairs: usize, size: u64) -> TwinOutcome {
    let pl = place(t, kind, pairs, &[]).unwrap();
    token(
        t,
        &pl,
        size,
        &ModelParams::default(),
        7,
        TwinLength::default(),
    )
    .unwrap()
}

#[test]
fn a_small_token_on_an_idle_bus_takes_its_serialization_and_the_stacks_each_way() {
    // 64 B payload: a 130-byte frame, (134 + 8) × 8 bits = 113.6 µs at 10 Mbit/s, after the
    // 60 µs the stacks take: 173.6 µs each way, 347.2 µs an exchange.
    let t = topo(BUS);
    let o = cell(&t, PlacementKind::LocalWire, 1, 64);
    let expected = 64.0 * 8.0 / 347.2;
    assert!(
        (o.aggregate_mbit_s / expected - 1.0).abs() < 0.001,
        "{} vs {expected}",
        o.aggregate_mbit_s
    );
    assert_eq!(o.collisions_per_frame, 0.0);
    assert_eq!(o.retransmissions, 0);
    assert!(o.exchanges > 100, "{}", o.exchanges);
}

#[test]
fn alone_on_an_idle_path_the_twin_meets_the_analytic_model() {
    // No contention: the two compute the same frames, wires and stacks, one by formula.
    for (text, kind) in [
        (BUS, PlacementKind::LocalWire),
        (ROUTED, PlacementKind::RemoteWire),
        (SWITCHED, PlacementKind::RemoteWire),
    ] {
        let t = topo(text);
        let pl = place(&t, kind, 1, &[]).unwrap();
        for size in [64, 8192] {
            let twin = token(
                &t,
                &pl,
                size,
                &ModelParams::default(),
                1,
                TwinLength::default(),
            )
            .unwrap()
            .aggregate_mbit_s;
            let model = predict_token(&t, &pl, size, &ModelParams::default()).aggregate_mbit_s;
            assert!(
                (twin / model - 1.0).abs() < 0.03,
                "{} {kind:?} {size} B: twin {twin} model {model}",
                t.name
            );
        }
    }
}

#[test]
fn seven_pairs_on_one_bus_contend_and_on_seven_buses_do_not() {
    let bus = cell(&topo(BUS), PlacementKind::LocalWire, 7, 8192);
    let mesh = cell(&topo(ROUTED), PlacementKind::LocalWire, 7, 8192);
    assert!(bus.collisions_per_frame > 0.0);
    assert_eq!(mesh.collisions_per_frame, 0.0, "each pair has a bus");
    // One bus carries at most its 10 Mbit/s both ways; seven carry seven times that.
    assert!(bus.aggregate_mbit_s < 5.0, "{}", bus.aggregate_mbit_s);
    let r = mesh.aggregate_mbit_s / bus.aggregate_mbit_s;
    assert!((5.0..8.0).contains(&r), "{r}");
}

#[test]
fn a_balance_rr_bond_stripes_over_both_buses() {
    let single = cell(&topo(BUS), PlacementKind::LocalWire, 7, 8192);
    let bonded = cell(&topo(BONDED), PlacementKind::LocalWire, 7, 8192);
    let r = bonded.aggregate_mbit_s / single.aggregate_mbit_s;
    assert!((1.6..2.2).contains(&r), "{r}");
}

#[test]
fn forwarding_through_a_486_costs_what_a_switch_does_not() {
    let routed = rewired(&topo(ROUTED), Rate::from_bits_per_s(10_000_000), &i486());
    let switched = rewired(&topo(SWITCHED), Rate::from_bits_per_s(10_000_000), &i486());
    let via_node = cell(&routed, PlacementKind::RemoteWire, 1, 64);
    let via_switch = cell(&switched, PlacementKind::RemoteWire, 1, 64);
    // A routed token is received, forwarded and sent by the middle node's 486 (750 µs more
    // each way); a switched one crosses two buses and no CPU.
    assert!(
        via_node.aggregate_mbit_s < 0.8 * via_switch.aggregate_mbit_s,
        "{} vs {}",
        via_node.aggregate_mbit_s,
        via_switch.aggregate_mbit_s
    );
}

#[test]
fn the_same_seed_gives_the_same_outcome() {
    let t = topo(BUS);
    let a = cell(&t, PlacementKind::LocalWire, 7, 512);
    let b = cell(&t, PlacementKind::LocalWire, 7, 512);
    assert_eq!(a, b);
}

#[test]
fn rewired_changes_the_wires_and_hosts_and_nothing_else() {
    let t = topo(ROUTED);
    let fast = rewired(&t, Rate::from_bits_per_s(100_000_000), &i486());
    assert!(
        fast.segments
            .iter()
            .all(|s| s.rate.bits_per_s() == 100_000_000)
    );
    assert!(fast.nodes.iter().all(|n| n.host == i486()));
    assert_eq!(fast.nodes.len(), t.nodes.len());
    assert_eq!(fast.segments.len(), t.segments.len());
    // Ten times the rate: a lone 8 KiB token moves several times faster (the stacks' 60 µs
    // per hop do not shrink).
    let slow = cell(&t, PlacementKind::LocalWire, 1, 8192).aggregate_mbit_s;
    let fast_none = rewired(
        &t,
        Rate::from_bits_per_s(100_000_000),
        &NamedHostCosts::from_spec(&HostSpec::Profile(HostProfile::None)),
    );
    let quick = cell(&fast_none, PlacementKind::LocalWire, 1, 8192).aggregate_mbit_s;
    assert!((4.0..10.0).contains(&(quick / slow)), "{slow} -> {quick}");
}
