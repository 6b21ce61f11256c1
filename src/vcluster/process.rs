//! Processes `up` starts and `down` stops (the medium emulator, a netns cluster's sshds):
//! whether one still runs, and collecting its exit status.

/// Whether a process runs (a zombie has exited: it only waits for its parent to reap it).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().to_owned())
        })
        .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
}

/// Collects the exit status of a child of this program (a zombie otherwise keeps its /proc
/// entry); does nothing for another's.
pub fn reap(pid: u32) {
    let mut status = 0;
    // SAFETY: non-blocking wait on one pid; ECHILD when it is not our child.
    unsafe { libc::waitpid(pid as i32, &raw mut status, libc::WNOHANG) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_runs_until_it_exits_and_is_reaped() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(alive(pid));
        child.kill().unwrap();
        // Killed but not yet reaped: a zombie, which no longer runs.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while alive(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!alive(pid), "a killed child still counts as running");
        // A zombie until reaped; reaped, it is gone from /proc.
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
        reap(pid);
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
        // Already reaped by pid: std's own wait finds nothing left to collect.
        assert!(child.wait().is_err());
    }
}
