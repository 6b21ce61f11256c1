//! The medium in real time: the engine driven by CLOCK_MONOTONIC, frames read from and
//! written to the segments' host-side veths, statistics served on a control socket.
//!
//! One event thread does all the work (every segment of the cluster, every node's CPU), so
//! the order of events is the engine's and nothing is shared on the data path. It stops on
//! SIGTERM or SIGINT.
//!
//! The thread sleeps until shortly before each deadline and spins the rest. On a virtual
//! machine a wake from an idle vCPU came 60 µs late (median, measured on 2 vCPUs); while the
//! emulator runs it asks the kernel to keep idle CPUs polling instead of halting
//! ([`placement::KeepAwake`]), which brought that to about 25 µs and the median delivery
//! from 11 µs late to 1.5 µs. Polling the ports from the thread itself instead (never
//! sleeping) was tried and is worse: as SCHED_FIFO it runs into the kernel's real-time
//! throttling (50 ms stalls once it holds a CPU 95% of the time).
//!
//! Statistics leave the thread only when the control socket asks for them ([`publish`]).
//!
//! This module wires the production pieces together; the loop ([`event_loop`]) takes its
//! clock, ports and waiting as parameters, so the tests run it on a fake clock and in-memory
//! ports without root or network devices.

pub mod clock;
pub mod control;
pub mod event_loop;
pub mod measured;
pub mod placement;
pub mod port;
pub mod publish;
pub mod spin_budget;
pub mod timing;
pub mod wait;

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::config::MediumConfig;

use clock::Monotonic;
use event_loop::Stopped;
use port::Port;
use publish::Shared;
pub use timing::Timing;
use wait::{Epolled, EventFd};

/// Runs the medium described by `config` on its ports until SIGTERM or SIGINT, serving
/// statistics on `socket`. Fails before anything is touched if a port cannot be opened.
pub fn run(config: &MediumConfig, socket: &Path, timing: Timing) -> io::Result<()> {
    config.check().map_err(io::Error::other)?;
    let signals = wait::stop_signals()?;
    let ports: Vec<Port> = config
        .ports
        .iter()
        .map(|p| Port::open(&p.ifname))
        .collect::<io::Result<_>>()?;
    let listener = control::bind(socket)?;
    let realtime_priority = clock::tune_thread(timing.fifo_priority);
    let doorbell = Arc::new(EventFd::new()?);
    let ring = {
        let doorbell = Arc::clone(&doorbell);
        Box::new(move || doorbell.ring())
    };
    let shared = Arc::new(Shared::new(config, Monotonic, realtime_priority, ring));
    let fds = ports.iter().map(Port::raw_fd).collect();
    let mut waiter = Epolled::new(fds, signals, doorbell)?;
    // Ready (the control socket answers) only once everything above has worked.
    start_control_thread(listener, Arc::clone(&shared))?;
    // Pinned after the control thread started, which keeps the CPUs it inherited.
    if let Some(cpu) = timing.cpu
        && !placement::pin_thread(cpu)
    {
        eprintln!("medium: could not keep the event thread on CPU {cpu}; it runs anywhere");
    }
    // Held until the process exits (the kernel drops the request with the descriptor).
    let _awake = placement::KeepAwake::request()
        .inspect_err(|e| eprintln!("medium: idle CPUs may halt ({e}): expect later wake-ups"))
        .ok();
    let stopped = event_loop::run(config, &Monotonic, &ports, &mut waiter, &shared, timing);
    stop(socket, stopped);
    Ok(())
}

/// The thread that answers the control socket from what the event thread publishes.
fn start_control_thread<C: clock::Clock>(
    listener: std::os::unix::net::UnixListener,
    shared: Arc<Shared<C>>,
) -> io::Result<()> {
    std::thread::Builder::new()
        .name("medium-control".into())
        .spawn(move || {
            // The control thread must never take the event thread's real-time priority.
            // SAFETY: setting the calling thread's own policy back to SCHED_OTHER.
            unsafe {
                let p = libc::sched_param { sched_priority: 0 };
                libc::sched_setscheduler(0, libc::SCHED_OTHER, &raw const p);
            }
            control::serve(listener, |r| shared.answer(r))
        })?;
    Ok(())
}

/// On SIGTERM or SIGINT: the control socket goes, and a word on frames that were lost.
fn stop(socket: &Path, stopped: Stopped) {
    let _ = std::fs::remove_file(socket);
    if stopped.send_errors > 0 {
        eprintln!(
            "medium: {} frames could not be written to a port",
            stopped.send_errors
        );
    }
    if stopped.spin_withheld_ns > 0 {
        eprintln!(
            "medium: the full spin was withheld for {} ms in all, to keep the event thread's CPU \
             at most {:.0}% busy",
            stopped.spin_withheld_ns / 1_000_000,
            spin_budget::MAX_BUSY * 100.0
        );
    }
}
