//! `[[reference]]` entries checked against what the experiment measures: a reference to a
//! cell the sweep never produces could only ever fail, so it is an error at `validate` time.

use crate::spec::best_match;
use crate::spec::reference::{Expected, ReferenceSpec};
use crate::spec::traffic::Pattern;
use crate::topology::Topology;

use super::errors::ErrorList;
use super::workload::Workload;

/// Checks every reference against the topologies and the workloads' sweeps.
pub(super) fn check(
    references: &[ReferenceSpec],
    topologies: &[Topology],
    workloads: &[Workload],
    errors: &mut ErrorList,
) {
    // After an earlier error a topology may be missing only because it failed to load.
    let topologies_loaded = errors.is_empty();
    for r in references {
        check_one(
            r,
            topologies_loaded.then_some(topologies),
            workloads,
            errors,
        );
    }
}

fn check_one(
    r: &ReferenceSpec,
    topologies: Option<&[Topology]>,
    workloads: &[Workload],
    errors: &mut ErrorList,
) {
    let name = r.topology.get_ref();
    if let Some(topologies) = topologies
        && !topologies.iter().any(|t| &t.name == name)
    {
        let names = topologies.iter().map(|t| t.name.as_str());
        let help = best_match(name.as_str(), names).map(|m| format!("did you mean `{m}`?"));
        errors.push_with_help(
            r.topology.span(),
            format!("reference to topology `{name}`, which is not one of the experiment's"),
            help,
        );
    }
    let pattern = *r.pattern.get_ref();
    if matches!(r.expected, Expected::Latency(_)) && !records_latency(pattern) {
        errors.push(
            r.pattern.span(),
            format!(
                "reference to the latency of {}, whose trials record none: expect its \
                 `throughput` instead",
                pattern.as_str()
            ),
        );
    }
    let measured: Vec<&Workload> = workloads
        .iter()
        .filter(|w| w.pattern == pattern && w.protocol == r.protocol)
        .collect();
    if measured.is_empty() {
        errors.push(
            r.pattern.span(),
            format!(
                "reference to {}/{}, which no workload measures",
                pattern.as_str(),
                r.protocol.as_str()
            ),
        );
        return;
    }
    let size = r.size.get_ref().0;
    if !measured.iter().any(|w| w.sizes.contains(&size)) {
        errors.push(
            r.size.span(),
            format!(
                "reference to size {}, which no {} workload measures",
                r.size.get_ref(),
                pattern.as_str()
            ),
        );
    }
    let pairs = *r.pairs.get_ref();
    if !measured.iter().any(|w| w.pairs.contains(&pairs)) {
        errors.push(
            r.pairs.span(),
            format!(
                "reference to {pairs} pairs, which no {} workload measures",
                pattern.as_str()
            ),
        );
    }
    let placement = *r.placement.get_ref();
    if !measured.iter().any(|w| w.placements.contains(&placement)) {
        errors.push(
            r.placement.span(),
            format!(
                "reference to placement {}, which no {} workload uses",
                placement.as_str(),
                pattern.as_str()
            ),
        );
    }
}

/// Whether a pattern's trials record a latency (the time per message or exchange); an open
/// loop's offered load and a file copy have a rate only.
fn records_latency(pattern: Pattern) -> bool {
    match pattern {
        Pattern::Pingpong | Pattern::Stream | Pattern::Token | Pattern::Pipeline => true,
        // A collective's figure is its time per iteration.
        Pattern::Halo | Pattern::Alltoall | Pattern::Allreduce | Pattern::Bcast => true,
        Pattern::Load | Pattern::Filecopy => false,
    }
}
