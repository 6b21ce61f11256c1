//! The forecast's figures: every token cell of the study's configurations, by the 1996 name
//! of its configuration, on one side of the comparison, all from one source (measured or the
//! twin: a ratio of a measured cell to a simulated one would carry the twin's error on one
//! side only).

use std::collections::BTreeMap;

use super::super::reschke96::names::as_in_the_study;
use crate::report::data::CellSummary;
use crate::report::simulated::TwinCell;
use crate::results::{PlacementKind, Statistic};
use orchestrate_worker::record::Pattern;

/// A token cell: configuration (its 1996 name), placement, pairs, token size.
pub type CellId = (String, PlacementKind, u32, u64);

/// One side of the comparison: a figure per cell, Mbit/s.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    pub values: BTreeMap<CellId, f64>,
}

/// The prefix of the Fast Ethernet configurations' names: `fast-routed-mesh-4x4` is the
/// routed mesh of 1996 on 100 Mbit/s repeaters.
pub const FAST_PREFIX: &str = "fast-";

/// The study's configurations, by the names the project ships.
pub const IN_THE_STUDY: [&str; 5] = [
    super::super::reschke96::names::BONDED_DUAL_NET,
    super::super::reschke96::names::ROUTED_MESH,
    super::super::reschke96::names::SWITCHED_MESH,
    super::super::reschke96::names::SWITCHED_BONDED_MESH,
    "single-net",
];

/// The 1996 name of a Fast Ethernet configuration.
pub fn in_1996(fast: &str) -> Option<&'static str> {
    let rest = fast.strip_prefix(FAST_PREFIX)?;
    IN_THE_STUDY.iter().copied().find(|n| *n == rest)
}

/// Whether `name` is one of the study's 10 Mbit/s configurations.
pub fn is_1996(name: &str) -> Option<&'static str> {
    IN_THE_STUDY.iter().copied().find(|n| *n == name)
}

impl Figures {
    /// The twin's cells of configurations `rename` knows (and as the study ran them),
    /// under their 1996 names.
    pub fn simulated(cells: &[TwinCell], rename: fn(&str) -> Option<&'static str>) -> Figures {
        let values = cells
            .iter()
            .filter(|c| as_in_the_study(&c.topology, &c.bonding))
            .filter_map(|c| {
                let name = rename(&c.topology)?;
                let id = (name.to_owned(), c.placement, c.pairs, c.size_bytes);
                Some((id, c.aggregate_mbit_s))
            })
            .collect();
        Figures { values }
    }

    /// The run's measured token cells of configurations `rename` knows.
    pub fn measured(
        cells: &[CellSummary],
        statistic: Statistic,
        rename: fn(&str) -> Option<&'static str>,
    ) -> Figures {
        let values = cells
            .iter()
            .filter(|c| {
                c.key.measure.pattern == Pattern::Token
                    && c.key.config.run.is_none()
                    && as_in_the_study(&c.key.config.topology, &c.key.config.bonding)
            })
            .filter_map(|c| {
                let name = rename(&c.key.config.topology)?;
                let v = c.value(statistic)?;
                let id = (
                    name.to_owned(),
                    c.key.config.placement,
                    c.key.pairs,
                    c.key.size_bytes,
                );
                Some((id, v))
            })
            .collect();
        Figures { values }
    }

    pub fn get(
        &self,
        topology: &str,
        placement: PlacementKind,
        pairs: u32,
        size: u64,
    ) -> Option<f64> {
        self.values
            .get(&(topology.to_owned(), placement, pairs, size))
            .copied()
    }

    /// The better mesh at a cell.
    pub fn best_mesh(
        &self,
        placement: PlacementKind,
        pairs: u32,
        size: u64,
    ) -> Option<(&'static str, f64)> {
        super::super::reschke96::names::best_mesh(|t| self.get(t, placement, pairs, size))
    }
}
