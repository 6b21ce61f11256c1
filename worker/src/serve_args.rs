//! `serve`'s command line, written back out for [`crate::invocation`], and its checked form
//! ([`ServeOptions`]).

use std::path::PathBuf;

use clap::Args;

use crate::argv::Argv;
use crate::auth::Secret;
use crate::protocol;
use crate::serve::ServeOptions;
use crate::units::{parse_size, secs};

const DEFAULT_MAX_SESSIONS: usize = 256;
const DEFAULT_MAX_PENDING: usize = 1024;
/// Seconds a new connection has to prove the secret unless `--auth-timeout` says otherwise.
pub const DEFAULT_AUTH_TIMEOUT_S: f64 = 0.8;
const DEFAULT_HANDSHAKE_TIMEOUT_S: f64 = 10.0;
const DEFAULT_MAX_IDLE_S: f64 = 3600.0;

/// `orchestrate-worker serve`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct ServeArgs {
    /// Address to listen on, e.g. 10.111.0.2:7171; give one per experiment address (port 0
    /// picks a free port; the first stdout line says which).
    #[arg(long, value_name = "ADDR:PORT", required = true)]
    pub listen: Vec<String>,
    /// Concurrent sessions at most; more are refused with an error.
    #[arg(long, default_value_t = DEFAULT_MAX_SESSIONS)]
    pub max_sessions: usize,
    /// Connections waiting to authenticate at most; one more closes the oldest.
    #[arg(long, default_value_t = DEFAULT_MAX_PENDING)]
    pub max_pending: usize,
    /// Also print each trial's server-side record as a JSON line on stdout.
    #[arg(long)]
    pub records: bool,
    /// Directory filecopy writes into (default: the system temp dir).
    #[arg(long, value_name = "DIR")]
    pub spool_dir: Option<PathBuf>,
    /// Largest file one filecopy session may write.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value_t = protocol::MAX_FILE)]
    pub max_file_bytes: u64,
    /// Largest total of the files running filecopy sessions may write at once.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value_t = protocol::MAX_FILE)]
    pub max_spool_bytes: u64,
    /// Seconds a new connection has to prove the secret before it is closed.
    #[arg(long, default_value_t = DEFAULT_AUTH_TIMEOUT_S, value_name = "SECS")]
    pub auth_timeout: f64,
    /// Seconds an authenticated connection has to complete its handshake.
    #[arg(long, default_value_t = DEFAULT_HANDSHAKE_TIMEOUT_S, value_name = "SECS")]
    pub handshake_timeout: f64,
    /// Most seconds a session may stay idle between trials, whatever the client asks.
    #[arg(long, default_value_t = DEFAULT_MAX_IDLE_S, value_name = "SECS")]
    pub max_idle: f64,
    #[arg(long, hide = true, default_value_t = protocol::VERSION)]
    pub protocol_version: u16,
}

impl ServeArgs {
    /// A server on `listen`, every other option at its default.
    pub fn new(listen: Vec<String>) -> ServeArgs {
        ServeArgs {
            listen,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_pending: DEFAULT_MAX_PENDING,
            records: false,
            spool_dir: None,
            max_file_bytes: protocol::MAX_FILE,
            max_spool_bytes: protocol::MAX_FILE,
            auth_timeout: DEFAULT_AUTH_TIMEOUT_S,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT_S,
            max_idle: DEFAULT_MAX_IDLE_S,
            protocol_version: protocol::VERSION,
        }
    }

    pub fn to_args(&self) -> Vec<String> {
        let mut a = Argv::new("serve");
        for l in &self.listen {
            a.opt("--listen", l);
        }
        a.opt_unless("--max-sessions", self.max_sessions, DEFAULT_MAX_SESSIONS);
        a.opt_unless("--max-pending", self.max_pending, DEFAULT_MAX_PENDING);
        a.flag("--records", self.records);
        a.opt_some("--spool-dir", self.spool_dir.as_ref().map(|p| p.display()));
        a.opt_unless("--max-file-bytes", self.max_file_bytes, protocol::MAX_FILE);
        a.opt_unless(
            "--max-spool-bytes",
            self.max_spool_bytes,
            protocol::MAX_FILE,
        );
        a.opt_unless("--auth-timeout", self.auth_timeout, DEFAULT_AUTH_TIMEOUT_S);
        a.opt_unless(
            "--handshake-timeout",
            self.handshake_timeout,
            DEFAULT_HANDSHAKE_TIMEOUT_S,
        );
        a.opt_unless("--max-idle", self.max_idle, DEFAULT_MAX_IDLE_S);
        a.opt_unless(
            "--protocol-version",
            self.protocol_version,
            protocol::VERSION,
        );
        a.into_vec()
    }

    /// What the server runs with, the secret taken from the environment.
    pub fn options(self) -> Result<ServeOptions, String> {
        Ok(ServeOptions {
            listen: self.listen,
            secret: Secret::from_env().map_err(|e| e.to_string())?,
            max_sessions: self.max_sessions.max(1),
            max_pending: self.max_pending.max(1),
            records: self.records,
            spool_dir: self.spool_dir,
            max_file_bytes: self.max_file_bytes,
            max_spool_bytes: self.max_spool_bytes,
            auth_timeout: secs(self.auth_timeout, "--auth-timeout")?,
            handshake_timeout: secs(self.handshake_timeout, "--handshake-timeout")?,
            max_idle: secs(self.max_idle, "--max-idle")?,
            version: self.protocol_version,
        })
    }
}
