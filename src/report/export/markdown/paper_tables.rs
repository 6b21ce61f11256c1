//! report.md's "Configurations" legend and "Results" tables
//! ([`crate::report::results_tables`]): short labels as rows, sizes as columns, each row within
//! 100 characters (a table with many sizes is split into parts of consecutive sizes).

use std::fmt::Write;

use super::table::table;
use crate::report::format::md_cell;
use crate::report::results_tables::{ResultsTable, fit_columns};
use crate::report::short_labels::ShortLabels;

/// The longest table row report.md writes.
pub const MAX_ROW: usize = 100;

/// The legend: each short label and the configuration it stands for.
pub fn legend(s: &mut String, labels: &ShortLabels) {
    if labels.legend.is_empty() {
        return;
    }
    s.push_str(
        "## Configurations\n\nThe tables name each configuration by a short \
         label; placement is given by each table's title.\n\n",
    );
    let runs = labels.legend.iter().any(|(_, x)| x.run.is_some());
    let mut header = vec!["label".to_string()];
    if runs {
        header.push("run".into());
    }
    header.extend(["topology".to_string(), "bonding".to_string()]);
    let rows: Vec<Vec<String>> = labels
        .legend
        .iter()
        .map(|(label, setup)| {
            let mut r = vec![md_cell(label)];
            if runs {
                r.push(md_cell(setup.run.as_deref().unwrap_or("")));
            }
            r.extend([md_cell(&setup.topology), md_cell(&setup.bonding_text)]);
            r
        })
        .collect();
    let right = vec![false; header.len()];
    table(s, &header, &rows, &right);
}

/// One results table, in as many parts as its width needs.
pub fn results(s: &mut String, t: &ResultsTable) {
    let _ = writeln!(s, "## Results: {}\n\n{}\n", t.title(), t.caption());
    let mut header = vec!["config".to_string(), "pairs".to_string()];
    header.extend(t.size_headers());
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![md_cell(&r.label), r.pairs.to_string()];
            row.extend(
                r.cells
                    .iter()
                    .map(|c| c.map(|c| c.text()).unwrap_or_default()),
            );
            row
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count(), 3])
                .max()
                .unwrap_or(3)
        })
        .collect();
    for part in fit_columns(&widths, 2, MAX_ROW) {
        let pick = |r: &[String]| -> Vec<String> {
            r[..2].iter().chain(&r[part.clone()]).cloned().collect()
        };
        let mut right = vec![false, true];
        right.extend(part.clone().map(|_| true));
        let part_rows: Vec<Vec<String>> = rows.iter().map(|r| pick(r)).collect();
        table(s, &pick(&header), &part_rows, &right);
    }
}
