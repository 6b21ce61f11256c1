//! What a node's sshd starts inside, made by the forked child itself before it becomes sshd:
//! the node's network namespace, a mount namespace copied from the template's with a fresh
//! sysfs and tmpfs /run, /root, /tmp and /var/tmp, its own hostname (UTS namespace), the worker on
//! the PATH and where the runner installs it, and the receive work of its wires steered.
//!
//! Every step is a system call made between `fork` and `exec`, so a node costs one process
//! that becomes its sshd. A shell script did this before (`nsenter`, `unshare`, `sh`, then
//! `cat`, `hostname`, `mount` and `mkdir` a dozen times): a thousand nodes meant fifteen
//! thousand programs started on a 2-core host, which was most of a 1024-node `up`.
//!
//! Between `fork` and `exec` a child of a threaded program may only make async-signal-safe
//! calls, so everything is prepared beforehand in the parent ([`Prepared`]): paths as C
//! strings, file contents as bytes, namespaces as open files. The child allocates nothing.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// Where a node's sshd finds its configuration, host key and authorised keys: the node's
/// private /run, written by the child.
pub const RUN_NODE: &str = "/run/node";
/// The configuration file sshd is started with.
pub const SSHD_CONFIG: &str = "/run/node/sshd_config";

/// Everything the child needs, made in the parent.
pub struct Prepared {
    net: File,
    mount: File,
    hostname: CString,
    /// `lowerdir=<worker's directory>:/usr/local/bin`, the overlay that puts the worker on
    /// the PATH without touching the host's /usr/local/bin.
    worker_overlay: CString,
    /// (path, contents, mode) of the files sshd reads, written into the fresh /run/node.
    files: Vec<(CString, Vec<u8>, libc::mode_t)>,
    /// Where the runner installs this worker build (`/var/tmp/orchestrate-0/<name>`).
    installed_worker: CString,
    /// `rps_cpus` of every receive queue of the node's wires, and what to write there.
    steering: Vec<CString>,
    mask: Vec<u8>,
}

/// What one node's sshd is started with.
pub struct Start<'a> {
    pub namespace: &'a str,
    pub node: &'a str,
    /// The directory holding `orchestrate-worker`.
    pub worker_dir: &'a Path,
    /// The name the runner gives this worker build when it installs it.
    pub worker_name: &'a str,
    /// `rps_cpus` for the node's wires, if their receive work is steered.
    pub rps_mask: Option<&'a str>,
    pub wires: Vec<WirePort<'a>>,
}

/// One of a node's wires, as its receive steering needs it.
pub struct WirePort<'a> {
    /// Its name inside the node.
    pub inside: &'a str,
    /// Its receive queues (a veth has as many as its host end).
    pub rx_queues: usize,
}

/// The files a node's sshd reads, by contents (the same key and configuration files for
/// every node but the host key: read once, not once a node).
pub struct SshdFiles<'a> {
    pub host_key: &'a [u8],
    pub authorized_keys: &'a [u8],
    pub config: &'a [u8],
}

impl Prepared {
    /// Opens the node's network namespace (`/run/netns/<namespace>`) and the template's mount
    /// namespace, and lays out the rest.
    pub fn new(s: &Start, template_pid: u32, files: &SshdFiles) -> io::Result<Prepared> {
        let c =
            |s: String| CString::new(s).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e));
        let worker_dir = s.worker_dir.to_str().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the worker's directory is not UTF-8",
            )
        })?;
        if worker_dir.contains([',', ':']) {
            // The overlay's options are split at commas and its lower layers at colons.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the worker's directory {worker_dir:?} has a ',' or ':', which an overlay \
                     mount cannot name"
                ),
            ));
        }
        let steering = steering_files(s)
            .into_iter()
            .map(c)
            .collect::<io::Result<Vec<_>>>()?;
        let net = File::open(format!("/run/netns/{}", s.namespace))?;
        let mount = File::open(format!("/proc/{template_pid}/ns/mnt"))?;
        Ok(Prepared {
            net,
            mount,
            hostname: c(s.node.to_owned())?,
            worker_overlay: c(format!("lowerdir={worker_dir}:/usr/local/bin"))?,
            files: vec![
                (
                    c(format!("{RUN_NODE}/ssh_host_ed25519_key"))?,
                    with_newline(files.host_key),
                    0o600,
                ),
                (
                    c(format!("{RUN_NODE}/authorized_keys"))?,
                    with_newline(files.authorized_keys),
                    0o644,
                ),
                (c(SSHD_CONFIG.to_owned())?, files.config.to_vec(), 0o644),
            ],
            installed_worker: c(format!("/var/tmp/orchestrate-0/{}", s.worker_name))?,
            steering,
            mask: s
                .rps_mask
                .map(|m| format!("{m}\n").into_bytes())
                .unwrap_or_default(),
        })
    }

    /// Run in the forked child, before `exec`: only system calls, nothing allocated. On
    /// failure it writes which step failed to its standard error (the cluster's sshd log) and
    /// returns the system's error, which `spawn` hands back to the parent.
    pub fn enter(&self) -> io::Result<()> {
        // SAFETY (each call below): system calls on descriptors this value owns and on live
        // NUL-terminated strings; the child is single-threaded, as setns to a mount
        // namespace requires.
        step(c"joining the node's network namespace", unsafe {
            libc::setns(self.net.as_raw_fd(), libc::CLONE_NEWNET)
        })?;
        step(c"joining the template's mount namespace", unsafe {
            libc::setns(self.mount.as_raw_fd(), libc::CLONE_NEWNS)
        })?;
        step(c"making the node's mount and UTS namespaces", unsafe {
            libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWUTS)
        })?;
        mount(c"none", c"/", None, libc::MS_REC | libc::MS_PRIVATE, None)?;
        step(c"setting the node's hostname", unsafe {
            libc::sethostname(self.hostname.as_ptr(), self.hostname.as_bytes().len())
        })?;
        // The node's own sysfs: its interfaces, where its receive steering is set.
        mount(c"sysfs", c"/sys", Some(c"sysfs"), 0, None)?;
        mount(
            c"orchestrate-worker",
            c"/usr/local/bin",
            Some(c"overlay"),
            libc::MS_RDONLY,
            Some(&self.worker_overlay),
        )?;
        mount(c"tmpfs", c"/run", Some(c"tmpfs"), 0, Some(c"mode=0755"))?;
        mkdir(c"/run/sshd", 0o755)?;
        mkdir(c"/run/node", 0o755)?;
        for (path, contents, mode) in &self.files {
            write_new(path, contents, *mode)?;
        }
        // Root's home too: the host's dotfiles (a .bashrc that starts programs, as pyenv's
        // does) would run in every session of every node, and what a session writes under
        // ~ (known_hosts, history) would land in the host's /root.
        mount(c"tmpfs", c"/root", Some(c"tmpfs"), 0, Some(c"mode=0700"))?;
        mount(c"tmpfs", c"/tmp", Some(c"tmpfs"), 0, Some(c"mode=1777"))?;
        mount(c"tmpfs", c"/var/tmp", Some(c"tmpfs"), 0, Some(c"mode=1777"))?;
        mkdir(c"/var/tmp/orchestrate-0", 0o700)?;
        write_new(&self.installed_worker, b"", 0o644)?;
        mount(
            c"/usr/local/bin/orchestrate-worker",
            &self.installed_worker,
            None,
            libc::MS_BIND,
            None,
        )?;
        for path in &self.steering {
            write_existing(path, &self.mask)?;
        }
        Ok(())
    }
}

/// The `rps_cpus` file of every receive queue of the node's wires, when their receive work is
/// steered.
fn steering_files(s: &Start) -> Vec<String> {
    if s.rps_mask.is_none() {
        return Vec::new();
    }
    s.wires
        .iter()
        .flat_map(|w| {
            (0..w.rx_queues)
                .map(move |q| format!("/sys/class/net/{}/queues/rx-{q}/rps_cpus", w.inside))
        })
        .collect()
}

fn with_newline(text: &[u8]) -> Vec<u8> {
    let mut v = text.to_vec();
    if !v.ends_with(b"\n") {
        v.push(b'\n');
    }
    v
}

/// A system call's result: on failure, `orchestrate-node: <what> failed` on standard error and
/// the system's error.
fn step(what: &CStr, result: libc::c_int) -> io::Result<()> {
    if result == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    say_failed(what.to_bytes(), b"");
    Err(error)
}

/// Writes `orchestrate-node: <what><object> failed\n` to standard error with `write` alone.
fn say_failed(what: &[u8], object: &[u8]) {
    for part in [&b"orchestrate-node: "[..], what, object, b" failed\n"] {
        // SAFETY: writing a live buffer to standard error; the result is not needed.
        unsafe { libc::write(2, part.as_ptr().cast(), part.len()) };
    }
}

fn mount(
    source: &CStr,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> io::Result<()> {
    // SAFETY: every pointer is a live NUL-terminated string or null.
    let r = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.map_or(std::ptr::null(), CStr::as_ptr),
            flags,
            data.map_or(std::ptr::null(), |d| d.as_ptr().cast()),
        )
    };
    if r != 0 {
        let error = io::Error::last_os_error();
        say_failed(b"mounting on ", target.to_bytes());
        return Err(error);
    }
    Ok(())
}

fn mkdir(path: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: a live NUL-terminated path.
    let r = unsafe { libc::mkdir(path.as_ptr(), mode) };
    if r != 0 {
        let error = io::Error::last_os_error();
        say_failed(b"making the directory ", path.to_bytes());
        return Err(error);
    }
    Ok(())
}

/// A new file (never one that exists, never through a link) with these contents.
fn write_new(path: &CStr, contents: &[u8], mode: libc::mode_t) -> io::Result<()> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: a live NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), flags, mode as libc::c_uint) };
    write_all(fd, path, contents)
}

/// An existing file (a sysfs attribute) overwritten with these contents.
fn write_existing(path: &CStr, contents: &[u8]) -> io::Result<()> {
    // SAFETY: a live NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    write_all(fd, path, contents)
}

fn write_all(fd: libc::c_int, path: &CStr, mut contents: &[u8]) -> io::Result<()> {
    let fail = |fd: libc::c_int| {
        let error = io::Error::last_os_error();
        if fd >= 0 {
            // SAFETY: closing the descriptor opened above.
            unsafe { libc::close(fd) };
        }
        say_failed(b"writing ", path.to_bytes());
        Err(error)
    };
    if fd < 0 {
        return fail(fd);
    }
    while !contents.is_empty() {
        // SAFETY: writing a live buffer to the descriptor opened above.
        let n = unsafe { libc::write(fd, contents.as_ptr().cast(), contents.len()) };
        if n <= 0 {
            return fail(fd);
        }
        contents = &contents[n as usize..];
    }
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(fd) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start<'a>(worker_dir: &'a Path, rps_mask: Option<&'a str>) -> Start<'a> {
        Start {
            namespace: "oc00000n1",
            node: "n1",
            worker_dir,
            worker_name: "orchestrate-worker-0123456789abcdef",
            rps_mask,
            wires: vec![
                WirePort {
                    inside: "eth1",
                    rx_queues: 1,
                },
                WirePort {
                    inside: "eth2",
                    rx_queues: 2,
                },
            ],
        }
    }

    #[test]
    fn every_receive_queue_of_every_wire_is_steered_and_none_without_a_mask() {
        let dir = Path::new("/run/orchestrate/c/bin");
        assert_eq!(
            steering_files(&start(dir, Some("2"))),
            [
                "/sys/class/net/eth1/queues/rx-0/rps_cpus",
                "/sys/class/net/eth2/queues/rx-0/rps_cpus",
                "/sys/class/net/eth2/queues/rx-1/rps_cpus",
            ]
        );
        assert!(steering_files(&start(dir, None)).is_empty());
    }

    #[test]
    fn a_worker_directory_an_overlay_cannot_name_is_refused_before_anything_is_opened() {
        let files = SshdFiles {
            host_key: b"k",
            authorized_keys: b"a",
            config: b"c",
        };
        for bad in ["/tmp/a:b", "/tmp/a,b"] {
            let err = Prepared::new(&start(Path::new(bad), None), u32::MAX, &files)
                .err()
                .expect("refused");
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad}: {err}");
            assert!(err.to_string().contains(bad), "{err}");
        }
    }

    #[test]
    fn files_get_a_final_newline_once() {
        assert_eq!(with_newline(b"key"), b"key\n");
        assert_eq!(with_newline(b"key\n"), b"key\n");
    }
}
