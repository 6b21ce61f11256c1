//! The inventory file's layout, as read by `load` and written by `to_toml`. Every value keeps
//! its place in the file, so each check can point at the value it refuses.

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

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<Spanned<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known_hosts: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jump: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sudo: bool,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    pub nodes: Spanned<String>,
    pub address: Spanned<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<Spanned<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known_hosts: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jump: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sudo: Option<bool>,
}

#[derive(Debug, Deserialize, Serialize)]
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
