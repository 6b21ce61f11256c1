//! "Applications": each collective's time per iteration on every configuration beside the
//! baseline, and which collectives the network choice matters to (report.md); each cell
//! beside the model, with its interval and ranks (appendix.md).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::table::table;
use crate::plan::throughput_model::collectives::BACKOFF_DRAWS;
use crate::report::applications::{AppCell, Applications, PEER_AGREEMENT, Spread};
use crate::report::format::{human, md_cell, size, times};
use crate::report::short_labels::initials;

/// Milliseconds as tables give them: three significant digits.
fn ms(us: f64) -> String {
    human(us / 1e3)
}

/// Configurations in the order the cells first name them, each with its short label.
fn configs(a: &Applications) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for c in &a.cells {
        let name = c.config();
        if !out.iter().any(|(n, _)| *n == name) {
            let label = if c.bonding == "none" {
                initials(&c.topology)
            } else {
                format!("{}/{}", initials(&c.topology), c.bonding)
            };
            out.push((name, label));
        }
    }
    out
}

/// The collectives' rows: per collective and size, its cell on each configuration.
fn rows(a: &Applications) -> BTreeMap<(String, u64), Vec<&AppCell>> {
    let mut rows: BTreeMap<(String, u64), Vec<&AppCell>> = BTreeMap::new();
    for c in &a.cells {
        rows.entry((c.pattern.as_str().to_owned(), c.size_bytes))
            .or_default()
            .push(c);
    }
    rows
}

/// report.md's section.
pub fn applications(s: &mut String, a: &Applications) {
    let configs = configs(a);
    let ranks: Vec<String> = {
        let mut r: Vec<u32> = a.cells.iter().map(|c| c.ranks).collect();
        r.sort_unstable();
        r.dedup();
        r.iter().map(u32::to_string).collect()
    };
    let baseline = a
        .baseline
        .as_deref()
        .filter(|b| a.cells.iter().any(|c| c.topology == *b));
    let _ = writeln!(
        s,
        "## Applications\n\n\
         Time per iteration in ms of each collective among {} ranks, one per node: the mean \
         over ranks of each rank's mean time per iteration, as the OSU micro-benchmarks print \
         it; the {} of the repetitions{}. Every rank runs the algorithm named (Open MPI's, \
         step for step). Configurations: {}.\n",
        ranks.join(", "),
        a.statistic.as_str(),
        baseline.map_or(String::new(), |b| format!(
            "; × is the ratio to {}",
            md_cell(b)
        )),
        configs
            .iter()
            .map(|(n, l)| format!("{l} {}", md_cell(n)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut header = vec!["collective".to_owned(), "size".to_owned()];
    header.extend(configs.iter().map(|(_, l)| l.clone()));
    header.push("spread".to_owned());
    let mut right = vec![false, true];
    right.extend(configs.iter().map(|_| true));
    right.push(true);
    let spreads: BTreeMap<(String, u64), &Spread> = a
        .spreads
        .iter()
        .map(|x| ((x.pattern.as_str().to_owned(), x.size_bytes), x))
        .collect();
    let mut body = Vec::new();
    for ((pattern, bytes), cells) in rows(a) {
        // The algorithm that ran at this size (a ring of fewer elements than ranks runs as
        // recursive doubling).
        let mut row = vec![cells[0].collective(), size(bytes)];
        for (name, _) in &configs {
            row.push(match cells.iter().find(|c| c.config() == *name) {
                Some(c) => match (c.to_baseline, baseline) {
                    (Some(r), Some(b)) if c.topology != b => {
                        format!("{} ({})", ms(c.value_us), times(r))
                    }
                    _ => ms(c.value_us),
                },
                None => "—".to_owned(),
            });
        }
        row.push(
            spreads
                .get(&(pattern, bytes))
                .map_or("—".to_owned(), |x| times(x.ratio())),
        );
        body.push(row);
    }
    table(s, &header, &body, &right);
    sensitivity(s, a);
    against_peer(s, a);
}

/// The answer to the paper's anticipation, collective by collective.
fn sensitivity(s: &mut String, a: &Applications) {
    if a.sensitivity.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "Spread: the slowest configuration's time over the fastest's. The paper anticipated \
         that \"while some problems may exhibit sensitivities to the network choices, many \
         others will be less dramatically impacted than the rather severe tests shown in this \
         paper\". Measured, at the size where each depends on the network most:\n"
    );
    for x in &a.sensitivity {
        let at = &x.at;
        let _ = writeln!(
            s,
            "- **{}**: {} sensitivity, at {}: {} {} ms against {} {} ms ({}).",
            x.pattern.as_str(),
            x.degree(),
            size(at.size_bytes),
            md_cell(&at.slowest.0),
            ms(at.slowest.1),
            md_cell(&at.fastest.0),
            ms(at.fastest.1),
            times(at.ratio())
        );
    }
    s.push('\n');
}

/// The worker against an MPI library on the same cluster, cell by cell.
fn against_peer(s: &mut String, a: &Applications) {
    let pairs = a.against_peer();
    if pairs.is_empty() {
        return;
    }
    let mut libraries: Vec<&str> = pairs
        .iter()
        .filter_map(|(m, _)| m.library.as_deref())
        .collect();
    libraries.sort_unstable();
    libraries.dedup();
    let _ = writeln!(
        s,
        "### The worker against MPI on the same cluster\n\n\
         The same collectives, algorithms, ranks and wires, run by {} (mpirun over the run's \
         SSH, TCP on the experiment's subnets only, the algorithm fixed with \
         `coll_tuned_*_algorithm`) and timed the same way; MPI/worker is the ratio of the two \
         times, and they agree within ±{:.0}%.\n",
        if libraries.is_empty() {
            "an MPI library".to_owned()
        } else {
            libraries.join(", ")
        },
        PEER_AGREEMENT * 100.0
    );
    let header: Vec<String> = [
        "collective",
        "size",
        "config",
        "worker ms",
        "MPI ms",
        "MPI/worker",
        "agree",
    ]
    .map(str::to_owned)
    .to_vec();
    let right = [false, true, false, true, true, true, false];
    let mut agree = 0;
    let mut compared = 0;
    let body: Vec<Vec<String>> = pairs
        .iter()
        .map(|(m, w)| {
            let (worker, ratio, verdict) = match w {
                Some(w) => {
                    let r = m.value_us / w.value_us;
                    let ok = (r - 1.0).abs() <= PEER_AGREEMENT;
                    compared += 1;
                    agree += usize::from(ok);
                    (ms(w.value_us), times(r), if ok { "yes" } else { "no" })
                }
                None => ("—".to_owned(), "—".to_owned(), "—"),
            };
            vec![
                m.collective(),
                size(m.size_bytes),
                md_cell(&m.config()),
                worker,
                ms(m.value_us),
                ratio,
                verdict.to_owned(),
            ]
        })
        .collect();
    table(s, &header, &body, &right);
    let _ = writeln!(
        s,
        "MPI and the worker agree within ±{:.0}% in {agree} of {compared} cells.\n",
        PEER_AGREEMENT * 100.0
    );
}

/// appendix.md's section: every cell with its interval, ranks and the model.
pub fn against_model(s: &mut String, a: &Applications) {
    let _ = writeln!(
        s,
        "## Applications: every cell\n\n\
         Per cell: the {} time per iteration in ms with its interval (in brackets), the \
         repetitions counted (and not: failed, or measured while the emulator missed its \
         bound), the fastest and slowest rank, TCP retransmissions of all ranks, and the \
         model's time per iteration (each rank's iteration between the worker's barriers, \
         frame by frame through the nodes' CPUs, the switch ports and the shared segments, \
         contended for with IEEE 802.3's collisions and backoff, the mean of {} seeded \
         draws) with what bounds it (`segment`, `port`, `host`: the resource the timed \
         iteration's frames keep busy for at least half of it; `latency` otherwise: the \
         messages' own way).\n",
        a.statistic.as_str(),
        BACKOFF_DRAWS
    );
    let header: Vec<String> = [
        "collective",
        "size",
        "config",
        "ms",
        "n",
        "ranks ms",
        "retr",
        "model ms",
        "×",
        "limit",
    ]
    .map(str::to_owned)
    .to_vec();
    let right = [
        false, true, false, true, true, true, true, true, true, false,
    ];
    let body: Vec<Vec<String>> = a
        .cells
        .iter()
        .chain(&a.peer_cells)
        .map(|c| {
            let interval = c.interval.map_or(String::new(), |i| {
                format!(" [{}, {}]", ms(i.low), ms(i.high))
            });
            let counted = if c.not_counted > 0 {
                format!("{} (+{})", c.repetitions.len(), c.not_counted)
            } else {
                c.repetitions.len().to_string()
            };
            let (model, ratio, limit) = match &c.model {
                Some((m, l)) => (ms(*m), times(c.value_us / m), l.clone()),
                None => ("—".to_owned(), "—".to_owned(), String::new()),
            };
            vec![
                c.collective(),
                size(c.size_bytes),
                md_cell(&c.config()),
                format!("{}{interval}", ms(c.value_us)),
                counted,
                format!("{}–{}", ms(c.fastest_rank_us), ms(c.slowest_rank_us)),
                c.retransmissions.map_or("—".to_owned(), |r| r.to_string()),
                model,
                ratio,
                limit,
            ]
        })
        .collect();
    table(s, &header, &body, &right);
    let modelled: Vec<f64> = a
        .cells
        .iter()
        .filter_map(|c| c.model.as_ref().map(|(m, _)| c.value_us / m))
        .collect();
    if !modelled.is_empty() {
        let within = modelled
            .iter()
            .filter(|r| (**r - 1.0).abs() <= 0.15)
            .count();
        let _ = writeln!(
            s,
            "The model is within ±15% of the worker's measured time in {within} of {} cells.\n",
            modelled.len()
        );
    }
}
