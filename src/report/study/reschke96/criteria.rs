//! What each token finding of the paper asserts, as a rule over the run's ratios: the one
//! place both the comparison with the paper and the Fast Ethernet forecast judge a finding by.

use crate::report::verdict::Verdict;
use crate::results::PlacementKind;

/// Each token finding: its title and what the paper reports.
pub const LOCAL_WIRE: (&str, &str) = (
    "Local-wire peak",
    "Local-wire traffic peaked at 6.3 MB/s with 8 KiB tokens, almost 4x \
     the bonded dual net.",
);
pub const REMOTE_WIRE: (&str, &str) = (
    "Remote-wire traffic",
    "Remote-wire traffic reached almost 2x the bonded dual net.",
);
pub const SWITCHED_BONDING: (&str, &str) = (
    "Switched channel bonding",
    "Switched channel-bonded configurations did not beat the same switches \
     without bonding, and degraded under heavy load.",
);
pub const SOFTWARE_ROUTING: (&str, &str) = (
    "Software routing vs switches",
    "Software routing came close to the switches except under light \
     traffic, where its latency dominated.",
);

/// The paper's local-wire factor: meshes "almost 4x the bonded dual net".
pub const LOCAL_WIRE_FACTOR: f64 = 4.0;
/// The paper's remote-wire factor: "almost 2x the bonded dual net".
pub const REMOTE_WIRE_FACTOR: f64 = 2.0;

/// Best mesh over the bonded dual net at the heaviest load, against the paper's factor:
/// within a quarter of it agrees, above 1 the direction holds, else the finding is reversed.
pub fn mesh_over_bonded(ratio: f64, factor: f64) -> Verdict {
    if (ratio / factor - 1.0).abs() <= 0.25 {
        Verdict::Agrees
    } else if ratio > 1.0 {
        Verdict::AgreesInPart
    } else {
        Verdict::Disagrees
    }
}

/// Switched bonded over switched unbonded, per placement measured: (placement, with 1 pair,
/// with the heaviest load's pairs).
pub struct BondingRatios {
    pub per_placement: Vec<(PlacementKind, f64, f64)>,
    pub verdict: Verdict,
}

/// The ratios `ratio_at` gives (bonded over unbonded for a placement and a pair count) at 1 pair
/// and at `pairs`, judged: the finding holds when bonding gains nothing under heavy load (at
/// most 5%) and the ratio falls as the load grows. `None` without any placement measured.
pub fn switched_bonding(
    pairs: u32,
    ratio_at: impl Fn(PlacementKind, u32) -> Option<f64>,
) -> Option<BondingRatios> {
    let per_placement: Vec<(PlacementKind, f64, f64)> =
        [PlacementKind::LocalWire, PlacementKind::RemoteWire]
            .into_iter()
            .filter_map(|p| Some((p, ratio_at(p, 1)?, ratio_at(p, pairs)?)))
            .collect();
    if per_placement.is_empty() {
        return None;
    }
    let no_better = per_placement.iter().all(|&(_, _, heavy)| heavy <= 1.05);
    let degrades = per_placement.iter().all(|&(_, light, heavy)| heavy < light);
    let verdict = match (no_better, degrades) {
        (true, true) => Verdict::Agrees,
        (false, false) => Verdict::Disagrees,
        _ => Verdict::AgreesInPart,
    };
    Some(BondingRatios {
        per_placement,
        verdict,
    })
}

/// Routed over switched, remote-wire, under heavy traffic (most pairs, largest token) and
/// light (one pair, smallest token): close to the switches (85%) under heavy traffic, and
/// further behind under light.
pub fn software_routing(heavy: f64, light: f64) -> (Verdict, bool) {
    let close = heavy >= 0.85;
    let light_penalty = light < heavy - 0.05;
    let verdict = match (close, light_penalty) {
        (true, true) => Verdict::Agrees,
        (true, false) | (false, true) => Verdict::AgreesInPart,
        (false, false) => Verdict::Disagrees,
    };
    (verdict, light_penalty)
}
