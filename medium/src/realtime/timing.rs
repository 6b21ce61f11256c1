//! How the event thread times itself: its spin before a delivery, its priority and its CPU.

use crate::time::Nanos;

/// How the event thread times itself.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Wake this long before a delivery and spin the rest.
    pub spin_ns: Nanos,
    /// SCHED_FIFO priority to ask for (0: stay SCHED_OTHER).
    pub fifo_priority: i32,
    /// The CPU to keep the event thread on ([`super::placement::Placement`]); `None`: anywhere.
    pub cpu: Option<usize>,
}

impl Default for Timing {
    /// 100 µs of spin before a delivery: on a 2-vCPU virtual machine of the project's kind
    /// a frame waited 50-90 µs at p99 for the sleeping thread to read it (its wake-up), and
    /// with 20 µs of spin half the quick start's segments delivered later than a slot at p99.
    /// It costs CPU only before deliveries (at most the wire time of a minimum frame's
    /// worth of spinning per delivery, less when deliveries follow closely), and never more
    /// than the [`super::spin_budget`] allows, so that real-time priority is not throttled.
    fn default() -> Timing {
        Timing {
            spin_ns: 100_000,
            fifo_priority: 10,
            cpu: None,
        }
    }
}
