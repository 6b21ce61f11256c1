//! "The userspace bond against the kernel's driver": one row per cell measured with both,
//! then what each differing cell's TCP counters say.

use std::fmt::Write;

use super::table::table;
use crate::report::drivers::{DriverRow, Reading, Side};
use crate::report::format::{human, size};
use crate::results::Statistic;

pub fn drivers(s: &mut String, rows: &[DriverRow], statistic: Statistic) {
    if rows.is_empty() {
        return;
    }
    let first = &rows[0];
    let _ = writeln!(
        s,
        "## The userspace bond against the kernel's driver\n\n\
         The same cells measured with the kernel's bonding driver ({}) and with the worker's \
         userspace bond ({}), {} aggregate Mbit/s (each with its interval in appendix.md); the \
         ratio is userspace ÷ kernel with its 95% interval (of the repetitions' geometric \
         means). Retransmissions and out-of-order segments are TCP's own counts per trial, \
         both ends summed, kernel/userspace.\n",
        first.kernel.topology,
        first.userspace.topology,
        statistic.as_str()
    );
    let header = [
        "cell",
        "kernel",
        "userspace",
        "ratio [95%]",
        "retrans.",
        "out-of-order",
    ]
    .map(String::from);
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                cell_name(r),
                side(&r.kernel),
                side(&r.userspace),
                r.ratio.map_or("—".into(), |e| {
                    format!("{:.2} [{:.2}, {:.2}]", e.ratio, e.low, e.high)
                }),
                per_trial(&r.kernel, &r.userspace, |t| t.retransmissions),
                per_trial(&r.kernel, &r.userspace, |t| t.out_of_order),
            ]
        })
        .collect();
    table(s, &header, &body, &[false, true, true, true, true, true]);
    let differs: Vec<&DriverRow> = rows
        .iter()
        .filter(|r| !matches!(r.reading(), Reading::Same | Reading::Unknown))
        .collect();
    let same = rows.iter().filter(|r| r.reading() == Reading::Same).count();
    let unknown = rows.len() - differs.len() - same;
    let _ = write!(
        s,
        "{} of {} cells differ beyond their interval; {same} {}",
        differs.len(),
        rows.len(),
        if same == 1 { "does not" } else { "do not" }
    );
    if unknown > 0 {
        let _ = write!(s, "; {unknown} have too few repetitions for an interval");
    }
    s.push_str(".\n\n");
    for r in differs {
        let e = r.ratio.expect("a differing row has an interval");
        let why = match r.reading() {
            Reading::DiffersWithTcpEvents => {
                "with more reordering or loss in TCP's counters than the kernel's driver: the \
                 stand-in's frames arrive out of order or are lost more often"
            }
            Reading::DiffersInTheHosts => {
                "with no more reordering or loss in TCP's counters: the difference is in the \
                 nodes' work per frame (the userspace bond's copies through TUN and the worker), \
                 which this run did not count"
            }
            _ => "and the records carry no TCP counters to say why",
        };
        let _ = writeln!(
            s,
            "- {}: the userspace bond gives {:.2}× the kernel's ({:.0}% {}), {why}.",
            cell_name(r),
            e.ratio,
            (e.ratio - 1.0).abs() * 100.0,
            if e.ratio < 1.0 { "less" } else { "more" }
        );
    }
    s.push('\n');
}

fn cell_name(r: &DriverRow) -> String {
    format!(
        "{} {} ×{} {}",
        r.measure.pattern.as_str(),
        size(r.size_bytes),
        r.pairs,
        r.placement.as_str()
    )
}

fn side(x: &Side) -> String {
    x.value.map_or("—".into(), human)
}

fn per_trial(
    k: &Side,
    u: &Side,
    count: impl Fn(&crate::report::data::TcpEvidence) -> u64,
) -> String {
    let one = |x: &Side| {
        x.tcp
            .filter(|t| t.trials > 0)
            .map_or("—".into(), |t| human(count(&t) as f64 / t.trials as f64))
    };
    format!("{}/{}", one(k), one(u))
}
