//! `orchestrate plan`: an experiment expanded and shown, as text or JSON, without touching any
//! node.

use std::path::Path;
use std::process::ExitCode;

use orchestrate::spec::NodeName;
use orchestrate::{plan, topology};

use crate::spec_errors::report_spec_errors;

/// Prints the plan of `experiment` (only `node`'s scripts if given) and draws its topologies
/// into `graph` if given.
pub fn plan(
    experiment: &Path,
    node: Option<&NodeName>,
    json: bool,
    graph: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let Some(e) = report_spec_errors(plan::load(experiment)) else {
        return Ok(ExitCode::FAILURE);
    };
    if let Some(n) = node
        && !e.topologies.iter().any(|t| t.node(n).is_some())
    {
        anyhow::bail!("no topology of {} has a node `{n}`", experiment.display());
    }
    let Some(p) = report_spec_errors(plan::expand(&e)) else {
        return Ok(ExitCode::FAILURE);
    };
    if let Some(dir) = graph {
        write_drawings(&e.topologies, dir)?;
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&p)?);
    } else {
        print!("{}", plan::render::text(&p, node));
    }
    Ok(ExitCode::SUCCESS)
}

/// `<topology>.svg` and `<topology>.dot` for each topology.
fn write_drawings(topologies: &[topology::Topology], dir: &Path) -> anyhow::Result<()> {
    use anyhow::Context as _;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for t in topologies {
        for (ext, body) in [
            ("svg", topology::draw::svg(t)),
            ("dot", topology::draw::dot(t)),
        ] {
            let path = dir.join(format!("{}.{ext}", t.name));
            std::fs::write(&path, body).with_context(|| format!("writing {}", path.display()))?;
            tracing::info!("wrote {}", path.display());
        }
    }
    Ok(())
}
