//! Multipath TCP (`--protocol mptcp`): sockets opened with `IPPROTO_MPTCP` and handed to the
//! sessions as the std `TcpStream`/`TcpListener` they already use, and the count of subflows
//! that carried a trial.
//!
//! To the program an MPTCP socket is a TCP socket: the same reads, writes, timeouts,
//! `TCP_NODELAY` and keepalive. The kernel stripes the connection over subflows, one TCP
//! connection per path its path manager opens (`ip mptcp endpoint`, `ip mptcp limits`); with
//! no endpoints, as on loopback, there is exactly one. A listener opened with MPTCP also
//! accepts plain TCP clients and hands those back as plain TCP sockets, so `serve` listens
//! with MPTCP whenever the kernel has it and serves `tcp` sessions exactly as before.
//!
//! A kernel without MPTCP refuses the socket itself: `ENOPROTOOPT` when `net.mptcp.enabled` is
//! 0 (a per-network-namespace sysctl), `EPROTONOSUPPORT` when it was built without
//! `CONFIG_MPTCP` (or, for an IPv6 address, without `CONFIG_MPTCP_IPV6`).

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use socket2::{Domain, Socket, Type};

use crate::error::{Result, WorkerError};

/// Socket option level of MPTCP (`SOL_MPTCP` in linux/socket.h).
const SOL_MPTCP: libc::c_int = 284;
/// The connection's `mptcp_info` (linux/mptcp.h, Linux 5.16).
const MPTCP_INFO: libc::c_int = 1;
/// Subflow ids and `tcp_info` of every subflow in one call (linux/mptcp.h, Linux 6.5).
const MPTCP_FULL_INFO: libc::c_int = 4;

/// Whether a socket error means this kernel has no MPTCP (off or not built in).
pub fn is_off(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOPROTOOPT | libc::EPROTONOSUPPORT)
    )
}

/// Why a socket could not be opened, said so that the operator knows what to change.
fn open_error(e: io::Error) -> WorkerError {
    let why = match e.raw_os_error() {
        Some(libc::ENOPROTOOPT) => {
            "MPTCP is off in this kernel (net.mptcp.enabled = 0 in this network namespace; \
             `sysctl -w net.mptcp.enabled=1` turns it on)"
        }
        Some(libc::EPROTONOSUPPORT) => {
            "MPTCP is off in this kernel (built without CONFIG_MPTCP, or CONFIG_MPTCP_IPV6 for an \
             IPv6 address; use a kernel that has it, or --protocol tcp)"
        }
        _ => return WorkerError::io(e, "opening an MPTCP socket", 0.0),
    };
    WorkerError::Usage(format!("cannot open an MPTCP socket: {why}: {e}"))
}

fn new_socket(addr: &SocketAddr) -> io::Result<Socket> {
    Socket::new(
        Domain::for_address(*addr),
        Type::STREAM,
        Some(socket2::Protocol::MPTCP),
    )
}

/// A new MPTCP stream socket for `addr`'s address family.
pub fn socket(addr: &SocketAddr) -> Result<Socket> {
    new_socket(addr).map_err(open_error)
}

/// Connects an MPTCP socket to `addr` within `timeout`.
pub fn connect(addr: &SocketAddr, timeout: Duration) -> Result<TcpStream> {
    let s = socket(addr)?;
    s.connect_timeout(&(*addr).into(), timeout)
        .map_err(|e| WorkerError::io(e, format!("connecting to {addr}"), timeout.as_secs_f64()))?;
    Ok(s.into())
}

/// Listens with MPTCP on `addr`, set up as std's `TcpListener::bind` does (address reuse,
/// a backlog of 128). The error is an `io::Error` so the caller can tell [`is_off`].
pub fn listen(addr: &SocketAddr) -> io::Result<TcpListener> {
    let s = new_socket(addr)?;
    s.set_reuse_address(true)?;
    s.bind(&(*addr).into())?;
    s.listen(128)?;
    Ok(s.into())
}

/// The head of `struct mptcp_full_info` (linux/mptcp.h) up to its `mptcp_info`, which is
/// not asked for: an option length that stops here makes the kernel skip it.
#[repr(C)]
#[derive(Default)]
struct FullInfoHead {
    size_tcpinfo_kernel: u32,
    size_tcpinfo_user: u32,
    size_sfinfo_kernel: u32,
    size_sfinfo_user: u32,
    num_subflows: u32,
    size_arrays_user: u32,
    subflow_info: u64,
    tcp_info: u64,
}

/// Bytes of each `mptcp_subflow_info` asked for: only its leading `id`, which also tells the
/// kernel not to look up the subflow's addresses.
const SFINFO_BYTES: usize = 4;
/// Bytes of each `tcp_info` asked for: up to and including `tcpi_bytes_sent` (Linux 4.19).
/// The kernel copies and steps by the smaller of this and its own `tcp_info`, which in every
/// kernel with `MPTCP_FULL_INFO` reaches past it: the entries are this far apart.
const TCPINFO_BYTES: usize = std::mem::offset_of!(libc::tcp_info, tcpi_bytes_sent) + 8;
const BYTES_RECEIVED: usize = std::mem::offset_of!(libc::tcp_info, tcpi_bytes_received);
const BYTES_SENT: usize = std::mem::offset_of!(libc::tcp_info, tcpi_bytes_sent);

/// Payload bytes each open subflow of a connection has sent plus received, by subflow id
/// (ids are never reused within a connection).
#[derive(Default)]
struct SubflowBytes(Vec<(u32, u64)>);

/// What `MPTCP_FULL_INFO` says of `s`: `None` when the connection is plain TCP (a fallback,
/// or a plain TCP client on an MPTCP listener).
fn subflow_bytes(s: &TcpStream) -> io::Result<Option<SubflowBytes>> {
    // A connection has at most 9 subflows (the path manager's limit of 8 more), but ask
    // again with room for all should the kernel report more.
    let mut room = 16usize;
    loop {
        let mut ids = vec![0u8; room * SFINFO_BYTES];
        let mut infos = vec![0u8; room * TCPINFO_BYTES];
        let mut head = FullInfoHead {
            size_tcpinfo_user: TCPINFO_BYTES as u32,
            size_sfinfo_user: SFINFO_BYTES as u32,
            size_arrays_user: room as u32,
            subflow_info: ids.as_mut_ptr() as u64,
            tcp_info: infos.as_mut_ptr() as u64,
            ..FullInfoHead::default()
        };
        let mut len = std::mem::size_of::<FullInfoHead>() as libc::socklen_t;
        // SAFETY: the head is a valid mptcp_full_info prefix of `len` bytes; the kernel writes
        // at most `room` entries of the given sizes into the two buffers, which outlive the call.
        let rc = unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                SOL_MPTCP,
                MPTCP_FULL_INFO,
                (&mut head as *mut FullInfoHead).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EOPNOTSUPP) if !answers_mptcp_info(s) => Ok(None),
                _ => Err(e),
            };
        }
        let n = head.num_subflows as usize;
        if n > room {
            room = n;
            continue;
        }
        let u32_at = |b: &[u8], at: usize| u32::from_ne_bytes(b[at..at + 4].try_into().unwrap());
        let u64_at = |b: &[u8], at: usize| u64::from_ne_bytes(b[at..at + 8].try_into().unwrap());
        let per = (0..n)
            .map(|i| {
                let info = i * TCPINFO_BYTES;
                let bytes =
                    u64_at(&infos, info + BYTES_SENT) + u64_at(&infos, info + BYTES_RECEIVED);
                (u32_at(&ids, i * SFINFO_BYTES), bytes)
            })
            .collect();
        return Ok(Some(SubflowBytes(per)));
    }
}

/// Whether `s` answers `MPTCP_INFO`. A plain TCP connection answers neither that nor
/// `MPTCP_FULL_INFO` (`EOPNOTSUPP`); one that answers only this is MPTCP on a kernel older
/// than 6.5. (Kernels before 5.16 answer neither, and so read as plain TCP.)
fn answers_mptcp_info(s: &TcpStream) -> bool {
    let mut info = [0u8; 8];
    let mut len = info.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into the buffer.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            SOL_MPTCP,
            MPTCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    rc == 0
}

impl SubflowBytes {
    /// Subflows open now whose byte count grew since `before` (a subflow that opened since
    /// counts if it carried anything).
    fn grown_since(&self, before: &SubflowBytes) -> u32 {
        let earlier = |id: u32| before.0.iter().find(|(i, _)| *i == id).map_or(0, |p| p.1);
        self.0.iter().filter(|(id, b)| *b > earlier(*id)).count() as u32
    }
}

/// Counts the subflows that carried one trial: read at its start, counted at its end.
pub struct TrialSubflows {
    start: io::Result<Option<SubflowBytes>>,
}

impl TrialSubflows {
    /// Reads the subflows' byte counts at the start of a trial.
    pub fn start(s: &TcpStream) -> TrialSubflows {
        TrialSubflows {
            start: subflow_bytes(s),
        }
    }

    /// Subflows open now that carried payload since [`TrialSubflows::start`]; 0 for a
    /// connection that is plain TCP; `None` if the kernel would not say.
    pub fn count(&self, s: &TcpStream) -> Option<u32> {
        let before = self.start.as_ref().ok()?;
        let Some(now) = subflow_bytes(s).ok()? else {
            return Some(0);
        };
        let none = SubflowBytes::default();
        Some(now.grown_since(before.as_ref().unwrap_or(&none)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_subflows_whose_bytes_grew() {
        let before = SubflowBytes(vec![(1, 100), (2, 50), (3, 7)]);
        // 1 grew, 2 did not, 3 closed, 4 opened and carried data, 5 opened idle.
        let after = SubflowBytes(vec![(1, 900), (2, 50), (4, 10), (5, 0)]);
        assert_eq!(after.grown_since(&before), 2);
        assert_eq!(after.grown_since(&SubflowBytes::default()), 3);
    }

    #[test]
    fn a_kernel_without_mptcp_is_named_for_what_it_lacks() {
        let msg = |errno| open_error(io::Error::from_raw_os_error(errno)).to_string();
        let off = msg(libc::ENOPROTOOPT);
        assert!(
            off.starts_with(
                "cannot open an MPTCP socket: MPTCP is off in this kernel (net.mptcp.enabled = 0"
            ),
            "{off}"
        );
        let absent = msg(libc::EPROTONOSUPPORT);
        assert!(absent.starts_with("cannot open an MPTCP socket: MPTCP is off in this kernel (built without CONFIG_MPTCP"), "{absent}");
        assert!(!msg(libc::EMFILE).contains("MPTCP is off"));
        assert!(is_off(&io::Error::from_raw_os_error(libc::EPROTONOSUPPORT)));
    }

    #[test]
    fn the_tcp_info_fields_are_where_linux_tcp_h_puts_them() {
        assert_eq!(BYTES_RECEIVED, 128);
        assert_eq!(BYTES_SENT, 200);
        assert_eq!(std::mem::size_of::<FullInfoHead>(), 40);
    }
}
