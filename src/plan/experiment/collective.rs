//! A collective workload's own keys resolved (`halo`, `alltoall`, `allreduce`, `bcast`): its
//! rank counts in place of pair counts, where the ranks go, how many iterations, the
//! algorithm and the halo's grid. The keys of the other patterns are refused here, and these
//! keys on the other patterns.

use serde::Serialize;

use crate::spec::experiment::{Pattern, PlacementKind, Protocol, WorkloadSpec};
use crate::spec::limits::{MAX_DURATION, MAX_EXCHANGES, MAX_PAIR_COUNTS};
use crate::spec::{NodeName, best_match};
use crate::topology::Topology;
use orchestrate_worker::patterns::halo::Grid;

use super::amount::Amount;
use super::errors::ErrorList;

/// Timed iterations when neither `iterations` nor `duration` is given (the worker's default).
const DEFAULT_ITERATIONS: u64 = orchestrate_worker::ranks::args::DEFAULT_ITERATIONS;

/// What a collective workload runs, beside what every workload has.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CollectiveOptions {
    /// The algorithm, as the worker and Open MPI name it.
    pub algorithm: &'static str,
    /// With placement "explicit": each rank's node, in rank order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rank_nodes: Vec<NodeName>,
    /// `halo`: the process grid, when given.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "grid")]
    pub grid: Option<Grid>,
    /// `halo`: edges wrapped.
    pub periodic: bool,
    /// `bcast`: the root rank.
    pub root: u32,
    /// Who runs the ranks.
    pub implementation: Implementation,
}

/// Who runs a collective's ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Implementation {
    /// The tool's worker: one process per rank, started through the nodes' agents.
    Worker,
    /// Open MPI's own collectives (through mpi4py), started with `mpirun` over the cluster's
    /// SSH: the peer the worker's figures are checked against.
    OpenMpi,
}

impl Implementation {
    const ALL: [Implementation; 2] = [Implementation::Worker, Implementation::OpenMpi];

    pub fn as_str(self) -> &'static str {
        match self {
            Implementation::Worker => "worker",
            Implementation::OpenMpi => "open-mpi",
        }
    }
}

impl CollectiveOptions {
    /// What runs among `ranks` ranks, as the plan and the report name it: `alltoall
    /// pairwise`, `bcast binomial from 0`, `halo 4x4 open`.
    pub fn label(&self, pattern: Pattern, ranks: u32) -> String {
        let label = self.algorithm_label(pattern, ranks);
        match self.implementation {
            Implementation::Worker => label,
            other => format!("{label} ({})", other.as_str()),
        }
    }

    fn algorithm_label(&self, pattern: Pattern, ranks: u32) -> String {
        match pattern {
            Pattern::Halo => {
                let grid = self.grid.unwrap_or_else(|| Grid::square(ranks as usize));
                let edges = if self.periodic { "periodic" } else { "open" };
                format!("halo {grid} {edges}")
            }
            Pattern::Bcast => format!("bcast {} from {}", self.algorithm, self.root),
            p => format!("{} {}", p.as_str(), self.algorithm),
        }
    }
}

fn grid<S: serde::Serializer>(g: &Option<Grid>, s: S) -> Result<S::Ok, S::Error> {
    match g {
        Some(g) => s.serialize_some(&g.to_string()),
        None => s.serialize_none(),
    }
}

/// The algorithms each collective runs, the first its default.
fn algorithms(p: Pattern) -> &'static [&'static str] {
    match p {
        Pattern::Allreduce => &["ring", "recursive-doubling"],
        Pattern::Alltoall => &["pairwise", "linear"],
        Pattern::Bcast => &["binomial"],
        Pattern::Halo => &["nonblocking"],
        _ => &[],
    }
}

/// The rank counts of collective `w`: each at least 2 and at most the nodes of the smallest
/// topology (one rank per node).
pub(super) fn rank_counts(
    w: &WorkloadSpec,
    topologies: &[Topology],
    errors: &mut ErrorList,
) -> Vec<u32> {
    if w.pairs.span() != (0..0) {
        errors.push(
            w.pairs.span(),
            format!(
                "pattern \"{}\" is a collective: give `ranks`, not `pairs`",
                w.pattern().as_str()
            ),
        );
    }
    let Some(ranks) = &w.ranks else {
        errors.push(
            w.pattern.span(),
            format!(
                "pattern \"{}\" is a collective: say how many ranks, e.g. `ranks = 16`",
                w.pattern().as_str()
            ),
        );
        return Vec::new();
    };
    let counts = ranks.get_ref().0.clone();
    if counts.is_empty() || counts.iter().any(|&n| n < 2) {
        errors.push(ranks.span(), "`ranks` must list counts of at least 2");
    }
    if counts.len() > MAX_PAIR_COUNTS {
        errors.push(
            ranks.span(),
            format!(
                "{} rank counts; at most {MAX_PAIR_COUNTS} are allowed",
                counts.len()
            ),
        );
        return Vec::new();
    }
    if let (Some(&most), Some(smallest)) = (
        counts.iter().max(),
        topologies.iter().min_by_key(|t| t.nodes.len()),
    ) && most as usize > smallest.nodes.len()
    {
        errors.push_with_help(
            ranks.span(),
            format!(
                "`ranks` asks for {most} ranks but topology `{}` has {} nodes, one rank each",
                smallest.name,
                smallest.nodes.len()
            ),
            Some(format!("ask for at most {} ranks", smallest.nodes.len())),
        );
    }
    counts
}

/// Where a collective's ranks go: "row-major" unless the workload says.
pub(super) fn placements(w: &WorkloadSpec, errors: &mut ErrorList) -> Vec<PlacementKind> {
    if let Some(pairs) = &w.explicit_pairs {
        errors.push(
            pairs.span(),
            "`explicit_pairs` places pairs; name a collective's nodes in rank order with \
             `rank_nodes`",
        );
    }
    if w.placement.span() == (0..0) {
        return vec![PlacementKind::RowMajor];
    }
    let kinds = w.placement.get_ref().clone();
    if kinds.is_empty() {
        errors.push(w.placement.span(), "`placement` is empty");
    }
    if let Some(k) = kinds
        .iter()
        .find(|k| !k.places_ranks() && **k != PlacementKind::Explicit)
    {
        errors.push(
            w.placement.span(),
            format!(
                "placement \"{}\" places pairs; a collective's ranks are placed \"row-major\", \
                 \"random\" or \"explicit\"",
                k.as_str()
            ),
        );
    }
    if kinds.contains(&PlacementKind::Explicit) && w.rank_nodes.is_none() {
        errors.push(
            w.placement.span(),
            "placement \"explicit\" needs `rank_nodes = [\"n01\", \"n02\", ...]`, one per rank",
        );
    }
    kinds
}

/// Timed iterations per run, or a duration.
pub(super) fn amount(w: &WorkloadSpec, errors: &mut ErrorList) -> Amount {
    if let Some(e) = &w.exchanges {
        errors.push(
            e.span(),
            "a collective counts `iterations`, not `exchanges`",
        );
    }
    match (&w.iterations, &w.duration) {
        (Some(i), Some(_)) => {
            errors.push(i.span(), "give either `iterations` or `duration`, not both");
            Amount::Exchanges(1)
        }
        (Some(i), None) => {
            let n = *i.get_ref();
            if !(1..=MAX_EXCHANGES).contains(&n) {
                errors.push(
                    i.span(),
                    format!("`iterations` must be from 1 to {MAX_EXCHANGES}, got {n}"),
                );
            }
            Amount::Exchanges(n.clamp(1, MAX_EXCHANGES))
        }
        (None, Some(d)) => {
            let length = d.get_ref().0;
            if length.is_zero() || length > MAX_DURATION {
                errors.push(
                    d.span(),
                    format!(
                        "`duration` must be longer than zero and at most {}",
                        humantime::format_duration(MAX_DURATION)
                    ),
                );
            }
            Amount::Duration(length.min(MAX_DURATION))
        }
        (None, None) => Amount::Exchanges(DEFAULT_ITERATIONS),
    }
}

/// The collective's own options, checked against the pattern, the rank counts and the
/// topologies.
pub(super) fn options(
    w: &WorkloadSpec,
    ranks: &[u32],
    sizes: &[u64],
    topologies: &[Topology],
    errors: &mut ErrorList,
) -> CollectiveOptions {
    let pattern = w.pattern();
    if pattern == Pattern::Allreduce
        && let Some(s) = sizes.iter().find(|&&s| s % 4 != 0)
    {
        errors.push(
            w.sizes.span(),
            format!("an allreduce sums 4-byte floats: size {s} is not a multiple of 4"),
        );
    }
    let known = algorithms(pattern);
    let algorithm = match &w.algorithm {
        None => known[0],
        Some(a) => match known.iter().find(|k| **k == a.get_ref()) {
            Some(k) => k,
            None => {
                let hint = best_match(a.get_ref(), known.iter().copied())
                    .map(|m| format!("did you mean \"{m}\"?"));
                errors.push_with_help(
                    a.span(),
                    format!(
                        "{} runs the algorithm {}, not \"{}\"",
                        pattern.as_str(),
                        quoted(known),
                        a.get_ref()
                    ),
                    hint,
                );
                known[0]
            }
        },
    };
    if w.protocol != Protocol::Tcp {
        errors.push(
            w.pattern.span(),
            "a collective's ranks speak TCP to each other: leave `protocol` out",
        );
    }
    let grid = w
        .grid
        .as_ref()
        .and_then(|g| match g.get_ref().parse::<Grid>() {
            Err(e) => {
                errors.push(g.span(), e);
                None
            }
            Ok(grid) => {
                if pattern != Pattern::Halo {
                    errors.push(g.span(), "`grid` applies to pattern \"halo\"");
                }
                if let Some(n) = ranks.iter().find(|&&n| n as usize != grid.rows * grid.cols) {
                    errors.push(
                        g.span(),
                        format!(
                            "the {grid} grid holds {} ranks, not {n}",
                            grid.rows * grid.cols
                        ),
                    );
                }
                Some(grid)
            }
        });
    if w.periodic && pattern != Pattern::Halo {
        errors.push(w.pattern.span(), "`periodic` applies to pattern \"halo\"");
    }
    let root = match &w.root {
        None => 0,
        Some(r) => {
            if pattern != Pattern::Bcast {
                errors.push(r.span(), "`root` applies to pattern \"bcast\"");
            }
            if let Some(n) = ranks.iter().find(|&&n| *r.get_ref() >= n) {
                errors.push(
                    r.span(),
                    format!("root {} is not among {n} ranks", r.get_ref()),
                );
            }
            *r.get_ref()
        }
    };
    CollectiveOptions {
        algorithm,
        rank_nodes: rank_nodes(w, ranks, topologies, errors),
        grid,
        periodic: w.periodic,
        root,
        implementation: implementation(w, errors),
    }
}

/// `implementation`: the worker unless the workload names Open MPI.
fn implementation(w: &WorkloadSpec, errors: &mut ErrorList) -> Implementation {
    let Some(given) = &w.implementation else {
        return Implementation::Worker;
    };
    let names = Implementation::ALL.map(Implementation::as_str);
    match Implementation::ALL
        .into_iter()
        .find(|i| i.as_str() == given.get_ref())
    {
        Some(i) => i,
        None => {
            let hint = best_match(given.get_ref(), names.iter().copied())
                .map(|m| format!("did you mean \"{m}\"?"));
            errors.push_with_help(
                given.span(),
                format!(
                    "a collective runs on {}, not \"{}\"",
                    quoted(&names),
                    given.get_ref()
                ),
                hint,
            );
            Implementation::Worker
        }
    }
}

/// `rank_nodes`, each a node of every topology, none twice, as many as the most ranks.
fn rank_nodes(
    w: &WorkloadSpec,
    ranks: &[u32],
    topologies: &[Topology],
    errors: &mut ErrorList,
) -> Vec<NodeName> {
    let Some(list) = &w.rank_nodes else {
        return Vec::new();
    };
    let mut nodes: Vec<NodeName> = Vec::new();
    for n in list.get_ref() {
        if nodes.contains(n.get_ref()) {
            errors.push(
                n.span(),
                format!("node {} holds a rank already", n.get_ref()),
            );
            continue;
        }
        if let Some(t) = topologies
            .iter()
            .find(|t| !t.nodes.iter().any(|x| x.name == *n.get_ref()))
        {
            errors.push(
                n.span(),
                format!("topology `{}` has no node {}", t.name, n.get_ref()),
            );
        }
        nodes.push(n.get_ref().clone());
    }
    if let Some(&most) = ranks.iter().max()
        && most as usize > nodes.len()
    {
        errors.push(
            list.span(),
            format!(
                "`ranks` asks for {most} ranks but `rank_nodes` lists {}",
                nodes.len()
            ),
        );
    }
    nodes
}

/// The keys only collectives take, refused on workload `w` of another pattern.
pub(super) fn refuse_on_pairs(w: &WorkloadSpec, errors: &mut ErrorList) {
    let name = w.pattern().as_str();
    let spans = [
        ("ranks", w.ranks.as_ref().map(|r| r.span())),
        ("rank_nodes", w.rank_nodes.as_ref().map(|r| r.span())),
        ("iterations", w.iterations.as_ref().map(|r| r.span())),
        ("algorithm", w.algorithm.as_ref().map(|r| r.span())),
        ("grid", w.grid.as_ref().map(|r| r.span())),
        ("root", w.root.as_ref().map(|r| r.span())),
        (
            "implementation",
            w.implementation.as_ref().map(|r| r.span()),
        ),
    ];
    for (key, span) in spans {
        if let Some(span) = span {
            errors.push(
                span,
                format!("`{key}` applies to the collectives, not to pattern \"{name}\""),
            );
        }
    }
    if w.periodic {
        errors.push(
            w.pattern.span(),
            format!("`periodic` applies to pattern \"halo\", not \"{name}\""),
        );
    }
    if let Some(k) = w.placement.get_ref().iter().find(|k| k.places_ranks()) {
        errors.push(
            w.placement.span(),
            format!(
                "placement \"{}\" places a collective's ranks; pairs are placed \"local-wire\", \
                 \"remote-wire\" or \"explicit\"",
                k.as_str()
            ),
        );
    }
}

fn quoted(names: &[&str]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    q.join(" or ")
}
