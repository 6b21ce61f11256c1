//! The `[[workload]]` tables resolved: sizes expanded, pair counts and placements checked
//! against each other and the topologies, the amount of traffic per run settled, and each
//! pattern's own options checked against the pattern.

use toml::Spanned;

use crate::spec::experiment::{
    Pattern, PlacementKind, Protocol, SizeRange, Sizes, SpannedPair, WorkloadSpec,
};
use crate::spec::{NodeName, best_match};
use crate::topology::Topology;

use super::{Amount, ErrorList, Workload};

/// The largest message the tool sizes buffers for.
const MAX_SIZE: u64 = 1 << 30;

/// Every workload, in the order given; there must be at least one.
pub(super) fn workloads(
    specs: &Spanned<Vec<WorkloadSpec>>,
    topologies: &[Topology],
    errors: &mut ErrorList,
) -> Vec<Workload> {
    if specs.get_ref().is_empty() {
        errors.push(specs.span(), "no [[workload]]: say what traffic to measure");
    }
    specs
        .get_ref()
        .iter()
        .map(|w| workload(w, topologies, errors))
        .collect()
}

fn workload(w: &WorkloadSpec, topologies: &[Topology], errors: &mut ErrorList) -> Workload {
    let sizes = sizes(w, errors);
    let pairs = pair_counts(w, errors);
    let (placements, explicit_pairs) = placements(w, &pairs, topologies, errors);
    let amount = amount(w, errors);
    if *w.repetitions.get_ref() == 0 {
        errors.push(w.repetitions.span(), "`repetitions` must be at least 1");
    }
    check_pattern_options(w, errors);
    Workload {
        pattern: w.pattern,
        protocol: w.protocol,
        sizes,
        pairs,
        placements,
        explicit_pairs,
        amount,
        warmup: w.warmup,
        repetitions: *w.repetitions.get_ref(),
        statistic: w.statistic,
        depth: w.depth.as_ref().map(|d| *d.get_ref()),
        rate: w.rate.as_ref().map(|r| *r.get_ref()),
        drop_caches: w.drop_caches,
    }
}

/// The message sizes, a range expanded; each from 1 byte to [`MAX_SIZE`].
fn sizes(w: &WorkloadSpec, errors: &mut ErrorList) -> Vec<u64> {
    let sizes = match w.sizes.get_ref() {
        Sizes::List(v) => v.iter().map(|s| s.0).collect(),
        Sizes::Range(r) => match expand_range(r) {
            Ok(v) => v,
            Err(m) => {
                errors.push(w.sizes.span(), m);
                Vec::new()
            }
        },
    };
    if sizes.is_empty() && errors.is_empty() {
        errors.push(w.sizes.span(), "`sizes` is empty");
    }
    if let Some(big) = sizes.iter().find(|s| **s == 0 || **s > MAX_SIZE) {
        errors.push(
            w.sizes.span(),
            format!("size {big} is out of range: expected 1 byte to 1 GiB"),
        );
    }
    sizes
}

/// The pair counts to sweep, each at least 1.
fn pair_counts(w: &WorkloadSpec, errors: &mut ErrorList) -> Vec<u32> {
    let pairs = w.pairs.get_ref().0.clone();
    if pairs.is_empty() || pairs.contains(&0) {
        errors.push(w.pairs.span(), "`pairs` must list counts of at least 1");
    }
    pairs
}

/// The placements to measure, with the pairs given by hand: `explicit_pairs` means placement
/// "explicit" and must hold as many pairs as the largest count in `pairs`.
fn placements(
    w: &WorkloadSpec,
    pairs: &[u32],
    topologies: &[Topology],
    errors: &mut ErrorList,
) -> (Vec<PlacementKind>, Vec<(NodeName, NodeName)>) {
    let placements = w.placement.get_ref().clone();
    let Some(list) = &w.explicit_pairs else {
        if placements.contains(&PlacementKind::Explicit) {
            errors.push(
                w.placement.span(),
                "placement \"explicit\" needs `explicit_pairs = [[\"n01\", \"n02\"], ...]`",
            );
        }
        if placements.is_empty() {
            errors.push(w.placement.span(), "`placement` is empty");
        }
        return (placements, Vec::new());
    };
    if placements.iter().any(|p| *p != PlacementKind::Explicit) && w.placement.span() != (0..0) {
        errors.push(
            w.placement.span(),
            "with `explicit_pairs`, placement must be [\"explicit\"] (or left out)",
        );
    }
    let explicit_pairs = explicit_pairs(list, topologies, errors);
    let max = *pairs.iter().max().unwrap_or(&0) as usize;
    if max > explicit_pairs.len() {
        errors.push(
            w.pairs.span(),
            format!(
                "`pairs` asks for {max} pairs but `explicit_pairs` lists {}",
                explicit_pairs.len()
            ),
        );
    }
    (vec![PlacementKind::Explicit], explicit_pairs)
}

/// The pairs given by hand, each of two different nodes that every topology has.
fn explicit_pairs(
    list: &Spanned<Vec<SpannedPair>>,
    topologies: &[Topology],
    errors: &mut ErrorList,
) -> Vec<(NodeName, NodeName)> {
    let mut explicit_pairs = Vec::new();
    for pair in list.get_ref() {
        let [a, b] = pair.get_ref();
        if a.get_ref() == b.get_ref() {
            errors.push(
                pair.span(),
                format!(
                    "pair [{}, {}] has the same node twice",
                    a.get_ref(),
                    b.get_ref()
                ),
            );
        }
        for node in [a, b] {
            check_node_everywhere(topologies, node, errors);
        }
        explicit_pairs.push((a.get_ref().clone(), b.get_ref().clone()));
    }
    explicit_pairs
}

/// Reports `node` against the first topology that lacks it, with the nearest name there.
fn check_node_everywhere(
    topologies: &[Topology],
    node: &Spanned<NodeName>,
    errors: &mut ErrorList,
) {
    for t in topologies {
        if t.node(node.get_ref()).is_none() {
            let help = best_match(
                node.get_ref().as_str(),
                t.nodes.iter().map(|n| n.name.as_str()),
            )
            .map(|m| format!("did you mean `{m}`?"));
            errors.push_with_help(
                node.span(),
                format!("node `{}` is not in topology `{}`", node.get_ref(), t.name),
                help,
            );
            return;
        }
    }
}

/// How much traffic one run carries: `exchanges` or `duration`, exactly one of them.
fn amount(w: &WorkloadSpec, errors: &mut ErrorList) -> Amount {
    match (&w.exchanges, &w.duration) {
        (Some(e), None) if *e.get_ref() == 0 => {
            errors.push(e.span(), "`exchanges` must be at least 1");
            Amount::Exchanges(1)
        }
        (Some(e), None) => Amount::Exchanges(*e.get_ref()),
        (None, Some(d)) => Amount::Duration(d.get_ref().0),
        (Some(e), Some(_)) => {
            errors.push(e.span(), "give either `exchanges` or `duration`, not both");
            Amount::Exchanges(1)
        }
        (None, None) => {
            errors.push(
                w.sizes.span(),
                "the workload needs `exchanges = N` or `duration = \"10s\"`",
            );
            Amount::Exchanges(1)
        }
    }
}

/// Options that belong to one pattern (`depth`, `rate`) appear only with it, "load" has its
/// rate, and UDP goes only with the patterns that run over it.
fn check_pattern_options(w: &WorkloadSpec, errors: &mut ErrorList) {
    if let Some(d) = &w.depth
        && w.pattern != Pattern::Pipeline
    {
        errors.push(
            d.span(),
            format!(
                "`depth` applies to pattern \"pipeline\", not \"{}\"",
                w.pattern.as_str()
            ),
        );
    }
    if let Some(r) = &w.rate
        && w.pattern != Pattern::Load
    {
        errors.push(
            r.span(),
            format!(
                "`rate` applies to pattern \"load\", not \"{}\"",
                w.pattern.as_str()
            ),
        );
    }
    if w.pattern == Pattern::Load && w.rate.is_none() {
        errors.push(
            w.sizes.span(),
            "pattern \"load\" needs an offered `rate`, e.g. rate = \"5mbit\"",
        );
    }
    if w.protocol == Protocol::Udp
        && !matches!(
            w.pattern,
            Pattern::Pingpong | Pattern::Stream | Pattern::Load
        )
    {
        errors.push(
            w.sizes.span(),
            format!("pattern \"{}\" runs over TCP only", w.pattern.as_str()),
        );
    }
}

/// A size range as the sizes it stands for: NetPIPE's schedule, or powers of `factor`.
fn expand_range(r: &SizeRange) -> Result<Vec<u64>, String> {
    let (from, to) = (r.from.0, r.to.0);
    if from == 0 || from > to {
        return Err(format!(
            "size range from {from} to {to} is empty: expected 1 <= from <= to"
        ));
    }
    if r.netpipe {
        if r.factor.is_some() {
            return Err("`factor` does not apply to the NetPIPE schedule".into());
        }
        return Ok(orchestrate_worker::netpipe::schedule(
            from,
            to,
            r.perturbation.unwrap_or(3),
        ));
    }
    if r.perturbation.is_some() {
        return Err("`perturbation` applies only with `netpipe = true`".into());
    }
    let factor = u64::from(r.factor.unwrap_or(2));
    if factor < 2 {
        return Err("`factor` must be at least 2".into());
    }
    let mut v = Vec::new();
    let mut s = from;
    while s <= to {
        v.push(s);
        s = s.saturating_mul(factor);
    }
    Ok(v)
}
