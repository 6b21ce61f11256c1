//! Naming the intervals of a table or figure truthfully: which kind of interval its cells
//! have ([`IntervalKind`]) goes in the heading, and only cells of another kind are marked.

use std::collections::{BTreeMap, BTreeSet};

use super::data::CellSummary;
use super::stats::IntervalKind;

/// The mark beside a cell whose interval is not the kind its heading names.
pub const MARK: &str = "†";

/// The interval kinds among a set of cells: the most common names the heading, the other
/// (if any) is marked and explained in a note.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IntervalNames {
    /// Kind in the heading, with the repetition counts of its cells.
    headline: Option<(IntervalKind, Vec<usize>)>,
    /// Kind of the marked cells, with their repetition counts.
    marked: Option<(IntervalKind, Vec<usize>)>,
}

impl IntervalNames {
    pub fn of<'a>(cells: impl IntoIterator<Item = &'a CellSummary>) -> Self {
        let mut by_kind: BTreeMap<IntervalKind, (usize, BTreeSet<usize>)> = BTreeMap::new();
        for c in cells {
            if let (Some(kind), Some(_)) = (IntervalKind::for_n(c.n()), c.ci()) {
                let e = by_kind.entry(kind).or_default();
                e.0 += 1;
                e.1.insert(c.n());
            }
        }
        let mut kinds: Vec<(IntervalKind, usize, Vec<usize>)> = by_kind
            .into_iter()
            .map(|(k, (count, ns))| (k, count, ns.into_iter().collect()))
            .collect();
        // Most cells first; on a tie the 95% interval heads the table.
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut it = kinds.into_iter().map(|(k, _, ns)| (k, ns));
        Self {
            headline: it.next(),
            marked: it.next(),
        }
    }

    /// What the heading calls the intervals; `None` when no cell has one.
    pub fn heading(&self) -> Option<String> {
        self.headline.as_ref().map(|(k, ns)| k.describe(ns))
    }

    /// [`MARK`] for a cell whose interval is not the heading's kind, else nothing.
    pub fn mark(&self, cell: &CellSummary) -> &'static str {
        match (&self.marked, IntervalKind::for_n(cell.n())) {
            (Some((marked, _)), Some(kind)) if *marked == kind => MARK,
            _ => "",
        }
    }

    /// What the marked cells' intervals are, when there are any.
    pub fn other(&self) -> Option<String> {
        self.marked.as_ref().map(|(k, ns)| k.describe(ns))
    }

    /// The note explaining the marked cells, when there are any.
    pub fn note(&self) -> Option<String> {
        self.other().map(|o| format!("{MARK} {o}."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::stats::rep_stats;

    fn cell(n: usize) -> CellSummary {
        let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
        CellSummary {
            key: crate::report::data::CellKey {
                measure: crate::report::data::Measure {
                    pattern: orchestrate_worker::record::Pattern::Token,
                    protocol: orchestrate_worker::record::Protocol::Tcp,
                },
                config: crate::report::data::Config {
                    run: None,
                    topology: "t".into(),
                    bonding: "none".into(),
                    bond_driver: None,
                    placement: crate::results::PlacementKind::LocalWire,
                },
                pairs: 1,
                size_bytes: 8,
            },
            aggregate: rep_stats(&values),
            repetitions: values,
            per_pair_mean_mbit_s: None,
            per_pair_min_mbit_s: None,
            latency: Default::default(),
            tcp: None,
            cpu: None,
            failed_attempts: 0,
            failed_trials: 0,
        }
    }

    #[test]
    fn one_kind_is_named_in_the_heading_and_nothing_is_marked() {
        let cells = [cell(3), cell(3)];
        let names = IntervalNames::of(&cells);
        assert_eq!(
            names.heading().unwrap(),
            "[min, max], too few repetitions for 95% (it covers the median with 75% at n=3)"
        );
        assert!(cells.iter().all(|c| names.mark(c).is_empty()));
        assert_eq!(names.note(), None);
    }

    #[test]
    fn the_minority_kind_is_marked_and_explained() {
        let cells = [cell(6), cell(7), cell(2), cell(1)];
        let names = IntervalNames::of(&cells);
        assert_eq!(
            names.heading().unwrap(),
            "the median's 95% confidence interval (order statistics, n=6, n=7)"
        );
        let marks: Vec<&str> = cells.iter().map(|c| names.mark(c)).collect();
        assert_eq!(marks, ["", "", MARK, ""]);
        assert_eq!(
            names.note().unwrap(),
            "† [min, max], too few repetitions for 95% (it covers the median with 50% at n=2)."
        );
    }

    #[test]
    fn no_intervals_no_heading() {
        assert_eq!(IntervalNames::of(&[cell(1)]).heading(), None);
    }
}
