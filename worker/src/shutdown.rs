//! The one shutdown path: SIGINT and SIGTERM set a flag that the server's accept loop polls,
//! so `serve` stops taking sessions, lets running trials finish briefly, and exits cleanly.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Route SIGINT and SIGTERM to the flag.
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int);
    // SAFETY: the handler only performs an atomic store.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
}

pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}
