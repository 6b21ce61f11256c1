//! One measurement record: what every pattern writes, one JSON object per line on stdout.
//!
//! This is the contract between the worker and the controller's results store. Field names
//! carry their unit. Fields are only ever added (as `Option`s, so old records still parse);
//! renaming one breaks every stored run.
//!
//! A client writes two records per trial: its own (`role: client`) and the server's
//! (`role: server`), which holds what the serving side counted and timed, returned over the
//! session. What the figures mean per pattern (client record):
//!
//! | pattern  | messages, bytes                 | throughput_mbit_s                   | latency_us                 |
//! |----------|---------------------------------|-------------------------------------|----------------------------|
//! | pingpong | round trips, one direction's payload | size × 8 / one-way time (NetPIPE)   | half the mean round trip  |
//! | stream   | blocks sent, payload            | sender's view, until the server's report arrived | time per block |
//! | token    | tokens written, tokens × size   | tokens × size × 8 / elapsed (the 1996 study) | half the mean round trip |
//! | pipeline | replies received, payload       | replies × size × 8 / elapsed        | elapsed / replies          |
//! | load     | messages sent, payload          | sent payload / elapsed; `offered_mbit_s` is the target | percentiles only |
//! | filecopy | 1 per file, file size           | size × 8 / (first read .. server's fsync done) | — |
//! | halo, alltoall, allreduce, bcast | timed iterations, payload this rank sent in them | — | this rank's mean time per iteration |
//!
//! A collective's ranks each write one record per size (`role: rank`, with `rank`, `ranks`
//! and `algorithm`): `elapsed_ns` is the sum of its timed iterations (the barriers between
//! them left out, as the OSU micro-benchmarks do) and the percentiles are of its iterations.
//!
//! Server records carry the bytes and messages the server received and its own elapsed time;
//! their throughput is received payload / server elapsed (for `stream` this is NetPIPE's
//! receiver-timed figure, for `load` the achieved rate). `lost` (load) is messages sent minus
//! messages the server received.
//!
//! `mptcp` runs every TCP pattern over Multipath TCP; its records add `subflows`, the number of
//! the connection's subflows (paths) that carried the trial, counted by each side on its own
//! socket: 1 with a single path (loopback), 2 or more when the kernel striped the trial over
//! several, 0 when the connection fell back to plain TCP.

use serde::{Deserialize, Serialize};

use crate::progress::Progress;
use crate::tcp_counters::TcpCounters;

/// Version of the record layout. Bump when a field's meaning changes.
pub const RECORD_SCHEMA_VERSION: u32 = 1;

// The one type for a pattern, from the experiment spec to the stored results: the controller
// names patterns with it too, hence the optional `schema` feature.
/// Which measurement produced a record.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// NetPIPE ping-pong: latency and throughput of one block bounced back and forth.
    Pingpong,
    /// NetPIPE streaming: blocks sent one way, timed at the receiver.
    Stream,
    /// The 1996 study's Network Throughput test: a token sent and returned.
    Token,
    /// Request/response with a fixed number of requests outstanding.
    Pipeline,
    /// Open-loop producer at an offered rate.
    Load,
    /// The 1996 study's Disk/Net Balance test: file read, sent, written and synced.
    Filecopy,
    /// Collective: nearest-neighbour exchange on a 2-D process grid, one message per face.
    Halo,
    /// Collective: every rank sends a message to every other.
    Alltoall,
    /// Collective: the element-wise sum of every rank's vector, at every rank.
    Allreduce,
    /// Collective: one rank's message to every other.
    Bcast,
}

impl Pattern {
    /// The name in records, specs and on the command line (serde's lowercase name).
    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::Pingpong => "pingpong",
            Pattern::Stream => "stream",
            Pattern::Token => "token",
            Pattern::Pipeline => "pipeline",
            Pattern::Load => "load",
            Pattern::Filecopy => "filecopy",
            Pattern::Halo => "halo",
            Pattern::Alltoall => "alltoall",
            Pattern::Allreduce => "allreduce",
            Pattern::Bcast => "bcast",
        }
    }

    /// Whether this is a collective, run by N ranks together rather than client and server.
    pub fn is_collective(self) -> bool {
        matches!(
            self,
            Pattern::Halo | Pattern::Alltoall | Pattern::Allreduce | Pattern::Bcast
        )
    }
}

// Also the value of the worker's `--protocol` option: its variants carry no doc comments,
// which clap would print in `--help`.
/// Transport used by a pattern.
#[derive(
    Serialize,
    Deserialize,
    Debug,
    Default,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    clap::ValueEnum,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    #[default]
    Tcp,
    Udp,
    // TCP's semantics over Multipath TCP: every socket is opened with IPPROTO_MPTCP.
    Mptcp,
}

impl Protocol {
    /// The name in records, specs and on the command line (serde's lowercase name).
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Mptcp => "mptcp",
        }
    }
}

/// Which side of a pair wrote the record.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Client,
    Server,
    /// One rank of a collective.
    Rank,
}

impl Role {
    /// The name records use.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Server => "server",
            Role::Rank => "rank",
        }
    }
}

/// One trial (or run) of one pattern at one message size between two endpoints.
///
/// Throughput is payload bits per second in one direction, as each pattern defines it
/// (`token`: tokens written × token size / elapsed, as the 1996 study did). Times are wall-clock
/// nanoseconds since the Unix epoch so the controller can line up pairs on different nodes;
/// `elapsed_ns` is measured with the monotonic clock and is what rates are computed from.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Record {
    pub schema: u32,
    pub pattern: Pattern,
    pub protocol: Protocol,
    pub role: Role,
    /// Local socket address, `ip:port`.
    pub local_addr: String,
    /// Peer socket address, `ip:port`.
    pub peer_addr: String,
    /// Message, block or token size in bytes.
    pub size_bytes: u64,
    /// Index of this trial within one invocation, from 0.
    pub trial: u32,
    /// Messages (tokens, blocks, requests, files) completed in this trial.
    pub messages: u64,
    /// Payload bytes counted for throughput in this trial.
    pub bytes: u64,
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    pub elapsed_ns: u64,
    pub throughput_mbit_s: Option<f64>,
    /// One-way latency: half a round trip for ping-pong patterns, per message for pipelines.
    pub latency_us: Option<f64>,
    /// Latency percentiles (load): round trip of a message and its 16-byte echo, measured from
    /// the message's scheduled send time, so time spent behind schedule counts.
    pub latency_p50_us: Option<f64>,
    pub latency_p90_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    pub latency_max_us: Option<f64>,
    /// NetPIPE's variance column (of the per-repetition times, in s²).
    pub variance: Option<f64>,
    /// Outstanding requests (pipeline).
    pub depth: Option<u32>,
    /// Offered load in Mbit/s (load).
    pub offered_mbit_s: Option<f64>,
    /// Datagrams sent but not received (UDP patterns).
    pub lost: Option<u64>,
    /// Set when the trial failed; the numeric fields then describe what was done before it.
    pub error: Option<String>,
    /// Completed messages per second (pipeline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_per_s: Option<f64>,
    /// The peer's wall clock minus this side's, estimated at the session's handshake
    /// (uncertain by ± half of `peer_clock_rtt_ns`), so server-stamped times can be mapped
    /// onto the client's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_clock_offset_ns: Option<i64>,
    /// Round trip of the handshake exchange the offset was estimated from, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_clock_rtt_ns: Option<u64>,
    /// The longest pause between two arrivals of data at the receiver, µs (stream): a stall,
    /// such as a bond failing over, shows here even when the average hides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_max_us: Option<f64>,
    /// MPTCP only: the subflows of the connection that carried payload during the trial, i.e.
    /// subflows open at its end whose bytes sent plus bytes received (their `tcp_info`, read
    /// with `MPTCP_FULL_INFO`) grew since its start. The client counts from the server's
    /// acknowledgement of the trial to its report, the server from its acknowledgement to the
    /// end of its part. 1 on a single path (loopback); 0 when the connection fell back to plain
    /// TCP (a peer or a middlebox without MPTCP); absent for `tcp` and `udp`, or if the
    /// kernel would not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subflows: Option<u32>,
    // TCP only: the kernel's counters for this side of the trial's connection (`TCP_INFO`,
    // see `tcp_counters`); absent for udp and mptcp, from older workers, or where the kernel
    // would not say.
    /// Segments this side retransmitted during the trial (tcp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_retrans: Option<u32>,
    /// Reorderings this side's sender detected during the trial (tcp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_reord_seen: Option<u32>,
    /// This side's needless retransmissions, as the peer reported them with D-SACK (tcp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_dsack_dups: Option<u32>,
    /// Data segments that arrived here out of order during the trial (tcp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_rcv_ooopack: Option<u32>,
    /// Smoothed round-trip time at the trial's end, µs (tcp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_rtt_us: Option<u32>,
    /// Its mean deviation, µs (tcp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_rttvar_us: Option<u32>,
    /// Congestion window at the trial's end, segments (tcp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_snd_cwnd: Option<u32>,
    /// CPU time the kernel under this side spent busy during the trial, ms, every CPU summed
    /// (`/proc/stat`, good to a 10 ms tick per CPU): on a VM or a real node the node's own, on
    /// container and namespace nodes the host's, which they share. Absent from older workers
    /// or where the kernel will not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_cpu_busy_ms: Option<f64>,
    /// How the payload accumulated, on the side that times the pattern (`progress`): ns
    /// after `start_unix_ns` of each sample, ascending, the last at `elapsed_ns`...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_offset_ns: Option<Vec<u64>>,
    /// ...and the payload bytes delivered by then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_bytes: Option<Vec<u64>>,
    /// Collectives: this rank, from 0...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// ...of this many ranks...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<u32>,
    /// ...and the algorithm that ran (`ring`, `recursive-doubling`, `pairwise`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
    /// Collectives run by an MPI library rather than this worker: the library and its
    /// binding (`Open MPI v4.1.4 (mpi4py 3.1.4)`); absent for the worker's own records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementation: Option<String>,
}

impl Record {
    /// An empty record of one pattern and role, to be filled in.
    pub fn new(pattern: Pattern, protocol: Protocol, role: Role) -> Record {
        Record {
            schema: RECORD_SCHEMA_VERSION,
            pattern,
            protocol,
            role,
            local_addr: String::new(),
            peer_addr: String::new(),
            size_bytes: 0,
            trial: 0,
            messages: 0,
            bytes: 0,
            start_unix_ns: 0,
            end_unix_ns: 0,
            elapsed_ns: 0,
            throughput_mbit_s: None,
            latency_us: None,
            latency_p50_us: None,
            latency_p90_us: None,
            latency_p99_us: None,
            latency_max_us: None,
            variance: None,
            depth: None,
            offered_mbit_s: None,
            lost: None,
            error: None,
            gap_max_us: None,
            messages_per_s: None,
            peer_clock_offset_ns: None,
            peer_clock_rtt_ns: None,
            subflows: None,
            tcp_retrans: None,
            tcp_reord_seen: None,
            tcp_dsack_dups: None,
            tcp_rcv_ooopack: None,
            tcp_rtt_us: None,
            tcp_rttvar_us: None,
            tcp_snd_cwnd: None,
            node_cpu_busy_ms: None,
            progress_offset_ns: None,
            progress_bytes: None,
            rank: None,
            ranks: None,
            algorithm: None,
            implementation: None,
        }
    }

    /// Fills in how the payload accumulated, or leaves it absent.
    pub fn set_progress(&mut self, progress: Option<&Progress>) {
        self.progress_offset_ns = progress.map(|p| p.offset_ns.clone());
        self.progress_bytes = progress.map(|p| p.bytes.clone());
    }

    /// Fills in the TCP counters of this side of the trial, or leaves them absent.
    pub fn set_tcp(&mut self, tcp: Option<TcpCounters>) {
        let field = |f: fn(&TcpCounters) -> u32| tcp.as_ref().map(f);
        self.tcp_retrans = field(|t| t.retrans);
        self.tcp_reord_seen = field(|t| t.reord_seen);
        self.tcp_dsack_dups = field(|t| t.dsack_dups);
        self.tcp_rcv_ooopack = field(|t| t.rcv_ooopack);
        self.tcp_rtt_us = field(|t| t.rtt_us);
        self.tcp_rttvar_us = field(|t| t.rttvar_us);
        self.tcp_snd_cwnd = field(|t| t.snd_cwnd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serde_names() {
        use Pattern::*;
        for p in [
            Pingpong, Stream, Token, Pipeline, Load, Filecopy, Halo, Alltoall, Allreduce, Bcast,
        ] {
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
        for p in [Protocol::Tcp, Protocol::Udp, Protocol::Mptcp] {
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
        assert_eq!(Protocol::default(), Protocol::Tcp);
    }

    #[cfg(feature = "schema")]
    #[test]
    fn schemas_list_the_serde_names() {
        let text = |v: schemars::Schema| serde_json::to_string(&v).unwrap();
        let pattern = text(schemars::schema_for!(Pattern));
        for name in [
            "pingpong",
            "stream",
            "token",
            "pipeline",
            "load",
            "filecopy",
            "halo",
            "alltoall",
            "allreduce",
            "bcast",
        ] {
            assert!(pattern.contains(&format!("\"{name}\"")), "{pattern}");
        }
        let protocol = text(schemars::schema_for!(Protocol));
        for name in ["tcp", "udp", "mptcp"] {
            assert!(protocol.contains(&format!("\"{name}\"")), "{protocol}");
        }
    }

    #[test]
    fn round_trips_and_reads_records_without_the_added_fields() {
        let mut r = Record::new(Pattern::Pipeline, Protocol::Tcp, Role::Client);
        r.messages_per_s = Some(12.5);
        r.peer_clock_offset_ns = Some(-42);
        r.subflows = Some(2);
        r.set_tcp(Some(TcpCounters {
            retrans: 3,
            ..TcpCounters::default()
        }));
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"tcp_retrans\":3"), "{json}");
        assert!(json.contains("\"pattern\":\"pipeline\""), "{json}");
        assert_eq!(serde_json::from_str::<Record>(&json).unwrap(), r);

        // A record as schema 1 first wrote it: the added fields are simply absent.
        let mut v: serde_json::Value = serde_json::to_value(&r).unwrap();
        let o = v.as_object_mut().unwrap();
        for k in [
            "messages_per_s",
            "peer_clock_offset_ns",
            "peer_clock_rtt_ns",
            "subflows",
            "tcp_retrans",
            "tcp_reord_seen",
            "tcp_dsack_dups",
            "tcp_rcv_ooopack",
            "tcp_rtt_us",
            "tcp_rttvar_us",
            "tcp_snd_cwnd",
        ] {
            o.remove(k);
        }
        let old: Record = serde_json::from_value(v).unwrap();
        assert_eq!(old.messages_per_s, None);
        assert_eq!(old.peer_clock_offset_ns, None);
        assert_eq!(old.subflows, None);
        // Unset optional fields added later are left out of the output entirely.
        let plain =
            serde_json::to_string(&Record::new(Pattern::Token, Protocol::Udp, Role::Server))
                .unwrap();
        assert!(
            !plain.contains("messages_per_s")
                && !plain.contains("peer_clock")
                && !plain.contains("subflows")
                && !plain.contains("tcp_"),
            "{plain}"
        );
    }
}
