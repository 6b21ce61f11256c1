//! The bond's stdout: one JSON line per event, stamped with the wall clock, for whoever
//! started it.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// One JSON line on stdout: events and counters, for whoever started the bond.
pub fn emit(mut v: Value) {
    v["time_ns"] = json!(now_ns());
    println!("{v}");
}
