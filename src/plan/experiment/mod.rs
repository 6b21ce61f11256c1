//! An experiment resolved: its topologies loaded and every cross-reference checked (baseline,
//! explicit pairs, pattern options), with sweeps expanded to concrete values.

mod cluster;
mod references;
mod workload;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use toml::Spanned;

use crate::spec::experiment::{
    BondingSpec, ExperimentSpec, Pattern, PlacementKind, Protocol, ReportFormat, Statistic,
};
use crate::spec::limits::{MAX_POINTS, MAX_TOPOLOGIES};
use crate::spec::topology::BondMode;
use crate::spec::{HostSpec, Name, NodeName, Rate, SourceFile, SpecError, SpecErrors, best_match};
use crate::topology::{self, Topology};

#[derive(Debug, Clone, Serialize)]
pub struct Experiment {
    pub name: Name,
    pub description: Option<String>,
    #[serde(skip)]
    pub path: PathBuf,
    /// The experiment file, for locating problems only the plan finds.
    #[serde(skip)]
    pub source: SourceFile,
    pub seed: u64,
    pub topologies: Vec<Topology>,
    pub cluster: Cluster,
    pub bonding_modes: Vec<BondMode>,
    pub workloads: Vec<Workload>,
    pub baseline: Option<Name>,
    pub formats: Vec<ReportFormat>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Cluster {
    Docker,
    Inventory {
        path: PathBuf,
        /// Where the experiment names it, for messages about what it lacks.
        #[serde(skip)]
        named_at: Range<usize>,
    },
    /// The current Slurm allocation's hosts, reached as `ssh` says.
    Slurm {
        ssh: crate::remote::SshSettings,
        sudo: bool,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct Workload {
    pub pattern: Pattern,
    pub protocol: Protocol,
    pub sizes: Vec<u64>,
    pub pairs: Vec<u32>,
    pub placements: Vec<PlacementKind>,
    pub explicit_pairs: Vec<(NodeName, NodeName)>,
    pub amount: Amount,
    pub warmup: u64,
    pub repetitions: u32,
    pub statistic: Statistic,
    pub depth: Option<u32>,
    pub rate: Option<Rate>,
    pub drop_caches: bool,
    /// Where the workload's keys are, for problems only the plan finds.
    #[serde(skip)]
    pub spans: WorkloadSpans,
}

/// Where a workload's keys are written.
#[derive(Debug, Clone, Default)]
pub struct WorkloadSpans {
    /// `pairs`, where a count the topology cannot place is reported.
    pub pairs: Range<usize>,
    /// `exchanges` or `duration`, where an estimate too long to represent is reported.
    pub amount: Range<usize>,
}

/// How much traffic one run carries.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Amount {
    Exchanges(u64),
    Duration(#[serde(with = "humantime_serde_secs")] Duration),
}

mod humantime_serde_secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

/// Loads the experiment at `path` with its topologies, checking everything a run relies on.
/// Every stage keeps going after an error, so that one attempt reports all of a file's errors.
pub fn load(path: &Path) -> Result<Experiment, SpecErrors> {
    let source = SourceFile::read(path)?;
    let spec: ExperimentSpec = source.parse()?;
    let mut errors = ErrorList::new(&source);
    let dir = path.parent().unwrap_or(Path::new("."));

    let name = experiment_name(spec.name.as_ref(), path);
    let topologies = load_topologies(&spec.topologies, spec.host.as_ref(), dir, &mut errors);
    let cluster = cluster::cluster(&spec.cluster, dir, &mut errors);
    let bonding_modes = bonding_modes(&spec.bonding, &topologies, &mut errors);
    let baseline = baseline(spec.report.baseline.as_ref(), &topologies, &mut errors);
    let workloads = workload::workloads(&spec.workload, &topologies, &mut errors);
    references::check(&spec.reference, &topologies, &workloads, &mut errors);
    if errors.is_empty() {
        check_point_count(&spec, &topologies, &bonding_modes, &workloads, &mut errors);
    }

    errors.into_result()?;
    Ok(Experiment {
        name,
        description: spec.description,
        path: path.to_owned(),
        source: source.clone(),
        seed: spec.seed,
        topologies,
        cluster,
        bonding_modes,
        workloads,
        baseline,
        formats: spec.report.formats,
    })
}

/// The plan stays within [`MAX_POINTS`]; if not, the error points at the largest factor of
/// the workload that contributes most (sizes, pair counts, placements or repetitions).
fn check_point_count(
    spec: &ExperimentSpec,
    topologies: &[Topology],
    modes: &[BondMode],
    workloads: &[Workload],
    errors: &mut ErrorList,
) {
    let configurations: usize = topologies
        .iter()
        .map(|t| if t.has_bonds() { modes.len().max(1) } else { 1 })
        .sum();
    let per_workload: Vec<[(usize, Range<usize>); 4]> = workloads
        .iter()
        .zip(spec.workload.get_ref())
        .map(|(w, s)| {
            [
                (w.sizes.len(), s.sizes.span()),
                (w.pairs.len(), s.pairs.span()),
                (w.placements.len(), s.placement.span()),
                (w.repetitions as usize, s.repetitions.span()),
            ]
        })
        .collect();
    let points_of = |factors: &[(usize, Range<usize>); 4]| {
        factors
            .iter()
            .fold(configurations, |n, (f, _)| n.saturating_mul(*f))
    };
    let total = per_workload
        .iter()
        .map(points_of)
        .fold(0usize, usize::saturating_add);
    if total <= MAX_POINTS {
        return;
    }
    let Some(biggest) = per_workload.iter().max_by_key(|f| points_of(f)) else {
        return;
    };
    let (_, span) = biggest
        .iter()
        .filter(|(_, s)| !s.is_empty())
        .max_by_key(|(f, _)| *f)
        .cloned()
        .unwrap_or((0, spec.workload.span()));
    errors.push_with_help(
        span,
        format!("the plan would have {total} points; at most {MAX_POINTS} are allowed"),
        Some(
            "points are configurations × sizes × pair counts × placements × repetitions, \
             summed over the workloads"
                .into(),
        ),
    );
}

/// The errors found in one experiment file so far, in the order they were found.
struct ErrorList<'a> {
    source: &'a SourceFile,
    errors: Vec<SpecError>,
}

impl<'a> ErrorList<'a> {
    fn new(source: &'a SourceFile) -> Self {
        ErrorList {
            source,
            errors: Vec::new(),
        }
    }

    fn push(&mut self, span: Range<usize>, message: impl Into<String>) {
        self.push_with_help(span, message, None);
    }

    fn push_with_help(
        &mut self,
        span: Range<usize>,
        message: impl Into<String>,
        help: Option<String>,
    ) {
        self.errors.push(self.source.error(span, message, help));
    }

    fn extend(&mut self, errors: Vec<SpecError>) {
        self.errors.extend(errors);
    }

    /// Some checks run only on an otherwise clean file: after an earlier error they would
    /// mostly repeat it (a baseline "missing" because its topology failed to load).
    fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    fn into_result(self) -> Result<(), SpecErrors> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(SpecErrors::new(self.errors))
        }
    }
}

/// The `name` given, or else the file name without `.toml`.
fn experiment_name(given: Option<&Spanned<Name>>, path: &Path) -> Name {
    match given {
        Some(n) => n.get_ref().clone(),
        None => path
            .file_stem()
            .and_then(|s| s.to_string_lossy().parse().ok())
            .unwrap_or_else(|| "experiment".parse().expect("valid")),
    }
}

/// Loads every topology file named (relative to `dir`), with the experiment's `host` in place
/// of each node's own where one is given. Keeps going to report every broken file at once.
fn load_topologies(
    files: &Spanned<Vec<Spanned<String>>>,
    host: Option<&HostSpec>,
    dir: &Path,
    errors: &mut ErrorList,
) -> Vec<Topology> {
    let mut topologies: Vec<Topology> = Vec::new();
    if files.get_ref().is_empty() {
        errors.push(
            files.span(),
            "`topologies` is empty: name at least one topology file",
        );
    }
    if files.get_ref().len() > MAX_TOPOLOGIES {
        errors.push(
            files.span(),
            format!(
                "{} topologies; an experiment compares at most {MAX_TOPOLOGIES}",
                files.get_ref().len()
            ),
        );
        return topologies;
    }
    for t in files.get_ref() {
        let tpath = dir.join(t.get_ref());
        if !tpath.is_file() {
            errors.push(
                t.span(),
                format!("topology file {} does not exist", tpath.display()),
            );
            continue;
        }
        match topology::load(&tpath) {
            Ok(mut topo) => {
                if let Some(host) = host {
                    let host = topology::Host::from_spec(host);
                    for n in &mut topo.nodes {
                        n.host = host.clone();
                    }
                }
                if topologies.iter().any(|x| x.name == topo.name) {
                    errors.push(
                        t.span(),
                        format!("two topologies are named `{}`", topo.name),
                    );
                }
                topologies.push(topo);
            }
            Err(e) => errors.extend(e.errors),
        }
    }
    topologies
}

/// The bonding modes to sweep; giving any only makes sense if some topology has a bond.
fn bonding_modes(
    spec: &BondingSpec,
    topologies: &[Topology],
    errors: &mut ErrorList,
) -> Vec<BondMode> {
    let modes: Vec<BondMode> = spec.modes.iter().map(|m| *m.get_ref()).collect();
    if let Some(m) = spec.modes.first()
        && errors.is_empty()
        && !topologies.iter().any(Topology::has_bonds)
    {
        errors.push(
            m.span(),
            "bonding modes are given but no topology has a bond",
        );
    }
    modes
}

/// The topology the report compares the others against, which must be one of them.
fn baseline(
    given: Option<&Spanned<Name>>,
    topologies: &[Topology],
    errors: &mut ErrorList,
) -> Option<Name> {
    let b = given?;
    if errors.is_empty() && !topologies.iter().any(|t| &t.name == b.get_ref()) {
        let names = topologies.iter().map(|t| t.name.as_str());
        let help = best_match(b.get_ref().as_str(), names).map(|m| format!("did you mean `{m}`?"));
        errors.push_with_help(
            b.span(),
            format!(
                "baseline `{}` is not one of the experiment's topologies",
                b.get_ref()
            ),
            help,
        );
    }
    Some(b.get_ref().clone())
}
