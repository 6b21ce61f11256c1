//! KVM where it works, TCG otherwise. A usable `/dev/kvm` is not enough: on some hosts QEMU
//! aborts with `-cpu host` or the guest hangs after the BIOS. So the guest kernel itself is
//! booted once under KVM, with no root to mount: it proves KVM works when the initramfs's init
//! gets as far as saying so on the console, within a bound. The answer is kept beside the
//! cached kernel, for this host's kernel, this QEMU and that guest kernel.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::guest::Accel;
use super::kernel::GuestKernel;

/// How long the probe guest has to reach its init under KVM (it needs under 2 s where KVM
/// works; a hang is what it guards against).
const PROBE_LIMIT: Duration = Duration::from_secs(20);
/// What the initramfs's init prints when it finds no root to mount: the probe's proof that
/// the guest kernel ran.
const REACHED_INIT: &str = "cannot mount the host's root";

/// The accelerator to run guests with, and why.
pub fn choose(qemu: &Path, kernel: &GuestKernel) -> (Accel, String) {
    if std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_err()
    {
        return (Accel::Tcg, "no usable /dev/kvm".into());
    }
    let key = format!(
        "host {} qemu {} guest {}",
        host_kernel(),
        qemu_version(qemu),
        kernel.version
    );
    let cache = kernel.dir.with_file_name("kvm-probe");
    if let Ok(text) = std::fs::read_to_string(&cache)
        && let Some((k, answer)) = text.split_once('\n')
        && k == key
    {
        return parse_answer(answer.trim());
    }
    let (accel, why) = probe(qemu, kernel);
    let line = format!("{key}\n{} {why}\n", accel.as_str());
    if let Err(e) = std::fs::write(&cache, line) {
        tracing::debug!("keeping the KVM probe's answer in {}: {e}", cache.display());
    }
    (accel, why)
}

fn parse_answer(answer: &str) -> (Accel, String) {
    match answer.split_once(' ') {
        Some(("kvm", why)) => (Accel::Kvm, why.to_owned()),
        Some((_, why)) => (Accel::Tcg, why.to_owned()),
        None => (Accel::Tcg, answer.to_owned()),
    }
}

fn host_kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

fn qemu_version(qemu: &Path) -> String {
    Command::new(qemu)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_default()
}

/// Boots the guest kernel under KVM with nothing to mount and watches its console.
fn probe(qemu: &Path, kernel: &GuestKernel) -> (Accel, String) {
    let console =
        std::env::temp_dir().join(format!("orchestrate-kvm-probe-{}", std::process::id()));
    let child = Command::new(qemu)
        .args(["-accel", "kvm", "-cpu", "host", "-m", "128", "-smp", "1"])
        .args([
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-monitor",
            "none",
        ])
        .args(["-no-reboot", "-serial"])
        .arg(format!("file:{}", console.display()))
        .arg("-kernel")
        .arg(kernel.vmlinuz())
        .arg("-initrd")
        .arg(kernel.initramfs())
        .args(["-append", "console=ttyS0 panic=-1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return (Accel::Tcg, format!("QEMU did not start under KVM: {e}")),
    };
    let start = Instant::now();
    let answer = loop {
        let reached = std::fs::read_to_string(&console).is_ok_and(|c| c.contains(REACHED_INIT));
        if reached {
            break (
                Accel::Kvm,
                format!(
                    "the guest booted under KVM in {:.1} s",
                    start.elapsed().as_secs_f64()
                ),
            );
        }
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                let first = err.lines().next().unwrap_or("").trim().to_owned();
                break (
                    Accel::Tcg,
                    format!(
                        "QEMU under KVM exited ({status}) before the guest's init ran: {first}"
                    ),
                );
            }
            Ok(None) if start.elapsed() > PROBE_LIMIT => {
                break (
                    Accel::Tcg,
                    format!(
                        "the guest did not reach its init under KVM in {} s",
                        PROBE_LIMIT.as_secs()
                    ),
                );
            }
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&console);
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_answer_reads_back_as_it_was_written() {
        assert_eq!(
            parse_answer("kvm the guest booted under KVM in 1.2 s").0,
            Accel::Kvm
        );
        let (accel, why) = parse_answer("tcg the guest did not reach its init under KVM in 20 s");
        assert_eq!(accel, Accel::Tcg);
        assert!(why.starts_with("the guest did not reach"), "{why}");
    }
}
