//! The largest value every count in a spec may take, in one place. Each is checked when the
//! spec is validated, before anything is expanded or allocated for it, so that no input (a
//! typo'd `n[1-9999999]`, a grid of 100000 × 100000) can exhaust memory or time: the tool
//! answers with a located error instead. `orchestrate schema` and the `validate` help text
//! point here.
//!
//! The caps are far above the study's needs (16 nodes, a few hundred points) and below what
//! `plan` can handle in seconds on a laptop: a 64×64 mesh, the largest grid, plans in a few
//! seconds (path checks are one chain per node and subnet, placement looks at pairs on
//! demand).

use std::time::Duration;

use super::names::Rate;

/// Nodes in one topology, listed or generated: a 64×64 mesh. The virtual cluster brings up
/// fewer on one host (see the README's sizes); real clusters through an inventory may use all.
pub const MAX_NODES: usize = 4096;

/// Characters in one node-range expression such as `n[01-16]`; longer ones are surely not
/// meant (and would let zero padding make huge names).
pub const MAX_HOSTLIST_CHARS: usize = 256;

/// Interfaces one generator gives each node (`buses`), and slaves in one bond.
pub const MAX_INTERFACES_PER_NODE: usize = 16;

/// Segments, switches, bonds, routes or addresses in one topology file, each.
pub const MAX_ITEMS: usize = 4096;

/// Topology files one experiment compares.
pub const MAX_TOPOLOGIES: usize = 32;

/// `[[workload]]` tables in one experiment.
pub const MAX_WORKLOADS: usize = 64;

/// Message sizes one workload sweeps (after a range is expanded).
pub const MAX_SIZES: usize = 1024;

/// Pair counts one workload sweeps (after `{ from, to }` is expanded), and pairs listed in
/// `explicit_pairs`. A pair count is also at most half the nodes of a topology.
pub const MAX_PAIR_COUNTS: usize = 1024;

/// Runs per combination.
pub const MAX_REPETITIONS: u32 = 1000;

/// Exchanges (or messages) per run, warm-up included: the worker sizes a trial to at most
/// this many messages.
pub const MAX_EXCHANGES: u64 = 100_000_000;

/// Length of one run given by `duration`.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 60 * 60);

/// Outstanding requests of a `pipeline` workload.
pub const MAX_DEPTH: u32 = 4096;

/// Points (single measurements) one plan may hold: configurations × placements × pair counts
/// × sizes × repetitions, over all workloads.
pub const MAX_POINTS: usize = 100_000;

/// The slowest wire or offered load accepted: below 1 kbit/s a single full-size Ethernet frame
/// (1538 bytes on the wire) takes over 12 seconds, longer than the worker's
/// 10-second socket timeout.
pub const MIN_RATE: Rate = Rate::from_bits_per_s(1_000);

/// Errors reported from one file; the rest are counted ("and N more").
pub const MAX_REPORTED_ERRORS: usize = 20;
