//! What `orchestrate report` prints on the terminal about its checks: the experiment's
//! reference values ([`super::references`]) and a regression check between two runs
//! ([`super::regression`]). Both show verdicts and intervals the same way.

use std::fmt::Write;

use super::format::{human, size};
use super::references::ReferenceChecks;
use super::regression::{CellChange, CellName, RegressionCheck};
use super::verdict::{Estimate, Verdict};
use crate::results::Statistic;

/// Reference checks as lines for the terminal; empty when there are none.
pub fn references(refs: &ReferenceChecks, statistic: Statistic) -> String {
    if refs.is_empty() {
        return String::new();
    }
    let checks = &refs.checks;
    let mut s = format!(
        "references ({} throughput, median latency; {} cluster): {} of {} pass\n",
        statistic.as_str(),
        refs.cluster,
        checks.len() - refs.failed(),
        checks.len()
    );
    for c in checks {
        let _ = writeln!(
            s,
            "  {:<7} {}: expected {} {}, bounds {}, {}",
            c.verdict.check_text(),
            c.reference,
            human(c.expected),
            c.unit,
            c.bounds,
            c.measured_text()
        );
    }
    if !refs.other_clusters.is_empty() {
        let _ = writeln!(
            s,
            "  not checked ({} for other kinds of cluster): {}",
            refs.other_clusters.len(),
            refs.other_clusters.join("; ")
        );
    }
    s
}

/// A regression check as a text table, then a count of verdicts and the failing cells by
/// name.
pub fn regression(check: &RegressionCheck) -> String {
    let mut s = format!(
        "{} against {}: {} throughput in Mbit/s, threshold {}\nrule: {}\n\
         intervals: the median's, with the probability that each covers it\n\n",
        check.new,
        check.old,
        check.statistic.as_str(),
        check.threshold,
        check.rule
    );
    let header = [
        "cell", "old", "interval", "new", "interval", "change", "verdict",
    ];
    let rows: Vec<[String; 7]> = check.cells.iter().map(text_row).collect();
    aligned(&mut s, &header, &rows);
    let count = |v: Verdict| check.cells.iter().filter(|c| c.verdict == v).count();
    let _ = writeln!(
        s,
        "\n{} cells: {} worse, {} missing, {} better, {} same, {} new",
        check.cells.len(),
        count(Verdict::Worse),
        count(Verdict::Missing),
        count(Verdict::Better),
        count(Verdict::Same),
        count(Verdict::New),
    );
    let failing: Vec<&CellChange> = check.failing().collect();
    if !failing.is_empty() {
        let _ = writeln!(s, "FAILED: {} cell(s) regressed:", failing.len());
        for c in failing {
            let _ = writeln!(s, "  {}: {}", describe(&c.cell), change_text(c));
        }
    }
    s
}

/// `token/tcp <topology> local-wire, 7 pairs, 8 KB`.
fn describe(c: &CellName) -> String {
    let mut config = c.topology.clone();
    if c.bonding != "none" {
        config.push(' ');
        config.push_str(&c.bonding);
        if let Some(d) = &c.bond_driver {
            let _ = write!(config, " ({d} bond)");
        }
    }
    format!(
        "{}/{} {config} {}, {} pair{}, {}",
        c.pattern,
        c.protocol,
        c.placement,
        c.pairs,
        if c.pairs == 1 { "" } else { "s" },
        size(c.size_bytes)
    )
}

fn change_text(c: &CellChange) -> String {
    match (c.change_percent, c.verdict) {
        (Some(p), _) => format!("{p:+.1}%"),
        (None, Verdict::Missing) => "no value in the new run".into(),
        (None, Verdict::New) => "not in the old run".into(),
        (None, _) => "no value in either run".into(),
    }
}

fn text_row(c: &CellChange) -> [String; 7] {
    let value = |e: &Option<Estimate>| e.map(|e| human(e.value_mbit_s)).unwrap_or("-".into());
    let interval = |e: &Option<Estimate>| {
        e.as_ref()
            .map(Estimate::interval_text)
            .unwrap_or("-".into())
    };
    [
        describe(&c.cell),
        value(&c.old),
        interval(&c.old),
        value(&c.new),
        interval(&c.new),
        c.change_percent
            .map(|p| format!("{p:+.1}%"))
            .unwrap_or("-".into()),
        c.verdict.check_text(),
    ]
}

/// Columns padded to equal width; numbers (every column but the first and last) right-aligned.
fn aligned<const N: usize>(s: &mut String, header: &[&str; N], rows: &[[String; N]]) {
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..N).map(width).collect();
    let line = |s: &mut String, cells: &[&str]| {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[i] - c.chars().count());
            let right = i != 0 && i != N - 1;
            if i > 0 {
                out.push_str("  ");
            }
            if right {
                out.push_str(&pad);
                out.push_str(c);
            } else {
                out.push_str(c);
                out.push_str(&pad);
            }
        }
        s.push_str(out.trim_end());
        s.push('\n');
    };
    line(s, header);
    for r in rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        line(s, &cells);
    }
}
