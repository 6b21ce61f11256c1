//! Pair placement: which nodes talk to which in a point. Each node is in at most one pair;
//! local-wire pairs share a segment, remote-wire pairs share none; pairs are spread so that
//! the busiest segment carries as few pairs as the topology allows.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;

use serde::Serialize;

use crate::spec::experiment::PlacementKind;
use crate::spec::{Name, NodeName};
use crate::topology::Topology;
use crate::topology::forwarding::Forwarding;
use crate::topology::paths::Path;

/// One producer/consumer pair and the path its traffic takes.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedPair {
    pub client: NodeName,
    pub server: NodeName,
    pub path: Path,
}

/// One rank: its node, and the path to every other rank.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedRank {
    pub node: NodeName,
    /// Per rank, in rank order, the address this rank reaches it at (none at its own place).
    pub targets: Vec<Option<std::net::Ipv4Addr>>,
    /// Per rank, the path there (none at its own place). Left out of the plan's JSON: the
    /// steps' summary in the rendered plan says what they load.
    #[serde(skip)]
    pub paths: Vec<Option<Path>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Placement {
    pub kind: PlacementKind,
    pub pairs: Vec<PlannedPair>,
    /// Pairs whose traffic crosses the busiest segment.
    pub max_segment_load: usize,
    /// A collective's ranks, in rank order ([`super::rank_placement`]); empty for pairs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<PlannedRank>,
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
    /// A placed pair whose ECMP routes do not carry it (a fault of the computed routes).
    #[error("{topology}: ECMP routes do not carry {client} -> {server}: {why}")]
    Unreachable {
        topology: Name,
        client: NodeName,
        server: NodeName,
        why: String,
    },
    #[error("{topology}: cannot place the ranks: {why}")]
    Ranks { topology: Name, why: String },
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

/// Above this many node pairs, the search's starting load limit comes from the pair kind
/// instead of from every pair's paths (see [`Pairs::min_segments`]).
const LIST_ALL_PAIRS_UP_TO: usize = 50_000;

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
    let mut pairs = Pairs::new(t, local);
    if !pairs.any() {
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
    match least_loaded(&mut pairs, count) {
        Some((chosen, max_segment_load)) => Ok(Placement {
            kind,
            pairs: chosen
                .into_iter()
                .map(|c| PlannedPair {
                    client: t.nodes[c.client].name.clone(),
                    server: t.nodes[c.server].name.clone(),
                    path: pairs.path(c),
                })
                .collect(),
            max_segment_load,
            ranks: Vec::new(),
        }),
        None => Err(PlacementError::TooMany {
            topology: t.name.clone(),
            kind: kind.as_str(),
            wanted: count,
            possible: max_disjoint(&mut pairs),
        }),
    }
}

/// The pairs of one kind (local-wire or remote-wire), in node order, looked at on demand: a
/// placement on a large mesh looks at a few of its millions of pairs, so none are listed up
/// front. A pair is a candidate when it is of the kind and has a path.
struct Pairs<'t> {
    forwarding: Forwarding<'t>,
    local: bool,
    /// Each node's segments, as indices.
    segments_of: Vec<Vec<usize>>,
    /// Pairs looked at so far: their shortest path options as the segments each crosses,
    /// or None for a pair that is no candidate.
    seen: HashMap<(usize, usize), Option<SegmentOptions>>,
}

/// A pair's path options.
type SegmentOptions = Rc<[PathOption]>;

/// One way a pair can talk: to which of the server's addresses, and the segments (indices)
/// its round trip crosses.
#[derive(Debug)]
struct PathOption {
    target: std::net::Ipv4Addr,
    segments: Vec<usize>,
}

/// A pair the search chose: client and server node, and which path option it uses.
#[derive(Debug, Clone, Copy)]
struct Chosen {
    client: usize,
    server: usize,
    option: usize,
}

impl<'t> Pairs<'t> {
    fn new(t: &'t Topology, local: bool) -> Self {
        let forwarding = Forwarding::new(t);
        let segments_of = t
            .nodes
            .iter()
            .map(|n| {
                let mut segs: Vec<usize> = n
                    .interfaces
                    .iter()
                    .filter_map(|i| forwarding.segment_index(&i.segment))
                    .collect();
                segs.sort_unstable();
                segs.dedup();
                segs
            })
            .collect();
        Pairs {
            forwarding,
            local,
            segments_of,
            seen: HashMap::default(),
        }
    }

    fn nodes(&self) -> usize {
        self.segments_of.len()
    }

    fn topology(&self) -> &'t Topology {
        self.forwarding.topology()
    }

    /// Segment indices two nodes share.
    fn shared(&self, a: usize, b: usize) -> Vec<usize> {
        let (sa, sb) = (&self.segments_of[a], &self.segments_of[b]);
        sa.iter().copied().filter(|s| sb.contains(s)).collect()
    }

    fn of_kind(&self, a: usize, b: usize) -> bool {
        let sb = &self.segments_of[b];
        self.segments_of[a].iter().any(|s| sb.contains(s)) == self.local
    }

    /// The shortest path options of pair `a < b` (one per address of `b`, by address); a
    /// local-wire pair keeps only those over the wire it shares, wherever the topology lets it
    /// choose. None if it is no candidate.
    fn options(&mut self, a: usize, b: usize) -> Option<SegmentOptions> {
        // The kind first: it costs two short slices, and most pairs of a large mesh are not
        // of the kind asked for, so they never enter the cache.
        if !self.of_kind(a, b) {
            return None;
        }
        if let Some(known) = self.seen.get(&(a, b)) {
            return known.clone();
        }
        let options = Some(self.shortest_options(a, b));
        let options = options.filter(|o| !o.is_empty()).map(Rc::from);
        self.seen.insert((a, b), options.clone());
        options
    }

    fn shortest_options(&self, a: usize, b: usize) -> Vec<PathOption> {
        let mut options: Vec<(usize, PathOption)> = self.topology().nodes[b]
            .addresses()
            .into_iter()
            .filter_map(|target| {
                let (hops, segments) = self.forwarding.round_trip_segments(a, target)?;
                Some((hops, PathOption { target, segments }))
            })
            .collect();
        options.sort_by_key(|(hops, o)| (*hops, o.target));
        let shortest = options.first().map_or(0, |(hops, _)| *hops);
        let mut options: Vec<PathOption> = options
            .into_iter()
            .filter(|(hops, _)| *hops == shortest)
            .map(|(_, o)| o)
            .collect();
        if self.local {
            let shared = self.shared(a, b);
            let over_shared = |o: &PathOption| o.segments.iter().all(|s| shared.contains(s));
            if options.iter().any(over_shared) {
                options.retain(over_shared);
            }
        }
        options
    }

    /// The full path of a chosen pair's option.
    fn path(&mut self, c: Chosen) -> Path {
        let target = self
            .options(c.client, c.server)
            .expect("a chosen pair is a candidate")[c.option]
            .target;
        self.forwarding
            .round_trip(c.client, target)
            .expect("a candidate's path was traced")
    }

    /// Whether any pair is a candidate.
    fn any(&mut self) -> bool {
        let n = self.nodes();
        (0..n).any(|a| (a + 1..n).any(|b| self.options(a, b).is_some()))
    }

    /// The fewest segments any candidate's path crosses, which bounds the busiest segment's
    /// load from below. Exact where the topology has few enough pairs to look at them all;
    /// beyond that, what the kind guarantees: a remote-wire pair's path leaves the sender on
    /// one segment and reaches the receiver on another, a local-wire pair's crosses one.
    fn min_segments(&mut self) -> usize {
        let n = self.nodes();
        if n * n.saturating_sub(1) / 2 > LIST_ALL_PAIRS_UP_TO {
            return if self.local { 1 } else { 2 };
        }
        let mut min = None::<usize>;
        for a in 0..n {
            for b in a + 1..n {
                if let Some(options) = self.options(a, b) {
                    let fewest = options.iter().map(|o| o.segments.len()).min().unwrap_or(1);
                    min = Some(min.map_or(fewest, |m| m.min(fewest)));
                }
            }
        }
        min.unwrap_or(1)
    }
}

/// `count` candidate pairs, no node in two, such that the busiest segment carries as few
/// pairs as the search finds: each load limit in turn from the lowest the segments allow.
/// Gives the pairs (with the path option each uses) and the busiest segment's load; None
/// when no limit admits `count` pairs.
fn least_loaded(pairs: &mut Pairs, count: usize) -> Option<(Vec<Chosen>, usize)> {
    let segments = pairs.topology().segments.len();
    let nodes = pairs.nodes();
    let lower = (count * pairs.min_segments())
        .div_ceil(segments.max(1))
        .max(1);
    for limit in lower..=count.max(1) {
        let mut s = Search {
            pairs: &mut *pairs,
            used: vec![false; nodes],
            load: vec![0; segments],
            chosen: Vec::new(),
            limit,
            steps: 0,
        };
        if s.run(0, count) {
            let max_segment_load = s.load.iter().copied().max().unwrap_or(0);
            return Some((s.chosen, max_segment_load));
        }
    }
    None
}

struct Search<'p, 't> {
    pairs: &'p mut Pairs<'t>,
    used: Vec<bool>,
    load: Vec<usize>,
    chosen: Vec<Chosen>,
    limit: usize,
    steps: usize,
}

impl Search<'_, '_> {
    /// Depth-first over the candidates in node order from first node `from`, choosing for each
    /// pair the path option that keeps segment loads lowest. Nodes already in a pair are
    /// skipped without a step: on a large mesh most pairs have one.
    fn run(&mut self, from: usize, remaining: usize) -> bool {
        if remaining == 0 {
            return true;
        }
        let n = self.used.len();
        for a in from..n {
            // Each pair takes a first node of its own: too few left, no way to succeed.
            if n - a < remaining {
                return false;
            }
            if self.used[a] {
                continue;
            }
            for b in a + 1..n {
                if self.used[b] {
                    continue;
                }
                let Some(options) = self.pairs.options(a, b) else {
                    continue;
                };
                self.steps += 1;
                if self.steps > SEARCH_BUDGET {
                    return false;
                }
                let best = options
                    .iter()
                    .enumerate()
                    .filter(|(_, o)| o.segments.iter().all(|&s| self.load[s] < self.limit))
                    .min_by_key(|(_, o)| {
                        (
                            o.segments.iter().map(|&s| self.load[s]).max(),
                            o.segments.iter().map(|&s| self.load[s]).sum::<usize>(),
                        )
                    });
                let Some((option, o)) = best else { continue };
                let segs = &o.segments;
                self.used[a] = true;
                self.used[b] = true;
                segs.iter().for_each(|&s| self.load[s] += 1);
                self.chosen.push(Chosen {
                    client: a,
                    server: b,
                    option,
                });
                // Every later pair with `a` first is skipped (`a` is used): go to the next.
                if self.run(a + 1, remaining - 1) {
                    return true;
                }
                self.chosen.pop();
                segs.iter().for_each(|&s| self.load[s] -= 1);
                self.used[a] = false;
                self.used[b] = false;
            }
        }
        false
    }
}

/// The largest number of node-disjoint candidate pairs: a greedy matching, refined by a
/// bounded search for larger ones.
fn max_disjoint(pairs: &mut Pairs) -> usize {
    let n = pairs.nodes();
    let mut used = vec![false; n];
    let greedy = disjoint(pairs, 0, n / 2, &mut used, &mut 0, true);
    let mut steps = 0;
    for k in (greedy + 1..=n / 2).rev() {
        let mut used = vec![false; n];
        if disjoint(pairs, 0, k, &mut used, &mut steps, false) == k {
            return k;
        }
        if steps > 4 * SEARCH_BUDGET {
            break;
        }
    }
    greedy
}

/// Picks up to `k` disjoint candidates from node `from` on, depth-first (or greedily, never
/// undoing a pick); gives how many it placed, `k` on success.
fn disjoint(
    pairs: &mut Pairs,
    from: usize,
    k: usize,
    used: &mut [bool],
    steps: &mut usize,
    greedy: bool,
) -> usize {
    if k == 0 {
        return 0;
    }
    let n = used.len();
    let mut best = 0;
    for a in from..n {
        if used[a] || n - a < 2 {
            continue;
        }
        for b in a + 1..n {
            if used[b] || pairs.options(a, b).is_none() {
                continue;
            }
            *steps += 1;
            if !greedy && *steps > SEARCH_BUDGET * 4 {
                return best;
            }
            used[a] = true;
            used[b] = true;
            let placed = 1 + disjoint(pairs, a + 1, k - 1, used, steps, greedy);
            if placed == k || greedy {
                return placed;
            }
            best = best.max(placed);
            used[a] = false;
            used[b] = false;
        }
    }
    best
}

/// `placement`'s pairs on `ecmp`, a topology routed with ECMP: each server reached at its
/// node address, over every way the multipath routes give, every branch checked as the path
/// checker checks it. The pairs are those placed on the same wires with one shortest path
/// each, so that the two routings are measured on the same nodes.
pub fn to_node_addresses(
    ecmp: &Topology,
    placement: Placement,
) -> Result<Placement, PlacementError> {
    let f = Forwarding::new(ecmp);
    let mut load: BTreeMap<Name, usize> = BTreeMap::new();
    let mut pairs = Vec::with_capacity(placement.pairs.len());
    for pair in placement.pairs {
        let unreachable = |why: String| PlacementError::Unreachable {
            topology: ecmp.name.clone(),
            client: pair.client.clone(),
            server: pair.server.clone(),
            why,
        };
        let (Some(client), Some(server)) = (
            f.node_index(&pair.client),
            ecmp.node(&pair.server).and_then(|n| n.node_address()),
        ) else {
            return Err(unreachable("no ECMP node address".into()));
        };
        let path = f
            .round_trip(client, server)
            .map_err(|p| unreachable(p.message))?;
        for s in &path.segments {
            *load.entry(s.clone()).or_default() += 1;
        }
        pairs.push(PlannedPair { path, ..pair });
    }
    Ok(Placement {
        kind: placement.kind,
        pairs,
        max_segment_load: load.values().copied().max().unwrap_or(0),
        ranks: Vec::new(),
    })
}

fn place_explicit(
    t: &Topology,
    pairs: &[(NodeName, NodeName)],
) -> Result<Placement, PlacementError> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    let mut load: BTreeMap<Name, usize> = BTreeMap::new();
    let f = Forwarding::new(t);
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
        let path = f
            .node_index(a)
            .zip(f.node_index(b))
            .and_then(|(a, b)| f.options(a, b).into_iter().next())
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
        ranks: Vec::new(),
    })
}
