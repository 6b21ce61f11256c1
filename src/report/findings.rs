//! Findings: plain sentences written from the comparison, in a fixed order.

use super::compare::{ComparisonTable, Significance};
use super::data::Failure;
use super::format::{human, ratio, size, times};
use crate::results::Statistic;

/// Sentences for every measurement table, then one about failures.
pub fn findings(
    tables: &[ComparisonTable],
    failures: &[Failure],
    statistic: Statistic,
) -> Vec<String> {
    let mut out = Vec::new();
    for t in tables {
        // With several tables each sentence says which measurement it is about.
        let p = if tables.len() > 1 {
            format!("{}: ", t.measure.label())
        } else {
            String::new()
        };
        headline(&mut out, t, &p, statistic);
        peaks(&mut out, t, &p, statistic);
        if t.configs.len() > 1 {
            wins(&mut out, t, &p, statistic);
        }
    }
    out.push(failures_sentence(failures));
    out
}

/// The headline cell: the largest size at the largest pair count, where contention is
/// heaviest and the study drew its conclusion; each configuration against its baseline.
fn headline(out: &mut Vec<String>, t: &ComparisonTable, p: &str, statistic: Statistic) {
    let Some(row) = t.rows.iter().max_by_key(|r| (r.pairs, r.size_bytes)) else {
        return;
    };
    for col in 0..t.configs.len() {
        let (Some(r), Some(b)) = (row.ratio[col], row.baseline[col]) else {
            continue;
        };
        let (me, base) = (t.cell(row, col).unwrap(), t.cell(row, b).unwrap());
        let caveat = match row.ratio_interval[col] {
            Some(i) if i.excludes_one() => format!(
                "; the ratio's 95% interval is {}–{}",
                times(i.low),
                times(i.high)
            ),
            Some(i) => format!(
                "; the ratio's 95% interval, {}–{}, includes 1: the difference is not shown",
                times(i.low),
                times(i.high)
            ),
            None => "; too few repetitions for an interval: not a claim".into(),
        };
        out.push(format!(
            "{p}{} {} and {} {}, {} reaches {} {} ({} vs {} Mbit/s, {}{caveat}).",
            if p.is_empty() { "At" } else { "at" },
            size(row.size_bytes),
            row.pairs,
            if row.pairs == 1 { "pair" } else { "pairs" },
            t.configs[col].label(),
            ratio(r),
            t.configs[b].label(),
            human(me.value(statistic).unwrap()),
            human(base.value(statistic).unwrap()),
            statistic.as_str(),
        ));
    }
}

/// Each configuration's peak aggregate.
fn peaks(out: &mut Vec<String>, t: &ComparisonTable, p: &str, statistic: Statistic) {
    for col in 0..t.configs.len() {
        let peak = t
            .rows
            .iter()
            .filter_map(|r| {
                t.cell(r, col)
                    .and_then(|c| c.value(statistic))
                    .map(|v| (r, v))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((row, v)) = peak {
            out.push(format!(
                "{p}{} peaks at {} Mbit/s aggregate, at {} and {} {}.",
                t.configs[col].label(),
                human(v),
                size(row.size_bytes),
                row.pairs,
                if row.pairs == 1 { "pair" } else { "pairs" },
            ));
        }
    }
}

/// Who wins how often among its alternatives (the same placement), and how often the win is
/// real.
fn wins(out: &mut Vec<String>, t: &ComparisonTable, p: &str, statistic: Statistic) {
    let contested: Vec<_> = t
        .rows
        .iter()
        .flat_map(|r| r.contests.iter())
        .filter(|c| c.runner_up.is_some())
        .collect();
    let mut tally: Vec<(usize, usize, usize, usize, usize)> = (0..t.configs.len())
        .map(|c| {
            let placement = t.configs[c].placement;
            let entered = contested
                .iter()
                .filter(|k| k.placement == placement)
                .count();
            let won: Vec<_> = contested.iter().filter(|k| k.winner == c).collect();
            let count = |s: Significance| won.iter().filter(|k| k.significance == s).count();
            (
                c,
                won.len(),
                entered,
                count(Significance::Clear),
                count(Significance::SamePath),
            )
        })
        .filter(|t| t.1 > 0)
        .collect();
    tally.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for (c, won, entered, clear, same_path) in tally {
        let ties = if same_path > 0 {
            format!(
                ", and {same_path} {} a tie with a runner-up on the same path",
                if same_path == 1 { "is" } else { "are" }
            )
        } else {
            String::new()
        };
        out.push(format!(
            "{p}{} has the highest {} in {} of the {} cells where it has an alternative of its placement; {} of those wins {} clear{ties}.",
            t.configs[c].label(),
            statistic.as_str(),
            won,
            entered,
            clear,
            if clear == 1 { "is" } else { "are" },
        ));
    }
}

fn failures_sentence(failures: &[Failure]) -> String {
    if failures.is_empty() {
        return "No point attempt failed.".into();
    }
    format!(
        "{} point {} failed and {} not counted in the statistics (see Failed points).",
        failures.len(),
        if failures.len() == 1 {
            "attempt"
        } else {
            "attempts"
        },
        if failures.len() == 1 { "is" } else { "are" },
    )
}
