//! What the host kernel can do, read from its build configuration rather than assumed.

use std::collections::BTreeMap;

use crate::vcluster::cmd::Cmd;
use crate::vcluster::error::{Error, Result};

/// The kernel's `CONFIG_*` settings, when the kernel publishes them.
#[derive(Debug, Clone, Default)]
pub struct KernelConfig {
    values: BTreeMap<String, String>,
    source: String,
}

impl KernelConfig {
    /// Reads `/proc/config.gz`, else `/boot/config-<release>`; `None` if neither exists.
    pub fn load() -> Option<KernelConfig> {
        if std::path::Path::new("/proc/config.gz").exists()
            && let Ok(text) = Cmd::new("zcat", "reading the kernel configuration")
                .arg("/proc/config.gz")
                .run()
        {
            return Some(KernelConfig::parse(&text, "/proc/config.gz"));
        }
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
        let path = format!("/boot/config-{}", release.trim());
        let text = std::fs::read_to_string(&path).ok()?;
        Some(KernelConfig::parse(&text, &path))
    }

    pub fn parse(text: &str, source: &str) -> KernelConfig {
        let values = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .collect();
        KernelConfig {
            values,
            source: source.to_owned(),
        }
    }

    /// Built in or as a module.
    pub fn has(&self, symbol: &str) -> bool {
        matches!(
            self.values
                .get(&format!("CONFIG_{symbol}"))
                .map(String::as_str),
            Some("y" | "m")
        )
    }

    /// Fails with what is missing and what it was needed for.
    pub fn require(&self, symbol: &str, feature: &str, needed_for: &str) -> Result<()> {
        if self.has(symbol) {
            Ok(())
        } else {
            Err(Error::Kernel {
                needed_for: needed_for.into(),
                feature: feature.into(),
                config: format!("CONFIG_{symbol} is not set in {}", self.source),
                what_to_do: "run on a kernel built with it".into(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_y_and_m_and_reports_what_is_missing() {
        let k = KernelConfig::parse(
            "CONFIG_IFB=y\nCONFIG_VETH=m\n# CONFIG_NET_SCH_NETEM is not set\n",
            "test",
        );
        assert!(k.has("IFB") && k.has("VETH"));
        assert!(!k.has("NET_SCH_NETEM"));
        let e = k
            .require("NET_SCH_NETEM", "the netem qdisc", "delay on segment \"a\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("netem") && e.contains("CONFIG_NET_SCH_NETEM"),
            "{e}"
        );
    }
}
