//! Creates a cluster's [`Project`] through the docker engine, many containers at a time.
//!
//! docker-compose 1.29 did not bring 144 containers up within three minutes here; the engine
//! itself creates and wires containers in parallel and only serialises their start. So: every network at once, every container created and
//! joined to its networks a few at a time, then started in batches. The containers carry
//! compose's project labels as well as ours, so `docker-compose -p ... ps` by hand lists them.

use std::path::Path;
use std::time::Duration;

use super::project::{CAPABILITIES, DEVICES, Network, Project, Service};
use crate::vcluster::cmd::Cmd;
use crate::vcluster::error::{Error, Result};
use crate::vcluster::parallel;

/// docker CLI calls in flight at once while creating. Each is mostly the daemon's work; more
/// than this only queues behind its locks on two cores.
const CREATE_WIDTH: usize = 8;
/// Containers per `docker start` call, and such calls at once. Starting is serialised in the
/// daemon (about 0.3 s per container here whatever the width: 8 or 32 at once started 64
/// containers no faster than 2), so two keep it busy.
const START_BATCH: usize = 16;
const START_WIDTH: usize = 2;

/// Creates the project's networks and containers and starts the containers. `dir` is the
/// cluster's directory, which the mounts are relative to.
pub fn create(project: &Project, dir: &Path) -> Result<()> {
    parallel::try_for_each(CREATE_WIDTH, &project.networks, |n| {
        create_network(project, n)
    })?;
    parallel::try_for_each(CREATE_WIDTH, &project.services, |s| {
        create_container(project, s, dir)
    })?;
    let names: Vec<&str> = project
        .services
        .iter()
        .map(|s| s.container_name.as_str())
        .collect();
    let batches: Vec<&[&str]> = names.chunks(START_BATCH).collect();
    parallel::try_for_each(START_WIDTH, &batches, |b| start(b))
}

/// `--label` for each of ours (`own`) and for compose's: its project's and the object's own
/// (`compose`).
fn labelled(
    mut cmd: Cmd,
    project: &Project,
    own: &[(&'static str, String)],
    compose: &[(&'static str, String)],
) -> Cmd {
    let project_label = ("com.docker.compose.project", project.cluster.project());
    for (k, v) in own.iter().chain([&project_label]).chain(compose) {
        cmd = cmd.arg("--label").arg(format!("{k}={v}"));
    }
    cmd
}

fn create_network(project: &Project, n: &Network) -> Result<()> {
    let mut cmd = Cmd::new("docker", format!("creating network {}", n.name))
        .args(["network", "create", "--driver", "bridge"])
        .timeout(Duration::from_secs(60));
    if n.internal {
        cmd = cmd.arg("--internal");
    }
    if let Some(subnet) = n.subnet {
        cmd = cmd.arg("--subnet").arg(subnet.to_string());
    }
    for (k, v) in n.driver_opts {
        cmd = cmd.arg("--opt").arg(format!("{k}={v}"));
    }
    let compose = [("com.docker.compose.network", n.key.clone())];
    match labelled(cmd, project, &n.labels, &compose)
        .arg(&n.name)
        .run()
    {
        Ok(_) => Ok(()),
        Err(e) if stuck_but_ours(n) => {
            tracing::warn!(
                network = n.name,
                "reusing the network an earlier `down` of this cluster could not remove (the \
                 engine still counts an endpoint of a container that is gone): {e}"
            );
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Whether the network named as `n` exists already as this very network of this cluster
/// (same labels, same internal flag), with no container on it: what the docker engine leaves
/// when it keeps counting an endpoint of a removed container ("has active endpoints") and
/// refuses to remove the network until it restarts. Such a network carries nothing, so a new
/// bring-up may use it instead of failing on its name.
fn stuck_but_ours(n: &Network) -> bool {
    Cmd::new("docker", format!("inspecting network {}", n.name))
        .args(["network", "inspect", "--format", STUCK_FORMAT, &n.name])
        .run()
        .is_ok_and(|out| is_stuck_but_ours(n, &out))
}

/// What [`stuck_but_ours`] reads of a network: its labels, whether it is internal, and how
/// many containers it has.
const STUCK_FORMAT: &str = "{{json .Labels}}\t{{.Internal}}\t{{len .Containers}}";

/// [`stuck_but_ours`] on `docker network inspect --format STUCK_FORMAT`'s output.
fn is_stuck_but_ours(n: &Network, inspected: &str) -> bool {
    let mut fields = inspected.trim().split('\t');
    let labels: std::collections::BTreeMap<String, String> = fields
        .next()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_default();
    let internal = fields.next() == Some(if n.internal { "true" } else { "false" });
    let empty = fields.next() == Some("0");
    let ours = n
        .labels
        .iter()
        .all(|(k, v)| labels.get(*k).is_some_and(|x| x == v));
    ours && internal && empty
}

/// `docker create` on the service's first network (or none), then `docker network connect` to
/// each of the others in order (`docker create` takes only one network on this engine's API).
fn create_container(project: &Project, s: &Service, dir: &Path) -> Result<()> {
    let network_name = |key: &str| -> Result<&str> {
        project
            .network(key)
            .map(|n| n.name.as_str())
            .ok_or_else(|| Error::Wiring(format!("service {} names no network {key}", s.key)))
    };
    // A switch whose every port is a wire of the tool's joins no network at all.
    let (first, rest) = match s.networks.split_first() {
        Some((first, rest)) => (network_name(&first.0)?, rest),
        None => ("none", &[][..]),
    };
    let mut cmd = Cmd::new("docker", format!("creating container {}", s.container_name))
        .args(["create", "--name", s.container_name.as_str()])
        .args(["--hostname", s.key.as_str()])
        .args(["--init", "--network", first])
        .timeout(Duration::from_secs(60));
    for cap in CAPABILITIES {
        cmd = cmd.args(["--cap-add", cap]);
    }
    for dev in DEVICES {
        cmd = cmd.args(["--device", dev]);
    }
    for (k, v) in s.sysctls() {
        cmd = cmd.arg("--sysctl").arg(format!("{k}={v}"));
    }
    let compose = [
        ("com.docker.compose.service", s.key.clone()),
        ("com.docker.compose.oneoff", "False".to_owned()),
        ("com.docker.compose.container-number", "1".to_owned()),
    ];
    cmd = labelled(cmd, project, &s.labels, &compose);
    for m in &s.mounts {
        let source = dir.join(&m.source);
        // --mount's value is a CSV record: the source field is quoted, so that a comma or
        // a quote in the cluster directory's path stays part of the path.
        let source = format!("source={}", source.display()).replace('"', "\"\"");
        cmd = cmd.arg("--mount").arg(format!(
            "type=bind,\"{source}\",target={},readonly",
            m.target
        ));
    }
    cmd.arg(&project.image)
        .args(s.command.iter().copied())
        .run()?;
    for (key, _) in rest {
        Cmd::new(
            "docker",
            format!("attaching {} to network {key}", s.container_name),
        )
        .args(["network", "connect", network_name(key)?, &s.container_name])
        .timeout(Duration::from_secs(60))
        .run()?;
    }
    Ok(())
}

fn start(names: &[&str]) -> Result<()> {
    Cmd::new("docker", "starting the cluster's containers")
        .arg("start")
        .args(names.iter().copied())
        .timeout(Duration::from_secs(300))
        .run()
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vcluster::names::{LABEL_CLUSTER, LABEL_NAME, LABEL_ROLE};

    fn segment() -> Network {
        Network {
            key: "seg-bus-b".into(),
            name: "orchestrate-dual-seg-bus-b".into(),
            comment: String::new(),
            internal: false,
            driver_opts: &[],
            labels: [
                (LABEL_CLUSTER, "dual".into()),
                (LABEL_ROLE, "segment".into()),
                (LABEL_NAME, "bus-b".into()),
            ],
            subnet: None,
            stations: 16,
        }
    }

    #[test]
    fn only_an_empty_network_of_this_very_cluster_is_reused() {
        let n = segment();
        let labels = r#"{"org.orchestrate.cluster":"dual","org.orchestrate.name":"bus-b","org.orchestrate.role":"segment","com.docker.compose.network":"seg-bus-b"}"#;
        assert!(is_stuck_but_ours(&n, &format!("{labels}\tfalse\t0\n")));
        assert!(
            !is_stuck_but_ours(&n, &format!("{labels}\tfalse\t2")),
            "containers on it"
        );
        assert!(
            !is_stuck_but_ours(&n, &format!("{labels}\ttrue\t0")),
            "internal"
        );
        let other = labels.replace("\"dual\"", "\"mesh\"");
        assert!(
            !is_stuck_but_ours(&n, &format!("{other}\tfalse\t0")),
            "another cluster's"
        );
        assert!(!is_stuck_but_ours(&n, "null\tfalse\t0"), "no labels");
        assert!(!is_stuck_but_ours(&n, ""));
    }
}
