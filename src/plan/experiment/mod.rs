//! An experiment resolved: its topologies loaded and every cross-reference checked (baseline,
//! explicit pairs, pattern options), with sweeps expanded to concrete values.

mod amount;
mod cluster;
mod collective;
mod errors;
mod references;
mod workload;

pub use cluster::Cluster;
pub use collective::{CollectiveOptions, Implementation};
pub use workload::{Amount, Workload, WorkloadSpans};

use errors::ErrorList;

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Serialize;
use toml::Spanned;

use crate::spec::experiment::{BondingSpec, ExperimentSpec, MultipathSpec, Protocol, ReportFormat};
use crate::spec::limits::{MAX_POINTS, MAX_TOPOLOGIES};
use crate::spec::multipath::{MultipathHash, NodeMultipath, Routing};
use crate::spec::{HostSpec, Name, SourceFile, SpecErrors, best_match};
use crate::topology::routing::MAX_ECMP_NODES;
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
    /// Per topology, the same topology resolved without its bonds, where a multipath mode
    /// other than bonding runs on it (shown in the plan's configurations).
    #[serde(skip)]
    pub unbonded: Vec<Option<Topology>>,
    pub cluster: Cluster,
    /// Multipath modes to sweep on topologies with bonds; empty means the bonds' own modes.
    /// Named as before `[multipath]` existed, so plans of bonding sweeps read alike.
    #[serde(rename = "bonding_modes", serialize_with = "labels")]
    pub multipath_modes: Vec<NodeMultipath>,
    /// Routings to sweep on topologies with routes; empty means shortest paths only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routings: Vec<Routing>,
    /// The ECMP hash policy, where a routing is ECMP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multipath_hash: Option<MultipathHash>,
    pub workloads: Vec<Workload>,
    pub baseline: Option<Name>,
    pub formats: Vec<ReportFormat>,
}

/// Modes by their labels (a bonding mode's own name), as plans wrote them before `mptcp`.
fn labels<S: serde::Serializer>(modes: &[NodeMultipath], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(modes.iter().map(|m| m.label()))
}

/// One configuration of a topology: the multipath mode swept to, None where the topology's
/// own holds, and how its routes use equally short paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    pub multipath: Option<NodeMultipath>,
    pub routing: Routing,
}

/// Every configuration `t` gets: each swept multipath mode where it has bonds (one, under its
/// own, where none applies), each under every swept routing where some node reaches another
/// through a third (shortest paths only where none does).
pub fn variants(t: &Topology, modes: &[NodeMultipath], routings: &[Routing]) -> Vec<Variant> {
    let multipath: Vec<Option<NodeMultipath>> = if t.has_bonds() && !modes.is_empty() {
        modes.iter().copied().map(Some).collect()
    } else {
        vec![None]
    };
    let routings: &[Routing] = if t.has_routes() && !routings.is_empty() {
        routings
    } else {
        &[Routing::Shortest]
    };
    multipath
        .iter()
        .flat_map(|&multipath| {
            routings
                .iter()
                .map(move |&routing| Variant { multipath, routing })
        })
        .collect()
}

/// Loads the experiment at `path` with its topologies, checking everything a run relies on.
/// Every stage keeps going after an error, so that one attempt reports all of a file's errors.
pub fn load(path: &Path) -> Result<Experiment, SpecErrors> {
    let source = SourceFile::read(path)?;
    let spec: ExperimentSpec = source.parse()?;
    let mut errors = ErrorList::new(&source);
    let dir = path.parent().unwrap_or(Path::new("."));

    let name = experiment_name(spec.name.as_ref(), path);
    let (topologies, files) =
        load_topologies(&spec.topologies, spec.host.as_ref(), dir, &mut errors);
    let cluster = cluster::cluster(&spec.cluster, dir, &mut errors);
    let multipath_modes = multipath_modes(&spec.bonding, &spec.multipath, &topologies, &mut errors);
    let (routings, multipath_hash) = routings(&spec.multipath, &topologies, &mut errors);
    let unbonded = unbonded_variants(
        &topologies,
        &files,
        &multipath_modes,
        spec.host.as_ref(),
        &mut errors,
    );
    let baseline = baseline(spec.report.baseline.as_ref(), &topologies, &mut errors);
    check_netpipe_tables(&spec.report.netpipe, dir, &mut errors);
    let workloads = workload::workloads(&spec.workload, &topologies, &mut errors);
    references::check(&spec.reference, &topologies, &workloads, &mut errors);
    check_mptcp_carries_tcp(&spec, &workloads, &mut errors);
    if errors.is_empty() {
        let configurations = topologies
            .iter()
            .map(|t| variants(t, &multipath_modes, &routings).len())
            .sum();
        check_point_count(&spec, configurations, &workloads, &mut errors);
    }

    errors.into_result()?;
    Ok(Experiment {
        name,
        description: spec.description,
        path: path.to_owned(),
        source: source.clone(),
        seed: spec.seed,
        topologies,
        unbonded,
        cluster,
        multipath_modes,
        routings,
        multipath_hash,
        workloads,
        baseline,
        formats: spec.report.formats,
    })
}

/// The plan stays within [`MAX_POINTS`]; if not, the error points at the largest factor of
/// the workload that contributes most (sizes, pair counts, placements or repetitions).
fn check_point_count(
    spec: &ExperimentSpec,
    configurations: usize,
    workloads: &[Workload],
    errors: &mut ErrorList,
) {
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
) -> (Vec<Topology>, Vec<PathBuf>) {
    let mut topologies: Vec<Topology> = Vec::new();
    let mut paths = Vec::new();
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
        return (topologies, paths);
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
                with_host(&mut topo, host);
                if topologies.iter().any(|x| x.name == topo.name) {
                    errors.push(
                        t.span(),
                        format!("two topologies are named `{}`", topo.name),
                    );
                }
                topologies.push(topo);
                paths.push(tpath);
            }
            Err(e) => errors.extend(e.errors),
        }
    }
    (topologies, paths)
}

/// Gives every node the experiment's host costs, where it sets them.
fn with_host(topology: &mut Topology, host: Option<&HostSpec>) {
    if let Some(host) = host {
        let host = topology::NamedHostCosts::from_spec(host);
        for n in &mut topology.nodes {
            n.host = host.clone();
        }
    }
}

/// The multipath modes to sweep, from `[multipath] modes` or the older `[bonding] modes`
/// (one or the other); giving any only makes sense if some topology has a bond.
fn multipath_modes(
    bonding: &BondingSpec,
    multipath: &MultipathSpec,
    topologies: &[Topology],
    errors: &mut ErrorList,
) -> Vec<NodeMultipath> {
    if let (Some(_), Some(m)) = (bonding.modes.first(), multipath.modes.first()) {
        errors.push_with_help(
            m.span(),
            "modes are given both in [bonding] and in [multipath]",
            Some(
                "give them in [multipath] only: `[bonding] modes = [\"balance-rr\"]` is \
                 `[multipath] modes = [\"bond:balance-rr\"]`"
                    .into(),
            ),
        );
    }
    let spans: Vec<(NodeMultipath, Range<usize>)> = if multipath.modes.is_empty() {
        let modes = bonding.modes.iter();
        modes
            .map(|m| (NodeMultipath::Bond(*m.get_ref()), m.span()))
            .collect()
    } else {
        let modes = multipath.modes.iter();
        modes.map(|m| (*m.get_ref(), m.span())).collect()
    };
    for (i, (mode, span)) in spans.iter().enumerate() {
        if spans[..i].iter().any(|(m, _)| m == mode) {
            errors.push(
                span.clone(),
                format!("multipath mode `{mode}` is given twice"),
            );
        }
    }
    if let Some((_, span)) = spans.first()
        && errors.is_empty()
        && !topologies.iter().any(Topology::has_bonds)
    {
        errors.push(
            span.clone(),
            "modes are given but no topology has a bond to apply them to",
        );
    }
    spans.into_iter().map(|(m, _)| m).collect()
}

/// The routings to sweep and, where one is ECMP, the hash policy (`l4` unless given). ECMP
/// needs a topology with routes through a forwarding node, and one small enough for a route
/// from every node to every other ([`MAX_ECMP_NODES`]).
fn routings(
    multipath: &MultipathSpec,
    topologies: &[Topology],
    errors: &mut ErrorList,
) -> (Vec<Routing>, Option<MultipathHash>) {
    let given = &multipath.routing;
    for (i, r) in given.iter().enumerate() {
        if given[..i].iter().any(|x| x.get_ref() == r.get_ref()) {
            errors.push(
                r.span(),
                format!("routing `{}` is given twice", r.get_ref()),
            );
        }
    }
    let ecmp = given.iter().find(|r| *r.get_ref() == Routing::Ecmp);
    if let Some(r) = ecmp {
        if !topologies.iter().any(Topology::has_routes) {
            errors.push_with_help(
                r.span(),
                "routing `ecmp` is given but no topology routes through a forwarding node",
                Some(
                    "ECMP spreads flows over equally short paths through forwarders, as on a \
                     routed mesh; on buses and switched networks every node is one hop away"
                        .into(),
                ),
            );
        }
        for t in topologies.iter().filter(|t| t.has_routes()) {
            if t.nodes.len() > MAX_ECMP_NODES {
                errors.push(
                    r.span(),
                    format!(
                        "routing `ecmp` on {} ({} nodes): ECMP routes are computed for at most \
                         {MAX_ECMP_NODES} nodes (a route from every node to every other)",
                        t.name,
                        t.nodes.len()
                    ),
                );
            }
        }
    } else if let Some(h) = &multipath.hash {
        errors.push_with_help(
            h.span(),
            "a multipath hash is given but no routing is `ecmp`",
            Some(
                "the hash picks among ECMP next hops: add `routing = [\"shortest\", \"ecmp\"]`"
                    .into(),
            ),
        );
    }
    let hash = ecmp.map(|_| {
        multipath
            .hash
            .as_ref()
            .map_or(MultipathHash::default(), |h| *h.get_ref())
    });
    (given.iter().map(|r| *r.get_ref()).collect(), hash)
}

/// Per topology, the same file resolved without its bonds (with the experiment's host costs),
/// where a swept mode needs it: `mptcp` and `none` run on the interfaces a bond would join.
fn unbonded_variants(
    topologies: &[Topology],
    files: &[PathBuf],
    modes: &[NodeMultipath],
    host: Option<&HostSpec>,
    errors: &mut ErrorList,
) -> Vec<Option<Topology>> {
    let needed = modes.iter().any(|m| m.bond_mode().is_none());
    topologies
        .iter()
        .zip(files)
        .map(|(t, file)| {
            if !needed || !t.has_bonds() {
                return None;
            }
            match topology::load_unbonded(file) {
                Ok(mut u) => {
                    with_host(&mut u, host);
                    Some(u)
                }
                Err(e) => {
                    errors.extend(e.errors);
                    None
                }
            }
        })
        .collect()
}

/// Multipath TCP carries TCP only: a sweep with `mptcp` cannot measure a UDP workload.
fn check_mptcp_carries_tcp(spec: &ExperimentSpec, workloads: &[Workload], errors: &mut ErrorList) {
    let Some(at) = spec
        .multipath
        .modes
        .iter()
        .find(|m| *m.get_ref() == NodeMultipath::Mptcp)
    else {
        return;
    };
    if let Some(i) = workloads.iter().position(|w| w.protocol == Protocol::Udp) {
        errors.push_with_help(
            at.span(),
            format!("`mptcp` carries TCP only, and workload {} is UDP", i + 1),
            Some("measure UDP in an experiment without `mptcp`".into()),
        );
    }
}

/// Each `[report] netpipe` file exists and holds NetPIPE tables, so that a run does not find
/// out at its end that its report cannot draw them.
fn check_netpipe_tables(
    tables: &[crate::spec::experiment::NetpipeTableSpec],
    dir: &Path,
    errors: &mut ErrorList,
) {
    for t in tables {
        let path = dir.join(t.path.get_ref());
        let problem = match std::fs::read_to_string(&path) {
            Err(e) => Some(format!("cannot read NetPIPE table {}: {e}", path.display())),
            Ok(text) => match orchestrate_worker::netpipe::parse(&text) {
                Err(e) => Some(format!("{} is not NetPIPE output: {e}", path.display())),
                Ok(tables) if tables.is_empty() => {
                    Some(format!("{} holds no NetPIPE table", path.display()))
                }
                Ok(_) => None,
            },
        };
        if let Some(p) = problem {
            errors.push_with_help(
                t.path.span(),
                p,
                Some("give NetPIPE's classic output (time, Mbit/s, bits, bytes, variance per row), relative to the experiment file".into()),
            );
        }
    }
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
