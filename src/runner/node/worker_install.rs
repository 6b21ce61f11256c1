//! Installing the worker on a node so that nobody else on the node can choose what runs.
//!
//! The worker lives in `/var/tmp/orchestrate-<uid>`, a directory of the user the run acts as
//! on the node (root under sudo), created with mode 0700. Before each use the node checks, in
//! one shell, that the directory is no symbolic link, is owned by that uid, has mode exactly
//! 0700, and sits in a parent nobody else can swap it out of (root's or the user's own, and
//! not writable by others unless sticky). A file already at the worker's path runs only if its
//! SHA-256 is the build's; an upload goes to a `mktemp` file in that directory and is moved
//! into place only after the node has checked its SHA-256. The filecopy spool is the same
//! directory.
//!
//! Why `/var/tmp/orchestrate-<uid>` rather than `$HOME/.cache`: what `$HOME` is under `sudo`
//! depends on the node's sudoers, and cluster homes are often shared over NFS (root squashed,
//! every node writing the same directory); `/var/tmp` is local to the node, survives a reboot
//! (so a node keeps its build between runs) and is sticky, so nobody can rename or remove a
//! directory we own in it. Its one weakness — a predictable name another user can create first
//! — makes the check fail with the path to remove, never runs what they put there.

use std::time::Duration;

use anyhow::{Context, bail};
use orchestrate_worker::invocation::Invocation;

use crate::remote::{RemoteError, Sessions};
use crate::spec::NodeName;

use super::worker_binary::WorkerBuild;

pub use crate::remote::installed_worker::NODE_PARENT;

/// How long an upload of the worker may take.
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// The worker as installed on one node: its SHA-256 checked there, in its private directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledWorker {
    dir: String,
    path: String,
}

impl InstalledWorker {
    /// The worker's path on the node.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The private directory it lives in, also where filecopy writes.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// The shell command that runs this worker as `invocation`.
    pub fn command(&self, invocation: &Invocation) -> String {
        let args = invocation.to_args();
        let words = std::iter::once(self.path.as_str()).chain(args.iter().map(String::as_str));
        shlex::try_join(words).expect("no NUL in a worker command line")
    }
}

/// Runs a shell script on one node: `sh -c script orchestrate args...`, `stdin` fed to it.
/// Fails with what the script printed on stderr.
pub trait NodeShell {
    fn sh(
        &self,
        script: &str,
        args: &[&str],
        stdin: Option<&[u8]>,
    ) -> impl Future<Output = anyhow::Result<String>>;
}

/// A node of a cluster, as a [`NodeShell`].
pub struct OnNode<'a> {
    pub cluster: &'a Sessions,
    pub node: &'a NodeName,
}

impl NodeShell for OnNode<'_> {
    async fn sh(
        &self,
        script: &str,
        args: &[&str],
        stdin: Option<&[u8]>,
    ) -> anyhow::Result<String> {
        let line = command_line(script, args);
        let node = self.node;
        // The scripts' own messages say what is wrong; the command line would only bury them.
        match self.cluster.run(node, &line, stdin, UPLOAD_TIMEOUT).await {
            Ok(out) => Ok(out.stdout),
            Err(RemoteError::Failed { stderr, .. }) => bail!("{node}: {stderr}"),
            Err(RemoteError::Timeout { timeout, .. }) => {
                bail!("{node}: installing the worker did not finish within {timeout:?}")
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// `sh -c script orchestrate args...` as one command line, every part quoted.
fn command_line(script: &str, args: &[&str]) -> String {
    let quote = |s: &str| shlex::try_quote(s).expect("no NUL in scripts").into_owned();
    let mut line = format!("sh -c {} orchestrate", quote(script));
    for a in args {
        line.push(' ');
        line.push_str(&quote(a));
    }
    line
}

/// Makes sure the node runs this very build from its private directory under `parent`
/// ([`NODE_PARENT`] on real nodes): checks the directory (creating it if absent), keeps a
/// file already there only if its SHA-256 matches, and otherwise uploads, verifies and moves
/// the build into place. Nothing at the worker's path is ever run by this.
pub async fn install(
    shell: &impl NodeShell,
    build: &WorkerBuild,
    parent: &str,
) -> anyhow::Result<InstalledWorker> {
    let name = build.file_name();
    let args = [parent, build.sha256.as_str(), name.as_str()];
    let status = shell.sh(&status_script(), &args, None).await?;
    let (dir, state) = parse_status(&status, parent)?;
    if state != "present" {
        let out = shell
            .sh(&install_script(), &args, Some(&build.bytes))
            .await?;
        if out.trim() != dir {
            bail!("installing the worker printed {out:?}, not its directory {dir}");
        }
    }
    Ok(InstalledWorker {
        path: format!("{dir}/{name}"),
        dir,
    })
}

/// The status script's answer: the private directory, and whether the build is present.
fn parse_status(out: &str, parent: &str) -> anyhow::Result<(String, String)> {
    let mut lines = out.lines();
    let (Some(dir), Some(state), None) = (lines.next(), lines.next(), lines.next()) else {
        bail!("unexpected answer from the worker check: {out:?}");
    };
    let uid = dir
        .strip_prefix(parent)
        .and_then(|d| d.strip_prefix("/orchestrate-"))
        .context("the worker check named an unexpected directory")?;
    if uid.is_empty() || !uid.bytes().all(|b| b.is_ascii_digit()) {
        bail!("the worker check named an unexpected directory: {dir}");
    }
    if state != "present" && state != "absent" {
        bail!("unexpected answer from the worker check: {out:?}");
    }
    Ok((dir.to_owned(), state.to_owned()))
}

/// The checks every script starts with. Arguments: the parent directory, the build's SHA-256
/// and the worker's file name. Sets `dir` to the checked private directory and `final` to the
/// worker's path in it; exits 3 with a message naming the path and the fault otherwise.
const CHECK_DIR: &str = r#"set -eu
umask 077
parent=$1 want=$2 name=$3
uid=$(id -u)
dir=$parent/orchestrate-$uid
final=$dir/$name
fail() { printf '%s\n' "$*" >&2; exit 3; }
[ -d "$parent" ] || fail "$parent is missing"
st=$(stat -L -c '%u %a' -- "$parent") || fail "cannot stat $parent"
set -- $st
[ "$1" = 0 ] || [ "$1" = "$uid" ] \
    || fail "$parent is owned by uid $1, who could replace $dir: use a node where root owns $parent"
mode=$((0$2))
[ $((mode & 022)) = 0 ] || [ $((mode & 01000)) != 0 ] \
    || fail "$parent (mode $2) is writable by other users and not sticky: they could replace $dir"
if [ ! -e "$dir" ] && [ ! -L "$dir" ]; then
    mkdir -m 700 -- "$dir" || fail "cannot create $dir"
fi
[ ! -L "$dir" ] || fail "$dir is a symbolic link (to $(readlink -- "$dir")), not the run's directory: remove it"
[ -d "$dir" ] || fail "$dir is not a directory: remove it"
st=$(stat -c '%u %a' -- "$dir") || fail "cannot stat $dir"
set -- $st
[ "$1" = "$uid" ] || fail "$dir is owned by uid $1, not by uid $uid the run acts as: remove it"
[ "$2" = 700 ] || fail "$dir has mode $2, not 700, so others may have put files in it: remove it"
sha256_of() { s=$(sha256sum <"$1") || fail "sha256sum cannot read $1"; printf '%s' "${s%% *}"; }
"#;

/// Prints the private directory, then `present` when a regular file with the build's SHA-256
/// is at the worker's path, `absent` otherwise. Runs nothing it finds.
fn status_script() -> String {
    CHECK_DIR.to_owned()
        + r#"printf '%s\n' "$dir"
if [ -f "$final" ] && [ ! -L "$final" ] && [ "$(sha256_of "$final")" = "$want" ]; then
    echo present
else
    echo absent
fi
"#
}

/// Reads the build on stdin into a `mktemp` file in the private directory, checks its SHA-256,
/// and only then moves it to the worker's path (replacing whatever was there); prints the
/// directory. A build that arrives damaged is removed, and the path is left as it was.
fn install_script() -> String {
    CHECK_DIR.to_owned()
        + r#"[ -L "$final" ] || [ ! -d "$final" ] || fail "$final is a directory: remove it"
tmp=$(mktemp -- "$dir/.$name.XXXXXXXX") || fail "cannot create a temporary file in $dir"
trap 'rm -f -- "$tmp"' EXIT
cat >"$tmp"
got=$(sha256_of "$tmp")
[ "$got" = "$want" ] || fail "the worker arrived with SHA-256 $got, not $want: nothing was installed"
chmod 700 -- "$tmp"
mv -f -- "$tmp" "$final"
trap - EXIT
printf '%s\n' "$dir"
"#
}

#[cfg(test)]
mod tests {
    //! The node-side scripts run by a local `sh`, in a temporary parent directory standing
    //! for the node's `/var/tmp`.

    use std::os::unix::fs::{PermissionsExt, symlink};
    use std::path::{Path, PathBuf};
    use std::process::Stdio;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::AsyncWriteExt;

    use super::*;

    /// This machine as the node; counts uploads, and can damage them on the way.
    #[derive(Default)]
    struct Local {
        uploads: AtomicUsize,
        damage: bool,
    }

    impl NodeShell for Local {
        async fn sh(
            &self,
            script: &str,
            args: &[&str],
            stdin: Option<&[u8]>,
        ) -> anyhow::Result<String> {
            let mut child = tokio::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .arg("orchestrate")
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()?;
            let mut pipe = child.stdin.take().expect("piped");
            if let Some(bytes) = stdin {
                self.uploads.fetch_add(1, Ordering::Relaxed);
                let mut bytes = bytes.to_vec();
                if self.damage {
                    bytes[0] ^= 1;
                }
                pipe.write_all(&bytes).await?;
            }
            drop(pipe);
            let out = child.wait_with_output().await?;
            if !out.status.success() {
                bail!("local: {}", String::from_utf8_lossy(&out.stderr).trim());
            }
            Ok(String::from_utf8(out.stdout)?)
        }
    }

    /// A build small enough to compare with what lands on the node.
    fn build() -> WorkerBuild {
        WorkerBuild::from_bytes(b"#!/bin/sh\necho the real worker\n".to_vec())
    }

    fn euid() -> u32 {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() }
    }

    fn private_dir(parent: &Path) -> PathBuf {
        parent.join(format!("orchestrate-{}", euid()))
    }

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    fn set_mode(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    async fn install_in(shell: &Local, parent: &Path) -> anyhow::Result<InstalledWorker> {
        install(shell, &build(), parent.to_str().unwrap()).await
    }

    #[tokio::test]
    async fn installs_into_a_private_directory_and_uploads_once() {
        let parent = tempfile::tempdir().unwrap();
        let shell = Local::default();
        let w = install_in(&shell, parent.path()).await.unwrap();
        let dir = private_dir(parent.path());
        assert_eq!(w.dir(), dir.to_str().unwrap());
        assert_eq!(mode(&dir), 0o700);
        let path = Path::new(w.path());
        assert_eq!(path.parent().unwrap(), dir);
        assert_eq!(std::fs::read(path).unwrap(), build().bytes);
        assert_eq!(mode(path), 0o700);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary left"
        );
        assert_eq!(shell.uploads.load(Ordering::Relaxed), 1);

        let again = install_in(&shell, parent.path()).await.unwrap();
        assert_eq!(again, w);
        assert_eq!(
            shell.uploads.load(Ordering::Relaxed),
            1,
            "a node with this build is not sent it again"
        );
    }

    #[tokio::test]
    async fn a_planted_file_at_the_workers_path_is_replaced_never_run() {
        let parent = tempfile::tempdir().unwrap();
        let dir = private_dir(parent.path());
        std::fs::create_dir(&dir).unwrap();
        set_mode(&dir, 0o700);
        let marker = parent.path().join("planted-file-ran");
        let path = dir.join(build().file_name());
        std::fs::write(&path, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
        set_mode(&path, 0o755);
        let shell = Local::default();
        let w = install_in(&shell, parent.path()).await.unwrap();
        assert_eq!(Path::new(w.path()), path);
        assert_eq!(std::fs::read(&path).unwrap(), build().bytes);
        assert_eq!(shell.uploads.load(Ordering::Relaxed), 1);
        assert!(!marker.exists(), "the planted file was run");
    }

    #[tokio::test]
    async fn a_symlink_at_the_workers_path_is_replaced_not_followed() {
        let parent = tempfile::tempdir().unwrap();
        let dir = private_dir(parent.path());
        std::fs::create_dir(&dir).unwrap();
        set_mode(&dir, 0o700);
        let elsewhere = parent.path().join("victim");
        std::fs::write(&elsewhere, "untouched").unwrap();
        let path = dir.join(build().file_name());
        symlink(&elsewhere, &path).unwrap();
        install_in(&Local::default(), parent.path()).await.unwrap();
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
        assert_eq!(std::fs::read(&path).unwrap(), build().bytes);
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "untouched");
    }

    #[tokio::test]
    async fn a_symlink_at_the_directory_is_refused_not_followed() {
        let parent = tempfile::tempdir().unwrap();
        let target = parent.path().join("someone-elses");
        std::fs::create_dir(&target).unwrap();
        set_mode(&target, 0o700);
        let dir = private_dir(parent.path());
        symlink(&target, &dir).unwrap();
        let err = install_in(&Local::default(), parent.path())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("{} is a symbolic link", dir.display())),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn a_directory_with_another_mode_is_refused() {
        let parent = tempfile::tempdir().unwrap();
        let dir = private_dir(parent.path());
        std::fs::create_dir(&dir).unwrap();
        set_mode(&dir, 0o777);
        let shell = Local::default();
        let err = install_in(&shell, parent.path())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("{} has mode 777, not 700", dir.display())),
            "{err}"
        );
        assert_eq!(shell.uploads.load(Ordering::Relaxed), 0);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn a_directory_of_another_owner_is_refused() {
        if euid() != 0 {
            eprintln!("SKIPPED: giving a directory to another user needs root");
            return;
        }
        let parent = tempfile::tempdir().unwrap();
        let dir = private_dir(parent.path());
        std::fs::create_dir(&dir).unwrap();
        set_mode(&dir, 0o700);
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
        let shell = Local::default();
        let err = install_in(&shell, parent.path())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!(
                "{} is owned by uid 65534, not by uid 0",
                dir.display()
            )),
            "{err}"
        );
        assert_eq!(shell.uploads.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn a_parent_others_can_write_is_refused_unless_sticky() {
        let parent = tempfile::tempdir().unwrap();
        set_mode(parent.path(), 0o777);
        let err = install_in(&Local::default(), parent.path())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("is writable by other users and not sticky"),
            "{err}"
        );
        assert!(!private_dir(parent.path()).exists());

        set_mode(parent.path(), 0o1777);
        install_in(&Local::default(), parent.path()).await.unwrap();
    }

    #[tokio::test]
    async fn a_damaged_upload_is_never_moved_into_place() {
        let parent = tempfile::tempdir().unwrap();
        let shell = Local {
            damage: true,
            ..Local::default()
        };
        let err = install_in(&shell, parent.path())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("nothing was installed"), "{err}");
        let dir = private_dir(parent.path());
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "neither the worker nor the temporary file is left"
        );
    }

    #[test]
    fn the_command_line_carries_script_and_arguments_intact_also_under_sudo() {
        let script = r#"printf '%s|' "$0" "$@""#;
        let args = ["/var tmp", "it's", "$(touch x) `y` ;z"];
        let line = command_line(script, &args);
        // As the login shell runs it, and as `sudo -n sh -c <line>` would.
        let sudo_line = format!("sh -c {}", shlex::try_quote(&line).unwrap());
        for l in [&line, &sudo_line] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(l)
                .current_dir(tempfile::tempdir().unwrap().path())
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8(out.stdout).unwrap(),
                "orchestrate|/var tmp|it's|$(touch x) `y` ;z|"
            );
        }
    }

    #[test]
    fn only_a_uid_directory_under_the_parent_is_accepted() {
        assert!(parse_status("/var/tmp/orchestrate-0\npresent\n", "/var/tmp").is_ok());
        for bad in [
            "/tmp/orchestrate-0\npresent\n",
            "/var/tmp/orchestrate-0/../x\nabsent\n",
            "/var/tmp/orchestrate-\nabsent\n",
            "/var/tmp/orchestrate-0\nmaybe\n",
            "/var/tmp/orchestrate-0\n",
        ] {
            assert!(parse_status(bad, "/var/tmp").is_err(), "{bad:?} accepted");
        }
    }
}
