//! `history.csv` beside an experiment's runs (`reports/<experiment>/history.csv`): every
//! reference check of every reported run, one line per run and reference, as ReFrame's
//! performance log keeps them, and `history.svg`, each reference's measured figure run after
//! run between its bounds.
//!
//! Reporting a run again replaces that run's lines, so the file holds each run once however
//! often it was reported; lines of runs whose directories are gone stay (the history is a
//! record). Lines are kept in run order, which is time order: run directories are named by
//! their UTC start.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::document::RunInfo;
use super::error::ReportError;
use super::export::svg;
use super::figures::{Chart, Figure, Panel, Series, Style};
use super::format::{csv_f64, csv_field, unix_ns};
use super::references::ReferenceChecks;

const FILE: &str = "history.csv";
const FIGURE: &str = "history.svg";
const HEADER: &str = "run,finished,commit,cluster,reference,quantity,unit,expected,\
                      lower_bound,upper_bound,measured,verdict";

/// Records the checks of the run in `run_dir` in its parent's history and redraws the
/// history's figure; nothing when the experiment has no references for this cluster. Returns
/// the files written.
pub fn record(
    run_dir: &Path,
    info: &RunInfo,
    refs: &ReferenceChecks,
) -> Result<Vec<PathBuf>, ReportError> {
    if refs.checks.is_empty() {
        return Ok(Vec::new());
    }
    let dir = run_dir.canonicalize().map_err(|e| io(run_dir, e))?;
    let (Some(parent), Some(run)) = (dir.parent(), dir.file_name()) else {
        return Ok(Vec::new());
    };
    let run = run.to_string_lossy().into_owned();
    let path = parent.join(FILE);
    let old = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(&path, e)),
    };
    let mut by_run: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in old.lines().skip(1).filter(|l| !l.is_empty()) {
        let fields = split(line);
        let Some(first) = fields.first() else {
            continue;
        };
        if *first != run {
            by_run
                .entry(first.clone())
                .or_default()
                .push(line.to_owned());
        }
    }
    by_run.insert(run.clone(), lines(&run, info, refs));
    let mut text = format!("{HEADER}\n");
    for line in by_run.values().flatten() {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(&path, &text).map_err(|e| io(&path, e))?;
    let figure = parent.join(FIGURE);
    std::fs::write(&figure, svg::render(&figure_of(&text))?).map_err(|e| io(&figure, e))?;
    Ok(vec![path, figure])
}

fn io(path: &Path, source: std::io::Error) -> ReportError {
    ReportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The run's lines, one per checked reference.
fn lines(run: &str, info: &RunInfo, refs: &ReferenceChecks) -> Vec<String> {
    let finished = info
        .manifest
        .finished_unix_ns
        .map(unix_ns)
        .unwrap_or_default();
    let commit = info
        .manifest
        .tool
        .as_ref()
        .and_then(|t| t.commit.clone())
        .unwrap_or_default();
    refs.checks
        .iter()
        .map(|c| {
            let mut l = String::new();
            let _ = write!(
                l,
                "{},{},{},{},{},{},{},{},{},{},{},{}",
                csv_field(run),
                finished,
                csv_field(&commit),
                refs.cluster,
                csv_field(&c.reference),
                c.quantity,
                c.unit,
                csv_f64(Some(c.expected)),
                csv_f64(c.lower_bound),
                csv_f64(c.upper_bound),
                csv_f64(c.measured),
                c.verdict.as_str()
            );
            l
        })
        .collect()
}

/// One CSV line's fields, with `"…"` quoting as [`csv_field`] writes it.
fn split(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(ch) = chars.next() {
        match (ch, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut field)),
            _ => field.push(ch),
        }
    }
    fields.push(field);
    fields
}

/// One reference in one run, as the figure draws it.
struct Point {
    /// 1 for the oldest run.
    run: usize,
    measured: Option<f64>,
    lower: Option<f64>,
    upper: Option<f64>,
}

/// Each reference's measured figure over the runs, with its bounds: one panel per reference,
/// the runs numbered from the oldest.
fn figure_of(history: &str) -> Figure {
    let mut runs: Vec<String> = Vec::new();
    // (reference, `quantity [unit]`) → its points in run order.
    let mut panels: BTreeMap<(String, String), Vec<Point>> = BTreeMap::new();
    for line in history.lines().skip(1) {
        let f = split(line);
        if f.len() < 12 {
            continue;
        }
        if runs.last() != Some(&f[0]) {
            runs.push(f[0].clone());
        }
        let num = |s: &str| s.parse::<f64>().ok();
        panels
            .entry((f[4].clone(), format!("{} [{}]", f[5], f[6])))
            .or_default()
            .push(Point {
                run: runs.len(),
                measured: num(&f[10]),
                lower: num(&f[8]),
                upper: num(&f[9]),
            });
    }
    let series = |label: &str, style: usize, reference: bool, points: Vec<(f64, f64)>| Series {
        label: label.into(),
        points,
        whiskers: Vec::new(),
        reference,
        style: Style {
            colour: style,
            shape: style,
        },
        facet: None,
    };
    // Panels are numbered, the references named in the note: their names are too long for a
    // panel's title at print size.
    let named: Vec<String> = panels
        .keys()
        .enumerate()
        .map(|(i, (reference, _))| format!("R{} = {reference}", i + 1))
        .collect();
    let panels = panels
        .into_iter()
        .enumerate()
        .map(|(i, ((_, quantity), points))| {
            let pick = |value: fn(&Point) -> Option<f64>| -> Vec<(f64, f64)> {
                points
                    .iter()
                    .filter_map(|p| Some((p.run as f64, value(p)?)))
                    .collect()
            };
            let mut drawn = vec![series("measured", 0, false, pick(|p| p.measured))];
            for (i, label, line) in [
                (1, "lower bound", pick(|p| p.lower)),
                (2, "upper bound", pick(|p| p.upper)),
            ] {
                if !line.is_empty() {
                    drawn.push(series(label, i, true, line));
                }
            }
            Panel {
                title: format!("R{}: {quantity}", i + 1),
                series: drawn,
            }
        })
        .collect();
    Figure {
        stem: "history".into(),
        title: "Reference values, run after run".into(),
        x_label: "run (1 = oldest)".into(),
        y_label: "measured".into(),
        x_log: false,
        y_log: false,
        dodge: false,
        chart: Chart::Lines,
        panels,
        note: Some(format!(
            "{}. Runs: {}.",
            named.join("; "),
            runs.iter()
                .enumerate()
                .map(|(i, r)| format!("{} = {r}", i + 1))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_reads_back_what_csv_field_quotes() {
        let line = format!("a,{},{},", csv_field("b, c"), csv_field("say \"hi\""));
        assert_eq!(split(&line), ["a", "b, c", "say \"hi\"", ""]);
    }
}
