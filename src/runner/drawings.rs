//! Topology drawings for a run's report, from the topology copies in its directory.

use std::path::{Path, PathBuf};

use crate::report::DrawTopology;

/// Draws the topologies a run directory holds (`topologies/<name>.toml`).
pub struct RunDrawings {
    dir: PathBuf,
}

impl RunDrawings {
    pub fn new(run_dir: &Path) -> RunDrawings {
        RunDrawings {
            dir: run_dir.join("topologies"),
        }
    }
}

impl DrawTopology for RunDrawings {
    fn draw_svg(&self, topology: &str) -> Option<String> {
        let t = crate::topology::load(&self.dir.join(format!("{topology}.toml"))).ok()?;
        Some(crate::topology::draw::svg(&t))
    }
}
