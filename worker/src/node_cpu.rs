//! CPU time the kernel under the worker spent busy during one trial, from `/proc/stat`'s first
//! line (every CPU summed): on a VM node or a real node the node's own; on container and
//! namespace nodes the host's, which all of them share.
//!
//! Where two configurations move the same bytes at different rates and TCP's counters show no
//! difference, the nodes' work per byte is the next suspect (the userspace bond's copies
//! through TUN and the worker, say); a report may name it only if the run counted it.

/// The kernel's busy time at a trial's start, in its clock ticks.
pub struct TrialCpu {
    at_start: Ticks,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ticks {
    busy: u64,
}

impl TrialCpu {
    /// Reads the counters now; `None` where the kernel will not say (no /proc), so that a
    /// record never carries a made-up zero.
    pub fn start() -> Option<TrialCpu> {
        read().map(|at_start| TrialCpu { at_start })
    }

    /// Busy CPU time since [`TrialCpu::start`], ms, summed over the kernel's CPUs. The kernel
    /// counts in ticks of 1/`CLK_TCK` s (10 ms with the usual 100 Hz), so a trial's figure is
    /// good to a tick per CPU.
    pub fn busy_ms(&self) -> Option<f64> {
        let end = read()?;
        Some(end.busy.saturating_sub(self.at_start.busy) as f64 * 1e3 / ticks_per_s()?)
    }
}

fn read() -> Option<Ticks> {
    parse(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// `cpu  user nice system idle iowait irq softirq steal guest guest_nice`: busy is everything
/// but idle and iowait (guest time is already inside user and nice).
fn parse(stat: &str) -> Option<Ticks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let at = |i: usize| f.get(i).copied().unwrap_or(0);
    (f.len() >= 4).then(|| Ticks {
        busy: at(0) + at(1) + at(2) + at(5) + at(6) + at(7),
    })
}

fn ticks_per_s() -> Option<f64> {
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then_some(hz as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_is_everything_but_idle_and_iowait() {
        let stat = "cpu  100 2 30 5000 40 6 7 8 50 0\ncpu0 50 1 15 2500 20 3 3 4 25 0\nintr 1\n";
        assert_eq!(
            parse(stat),
            Some(Ticks {
                busy: 100 + 2 + 30 + 6 + 7 + 8
            })
        );
        assert_eq!(parse("intr 1\n"), None, "no cpu line");
        assert_eq!(parse("cpu  1 x 3 4\n"), None, "not numbers");
    }

    #[test]
    fn a_busy_loop_is_counted() {
        let trial = TrialCpu::start().expect("/proc/stat on Linux");
        // Spin for 200 ms of wall time: at least a tick of busy time on this CPU, however
        // many others are idle.
        let until = std::time::Instant::now() + std::time::Duration::from_millis(200);
        let mut x = 0u64;
        while std::time::Instant::now() < until {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let busy = trial.busy_ms().unwrap();
        assert!(
            busy >= 100.0,
            "200 ms of spinning counted as {busy} ms busy"
        );
    }
}
