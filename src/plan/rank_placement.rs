//! Where a collective's ranks go: one rank per node, rank r on the r-th node of the topology
//! ("row-major": on a 4×4 mesh whose nodes are listed row by row, a 4×4 process grid lies on
//! the node grid), on nodes in an order drawn from the experiment's seed ("random": the same
//! order on every topology, so they are compared on the same placement), or on nodes named
//! one by one ("explicit"). Each rank reaches each other rank by the shortest path the routes
//! give, at the address that path ends on.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::spec::NodeName;
use crate::spec::experiment::PlacementKind;
use crate::topology::Topology;
use crate::topology::forwarding::Forwarding;

use super::placement::{Placement, PlacementError, PlannedRank};

/// Places `count` ranks of `kind` on `t`; `seed` orders "random", `nodes` are "explicit"'s.
pub fn place_ranks(
    t: &Topology,
    kind: PlacementKind,
    count: usize,
    seed: u64,
    nodes: &[NodeName],
) -> Result<Placement, PlacementError> {
    let fail = |why: String| PlacementError::Ranks {
        topology: t.name.clone(),
        why,
    };
    let chosen: Vec<NodeName> = match kind {
        PlacementKind::RowMajor => t.nodes.iter().take(count).map(|n| n.name.clone()).collect(),
        PlacementKind::Random => {
            let mut all: Vec<NodeName> = t.nodes.iter().map(|n| n.name.clone()).collect();
            all.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
            all.truncate(count);
            all
        }
        PlacementKind::Explicit => nodes.iter().take(count).cloned().collect(),
        PlacementKind::LocalWire | PlacementKind::RemoteWire => {
            return Err(fail(format!(
                "\"{}\" places pairs, not ranks",
                kind.as_str()
            )));
        }
    };
    if chosen.len() < count {
        return Err(fail(format!(
            "{count} ranks, one per node, but only {} nodes to put them on",
            chosen.len()
        )));
    }
    let f = Forwarding::new(t);
    let index: Vec<usize> = chosen
        .iter()
        .map(|n| f.node_index(n).ok_or_else(|| fail(format!("no node {n}"))))
        .collect::<Result<_, _>>()?;
    let mut ranks = Vec::with_capacity(count);
    for (i, &from) in index.iter().enumerate() {
        let mut paths = Vec::with_capacity(count);
        for (j, &to) in index.iter().enumerate() {
            if i == j {
                paths.push(None);
                continue;
            }
            let path = f
                .options(from, to)
                .into_iter()
                .next()
                .ok_or_else(|| fail(format!("no path from {} to {}", chosen[i], chosen[j])))?;
            paths.push(Some(path));
        }
        ranks.push(PlannedRank {
            node: chosen[i].clone(),
            targets: paths.iter().map(|p| p.as_ref().map(|p| p.target)).collect(),
            paths,
        });
    }
    Ok(Placement {
        kind,
        pairs: Vec::new(),
        max_segment_load: 0,
        ranks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mesh() -> Topology {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("topologies/routed-mesh-4x4.toml");
        crate::topology::load(&path).expect("a shipped topology loads")
    }

    #[test]
    fn row_major_ranks_lie_on_the_nodes_in_order_and_reach_each_other_at_their_addresses() {
        let t = mesh();
        let p = place_ranks(&t, PlacementKind::RowMajor, 16, 1, &[]).expect("placed");
        let nodes: Vec<&NodeName> = p.ranks.iter().map(|r| &r.node).collect();
        let topology: Vec<&NodeName> = t.nodes.iter().map(|n| &n.name).collect();
        assert_eq!(nodes, topology);
        for (i, r) in p.ranks.iter().enumerate() {
            assert_eq!(r.targets[i], None);
            for (j, target) in r.targets.iter().enumerate().filter(|(j, _)| *j != i) {
                let owner = &t.nodes[j];
                let target = target.expect("a target");
                assert!(
                    owner.addresses().contains(&target),
                    "rank {i} reaches rank {j} at {target}, not one of {}'s addresses",
                    owner.name
                );
            }
        }
    }

    #[test]
    fn random_placements_follow_the_seed_and_explicit_ones_the_list() {
        let t = mesh();
        let order = |seed| -> Vec<NodeName> {
            place_ranks(&t, PlacementKind::Random, 8, seed, &[])
                .expect("placed")
                .ranks
                .into_iter()
                .map(|r| r.node)
                .collect()
        };
        assert_eq!(order(7), order(7));
        assert_ne!(order(7), order(8));
        let named: Vec<NodeName> = ["n16", "n01"].iter().map(|n| n.parse().unwrap()).collect();
        let p = place_ranks(&t, PlacementKind::Explicit, 2, 1, &named).expect("placed");
        assert_eq!(p.ranks[0].node, named[0]);
        assert!(place_ranks(&t, PlacementKind::Explicit, 3, 1, &named).is_err());
        assert!(place_ranks(&t, PlacementKind::RowMajor, 17, 1, &[]).is_err());
    }
}
