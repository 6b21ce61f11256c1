//! The `[[workload]]` tables resolved: sizes expanded, pair counts and placements checked
//! against each other and the topologies, the amount of traffic per run settled, and each
//! pattern's own options checked against the pattern.

use std::ops::Range;
use std::time::Duration;

use serde::Serialize;
use toml::Spanned;

use crate::spec::experiment::{
    Pattern, PlacementKind, Protocol, SizeRange, Sizes, SpannedPair, Statistic, WorkloadSpec,
};
use crate::spec::limits::{
    MAX_DEPTH, MAX_DURATION, MAX_EXCHANGES, MAX_PAIR_COUNTS, MAX_REPETITIONS, MAX_SIZES,
    MAX_WORKLOADS, MIN_RATE,
};
use crate::spec::{ByteSize, NodeName, Rate, best_match};
use crate::topology::Topology;
use orchestrate_worker::protocol::{
    LOAD_HEADER, MAX_FILE, MAX_PIPELINE_BYTES, MAX_SIZE, MAX_UDP_SIZE,
};

pub use super::amount::Amount;
use super::collective::{self, CollectiveOptions};
use super::errors::ErrorList;

/// One `[[workload]]`, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct Workload {
    pub pattern: Pattern,
    pub protocol: Protocol,
    pub sizes: Vec<u64>,
    pub pairs: Vec<u32>,
    pub placements: Vec<PlacementKind>,
    pub explicit_pairs: Vec<(NodeName, NodeName)>,
    pub amount: Amount,
    /// With [`Amount::Exchanges`]: each run lasts at least this long.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_secs_opt"
    )]
    pub min_duration: Option<Duration>,
    pub warmup: u64,
    pub repetitions: u32,
    pub statistic: Statistic,
    pub depth: Option<u32>,
    pub rate: Option<Rate>,
    pub drop_caches: bool,
    /// A collective's own options (its `pairs` are then rank counts); `None` for the other
    /// patterns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collective: Option<CollectiveOptions>,
    /// Where the workload's keys are, for problems only the plan finds.
    #[serde(skip)]
    pub spans: WorkloadSpans,
}

impl Workload {
    /// Whether Open MPI runs this workload's points rather than the worker.
    pub fn runs_on_open_mpi(&self) -> bool {
        self.collective
            .as_ref()
            .is_some_and(|c| c.implementation == collective::Implementation::OpenMpi)
    }
}

/// Where a workload's keys are written.
#[derive(Debug, Clone, Default)]
pub struct WorkloadSpans {
    /// `pairs`, where a count the topology cannot place is reported.
    pub pairs: Range<usize>,
    /// `exchanges` or `duration`, where an estimate too long to represent is reported.
    pub amount: Range<usize>,
}

/// Every workload, in the order given; there must be at least one.
pub(super) fn workloads(
    specs: &Spanned<Vec<WorkloadSpec>>,
    topologies: &[Topology],
    errors: &mut ErrorList,
) -> Vec<Workload> {
    if specs.get_ref().is_empty() {
        errors.push(specs.span(), "no [[workload]]: say what traffic to measure");
    }
    if specs.get_ref().len() > MAX_WORKLOADS {
        errors.push(
            specs.span(),
            format!(
                "{} [[workload]] tables; at most {MAX_WORKLOADS} are allowed",
                specs.get_ref().len()
            ),
        );
        return Vec::new();
    }
    specs
        .get_ref()
        .iter()
        .map(|w| workload(w, topologies, errors))
        .collect()
}

fn workload(w: &WorkloadSpec, topologies: &[Topology], errors: &mut ErrorList) -> Workload {
    let sizes = sizes(w, errors);
    let is_collective = w.pattern().is_collective();
    let (pairs, placements, explicit_pairs, amount, collective_options) = if is_collective {
        let ranks = collective::rank_counts(w, topologies, errors);
        let placements = collective::placements(w, errors);
        let amount = collective::amount(w, errors);
        let options = collective::options(w, &ranks, &sizes, topologies, errors);
        (ranks, placements, Vec::new(), amount, Some(options))
    } else {
        collective::refuse_on_pairs(w, errors);
        let pairs = pair_counts(w, errors);
        let (placements, explicit_pairs) = placements(w, &pairs, topologies, errors);
        (pairs, placements, explicit_pairs, amount(w, errors), None)
    };
    let reps = *w.repetitions.get_ref();
    if !(1..=MAX_REPETITIONS).contains(&reps) {
        errors.push(
            w.repetitions.span(),
            format!("`repetitions` must be from 1 to {MAX_REPETITIONS}, got {reps}"),
        );
    }
    check_pattern_options(w, errors);
    check_size_limits(w, &sizes, errors);
    Workload {
        pattern: w.pattern(),
        protocol: w.protocol,
        sizes,
        pairs,
        placements,
        explicit_pairs,
        amount,
        min_duration: min_duration(w, errors),
        warmup: *w.warmup.get_ref(),
        repetitions: *w.repetitions.get_ref(),
        statistic: w.statistic,
        depth: w.depth.as_ref().map(|d| *d.get_ref()),
        rate: w.rate.as_ref().map(|r| *r.get_ref()),
        drop_caches: w.drop_caches,
        collective: collective_options,
        spans: WorkloadSpans {
            pairs: match &w.ranks {
                Some(r) if is_collective => r.span(),
                _ => w.pairs.span(),
            },
            amount: match (&w.exchanges, &w.iterations, &w.duration) {
                (Some(e), _, _) => e.span(),
                (None, Some(i), _) => i.span(),
                (None, None, Some(d)) => d.span(),
                (None, None, None) => w.sizes.span(),
            },
        },
    }
}

/// The message sizes, a range expanded: at most [`MAX_SIZES`] of them, each at least 1 byte
/// (the upper limit depends on the pattern: [`check_size_limits`]).
fn sizes(w: &WorkloadSpec, errors: &mut ErrorList) -> Vec<u64> {
    let sizes = match w.sizes.get_ref() {
        Sizes::List(v) => v.iter().map(|s| s.0).collect(),
        Sizes::Range(r) => match expand_range(r, size_limit(w)) {
            Ok(v) => v,
            Err(m) => {
                errors.push(w.sizes.span(), m);
                return Vec::new();
            }
        },
    };
    if sizes.is_empty() {
        errors.push(w.sizes.span(), "`sizes` is empty");
    }
    if sizes.len() > MAX_SIZES {
        errors.push(
            w.sizes.span(),
            format!("{} sizes; at most {MAX_SIZES} are allowed", sizes.len()),
        );
        return Vec::new();
    }
    if sizes.contains(&0) {
        errors.push(
            w.sizes.span(),
            "size 0 is out of range: a message has at least 1 byte",
        );
    }
    sizes
}

/// The largest message (or file) the worker takes for this workload's pattern and protocol.
fn size_limit(w: &WorkloadSpec) -> (u64, &'static str) {
    if w.pattern() == Pattern::Filecopy {
        (MAX_FILE, "the largest file `filecopy` sends")
    } else if w.protocol == Protocol::Udp {
        (MAX_UDP_SIZE, "the largest UDP payload")
    } else {
        (MAX_SIZE, "the largest message the worker accepts")
    }
}

/// Every size within the worker's limits for the pattern: at most [`size_limit`], a pipeline's
/// depth × size within what it keeps in flight, a load message big enough for its header.
fn check_size_limits(w: &WorkloadSpec, sizes: &[u64], errors: &mut ErrorList) {
    let Some(&largest) = sizes.iter().max() else {
        return;
    };
    let (limit, what) = size_limit(w);
    if largest > limit {
        errors.push(
            w.sizes.span(),
            format!(
                "size {} is above {}, {what}",
                ByteSize(largest),
                ByteSize(limit)
            ),
        );
    }
    if let Some(d) = &w.depth
        && w.pattern() == Pattern::Pipeline
        && u64::from(*d.get_ref()).saturating_mul(largest) > MAX_PIPELINE_BYTES
    {
        errors.push(
            d.span(),
            format!(
                "depth {} × size {} exceeds the {} a pipeline may keep in flight",
                d.get_ref(),
                ByteSize(largest),
                ByteSize(MAX_PIPELINE_BYTES)
            ),
        );
    }
    let smallest = sizes.iter().min().copied().unwrap_or(0);
    if w.pattern() == Pattern::Load && smallest < LOAD_HEADER as u64 {
        errors.push(
            w.sizes.span(),
            format!("size {smallest} is below {LOAD_HEADER} bytes, the header every load message carries"),
        );
    }
}

/// The pair counts to sweep, each at least 1.
fn pair_counts(w: &WorkloadSpec, errors: &mut ErrorList) -> Vec<u32> {
    let pairs = w.pairs.get_ref().0.clone();
    if pairs.is_empty() || pairs.contains(&0) {
        errors.push(w.pairs.span(), "`pairs` must list counts of at least 1");
    }
    if pairs.len() > MAX_PAIR_COUNTS {
        errors.push(
            w.pairs.span(),
            format!(
                "{} pair counts; at most {MAX_PAIR_COUNTS} are allowed",
                pairs.len()
            ),
        );
        return Vec::new();
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
        check_pairs_fit(w, pairs, topologies, errors);
        return (placements, Vec::new());
    };
    if placements.iter().any(|p| *p != PlacementKind::Explicit) && w.placement.span() != (0..0) {
        errors.push(
            w.placement.span(),
            "with `explicit_pairs`, placement must be [\"explicit\"] (or left out)",
        );
    }
    if list.get_ref().len() > MAX_PAIR_COUNTS {
        errors.push(
            list.span(),
            format!(
                "{} explicit pairs; at most {MAX_PAIR_COUNTS} are allowed",
                list.get_ref().len()
            ),
        );
        return (vec![PlacementKind::Explicit], Vec::new());
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

/// Each node is in at most one pair, so no count may exceed half the nodes of the smallest
/// topology.
fn check_pairs_fit(
    w: &WorkloadSpec,
    pairs: &[u32],
    topologies: &[Topology],
    errors: &mut ErrorList,
) {
    let (Some(&most), Some(smallest)) = (
        pairs.iter().max(),
        topologies.iter().min_by_key(|t| t.nodes.len()),
    ) else {
        return;
    };
    let fit = smallest.nodes.len() / 2;
    if most as usize > fit {
        errors.push_with_help(
            w.pairs.span(),
            format!(
                "`pairs` asks for {most} pairs but topology `{}` has {} nodes, and each node \
                 is in at most one pair",
                smallest.name,
                smallest.nodes.len()
            ),
            Some(format!("ask for at most {fit} pairs")),
        );
    }
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

fn serialize_secs_opt<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// Patterns whose runs can be held to a minimum time: their client ends a run by a count
/// of lock-step messages or blocks.
const MIN_DURATION_PATTERNS: [Pattern; 3] = [Pattern::Token, Pattern::Pingpong, Pattern::Stream];

/// `min_duration`: with `exchanges`, for a pattern that can honour it, within
/// [`MAX_DURATION`].
fn min_duration(w: &WorkloadSpec, errors: &mut ErrorList) -> Option<Duration> {
    let d = w.min_duration.as_ref()?;
    let length = d.get_ref().0;
    if w.exchanges.is_none() {
        errors.push(
            d.span(),
            "`min_duration` goes with `exchanges` (a run of a `duration` already lasts that long)",
        );
    } else if !MIN_DURATION_PATTERNS.contains(&w.pattern()) {
        errors.push(
            d.span(),
            format!(
                "`min_duration` applies to patterns \"token\", \"pingpong\" and \"stream\", not \"{}\"",
                w.pattern().as_str()
            ),
        );
    } else if length.is_zero() || length > MAX_DURATION {
        errors.push(
            d.span(),
            format!(
                "`min_duration` must be longer than zero and at most {}, got {}",
                humantime::format_duration(MAX_DURATION),
                humantime::format_duration(length)
            ),
        );
    } else {
        return Some(length);
    }
    None
}

/// How much traffic one run carries: `exchanges` or `duration`, exactly one of them, within
/// [`MAX_EXCHANGES`] (warm-up included) or [`MAX_DURATION`].
fn amount(w: &WorkloadSpec, errors: &mut ErrorList) -> Amount {
    match (&w.exchanges, &w.duration) {
        (Some(e), None) => {
            let n = *e.get_ref();
            let warmup = *w.warmup.get_ref();
            if !(1..=MAX_EXCHANGES).contains(&n) {
                errors.push(
                    e.span(),
                    format!("`exchanges` must be from 1 to {MAX_EXCHANGES}, got {n}"),
                );
            } else if n.saturating_add(warmup) > MAX_EXCHANGES {
                errors.push(
                    w.warmup.span(),
                    format!(
                        "`warmup` {warmup} and `exchanges` {n} come to more than {MAX_EXCHANGES} \
                         messages per run"
                    ),
                );
            }
            Amount::Exchanges(n.clamp(1, MAX_EXCHANGES))
        }
        (None, Some(d)) => {
            let length = d.get_ref().0;
            if length.is_zero() {
                errors.push(d.span(), "`duration` must be longer than zero");
            } else if length > MAX_DURATION {
                errors.push(
                    d.span(),
                    format!(
                        "`duration` must be at most {}, got {}",
                        humantime::format_duration(MAX_DURATION),
                        humantime::format_duration(length)
                    ),
                );
            }
            Amount::Duration(length.min(MAX_DURATION))
        }
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
        && w.pattern() != Pattern::Pipeline
    {
        errors.push(
            d.span(),
            format!(
                "`depth` applies to pattern \"pipeline\", not \"{}\"",
                w.pattern().as_str()
            ),
        );
    }
    if let Some(d) = &w.depth
        && !(1..=MAX_DEPTH).contains(d.get_ref())
    {
        errors.push(
            d.span(),
            format!("`depth` must be from 1 to {MAX_DEPTH}, got {}", d.get_ref()),
        );
    }
    if let Some(r) = &w.rate
        && *r.get_ref() < MIN_RATE
    {
        errors.push(
            r.span(),
            format!(
                "rate {} is below the {MIN_RATE} floor: at that rate one full-size frame takes \
                 longer than the worker's 10 s socket timeout",
                r.get_ref()
            ),
        );
    }
    if let Some(r) = &w.rate
        && w.pattern() != Pattern::Load
    {
        errors.push(
            r.span(),
            format!(
                "`rate` applies to pattern \"load\", not \"{}\"",
                w.pattern().as_str()
            ),
        );
    }
    if w.pattern() == Pattern::Load && w.rate.is_none() {
        errors.push(
            w.sizes.span(),
            "pattern \"load\" needs an offered `rate`, e.g. rate = \"5mbit\"",
        );
    }
    if w.protocol == Protocol::Mptcp {
        errors.push_with_help(
            w.sizes.span(),
            "a workload's protocol is \"tcp\" or \"udp\"; Multipath TCP is a configuration",
            Some(
                "sweep it beside the others: [multipath] modes = [\"mptcp\", \"bond:balance-rr\", \"none\"]"
                    .into(),
            ),
        );
    }
    // A collective says so itself (`collective::options`).
    if w.protocol == Protocol::Udp
        && !w.pattern().is_collective()
        && !matches!(
            w.pattern(),
            Pattern::Pingpong | Pattern::Stream | Pattern::Load
        )
    {
        errors.push(
            w.sizes.span(),
            format!("pattern \"{}\" runs over TCP only", w.pattern().as_str()),
        );
    }
}

/// A size range as the sizes it stands for: NetPIPE's schedule, or powers of `factor`. Its
/// ends are checked against `limit` first, so that what is expanded is bounded.
fn expand_range(r: &SizeRange, (limit, what): (u64, &str)) -> Result<Vec<u64>, String> {
    let (from, to) = (r.from.0, r.to.0);
    if from == 0 || from > to {
        return Err(format!(
            "size range from {from} to {to} is empty: expected 1 <= from <= to"
        ));
    }
    if to > limit {
        return Err(format!(
            "size range up to {} goes above {}, {what}",
            ByteSize(to),
            ByteSize(limit)
        ));
    }
    if let Some(p) = r.perturbation
        && p >= from
    {
        return Err(format!(
            "`perturbation` {p} must be below the range's start ({from}): sizes are varied by \
             ± perturbation"
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
