//! The virtual cluster's error type: every variant says what failed, where, and what to do.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A host program ran and failed.
    #[error("{what}: `{command}` failed ({status}){}{}", stderr_part(.stderr), hint_part(.hint))]
    Command {
        what: String,
        command: String,
        status: String,
        stderr: String,
        hint: Option<String>,
    },
    /// A host program could not be started at all (usually: not installed).
    #[error("{what}: could not run `{program}`: {source}{}", hint_part(.hint))]
    Spawn {
        what: String,
        program: String,
        #[source]
        source: std::io::Error,
        hint: Option<String>,
    },
    /// A host program ran longer than it is allowed to.
    #[error("{what}: `{command}` did not finish within {seconds} s and was stopped")]
    Timeout {
        what: String,
        command: String,
        seconds: u64,
    },
    #[error("{what} {}: {source}", .path.display())]
    Io {
        what: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A program's output was not what this module expects (a version it does not know?).
    #[error("{what}: unexpected output from `{command}`: {detail}")]
    Unexpected {
        what: String,
        command: String,
        detail: String,
    },
    /// The topology cannot be built as a virtual cluster.
    #[error("the topology cannot be built as a virtual cluster: {0}")]
    Wiring(String),
    /// The host kernel lacks something the topology needs.
    #[error(
        "{needed_for} needs {feature}, which this kernel ({config}) does not have; \
         {what_to_do}"
    )]
    Kernel {
        needed_for: String,
        feature: String,
        config: String,
        what_to_do: String,
    },
    /// The host is not set up for the virtual cluster (no docker, not root, ...).
    #[error("{problem}; {what_to_do}")]
    Host { problem: String, what_to_do: String },
    #[error(
        "cluster name {0:?} is invalid: use 1 to 24 characters a-z, 0-9 and '-', starting with a letter"
    )]
    ClusterName(String),
    #[error("{what} {}: {detail}", .path.display())]
    File {
        what: String,
        path: PathBuf,
        detail: String,
    },
}

fn stderr_part(stderr: &str) -> String {
    let trimmed = stderr.trim();
    if trimmed.is_empty() {
        String::new()
    } else {
        format!(": {trimmed}")
    }
}

fn hint_part(hint: &Option<String>) -> String {
    match hint {
        Some(h) => format!("\n  hint: {h}"),
        None => String::new(),
    }
}

impl Error {
    pub(crate) fn io(
        what: impl Into<String>,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Error::Io {
            what: what.into(),
            path: path.into(),
            source,
        }
    }
}
