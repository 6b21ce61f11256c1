//! Pair placement: which nodes talk to which in a point. Each node is in at most one pair;
//! local-wire pairs share a segment, remote-wire pairs share none; pairs are spread so that
//! the busiest segment carries as few pairs as the topology allows.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::spec::experiment::PlacementKind;
use crate::spec::{Name, NodeName};
use crate::topology::Topology;
use crate::topology::paths::{self, Path};

/// One producer/consumer pair and the path its traffic takes.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedPair {
    pub client: NodeName,
    pub server: NodeName,
    pub path: Path,
}

#[derive(Debug, Clone, Serialize)]
pub struct Placement {
    pub kind: PlacementKind,
    pub pairs: Vec<PlannedPair>,
    /// Pairs whose traffic crosses the busiest segment.
    pub max_segment_load: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    /// No pair of this kind exists at all (e.g. remote-wire on a single bus).
    #[error("{topology}: no two nodes are {kind} ({why})")]
    NotApplicable {
        topology: Name,
        kind: &'static str,
        why: &'static str,
    },
    #[error(
        "{topology}: cannot place {wanted} {kind} pairs with each node in at most one pair; at most {possible} fit"
    )]
    TooMany {
        topology: Name,
        kind: &'static str,
        wanted: usize,
        possible: usize,
    },
    #[error("{topology}: explicit pair {client} -> {server}: {why}")]
    Explicit {
        topology: Name,
        client: NodeName,
        server: NodeName,
        why: String,
    },
}

/// Bound on search steps per load limit; the study's topologies need a few hundred.
const SEARCH_BUDGET: usize = 200_000;

/// Places `count` pairs of `kind` on `t`.
pub fn place(
    t: &Topology,
    kind: PlacementKind,
    count: usize,
    explicit: &[(NodeName, NodeName)],
) -> Result<Placement, PlacementError> {
    if kind == PlacementKind::Explicit {
        return place_explicit(t, &explicit[..count.min(explicit.len())]);
    }
    let local = kind == PlacementKind::LocalWire;
    let candidates = candidates(t, local);
    if candidates.is_empty() {
        let why = if local {
            "no segment has two members"
        } else {
            "every node shares a segment with every other"
        };
        return Err(PlacementError::NotApplicable {
            topology: t.name.clone(),
            kind: kind.as_str(),
            why,
        });
    }
    least_loaded(t, kind, count, &candidates).ok_or_else(|| PlacementError::TooMany {
        topology: t.name.clone(),
        kind: kind.as_str(),
        wanted: count,
        possible: max_disjoint(&candidates, t.nodes.len()),
    })
}

/// Every pair of nodes that is local-wire (or remote-wire), in node order, each with its
/// shortest path options (one per destination address).
fn candidates(t: &Topology, local: bool) -> Vec<Candidate> {
    let mut candidates: Vec<Candidate> = Vec::new();
    for (i, a) in t.nodes.iter().enumerate() {
        for b in &t.nodes[i + 1..] {
            let shared = t.shared_segments(&a.name, &b.name);
            if shared.is_empty() == local {
                continue;
            }
            let options = paths::options(t, &a.name, &b.name);
            let shortest = options.first().map_or(0, Path::hop_count);
            let mut options: Vec<Path> = options
                .into_iter()
                .filter(|p| p.hop_count() == shortest)
                .collect();
            // A local-wire pair talks over the wire it shares, not around through a switch,
            // wherever the topology lets it choose.
            if local
                && options
                    .iter()
                    .any(|p| p.segments.iter().all(|s| shared.contains(s)))
            {
                options.retain(|p| p.segments.iter().all(|s| shared.contains(s)));
            }
            if !options.is_empty() {
                candidates.push(Candidate {
                    nodes: [i, t.node_index(&b.name).expect("exists")],
                    options,
                });
            }
        }
    }
    candidates
}

/// `count` candidate pairs, no node in two, such that the busiest segment carries as few
/// pairs as the search finds: each load limit in turn from the lowest the segments allow.
/// None when no limit admits `count` pairs.
fn least_loaded(
    t: &Topology,
    kind: PlacementKind,
    count: usize,
    candidates: &[Candidate],
) -> Option<Placement> {
    // Each candidate's path options as the indices of the segments they cross.
    let seg_ix: BTreeMap<&Name, usize> = t
        .segments
        .iter()
        .enumerate()
        .map(|(i, s)| (&s.name, i))
        .collect();
    let cand: Vec<Vec<Vec<usize>>> = candidates
        .iter()
        .map(|c| {
            c.options
                .iter()
                .map(|p| p.segments.iter().map(|s| seg_ix[s]).collect())
                .collect()
        })
        .collect();

    let min_segs = cand.iter().flatten().map(Vec::len).min().unwrap_or(1);
    let lower = (count * min_segs).div_ceil(t.segments.len().max(1)).max(1);
    for limit in lower..=count.max(1) {
        let mut s = Search {
            cand: &cand,
            nodes: candidates,
            used: vec![false; t.nodes.len()],
            load: vec![0; t.segments.len()],
            chosen: Vec::new(),
            limit,
            steps: 0,
        };
        if s.run(0, count) {
            let pairs = s
                .chosen
                .iter()
                .map(|&(ci, oi)| {
                    let c = &candidates[ci];
                    PlannedPair {
                        client: t.nodes[c.nodes[0]].name.clone(),
                        server: t.nodes[c.nodes[1]].name.clone(),
                        path: c.options[oi].clone(),
                    }
                })
                .collect();
            let max_segment_load = s.load.iter().copied().max().unwrap_or(0);
            return Some(Placement {
                kind,
                pairs,
                max_segment_load,
            });
        }
    }
    None
}

struct Candidate {
    nodes: [usize; 2],
    options: Vec<Path>,
}

struct Search<'a> {
    cand: &'a [Vec<Vec<usize>>],
    nodes: &'a [Candidate],
    used: Vec<bool>,
    load: Vec<usize>,
    chosen: Vec<(usize, usize)>,
    limit: usize,
    steps: usize,
}

impl Search<'_> {
    /// Depth-first over candidates from `from`, choosing for each pair the path option that
    /// keeps segment loads lowest.
    fn run(&mut self, from: usize, remaining: usize) -> bool {
        if remaining == 0 {
            return true;
        }
        for ci in from..self.cand.len() {
            self.steps += 1;
            if self.steps > SEARCH_BUDGET || self.cand.len() - ci < remaining {
                return false;
            }
            let [a, b] = self.nodes[ci].nodes;
            if self.used[a] || self.used[b] {
                continue;
            }
            let best = self.cand[ci]
                .iter()
                .enumerate()
                .filter(|(_, segs)| segs.iter().all(|&s| self.load[s] < self.limit))
                .min_by_key(|(_, segs)| {
                    (
                        segs.iter().map(|&s| self.load[s]).max(),
                        segs.iter().map(|&s| self.load[s]).sum::<usize>(),
                    )
                });
            let Some((oi, segs)) = best else { continue };
            self.used[a] = true;
            self.used[b] = true;
            segs.iter().for_each(|&s| self.load[s] += 1);
            self.chosen.push((ci, oi));
            if self.run(ci + 1, remaining - 1) {
                return true;
            }
            self.chosen.pop();
            segs.iter().for_each(|&s| self.load[s] -= 1);
            self.used[a] = false;
            self.used[b] = false;
        }
        false
    }
}

/// The largest number of node-disjoint candidate pairs (greedy lower bound refined by search).
fn max_disjoint(candidates: &[Candidate], n: usize) -> usize {
    let mut best = 0;
    for k in (1..=n / 2).rev() {
        let mut used = vec![false; n];
        if disjoint(candidates, 0, k, &mut used, &mut 0) {
            best = k;
            break;
        }
    }
    best
}

fn disjoint(c: &[Candidate], from: usize, k: usize, used: &mut [bool], steps: &mut usize) -> bool {
    if k == 0 {
        return true;
    }
    for ci in from..c.len() {
        *steps += 1;
        if *steps > SEARCH_BUDGET {
            return false;
        }
        let [a, b] = c[ci].nodes;
        if used[a] || used[b] {
            continue;
        }
        used[a] = true;
        used[b] = true;
        if disjoint(c, ci + 1, k - 1, used, steps) {
            return true;
        }
        used[a] = false;
        used[b] = false;
    }
    false
}

fn place_explicit(
    t: &Topology,
    pairs: &[(NodeName, NodeName)],
) -> Result<Placement, PlacementError> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    let mut load: BTreeMap<Name, usize> = BTreeMap::new();
    for (a, b) in pairs {
        let fail = |why: String| PlacementError::Explicit {
            topology: t.name.clone(),
            client: a.clone(),
            server: b.clone(),
            why,
        };
        for n in [a, b] {
            if !seen.insert(n.clone()) {
                return Err(fail(format!("{n} is already in another pair")));
            }
        }
        let path = paths::options(t, a, b)
            .into_iter()
            .next()
            .ok_or_else(|| fail("no path".into()))?;
        for s in &path.segments {
            *load.entry(s.clone()).or_default() += 1;
        }
        out.push(PlannedPair {
            client: a.clone(),
            server: b.clone(),
            path,
        });
    }
    Ok(Placement {
        kind: PlacementKind::Explicit,
        pairs: out,
        max_segment_load: load.values().copied().max().unwrap_or(0),
    })
}
