//! The run as the study's findings look it up: cells, the model and the medium, by topology,
//! placement, pairs and size.

use super::finding::PaperFinding;
use super::names::{self, BONDED_DUAL_NET};
use crate::report::data::CellSummary;
use crate::report::emulator_stats::{CellMedia, MediaReport};
use crate::report::predicted::{Cause, ModelRow};
use crate::report::verdict::Verdict;
use crate::results::{PlacementKind, Statistic};
use orchestrate_worker::record::Pattern;

pub(super) struct Measured<'a> {
    pub(super) cells: &'a [CellSummary],
    pub(super) model: &'a [ModelRow],
    /// What the emulated wires did (empty for runs on token buckets or real machines).
    pub(super) media: &'a MediaReport,
    pub(super) stat: Statistic,
}

/// MB/s (10^6 bytes) from Mbit/s, as the paper gives its figures.
pub(super) fn mb_s(mbit_s: f64) -> String {
    format!("{:.2} MB/s", mbit_s / 8.0)
}

impl Measured<'_> {
    pub(super) fn cell(
        &self,
        pattern: Pattern,
        topology: &str,
        placement: PlacementKind,
        pairs: u32,
        size_bytes: u64,
    ) -> Option<f64> {
        self.cells
            .iter()
            .find(|c| {
                let k = &c.key;
                k.measure.pattern == pattern
                    && k.config.run.is_none()
                    && k.config.topology == topology
                    && k.config.placement == placement
                    && k.pairs == pairs
                    && k.size_bytes == size_bytes
            })
            .and_then(|c| c.value(self.stat))
    }

    /// The medium during a cell's points, when the run recorded it.
    pub(super) fn medium(
        &self,
        pattern: Pattern,
        topology: &str,
        placement: PlacementKind,
        pairs: u32,
        size_bytes: u64,
    ) -> Option<&CellMedia> {
        self.media.cells.iter().find(|c| {
            let k = &c.key;
            k.pattern == pattern
                && k.topology == topology
                && k.placement == placement
                && k.pairs == pairs
                && k.size_bytes == size_bytes
        })
    }

    pub(super) fn token(
        &self,
        topology: &str,
        placement: PlacementKind,
        pairs: u32,
        size: u64,
    ) -> Option<f64> {
        self.cell(Pattern::Token, topology, placement, pairs, size)
    }

    pub(super) fn predicted(
        &self,
        topology: &str,
        placement: PlacementKind,
        pairs: u32,
        size: u64,
    ) -> Option<f64> {
        self.model_row(topology, placement, pairs, size)
            .map(|r| r.predicted_mbit_s)
    }

    /// What the run counted that explains a token cell missing the model, when it does.
    pub(super) fn model_cause(
        &self,
        topology: &str,
        placement: PlacementKind,
        pairs: u32,
        size: u64,
    ) -> Option<&Cause> {
        self.model_row(topology, placement, pairs, size)
            .and_then(|r| r.cause.as_ref())
    }

    /// The model's row for a token cell.
    fn model_row(
        &self,
        topology: &str,
        placement: PlacementKind,
        pairs: u32,
        size: u64,
    ) -> Option<&ModelRow> {
        self.model.iter().find(|r| {
            r.key.config.topology == topology
                && r.key.config.placement == placement
                && r.key.pairs == pairs
                && r.key.size_bytes == size
        })
    }

    /// The heaviest token cell of the bonded dual net: its largest size at its most pairs.
    pub(super) fn heaviest(&self) -> Option<(u32, u64)> {
        self.cells
            .iter()
            .filter(|c| {
                c.key.measure.pattern == Pattern::Token
                    && c.key.config.topology == BONDED_DUAL_NET
                    && c.key.config.run.is_none()
            })
            .map(|c| (c.key.pairs, c.key.size_bytes))
            .max()
    }

    pub(super) fn token_sizes(&self) -> Vec<u64> {
        let mut s: Vec<u64> = self
            .cells
            .iter()
            .filter(|c| c.key.measure.pattern == Pattern::Token)
            .map(|c| c.key.size_bytes)
            .collect();
        s.sort_unstable();
        s.dedup();
        s
    }

    /// The better of the two meshes at a cell: (topology, value).
    pub(super) fn best_mesh(
        &self,
        placement: PlacementKind,
        pairs: u32,
        size: u64,
    ) -> Option<(&'static str, f64)> {
        names::best_mesh(|t| self.token(t, placement, pairs, size))
    }

    pub(super) fn bond_driver(&self, topology: &str) -> Option<&'static str> {
        self.cells
            .iter()
            .find(|c| c.key.config.topology == topology)
            .and_then(|c| c.key.config.bond_driver)
            .map(|d| d.as_str())
    }

    pub(super) fn not_measured(
        title: &'static str,
        paper: &'static str,
        what: &str,
    ) -> PaperFinding {
        PaperFinding {
            title,
            paper,
            measured: format!("This run has no {what}."),
            verdict: Verdict::NotMeasured,
            why: String::new(),
        }
    }
}
