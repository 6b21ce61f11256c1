//! A run directory is data: `teardown` and `--resume` act on what it holds (its experiment,
//! plan, ledger, manifest and scripts), so they first make sure nobody but the user running
//! them could have written any of it. Each of those files and directories must be owned by
//! that user and not writable by group or others, and none may be a symbolic link (the run
//! writes none). The directories above the run are not checked: one swapped there can only
//! lead to another directory that passes these checks, that is, the same user's.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::bail;

use super::layout::RunDir;

/// Refuses `run` when another user could have changed what `teardown` or `--resume` reads,
/// naming every fault and how to fix it.
pub fn check(run: &RunDir) -> anyhow::Result<()> {
    let euid = current_euid();
    let mut faults = Vec::new();
    let root = run.root();
    match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => inspect(root, &m, euid, &mut faults),
        Ok(_) => bail!("{}: not a run directory", root.display()),
        Err(e) => bail!("{}: {e}", root.display()),
    }
    for path in [
        run.experiment_toml(),
        run.plan_json(),
        run.ledger_json(),
        run.manifest_path(),
    ] {
        visit(&path, euid, false, &mut faults)?;
    }
    visit(&run.topologies_dir(), euid, true, &mut faults)?;
    visit(&run.scripts_root(), euid, true, &mut faults)?;
    if faults.is_empty() {
        return Ok(());
    }
    bail!("{}", refusal(root, euid, &faults))
}

/// What is wrong with one path.
enum Fault {
    Symlink,
    Owner(u32),
    Writable(u32),
}

fn current_euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Inspects `path` if it exists, without following a symbolic link; with `descend`, every
/// entry below it too.
fn visit(
    path: &Path,
    euid: u32,
    descend: bool,
    faults: &mut Vec<(PathBuf, Fault)>,
) -> anyhow::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => bail!("{}: {e}", path.display()),
    };
    inspect(path, &meta, euid, faults);
    if descend && meta.is_dir() {
        let entries =
            std::fs::read_dir(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            visit(&entry.path(), euid, true, faults)?;
        }
    }
    Ok(())
}

fn inspect(path: &Path, meta: &std::fs::Metadata, euid: u32, faults: &mut Vec<(PathBuf, Fault)>) {
    let fault = if meta.file_type().is_symlink() {
        Fault::Symlink
    } else if meta.uid() != euid {
        Fault::Owner(meta.uid())
    } else if meta.mode() & 0o022 != 0 {
        Fault::Writable(meta.mode() & 0o7777)
    } else {
        return;
    };
    faults.push((path.to_owned(), fault));
}

/// The refusal: at most a screenful of faults, then what to do about each kind.
fn refusal(root: &Path, euid: u32, faults: &[(PathBuf, Fault)]) -> String {
    const SHOWN: usize = 10;
    let mut text = format!(
        "{}: refusing this run directory: other users could have changed what teardown and resume run from it:",
        root.display()
    );
    for (path, fault) in faults.iter().take(SHOWN) {
        let what = match fault {
            Fault::Symlink => "is a symbolic link (a run writes none)".to_owned(),
            Fault::Owner(uid) => format!("is owned by uid {uid}, not by you (uid {euid})"),
            Fault::Writable(mode) => {
                format!("is writable by group or others (mode {mode:o})")
            }
        };
        text += &format!("\n  {}: {what}", path.display());
    }
    if faults.len() > SHOWN {
        text += &format!("\n  ... and {} more", faults.len() - SHOWN);
    }
    let root = shlex::try_quote(&root.to_string_lossy())
        .map(|q| q.into_owned())
        .unwrap_or_else(|_| root.display().to_string());
    let has = |f: fn(&Fault) -> bool| faults.iter().any(|(_, x)| f(x));
    if has(|f| matches!(f, Fault::Writable(_))) {
        text += &format!("\nfix: chmod -R go-w {root}");
    }
    if has(|f| matches!(f, Fault::Owner(_))) {
        text += &format!(
            "\nfix: run as the user who owns it, or, having read what it holds, take it over: chown -R {euid} {root}"
        );
    }
    if has(|f| matches!(f, Fault::Symlink)) {
        text += "\nfix: replace the symbolic links with the files they should be, or remove them";
    }
    text
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn set_mode(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A run directory with the files `check` reads, every one with safe modes.
    fn run_dir() -> (tempfile::TempDir, RunDir) {
        let tmp = tempfile::tempdir().unwrap();
        let run = RunDir::new(tmp.path().join("run"));
        let scripts = run.scripts_dir(0, "t");
        std::fs::create_dir_all(&scripts).unwrap();
        std::fs::create_dir_all(run.topologies_dir()).unwrap();
        for f in [
            run.experiment_toml(),
            run.plan_json(),
            run.ledger_json(),
            run.topology_toml("t"),
            RunDir::teardown_script(&scripts, "n1"),
        ] {
            std::fs::write(&f, "").unwrap();
            set_mode(&f, 0o644);
        }
        for d in [
            run.root(),
            &run.topologies_dir(),
            &scripts,
            scripts.parent().unwrap(),
        ] {
            set_mode(d, 0o755);
        }
        (tmp, run)
    }

    #[test]
    fn a_directory_only_its_owner_can_write_passes() {
        let (_tmp, run) = run_dir();
        check(&run).unwrap();
    }

    #[test]
    fn a_run_directory_others_can_write_is_refused_with_the_fix() {
        let (_tmp, run) = run_dir();
        set_mode(run.root(), 0o777);
        let err = check(&run).unwrap_err().to_string();
        assert!(
            err.contains("is writable by group or others (mode 777)"),
            "{err}"
        );
        assert!(err.contains("fix: chmod -R go-w"), "{err}");
    }

    #[test]
    fn a_group_writable_script_deep_inside_is_refused() {
        let (_tmp, run) = run_dir();
        let script = RunDir::teardown_script(&run.scripts_dir(0, "t"), "n1");
        set_mode(&script, 0o664);
        let err = check(&run).unwrap_err().to_string();
        assert!(
            err.contains(&format!(
                "{}: is writable by group or others (mode 664)",
                script.display()
            )),
            "{err}"
        );
    }

    #[test]
    fn a_symlinked_ledger_is_refused() {
        let (tmp, run) = run_dir();
        let elsewhere = tmp.path().join("ledger-elsewhere.json");
        std::fs::write(&elsewhere, "{}").unwrap();
        std::fs::remove_file(run.ledger_json()).unwrap();
        std::os::unix::fs::symlink(&elsewhere, run.ledger_json()).unwrap();
        let err = check(&run).unwrap_err().to_string();
        assert!(err.contains("ledger.json: is a symbolic link"), "{err}");
    }

    #[test]
    fn files_of_another_user_are_refused() {
        if current_euid() != 0 {
            eprintln!("SKIPPED: giving a file to another user needs root");
            return;
        }
        let (_tmp, run) = run_dir();
        std::os::unix::fs::chown(run.plan_json(), Some(65534), None).unwrap();
        let err = check(&run).unwrap_err().to_string();
        assert!(
            err.contains("plan.json: is owned by uid 65534, not by you (uid 0)"),
            "{err}"
        );
        assert!(err.contains("chown -R 0"), "{err}");
    }
}
