//! `filecopy`: the 1996 study's Disk/Net Balance test. The client reads a file from disk and
//! sends it; the server writes it to its spool directory and fsyncs it before reporting, so
//! throughput = file size / (first read .. data on the server's disk). With `--drop-cache` the
//! client first evicts the source file from the page cache (posix_fadvise, no root needed), so
//! the read really comes from the disk.

use clap::Args;

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::client_args::Common;
use super::trial::{Measure, PatternImpl, Repeats, mbit_s};
use crate::argv::Argv;
use crate::error::{Result, WorkerError};
use crate::progress::{INTERVAL_NS, Meter};
use crate::protocol::{Params, TrialReport, TrialSpec};
use crate::record::{Protocol, Record};
use crate::session::{Buffers, Conn, Stopwatch};
use crate::tcp_counters::AckedBytes;
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
/// The client writes a chunk in pieces this large and samples its progress after each: a
/// write of a whole chunk can block for seconds on a 10 Mbit/s bus shared by seven copies.
const PIECE: usize = 64 * 1024;

impl PatternImpl for Filecopy {
    fn client(&self, c: &mut Conn, p: &Params, t: &TrialSpec, b: &mut Buffers) -> Result<Measure> {
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
        // Over plain TCP the copy's progress is what the server's TCP acknowledged; over
        // MPTCP the first subflow's counters would miss the others, so there is none.
        let acked = (p.protocol == Protocol::Tcp)
            .then(|| AckedBytes::start(s))
            .flatten();
        let mut meter = Meter::start(sw.instant());
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
            for piece in buf[..n].chunks(PIECE) {
                s.write_all(piece)
                    .map_err(|e| WorkerError::io(e, "sending the file", ts))?;
                if let Some(d) = acked.as_ref().and_then(|a| a.since_start(s)) {
                    meter.delivered(d);
                }
            }
            left -= n as u64;
        }
        // What is still in flight, followed until the server's TCP has all of it.
        let followed = acked
            .as_ref()
            .is_some_and(|a| follow_acknowledgements(s, a, t.size_bytes, &mut meter, c.timeout));
        let mut m = Measure::from_watch(&sw, 1, t.size_bytes);
        if followed {
            m.progress = Some(meter.finish(m.elapsed_ns, t.size_bytes));
        }
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

/// Samples the server's acknowledgements of the copy until it has all `size` bytes (true)
/// or `timeout` has passed or the kernel stopped saying (false: no progress for this trial,
/// whose total still counts). The pause between looks is half a sampling interval, so each
/// interval gets its sample at little cost to the CPU the emulated nodes share.
fn follow_acknowledgements(
    s: &TcpStream,
    acked: &AckedBytes,
    size: u64,
    meter: &mut Meter,
    timeout: Duration,
) -> bool {
    let give_up = Instant::now() + timeout;
    loop {
        let Some(d) = acked.since_start(s) else {
            return false;
        };
        meter.delivered(d.min(size));
        if d >= size {
            return true;
        }
        if Instant::now() >= give_up {
            return false;
        }
        std::thread::sleep(Duration::from_nanos(INTERVAL_NS / 2));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Pattern;
    use socket2::{Domain, Socket, Type};
    use std::net::TcpListener;

    const SIZE: u64 = 1024 * 1024;

    /// A listener whose connections keep a small receive buffer, so that the server's reading
    /// paces the copy (as a busy wire does) instead of the kernel taking all of it at once.
    fn narrow_listener() -> TcpListener {
        let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        socket.set_recv_buffer_size(32 * 1024).unwrap();
        socket
            .bind(
                &"127.0.0.1:0"
                    .parse::<std::net::SocketAddr>()
                    .unwrap()
                    .into(),
            )
            .unwrap();
        socket.listen(1).unwrap();
        socket.into()
    }

    /// The copy's progress is what reached the server, not what the client handed to its
    /// send buffer: halfway through a copy the server paces, about half of it has arrived.
    #[test]
    fn a_copy_in_progress_counts_what_the_server_acknowledged() {
        let dir = std::env::temp_dir().join(format!("filecopy-progress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = dir.join("source");
        std::fs::write(&source, vec![7u8; SIZE as usize]).unwrap();
        let listener = narrow_listener();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 16 * 1024];
            let mut got = 0u64;
            while got < SIZE {
                let n = s.read(&mut buf).unwrap();
                assert!(n > 0, "closed after {got} bytes");
                got += n as u64;
                std::thread::sleep(Duration::from_millis(4));
            }
        });
        let stream = TcpStream::connect(addr).unwrap();
        let mut c = Conn::new(stream, Duration::from_secs(10), 1).unwrap();
        let params = Params::tcp(Pattern::Filecopy, SIZE, Duration::from_secs(10));
        let spec = TrialSpec {
            source_file: Some(source),
            ..TrialSpec::of_size(SIZE)
        };
        let m = Filecopy
            .client(&mut c, &params, &spec, &mut Buffers::default())
            .unwrap();
        server.join().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let p = m.progress.expect("progress over plain TCP");
        assert_eq!(p.bytes.last(), Some(&SIZE));
        assert_eq!(p.offset_ns.last(), Some(&m.elapsed_ns));
        assert!(p.bytes.windows(2).all(|w| w[0] <= w[1]), "{p:?}");
        let half = m.elapsed_ns / 2;
        let i = p
            .offset_ns
            .iter()
            .position(|&t| t >= half)
            .expect("a sample after half the copy");
        let share = p.bytes[i] as f64 / SIZE as f64;
        assert!(
            (0.2..=0.85).contains(&share),
            "{:.0}% acknowledged at {} of {} ns",
            share * 100.0,
            p.offset_ns[i],
            m.elapsed_ns
        );
    }
}
