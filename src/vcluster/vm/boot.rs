//! Booting a cluster's guests, once its namespaces, wires, emulator and sshds are up: the
//! kernel (fetched on first use), then per node a tap beside each interface, the splices,
//! the init script and QEMU, each QEMU recorded in the state file as it starts; then every
//! guest's sshd awaited at its node's address.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::vcluster::cluster_dir::ClusterDir;
use crate::vcluster::cmd::{Cmd, on_path};
use crate::vcluster::error::{Error, Result};
use crate::vcluster::state::State;
use crate::vcluster::wires::{Ns, ip_batch};

use super::guest::{Guest, MEMORY_MIB, SharedFiles, address_of};
use super::kernel::{self, CACHE_DIR};
use super::record::{GuestProcess, VmRecord};

/// QEMU for the guests' architecture.
pub const QEMU: &str = "qemu-system-x86_64";
/// The static busybox the initramfs runs (Debian's busybox-static).
const BUSYBOX: &str = "/bin/busybox";

/// How long the guests have to boot and answer: under TCG a guest takes about 12 s of a
/// core, and two cores boot two at a time.
fn boot_limit(guests: usize) -> Duration {
    Duration::from_secs(120) + Duration::from_secs(15) * guests as u32
}

/// What a guest's init prints on its console once its sshd listens.
const READY: &str = "node-init: ready";

/// Waits until every guest's console says it is ready. Only then are the guests' sshds
/// probed over the network: a guest starved of CPU (sixteen guests under TCG on two cores
/// boot in about 90 s of their own time) would otherwise take a probe connection every few
/// milliseconds, each an sshd of its own to start, until sshd refuses new ones.
fn wait_ready(guests: &[Guest], limit: Duration) -> Result<()> {
    let start = std::time::Instant::now();
    let mut waiting: Vec<&Guest> = guests.iter().collect();
    while !waiting.is_empty() {
        waiting.retain(|g| {
            !std::fs::read_to_string(g.dir.join("console.log")).is_ok_and(|c| c.contains(READY))
        });
        if waiting.is_empty() {
            break;
        }
        if start.elapsed() > limit {
            let g = waiting[0];
            let console = std::fs::read_to_string(g.dir.join("console.log")).unwrap_or_default();
            let tail: Vec<&str> = console.lines().rev().take(5).collect();
            return Err(Error::Host {
                problem: format!(
                    "{} guest(s) did not finish booting within {limit:?} ({}); {}'s console \
                     ends: {}",
                    waiting.len(),
                    waiting
                        .iter()
                        .take(8)
                        .map(|g| g.node.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    g.node,
                    tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
                ),
                what_to_do: format!(
                    "see {} and qemu.log beside it",
                    g.dir.join("console.log").display()
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Ok(())
}

/// Boots every guest (see the module's documentation) and waits for their sshds.
pub fn boot(
    guests: &[Guest],
    files: &[SharedFiles],
    dir: &ClusterDir,
    state: &mut State,
) -> Result<()> {
    let qemu = on_path(QEMU).ok_or_else(|| Error::Host {
        problem: format!("VM nodes need {QEMU}, which is not on the PATH"),
        what_to_do: "install Debian's qemu-system-x86 (and busybox-static for the guests' \
                     initramfs)"
            .into(),
    })?;
    let kernel = kernel::ensure(Path::new(CACHE_DIR), Path::new(BUSYBOX))?;
    let (accel, why) = super::accel::choose(&qemu, &kernel);
    tracing::info!(
        "VM nodes run under {}: {why}",
        accel.as_str().to_uppercase()
    );
    state.vm = Some(VmRecord {
        kernel: kernel.version.clone(),
        accel,
        accel_reason: why,
        memory_mib: MEMORY_MIB,
        guests: Vec::new(),
    });
    state.save(&dir.state_file())?;
    for (index, (guest, shared)) in guests.iter().zip(files).enumerate() {
        let init = guest.dir.join("init.sh");
        let init_text = guest.init_script(index, &kernel, shared);
        std::fs::write(&init, init_text).map_err(|e| Error::io("writing", &init, e))?;
        if init.display().to_string().contains(char::is_whitespace) {
            return Err(Error::Host {
                problem: format!(
                    "{}: the guests' kernel parameters cannot carry a path with spaces",
                    init.display()
                ),
                what_to_do: "choose a --state-dir whose path has none".into(),
            });
        }
        ip_batch(
            Ns::Named(&guest.namespace),
            &format!("making node {}'s taps", guest.node),
            &guest.tap_lines(),
        )?;
        let mut script = guest.splice_lines().join("\n");
        script.push('\n');
        Cmd::new(
            "tc",
            format!("splicing node {}'s interfaces to its guest", guest.node),
        )
        .args(["-n", &guest.namespace, "-batch", "-"])
        .stdin(script)
        .run()?;
        let log_path = guest.dir.join("qemu.log");
        let log =
            std::fs::File::create(&log_path).map_err(|e| Error::io("creating", &log_path, e))?;
        let err_log = log
            .try_clone()
            .map_err(|e| Error::io("opening", &log_path, e))?;
        let child = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{}", guest.namespace))
            .arg("--")
            .arg(&qemu)
            .args(guest.qemu_args(index, &kernel, accel, &init))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err_log)
            // Not in the terminal's process group: a Ctrl-C leaves a cluster that stays up.
            .process_group(0)
            .spawn()
            .map_err(|e| Error::Spawn {
                what: format!("starting node {}'s guest", guest.node),
                program: "nsenter".into(),
                source: e,
                hint: Some(format!("{} says what QEMU made of it", log_path.display())),
            })?;
        let pid = child.id();
        // QEMU runs until `down` stops it with whatever else runs in the namespace.
        drop(child);
        if let Some(vm) = state.vm.as_mut() {
            vm.guests.push(GuestProcess {
                node: guest.node.clone(),
                pid,
            });
        }
        state.save(&dir.state_file())?;
    }
    wait_ready(guests, boot_limit(guests.len()))?;
    let listening: Vec<(String, std::net::Ipv4Addr)> = guests
        .iter()
        .filter_map(|g| Some((g.node.clone(), address_of(&g.mgmt_lines)?)))
        .collect();
    // One connection at a time per guest, each given a minute for sshd's banner.
    crate::vcluster::netns::sshd::wait_listening_within(
        &listening,
        boot_limit(guests.len()),
        32,
        Duration::from_secs(60),
    )
    .map_err(|e| Error::Host {
        problem: format!("{e}"),
        what_to_do: format!(
            "each guest's console is in {}/<node>/console.log",
            dir.nodes_dir().display()
        ),
    })
}
