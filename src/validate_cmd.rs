//! `orchestrate validate`: every file checked as what it is (experiment, topology, inventory),
//! every problem found, then told either as people read it (a summary line per good file on
//! stdout, each problem with its source snippet on stderr) or, with `--json`, as one JSON
//! document on stdout. The exit code is the same either way: non-zero if any file has a
//! problem.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;

use orchestrate::spec::limits::MAX_REPORTED_ERRORS;
use orchestrate::spec::{SpecError, SpecErrors};
use orchestrate::{plan, remote, topology};

/// What a file was read as.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Experiment,
    Topology,
    Inventory,
}

/// One problem: located in a file where it can be, else only named with the file.
#[derive(Debug, Serialize)]
struct Problem {
    message: String,
    file: PathBuf,
    line: Option<usize>,
    column: Option<usize>,
    help: Option<String>,
    /// For the text form: the error itself, which miette shows with its snippet.
    #[serde(skip)]
    located: Option<SpecError>,
}

impl From<SpecError> for Problem {
    fn from(e: SpecError) -> Problem {
        Problem {
            message: e.message.clone(),
            file: e.location.file.clone(),
            line: Some(e.location.line),
            column: Some(e.location.column),
            help: e.help.clone(),
            located: Some(e),
        }
    }
}

/// One file's verdict.
#[derive(Debug, Serialize)]
struct FileCheck {
    file: PathBuf,
    kind: Kind,
    ok: bool,
    /// What the file holds, when it is good (`experiment grid4x4: 3 topologies, 36 points`).
    summary: Option<String>,
    /// The first [`MAX_REPORTED_ERRORS`] problems, in file order.
    errors: Vec<Problem>,
    /// How many problems there were beyond those.
    more_errors: usize,
    /// Worth knowing, not wrong: hosts of an inventory no topology uses.
    notes: Vec<Problem>,
}

/// What `validate --json` prints: every file's check and whether all passed.
#[derive(Debug, Serialize)]
struct ValidationResult {
    ok: bool,
    files: Vec<FileCheck>,
}

pub fn validate(files: &[PathBuf], json: bool) -> ExitCode {
    let checks: Vec<FileCheck> = files.iter().map(|f| check(f)).collect();
    let verdict = ValidationResult {
        ok: checks.iter().all(|c| c.ok),
        files: checks,
    };
    let ok = verdict.ok;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&verdict).expect("a verdict serializes")
        );
    } else {
        print_text(verdict);
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn print_text(verdict: ValidationResult) {
    for c in verdict.files {
        for n in &c.notes {
            eprintln!("note: {}", one_line(n));
        }
        for e in c.errors {
            print_problem(e);
        }
        if c.more_errors > 0 {
            eprintln!(
                "{}: ... and {} more problem(s)",
                c.file.display(),
                c.more_errors
            );
        }
        if let Some(summary) = &c.summary {
            println!("ok  {}  ({summary})", c.file.display());
        }
    }
}

fn print_problem(p: Problem) {
    match p.located {
        Some(e) => eprintln!("{:?}", miette::Report::new(e)),
        None => eprintln!("{}", one_line(&p)),
    }
}

/// `file:line:column: message`, or `file: message` where there is no place.
fn one_line(p: &Problem) -> String {
    match (p.line, p.column) {
        (Some(l), Some(c)) => format!("{}:{l}:{c}: {}", p.file.display(), p.message),
        _ => format!("{}: {}", p.file.display(), p.message),
    }
}

fn check(f: &Path) -> FileCheck {
    let kind = kind_of(f);
    let mut notes = Vec::new();
    let outcome = match kind {
        Kind::Experiment => check_experiment(f, &mut notes),
        Kind::Topology => topology::load(f).map_err(problems).map(|t| {
            format!(
                "topology {}: {} nodes, {} segments, {} subnets",
                t.name,
                t.nodes.len(),
                t.segments.len(),
                t.subnets.len()
            )
        }),
        Kind::Inventory => remote::Inventory::load(f)
            .map_err(problems)
            .map(|i| format!("inventory: {} hosts", i.hosts.len())),
    };
    let (summary, mut errors) = match outcome {
        Ok(s) => (Some(s), Vec::new()),
        Err(e) => (None, e),
    };
    let more_errors = errors.len().saturating_sub(MAX_REPORTED_ERRORS);
    errors.truncate(MAX_REPORTED_ERRORS);
    FileCheck {
        file: f.to_owned(),
        kind,
        ok: errors.is_empty(),
        summary,
        errors,
        more_errors,
        notes,
    }
}

fn problems(e: SpecErrors) -> Vec<Problem> {
    e.in_file_order()
        .errors
        .into_iter()
        .map(Problem::from)
        .collect()
}

/// An experiment, its plan, and the inventory it names (checked against its topologies).
fn check_experiment(f: &Path, notes: &mut Vec<Problem>) -> Result<String, Vec<Problem>> {
    let e = plan::load(f).map_err(problems)?;
    let inventory = plan::check_inventory(&e).map_err(problems)?;
    let p = plan::expand(&e).map_err(problems)?;
    let mut summary = format!(
        "experiment {}: {} topologies, {} points",
        e.name,
        e.topologies.len(),
        p.points.len()
    );
    match inventory {
        Some(checked) => {
            notes.extend(checked.unused.into_iter().map(Problem::from));
            summary += &format!(
                ", inventory {} with {} hosts",
                checked.inventory.source.path.display(),
                checked.inventory.inventory.hosts.len()
            );
        }
        None if matches!(e.cluster, plan::experiment::Cluster::Slurm { .. }) => {
            summary += ", nodes from the Slurm allocation it runs in";
        }
        None => {}
    }
    Ok(summary)
}

/// Experiments name topologies and workloads; inventories have `[defaults]` or `[[host]]`
/// tables (a topology's `host` is a profile or one table, never an array); everything else
/// is read as a topology. Read leniently, so that a file with a syntax error or an
/// out-of-range value is still reported as what it is.
pub fn kind_of(path: &Path) -> Kind {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    if orchestrate::spec::is_experiment(&text) {
        Kind::Experiment
    } else if orchestrate::spec::is_inventory(&text) {
        Kind::Inventory
    } else {
        Kind::Topology
    }
}
