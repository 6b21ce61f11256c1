//! What differs between two runs besides their numbers: the experiment and topology files each
//! run kept, the tool that made it, and the hosts it ran on (the facts every node's probe
//! found alike: kernel, CPUs, clock source, offloads). `report --compare` prints it first, so that a cell
//! called worse is not read as a regression when the newer run measured something else (a
//! `host = "486dx4"` added to a topology changes every cell).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use super::node_facts::NodeFacts;
use crate::results::RunDir;

/// A run's hosts as lines to diff: how many nodes, then each fact all of them share
/// (`kernel.release = 6.1.0-…`). Facts that differ between a run's own nodes (names,
/// addresses) say nothing about the machine kind and are left out.
fn hosts(d: &RunDir) -> String {
    let Ok(manifest) = d.manifest() else {
        return "not recorded\n".into();
    };
    if manifest.nodes.is_empty() {
        return "not recorded\n".into();
    }
    let facts = NodeFacts::split(&manifest.nodes);
    let mut s = format!("nodes = {}\n", facts.nodes);
    for (k, v) in &facts.common {
        let _ = writeln!(s, "{k} = {v}");
    }
    s
}

/// The differences between two runs' specs and tools, by file.
#[derive(Debug, Default, PartialEq)]
pub struct SpecDiff {
    /// Each differing file (`experiment.toml`, `topologies/x.toml`, `tool`) with its lines:
    /// `- ` as the first run had it, `+ ` as the second has it.
    pub files: Vec<(String, Vec<String>)>,
}

impl SpecDiff {
    /// The two runs' experiment and topology copies and tool versions compared.
    pub fn between(old: &Path, new: &Path) -> SpecDiff {
        let (a, b) = (RunDir::new(old), RunDir::new(new));
        let mut files = Vec::new();
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        let mut diff_file = |name: String, x: String, y: String| {
            if x != y {
                files.push((name, line_diff(&x, &y)));
            }
        };
        diff_file(
            "experiment.toml".into(),
            read(&a.experiment_toml()),
            read(&b.experiment_toml()),
        );
        let names: BTreeSet<String> = [&a, &b]
            .iter()
            .flat_map(|d| std::fs::read_dir(d.topologies_dir()).into_iter().flatten())
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        for name in names {
            diff_file(
                format!("topologies/{name}"),
                read(&a.topologies_dir().join(&name)),
                read(&b.topologies_dir().join(&name)),
            );
        }
        let tool = |d: &RunDir| {
            d.manifest()
                .ok()
                .and_then(|m| m.tool)
                .map(|t| {
                    format!(
                        "{} {} (commit {})\n",
                        t.name.unwrap_or_default(),
                        t.version.unwrap_or_default(),
                        t.commit.unwrap_or_else(|| "unknown".into())
                    )
                })
                .unwrap_or_else(|| "not recorded\n".into())
        };
        diff_file("tool".into(), tool(&a), tool(&b));
        diff_file("hosts".into(), hosts(&a), hosts(&b));
        SpecDiff { files }
    }

    /// Whether the runs differ in more than the tool that made them and the hosts they ran
    /// on: a changed spec changes what the cells measure.
    pub fn specs_differ(&self) -> bool {
        self.files
            .iter()
            .any(|(name, _)| name != "tool" && name != "hosts")
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The diff for a terminal or a text file: a warning line naming what differs, then each
    /// file's changed lines.
    pub fn render(&self, old: &str, new: &str) -> String {
        let mut s = String::new();
        if self.is_empty() {
            let _ = writeln!(
                s,
                "{new} and {old} ran the same experiment and topologies with the same tool on \
                 hosts whose probes found the same facts"
            );
            return s;
        }
        let names: Vec<&str> = self.files.iter().map(|(n, _)| n.as_str()).collect();
        let across = if self.specs_differ() {
            "changed specs"
        } else {
            "another tool or other hosts"
        };
        let _ = writeln!(
            s,
            "warning: {new} differs from {old} in {}: its cells are compared across {across} \
             (- {old}, + {new})",
            names.join(", ")
        );
        for (name, lines) in &self.files {
            let _ = writeln!(s, "--- {name}");
            for l in lines {
                let _ = writeln!(s, "{l}");
            }
        }
        s
    }
}

/// The lines that differ between `old` and `new`, in order: `- ` removed, `+ ` added (a
/// longest common subsequence; spec files are a few hundred lines at most).
fn line_diff(old: &str, new: &str) -> Vec<String> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    // common[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut common = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            common[i][j] = if a[i] == b[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || common[i + 1][j] >= common[i][j + 1]) {
            // A line replaced reads as its old form, then its new one.
            out.push(format!("- {}", a[i]));
            i += 1;
        } else {
            out.push(format!("+ {}", b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changed_lines_are_listed_in_order() {
        let old = "name = \"m\"\nrate = \"10mbit\"\nmedium = \"shared\"\n";
        let new = "name = \"m\"\nhost = \"486dx4\"\nrate = \"10mbit\"\nmedium = \"switched\"\n";
        assert_eq!(
            line_diff(old, new),
            [
                "+ host = \"486dx4\"",
                "- medium = \"shared\"",
                "+ medium = \"switched\""
            ]
        );
        assert!(line_diff(old, old).is_empty());
    }

    #[test]
    fn runs_with_a_changed_topology_are_told_apart_and_the_same_runs_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let make = |name: &str, host: &str| {
            let run = dir.path().join(name);
            std::fs::create_dir_all(run.join("topologies")).unwrap();
            std::fs::write(run.join("experiment.toml"), "name = \"e\"\n").unwrap();
            std::fs::write(
                run.join("topologies/mesh.toml"),
                format!("name = \"mesh\"\n{host}"),
            )
            .unwrap();
            run
        };
        let (a, b, c) = (
            make("a", ""),
            make("b", "host = \"486dx4\"\n"),
            make("c", ""),
        );
        let d = SpecDiff::between(&a, &b);
        assert_eq!(
            d.files,
            [(
                "topologies/mesh.toml".to_string(),
                vec!["+ host = \"486dx4\"".to_string()]
            )]
        );
        let text = d.render("a", "b");
        assert!(
            text.starts_with("warning: b differs from a in topologies/mesh.toml"),
            "{text}"
        );
        assert!(SpecDiff::between(&a, &c).is_empty());
    }

    #[test]
    fn runs_on_other_hosts_are_told_apart_by_the_facts_all_their_nodes_share() {
        let dir = tempfile::tempdir().unwrap();
        let make = |name: &str, kernel: &str| {
            let run = dir.path().join(name);
            std::fs::create_dir_all(&run).unwrap();
            let node = |host: &str| serde_json::json!({"hostname": host, "kernel": {"release": kernel}, "cpus": 2});
            let manifest = serde_json::json!({
                "nodes": {"n01": node("n01"), "n02": node("n02")},
            });
            std::fs::write(run.join("manifest.json"), manifest.to_string()).unwrap();
            run
        };
        let (a, b, c) = (
            make("a", "6.1.0-57"),
            make("b", "6.12.0-1"),
            make("c", "6.1.0-57"),
        );
        let d = SpecDiff::between(&a, &b);
        // The kernel both nodes share changed; their names differ within a run and are left out.
        assert_eq!(
            d.files,
            [(
                "hosts".to_string(),
                vec![
                    "- kernel.release = 6.1.0-57".to_string(),
                    "+ kernel.release = 6.12.0-1".to_string()
                ]
            )]
        );
        assert!(!d.specs_differ());
        let text = d.render("a", "b");
        assert!(
            text.starts_with(
                "warning: b differs from a in hosts: its cells are compared across another tool \
                 or other hosts"
            ),
            "{text}"
        );
        assert!(SpecDiff::between(&a, &c).is_empty());
    }
}
