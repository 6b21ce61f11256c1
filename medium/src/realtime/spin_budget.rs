//! How much of its CPU the event thread may keep busy, so that real-time priority never trips
//! the kernel's throttle.
//!
//! Under SCHED_FIFO the kernel lets real-time tasks run at most `sched_rt_runtime_us` of every
//! `sched_rt_period_us` (950 ms of each second by default) and then stops them for the rest
//! of the period. Spinning before every delivery keeps the thread busy nearly all the time
//! when deliveries follow each other closely (seven pairs of 64-byte tokens on a mesh): the
//! quick start's heaviest points then saw single frames 14 to 43 ms late, the throttle's
//! pause, while their p99 stayed under 40 µs. The budget watches the thread's busy share over
//! short windows and, when a window was busier than [`MAX_BUSY`], has the next one wait for
//! its deliveries on the timer instead of spinning: a few tens of microseconds of wake-up
//! instead of tens of milliseconds of throttle.
//!
//! The clock is passed in, so the budget is tested without one.

use crate::time::Nanos;

/// The window the busy share is judged over.
pub const WINDOW: Nanos = 20_000_000;
/// The busiest a window may be for the next to spin: with the throttle at 95% of each
/// second, 80% leaves room for the work a window does besides spinning.
pub const MAX_BUSY: f64 = 0.8;

#[derive(Debug, Clone)]
pub struct SpinBudget {
    window_start: Nanos,
    /// Time spent blocked (waiting for an event with a timeout) in this window.
    idle: Nanos,
    spin_allowed: bool,
    /// Windows in which spinning was withheld, for the statistics.
    withheld: u64,
}

impl SpinBudget {
    pub fn new(now: Nanos) -> SpinBudget {
        SpinBudget {
            window_start: now,
            idle: 0,
            spin_allowed: true,
            withheld: 0,
        }
    }

    /// The spin to use before a delivery now: `configured`, or none while the budget is
    /// spent.
    pub fn spin_ns(&self, configured: Nanos) -> Nanos {
        if self.spin_allowed { configured } else { 0 }
    }

    /// The thread blocked from `from` to `to` (a wait that could sleep; a poll that returns at
    /// once is busy time).
    pub fn blocked(&mut self, from: Nanos, to: Nanos) {
        self.idle += to.saturating_sub(from);
    }

    /// Closes the window when it is over: the next may spin only if this one was idle enough.
    pub fn tick(&mut self, now: Nanos) {
        let length = now.saturating_sub(self.window_start);
        if length < WINDOW {
            return;
        }
        let busy = 1.0 - self.idle.min(length) as f64 / length as f64;
        self.spin_allowed = busy <= MAX_BUSY;
        if !self.spin_allowed {
            self.withheld += 1;
        }
        self.window_start = now;
        self.idle = 0;
    }

    /// Windows so far in which spinning was withheld.
    pub fn withheld(&self) -> u64 {
        self.withheld
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn a_window_busier_than_the_budget_withholds_the_next_ones_spin() {
        let mut b = SpinBudget::new(0);
        assert_eq!(b.spin_ns(100_000), 100_000);
        // 20 ms with only 2 ms blocked: 90% busy.
        b.blocked(5 * MS, 7 * MS);
        b.tick(20 * MS);
        assert_eq!(b.spin_ns(100_000), 0);
        assert_eq!(b.withheld(), 1);
        // The next window waits on the timer and is mostly idle: spinning comes back.
        b.blocked(21 * MS, 35 * MS);
        b.tick(40 * MS);
        assert_eq!(b.spin_ns(100_000), 100_000);
        assert_eq!(b.withheld(), 1);
    }

    #[test]
    fn a_window_is_judged_only_once_it_is_over() {
        let mut b = SpinBudget::new(0);
        b.tick(19 * MS);
        assert_eq!(b.spin_ns(7), 7, "a window not yet over keeps its spin");
        // Exactly at the budget still spins.
        b.blocked(0, 4 * MS);
        b.tick(20 * MS);
        assert_eq!(b.spin_ns(7), 7);
    }
}
