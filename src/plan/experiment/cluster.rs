//! The `[cluster]` table: where the nodes come from, and for a Slurm allocation how to reach
//! them. Each setting belongs to one kind; given to another, it is an error where it is
//! written rather than a value silently ignored.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Serialize;

use toml::Spanned;

use crate::remote::inventory::{SettingsSpec, ssh_settings};
use crate::spec::experiment::{ClusterKind, ClusterSpec};

use super::errors::ErrorList;

/// Where an experiment's nodes come from.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Cluster {
    Docker,
    /// The virtual cluster of network namespaces.
    Netns,
    /// The virtual cluster of network namespaces with a QEMU guest in every node.
    Vm,
    Inventory {
        path: PathBuf,
        /// Where the experiment names it, for messages about what it lacks.
        #[serde(skip)]
        named_at: Range<usize>,
    },
    /// The current Slurm allocation's hosts, reached as `ssh` says.
    Slurm {
        ssh: crate::remote::SshSettings,
        sudo: bool,
    },
}

/// Where the nodes run; an inventory file and SSH key files are relative to `dir`.
pub(super) fn cluster(spec: &ClusterSpec, dir: &Path, errors: &mut ErrorList) -> Cluster {
    if spec.kind != ClusterKind::Slurm {
        for (key, span) in ssh_keys(spec) {
            errors.push(
                span,
                format!("`{key}` is for `kind = \"slurm\"`; an inventory sets it in its own file"),
            );
        }
    }
    match (spec.kind, &spec.inventory) {
        (ClusterKind::Docker, None) => Cluster::Docker,
        (ClusterKind::Docker, Some(inv)) => {
            errors.push(inv.span(), "`inventory` needs `kind = \"inventory\"`");
            Cluster::Docker
        }
        (ClusterKind::Netns, None) => Cluster::Netns,
        (ClusterKind::Netns, Some(inv)) => {
            errors.push(inv.span(), "`inventory` needs `kind = \"inventory\"`");
            Cluster::Netns
        }
        (ClusterKind::Vm, None) => Cluster::Vm,
        (ClusterKind::Vm, Some(inv)) => {
            errors.push(inv.span(), "`inventory` needs `kind = \"inventory\"`");
            Cluster::Vm
        }
        (ClusterKind::Inventory, Some(inv)) => Cluster::Inventory {
            path: dir.join(inv.get_ref()),
            named_at: inv.span(),
        },
        (ClusterKind::Inventory, None) => {
            errors.push(
                0..0,
                "`cluster.kind = \"inventory\"` needs `cluster.inventory = \"hosts.toml\"`",
            );
            Cluster::Docker
        }
        (ClusterKind::Slurm, inv) => {
            if let Some(inv) = inv {
                errors.push(
                    inv.span(),
                    "`inventory` needs `kind = \"inventory\"`: a Slurm allocation names its own hosts",
                );
            }
            slurm(spec, dir, errors)
        }
    }
}

/// The SSH settings of a Slurm cluster, checked by the inventory's rules.
fn slurm(spec: &ClusterSpec, dir: &Path, errors: &mut ErrorList) -> Cluster {
    let settings = SettingsSpec {
        user: spec.user.as_ref(),
        port: spec.port.as_ref(),
        identity: spec.identity.as_ref(),
        known_hosts: spec.known_hosts.as_ref(),
        jump: spec.jump.as_ref(),
    };
    let ssh = ssh_settings(errors.source, dir, settings).unwrap_or_else(|e| {
        errors.extend(e);
        Default::default()
    });
    Cluster::Slurm {
        ssh,
        sudo: spec.sudo.as_ref().is_some_and(|s| *s.get_ref()),
    }
}

/// The SSH settings given, by key, with where each is written.
fn ssh_keys(spec: &ClusterSpec) -> Vec<(&'static str, std::ops::Range<usize>)> {
    let span = |v: Option<&Spanned<String>>| v.map(Spanned::span);
    [
        ("user", span(spec.user.as_ref())),
        ("port", spec.port.as_ref().map(Spanned::span)),
        ("identity", span(spec.identity.as_ref())),
        ("known_hosts", span(spec.known_hosts.as_ref())),
        ("jump", span(spec.jump.as_ref())),
        ("sudo", spec.sudo.as_ref().map(Spanned::span)),
    ]
    .into_iter()
    .filter_map(|(key, at)| Some((key, at?)))
    .collect()
}
