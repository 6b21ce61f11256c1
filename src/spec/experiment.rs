//! The experiment spec: which topologies to compare, on which cluster, with which traffic.

use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use toml::Spanned;

use super::limits::MAX_PAIR_COUNTS;
use super::multipath::{MultipathHash, NodeMultipath, Routing};
use super::names::{ByteSize, HumanDuration, Name, NodeName, Rate};
use super::topology::BondMode;

/// An experiment file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentSpec {
    /// The experiment's name; defaults to the file name without `.toml`.
    #[schemars(with = "Option<Name>")]
    pub name: Option<Spanned<Name>>,
    pub description: Option<String>,
    /// Seed for the random order of points; the same seed gives the same plan.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Topology files, relative to this file.
    #[schemars(with = "Vec<String>")]
    pub topologies: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    pub cluster: ClusterSpec,
    /// Bonding modes to sweep on topologies that have bonds (the older spelling of
    /// `[multipath] modes = ["bond:<mode>", ...]`).
    #[serde(default)]
    pub bonding: BondingSpec,
    /// Multipath modes to sweep: bonding, Multipath TCP or neither, on topologies with bonds.
    #[serde(default)]
    pub multipath: MultipathSpec,
    /// Host costs for every node of every topology, in place of the topologies' own: a
    /// profile (`"none"`, `"486dx4"`) or `{ send = "300us", receive = "300us", forward =
    /// "150us" }`. Runs the same wires with the hosts of another era.
    #[serde(default)]
    pub host: Option<super::host::HostSpec>,
    /// What traffic to measure; several tables give several workloads.
    #[schemars(with = "Vec<WorkloadSpec>")]
    pub workload: Spanned<Vec<WorkloadSpec>>,
    #[serde(default)]
    pub report: ReportSpec,
    /// Values the experiment expects to measure, checked by `orchestrate report`.
    #[serde(default)]
    pub reference: Vec<super::reference::ReferenceSpec>,
}

fn default_seed() -> u64 {
    1
}

pub use super::cluster_kind::ClusterKind;

/// Where the nodes come from.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    #[serde(default)]
    pub kind: ClusterKind,
    /// With `kind = "inventory"`: the hosts file, relative to this file.
    #[schemars(with = "Option<String>")]
    pub inventory: Option<Spanned<String>>,
    // The SSH settings of `kind = "slurm"`, as an inventory's `[defaults]` has them (written
    // out, not a flattened struct: flattening loses each value's place in the file).
    /// With `kind = "slurm"`: login name on the nodes (default: ssh's).
    #[schemars(with = "Option<String>")]
    pub user: Option<Spanned<String>>,
    /// With `kind = "slurm"`: SSH port (default: ssh's).
    #[schemars(with = "Option<u16>")]
    pub port: Option<Spanned<i64>>,
    /// With `kind = "slurm"`: private key file, relative to this file (`~/` is the home
    /// directory).
    #[schemars(with = "Option<String>")]
    pub identity: Option<Spanned<String>>,
    /// With `kind = "slurm"`: known_hosts file to check host keys against, strictly.
    #[schemars(with = "Option<String>")]
    pub known_hosts: Option<Spanned<String>>,
    /// With `kind = "slurm"`: jump host (ProxyJump), as `ssh -J` takes it.
    #[schemars(with = "Option<String>")]
    pub jump: Option<Spanned<String>>,
    /// With `kind = "slurm"`: run configuration commands through `sudo -n`.
    #[schemars(with = "Option<bool>")]
    pub sudo: Option<Spanned<bool>>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BondingSpec {
    /// Modes to sweep; empty means each bond's own mode.
    #[serde(default)]
    #[schemars(with = "Vec<BondMode>")]
    pub modes: Vec<Spanned<BondMode>>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MultipathSpec {
    /// How nodes use the interfaces a bond joins, one configuration each:
    /// `"bond:<mode>"` (the bond, in that bonding mode), `"mptcp"` (no bond: each interface
    /// holds its own address and TCP becomes Multipath TCP, one subflow per interface) or
    /// `"none"` (the same addresses, plain TCP: a connection uses one interface). Empty
    /// means each bond's own mode.
    #[serde(default)]
    #[schemars(with = "Vec<NodeMultipath>")]
    pub modes: Vec<Spanned<NodeMultipath>>,
    /// How topologies that route through forwarding nodes use equally short paths, one
    /// configuration each: `"shortest"` (their routes, one per subnet, as the study had) or
    /// `"ecmp"` (every node also gets an address on `lo`, reached over every equal-cost next
    /// hop). Empty means `["shortest"]`.
    #[serde(default)]
    #[schemars(with = "Vec<Routing>")]
    pub routing: Vec<Spanned<Routing>>,
    /// What the kernel hashes to pick an ECMP next hop: `"l4"` (addresses and ports, the
    /// default: each connection on its own) or `"l3"` (addresses only: all flows between two
    /// nodes on one path). Set on every node (`net.ipv4.fib_multipath_hash_policy`).
    #[schemars(with = "Option<MultipathHash>")]
    pub hash: Option<Spanned<MultipathHash>>,
}

/// `[client, server]` with the spans of the pair and of each name.
pub type SpannedPair = Spanned<[Spanned<NodeName>; 2]>;

/// One kind of traffic and the sweep over it. Every count is capped (see `spec::limits`):
/// sizes up to the worker's message limit (64 MiB; 65507 bytes over UDP), at most 1024 sizes
/// and pair counts, 1000 repetitions, 100 million exchanges, runs of 24 h, and 100000 points
/// per plan.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    #[schemars(with = "Pattern")]
    pub pattern: Spanned<Pattern>,
    #[serde(default)]
    pub protocol: Protocol,
    /// Message sizes: a list, `{ from, to, factor }`, or `{ netpipe = true, from, to,
    /// perturbation }` for NetPIPE's schedule.
    #[schemars(with = "Sizes")]
    pub sizes: Spanned<Sizes>,
    /// Pair counts: a list, or `{ from, to }`.
    #[serde(default = "default_pairs")]
    #[schemars(with = "Counts")]
    pub pairs: Spanned<Counts>,
    /// Where pairs are placed.
    #[serde(default = "default_placement")]
    #[schemars(with = "Vec<PlacementKind>")]
    pub placement: Spanned<Vec<PlacementKind>>,
    /// Pairs given by hand as `[client, server]`; `pairs` then takes the first N of them.
    #[schemars(with = "Option<Vec<[NodeName; 2]>>")]
    pub explicit_pairs: Option<Spanned<Vec<SpannedPair>>>,
    /// Exchanges (or messages) per run.
    #[schemars(with = "Option<u64>")]
    pub exchanges: Option<Spanned<u64>>,
    /// Or a duration per run, e.g. "10s".
    #[schemars(with = "Option<String>")]
    pub duration: Option<Spanned<HumanDuration>>,
    /// With `exchanges` (token, pingpong, stream): each run goes on past the count until it
    /// has lasted this long, e.g. "2s", so that pairs started a few milliseconds apart
    /// overlap for most of their runs and short messages still give a long sample.
    #[schemars(with = "Option<String>")]
    pub min_duration: Option<Spanned<HumanDuration>>,
    /// Exchanges before measuring starts.
    #[serde(default = "no_warmup")]
    #[schemars(with = "u64")]
    pub warmup: Spanned<u64>,
    /// Runs per combination (6 by default: the fewest that give every cell a 95% interval).
    #[serde(default = "default_repetitions")]
    #[schemars(with = "u32")]
    pub repetitions: Spanned<u32>,
    /// How runs combine in the report: `best` (as the 1996 study did), `median`, `mean`.
    #[serde(default)]
    pub statistic: Statistic,
    /// Outstanding requests, for `pipeline`.
    #[schemars(with = "Option<u32>")]
    pub depth: Option<Spanned<u32>>,
    /// Offered load per pair, for `load`.
    #[schemars(with = "Option<Rate>")]
    pub rate: Option<Spanned<Rate>>,
    /// For `filecopy`: drop the page cache before each copy.
    #[serde(default)]
    pub drop_caches: bool,
    /// Collectives (`halo`, `alltoall`, `allreduce`, `bcast`): how many ranks, one per node;
    /// a list, or `{ from, to }`, to sweep. Collectives have ranks in place of `pairs`.
    #[schemars(with = "Option<Counts>")]
    pub ranks: Option<Spanned<Counts>>,
    /// Collectives with `placement = ["explicit"]`: the node of each rank, in rank order.
    #[schemars(with = "Option<Vec<NodeName>>")]
    pub rank_nodes: Option<Spanned<Vec<Spanned<NodeName>>>>,
    /// Collectives: timed iterations per run (or give `duration`; 100 if neither).
    #[schemars(with = "Option<u64>")]
    pub iterations: Option<Spanned<u64>>,
    /// Collectives: the algorithm, as Open MPI names it: allreduce `"ring"` (default) or
    /// `"recursive-doubling"`; alltoall `"pairwise"` (default) or `"linear"`; bcast
    /// `"binomial"`.
    #[schemars(with = "Option<String>")]
    pub algorithm: Option<Spanned<String>>,
    /// `halo`: the process grid, `"4x4"`; as square as the ranks allow by default.
    #[schemars(with = "Option<String>")]
    pub grid: Option<Spanned<String>>,
    /// `halo`: wrap the grid's edges into a torus.
    #[serde(default)]
    pub periodic: bool,
    /// `bcast`: the rank whose message everyone receives (0 by default).
    #[schemars(with = "Option<u32>")]
    pub root: Option<Spanned<u32>>,
    /// Collectives: who runs the ranks: `"worker"` (default, the tool's worker) or
    /// `"open-mpi"` (Open MPI's own collectives through mpi4py, started with `mpirun` over the
    /// cluster's SSH, on the experiment's wires only, with the same algorithm), to compare the
    /// two on the same cluster.
    #[schemars(with = "Option<String>")]
    pub implementation: Option<Spanned<String>>,
}

impl WorkloadSpec {
    /// The workload's pattern, without where it is written.
    pub fn pattern(&self) -> Pattern {
        *self.pattern.get_ref()
    }
}

fn no_warmup() -> Spanned<u64> {
    Spanned::new(0..0, 0)
}

fn default_pairs() -> Spanned<Counts> {
    Spanned::new(0..0, Counts(vec![1]))
}

fn default_placement() -> Spanned<Vec<PlacementKind>> {
    Spanned::new(0..0, vec![PlacementKind::LocalWire])
}

/// Six: the fewest repetitions whose order statistics give the median a 95% interval
/// (`report::stats`), so a cell measured with the defaults has one.
fn default_repetitions() -> Spanned<u32> {
    Spanned::new(0..0, 6)
}

pub use super::traffic::{Pattern, PlacementKind, Protocol};

/// The statistic a run reports as its headline figure.
#[derive(
    Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Statistic {
    /// Best of the repetitions, as the 1996 study reported.
    Best,
    /// Median of the repetitions, with a distribution-free 95% confidence interval.
    #[default]
    Median,
    /// Arithmetic mean of the repetitions.
    Mean,
}

impl Statistic {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Best => "best",
            Self::Median => "median",
            Self::Mean => "mean",
        }
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportSpec {
    /// The topology others are compared against.
    #[schemars(with = "Option<Name>")]
    pub baseline: Option<Spanned<Name>>,
    #[serde(default = "default_formats")]
    pub formats: Vec<ReportFormat>,
    /// NetPIPE tables (classic five-column output) drawn beside the run's ping-pong and stream
    /// curves: `netpipe = [{ name = "BEAM Ltd 1999", path = "data/beam-1999-netpipe-tcp.txt" }]`,
    /// paths relative to this file. The run keeps a copy of each.
    #[serde(default)]
    pub netpipe: Vec<NetpipeTableSpec>,
}

/// One NetPIPE table file to draw beside a run.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetpipeTableSpec {
    /// The legend's name for it.
    pub name: String,
    /// The file, relative to the experiment file.
    #[schemars(with = "String")]
    pub path: Spanned<String>,
}

/// The `[report] netpipe` tables of an experiment file and nothing else, so a report can read
/// them from a run's copy of the experiment.
#[derive(Debug, Default, Deserialize)]
pub struct NetpipeTablesOnly {
    #[serde(default)]
    pub report: NetpipeTablesOnlyReport,
}

#[derive(Debug, Default, Deserialize)]
pub struct NetpipeTablesOnlyReport {
    #[serde(default)]
    pub netpipe: Vec<NetpipeTableSpec>,
}

fn default_formats() -> Vec<ReportFormat> {
    vec![ReportFormat::Csv, ReportFormat::Markdown, ReportFormat::Svg]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReportFormat {
    Csv,
    Markdown,
    Svg,
    Png,
    Netpipe,
}

/// Message sizes as written.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[schemars(untagged)]
pub enum Sizes {
    List(Vec<ByteSize>),
    Range(SizeRange),
}

/// `{ from, to, factor }` (geometric), or `{ netpipe = true, from, to, perturbation }`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SizeRange {
    pub from: ByteSize,
    pub to: ByteSize,
    pub factor: Option<u32>,
    #[serde(default)]
    pub netpipe: bool,
    pub perturbation: Option<u64>,
}

/// Pair counts as written.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[schemars(untagged)]
pub enum CountsRepr {
    List(Vec<u32>),
    Range { from: u32, to: u32 },
}

/// Pair counts, expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts(pub Vec<u32>);

impl JsonSchema for Counts {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Counts".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        CountsRepr::json_schema(g)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CountRange {
    from: u32,
    to: u32,
}

/// Deserializes "a list, or a table" without serde's untagged enums, whose errors say only
/// that nothing matched; this way the inner error (a bad size, an unknown key) comes through.
struct ListOrTable<T>(std::marker::PhantomData<T>, &'static str);

trait FromListOrTable: Sized {
    type Item: serde::de::DeserializeOwned;
    type Table: serde::de::DeserializeOwned;
    fn from_list(items: Vec<Self::Item>) -> Self;
    fn from_table(t: Self::Table) -> Result<Self, String>;
}

impl<'de, T: FromListOrTable> Visitor<'de> for ListOrTable<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.1)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        let items = Vec::<T::Item>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(T::from_list(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        let table = T::Table::deserialize(de::value::MapAccessDeserializer::new(map))?;
        T::from_table(table).map_err(de::Error::custom)
    }
}

impl FromListOrTable for Sizes {
    type Item = ByteSize;
    type Table = SizeRange;
    fn from_list(items: Vec<ByteSize>) -> Self {
        Sizes::List(items)
    }
    fn from_table(t: SizeRange) -> Result<Self, String> {
        Ok(Sizes::Range(t))
    }
}

impl<'de> Deserialize<'de> for Sizes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ListOrTable(
            Default::default(),
            "a list of sizes, { from, to, factor } or { netpipe = true, from, to }",
        ))
    }
}

impl FromListOrTable for Counts {
    type Item = u32;
    type Table = CountRange;
    fn from_list(items: Vec<u32>) -> Self {
        Counts(items)
    }
    fn from_table(t: CountRange) -> Result<Self, String> {
        if t.from > t.to {
            return Err(format!(
                "empty range: from = {} is above to = {}",
                t.from, t.to
            ));
        }
        // Bounded before it is expanded: `{ from = 1, to = 4000000000 }` is a typo, not a sweep.
        if t.to - t.from >= MAX_PAIR_COUNTS as u32 {
            return Err(format!(
                "the range from {} to {} sweeps {} pair counts; at most {MAX_PAIR_COUNTS} are allowed",
                t.from,
                t.to,
                u64::from(t.to - t.from) + 1
            ));
        }
        Ok(Counts((t.from..=t.to).collect()))
    }
}

impl<'de> Deserialize<'de> for Counts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ListOrTable(
            Default::default(),
            "a list of counts or { from, to }",
        ))
    }
}
