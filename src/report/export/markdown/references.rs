//! "Reference values": the experiment's `[[reference]]` values against the run
//! ([`crate::report::references`]).

use std::fmt::Write;

use crate::report::format::{human, md_cell};
use crate::report::references::ReferenceCheck;
use crate::results::Statistic;

/// The section; empty when the experiment has no references.
pub fn references(s: &mut String, checks: &[ReferenceCheck], statistic: Statistic) {
    if checks.is_empty() {
        return;
    }
    let failed = checks.iter().filter(|c| !c.passed()).count();
    s.push_str("## Reference values\n\n");
    let _ = writeln!(
        s,
        "The experiment's `[[reference]]` values against the measured {} (Mbit/s): a \
         reference fails when the measurement is more than its tolerance below it and the \
         measured interval lies wholly below it, or when the run has no value for it. \
         {} of {} pass.\n",
        statistic.as_str(),
        checks.len() - failed,
        checks.len()
    );
    s.push_str("| reference | expected | tolerance | measured | interval | change | verdict |\n");
    s.push_str("|---|---:|---:|---:|---|---:|---|\n");
    for c in checks {
        let (measured, interval, change) = match (&c.measured, c.change_percent) {
            (Some(m), Some(p)) => (
                human(m.value_mbit_s),
                m.interval_text(),
                format!("{p:+.1}%"),
            ),
            _ => (
                "-".into(),
                md_cell(c.note.as_deref().unwrap_or("")),
                "-".into(),
            ),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {}% | {measured} | {interval} | {change} | {} |",
            md_cell(&c.reference),
            human(c.expected_mbit_s),
            c.tolerance_text(),
            c.verdict.check_text()
        );
    }
    s.push('\n');
}
