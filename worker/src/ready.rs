//! The line `serve` prints on stdout once it listens, typed, so the controller reads what the
//! server writes.

use serde::{Deserialize, Serialize};

/// `serve`'s first stdout line: where it listens and what it is. The fields are in the order
/// the line has always had (alphabetical), so logs and tests read it unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerReady {
    /// Every address listened on, as bound (a port 0 resolved).
    pub addresses: Vec<String>,
    /// The first of them.
    pub listening: Option<String>,
    pub pid: u32,
    pub protocol_version: u16,
    pub software: String,
}

impl ServerReady {
    /// The line's JSON, without its newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("a ready line serializes")
    }

    /// `line` read as a server's ready line; `None` for any other line.
    pub fn from_line(line: &str) -> Option<ServerReady> {
        serde_json::from_str(line).ok()
    }
}
