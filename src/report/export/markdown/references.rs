//! "Reference values": the experiment's `[[reference]]` values against the run
//! ([`crate::report::references`]).

use std::fmt::Write;

use crate::report::format::{human, md_cell};
use crate::report::references::ReferenceChecks;
use crate::results::Statistic;

/// The section; empty when the experiment has no references.
pub fn references(s: &mut String, refs: &ReferenceChecks, statistic: Statistic) {
    if refs.is_empty() {
        return;
    }
    let checks = &refs.checks;
    s.push_str("## Reference values\n\n");
    let _ = writeln!(
        s,
        "The experiment's `[[reference]]` values for {} clusters against this run: throughput \
         is the {} aggregate (Mbit/s), latency the median one-way message time (µs). A \
         reference passes when the measurement lies within its bounds, and fails when it lies \
         outside them or the run has no value for it. {} of {} pass.\n",
        refs.cluster,
        statistic.as_str(),
        checks.len() - refs.failed(),
        checks.len()
    );
    // A list, not a table: a reference's name runs long.
    for c in checks {
        let _ = writeln!(
            s,
            "- **{}** {}: expected {} {}, bounds {}; {}",
            c.verdict.check_text(),
            md_cell(&c.reference),
            human(c.expected),
            c.unit,
            c.bounds,
            md_cell(&c.measured_text())
        );
    }
    s.push('\n');
    if !refs.other_clusters.is_empty() {
        let _ = writeln!(
            s,
            "Not checked, being for other kinds of cluster than this run's ({}): {}.\n",
            refs.cluster,
            refs.other_clusters.join("; ")
        );
    }
}
