//! Reading a topology file into a [`Draft`]: ranges expanded, generator run, spans kept.

use std::path::Path;

use toml::Spanned;

use crate::spec::hostlist;
use crate::spec::limits::MAX_NODES;
use crate::spec::topology::{GeneratorSpec, TopologySpec};
use crate::spec::{IfName, Name, NodeName, SourceFile, SpecError, SpecErrors};

use super::draft::{
    Draft, DraftAddress, DraftBond, DraftPort, DraftRoute, DraftSegment, DraftSwitch, Span,
};
use super::graph::Topology;
use super::{checks, generators};

/// Reads, expands and resolves a topology file.
pub fn load(path: &Path) -> Result<Topology, SpecErrors> {
    from_source(&SourceFile::read(path)?)
}

/// Reads a topology file and resolves it without its bonds: each interface a bond would join
/// keeps its own address, on its own network's subnet. What the multipath modes other than
/// bonding (`mptcp`, `none`) run on, so they use the same wires as the bond.
pub fn load_unbonded(path: &Path) -> Result<Topology, SpecErrors> {
    let source = SourceFile::read(path)?;
    let mut draft = draft(&source)?;
    draft.bonds.clear();
    super::resolve::resolve(draft, &source)
}

/// Expands and resolves a topology from text already read.
pub fn from_source(source: &SourceFile) -> Result<Topology, SpecErrors> {
    let draft = draft(source)?;
    super::resolve::resolve(draft, source)
}

/// Parses a topology file's text into a draft. Errors are located in `source`.
pub fn draft(source: &SourceFile) -> Result<Draft, SpecErrors> {
    let spec: TopologySpec = source.parse()?;
    let mut errors = Vec::new();
    checks::check(&spec, source, &mut errors);
    let mut draft = empty_draft(&spec, source, &mut errors);
    match &spec.generator {
        Some(generator) => run_generator(&spec, generator, source, &mut draft, &mut errors),
        None => list_nodes(&spec, source, &mut draft, &mut errors),
    }
    add_segments(&spec, source, &mut draft, &mut errors);
    for sw in &spec.switch {
        draft.switches.push(DraftSwitch {
            name: spanned(&sw.name),
            segments: sw.segments.iter().map(spanned).collect(),
        });
    }
    add_bonds(&spec, source, &mut draft, &mut errors);
    for r in &spec.route {
        draft.routes.push(DraftRoute {
            node: spanned(&r.node),
            to: spanned(&r.to),
            via: spanned(&r.via),
        });
    }
    for a in &spec.address {
        draft.addresses.push(DraftAddress {
            node: spanned(&a.node),
            interface: spanned(&a.interface),
            address: spanned(&a.address),
        });
    }

    if errors.is_empty() {
        Ok(draft)
    } else {
        Err(SpecErrors::new(errors))
    }
}

/// The topology's name, addressing, routing mode and defaults, with no nodes or wires yet.
fn empty_draft(spec: &TopologySpec, source: &SourceFile, errors: &mut Vec<SpecError>) -> Draft {
    let name = match &spec.name {
        Some(n) => n.get_ref().clone(),
        None => default_name(source, errors),
    };
    Draft {
        name,
        description: spec.description.clone(),
        base: (*spec.addressing.base.get_ref(), spec.addressing.base.span()),
        prefix: (
            *spec.addressing.prefix.get_ref(),
            spec.addressing.prefix.span(),
        ),
        routing: spec.routing,
        nodes: Vec::new(),
        host: spec.host.as_ref().map(|h| *h.get_ref()).unwrap_or_default(),
        node_hosts: Vec::new(),
        emulation: spec.emulation.unwrap_or_default(),
        segments: Vec::new(),
        switches: Vec::new(),
        bonds: Vec::new(),
        routes: Vec::new(),
        addresses: Vec::new(),
    }
}

/// Fills the draft from `[generator]`, which stands in for the nodes, segments, switches and
/// bonds; listing any of them as well is an error.
fn run_generator(
    spec: &TopologySpec,
    generator: &Spanned<GeneratorSpec>,
    source: &SourceFile,
    draft: &mut Draft,
    errors: &mut Vec<SpecError>,
) {
    let listed = [
        ("nodes", !spec.nodes.is_empty()),
        ("segment", !spec.segment.is_empty()),
        ("switch", !spec.switch.is_empty()),
        ("bond", !spec.bond.is_empty()),
    ];
    if let Some((key, _)) = listed.iter().find(|(_, present)| *present) {
        errors.push(source.error(
            generator.span(),
            format!("a generated topology cannot also list `{key}`"),
            Some("use either [generator] or explicit nodes and segments, not both".into()),
        ));
    } else if let Err(found) = generators::generate(generator.get_ref(), &generator.span(), draft) {
        errors.extend(
            found
                .into_iter()
                .map(|(span, message)| source.error(span, message, None)),
        );
    }
}

/// The listed nodes, ranges expanded, with the host costs of entries that give their own.
fn list_nodes(
    spec: &TopologySpec,
    source: &SourceFile,
    draft: &mut Draft,
    errors: &mut Vec<SpecError>,
) {
    for entry in &spec.nodes {
        let expr = Spanned::new(entry.span(), entry.get_ref().names().to_owned());
        match expand::<NodeName>(&expr, "node") {
            Ok(names) if draft.nodes.len() + names.len() > MAX_NODES => {
                errors.push(source.error(
                    expr.span(),
                    format!(
                        "with these, the topology lists {} nodes; at most {MAX_NODES} are allowed",
                        draft.nodes.len() + names.len()
                    ),
                    None,
                ));
                return;
            }
            Ok(names) => {
                if let Some(host) = entry.get_ref().host() {
                    draft
                        .node_hosts
                        .extend(names.iter().map(|n| (n.clone(), host)));
                }
                draft
                    .nodes
                    .extend(names.into_iter().map(|n| (n, expr.span())));
            }
            Err(e) => errors.push(source.error(expr.span(), e, None)),
        }
    }
    if draft.nodes.is_empty() && errors.is_empty() {
        let at = source.key_span(&["nodes"]).unwrap_or(0..0);
        errors.push(source.error(
            at,
            "the topology has no nodes",
            Some("list them with `nodes = [\"n[01-16]\"]` or use a [generator]".into()),
        ));
    }
}

/// The listed segments, each member's node range expanded; segments without their own
/// emulation take the topology's.
fn add_segments(
    spec: &TopologySpec,
    source: &SourceFile,
    draft: &mut Draft,
    errors: &mut Vec<SpecError>,
) {
    for seg in &spec.segment {
        let mut members = Vec::new();
        for m in &seg.members {
            match member(m) {
                Ok(ports) => members.extend(ports),
                Err(e) => errors.push(source.error(m.span(), e, None)),
            }
        }
        draft.segments.push(DraftSegment {
            name: spanned(&seg.name),
            rate: *seg.rate.get_ref(),
            medium: seg.medium,
            emulation: seg.emulation.unwrap_or(draft.emulation),
            members,
        });
    }
}

/// One bond per node it names (every node when it names none), each pointing at the text that
/// put it there.
fn add_bonds(
    spec: &TopologySpec,
    source: &SourceFile,
    draft: &mut Draft,
    errors: &mut Vec<SpecError>,
) {
    for b in &spec.bond {
        let nodes: Vec<(NodeName, Span)> = match &b.nodes {
            None => draft
                .nodes
                .iter()
                .map(|(n, _)| (n.clone(), b.name.span()))
                .collect(),
            Some(exprs) => {
                let mut v = Vec::new();
                for e in exprs {
                    match expand::<NodeName>(e, "node") {
                        Ok(names) => v.extend(names.into_iter().map(|n| (n, e.span()))),
                        Err(msg) => errors.push(source.error(e.span(), msg, None)),
                    }
                }
                v
            }
        };
        for node in nodes {
            draft.bonds.push(DraftBond {
                node,
                name: spanned(&b.name),
                mode: spanned(&b.mode),
                slaves: b.slaves.iter().map(spanned).collect(),
                miimon: b.miimon,
                xmit_hash_policy: b.xmit_hash_policy.as_ref().map(spanned),
                primary: b.primary.as_ref().map(spanned),
                driver: b.driver,
            });
        }
    }
}

fn spanned<T: Clone>(s: &Spanned<T>) -> (T, Span) {
    (s.get_ref().clone(), s.span())
}

fn default_name(source: &SourceFile, errors: &mut Vec<SpecError>) -> Name {
    let stem = source
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    stem.parse().unwrap_or_else(|e: crate::spec::InvalidValue| {
        errors.push(source.error(
            0..0,
            format!("the file name does not make a topology name: {e}"),
            Some("set `name = \"...\"` at the top of the file".into()),
        ));
        "unnamed".parse().expect("valid")
    })
}

/// Expands a Slurm/pdsh-style host list (`n[01-16]`, `a,b`) into typed names, in order, at
/// most [`MAX_NODES`] of them.
pub(crate) fn expand<T>(expr: &Spanned<String>, what: &str) -> Result<Vec<T>, String>
where
    T: std::str::FromStr<Err = crate::spec::InvalidValue>,
{
    hostlist::expand(expr.get_ref(), what, MAX_NODES)
}

/// `node:interface`, where the node part may be a range: `n[01-04]:eth1`.
fn member(m: &Spanned<String>) -> Result<Vec<DraftPort>, String> {
    let text = m.get_ref();
    let (nodes, ifname) = text.rsplit_once(':').ok_or_else(|| {
        format!("invalid member {text:?}: expected `node:interface`, e.g. \"n01:eth1\"")
    })?;
    let ifname: IfName = ifname.parse().map_err(|e: crate::spec::InvalidValue| e.0)?;
    if ifname.is_loopback() {
        return Err(format!(
            "invalid member {text:?}: `lo` is the node's loopback interface, which reaches no \
             other node; name the interface wired to this segment, e.g. \"{nodes}:eth1\""
        ));
    }
    let nodes: Vec<NodeName> = expand(&Spanned::new(m.span(), nodes.to_owned()), "node")?;
    Ok(nodes
        .into_iter()
        .map(|node| DraftPort {
            node,
            interface: ifname.clone(),
            span: m.span(),
        })
        .collect())
}
