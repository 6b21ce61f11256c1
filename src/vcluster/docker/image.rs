//! The node image: Debian bookworm with sshd, iproute2, tc, ping, ethtool, tcpdump and the
//! traffic worker.
//!
//! Built from `docker/Dockerfile` on one of two bases:
//! - `debian:bookworm-slim` where a registry is reachable (or the image is already present);
//! - otherwise a base made offline: `debootstrap` of bookworm with `docker/packages.txt` from
//!   the Debian mirror the host's apt already uses, imported with `docker import`, tagged with a
//!   hash of its inputs and so made once per change of the package list.
//!
//! The node image's tag is a hash of everything that goes into it (base image id, Dockerfile,
//! package list, sshd config, worker binary): an unchanged input set is never rebuilt.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::engine::Docker;
use crate::remote::installed_worker;
use crate::vcluster::cmd::{Cmd, on_path};
use crate::vcluster::error::{Error, Result};

const DOCKERFILE: &str = include_str!("../../../docker/Dockerfile");
const PACKAGES: &str = include_str!("../../../docker/packages.txt");
const SSHD_CONFIG: &str = include_str!("../../../docker/sshd_config");

pub const SUITE: &str = "bookworm";
pub const REGISTRY_BASE: &str = "debian:bookworm-slim";
/// Changes whenever the way the offline base is made changes, so old bases are not reused.
const OFFLINE_RECIPE: &str =
    "debootstrap --variant=minbase; apt caches, lists and host keys removed; v1";
pub const NODE_REPO: &str = "orchestrate-node";
pub const BASE_REPO: &str = "orchestrate-base";

/// Where the base image comes from (also `cluster image --base`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum BaseSource {
    /// The registry's debian:bookworm-slim if present or pullable, else debootstrap.
    #[default]
    Auto,
    Registry,
    Debootstrap,
}

#[derive(Debug, Clone, Default)]
pub struct ImageOptions {
    pub base: BaseSource,
    /// The worker binary to put in the image; found automatically when `None`.
    pub worker: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct NodeImage {
    pub tag: String,
    pub base: String,
    pub worker: PathBuf,
    /// False when an image with the same inputs already existed.
    pub built: bool,
    pub elapsed: Duration,
}

/// The Debian packages of the node image.
pub fn packages() -> Vec<&'static str> {
    PACKAGES
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

fn hash_hex(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The offline base's tag: a hash of the suite, the recipe and the package list.
pub fn offline_base_tag() -> String {
    let pk = packages().join(",");
    format!(
        "{BASE_REPO}:{SUITE}-{}",
        hash_hex(&[SUITE.as_bytes(), OFFLINE_RECIPE.as_bytes(), pk.as_bytes()])
    )
}

/// Makes sure the node image exists; builds what is missing.
pub fn ensure(docker: &Docker, opts: &ImageOptions) -> Result<NodeImage> {
    let start = Instant::now();
    let worker = locate_worker(opts.worker.as_deref())?;
    let worker_bytes =
        std::fs::read(&worker).map_err(|e| Error::io("reading the worker binary", &worker, e))?;
    let base = ensure_base(docker, opts.base)?;
    let base_id = Cmd::new("docker", "reading the base image's id")
        .args(["image", "inspect", "--format", "{{.Id}}", &base])
        .run()?;
    let tag = format!(
        "{NODE_REPO}:{}",
        hash_hex(&[
            base_id.trim().as_bytes(),
            DOCKERFILE.as_bytes(),
            PACKAGES.as_bytes(),
            SSHD_CONFIG.as_bytes(),
            &worker_bytes,
        ])
    );
    if docker.image_exists(&tag) {
        return Ok(NodeImage {
            tag,
            base,
            worker,
            built: false,
            elapsed: start.elapsed(),
        });
    }
    let ctx = tempfile::Builder::new()
        .prefix("orchestrate-image-")
        .tempdir()
        .map_err(|e| Error::io("making a build directory", std::env::temp_dir(), e))?;
    for (name, body) in [
        ("Dockerfile", DOCKERFILE.as_bytes()),
        ("packages.txt", PACKAGES.as_bytes()),
        ("sshd_config", SSHD_CONFIG.as_bytes()),
        ("orchestrate-worker", &worker_bytes[..]),
    ] {
        let p = ctx.path().join(name);
        std::fs::write(&p, body).map_err(|e| Error::io("writing the build context", &p, e))?;
    }
    set_mode(&ctx.path().join("orchestrate-worker"), 0o755)?;
    tracing::info!(%tag, %base, "building the node image");
    Cmd::new("docker", "building the node image")
        // The classic builder needs no buildx plugin and works with engines as old as 20.10.
        .env("DOCKER_BUILDKIT", "0")
        .args(["build", "--quiet", "--build-arg"])
        .arg(format!("BASE={base}"))
        // Also where a run installs the worker (as root, the nodes' user): a run on these
        // nodes finds this very build there and uploads nothing (at 256 nodes, 256 copies).
        .arg("--build-arg")
        .arg(format!(
            "WORKER_AT={}/{}",
            installed_worker::dir(installed_worker::NODE_PARENT, 0),
            installed_worker::file_name(&installed_worker::sha256_hex(&worker_bytes))
        ))
        .args(["--label", "org.orchestrate.image=node", "-t", &tag])
        .arg(ctx.path().display().to_string())
        .timeout(Duration::from_secs(900))
        .run()?;
    Ok(NodeImage {
        tag,
        base,
        worker,
        built: true,
        elapsed: start.elapsed(),
    })
}

fn ensure_base(docker: &Docker, source: BaseSource) -> Result<String> {
    let offline = offline_base_tag();
    match source {
        BaseSource::Registry => {
            if !docker.image_exists(REGISTRY_BASE) {
                pull(REGISTRY_BASE)?;
            }
            Ok(REGISTRY_BASE.to_owned())
        }
        BaseSource::Debootstrap => {
            if !docker.image_exists(&offline) {
                build_offline_base(&offline)?;
            }
            Ok(offline)
        }
        BaseSource::Auto => {
            if docker.image_exists(REGISTRY_BASE) {
                return Ok(REGISTRY_BASE.to_owned());
            }
            if docker.image_exists(&offline) {
                return Ok(offline);
            }
            match pull(REGISTRY_BASE) {
                Ok(()) => Ok(REGISTRY_BASE.to_owned()),
                Err(e) => {
                    tracing::info!("no registry ({e}); making the base offline with debootstrap");
                    build_offline_base(&offline)?;
                    Ok(offline)
                }
            }
        }
    }
}

fn pull(reference: &str) -> Result<()> {
    Cmd::new("docker", format!("pulling {reference}"))
        .args(["pull", "--quiet", reference])
        .timeout(Duration::from_secs(180))
        .run()
        .map(drop)
}

/// The Debian mirror apt uses on this host (`ORCHESTRATE_DEBIAN_MIRROR` overrides).
pub fn debian_mirror() -> Result<String> {
    if let Ok(m) = std::env::var("ORCHESTRATE_DEBIAN_MIRROR")
        && !m.trim().is_empty()
    {
        return Ok(m.trim().to_owned());
    }
    let mut texts = Vec::new();
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(rd) = std::fs::read_dir("/etc/apt/sources.list.d") {
        let mut more: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        more.sort();
        files.extend(more);
    }
    for f in files {
        let name = f.to_string_lossy().into_owned();
        if (name.ends_with(".list") || name.ends_with(".sources"))
            && let Ok(t) = std::fs::read_to_string(&f)
        {
            texts.push((name.ends_with(".sources"), t));
        }
    }
    mirror_from_sources(&texts).ok_or_else(|| Error::Host {
        problem: "no Debian mirror found in apt's sources (/etc/apt/sources.list*)".into(),
        what_to_do: "set ORCHESTRATE_DEBIAN_MIRROR to a Debian mirror URL, or make a registry \
                     reachable so debian:bookworm-slim can be pulled"
            .into(),
    })
}

/// Picks a Debian archive URI from apt source files (`(is_deb822, text)`): one carrying a
/// plain release suite (not -security, -updates or -backports), preferring bookworm itself.
pub fn mirror_from_sources(texts: &[(bool, String)]) -> Option<String> {
    let mut entries: Vec<(String, Vec<String>)> = Vec::new();
    for (deb822, text) in texts {
        if *deb822 {
            for stanza in text.split("\n\n") {
                let field = |k: &str| {
                    stanza
                        .lines()
                        .find_map(|l| l.strip_prefix(k).and_then(|r| r.strip_prefix(':')))
                        .map(|v| v.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
                };
                let enabled = field("Enabled").is_none_or(|v| v.first().is_none_or(|e| e != "no"));
                let is_deb = field("Types").is_some_and(|t| t.iter().any(|t| t == "deb"));
                if let (true, true, Some(uris), Some(suites)) =
                    (enabled, is_deb, field("URIs"), field("Suites"))
                {
                    for u in uris {
                        entries.push((u, suites.clone()));
                    }
                }
            }
        } else {
            for line in text.lines() {
                let mut w = line.split_whitespace();
                if w.next() != Some("deb") {
                    continue;
                }
                let rest: Vec<&str> = w.collect();
                // Skip an options block: [ arch=amd64 signed-by=... ].
                let rest: Vec<&str> = if rest.first().is_some_and(|r| r.starts_with('[')) {
                    let end = rest.iter().position(|r| r.ends_with(']')).unwrap_or(0);
                    rest[end + 1..].to_vec()
                } else {
                    rest
                };
                if let [uri, suite, ..] = rest[..] {
                    entries.push((uri.to_owned(), vec![suite.to_owned()]));
                }
            }
        }
    }
    let plain = |s: &str| !s.contains('-') && !s.contains('/');
    let debian = |u: &str| u.trim_end_matches('/').ends_with("/debian");
    entries
        .iter()
        .find(|(u, s)| debian(u) && s.iter().any(|s| s == SUITE))
        .or_else(|| {
            entries
                .iter()
                .find(|(u, s)| debian(u) && s.iter().any(|s| plain(s)))
        })
        .map(|(u, _)| u.clone())
}

/// Installs debootstrap from the distribution's packages on a Debian-family host (apt-get
/// refuses unless we are root): the quick start promises one command from a fresh machine to
/// a run.
fn install_debootstrap() -> bool {
    if on_path("apt-get").is_none() {
        return false;
    }
    tracing::info!(
        "installing debootstrap (apt-get install debootstrap) to make the base image offline"
    );
    let apt = |args: &[&str]| {
        std::process::Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let installed = || {
        apt(&[
            "install",
            "-y",
            "-q",
            "--no-install-recommends",
            "debootstrap",
        ])
    };
    (installed() || (apt(&["update", "-q"]) && installed())) && on_path("debootstrap").is_some()
}

fn build_offline_base(tag: &str) -> Result<()> {
    if on_path("debootstrap").is_none() && !install_debootstrap() {
        return Err(Error::Host {
            problem: format!(
                "no registry is reachable for {REGISTRY_BASE} and `debootstrap` is not installed"
            ),
            what_to_do: "install debootstrap (apt-get install debootstrap) so the base image can \
                         be made offline"
                .into(),
        });
    }
    let mirror = debian_mirror()?;
    let work = tempfile::Builder::new()
        .prefix("orchestrate-rootfs-")
        .tempdir_in("/var/tmp")
        .map_err(|e| Error::io("making a directory for the root filesystem", "/var/tmp", e))?;
    let rootfs = work.path().join("rootfs");
    tracing::info!(%mirror, "debootstrap {SUITE} (a few minutes, once)");
    let result = Cmd::new(
        "debootstrap",
        format!("making the {SUITE} base with debootstrap"),
    )
    .args(["--variant=minbase", "--include"])
    .arg(packages().join(","))
    .args([SUITE, &rootfs.display().to_string(), &mirror])
    .hint("debootstrap needs root and the Debian mirror that apt uses on this host")
    .timeout(Duration::from_secs(1200))
    .run();
    // debootstrap mounts /proc and /sys in the target; never delete through a mount.
    unmount_under(&rootfs);
    result?;
    for pattern_dir in ["var/cache/apt/archives", "var/lib/apt/lists"] {
        remove_files_in(&rootfs.join(pattern_dir));
    }
    remove_matching(&rootfs.join("etc/ssh"), "ssh_host_");
    import_rootfs(&rootfs, tag)
}

fn import_rootfs(rootfs: &Path, tag: &str) -> Result<()> {
    let mut tar = Command::new("tar")
        .args(["--numeric-owner", "-C"])
        .arg(rootfs)
        .args(["-c", "."])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Spawn {
            what: "packing the base root filesystem".into(),
            program: "tar".into(),
            source: e,
            hint: None,
        })?;
    let tar_out = tar.stdout.take().expect("piped");
    let import = Command::new("docker")
        .args(["import", "--change", r#"CMD ["/bin/bash"]"#, "--message"])
        .arg(format!("orchestrate: debootstrap {SUITE} minbase"))
        .args(["-", tag])
        .stdin(Stdio::from(tar_out))
        .output()
        .map_err(|e| Error::Spawn {
            what: "importing the base image".into(),
            program: "docker".into(),
            source: e,
            hint: None,
        })?;
    let tar_status = tar
        .wait()
        .map_err(|e| Error::io("packing the base", rootfs, e))?;
    if !import.status.success() || !tar_status.success() {
        return Err(Error::Command {
            what: "importing the base image".into(),
            command: format!("tar -C {} -c . | docker import - {tag}", rootfs.display()),
            status: format!("tar {tar_status}, docker import {}", import.status),
            stderr: String::from_utf8_lossy(&import.stderr).into_owned(),
            hint: None,
        });
    }
    Ok(())
}

fn unmount_under(root: &Path) {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return;
    };
    let root = root.to_string_lossy().into_owned();
    let mut points: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .filter(|p| p.starts_with(&root))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in points {
        let _ = Cmd::new("umount", "unmounting under the debootstrap target")
            .args(["-l", p])
            .run();
    }
}

fn remove_files_in(dir: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_file()) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

fn remove_matching(dir: &Path, prefix: &str) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| Error::io("making the worker executable", path, e))
}

/// Finds the worker binary: the given path, `$ORCHESTRATE_WORKER`, one beside this program
/// (cargo puts both in the same target directory), or a release build of the workspace's
/// `worker/` crate.
pub fn locate_worker(explicit: Option<&Path>) -> Result<PathBuf> {
    let check = |p: PathBuf, from: &str| {
        if p.is_file() {
            Ok(p)
        } else {
            Err(Error::Host {
                problem: format!(
                    "the worker binary {} (from {from}) does not exist",
                    p.display()
                ),
                what_to_do: "build it with `cargo build --release -p orchestrate-worker`".into(),
            })
        }
    };
    if let Some(p) = explicit {
        return check(p.to_owned(), "--worker");
    }
    if let Some(p) = std::env::var_os("ORCHESTRATE_WORKER") {
        return check(PathBuf::from(p), "ORCHESTRATE_WORKER");
    }
    if let Ok(exe) = std::env::current_exe() {
        // target/<profile>/orchestrate, or target/<profile>/deps/<test> for tests.
        for dir in exe.ancestors().skip(1).take(2) {
            let p = dir.join("orchestrate-worker");
            if p.is_file() {
                // `cargo run` builds this program, not the worker: after an edit to the
                // worker's sources, the binary beside us is stale and must not be measured.
                if workspace_root().is_some_and(|root| newer_sources(&root.join("worker"), &p)) {
                    tracing::info!(
                        "the worker's sources changed since {}; rebuilding",
                        p.display()
                    );
                    return build_worker();
                }
                return Ok(p);
            }
        }
    }
    build_worker()
}

/// The orchestrate workspace the current directory is in, if any.
fn workspace_root() -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    cwd.ancestors()
        .find(|d| d.join("worker/Cargo.toml").is_file())
        .map(Path::to_owned)
}

/// Whether any file of the crate at `dir` (its manifest, `src/`) is newer than `binary`.
fn newer_sources(dir: &Path, binary: &Path) -> bool {
    fn newest(p: &Path) -> Option<std::time::SystemTime> {
        let meta = std::fs::metadata(p).ok()?;
        if meta.is_dir() {
            std::fs::read_dir(p)
                .ok()?
                .filter_map(|e| newest(&e.ok()?.path()))
                .max()
        } else {
            meta.modified().ok()
        }
    }
    let Some(built) = std::fs::metadata(binary).and_then(|m| m.modified()).ok() else {
        return false;
    };
    [dir.join("Cargo.toml"), dir.join("src")]
        .iter()
        .filter_map(|p| newest(p))
        .any(|t| t > built)
}

fn build_worker() -> Result<PathBuf> {
    let root = workspace_root().ok_or_else(|| Error::Host {
        problem: "no worker binary was given and this is not the orchestrate workspace".into(),
        what_to_do: "pass --worker PATH or set ORCHESTRATE_WORKER".into(),
    })?;
    Cmd::new("cargo", "building the worker")
        .args(["build", "--release", "-p", "orchestrate-worker"])
        .current_dir(&root)
        .timeout(Duration::from_secs(900))
        .run()?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let p = target.join("release/orchestrate-worker");
    if p.is_file() {
        Ok(p)
    } else {
        Err(Error::Host {
            problem: format!("cargo built the worker but {} is missing", p.display()),
            what_to_do: "pass --worker PATH".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_list_has_what_a_node_needs() {
        let p = packages();
        for needed in [
            "openssh-server",
            "iproute2",
            "iputils-ping",
            "procps",
            "ethtool",
            "tcpdump",
        ] {
            assert!(
                p.contains(&needed),
                "{needed} missing from docker/packages.txt"
            );
        }
        assert!(offline_base_tag().starts_with("orchestrate-base:bookworm-"));
    }

    #[test]
    fn finds_the_mirror_in_deb822_and_one_line_sources() {
        let deb822 = "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n\
                      Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n";
        assert_eq!(
            mirror_from_sources(&[(true, deb822.into())]).as_deref(),
            Some("http://mirror.example/debian")
        );
        let one = "deb http://sec.example/debian-security bookworm-security main\n\
                   deb [arch=amd64 signed-by=/k.gpg] http://m.example/debian/ bookworm main\n";
        assert_eq!(
            mirror_from_sources(&[(false, one.into())]).as_deref(),
            Some("http://m.example/debian/")
        );
        let other = "deb https://packages.example/apt cloud-sdk main\n";
        assert_eq!(mirror_from_sources(&[(false, other.into())]), None);
    }
}
