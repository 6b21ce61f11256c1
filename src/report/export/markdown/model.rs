//! "Measured against the model": each token-test cell beside the analytic model, with what the
//! run counted that explains a cell outside the tolerance, or "unexplained".

use std::fmt::Write;

use super::medium::{MEDIA_COLUMNS, MEDIA_LEGEND, media_cells};
use super::table::table;
use crate::report::document::Report;
use crate::report::emulator_stats::MediaReport;
use crate::report::format::{human, md_cell, percent, size};
use crate::report::predicted::{Cause, ModelRow, TOLERANCE};

/// The analytic model beside the measurement, cell by cell, with what the medium did during
/// the cell's points when the run recorded it.
pub fn against_model(s: &mut String, report: &Report, media: &MediaReport) {
    if report.model.is_empty() {
        return;
    }
    intro(s, report);
    model_table(s, report, media);
}

/// What the model counts, then how many cells agree with it, on one wire and across hops.
fn intro(s: &mut String, report: &Report) {
    let tol = percent(TOLERANCE);
    let _ = write!(
        s,
        "## Measured against the model\n\n\
         The analytic model (`orchestrate plan` prints it per placement) predicts each token-test \
         cell's aggregate throughput from what the emulated machine does: every frame's time on \
         each wire it crosses (Ethernet, IP and TCP framing per token size, acknowledgements \
         included, an idle wire too), store and forward at switches, shared-bus capacity with \
         CSMA/CD's efficiency as Boggs, Mogul & Kent measured it on a real Ethernet (not the \
         emulator's own simulation, so that the two agreeing means something), the nodes' host \
         costs per frame sent, received and forwarded, a fixed cost per hop for the nodes' own \
         stacks, and bonding as striping over the slaves, each slave's frames over its own wires \
         (a bond over a row and a column interface sends every other frame across the switch \
         and the peer's other bus). Measured is the {} over repetitions. A cell more \
         than ±{tol} from the model gets its measured cause: for a shortfall, the events the \
         model has no room for that the run counted during the cell's points (TCP's \
         retransmissions and out-of-order segments from both ends' TCP_INFO, the medium's \
         excess-collision and queue drops, points with the emulator's timing outside its \
         bound); for any miss, a figure over what the wires carry. Where none was counted the \
         cell is *unexplained*: the model leaves out something this run did not measure.\n\n",
        report.statistic.as_str()
    );
    let count = |single: bool| {
        let rows: Vec<_> = report
            .model
            .iter()
            .filter(|r| r.single_segment() == single)
            .collect();
        let within = rows.iter().filter(|r| r.within_tolerance()).count();
        (within, rows.len())
    };
    let (w1, n1) = count(true);
    let (w2, n2) = count(false);
    let over: Vec<&ModelRow> = report.model.iter().filter(|r| r.over_the_wire()).collect();
    if n1 > 0 {
        let _ = writeln!(
            s,
            "- Single-segment cells (every pair on one wire: a bus, a segment or a bond): {w1} of \
             {n1} within ±{tol}."
        );
    }
    if n2 > 0 {
        let _ = writeln!(
            s,
            "- Cells whose pairs cross a forwarding node or a switch: {w2} of {n2} within ±{tol}."
        );
    }
    if !over.is_empty() {
        let list: Vec<String> = over
            .iter()
            .map(|r| {
                format!(
                    "{} {}× {} ({} measured, {} possible)",
                    md_cell(&r.key.config.label()),
                    r.key.pairs,
                    size(r.key.size_bytes),
                    human(r.measured_mbit_s),
                    human(r.capacity_mbit_s.unwrap_or_default())
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "- **⛔ Over the wire:** {} cell(s) measured more than their wires can carry, so \
             their figures are not measurements and are not printed as such: {}.",
            over.len(),
            list.join("; ")
        );
    }
    s.push('\n');
}

/// The table, a row per token-test cell, then the causes it refers to.
fn model_table(s: &mut String, report: &Report, media: &MediaReport) {
    let mut header: Vec<String> = [
        "configuration",
        "pairs",
        "size",
        "measured Mbit/s",
        "model Mbit/s",
        "measured/model",
        "wires carry Mbit/s",
        "limited by",
        "measured cause",
    ]
    .map(String::from)
    .to_vec();
    let mut right = vec![false, true, true, true, true, true, true, false, false];
    if media.present {
        header.extend(MEDIA_COLUMNS.map(String::from));
        right.extend([true, false, true, true]);
        s.push_str(MEDIA_LEGEND);
    }
    let rows: Vec<Vec<String>> = report
        .model
        .iter()
        .map(|r| {
            // A figure over the wire is not a measurement: it is not printed as one.
            let (measured, ratio) = if r.over_the_wire() {
                ("⛔ over the wire".to_owned(), "—".to_owned())
            } else {
                (human(r.measured_mbit_s), format!("{:.2}", r.ratio()))
            };
            let mut row = vec![
                md_cell(&r.key.config.label()),
                r.key.pairs.to_string(),
                size(r.key.size_bytes),
                measured,
                human(r.predicted_mbit_s),
                ratio,
                r.capacity_mbit_s.map(human).unwrap_or_default(),
                r.bound.clone(),
                r.cause.as_ref().map(Cause::text).unwrap_or_default(),
            ];
            if media.present {
                row.extend(media_cells(media, &r.key));
            }
            row
        })
        .collect();
    table(s, &header, &rows, &right);
    unexplained(s, &report.model);
}

/// How many misses nothing counted explains, said once under the table.
fn unexplained(s: &mut String, rows: &[ModelRow]) {
    let misses = rows.iter().filter(|r| r.cause.is_some()).count();
    let none = rows
        .iter()
        .filter(|r| r.cause == Some(Cause::Unexplained))
        .count();
    if misses > 0 {
        let _ = writeln!(
            s,
            "Of the {misses} cells outside ±{}, {none} {} unexplained by anything this run \
             counted.\n",
            percent(TOLERANCE),
            if none == 1 { "is" } else { "are" }
        );
    }
}
