//! Doing one thing on every node at once, and collecting what failed as "node: cause" lines.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::remote::Sessions;
use crate::spec::NodeName;

/// How long one command on a node may take.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(60);

/// How many nodes do one thing at once, as pdsh's and ClusterShell's fan-out (32 and 64 by
/// default). Every node's command has its own timeout, which must measure that node's work:
/// with all 256 nodes of a virtual cluster started at once on two cores, each teardown shared
/// the CPU with 255 others and every one of them ran past its 60 s (measured: 256 of 256).
/// A node's timeout starts when its turn comes.
pub const FANOUT: usize = 64;

/// Runs a per-node future for every node, [`FANOUT`] at a time; returns the values of those
/// that succeeded and the errors of the others.
pub async fn on_all<F, Fut, T>(nodes: &[NodeName], f: F) -> (BTreeMap<NodeName, T>, Vec<String>)
where
    F: Fn(NodeName) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    use futures_util::StreamExt;
    // The futures are made only as a slot frees: one's timeouts start when it first runs.
    let results: Vec<(NodeName, anyhow::Result<T>)> = futures_util::stream::iter(nodes)
        .map(|n| {
            let fut = f(n.clone());
            async move { (n.clone(), fut.await) }
        })
        .buffer_unordered(FANOUT)
        .collect()
        .await;
    let mut ok = BTreeMap::new();
    let mut errors = Vec::new();
    for (n, r) in results {
        match r {
            Ok(v) => {
                ok.insert(n, v);
            }
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    (ok, errors)
}

/// Runs each node's script at once on every node: fed to `sh` on stdin, with the node-side
/// ledger (quoted: it may come from a file) as the script's argument. Returns each successful
/// node's standard output, and "node: cause" for the others.
pub async fn run_scripts(
    cluster: &Sessions,
    scripts: &BTreeMap<NodeName, String>,
    ledger: &str,
) -> (BTreeMap<NodeName, String>, Vec<String>) {
    let nodes: Vec<NodeName> = scripts.keys().cloned().collect();
    let command = match script_command(ledger) {
        Ok(c) => c,
        Err(e) => return (BTreeMap::new(), vec![e]),
    };
    on_all(&nodes, |n| {
        let command = &command;
        async move {
            let out = cluster
                .run(&n, command, Some(scripts[&n].as_bytes()), EXEC_TIMEOUT)
                .await?;
            Ok(out.stdout)
        }
    })
    .await
}

/// The command a node runs a script with: `sh` reading it on stdin, the ledger its argument.
fn script_command(ledger: &str) -> Result<String, String> {
    let ledger = shlex::try_quote(ledger)
        .map_err(|_| format!("the node ledger {ledger:?} holds a NUL byte"))?;
    Ok(format!("sh -s -- {ledger}"))
}

/// Joins `lines` for an error message, one indented line each.
pub fn listed(lines: &[String]) -> String {
    lines.join("\n  ")
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::process::{Command, Stdio};

    use super::*;

    #[test]
    fn a_ledger_path_with_shell_in_it_reaches_the_script_as_one_argument() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("pwned");
        let ledger = format!(
            "/run/x; touch {} #$(touch {0})`touch {0}`",
            marker.display()
        );
        let command = script_command(&ledger).unwrap();
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"printf '%s|%s' \"$#\" \"$1\"").unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            format!("1|{ledger}")
        );
        assert!(!marker.exists(), "a command in the ledger path ran");
        assert!(script_command("a\0b").is_err());
    }

    #[tokio::test]
    async fn every_node_is_done_fanout_at_a_time_and_each_starts_only_on_its_turn() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let nodes: Vec<NodeName> = (0..3 * FANOUT + 5)
            .map(|i| format!("n{i}").parse().unwrap())
            .collect();
        let (made, running, most) = (
            AtomicUsize::new(0),
            AtomicUsize::new(0),
            AtomicUsize::new(0),
        );
        let made_before_first_ran = AtomicUsize::new(usize::MAX);
        let (ok, errors) = on_all(&nodes, |n| {
            made.fetch_add(1, Ordering::SeqCst);
            let (made, running, most) = (&made, &running, &most);
            let first = &made_before_first_ran;
            async move {
                let _ = first.compare_exchange(
                    usize::MAX,
                    made.load(Ordering::SeqCst),
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                );
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                if n.as_str().ends_with('7') {
                    anyhow::bail!("{n}: refused");
                }
                Ok(n.to_string())
            }
        })
        .await;
        assert_eq!(ok.len() + errors.len(), nodes.len());
        assert!(ok.iter().all(|(n, v)| n.as_str() == v && !v.ends_with('7')));
        assert_eq!(
            errors.len(),
            nodes.iter().filter(|n| n.as_str().ends_with('7')).count()
        );
        assert!(
            errors.iter().all(|e| e.ends_with(": refused")),
            "{errors:?}"
        );
        assert_eq!(most.load(Ordering::SeqCst), FANOUT, "nodes at once");
        assert!(
            made_before_first_ran.load(Ordering::SeqCst) <= FANOUT,
            "futures were made before their turn: {}",
            made_before_first_ran.load(Ordering::SeqCst)
        );
    }
}
