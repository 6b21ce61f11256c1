//! Short labels for configurations, defined once in a legend: a paper's table cannot carry
//! "fat-tree-net balance-rr (userspace bond) local-wire" in every row. A topology's label
//! is the initials of its name's words with any word holding a digit kept whole
//! (`torus-mesh-6x6` → `TM6x6`, `fat-tree-net` → `FTN`); its bonding is added only
//! where the topology ran with several (`FTN/balance-rr`), and the run only where several
//! runs are compared (`r2:TM6x6`). Placement is never in the label: tables are per placement.

use std::collections::BTreeMap;

use super::data::Config;
use super::document::RunInfo;

/// A configuration without its placement: what a short label names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Setup {
    pub run: Option<String>,
    pub topology: String,
    pub bonding: String,
    /// `balance-rr (userspace bond)`, or `none`.
    pub bonding_text: String,
}

impl Setup {
    pub fn of(c: &Config) -> Setup {
        Setup {
            run: c.run.clone(),
            topology: c.topology.clone(),
            bonding: c.bonding.clone(),
            bonding_text: c.bonding_label().unwrap_or_else(|| "none".into()),
        }
    }
}

/// Every configuration's short label, and the legend that defines them.
#[derive(Debug, Clone, Default)]
pub struct ShortLabels {
    /// In the order of first appearance.
    pub legend: Vec<(String, Setup)>,
}

impl ShortLabels {
    /// Labels for the configurations `configs` (in report order) of the runs `runs`.
    pub fn of<'a>(configs: impl IntoIterator<Item = &'a Config>, runs: &[RunInfo]) -> Self {
        let mut setups: Vec<Setup> = Vec::new();
        for c in configs {
            let s = Setup::of(c);
            if !setups.contains(&s) {
                setups.push(s);
            }
        }
        let mut bondings: BTreeMap<(Option<&str>, &str), usize> = BTreeMap::new();
        for s in &setups {
            *bondings
                .entry((s.run.as_deref(), s.topology.as_str()))
                .or_default() += 1;
        }
        let run_index = |run: &str| runs.iter().position(|r| r.label == run).map(|i| i + 1);
        let mut legend: Vec<(String, Setup)> = Vec::new();
        for s in &setups {
            let mut label = initials(&s.topology);
            if bondings[&(s.run.as_deref(), s.topology.as_str())] > 1 {
                label = format!("{label}/{}", s.bonding);
            }
            if let Some(run) = &s.run {
                let n = run_index(run).unwrap_or(0);
                label = format!("r{n}:{label}");
            }
            // Two topologies with the same initials get a number each after the first.
            let base = label.clone();
            let mut n = 2;
            while legend.iter().any(|(l, _)| *l == label) {
                label = format!("{base}-{n}");
                n += 1;
            }
            legend.push((label, s.clone()));
        }
        ShortLabels { legend }
    }

    /// The short label of `c`.
    pub fn get(&self, c: &Config) -> &str {
        let s = Setup::of(c);
        self.legend
            .iter()
            .find(|(_, x)| *x == s)
            .map(|(l, _)| l.as_str())
            .unwrap_or("?")
    }
}

/// `torus-mesh-6x6` → `TM6x6`.
pub(super) fn initials(topology: &str) -> String {
    let mut out = String::new();
    for word in topology.split(['-', '_']).filter(|w| !w.is_empty()) {
        if word.chars().any(|c| c.is_ascii_digit()) {
            out.push_str(word);
        } else if let Some(c) = word.chars().next() {
            out.extend(c.to_uppercase());
        }
    }
    if out.is_empty() {
        topology.to_owned()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{BondDriver, PlacementKind};

    fn config(topology: &str, bonding: &str, placement: PlacementKind) -> Config {
        Config {
            run: None,
            topology: topology.into(),
            bonding: bonding.into(),
            bond_driver: (bonding != "none").then_some(BondDriver::Userspace),
            placement,
        }
    }

    #[test]
    fn configurations_get_their_initials_once_for_both_placements() {
        use PlacementKind::{LocalWire, RemoteWire};
        let configs = [
            config("fat-tree-net", "balance-rr", LocalWire),
            config("torus-mesh-6x6", "none", LocalWire),
            config("torus-mesh-6x6", "none", RemoteWire),
            config("star-bonded-mesh-6x6", "balance-rr", RemoteWire),
            config("star-mesh-6x6", "none", LocalWire),
        ];
        let labels = ShortLabels::of(&configs, &[]);
        let short: Vec<&str> = configs.iter().map(|c| labels.get(c)).collect();
        assert_eq!(short, ["FTN", "TM6x6", "TM6x6", "SBM6x6", "SM6x6"]);
        assert_eq!(labels.legend.len(), 4);
        assert_eq!(
            labels.legend[0].1.bonding_text,
            "balance-rr (userspace bond)"
        );
        assert_eq!(labels.legend[1].1.bonding_text, "none");
    }

    #[test]
    fn a_topology_run_with_several_bondings_names_each_and_same_initials_are_told_apart() {
        use PlacementKind::LocalWire;
        let configs = [
            config("fat-tree-net", "balance-rr", LocalWire),
            config("fat-tree-net", "active-backup", LocalWire),
            config("flat-tree-net", "none", LocalWire),
        ];
        let labels = ShortLabels::of(&configs, &[]);
        let short: Vec<&str> = configs.iter().map(|c| labels.get(c)).collect();
        assert_eq!(short, ["FTN/balance-rr", "FTN/active-backup", "FTN"]);
        let twins = [
            config("flat-tree-net", "none", LocalWire),
            config("fat-tree-net", "none", LocalWire),
        ];
        let labels = ShortLabels::of(&twins, &[]);
        let short: Vec<&str> = twins.iter().map(|c| labels.get(c)).collect();
        assert_eq!(short, ["FTN", "FTN-2"]);
    }
}
