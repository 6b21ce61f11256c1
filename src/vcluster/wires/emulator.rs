//! The medium emulator's side of the virtual cluster: which host ports it owns, its
//! configuration, and its process (started by `up`, stopped by `down`).
//!
//! A segment emulated frame by frame keeps its docker bridge (docker owns it) but loses every
//! port from it: the host-side veths are taken off the bridge, so the only path between the
//! containers on a segment is the emulator, which reads each port through AF_PACKET and writes
//! a frame to the others when the wire would have delivered it. The emulator is this program
//! itself (`orchestrate medium serve`), in a process group of its own so that a Ctrl-C in the
//! terminal stops the run but not the wires under a cluster that stays up.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use orchestrate_medium::config::{MediumConfig, NodeSpec, PortSpec, SegmentSpec};
use orchestrate_medium::realtime::control;
use orchestrate_medium::realtime::placement::Placement;

use super::wiring::{SegmentId, Wiring};
use crate::vcluster::cluster_dir::ClusterDir;
use crate::vcluster::error::{Error, Result};
use crate::vcluster::process::{alive, reap};

/// The emulator's configuration for `wiring`, given each segment's host-side ports (nodes in
/// wiring order, then switches' ports, as `up` lists them). `None` when no segment is
/// emulated frame by frame.
pub fn config(
    wiring: &Wiring,
    ports: &BTreeMap<SegmentId, Vec<String>>,
    seed: u64,
) -> Option<MediumConfig> {
    let emulated: Vec<SegmentId> = wiring.emulated_segments().collect();
    if emulated.is_empty() {
        return None;
    }
    let segments = emulated
        .iter()
        .map(|&id| {
            let s = wiring.segment(id);
            SegmentSpec {
                name: s.name.clone(),
                medium: s.medium,
                rate_bps: s.rate_bps,
                collision_window_ns: orchestrate_medium::config::DEFAULT_COLLISION_WINDOW_NS,
                queue_limit: orchestrate_medium::config::DEFAULT_QUEUE_LIMIT,
                turnaround_ns: orchestrate_medium::time::WireClock::new(s.rate_bps.max(1))
                    .turnaround(),
            }
        })
        .collect();
    let nodes = wiring
        .nodes
        .iter()
        .map(|n| NodeSpec {
            name: n.name.clone(),
            costs: n.host,
            ipv4: n.own_ipv4.iter().map(|a| a.octets()).collect(),
        })
        .collect();
    let mut port_specs = Vec::new();
    for (k, &id) in emulated.iter().enumerate() {
        let members = wiring.members(id);
        for (j, ifname) in ports.get(&id).into_iter().flatten().enumerate() {
            // The first ports are the nodes', in member order; the rest are switches'.
            let node = members
                .get(j)
                .and_then(|(n, _)| wiring.nodes.iter().position(|m| m.name == n.name));
            port_specs.push(PortSpec {
                ifname: ifname.clone(),
                segment: k,
                node,
            });
        }
    }
    Some(MediumConfig {
        segments,
        ports: port_specs,
        nodes,
        seed,
    })
}

/// The program that runs the emulator: this one, or — when this is a test binary — the
/// `orchestrate` binary cargo built beside it.
fn program() -> Result<PathBuf> {
    let exe = std::env::current_exe().map_err(|e| Error::Host {
        problem: format!("cannot find this program's path: {e}"),
        what_to_do: "run orchestrate from a path that exists".into(),
    })?;
    if exe.file_name().is_some_and(|n| n == "orchestrate") {
        return Ok(exe);
    }
    if let Some(p) = std::env::var_os("CARGO_BIN_EXE_orchestrate") {
        return Ok(PathBuf::from(p));
    }
    exe.ancestors()
        .skip(1)
        .take(2)
        .map(|d| d.join("orchestrate"))
        .find(|p| p.is_file())
        .ok_or_else(|| Error::Host {
            problem: format!(
                "{} is not orchestrate and no orchestrate binary is beside it to run the \
                 medium emulator",
                exe.display()
            ),
            what_to_do: "build it with `cargo build -p orchestrate`".into(),
        })
}

/// Makes `path` a directory of this user's that no one else can write (created with `mode`),
/// or checks that it is one.
pub fn private_dir(path: &Path, mode: u32) -> Result<()> {
    let what = "making the medium emulator's directory";
    match std::fs::DirBuilder::new().mode(mode).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::io(what, path, e)),
    }
    let m = std::fs::symlink_metadata(path).map_err(|e| Error::io(what, path, e))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !m.is_dir() || m.uid() != me || m.mode() & 0o022 != 0 {
        return Err(Error::Host {
            problem: format!(
                "{} is not a directory of this user's that others cannot write",
                path.display()
            ),
            what_to_do: "remove it (it is not this program's) and try again".into(),
        });
    }
    Ok(())
}

/// Creates (or truncates) a file only its owner can read, never through a symlink.
fn private_file(path: &Path) -> Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| Error::io("writing the medium emulator's files", path, e))
}

/// Starts the emulator for the cluster in `dir` and waits until it answers on its control
/// socket. Returns its process id. An emulator left behind by an earlier cluster of the same
/// name is stopped first.
pub fn start(dir: &ClusterDir, config: &MediumConfig) -> Result<u32> {
    stop(&find(dir, None));
    if let Some(parent) = dir.runtime().parent() {
        private_dir(parent, 0o755)?;
    }
    private_dir(dir.runtime(), 0o700)?;
    let config_path = dir.medium_config();
    let text = serde_json::to_string_pretty(config).expect("medium configs serialize");
    private_file(&config_path)?
        .write_all(text.as_bytes())
        .map_err(|e| Error::io("writing the medium emulator's config", &config_path, e))?;
    let log_path = dir.medium_log();
    let log = private_file(&log_path)?;
    let log2 = log
        .try_clone()
        .map_err(|e| Error::io("creating the medium emulator's log", &log_path, e))?;
    let socket = dir.medium_socket();
    let mut child = Command::new(program()?)
        .arg("medium")
        .arg("serve")
        .arg("--config")
        .arg(&config_path)
        .arg("--socket")
        .arg(&socket)
        // The event thread gets a CPU to itself; the nodes' receive work is steered to the
        // others (`up` sets their interfaces' rps_cpus to match).
        .args(
            Placement::for_this_process()
                .map(|p| vec!["--cpu".to_owned(), p.event_cpu.to_string()])
                .unwrap_or_default(),
        )
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .process_group(0)
        .spawn()
        .map_err(|e| Error::Host {
            problem: format!("could not start the medium emulator: {e}"),
            what_to_do: "check that the orchestrate binary can be executed".into(),
        })?;
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            return Err(Error::Host {
                problem: format!(
                    "the medium emulator stopped at once ({status}): {}",
                    log.trim()
                ),
                what_to_do: format!("see {}", log_path.display()),
            });
        }
        // Ready when this process (not some other) answers on the socket.
        if control::ping(&socket).is_ok_and(|answered| answered == pid) {
            // The child is reaped by `stop` (or by init once this program exits).
            std::mem::forget(child);
            return Ok(pid);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Host {
                problem: "the medium emulator did not answer on its control socket within 15 s"
                    .into(),
                what_to_do: format!("see {}", log_path.display()),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is this cluster's emulator (and not a process that reused the number).
fn is_ours(pid: u32, socket: &Path) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let socket = socket.as_os_str().as_encoded_bytes();
    args.windows(2)
        .any(|w| w[0] == b"medium" && w[1] == b"serve")
        && args.contains(&socket)
}

/// The emulator processes of the cluster in `dir`: the one recorded, and any other whose
/// command line names the cluster's socket (a state file can be lost).
pub fn find(dir: &ClusterDir, recorded: Option<u32>) -> Vec<u32> {
    let socket = dir.medium_socket();
    let mut pids: Vec<u32> = recorded
        .into_iter()
        .filter(|&p| is_ours(p, &socket))
        .collect();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            if let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok())
                && !pids.contains(&pid)
                && is_ours(pid, &socket)
            {
                pids.push(pid);
            }
        }
    }
    pids
}

/// Stops the given emulator processes: SIGTERM, then SIGKILL after 5 s. Returns how many
/// were running.
pub fn stop(pids: &[u32]) -> usize {
    for &pid in pids {
        // SAFETY: signalling a process we identified as our emulator.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for &pid in pids {
        while alive(pid) && Instant::now() < deadline {
            reap(pid);
            std::thread::sleep(Duration::from_millis(10));
        }
        if alive(pid) {
            // SAFETY: as above.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            std::thread::sleep(Duration::from_millis(50));
            reap(pid);
        }
    }
    pids.len()
}

#[cfg(test)]
mod tests {
    use super::super::wiring::{Emulation, HostCosts, Medium};
    use super::*;

    #[test]
    fn only_frame_emulated_segments_and_their_ports_go_to_the_emulator() {
        let mut w = Wiring::builder("t")
            .segment("a", 10_000_000, Medium::Shared)
            .segment("b", 10_000_000, Medium::Shared)
            .emulation(Emulation::Rate)
            .node("n1", [("eth1", "a"), ("eth2", "b")])
            .node("n2", [("eth1", "a"), ("eth2", "b")])
            .build()
            .unwrap();
        w.nodes[1].host = HostCosts {
            send_ns: 5,
            receive_ns: 6,
            forward_ns: 7,
            per_byte_ps: 8,
        };
        let ports: BTreeMap<SegmentId, Vec<String>> = w
            .segment_ids()
            .map(|id| {
                (
                    id,
                    vec![format!("v{}a", id.index()), format!("v{}b", id.index())],
                )
            })
            .collect();
        let c = config(&w, &ports, 9).unwrap();
        assert_eq!(c.segments.len(), 1);
        assert_eq!(c.segments[0].name, "a");
        let p: Vec<(&str, Option<usize>)> = c
            .ports
            .iter()
            .map(|p| (p.ifname.as_str(), p.node))
            .collect();
        assert_eq!(p, [("v0a", Some(0)), ("v0b", Some(1))]);
        assert_eq!(c.nodes[1].costs.forward_ns, 7);
        assert_eq!(c.nodes[1].costs.per_byte_ps, 8);
        assert!(c.check().is_ok());

        let mut all_rate = w.clone();
        all_rate.segments[0].emulation = Emulation::Rate;
        assert!(config(&all_rate, &ports, 9).is_none());
    }
}
