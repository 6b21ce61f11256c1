//! How much traffic one run of a workload carries.

use std::time::Duration;

use serde::Serialize;

/// How much traffic one run carries.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Amount {
    Exchanges(u64),
    Duration(#[serde(with = "humantime_serde_secs")] Duration),
}

mod humantime_serde_secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}
