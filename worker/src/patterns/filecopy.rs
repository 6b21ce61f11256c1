//! `filecopy`: the 1996 study's Disk/Net Balance test. The client reads a file from disk and
//! sends it; the server writes it to its spool directory and fsyncs it before reporting, so
//! throughput = file size / (first read .. data on the server's disk). With `--drop-cache` the
//! client first evicts the source file from the page cache (posix_fadvise, no root needed), so
//! the read really comes from the disk.

use clap::Args;

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::client_args::Common;
use super::trial::{Measure, PatternImpl, Repeats, mbit_s};
use crate::argv::Argv;
use crate::error::{Result, WorkerError};
use crate::protocol::{Params, TrialReport, TrialSpec};
use crate::record::{Protocol, Record};
use crate::session::{Buffers, Conn, Stopwatch};
use crate::units::parse_size;

pub struct Filecopy;

/// Trials and warm-up when none are given (every trial copies the whole file once).
pub const DEFAULT_REPEATS: Repeats = Repeats {
    trials: 3,
    warmup: 0,
};

/// `orchestrate-worker filecopy`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct FilecopyArgs {
    #[command(flatten)]
    pub common: Common,
    /// File to send (its size is used); without it a file of --size is made in --dir.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Size of the file to make when --file is not given.
    #[arg(long, default_value = "2M", value_parser = parse_size, value_name = "BYTES")]
    pub size: u64,
    /// Where to make the source file.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Evict the source file from the page cache before every trial, so it is read from disk.
    #[arg(long)]
    pub drop_cache: bool,
    /// Transport: tcp, or mptcp (Multipath TCP); this pattern does not run over udp.
    #[arg(long, value_enum, default_value = "tcp")]
    pub protocol: Protocol,
}

impl FilecopyArgs {
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Argv::new("filecopy");
        self.common.write_target(&mut a);
        a.opt_some("--file", self.file.as_ref().map(|p| p.display()));
        // Always written: the file's size is what a filecopy point measures.
        a.opt("--size", self.size);
        a.opt_some("--dir", self.dir.as_ref().map(|p| p.display()));
        self.common.write_repeats(&mut a);
        a.opt_unless("--protocol", self.protocol.as_str(), Protocol::Tcp.as_str());
        a.flag("--drop-cache", self.drop_cache);
        self.common.write_rest(&mut a);
        a.into_vec()
    }
}

const CHUNK: usize = 1024 * 1024;

impl PatternImpl for Filecopy {
    fn client(&self, c: &mut Conn, _p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
        let ts = c.timeout_s();
        let path = t
            .source_file
            .as_deref()
            .ok_or_else(|| WorkerError::Usage("filecopy needs a source file".into()))?;
        if t.drop_cache {
            evict(path)?;
        }
        let (buf, _) = b.get(CHUNK, 0);
        let s = &mut c.stream;
        let sw = Stopwatch::start();
        let mut f = File::open(path).map_err(|e| file_err(e, "opening", path))?;
        let mut left = t.size_bytes;
        while left > 0 {
            let want = (left as usize).min(CHUNK);
            let n = f
                .read(&mut buf[..want])
                .map_err(|e| file_err(e, "reading", path))?;
            if n == 0 {
                return Err(WorkerError::Usage(format!(
                    "{} is shorter than the {} bytes announced",
                    path.display(),
                    t.size_bytes
                )));
            }
            s.write_all(&buf[..n])
                .map_err(|e| WorkerError::io(e, "sending the file", ts))?;
            left -= n as u64;
        }
        let mut m = Measure::from_watch(&sw, 1, t.size_bytes);
        m.until_report = true;
        Ok(m)
    }

    fn server(&self, c: &mut Conn, _p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
        let ts = c.timeout_s();
        let dir = c.spool_dir.clone().unwrap_or_else(std::env::temp_dir);
        let path = dir.join(format!(
            "orchestrate-worker-{}-{}-{}.copy",
            std::process::id(),
            c.session,
            t.trial
        ));
        let (buf, _) = b.get(CHUNK, 0);
        let mut created = false;
        let result = (|| {
            let sw = Stopwatch::start();
            // A new file only, readable by us alone: a name someone else made first (a
            // symbolic link to a file worth overwriting, say) fails the copy instead.
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .map_err(|e| file_err(e, "creating", &path))?;
            created = true;
            let mut left = t.size_bytes;
            while left > 0 {
                let want = (left as usize).min(CHUNK);
                let n = c
                    .stream
                    .read(&mut buf[..want])
                    .map_err(|e| WorkerError::io(e, "receiving the file", ts))?;
                if n == 0 {
                    return Err(WorkerError::closed("in the middle of a file copy"));
                }
                f.write_all(&buf[..n])
                    .map_err(|e| file_err(e, "writing", &path))?;
                left -= n as u64;
            }
            f.sync_all().map_err(|e| file_err(e, "syncing", &path))?;
            Ok(Measure::from_watch(&sw, 1, t.size_bytes))
        })();
        if created {
            let _ = std::fs::remove_file(&path);
        }
        result
    }

    fn figures(&self, m: &Measure, _t: &TrialSpec, _s: &TrialReport, rec: &mut Record) {
        rec.throughput_mbit_s = mbit_s(m.bytes, m.elapsed_ns);
    }
}

fn file_err(e: std::io::Error, what: &str, path: &Path) -> WorkerError {
    WorkerError::Io {
        during: format!("{what} {}", path.display()),
        source: e,
    }
}

/// Drop a file's pages from the page cache.
pub fn evict(path: &Path) -> Result<()> {
    let f = File::open(path).map_err(|e| file_err(e, "opening", path))?;
    f.sync_all().map_err(|e| file_err(e, "syncing", path))?;
    // SAFETY: plain syscall on a file descriptor we own for the duration of the call.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(file_err(
            std::io::Error::from_raw_os_error(rc),
            "evicting from the page cache",
            path,
        ));
    }
    Ok(())
}
