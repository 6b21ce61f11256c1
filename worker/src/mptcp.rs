//! Multipath TCP (`--protocol mptcp`): sockets opened with `IPPROTO_MPTCP` and handed to the
//! sessions as the std `TcpStream`/`TcpListener` they already use.
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
use std::time::Duration;

use socket2::{Domain, Socket, Type};

use crate::error::{Result, WorkerError};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
