//! The report's main tables as a paper has them: one per measurement and placement, the
//! configurations (by their short labels, [`super::short_labels`]) and pair counts as rows,
//! message sizes as columns, each cell the headline value and its ratio to the baseline.
//! report.md and tables.tex render the same tables; every interval, winner and failure per
//! cell stays in the appendix's full tables.

use super::compare::ComparisonTable;
use super::data::Measure;
use super::document::Report;
use super::format::{capitalised, human, size, times};
use super::short_labels::ShortLabels;
use crate::results::{PlacementKind, Statistic};

/// One measurement at one placement.
#[derive(Debug, Clone)]
pub struct ResultsTable {
    pub measure: Measure,
    pub placement: PlacementKind,
    pub statistic: Statistic,
    /// What the ratios divide by, as `<short label> <placement>`; empty without ratios.
    pub baselines: Vec<String>,
    pub sizes: Vec<u64>,
    pub rows: Vec<ResultsRow>,
}

#[derive(Debug, Clone)]
pub struct ResultsRow {
    pub label: String,
    pub pairs: u32,
    /// One per size; `None` where the configuration has no cell at that size and pair count.
    pub cells: Vec<Option<ResultsCell>>,
}

/// A table at its heaviest load ([`ResultsTable::heaviest`]).
#[derive(Debug, Clone)]
pub struct Heaviest<'a> {
    pub pairs: u32,
    pub size_bytes: u64,
    /// (short label, cell), highest value first.
    pub cells: Vec<(&'a str, ResultsCell)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResultsCell {
    /// The headline value, Mbit/s; `None` when every attempt failed.
    pub value: Option<f64>,
    /// To the baseline; `None` for the baseline itself and where there is none.
    pub ratio: Option<f64>,
}

impl ResultsCell {
    /// `28.5 (4.17×)`, `6.84`, or `—` when every attempt failed.
    pub fn text(self) -> String {
        match (self.value, self.ratio) {
            (None, _) => "—".into(),
            (Some(v), Some(r)) => format!("{} ({})", human(v), times(r)),
            (Some(v), None) => human(v),
        }
    }
}

impl ResultsTable {
    /// `token TCP, local-wire`.
    pub fn title(&self) -> String {
        format!(
            "{} {}, {}",
            self.measure.pattern.as_str(),
            self.measure.protocol.as_str().to_uppercase(),
            self.placement.as_str()
        )
    }

    /// What a cell holds, in one sentence.
    pub fn caption(&self) -> String {
        let mut s = format!(
            "{} aggregate throughput in Mbit/s of {} {}, {} pairs",
            capitalised(self.statistic.as_str()),
            self.measure.pattern.as_str(),
            self.measure.protocol.as_str().to_uppercase(),
            self.placement.as_str()
        );
        if !self.baselines.is_empty() {
            s.push_str(&format!(
                "; in parentheses the ratio to {}",
                self.baselines.join(" and ")
            ));
        }
        s.push('.');
        s
    }

    /// The heaviest load the table has (its most pairs at its largest size) and every
    /// configuration's cell there, highest first: what a summary says of the table.
    pub fn heaviest(&self) -> Option<Heaviest<'_>> {
        let pairs = self.rows.iter().map(|r| r.pairs).max()?;
        let (col, &size) = self.sizes.iter().enumerate().next_back()?;
        let mut cells: Vec<(&str, ResultsCell)> = self
            .rows
            .iter()
            .filter(|r| r.pairs == pairs)
            .filter_map(|r| Some((r.label.as_str(), r.cells[col]?)))
            .collect();
        cells.sort_by(|a, b| {
            b.1.value
                .unwrap_or(f64::NEG_INFINITY)
                .total_cmp(&a.1.value.unwrap_or(f64::NEG_INFINITY))
        });
        (!cells.is_empty()).then_some(Heaviest {
            pairs,
            size_bytes: size,
            cells,
        })
    }

    pub fn size_headers(&self) -> Vec<String> {
        self.sizes.iter().map(|b| size(*b)).collect()
    }
}

/// The short labels of the report's configurations and its tables, as both report.md and
/// tables.tex give them.
pub fn of_report(report: &Report) -> (ShortLabels, Vec<ResultsTable>) {
    let labels = ShortLabels::of(
        report.comparison.iter().flat_map(|t| &t.configs),
        &report.runs,
    );
    let tables = tables(report, &labels);
    (labels, tables)
}

/// The report's tables, one per measurement and placement, in the comparison's order.
pub fn tables(report: &Report, labels: &ShortLabels) -> Vec<ResultsTable> {
    let mut out = Vec::new();
    for t in &report.comparison {
        let mut placements: Vec<PlacementKind> = t.configs.iter().map(|c| c.placement).collect();
        placements.sort();
        placements.dedup();
        for p in placements {
            out.push(one(t, p, report.statistic, labels));
        }
    }
    out
}

fn one(
    t: &ComparisonTable,
    placement: PlacementKind,
    statistic: Statistic,
    labels: &ShortLabels,
) -> ResultsTable {
    let columns: Vec<usize> = (0..t.configs.len())
        .filter(|&c| t.configs[c].placement == placement)
        .collect();
    let mut sizes: Vec<u64> = t.rows.iter().map(|r| r.size_bytes).collect();
    sizes.sort();
    sizes.dedup();
    let mut pairs: Vec<u32> = t.rows.iter().map(|r| r.pairs).collect();
    pairs.sort();
    pairs.dedup();
    let mut baselines: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    for &c in &columns {
        for &p in &pairs {
            let cells: Vec<Option<ResultsCell>> = sizes
                .iter()
                .map(|&b| {
                    let row = t.rows.iter().find(|r| r.pairs == p && r.size_bytes == b)?;
                    let cell = t.cell(row, c)?;
                    let ratio = row.ratio[c].filter(|_| row.baseline[c] != Some(c));
                    if ratio.is_some()
                        && let Some(base) = row.baseline[c]
                    {
                        let name = format!(
                            "{} {}",
                            labels.get(&t.configs[base]),
                            t.configs[base].placement.as_str()
                        );
                        if !baselines.contains(&name) {
                            baselines.push(name);
                        }
                    }
                    Some(ResultsCell {
                        value: cell.value(statistic),
                        ratio,
                    })
                })
                .collect();
            if cells.iter().any(Option::is_some) {
                rows.push(ResultsRow {
                    label: labels.get(&t.configs[c]).to_owned(),
                    pairs: p,
                    cells,
                });
            }
        }
    }
    ResultsTable {
        measure: t.measure,
        placement,
        statistic,
        baselines,
        sizes,
        rows,
    }
}

/// Splits columns of `widths` after `fixed` leading ones (repeated in every part) into parts
/// whose Markdown rows (`| a | b |`) fit in `limit` characters.
pub fn fit_columns(widths: &[usize], fixed: usize, limit: usize) -> Vec<std::ops::Range<usize>> {
    let row = |cols: &mut dyn Iterator<Item = usize>| 1 + cols.map(|w| w + 3).sum::<usize>();
    let base = row(&mut widths[..fixed].iter().copied());
    let mut parts = Vec::new();
    let mut start = fixed;
    let mut used = base;
    for (i, w) in widths.iter().enumerate().skip(fixed) {
        if used + w + 3 > limit && i > start {
            parts.push(start..i);
            start = i;
            used = base;
        }
        used += w + 3;
    }
    if start < widths.len() || parts.is_empty() {
        parts.push(start..widths.len());
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_split_where_a_row_would_pass_the_limit() {
        // "| label | pairs |" is 1 + (5+3) + (5+3) = 17; each size column adds its width + 3.
        let widths = [5, 5, 12, 12, 12, 12, 12, 12, 12];
        let parts = fit_columns(&widths, 2, 100);
        assert_eq!(parts, [2..7, 7..9]);
        for p in &parts {
            let row: usize = 17 + widths[p.clone()].iter().map(|w| w + 3).sum::<usize>();
            assert!(row <= 100, "{p:?}: {row}");
        }
        assert_eq!(fit_columns(&[5, 5, 12], 2, 100), vec![2..3]);
        // A column wider than the limit still gets a part of its own.
        assert_eq!(fit_columns(&[5, 5, 200, 3], 2, 100), [2..3, 3..4]);
    }

    #[test]
    fn a_cell_reads_value_then_ratio() {
        let cell = |value, ratio| ResultsCell { value, ratio }.text();
        assert_eq!(cell(Some(28.5), Some(4.166)), "28.5 (4.17×)");
        assert_eq!(cell(Some(6.84), None), "6.84");
        assert_eq!(cell(None, None), "—");
    }
}
