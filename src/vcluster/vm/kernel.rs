//! Debian's kernel for VM nodes: the version the package `linux-image-amd64` points at,
//! fetched with apt and unpacked, never installed, into a cache every cluster shares; its
//! modules indexed with depmod, so that the guest's modprobe finds them (bonding among them),
//! and the initramfs built once beside it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::vcluster::cmd::Cmd;
use crate::vcluster::error::{Error, Result};

use super::initramfs;

/// Where unpacked kernels are kept, one directory per version, like the node image: made on
/// first use, kept between clusters.
pub const CACHE_DIR: &str = "/var/cache/orchestrate/vm";
/// The Debian package that names the current kernel for this architecture.
const META_PACKAGE: &str = "linux-image-amd64";
/// Marks a version's directory as complete: written last.
const COMPLETE: &str = ".complete";

/// An unpacked kernel: its image, its modules and the initramfs that boots it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestKernel {
    pub version: String,
    pub dir: PathBuf,
}

impl GuestKernel {
    pub fn vmlinuz(&self) -> PathBuf {
        self.dir
            .join("boot")
            .join(format!("vmlinuz-{}", self.version))
    }
    /// `lib/modules/<version>`, which the guest sees at that path.
    pub fn modules(&self) -> PathBuf {
        self.dir.join("lib/modules").join(&self.version)
    }
    pub fn initramfs(&self) -> PathBuf {
        self.dir.join("initramfs.cpio")
    }
}

/// The kernel in `cache`, fetched and unpacked first when it is not there. Without apt (or
/// without a package source), the newest version already in the cache serves.
pub fn ensure(cache: &Path, busybox: &Path) -> Result<GuestKernel> {
    let wanted = match debian_version() {
        Ok(v) => v,
        Err(e) => return newest_cached(cache).ok_or(e),
    };
    let kernel = GuestKernel {
        dir: cache.join(&wanted),
        version: wanted,
    };
    if kernel.dir.join(COMPLETE).exists() {
        return Ok(kernel);
    }
    unpack(cache, &kernel, busybox)?;
    Ok(kernel)
}

/// The version `linux-image-amd64` depends on (`6.1.0-57-amd64`).
fn debian_version() -> Result<String> {
    let shown = Cmd::new("apt-cache", "finding Debian's current kernel")
        .args(["depends", META_PACKAGE])
        .hint("VM nodes boot Debian's kernel package; apt-cache must know linux-image-amd64")
        .run()?;
    parse_depends(&shown).ok_or_else(|| Error::Unexpected {
        what: "finding Debian's current kernel".into(),
        command: format!("apt-cache depends {META_PACKAGE}"),
        detail: format!("no `Depends: linux-image-…` line in {shown:?}"),
    })
}

fn parse_depends(shown: &str) -> Option<String> {
    shown.lines().find_map(|l| {
        let package = l.trim().strip_prefix("Depends: ")?.trim();
        let version = package.strip_prefix("linux-image-")?;
        (version != "amd64" && !version.contains(['<', '>', ' '])).then(|| version.to_owned())
    })
}

fn newest_cached(cache: &Path) -> Option<GuestKernel> {
    let mut versions: Vec<String> = std::fs::read_dir(cache)
        .ok()?
        .flatten()
        .filter(|e| e.path().join(COMPLETE).exists())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect();
    versions.sort();
    let version = versions.pop()?;
    Some(GuestKernel {
        dir: cache.join(&version),
        version,
    })
}

/// Downloads `linux-image-<version>`, unpacks it into a scratch directory, indexes its
/// modules, builds the initramfs and renames the directory into place: a half-made version
/// is never taken for a complete one.
fn unpack(cache: &Path, kernel: &GuestKernel, busybox: &Path) -> Result<()> {
    let scratch = cache.join(format!(".{}.{}", kernel.version, std::process::id()));
    let mkdir = |p: &Path| std::fs::create_dir_all(p).map_err(|e| Error::io("creating", p, e));
    let _ = std::fs::remove_dir_all(&scratch);
    mkdir(&scratch)?;
    let result = (|| {
        let package = format!("linux-image-{}", kernel.version);
        Cmd::new("apt-get", format!("downloading {package} for the VM nodes"))
            .args(["download", "-q", &package])
            .current_dir(&scratch)
            .timeout(Duration::from_secs(600))
            .hint("VM nodes boot Debian's kernel; apt needs a package source that has it")
            .run()?;
        let deb = std::fs::read_dir(&scratch)
            .map_err(|e| Error::io("listing", &scratch, e))?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "deb"))
            .ok_or_else(|| Error::Wiring(format!("apt-get download left no .deb for {package}")))?;
        let root = scratch.join("root");
        let root_s = root.display().to_string();
        Cmd::new("dpkg-deb", format!("unpacking {package}"))
            .args(["-x", &deb.display().to_string(), &root_s])
            .run()?;
        let _ = std::fs::remove_file(&deb);
        Cmd::new("depmod", format!("indexing {package}'s modules"))
            .args(["-b", &root_s, &kernel.version])
            .run()?;
        let unpacked = GuestKernel {
            version: kernel.version.clone(),
            dir: root.clone(),
        };
        let modules = early_modules(&unpacked)?;
        let archive = initramfs::build(busybox, &modules)?;
        std::fs::write(unpacked.initramfs(), archive)
            .map_err(|e| Error::io("writing", unpacked.initramfs(), e))?;
        std::fs::write(root.join(COMPLETE), b"")
            .map_err(|e| Error::io("writing", root.join(COMPLETE), e))?;
        std::fs::rename(&root, &kernel.dir)
            .map_err(|e| Error::io("moving into place", &kernel.dir, e))
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// The module files [`initramfs::EARLY_MODULES`] need, in load order, each once.
fn early_modules(kernel: &GuestKernel) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = Vec::new();
    for m in initramfs::EARLY_MODULES {
        let shown = Cmd::new("modprobe", format!("finding what {m} needs"))
            .args([
                "-d",
                &kernel.dir.display().to_string(),
                "-S",
                &kernel.version,
            ])
            .args(["--show-depends", m])
            .run()?;
        for file in insmod_lines(&shown) {
            if !files.contains(&file) {
                files.push(file);
            }
        }
    }
    Ok(files)
}

/// The files of `modprobe --show-depends`' `insmod <file> [options]` lines; built-in
/// modules (`builtin <name>`) need no file.
fn insmod_lines(shown: &str) -> Vec<PathBuf> {
    shown
        .lines()
        .filter_map(|l| l.strip_prefix("insmod "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(PathBuf::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_what_the_meta_package_depends_on() {
        let shown = "linux-image-amd64\n  Depends: linux-image-6.1.0-57-amd64\n";
        assert_eq!(parse_depends(shown).as_deref(), Some("6.1.0-57-amd64"));
        assert_eq!(parse_depends("linux-image-amd64\n"), None);
    }

    #[test]
    fn only_insmod_lines_name_files() {
        let shown = "insmod /x/lib/modules/v/kernel/net/tls/tls.ko \n\
                     insmod /x/lib/modules/v/kernel/drivers/net/bonding/bonding.ko max_bonds=0\n\
                     builtin af_packet\n";
        assert_eq!(
            insmod_lines(shown),
            [
                PathBuf::from("/x/lib/modules/v/kernel/net/tls/tls.ko"),
                PathBuf::from("/x/lib/modules/v/kernel/drivers/net/bonding/bonding.ko"),
            ]
        );
    }
}
