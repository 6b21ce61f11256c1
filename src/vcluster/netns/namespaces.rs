//! The cluster's network namespaces: made and deleted in one `ip -batch` each, entered from a
//! thread of this program (sysctls, ethtool's offloads) so that no program per namespace is
//! started for them, and searched for the processes that still run in them.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::vcluster::error::{Error, Result};
use crate::vcluster::process::{alive, reap};
use crate::vcluster::wires::{Ns, ip_batch};

/// Where iproute2 keeps its named namespaces.
const NETNS_DIR: &str = "/run/netns";

/// Makes the namespaces `names`, with their loopback up.
pub fn add(names: &[String]) -> Result<()> {
    let lines: Vec<String> = names.iter().map(|n| format!("netns add {n}")).collect();
    ip_batch(Ns::Host, "making the nodes' network namespaces", &lines)
}

/// The named namespaces on this host.
pub fn list() -> Vec<String> {
    std::fs::read_dir(NETNS_DIR)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Deletes those of `names` that exist; returns how many. (Their links go with them; the
/// kernel finishes that in the background, which is why `down` removes the host's ends of
/// the veths itself, first.)
pub fn delete(names: &[String]) -> Result<usize> {
    let present: BTreeSet<String> = list().into_iter().collect();
    let doomed: Vec<&String> = names.iter().filter(|n| present.contains(*n)).collect();
    let lines: Vec<String> = doomed.iter().map(|n| format!("netns delete {n}")).collect();
    ip_batch(Ns::Host, "deleting the nodes' network namespaces", &lines)?;
    Ok(doomed.len())
}

/// Runs `f` on a thread of its own that has entered the network namespace `ns` (the thread
/// ends with `f`, so no other work of this program runs in the namespace).
pub fn in_namespace<T: Send>(ns: &str, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    let path = Path::new(NETNS_DIR).join(ns);
    let file = std::fs::File::open(&path)
        .map_err(|e| Error::io("opening a node's network namespace", &path, e))?;
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: setns on this thread alone with a namespace file this function holds open.
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(Error::io(
                    "entering a node's network namespace",
                    &path,
                    std::io::Error::last_os_error(),
                ));
            }
            f()
        })
        .join()
        .expect("work in a namespace does not panic")
    })
}

/// Writes `sysctls` (`net.ipv4.ip_forward` and the like) in the namespace `ns`: /proc/sys/net
/// shows the namespace of the thread that opens it.
pub fn set_sysctls(ns: &str, sysctls: &[(&str, &str)]) -> Result<()> {
    in_namespace(ns, || {
        for (key, value) in sysctls {
            let path = Path::new("/proc/sys").join(key.replace('.', "/"));
            std::fs::write(&path, value)
                .map_err(|e| Error::io(format!("setting {key} in namespace {ns}"), &path, e))?;
        }
        Ok(())
    })
}

/// Turns transmit checksum offload, TSO and GSO off on `ifnames` in the namespace `ns`, with
/// ethtool's ioctls (a host need not have the ethtool program): every frame leaving a node is
/// one frame with its checksums filled in, as the medium emulator, which copies frames as
/// bytes, needs them.
pub fn offloads_off(ns: &str, ifnames: &[&str]) -> Result<()> {
    const ETHTOOL_STXCSUM: u32 = 0x17;
    const ETHTOOL_STSO: u32 = 0x1f;
    const ETHTOOL_SGSO: u32 = 0x24;
    if ifnames.is_empty() {
        return Ok(());
    }
    in_namespace(ns, || {
        // SAFETY: a plain socket, owned at once.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(ioctl_error(ns, "socket", std::io::Error::last_os_error()));
        }
        // SAFETY: fd was just returned by socket(2) and is owned by nothing else.
        let socket = unsafe { OwnedFd::from_raw_fd(fd) };
        for ifname in ifnames {
            for cmd in [ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_STXCSUM] {
                set_feature(socket.as_raw_fd(), ifname, cmd, 0)
                    .map_err(|e| ioctl_error(ns, ifname, e))?;
            }
        }
        Ok(())
    })
}

fn ioctl_error(ns: &str, ifname: &str, e: std::io::Error) -> Error {
    Error::Host {
        problem: format!("turning offloads off on {ifname} in namespace {ns} failed: {e}"),
        what_to_do: "check that the kernel's veth driver takes ethtool's feature settings".into(),
    }
}

/// One legacy ethtool "set" command (`struct ethtool_value`) through SIOCETHTOOL.
fn set_feature(fd: i32, ifname: &str, cmd: u32, data: u32) -> std::io::Result<()> {
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    #[repr(C)]
    struct IfReq {
        name: [libc::c_char; libc::IFNAMSIZ],
        data: *mut libc::c_void,
        _rest: [u8; 16],
    }
    if ifname.len() >= libc::IFNAMSIZ {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    }
    let mut value = EthtoolValue { cmd, data };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        data: (&raw mut value).cast(),
        _rest: [0; 16],
    };
    for (d, s) in req.name.iter_mut().zip(ifname.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: SIOCETHTOOL with an ifreq whose data points at a live ethtool_value.
    let rc = unsafe { libc::ioctl(fd, libc::SIOCETHTOOL, &raw mut req) };
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The inode that identifies a named namespace.
fn inode(ns: &str) -> Option<u64> {
    std::fs::metadata(Path::new(NETNS_DIR).join(ns))
        .ok()
        .map(|m| m.ino())
}

/// The processes whose network namespace is one of `names`, by namespace.
pub fn processes_in(names: &[String]) -> BTreeMap<String, Vec<u32>> {
    let by_inode: BTreeMap<u64, &String> =
        names.iter().filter_map(|n| Some((inode(n)?, n))).collect();
    let mut found: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    if by_inode.is_empty() {
        return found;
    }
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(link) = std::fs::read_link(format!("/proc/{pid}/ns/net")) else {
            continue;
        };
        let ino = link
            .to_str()
            .and_then(|l| l.strip_prefix("net:["))
            .and_then(|l| l.strip_suffix(']'))
            .and_then(|l| l.parse::<u64>().ok());
        if let Some(ns) = ino.and_then(|i| by_inode.get(&i)) {
            found.entry((*ns).clone()).or_default().push(pid);
        }
    }
    found
}

/// Kills (SIGKILL) every process in the namespaces `names` and waits until they are gone, up
/// to `limit`. Whatever runs in a cluster's namespace is the cluster's: its sshd's sessions
/// and what they started. Returns how many there were.
pub fn kill_all_in(names: &[String], limit: Duration) -> usize {
    let start = Instant::now();
    let mut killed = BTreeSet::new();
    loop {
        let left: Vec<u32> = processes_in(names)
            .into_values()
            .flatten()
            .filter(|p| alive(*p))
            .collect();
        if left.is_empty() || start.elapsed() > limit {
            if !left.is_empty() {
                tracing::warn!(
                    "{} process(es) in the cluster's namespaces outlived SIGKILL",
                    left.len()
                );
            }
            return killed.len();
        }
        for pid in left {
            // SAFETY: signalling a process that runs in one of the cluster's namespaces.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            reap(pid);
            killed.insert(pid);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
