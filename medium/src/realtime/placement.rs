//! Where the work of emulating runs on the host's CPUs.
//!
//! The event thread is kept on one CPU (the highest this process may use), and the nodes'
//! receive work is steered to the others. (Confining the nodes' containers to the others as
//! well was measured and left out: on two CPUs it halves theirs and made lateness worse.) A frame written into a veth is otherwise received
//! (the node's IP and TCP input, waking its reader) in the writer's softirq, on the event
//! thread: measured with perf, a third of that thread's time. Receive Packet Steering on the
//! node's end of each veth (`rps_cpus`) hands that work to another CPU's backlog instead.

use std::io;

/// The event thread's CPU and the CPUs the nodes' receive work is steered to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub event_cpu: usize,
    pub others: Vec<usize>,
}

impl Placement {
    /// From the CPUs this process may run on; `None` with fewer than two (nothing to split).
    pub fn for_this_process() -> Option<Placement> {
        Placement::split(&allowed_cpus().ok()?)
    }

    /// The highest of `cpus` for the event thread, the rest for the nodes.
    pub fn split(cpus: &[usize]) -> Option<Placement> {
        let mut cpus = cpus.to_vec();
        cpus.sort_unstable();
        cpus.dedup();
        let event_cpu = cpus.pop()?;
        (!cpus.is_empty()).then_some(Placement {
            event_cpu,
            others: cpus,
        })
    }

    /// `others` as an `rps_cpus` mask: hexadecimal, in comma-separated 32-bit groups, most
    /// significant first (the kernel's cpumask format).
    pub fn steering_mask(&self) -> String {
        let top = self.others.iter().max().copied().unwrap_or(0);
        let mut groups = vec![0u32; top / 32 + 1];
        for &c in &self.others {
            groups[c / 32] |= 1 << (c % 32);
        }
        let mut parts: Vec<String> = groups.iter().rev().map(|g| format!("{g:08x}")).collect();
        // The most significant group without leading zeros, as the kernel prints it.
        parts[0] = format!("{:x}", groups[groups.len() - 1]);
        parts.join(",")
    }
}

/// A request that idle CPUs poll rather than halt, for as long as it is held: a PM QoS CPU
/// latency limit of 0 µs through `/dev/cpu_dma_latency`, the interface tuned's
/// latency-performance profile uses. Only the polling idle state has no exit latency, so
/// a wake-up (a frame for the emulator, a timer) finds its CPU running. The kernel drops the
/// request when the descriptor closes, however the process ends: nothing is left behind.
pub struct KeepAwake(#[allow(dead_code)] std::fs::File);

impl KeepAwake {
    pub fn request() -> io::Result<KeepAwake> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/cpu_dma_latency")?;
        f.write_all(&0i32.to_ne_bytes())?;
        Ok(KeepAwake(f))
    }
}

/// The CPUs the calling thread may run on.
fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is empty; sched_getaffinity fills it for this thread.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        set
    };
    // SAFETY: CPU_ISSET reads the set filled above, for indices within its size.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Keeps the calling thread on `cpu`. False when the kernel refused (the CPU is not ours).
pub fn pin_thread(cpu: usize) -> bool {
    // SAFETY: building a cpu set with one CPU and applying it to the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw const set) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_cpu_runs_the_event_thread_and_the_rest_take_the_nodes() {
        let p = Placement::split(&[1, 0]).unwrap();
        assert_eq!((p.event_cpu, p.others.clone()), (1, vec![0]));
        assert_eq!(p.steering_mask(), "1");
        assert_eq!(Placement::split(&[0]), None);
        assert_eq!(Placement::split(&[]), None);
        let p = Placement::split(&(0..8).collect::<Vec<_>>()).unwrap();
        assert_eq!(p.steering_mask(), "7f");
        // Past 32 CPUs the mask is in 32-bit groups, most significant first.
        let p = Placement::split(&[0, 33, 40]).unwrap();
        assert_eq!(p.steering_mask(), "2,00000001");
    }

    #[test]
    fn this_process_may_run_somewhere() {
        assert!(!allowed_cpus().unwrap().is_empty());
    }
}
