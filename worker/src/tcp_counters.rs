//! What the kernel counted on a TCP connection during one trial (`TCP_INFO`): segments
//! retransmitted, reorderings seen, needless retransmissions the peer reported, data that
//! arrived out of order, and the round-trip time and congestion window at the trial's end.
//!
//! A report may name a cause for a slow cell only if the run measured it; these are the
//! measurements for TCP's part. The trial's control messages (its start, the acknowledgement,
//! the server's report) share the connection, so a few segments of theirs are counted too.

use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;

use serde::{Deserialize, Serialize};

/// One side's TCP counters for one trial: events counted during it, state at its end.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpCounters {
    /// Segments this side retransmitted (`tcpi_total_retrans`).
    pub retrans: u32,
    /// Reorderings this side's sender detected (`tcpi_reord_seen`).
    pub reord_seen: u32,
    /// Segments the peer received twice and reported with D-SACK (`tcpi_dsack_dups`): this
    /// side's retransmissions that were not needed.
    pub dsack_dups: u32,
    /// Data segments that arrived here out of order (`tcpi_rcv_ooopack`).
    pub rcv_ooopack: u32,
    /// Smoothed round-trip time at the trial's end, µs (`tcpi_rtt`).
    pub rtt_us: u32,
    /// Its mean deviation, µs (`tcpi_rttvar`).
    pub rttvar_us: u32,
    /// Congestion window at the trial's end, segments (`tcpi_snd_cwnd`).
    pub snd_cwnd: u32,
}

/// The counters at a trial's start, to subtract from those at its end.
pub struct TrialTcp(libc::tcp_info);

impl TrialTcp {
    /// Reads the connection's counters now; `None` where the kernel will not say (not a TCP
    /// socket), so that a record never carries a made-up zero.
    pub fn start(s: &TcpStream) -> Option<TrialTcp> {
        tcp_info(s).ok().map(TrialTcp)
    }

    /// What happened on the connection since [`TrialTcp::start`].
    pub fn counters(&self, s: &TcpStream) -> Option<TcpCounters> {
        let end = tcp_info(s).ok()?;
        Some(between(&self.0, &end))
    }
}

/// Counters are cumulative per connection: events are differences (modulo 2³², as the kernel
/// keeps them), states are the end's.
fn between(start: &libc::tcp_info, end: &libc::tcp_info) -> TcpCounters {
    TcpCounters {
        retrans: end
            .tcpi_total_retrans
            .wrapping_sub(start.tcpi_total_retrans),
        reord_seen: end.tcpi_reord_seen.wrapping_sub(start.tcpi_reord_seen),
        dsack_dups: end.tcpi_dsack_dups.wrapping_sub(start.tcpi_dsack_dups),
        rcv_ooopack: end.tcpi_rcv_ooopack.wrapping_sub(start.tcpi_rcv_ooopack),
        rtt_us: end.tcpi_rtt,
        rttvar_us: end.tcpi_rttvar,
        snd_cwnd: end.tcpi_snd_cwnd,
    }
}

/// The payload the peer's TCP has acknowledged on a connection since a trial began
/// (`tcpi_bytes_acked`): what a sender can count as delivered while its data is still
/// crossing the wire, where the bytes it has written may only sit in its send buffer.
pub struct AckedBytes {
    at_start: u64,
}

impl AckedBytes {
    /// `None` where the kernel will not say (not a TCP socket).
    pub fn start(s: &TcpStream) -> Option<AckedBytes> {
        tcp_info(s).ok().map(|i| AckedBytes {
            at_start: i.tcpi_bytes_acked,
        })
    }

    /// Bytes acknowledged since [`AckedBytes::start`]; `None` if the kernel stops saying.
    pub fn since_start(&self, s: &TcpStream) -> Option<u64> {
        tcp_info(s)
            .ok()
            .map(|i| i.tcpi_bytes_acked.saturating_sub(self.at_start))
    }
}

/// `getsockopt(TCP_INFO)`. A kernel older than a field leaves it zero (it copies no more than
/// its own `tcp_info`), so a counter it does not keep reads as no events.
fn tcp_info(s: &TcpStream) -> io::Result<libc::tcp_info> {
    // SAFETY: tcp_info is plain integers, for which all-zero bytes are a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: a live socket, and a buffer and its length that outlive the call.
    let ret = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_TCP,
            libc::TCP_INFO,
            (&raw mut info).cast(),
            &mut len,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(retrans: u32, reord: u32, rtt: u32) -> libc::tcp_info {
        // SAFETY: as in tcp_info.
        let mut i: libc::tcp_info = unsafe { std::mem::zeroed() };
        i.tcpi_total_retrans = retrans;
        i.tcpi_reord_seen = reord;
        i.tcpi_rtt = rtt;
        i
    }

    #[test]
    fn events_are_counted_since_the_start_and_states_read_at_the_end() {
        let c = between(&info(7, 2, 900), &info(10, 2, 350));
        assert_eq!((c.retrans, c.reord_seen, c.rtt_us), (3, 0, 350));
        // A counter that wrapped during the trial still gives the events in it.
        assert_eq!(between(&info(u32::MAX, 0, 0), &info(1, 0, 0)).retrans, 2);
    }

    #[test]
    fn a_loopback_connection_reports_its_counters() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let start = TrialTcp::start(&client).expect("TCP_INFO on a TCP socket");
        std::io::Write::write_all(&mut &client, &[0u8; 4096]).unwrap();
        let mut buf = [0u8; 4096];
        std::io::Read::read_exact(&mut server, &mut buf).unwrap();
        let c = start.counters(&client).unwrap();
        assert!(c.snd_cwnd > 0, "{c:?}");
        assert!(c.rtt_us > 0, "{c:?}");
        assert_eq!(c.retrans, 0, "nothing is lost on loopback: {c:?}");
    }
}
