//! The inventory file's layout, as read by `load` and written by `to_toml`. Every value keeps
//! its place in the file, so each check can point at the value it refuses.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toml::Spanned;

/// What `[defaults]` and each `[[host]]` may set for reaching a host.
#[derive(Debug, Clone, Copy, Default)]
pub struct SettingsSpec<'a> {
    pub user: Option<&'a Spanned<String>>,
    /// Wider than a port, so that `0` and `70000` reach the port check and its message.
    pub port: Option<&'a Spanned<i64>>,
    pub identity: Option<&'a Spanned<String>>,
    pub known_hosts: Option<&'a Spanned<String>>,
    pub jump: Option<&'a Spanned<String>>,
}

/// How every host is reached unless its `[[host]]` says otherwise.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// The user to log in as (default: ssh's own choice).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub user: Option<Spanned<String>>,
    /// The SSH port, 1 to 65535 (default 22).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<u16>")]
    pub port: Option<Spanned<i64>>,
    /// A private key file, relative to this file or under `~/`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub identity: Option<Spanned<String>>,
    /// A known_hosts file, relative to this file (default: ssh's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub known_hosts: Option<Spanned<String>>,
    /// A jump host (`[user@]host[:port]`), as ssh's ProxyJump.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub jump: Option<Spanned<String>>,
    /// Run configuration commands through `sudo -n`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sudo: bool,
}

/// Which machines play which logical nodes, and how to reach them.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// Logical node names as the topology calls them, e.g. `n[01-16]`.
    #[schemars(with = "String")]
    pub nodes: Spanned<String>,
    /// One address or host name per node, in the same order, e.g. `node[01-16].cluster`.
    #[schemars(with = "String")]
    pub address: Spanned<String>,
    /// As in `[defaults]`, for these hosts.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub user: Option<Spanned<String>>,
    /// As in `[defaults]`, for these hosts.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<u16>")]
    pub port: Option<Spanned<i64>>,
    /// As in `[defaults]`, for these hosts.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub identity: Option<Spanned<String>>,
    /// As in `[defaults]`, for these hosts.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub known_hosts: Option<Spanned<String>>,
    /// As in `[defaults]`, for these hosts.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub jump: Option<Spanned<String>>,
    /// As in `[defaults]`, for these hosts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sudo: Option<bool>,
}

/// An inventory file: `[defaults]` and `[[host]]` tables.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InventorySpec {
    #[serde(default, skip_serializing_if = "Defaults::is_empty")]
    pub defaults: Defaults,
    #[serde(default)]
    pub host: Vec<HostSpec>,
}

impl Defaults {
    pub fn is_empty(&self) -> bool {
        let SettingsSpec {
            user,
            port,
            identity,
            known_hosts,
            jump,
        } = self.settings();
        user.is_none()
            && port.is_none()
            && identity.is_none()
            && known_hosts.is_none()
            && jump.is_none()
            && !self.sudo
    }

    pub fn settings(&self) -> SettingsSpec<'_> {
        SettingsSpec {
            user: self.user.as_ref(),
            port: self.port.as_ref(),
            identity: self.identity.as_ref(),
            known_hosts: self.known_hosts.as_ref(),
            jump: self.jump.as_ref(),
        }
    }
}

impl HostSpec {
    pub fn settings(&self) -> SettingsSpec<'_> {
        SettingsSpec {
            user: self.user.as_ref(),
            port: self.port.as_ref(),
            identity: self.identity.as_ref(),
            known_hosts: self.known_hosts.as_ref(),
            jump: self.jump.as_ref(),
        }
    }
}

/// A value to write; where it would be in a file only matters when reading.
pub fn unplaced<T>(value: T) -> Spanned<T> {
    Spanned::new(0..0, value)
}
