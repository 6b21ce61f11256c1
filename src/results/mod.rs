//! Results: the run directory's files, their schema, and loading them into Polars.
//!
//! The run directory (every file's name, reading it back, writing it as a run goes, whether
//! to trust it) is [`run_dir`], the one place that knows its layout.
//!
//! # Record columns
//!
//! One schema for every pattern; a column a pattern does not fill is null. Names carry units.
//!
//! | column | type | meaning |
//! |---|---|---|
//! | `point` | u32 | id of the sweep point (topology × bonding × placement × pairs × size × pattern) |
//! | `topology` | str | topology name |
//! | `bonding` | str | the configuration's multipath mode: the bonding mode, e.g. `balance-rr`; `mptcp`; or `none` (the column keeps its first name, so earlier runs read alike) |
//! | `bond_driver` | str? | `kernel`, `userspace` or null when not bonded |
//! | `placement` | str | `local-wire`, `remote-wire` or `explicit` |
//! | `pairs` | u32 | pairs active in the point |
//! | `pair` | u32 | index of this pair within the point, from 0 |
//! | `rep` | u32 | repetition of the point, from 0 |
//! | `attempt` | u32 | which attempt at the point took the record, from 0; a point measured again (the emulator did not keep its timing bound) has records of each, and only those of the attempt `points.jsonl` marks ok count |
//! | `client_node`, `server_node` | str | node names of the pair |
//! | `schema` | u32 | worker record layout version |
//! | `pattern`, `protocol`, `role` | str | `token`, `pingpong`, `stream`, ...; `tcp`/`udp`/`mptcp`; `client`/`server` |
//! | `local_addr`, `peer_addr` | str | `ip:port` |
//! | `size_bytes` | u64 | message, block or token size in bytes |
//! | `trial` | u32 | trial index within one worker invocation |
//! | `messages` | u64 | messages completed in the trial |
//! | `bytes` | u64 | payload bytes counted for throughput in the trial |
//! | `start_unix_ns`, `end_unix_ns` | u64 | wall-clock trial start and end, ns since the Unix epoch |
//! | `elapsed_ns` | u64 | monotonic duration of the trial, ns |
//! | `throughput_mbit_s` | f64? | the worker's own rate for the trial, Mbit/s (10^6 bit/s) |
//! | `latency_us`, `latency_p50_us`, `latency_p90_us`, `latency_p99_us`, `latency_max_us` | f64? | one-way latency, µs |
//! | `variance` | f64? | NetPIPE's variance of repetition times, s² |
//! | `depth` | u32? | outstanding requests (pipeline) |
//! | `offered_mbit_s` | f64? | offered load, Mbit/s (load) |
//! | `lost` | u64? | datagrams sent but not received |
//! | `error` | str? | set when the trial failed |
//! | `messages_per_s` | f64? | completed messages per second (pipeline) |
//! | `peer_clock_offset_ns` | i64? | the peer's wall clock minus this side's, from the handshake |
//! | `peer_clock_rtt_ns` | u64? | round trip of that handshake exchange (the offset's uncertainty is half of it) |
//! | `gap_max_us` | f64? | longest pause between data arrivals at the receiver, µs (stream): stalls such as a bond's failover |
//! | `subflows` | u32? | MPTCP: the connection's subflows that carried the trial, as this side counted them (0: it fell back to plain TCP) |
//! | `tcp_retrans` | u32? | TCP: segments this side retransmitted during the trial (the kernel's `TCP_INFO`; absent for udp and mptcp) |
//! | `tcp_reord_seen` | u32? | TCP: reorderings this side's sender detected during the trial |
//! | `tcp_dsack_dups` | u32? | TCP: this side's needless retransmissions, as the peer reported them (D-SACK) |
//! | `tcp_rcv_ooopack` | u32? | TCP: data segments that arrived at this side out of order during the trial |
//! | `tcp_rtt_us` | u32? | TCP: smoothed round-trip time at the trial's end |
//! | `tcp_rttvar_us` | u32? | TCP: its mean deviation |
//! | `tcp_snd_cwnd` | u32? | TCP: congestion window at the trial's end, segments |
//! | `node_cpu_busy_ms` | f64? | CPU time the kernel under this side spent busy during the trial, ms, all its CPUs (`/proc/stat`, to a 10 ms tick): a VM's or real node's own; on container and namespace nodes the host's, which they share |
//! | `rank`, `ranks` | u32? | collectives (role `rank`): this rank, from 0, of how many |
//! | `algorithm` | str? | collectives: the algorithm that ran (`ring`, `recursive-doubling`, `pairwise`, `linear`, `binomial`, `4x4 open`) |
//! | `implementation` | str? | collectives run by an MPI library: which (`Open MPI v4.1.4 (mpi4py 3.1.4)`); null for the worker's own |
//!
//! Fields the worker adds later reach Parquet only once [`schema::RecordColumns`] names them; it
//! destructures the record exhaustively so that the compiler points at the place.

mod error;
mod manifest;
pub mod media;
pub mod run_dir;
pub mod schema;
mod store;

pub use crate::spec::experiment::Statistic;
pub use error::ResultsError;
pub use manifest::{Manifest, SlurmJob, ToolInfo};
pub use media::{HostRow, HostStats, MediaContext, MediaRow, MediaTotal, SegmentStats};
pub use run_dir::RunDir;
pub use schema::{BondDriver, PlacementKind, PointRow, PointStatus, RecordRow};
pub use store::{RecordWriter, RecordsMetadata, ingest};
