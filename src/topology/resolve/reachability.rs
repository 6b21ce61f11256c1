//! The last check: every ordered pair of nodes reaches the other and back, with no loop or
//! black hole.

use crate::spec::SpecErrors;
use crate::topology::draft::Draft;
use crate::topology::graph::Topology;
use crate::topology::paths;

use super::errors::Errors;
use super::routes::RouteSpans;

/// How many unreachable pairs are reported one by one; the rest are counted.
const SHOWN: usize = 8;

pub(super) fn check_paths(
    draft: &Draft,
    topology: &Topology,
    route_spans: &RouteSpans,
    errs: &mut Errors,
) -> Result<(), SpecErrors> {
    let Err(problems) = paths::check_all(topology) else {
        return Ok(());
    };
    let total = problems.len();
    for p in problems.into_iter().take(SHOWN) {
        // Point at a route of the node where the packet was lost, else of the sender,
        // else at the first route given: the tables are what needs fixing.
        let span = route_spans
            .get(&p.at)
            .or_else(|| route_spans.get(&p.from))
            .or_else(|| draft.routes.first().map(|r| &r.via.1))
            .or_else(|| {
                draft
                    .nodes
                    .iter()
                    .find(|(n, _)| *n == p.from)
                    .map(|(_, s)| s)
            })
            .cloned()
            .unwrap_or(0..0);
        errs.push(&span, format!("path check: {}", p.message));
    }
    if total > SHOWN {
        let span = draft.routes.first().map_or(0..0, |r| r.via.1.clone());
        errs.push(
            &span,
            format!("path check: {} more unreachable pairs", total - SHOWN),
        );
    }
    errs.check()
}
