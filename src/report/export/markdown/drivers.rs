//! "The userspace bond against the kernel's driver": one row per cell measured with both,
//! then what each differing cell's TCP counters and the nodes' CPU say.

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
    // One placement for every row is said once, and the rows stay narrow enough for a page.
    let placement = rows
        .iter()
        .all(|r| r.placement == first.placement)
        .then_some(first.placement);
    let _ = writeln!(
        s,
        "## The userspace bond against the kernel's driver\n\n\
         The same cells{} measured with the kernel's bonding driver ({}) and with the worker's \
         userspace bond ({}), {} aggregate Mbit/s (each with its interval in appendix.md); the \
         ratio is userspace ÷ kernel with its 95% interval (of the repetitions' geometric \
         means). Retransmissions and out-of-order segments are TCP's own counts per trial, \
         both ends summed, kernel/userspace; CPU is the busy time of both ends' kernels per MB \
         of payload, userspace ÷ kernel (each node's own on VM and real nodes; on container \
         and namespace nodes the one host's, counted by every end).\n",
        placement.map_or(String::new(), |p| format!(" (all {})", p.as_str())),
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
        "CPU",
    ]
    .map(String::from);
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                cell_name(r, placement.is_none()),
                side(&r.kernel),
                side(&r.userspace),
                r.ratio.map_or("—".into(), |e| {
                    format!("{:.2} [{:.2}, {:.2}]", e.ratio, e.low, e.high)
                }),
                per_trial(&r.kernel, &r.userspace, |t| t.retransmissions),
                per_trial(&r.kernel, &r.userspace, |t| t.out_of_order),
                r.cpu_factor().map_or("—".into(), |f| format!("{f:.2}×")),
            ]
        })
        .collect();
    table(
        s,
        &header,
        &body,
        &[false, true, true, true, true, true, true],
    );
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
            Reading::DiffersWithTcpEvents => "with more reordering or loss in TCP's counters \
                 than the kernel's driver: the stand-in's frames arrive out of order or are lost \
                 more often"
                .to_string(),
            Reading::DiffersWithMoreCpu => format!(
                "with no more reordering or loss in TCP's counters, and {:.1}× the nodes' CPU \
                 per MB ({} ms against the kernel's {}): the difference is the stand-in's work \
                 per frame (its copies through TUN and the worker)",
                r.cpu_factor().expect("counted on both sides"),
                cpu_per_mb(&r.userspace),
                cpu_per_mb(&r.kernel)
            ),
            Reading::DiffersUnexplained => format!(
                "with no more reordering or loss in TCP's counters and {:.2}× the nodes' CPU per \
                 MB ({} ms against the kernel's {}): neither explains it, and this run measured \
                 nothing else that would",
                r.cpu_factor().expect("counted on both sides"),
                cpu_per_mb(&r.userspace),
                cpu_per_mb(&r.kernel)
            ),
            Reading::DiffersInTheHosts => "with no more reordering or loss in TCP's counters: \
                 the difference is likely in the nodes' work per frame (the userspace bond's \
                 copies through TUN and the worker), which this run did not count"
                .to_string(),
            _ => "and the records carry no TCP counters to say why".to_string(),
        };
        let _ = writeln!(
            s,
            "- {}: the userspace bond gives {:.2}× the kernel's ({:.0}% {}), {why}.",
            cell_name(r, placement.is_none()),
            e.ratio,
            (e.ratio - 1.0).abs() * 100.0,
            if e.ratio < 1.0 { "less" } else { "more" }
        );
    }
    s.push('\n');
}

/// `token 8 KiB ×2`, with the placement where the rows do not all share one.
fn cell_name(r: &DriverRow, with_placement: bool) -> String {
    let name = format!(
        "{} {} ×{}",
        r.measure.pattern.as_str(),
        size(r.size_bytes),
        r.pairs
    );
    if with_placement {
        format!("{name} {}", r.placement.as_str())
    } else {
        name
    }
}

fn side(x: &Side) -> String {
    x.value.map_or("—".into(), human)
}

/// Busy CPU ms per MB of one side, for the text.
fn cpu_per_mb(x: &Side) -> String {
    x.cpu.and_then(|c| c.ms_per_mb()).map_or("—".into(), human)
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
