//! Row types of the run directory and their column layout in Polars.

use orchestrate_worker::record::Record;
use polars::prelude::*;
use serde::{Deserialize, Serialize};

pub use crate::spec::experiment::PlacementKind;
pub use crate::spec::topology::BondDriver;

/// One line of `records.jsonl`: where and when a record was taken, then the record itself.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct RecordRow {
    pub point: u32,
    pub topology: String,
    /// The configuration's multipath mode: a bonding mode such as `balance-rr`, `mptcp`, or
    /// `none`.
    pub bonding: String,
    #[serde(default)]
    pub bond_driver: Option<BondDriver>,
    pub placement: PlacementKind,
    pub pairs: u32,
    pub pair: u32,
    pub rep: u32,
    /// Which attempt at the point took the record (0 for the first; a point the runner
    /// measured again after one that did not count has records of each).
    #[serde(default, skip_serializing_if = "is_first")]
    pub attempt: u32,
    pub client_node: String,
    pub server_node: String,
    #[serde(flatten)]
    pub record: Record,
}

/// Lines of a point's first attempt say nothing of attempts, as before re-measurement.
fn is_first(attempt: &u32) -> bool {
    *attempt == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Outcome of one point attempt.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PointStatus {
    Ok,
    Failed,
    /// Measured, but the medium emulator did not keep its timing bound on a segment during
    /// it: its timing is not the wire's, so it counts nowhere (the runner measures it again a
    /// bounded number of times; `--resume` too).
    Untimed,
}

/// One line of `points.jsonl`: one attempt at one point.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PointRow {
    pub point: u32,
    pub topology: String,
    pub bonding: String,
    /// The driver that carried the bond (none unbonded). Runs from before points carried it
    /// have only the manifest's, one per topology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bond_driver: Option<BondDriver>,
    pub placement: PlacementKind,
    pub pairs: u32,
    pub pattern: orchestrate_worker::record::Pattern,
    pub protocol: orchestrate_worker::record::Protocol,
    pub size_bytes: u64,
    pub rep: u32,
    /// 0 for the first attempt at this point in the run, then 1, 2, ... (as in its records).
    #[serde(default, skip_serializing_if = "is_first")]
    pub attempt: u32,
    pub status: PointStatus,
    #[serde(default)]
    pub error: Option<String>,
    /// The interval in which all pairs overlapped, as the runner saw it.
    #[serde(default)]
    pub window_start_unix_ns: Option<u64>,
    #[serde(default)]
    pub window_end_unix_ns: Option<u64>,
    /// Largest clock offset between the point's nodes, as probed.
    #[serde(default)]
    pub skew_ns: Option<i64>,
    /// A repetition of the first configuration's reference cell measured again at the end of
    /// the run (the drift check): the report compares it with the cell, and counts it nowhere
    /// else. Written only where set.
    #[serde(default, skip_serializing_if = "is_false")]
    pub drift_check: bool,
    /// How many of the attempt's records carry progress samples (`progress_offset_ns` and
    /// `progress_bytes`): the report reads the samples only when some attempt has them, and
    /// reads them for runs from before points counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled_records: Option<u64>,
    /// A collective whose ranks another program ran than the worker: `open-mpi`. Written
    /// only where set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementation: Option<String>,
}

/// Column names used by the queries, so that a typo is a compile error.
pub mod col {
    pub const POINT: &str = "point";
    pub const TOPOLOGY: &str = "topology";
    pub const BONDING: &str = "bonding";
    pub const BOND_DRIVER: &str = "bond_driver";
    pub const PLACEMENT: &str = "placement";
    pub const PAIRS: &str = "pairs";
    pub const PAIR: &str = "pair";
    pub const REP: &str = "rep";
    pub const ATTEMPT: &str = "attempt";
    pub const PATTERN: &str = "pattern";
    pub const PROTOCOL: &str = "protocol";
    pub const ROLE: &str = "role";
    pub const SIZE_BYTES: &str = "size_bytes";
    pub const BYTES: &str = "bytes";
    pub const START_UNIX_NS: &str = "start_unix_ns";
    pub const END_UNIX_NS: &str = "end_unix_ns";
    pub const LATENCY_US: &str = "latency_us";
    pub const LATENCY_MAX_US: &str = "latency_max_us";
    pub const ERROR: &str = "error";
    pub const TCP_RETRANS: &str = "tcp_retrans";
    pub const TCP_REORD_SEEN: &str = "tcp_reord_seen";
    pub const TCP_DSACK_DUPS: &str = "tcp_dsack_dups";
    pub const TCP_RCV_OOOPACK: &str = "tcp_rcv_ooopack";
    pub const NODE_CPU_BUSY_MS: &str = "node_cpu_busy_ms";
    /// Lists (the record's `progress_*`): not written to records.csv, which has no lists.
    pub const PROGRESS_OFFSET_NS: &str = "progress_offset_ns";
    pub const PROGRESS_BYTES: &str = "progress_bytes";
    /// A collective's rank (role `rank`) and the algorithm that ran.
    pub const RANK: &str = "rank";
    pub const ALGORITHM: &str = "algorithm";
    /// The MPI library that ran a collective's rank; null for the worker's own.
    pub const IMPLEMENTATION: &str = "implementation";
}

/// Column buffers for a batch of [`RecordRow`]s, turned into one Polars [`DataFrame`].
#[derive(Default)]
pub struct RecordColumns {
    point: Vec<u32>,
    topology: Vec<String>,
    bonding: Vec<String>,
    bond_driver: Vec<Option<&'static str>>,
    placement: Vec<&'static str>,
    pairs: Vec<u32>,
    pair: Vec<u32>,
    rep: Vec<u32>,
    attempt: Vec<u32>,
    client_node: Vec<String>,
    server_node: Vec<String>,
    schema: Vec<u32>,
    pattern: Vec<&'static str>,
    protocol: Vec<&'static str>,
    role: Vec<&'static str>,
    local_addr: Vec<String>,
    peer_addr: Vec<String>,
    size_bytes: Vec<u64>,
    trial: Vec<u32>,
    messages: Vec<u64>,
    bytes: Vec<u64>,
    start_unix_ns: Vec<u64>,
    end_unix_ns: Vec<u64>,
    elapsed_ns: Vec<u64>,
    throughput_mbit_s: Vec<Option<f64>>,
    latency_us: Vec<Option<f64>>,
    latency_p50_us: Vec<Option<f64>>,
    latency_p90_us: Vec<Option<f64>>,
    latency_p99_us: Vec<Option<f64>>,
    latency_max_us: Vec<Option<f64>>,
    variance: Vec<Option<f64>>,
    depth: Vec<Option<u32>>,
    offered_mbit_s: Vec<Option<f64>>,
    lost: Vec<Option<u64>>,
    error: Vec<Option<String>>,
    messages_per_s: Vec<Option<f64>>,
    peer_clock_offset_ns: Vec<Option<i64>>,
    peer_clock_rtt_ns: Vec<Option<u64>>,
    gap_max_us: Vec<Option<f64>>,
    subflows: Vec<Option<u32>>,
    tcp_retrans: Vec<Option<u32>>,
    tcp_reord_seen: Vec<Option<u32>>,
    tcp_dsack_dups: Vec<Option<u32>>,
    tcp_rcv_ooopack: Vec<Option<u32>>,
    tcp_rtt_us: Vec<Option<u32>>,
    tcp_rttvar_us: Vec<Option<u32>>,
    tcp_snd_cwnd: Vec<Option<u32>>,
    node_cpu_busy_ms: Vec<Option<f64>>,
    progress_offset_ns: Vec<Option<Vec<u64>>>,
    progress_bytes: Vec<Option<Vec<u64>>>,
    rank: Vec<Option<u32>>,
    ranks: Vec<Option<u32>>,
    algorithm: Vec<Option<String>>,
    implementation: Vec<Option<String>>,
}

impl RecordColumns {
    pub fn len(&self) -> usize {
        self.point.len()
    }

    pub fn is_empty(&self) -> bool {
        self.point.is_empty()
    }

    pub fn push(&mut self, row: RecordRow) {
        // Exhaustive destructuring: a field added to either struct fails to compile here
        // until it has a column.
        let RecordRow {
            point,
            topology,
            bonding,
            bond_driver,
            placement,
            pairs,
            pair,
            rep,
            attempt,
            client_node,
            server_node,
            record,
        } = row;
        let Record {
            schema,
            pattern,
            protocol,
            role,
            local_addr,
            peer_addr,
            size_bytes,
            trial,
            messages,
            bytes,
            start_unix_ns,
            end_unix_ns,
            elapsed_ns,
            throughput_mbit_s,
            latency_us,
            latency_p50_us,
            latency_p90_us,
            latency_p99_us,
            latency_max_us,
            variance,
            depth,
            offered_mbit_s,
            lost,
            error,
            messages_per_s,
            peer_clock_offset_ns,
            peer_clock_rtt_ns,
            gap_max_us,
            subflows,
            tcp_retrans,
            tcp_reord_seen,
            tcp_dsack_dups,
            tcp_rcv_ooopack,
            tcp_rtt_us,
            tcp_rttvar_us,
            tcp_snd_cwnd,
            node_cpu_busy_ms,
            progress_offset_ns,
            progress_bytes,
            rank,
            ranks,
            algorithm,
            implementation,
        } = record;
        self.point.push(point);
        self.topology.push(topology);
        self.bonding.push(bonding);
        self.bond_driver.push(bond_driver.map(BondDriver::as_str));
        self.placement.push(placement.as_str());
        self.pairs.push(pairs);
        self.pair.push(pair);
        self.rep.push(rep);
        self.attempt.push(attempt);
        self.client_node.push(client_node);
        self.server_node.push(server_node);
        self.schema.push(schema);
        self.pattern.push(pattern.as_str());
        self.protocol.push(protocol.as_str());
        self.role.push(role.as_str());
        self.local_addr.push(local_addr);
        self.peer_addr.push(peer_addr);
        self.size_bytes.push(size_bytes);
        self.trial.push(trial);
        self.messages.push(messages);
        self.bytes.push(bytes);
        self.start_unix_ns.push(start_unix_ns);
        self.end_unix_ns.push(end_unix_ns);
        self.elapsed_ns.push(elapsed_ns);
        self.throughput_mbit_s.push(throughput_mbit_s);
        self.latency_us.push(latency_us);
        self.latency_p50_us.push(latency_p50_us);
        self.latency_p90_us.push(latency_p90_us);
        self.latency_p99_us.push(latency_p99_us);
        self.latency_max_us.push(latency_max_us);
        self.variance.push(variance);
        self.depth.push(depth);
        self.offered_mbit_s.push(offered_mbit_s);
        self.lost.push(lost);
        self.error.push(error);
        self.messages_per_s.push(messages_per_s);
        self.peer_clock_offset_ns.push(peer_clock_offset_ns);
        self.peer_clock_rtt_ns.push(peer_clock_rtt_ns);
        self.gap_max_us.push(gap_max_us);
        self.subflows.push(subflows);
        self.tcp_retrans.push(tcp_retrans);
        self.tcp_reord_seen.push(tcp_reord_seen);
        self.tcp_dsack_dups.push(tcp_dsack_dups);
        self.tcp_rcv_ooopack.push(tcp_rcv_ooopack);
        self.tcp_rtt_us.push(tcp_rtt_us);
        self.tcp_rttvar_us.push(tcp_rttvar_us);
        self.tcp_snd_cwnd.push(tcp_snd_cwnd);
        self.node_cpu_busy_ms.push(node_cpu_busy_ms);
        self.progress_offset_ns.push(progress_offset_ns);
        self.progress_bytes.push(progress_bytes);
        self.rank.push(rank);
        self.ranks.push(ranks);
        self.algorithm.push(algorithm);
        self.implementation.push(implementation);
    }

    /// Moves the buffered rows into a [`DataFrame`], leaving the buffers empty.
    pub fn take_frame(&mut self) -> PolarsResult<DataFrame> {
        let c = std::mem::take(self);
        let height = c.point.len();
        let columns = vec![
            Column::new("point".into(), c.point),
            Column::new("topology".into(), c.topology),
            Column::new("bonding".into(), c.bonding),
            Column::new("bond_driver".into(), c.bond_driver),
            Column::new("placement".into(), c.placement),
            Column::new("pairs".into(), c.pairs),
            Column::new("pair".into(), c.pair),
            Column::new("rep".into(), c.rep),
            Column::new("attempt".into(), c.attempt),
            Column::new("client_node".into(), c.client_node),
            Column::new("server_node".into(), c.server_node),
            Column::new("schema".into(), c.schema),
            Column::new("pattern".into(), c.pattern),
            Column::new("protocol".into(), c.protocol),
            Column::new("role".into(), c.role),
            Column::new("local_addr".into(), c.local_addr),
            Column::new("peer_addr".into(), c.peer_addr),
            Column::new("size_bytes".into(), c.size_bytes),
            Column::new("trial".into(), c.trial),
            Column::new("messages".into(), c.messages),
            Column::new("bytes".into(), c.bytes),
            Column::new("start_unix_ns".into(), c.start_unix_ns),
            Column::new("end_unix_ns".into(), c.end_unix_ns),
            Column::new("elapsed_ns".into(), c.elapsed_ns),
            Column::new("throughput_mbit_s".into(), c.throughput_mbit_s),
            Column::new("latency_us".into(), c.latency_us),
            Column::new("latency_p50_us".into(), c.latency_p50_us),
            Column::new("latency_p90_us".into(), c.latency_p90_us),
            Column::new("latency_p99_us".into(), c.latency_p99_us),
            Column::new("latency_max_us".into(), c.latency_max_us),
            Column::new("variance".into(), c.variance),
            Column::new("depth".into(), c.depth),
            Column::new("offered_mbit_s".into(), c.offered_mbit_s),
            Column::new("lost".into(), c.lost),
            Column::new("error".into(), c.error),
            Column::new("messages_per_s".into(), c.messages_per_s),
            Column::new("peer_clock_offset_ns".into(), c.peer_clock_offset_ns),
            Column::new("peer_clock_rtt_ns".into(), c.peer_clock_rtt_ns),
            Column::new("gap_max_us".into(), c.gap_max_us),
            Column::new("subflows".into(), c.subflows),
            Column::new(col::TCP_RETRANS.into(), c.tcp_retrans),
            Column::new(col::TCP_REORD_SEEN.into(), c.tcp_reord_seen),
            Column::new(col::TCP_DSACK_DUPS.into(), c.tcp_dsack_dups),
            Column::new(col::TCP_RCV_OOOPACK.into(), c.tcp_rcv_ooopack),
            Column::new("tcp_rtt_us".into(), c.tcp_rtt_us),
            Column::new("tcp_rttvar_us".into(), c.tcp_rttvar_us),
            Column::new("tcp_snd_cwnd".into(), c.tcp_snd_cwnd),
            Column::new(col::NODE_CPU_BUSY_MS.into(), c.node_cpu_busy_ms),
            u64_lists(col::PROGRESS_OFFSET_NS, c.progress_offset_ns),
            u64_lists(col::PROGRESS_BYTES, c.progress_bytes),
            Column::new(col::RANK.into(), c.rank),
            Column::new("ranks".into(), c.ranks),
            Column::new(col::ALGORITHM.into(), c.algorithm),
            Column::new(col::IMPLEMENTATION.into(), c.implementation),
        ];
        DataFrame::new(height, columns)
    }
}

/// A column of `List(UInt64)`, null where a record has no list; typed even when empty, so
/// every batch of a file has the same schema.
fn u64_lists(name: &str, rows: Vec<Option<Vec<u64>>>) -> Column {
    let values: usize = rows.iter().flatten().map(Vec::len).sum();
    let mut b = ListPrimitiveChunkedBuilder::<UInt64Type>::new(
        name.into(),
        rows.len(),
        values,
        DataType::UInt64,
    );
    for r in rows {
        match r {
            Some(v) => b.append_slice(&v),
            None => b.append_null(),
        }
    }
    b.finish().into_column()
}

#[cfg(test)]
mod tests {
    use orchestrate_worker::record::{Pattern, Protocol, Role};
    use orchestrate_worker::tcp_counters::TcpCounters;

    use super::*;

    fn row(tcp: Option<TcpCounters>) -> RecordRow {
        let mut record = Record::new(Pattern::Stream, Protocol::Tcp, Role::Client);
        record.set_tcp(tcp);
        RecordRow {
            point: 0,
            topology: "t".into(),
            bonding: "none".into(),
            bond_driver: None,
            placement: PlacementKind::LocalWire,
            pairs: 1,
            pair: 0,
            rep: 0,
            attempt: 0,
            client_node: "a".into(),
            server_node: "b".into(),
            record,
        }
    }

    #[test]
    fn tcp_counters_reach_their_columns_and_their_absence_stays_null() {
        let mut columns = RecordColumns::default();
        columns.push(row(Some(TcpCounters {
            retrans: 4,
            rcv_ooopack: 2,
            snd_cwnd: 10,
            ..TcpCounters::default()
        })));
        columns.push(row(None));
        let frame = columns.take_frame().unwrap();
        let column = |name: &str| -> Vec<Option<u32>> {
            frame.column(name).unwrap().u32().unwrap().iter().collect()
        };
        assert_eq!(column("tcp_retrans"), [Some(4), None]);
        assert_eq!(column("tcp_rcv_ooopack"), [Some(2), None]);
        assert_eq!(column("tcp_snd_cwnd"), [Some(10), None]);
        assert_eq!(column("tcp_reord_seen"), [Some(0), None]);
    }
}
