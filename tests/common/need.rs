//! What a test needs from the machine, and what it does when a need is missing.
//!
//! A test declares its needs in its name: the leading words of `docker_…`, `netns_tun_…`,
//! `sshd_…` are its needs. `scripts/test` reads the same words:
//! it probes each need in shell before the run and leaves out the tests naming a missing one,
//! so the runner's summary counts them as skipped, and with `CI=true` a missing need fails the
//! run unless this machine kind cannot have it. Each probe here looks at the machine itself,
//! never through the code under test.
//!
//! Inside a test, [`require_needs!`] probes again. Under `scripts/test`
//! (`ORCHESTRATE_NEEDS_PROBED` set) a need missing now was present at the script's probe, so
//! the two disagree and the test fails. Run directly (`cargo test`), a test whose need is
//! missing says SKIPPED and returns, except with `CI=true`, where it fails.
#![allow(dead_code)]

use std::process::Command;

/// One thing a test may need from the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// A docker engine that answers, and root (tc and nsenter on its containers).
    Docker,
    /// Root, and iproute2 able to make and delete a network namespace.
    Netns,
    /// A TUN device root can open (the worker's userspace bond).
    Tun,
    /// A kernel that opens an MPTCP socket.
    Mptcp,
    /// A kernel with multipath routes and their hash policy (ECMP).
    Ecmp,
    /// openssh-server's `sshd` and the ssh client, for tests that run a real sshd.
    Sshd,
    /// iperf3 on this machine: `cluster verify` runs it on netns nodes, which share the
    /// host's programs.
    Iperf3,
    /// `sudo`, for tests that act as a user who is not root.
    Sudo,
    /// util-linux `script`, for a pseudo-terminal.
    Pty,
    /// Debian's Slurm and munge: `slurmctld`, `slurmd`, `salloc`, `sinfo`, `munged`.
    Slurm,
    /// QEMU for x86-64 guests and a static busybox (their initramfs): VM nodes.
    Qemu,
    /// The kernel's own bonding driver.
    KernelBonding,
}

impl Need {
    /// Every need, in the order their words lead a test's name.
    pub const ALL: [Need; 12] = [
        Need::Docker,
        Need::Netns,
        Need::Tun,
        Need::Mptcp,
        Need::Ecmp,
        Need::Sshd,
        Need::Iperf3,
        Need::Sudo,
        Need::Pty,
        Need::Slurm,
        Need::Qemu,
        Need::KernelBonding,
    ];

    /// The word naming this need in test names and in `scripts/test`.
    pub fn word(self) -> &'static str {
        match self {
            Need::Docker => "docker",
            Need::Netns => "netns",
            Need::Tun => "tun",
            Need::Mptcp => "mptcp",
            Need::Ecmp => "ecmp",
            Need::Sshd => "sshd",
            Need::Iperf3 => "iperf3",
            Need::Sudo => "sudo",
            Need::Pty => "pty",
            Need::Slurm => "slurm",
            Need::Qemu => "qemu",
            Need::KernelBonding => "kernel_bonding",
        }
    }

    /// Whether machines of the project's kind cannot have this need: CI shows its tests as
    /// skipped instead of failing. Keep in step with `MACHINE_KIND_LACKS` in `scripts/test`.
    pub fn machine_kind_lacks(self) -> bool {
        matches!(self, Need::KernelBonding)
    }

    /// Why this need is missing here, or `None` when it is met.
    pub fn missing(self) -> Option<String> {
        let root = || {
            // SAFETY: geteuid has no preconditions.
            (unsafe { libc::geteuid() } == 0)
                .then_some(())
                .ok_or_else(|| "not root".to_string())
        };
        let runs = |program: &str, args: &[&str]| {
            Command::new(program)
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let check = || -> Result<(), String> {
            match self {
                Need::Docker => {
                    root()?;
                    if !runs("docker", &["info", "--format", "{{.ServerVersion}}"]) {
                        return Err("no docker engine answers `docker info`".into());
                    }
                }
                Need::Netns => {
                    root()?;
                    let name = format!("orchestrate-need-{}", std::process::id());
                    let made = runs("ip", &["netns", "add", &name]);
                    let deleted = made && runs("ip", &["netns", "delete", &name]);
                    if !deleted {
                        return Err("iproute2 cannot make a network namespace".into());
                    }
                }
                Need::Tun => {
                    root()?;
                    std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .open("/dev/net/tun")
                        .map_err(|e| format!("cannot open /dev/net/tun: {e}"))?;
                }
                Need::Mptcp => {
                    const IPPROTO_MPTCP: libc::c_int = 262;
                    // SAFETY: plain socket(2); the descriptor is closed at once.
                    let fd =
                        unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, IPPROTO_MPTCP) };
                    if fd < 0 {
                        return Err(format!(
                            "this kernel opens no MPTCP socket: {}",
                            std::io::Error::last_os_error()
                        ));
                    }
                    // SAFETY: fd was just opened by us.
                    unsafe { libc::close(fd) };
                }
                Need::Ecmp => {
                    if !std::path::Path::new("/proc/sys/net/ipv4/fib_multipath_hash_policy")
                        .exists()
                    {
                        return Err("this kernel has no multipath routes".into());
                    }
                }
                Need::Sshd => {
                    if !std::path::Path::new("/usr/sbin/sshd").exists() {
                        return Err("no /usr/sbin/sshd (openssh-server)".into());
                    }
                    if !runs("ssh", &["-V"]) {
                        return Err("no ssh client".into());
                    }
                }
                Need::Iperf3 => {
                    if !runs("iperf3", &["--version"]) {
                        return Err("no iperf3".into());
                    }
                }
                Need::Sudo => {
                    if !runs("sudo", &["-V"]) {
                        return Err("no sudo".into());
                    }
                }
                Need::Pty => {
                    if !runs("script", &["--version"]) {
                        return Err("no util-linux `script` (a pseudo-terminal)".into());
                    }
                }
                Need::Slurm => {
                    // Daemons in /usr/sbin, which a user's PATH may lack.
                    let missing: Vec<&str> = [
                        "/usr/sbin/slurmctld",
                        "/usr/sbin/slurmd",
                        "/usr/bin/salloc",
                        "/usr/bin/sinfo",
                        "/usr/sbin/munged",
                    ]
                    .into_iter()
                    .filter(|p| !std::path::Path::new(p).exists())
                    .collect();
                    if !missing.is_empty() {
                        return Err(format!(
                            "no Slurm and munge (missing {})",
                            missing.join(", ")
                        ));
                    }
                }
                Need::Qemu => {
                    if !runs("qemu-system-x86_64", &["--version"]) {
                        return Err("no qemu-system-x86_64 (Debian's qemu-system-x86)".into());
                    }
                    // `ldd` fails on a static program ("not a dynamic executable").
                    let is_static = std::path::Path::new("/bin/busybox").exists()
                        && !runs("ldd", &["/bin/busybox"]);
                    if !is_static {
                        return Err("no static /bin/busybox (Debian's busybox-static)".into());
                    }
                }
                Need::KernelBonding => {
                    let loaded = std::path::Path::new("/sys/module/bonding").exists();
                    if !loaded && !runs("modinfo", &["bonding"]) {
                        return Err("this kernel has no bonding driver".into());
                    }
                }
            }
            Ok(())
        };
        check().err()
    }
}

/// The needs a test's name declares: its leading need words, in any order.
pub fn declared_by(test: &str) -> Vec<Need> {
    let mut rest = test;
    let mut needs = Vec::new();
    while let Some((need, after)) = Need::ALL.iter().find_map(|&need| {
        let after = rest.strip_prefix(need.word())?.strip_prefix('_')?;
        Some((need, after))
    }) {
        needs.push(need);
        rest = after;
    }
    needs
}

/// Whether `test` must stop here because a need its name declares is missing (see the module
/// comment for what happens under `scripts/test` and under CI).
pub fn unmet(test: &str) -> bool {
    let needs = declared_by(test);
    assert!(
        !needs.is_empty(),
        "{test}: require_needs! in a test whose name declares no need"
    );
    for need in needs {
        let Some(why) = need.missing() else { continue };
        let word = need.word();
        if std::env::var_os("ORCHESTRATE_NEEDS_PROBED").is_some() {
            panic!(
                "{test}: needs {word}, missing here ({why}), although scripts/test's probe \
                 found it: the two probes disagree"
            );
        }
        if std::env::var_os("CI").is_some() && !need.machine_kind_lacks() {
            panic!("{test}: needs {word}, missing here ({why}), which CI must provide");
        }
        eprintln!("SKIPPED: {test}: needs {word}: {why}");
        return true;
    }
    false
}

/// The calling test's own name (the function's, also inside `#[tokio::test]`).
#[macro_export]
macro_rules! test_name {
    () => {{
        fn here() {}
        let path = std::any::type_name_of_val(&here);
        let path = path.trim_end_matches("::here");
        let path = path.trim_end_matches("::{{closure}}");
        path.rsplit("::").next().unwrap_or(path)
    }};
}

/// Returns from the calling test when a need its name declares is missing (see [`unmet`]).
#[macro_export]
macro_rules! require_needs {
    () => {
        if $crate::need::unmet($crate::test_name!()) {
            return;
        }
    };
}
