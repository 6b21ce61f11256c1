//! An experiment resolved: its topologies loaded and every cross-reference checked (baseline,
//! explicit pairs, pattern options), with sweeps expanded to concrete values.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use toml::Spanned;

use crate::spec::experiment::{
    ClusterKind, ExperimentSpec, PatternKind, PlacementKind, ProtocolKind, ReportFormat, Sizes,
    Statistic,
};
use crate::spec::topology::BondMode;
use crate::spec::{Name, NodeName, Rate, SourceFile, SpecError, SpecErrors, best_match};
use crate::topology::{self, Topology};

#[derive(Debug, Clone, Serialize)]
pub struct Experiment {
    pub name: Name,
    pub description: Option<String>,
    #[serde(skip)]
    pub path: PathBuf,
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
    Inventory { path: PathBuf },
}

#[derive(Debug, Clone, Serialize)]
pub struct Workload {
    pub pattern: PatternKind,
    pub protocol: ProtocolKind,
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

/// The largest message the tool sizes buffers for.
const MAX_SIZE: u64 = 1 << 30;

pub fn load(path: &Path) -> Result<Experiment, SpecErrors> {
    let source = SourceFile::read(path)?;
    let spec: ExperimentSpec = source.parse()?;
    let mut errors: Vec<SpecError> = Vec::new();
    let err = |errors: &mut Vec<SpecError>, span: std::ops::Range<usize>, msg: String| {
        errors.push(source.error(span, msg, None));
    };
    let dir = path.parent().unwrap_or(Path::new("."));

    let name = match &spec.name {
        Some(n) => n.get_ref().clone(),
        None => path
            .file_stem()
            .and_then(|s| s.to_string_lossy().parse().ok())
            .unwrap_or_else(|| "experiment".parse().expect("valid")),
    };

    // Topologies: load each, keep going to report every broken file at once.
    let mut topologies: Vec<Topology> = Vec::new();
    if spec.topologies.get_ref().is_empty() {
        err(
            &mut errors,
            spec.topologies.span(),
            "`topologies` is empty: name at least one topology file".into(),
        );
    }
    for t in spec.topologies.get_ref() {
        let tpath = dir.join(t.get_ref());
        if !tpath.is_file() {
            err(
                &mut errors,
                t.span(),
                format!("topology file {} does not exist", tpath.display()),
            );
            continue;
        }
        match topology::load(&tpath) {
            Ok(mut topo) => {
                if let Some(host) = &spec.host {
                    let host = topology::Host::from_spec(host);
                    for n in &mut topo.nodes {
                        n.host = host.clone();
                    }
                }
                if topologies.iter().any(|x| x.name == topo.name) {
                    err(
                        &mut errors,
                        t.span(),
                        format!("two topologies are named `{}`", topo.name),
                    );
                }
                topologies.push(topo);
            }
            Err(e) => errors.extend(e.errors),
        }
    }

    let cluster = match (spec.cluster.kind, &spec.cluster.inventory) {
        (ClusterKind::Docker, None) => Cluster::Docker,
        (ClusterKind::Docker, Some(inv)) => {
            err(
                &mut errors,
                inv.span(),
                "`inventory` needs `kind = \"inventory\"`".into(),
            );
            Cluster::Docker
        }
        (ClusterKind::Inventory, Some(inv)) => Cluster::Inventory {
            path: dir.join(inv.get_ref()),
        },
        (ClusterKind::Inventory, None) => {
            err(
                &mut errors,
                0..0,
                "`cluster.kind = \"inventory\"` needs `cluster.inventory = \"hosts.toml\"`".into(),
            );
            Cluster::Docker
        }
    };

    let bonding_modes: Vec<BondMode> = spec.bonding.modes.iter().map(|m| *m.get_ref()).collect();
    if let Some(m) = spec.bonding.modes.first()
        && errors.is_empty()
        && !topologies.iter().any(Topology::has_bonds)
    {
        err(
            &mut errors,
            m.span(),
            "bonding modes are given but no topology has a bond".into(),
        );
    }

    let baseline = spec.report.baseline.as_ref().map(|b| {
        if errors.is_empty() && !topologies.iter().any(|t| &t.name == b.get_ref()) {
            let names = topologies.iter().map(|t| t.name.as_str());
            let help =
                best_match(b.get_ref().as_str(), names).map(|m| format!("did you mean `{m}`?"));
            errors.push(source.error(
                b.span(),
                format!(
                    "baseline `{}` is not one of the experiment's topologies",
                    b.get_ref()
                ),
                help,
            ));
        }
        b.get_ref().clone()
    });

    if spec.workload.get_ref().is_empty() {
        err(
            &mut errors,
            spec.workload.span(),
            "no [[workload]]: say what traffic to measure".into(),
        );
    }
    let mut workloads = Vec::new();
    for w in spec.workload.get_ref() {
        let sizes = match w.sizes.get_ref() {
            Sizes::List(v) => v.iter().map(|s| s.0).collect(),
            Sizes::Range(r) => match expand_range(r) {
                Ok(v) => v,
                Err(m) => {
                    err(&mut errors, w.sizes.span(), m);
                    Vec::new()
                }
            },
        };
        if sizes.is_empty() && errors.is_empty() {
            err(&mut errors, w.sizes.span(), "`sizes` is empty".into());
        }
        if let Some(big) = sizes.iter().find(|s| **s == 0 || **s > MAX_SIZE) {
            err(
                &mut errors,
                w.sizes.span(),
                format!("size {big} is out of range: expected 1 byte to 1 GiB"),
            );
        }
        let pairs = w.pairs.get_ref().0.clone();
        if pairs.is_empty() || pairs.contains(&0) {
            err(
                &mut errors,
                w.pairs.span(),
                "`pairs` must list counts of at least 1".into(),
            );
        }
        let mut placements = w.placement.get_ref().clone();
        let mut explicit_pairs = Vec::new();
        match &w.explicit_pairs {
            Some(list) => {
                if placements.iter().any(|p| *p != PlacementKind::Explicit)
                    && w.placement.span() != (0..0)
                {
                    err(
                        &mut errors,
                        w.placement.span(),
                        "with `explicit_pairs`, placement must be [\"explicit\"] (or left out)"
                            .into(),
                    );
                }
                placements = vec![PlacementKind::Explicit];
                for pair in list.get_ref() {
                    let [a, b] = pair.get_ref();
                    if a.get_ref() == b.get_ref() {
                        err(
                            &mut errors,
                            pair.span(),
                            format!(
                                "pair [{}, {}] has the same node twice",
                                a.get_ref(),
                                b.get_ref()
                            ),
                        );
                    }
                    for node in [a, b] {
                        check_node_everywhere(&source, &topologies, node, &mut errors);
                    }
                    explicit_pairs.push((a.get_ref().clone(), b.get_ref().clone()));
                }
                let max = *pairs.iter().max().unwrap_or(&0) as usize;
                if max > explicit_pairs.len() {
                    err(
                        &mut errors,
                        w.pairs.span(),
                        format!(
                            "`pairs` asks for {max} pairs but `explicit_pairs` lists {}",
                            explicit_pairs.len()
                        ),
                    );
                }
            }
            None => {
                if placements.contains(&PlacementKind::Explicit) {
                    err(
                        &mut errors,
                        w.placement.span(),
                        "placement \"explicit\" needs `explicit_pairs = [[\"n01\", \"n02\"], ...]`"
                            .into(),
                    );
                }
                if placements.is_empty() {
                    err(
                        &mut errors,
                        w.placement.span(),
                        "`placement` is empty".into(),
                    );
                }
            }
        }
        let amount = match (&w.exchanges, &w.duration) {
            (Some(e), None) if *e.get_ref() == 0 => {
                err(
                    &mut errors,
                    e.span(),
                    "`exchanges` must be at least 1".into(),
                );
                Amount::Exchanges(1)
            }
            (Some(e), None) => Amount::Exchanges(*e.get_ref()),
            (None, Some(d)) => Amount::Duration(d.get_ref().0),
            (Some(e), Some(_)) => {
                err(
                    &mut errors,
                    e.span(),
                    "give either `exchanges` or `duration`, not both".into(),
                );
                Amount::Exchanges(1)
            }
            (None, None) => {
                err(
                    &mut errors,
                    w.sizes.span(),
                    "the workload needs `exchanges = N` or `duration = \"10s\"`".into(),
                );
                Amount::Exchanges(1)
            }
        };
        if *w.repetitions.get_ref() == 0 {
            err(
                &mut errors,
                w.repetitions.span(),
                "`repetitions` must be at least 1".into(),
            );
        }
        if let Some(d) = &w.depth
            && w.pattern != PatternKind::Pipeline
        {
            err(
                &mut errors,
                d.span(),
                format!(
                    "`depth` applies to pattern \"pipeline\", not \"{}\"",
                    w.pattern.as_str()
                ),
            );
        }
        if let Some(r) = &w.rate
            && w.pattern != PatternKind::Load
        {
            err(
                &mut errors,
                r.span(),
                format!(
                    "`rate` applies to pattern \"load\", not \"{}\"",
                    w.pattern.as_str()
                ),
            );
        }
        if w.pattern == PatternKind::Load && w.rate.is_none() {
            err(
                &mut errors,
                w.sizes.span(),
                "pattern \"load\" needs an offered `rate`, e.g. rate = \"5mbit\"".into(),
            );
        }
        if w.protocol == ProtocolKind::Udp
            && !matches!(
                w.pattern,
                PatternKind::Pingpong | PatternKind::Stream | PatternKind::Load
            )
        {
            err(
                &mut errors,
                w.sizes.span(),
                format!("pattern \"{}\" runs over TCP only", w.pattern.as_str()),
            );
        }
        workloads.push(Workload {
            pattern: w.pattern,
            protocol: w.protocol,
            sizes,
            pairs,
            placements,
            explicit_pairs,
            amount,
            warmup: w.warmup,
            repetitions: *w.repetitions.get_ref(),
            statistic: w.statistic,
            depth: w.depth.as_ref().map(|d| *d.get_ref()),
            rate: w.rate.as_ref().map(|r| *r.get_ref()),
            drop_caches: w.drop_caches,
        });
    }

    if !errors.is_empty() {
        return Err(SpecErrors { errors });
    }
    Ok(Experiment {
        name,
        description: spec.description,
        path: path.to_owned(),
        seed: spec.seed,
        topologies,
        cluster,
        bonding_modes,
        workloads,
        baseline,
        formats: spec.report.formats,
    })
}

fn check_node_everywhere(
    source: &SourceFile,
    topologies: &[Topology],
    node: &Spanned<NodeName>,
    errors: &mut Vec<SpecError>,
) {
    for t in topologies {
        if t.node(node.get_ref()).is_none() {
            let help = best_match(
                node.get_ref().as_str(),
                t.nodes.iter().map(|n| n.name.as_str()),
            )
            .map(|m| format!("did you mean `{m}`?"));
            errors.push(source.error(
                node.span(),
                format!("node `{}` is not in topology `{}`", node.get_ref(), t.name),
                help,
            ));
            return;
        }
    }
}

fn expand_range(r: &crate::spec::experiment::SizeRange) -> Result<Vec<u64>, String> {
    let (from, to) = (r.from.0, r.to.0);
    if from == 0 || from > to {
        return Err(format!(
            "size range from {from} to {to} is empty: expected 1 <= from <= to"
        ));
    }
    if r.netpipe {
        if r.factor.is_some() {
            return Err("`factor` does not apply to the NetPIPE schedule".into());
        }
        return Ok(orchestrate_worker::netpipe::schedule(
            from,
            to,
            r.perturbation.unwrap_or(3),
        ));
    }
    if r.perturbation.is_some() {
        return Err("`perturbation` applies only with `netpipe = true`".into());
    }
    let factor = u64::from(r.factor.unwrap_or(2));
    if factor < 2 {
        return Err("`factor` must be at least 2".into());
    }
    let mut v = Vec::new();
    let mut s = from;
    while s <= to {
        v.push(s);
        s = s.saturating_mul(factor);
    }
    Ok(v)
}
