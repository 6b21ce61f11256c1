//! Creates a cluster's [`Project`] through the docker engine, many containers at a time.
//!
//! docker-compose 1.29 did not bring 144 containers up within three minutes here; the engine
//! itself creates and wires containers in parallel and only serialises their start. So: every network at once, every container created and
//! joined to its networks a few at a time, then started in batches. The containers carry
//! compose's project labels as well as ours, so `docker-compose -p ... ps` by hand lists them.

use std::path::Path;
use std::time::Duration;

use super::cmd::Cmd;
use super::error::{Error, Result};
use super::parallel;
use super::project::{CAPABILITIES, DEVICES, Network, Project, Service};

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
    labelled(cmd, project, &n.labels, &compose)
        .arg(&n.name)
        .run()
        .map(drop)
}

/// `docker create` on the service's first network, then `docker network connect` to each of
/// the others in order (`docker create` takes only one network on this engine's API).
fn create_container(project: &Project, s: &Service, dir: &Path) -> Result<()> {
    let network_name = |key: &str| -> Result<&str> {
        project
            .network(key)
            .map(|n| n.name.as_str())
            .ok_or_else(|| Error::Wiring(format!("service {} names no network {key}", s.key)))
    };
    let Some((first, rest)) = s.networks.split_first() else {
        return Err(Error::Wiring(format!("service {} has no network", s.key)));
    };
    let mut cmd = Cmd::new("docker", format!("creating container {}", s.container_name))
        .args(["create", "--name", s.container_name.as_str()])
        .args(["--hostname", s.key.as_str()])
        .args(["--init", "--network", network_name(&first.0)?])
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
