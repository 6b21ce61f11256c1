//! The docker engine, driven through its command-line client (the engine here speaks API
//! 1.41; the CLI negotiates versions for us). Compose is not needed: the cluster's compose
//! file is written for people, and `up` creates what it describes itself.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::vcluster::cmd::{Cmd, on_path};
use crate::vcluster::error::{Error, Result};
use crate::vcluster::names::{ClusterName, LABEL_CLUSTER};

#[derive(Debug, Clone)]
pub struct Docker;

impl Docker {
    /// Checks that the docker engine answers.
    pub fn connect() -> Result<Docker> {
        if on_path("docker").is_none() {
            return Err(Error::Host {
                problem: "the `docker` client is not installed".into(),
                what_to_do: "install docker (Debian: apt-get install docker.io)".into(),
            });
        }
        let info = Cmd::new("docker", "asking the docker engine for its version")
            .args(["version", "--format", "{{.Server.Version}}"])
            .hint("is the docker daemon running, and may this user use it (root or group docker)?")
            .timeout(std::time::Duration::from_secs(30))
            .run()?;
        tracing::debug!(engine = info.trim(), "docker engine");
        Ok(Docker)
    }

    pub fn image_exists(&self, reference: &str) -> bool {
        Cmd::new("docker", "looking for an image")
            .args(["image", "inspect", "--format", "{{.Id}}", reference])
            .succeeds()
    }

    /// Ids of the cluster's containers (running or not).
    pub fn cluster_containers(&self, cluster: &ClusterName) -> Result<Vec<String>> {
        let out = Cmd::new("docker", "listing the cluster's containers")
            .args(["ps", "-aq", "--no-trunc", "--filter"])
            .arg(format!("label={LABEL_CLUSTER}={cluster}"))
            .run()?;
        Ok(words(&out))
    }

    /// The names in the cluster label of every container and network that carries it.
    pub fn labelled_clusters(&self) -> Result<Vec<String>> {
        let filter = format!("label={LABEL_CLUSTER}");
        let format = format!("{{{{.Label \"{LABEL_CLUSTER}\"}}}}");
        let containers = Cmd::new("docker", "listing every cluster's containers")
            .args(["ps", "-a", "--filter", &filter, "--format", &format])
            .run()?;
        let networks = Cmd::new("docker", "listing every cluster's networks")
            .args(["network", "ls", "--filter", &filter, "--format", &format])
            .run()?;
        let mut names = words(&containers);
        names.extend(words(&networks));
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Ids of the cluster's networks.
    pub fn cluster_networks(&self, cluster: &ClusterName) -> Result<Vec<String>> {
        let out = Cmd::new("docker", "listing the cluster's networks")
            .args(["network", "ls", "-q", "--no-trunc", "--filter"])
            .arg(format!("label={LABEL_CLUSTER}={cluster}"))
            .run()?;
        Ok(words(&out))
    }

    /// The subnets of every network the engine has, whoever made it.
    pub fn network_subnets(&self) -> Result<Vec<ipnet::Ipv4Net>> {
        let ids = words(
            &Cmd::new("docker", "listing the engine's networks")
                .args(["network", "ls", "-q", "--no-trunc"])
                .run()?,
        );
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let out = Cmd::new("docker", "reading the engine's networks' subnets")
            .args([
                "network",
                "inspect",
                "--format",
                "{{range .IPAM.Config}}{{.Subnet}} {{end}}",
            ])
            .args(ids)
            .run()?;
        // IPv6 subnets and the rare unparsable entry cannot overlap an IPv4 one.
        Ok(words(&out).iter().filter_map(|s| s.parse().ok()).collect())
    }

    pub fn inspect_containers(&self, ids: &[String]) -> Result<Vec<ContainerInfo>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let cmd = Cmd::new("docker", "inspecting the cluster's containers")
            .args(["container", "inspect"])
            .args(ids.iter().cloned());
        let out = cmd.run()?;
        serde_json::from_str(&out).map_err(|e| Error::Unexpected {
            what: "reading container details".into(),
            command: cmd.display(),
            detail: e.to_string(),
        })
    }

    /// Removes the containers one after the other, each stopped before the next is touched.
    ///
    /// Stopping a container takes each of its endpoints off its networks, and on this engine
    /// (libnetwork of 20.10, up to at least 20.10.24) two endpoints leaving the same network at
    /// the same time can deadlock: one leave takes the network's lock and then the
    /// controller's, while the controller's watch loop, handling the other, takes them in the
    /// opposite order. The whole engine then stops answering (seen here once, with 16 nodes
    /// removed by one `docker rm -f`, which the CLI runs in parallel) until it restarts.
    /// `docker rm -f` of one container returns only once the engine has released its network
    /// (the engine cleans up before it marks the container stopped), so one at a time no two
    /// leaves overlap. Every container is tried; the first failure is returned.
    pub fn remove_containers(&self, ids: &[String]) -> Result<()> {
        let mut first_error = None;
        for id in ids {
            let removed = Cmd::new("docker", format!("removing the cluster's container {id}"))
                .args(["rm", "--force", "--volumes", id])
                .timeout(Duration::from_secs(60))
                .run();
            if let Err(e) = removed {
                tracing::warn!("{e}");
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    pub fn remove_networks(&self, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        Cmd::new("docker", "removing the cluster's networks")
            .args(["network", "rm"])
            .args(ids.iter().cloned())
            .run()
            .map(drop)
    }

    /// Names of the endpoints a network still has. After the cluster's containers are gone,
    /// any endpoint left is one the engine lost track of (its container died mid-removal).
    pub fn network_endpoints(&self, network: &str) -> Result<Vec<String>> {
        let out = Cmd::new("docker", "listing a network's endpoints")
            .args([
                "network",
                "inspect",
                "--format",
                "{{range .Containers}}{{.Name}} {{end}}",
                network,
            ])
            .run()?;
        Ok(words(&out))
    }

    /// Whether a container of this name or id exists (running or not).
    pub fn container_exists(&self, name_or_id: &str) -> bool {
        Cmd::new("docker", "looking for a container")
            .args(["container", "inspect", "--format", "{{.Id}}", name_or_id])
            .succeeds()
    }

    /// A network's name, from its id.
    pub fn network_name(&self, id: &str) -> Result<String> {
        let out = Cmd::new("docker", "reading a network's name")
            .args(["network", "inspect", "--format", "{{.Name}}", id])
            .run()?;
        Ok(out.trim().to_owned())
    }

    /// Detaches an endpoint from a network even when its container no longer exists, which is
    /// the engine's own way to clear a stale endpoint without restarting it.
    pub fn force_disconnect(&self, network: &str, endpoint: &str) -> Result<()> {
        Cmd::new(
            "docker",
            "detaching a stale endpoint from a cluster network",
        )
        .args(["network", "disconnect", "--force", network, endpoint])
        .run()
        .map(drop)
    }
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

/// The parts of `docker container inspect` this module uses.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ContainerInfo {
    pub id: String,
    pub name: String,
    pub state: ContainerState,
    pub config: ContainerConfig,
    pub network_settings: NetworkSettings,
}

impl ContainerInfo {
    pub fn label(&self, key: &str) -> Option<&str> {
        self.config.labels.get(key).map(String::as_str)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ContainerState {
    pub status: String,
    pub running: bool,
    pub pid: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ContainerConfig {
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct NetworkSettings {
    #[serde(default)]
    pub networks: BTreeMap<String, Endpoint>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Endpoint {
    pub mac_address: String,
    #[serde(rename = "IPAddress")]
    pub ip_address: String,
}
