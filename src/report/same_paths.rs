//! Which configurations send a cell's traffic the same way: their pairs cross the same wires,
//! hop by hop, in both directions. Two such configurations measure one path twice, so a
//! difference between them is noise or drift, never a property of the topology, and the
//! comparison calls it a tie whatever the numbers say.
//!
//! The report does not know topologies; whoever does (the runner re-plans the run's
//! experiment) implements [`DescribePaths`].

use std::collections::BTreeMap;

use super::data::Config;
use crate::results::PlacementKind;

/// The paths of one placement of one configuration at one pair count, as a signature: equal
/// signatures mean the same pairs over the same hops and the same kinds of wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementPaths {
    pub topology: String,
    pub bonding: String,
    pub placement: PlacementKind,
    pub pairs: u32,
    pub signature: String,
}

/// Gives the paths of a run's placements.
pub trait DescribePaths {
    fn paths(&self) -> Vec<PlacementPaths>;
}

/// Looks up whether two configurations' pairs take the same paths.
#[derive(Debug, Clone, Default)]
pub struct SamePaths {
    signatures: BTreeMap<(String, String, PlacementKind, u32), String>,
}

impl SamePaths {
    pub fn of(source: Option<&dyn DescribePaths>) -> SamePaths {
        let signatures = source
            .map(|s| s.paths())
            .unwrap_or_default()
            .into_iter()
            .map(|p| ((p.topology, p.bonding, p.placement, p.pairs), p.signature))
            .collect();
        SamePaths { signatures }
    }

    /// Whether `a` and `b` at `pairs` pairs send their traffic the same way. Never for
    /// configurations of different runs (comparing runs is the point there) or where either
    /// path is unknown.
    pub fn same(&self, a: &Config, b: &Config, pairs: u32) -> bool {
        if a.run.is_some() || b.run.is_some() {
            return false;
        }
        let of = |c: &Config| {
            self.signatures
                .get(&(c.topology.clone(), c.bonding.clone(), c.placement, pairs))
        };
        matches!((of(a), of(b)), (Some(x), Some(y)) if x == y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Known(Vec<PlacementPaths>);
    impl DescribePaths for Known {
        fn paths(&self) -> Vec<PlacementPaths> {
            self.0.clone()
        }
    }

    fn config(topology: &str, placement: PlacementKind) -> Config {
        Config {
            run: None,
            topology: topology.into(),
            bonding: "none".into(),
            bond_driver: None,
            placement,
        }
    }

    fn paths(topology: &str, placement: PlacementKind, signature: &str) -> PlacementPaths {
        PlacementPaths {
            topology: topology.into(),
            bonding: "none".into(),
            placement,
            pairs: 1,
            signature: signature.into(),
        }
    }

    #[test]
    fn equal_signatures_are_the_same_path_and_nothing_else_is() {
        use PlacementKind::{LocalWire, RemoteWire};
        let known = Known(vec![
            paths("routed", LocalWire, "n01>n02 row1"),
            paths("switched", LocalWire, "n01>n02 row1"),
            paths("routed", RemoteWire, "n01>n06 col1 row2"),
            paths("switched", RemoteWire, "n01>n06 row1 sw row2"),
        ]);
        let same = SamePaths::of(Some(&known));
        let (rl, sl) = (config("routed", LocalWire), config("switched", LocalWire));
        let (rr, sr) = (config("routed", RemoteWire), config("switched", RemoteWire));
        assert!(same.same(&rl, &sl, 1));
        assert!(!same.same(&rr, &sr, 1));
        assert!(!same.same(&rl, &sl, 7), "no paths known at 7 pairs");
        let mut earlier = rl.clone();
        earlier.run = Some("before".into());
        assert!(!same.same(&earlier, &sl, 1), "runs are compared, not paths");
        assert!(!SamePaths::of(None).same(&rl, &sl, 1));
    }
}
