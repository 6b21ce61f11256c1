//! The contract between the controller and the worker: every way to start
//! `orchestrate-worker`, as typed values. The worker parses its command line into an
//! [`Invocation`]; the controller builds one and starts the worker with its [`to_args`], so
//! the two sides cannot drift apart (the round-trip tests below hold them together).
//!
//! Each pattern's options live in its file under [`crate::patterns`], `serve`'s in
//! [`crate::serve_args`], the bond's in [`crate::bond`].
//!
//! [`to_args`]: Invocation::to_args

use clap::{Parser, Subcommand};

use crate::bond::{self, BondArgs};
use crate::patterns::allreduce::AllreduceArgs;
use crate::patterns::alltoall::AlltoallArgs;
use crate::patterns::bcast::BcastArgs;
use crate::patterns::filecopy::FilecopyArgs;
use crate::patterns::halo::HaloArgs;
use crate::patterns::load::LoadArgs;
use crate::patterns::pingpong::PingpongArgs;
use crate::patterns::pipeline::PipelineArgs;
use crate::patterns::stream::StreamArgs;
use crate::patterns::token::TokenArgs;
use crate::serve_args::ServeArgs;

const ABOUT: &str = "Traffic worker for orchestrate: measurement patterns between cluster nodes";

const LONG_ABOUT: &str = "\
Traffic worker for orchestrate: measurement patterns between cluster nodes.

Run `orchestrate-worker serve --listen ADDR:PORT` once on every node; it serves any number of
concurrent sessions from any number of peers that hold the same secret. Clients run one
pattern against a server:

  orchestrate-worker <pattern> --connect HOST:PORT [pattern options] [--go stdin | --start-at NS]

and print one JSON record per trial and side on stdout (role \"client\" and role \"server\", the
latter being what the server counted, returned over the session). `--format netpipe` prints
NetPIPE's classic columns instead (pingpong, stream). `--verbose` also says on stderr how the
run goes: each size's warm-up, and each trial as it starts and ends.

Start barrier: with `--go stdin` the client connects, completes the handshake, prints one line
{\"ready\":true,...} and starts when a line arrives on stdin; with `--start-at UNIX_NS` it
starts at that wall-clock time. Every record carries wall-clock start/end (Unix ns) and a
monotonic elapsed time.

Servers and clients take the run's secret, 64 hex digits, from the environment variable
ORCHESTRATE_WORKER_SECRET (never from the command line, which every user can see); a session
starts only once each side has proved it holds the same secret. The controller passes it
through the agent; by hand, `export ORCHESTRATE_WORKER_SECRET=$(openssl rand -hex 32)`.

Failures (dead peer, reset, timeout, garbage, version mismatch, wrong secret) end in one record
with an `error` field and exit status 1.";

const RANKS_ABOUT: &str = "\
One rank of a collective run by N ranks, one worker process each (as MPI processes are).

Start the same collective once per rank, each with its own --rank and with --peers listing, in
rank order, where this rank reaches every rank (its own entry is where it listens unless
--listen says otherwise). The ranks connect all to all, proving the run's secret
(ORCHESTRATE_WORKER_SECRET) to each other; with `--go stdin` each prints {\"ready\":true,...}
once connected and starts on a line from stdin.

Per size, as the OSU micro-benchmarks time collectives: --warmup untimed iterations, then the
timed ones (--iterations N, or --duration SECS, counted by rank 0 from its warm-up's pace and
shared), each timed on its own with an untimed barrier after it, then one iteration whose
result every rank checks. Each rank prints one JSON record per size (role \"rank\"): latency_us
is its mean time per iteration, with percentiles over its iterations; the figure OSU prints
is the mean of latency_us over the ranks.

Example, four ranks on one machine (one shell each, the same secret exported):
  orchestrate-worker allreduce --rank 0 --peers 127.0.0.1:7300,127.0.0.1:7301,127.0.0.1:7302,127.0.0.1:7303 --size 1KiB
  ... --rank 1, 2, 3 with the same --peers";

/// The worker's whole command line: `orchestrate-worker <invocation>`.
#[derive(Parser, Debug)]
#[command(name = "orchestrate-worker", version, about = ABOUT, long_about = LONG_ABOUT)]
pub struct Cli {
    #[command(subcommand)]
    pub invocation: Invocation,
}

/// One way to start the worker, with its options.
#[derive(Subcommand, Debug, Clone, PartialEq)]
pub enum Invocation {
    /// Serve sessions from any number of clients until SIGINT/SIGTERM.
    Serve(ServeArgs),
    /// NetPIPE ping-pong: latency (half round trip) and throughput over NetPIPE's block sizes.
    Pingpong(PingpongArgs),
    /// NetPIPE streaming: blocks sent back to back, timed by the receiving server.
    Stream(StreamArgs),
    /// The 1996 study's token exchange: throughput = tokens × size / elapsed, one record per run.
    Token(TokenArgs),
    /// Request/response with DEPTH requests outstanding: time per message, messages per second.
    Pipeline(PipelineArgs),
    /// Open-loop load at an offered rate: achieved throughput, loss (UDP), latency percentiles.
    Load(LoadArgs),
    /// The 1996 study's Disk/Net Balance test: file read, sent, written and fsynced remotely.
    Filecopy(FilecopyArgs),
    /// Collective, one rank of N: halo exchange with the 4 neighbours on a 2-D process grid.
    #[command(long_about = RANKS_ABOUT)]
    Halo(HaloArgs),
    /// Collective, one rank of N: every rank sends a message to every other.
    #[command(long_about = RANKS_ABOUT)]
    Alltoall(AlltoallArgs),
    /// Collective, one rank of N: the sum of every rank's vector of floats, at every rank.
    #[command(long_about = RANKS_ABOUT)]
    Allreduce(AllreduceArgs),
    /// Collective, one rank of N: one rank's message to every other, down a binomial tree.
    #[command(long_about = RANKS_ABOUT)]
    Bcast(BcastArgs),
    /// Print facts about this node as JSON (kernel, interfaces, qdiscs, bonding, netem, tun, ...).
    Probe,
    /// Be driven by the controller over one long-lived channel: JSON requests on stdin (spawn a
    /// worker command, feed it a line, kill it, read the clock), JSON events on stdout. Every
    /// child stops when stdin closes.
    Agent,
    /// Userspace channel bonding over TUN, for nodes without the kernel's bonding driver.
    #[command(long_about = bond::LONG_ABOUT)]
    Bond(BondArgs),
}

impl Invocation {
    /// The worker's arguments (after the program name) that start this invocation.
    pub fn to_args(&self) -> Vec<String> {
        match self {
            Invocation::Serve(a) => a.to_args(),
            Invocation::Pingpong(a) => a.to_args(),
            Invocation::Stream(a) => a.to_args(),
            Invocation::Token(a) => a.to_args(),
            Invocation::Pipeline(a) => a.to_args(),
            Invocation::Load(a) => a.to_args(),
            Invocation::Filecopy(a) => a.to_args(),
            Invocation::Halo(a) => a.to_args(),
            Invocation::Alltoall(a) => a.to_args(),
            Invocation::Allreduce(a) => a.to_args(),
            Invocation::Bcast(a) => a.to_args(),
            Invocation::Probe => vec!["probe".to_owned()],
            Invocation::Agent => vec!["agent".to_owned()],
            Invocation::Bond(a) => a.to_args(),
        }
    }

    /// Parses the worker's arguments (after the program name), as the worker does.
    pub fn try_parse_args<I, T>(args: I) -> Result<Invocation, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let argv = std::iter::once(std::ffi::OsString::from("orchestrate-worker"))
            .chain(args.into_iter().map(Into::into));
        Cli::try_parse_from(argv).map(|c| c.invocation)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::bond::mode::{BondMode, XmitHashPolicy};
    use crate::output::Format;
    use crate::patterns::client_args::{Common, Counting, GoArg, Schedule, Sizes};
    use crate::record::Protocol;

    const PROTOCOLS: [Protocol; 3] = [Protocol::Tcp, Protocol::Udp, Protocol::Mptcp];

    fn round_trips(inv: Invocation) {
        let args = inv.to_args();
        let back = Invocation::try_parse_args(&args)
            .unwrap_or_else(|e| panic!("{args:?} does not parse: {e}"));
        assert_eq!(back, inv, "{args:?}");
    }

    /// The shared client options: all at their defaults, and every one set.
    fn commons() -> [Common; 2] {
        [
            Common::new("10.111.0.2:7171"),
            Common {
                trials: Some(3),
                warmup: Some(0),
                go: Some(GoArg::Stdin),
                go_timeout: 12.5,
                timeout: 0.75,
                connect_timeout: 2.0,
                format: Format::Netpipe,
                verbose: true,
                protocol_version: 1,
                ..Common::new("[fd00::1]:7171")
            },
        ]
    }

    fn sizes() -> [Sizes; 3] {
        [
            Sizes::default(),
            Sizes::one(65536),
            Sizes {
                size: None,
                sizes: Some(vec![1, 1024, 3 << 20]),
            },
        ]
    }

    fn countings() -> [Counting; 5] {
        [
            Counting::default(),
            Counting {
                exchanges: Some(5000),
                duration: None,
                min_duration: None,
            },
            Counting {
                exchanges: Some(200),
                duration: None,
                min_duration: Some(2.0),
            },
            Counting {
                exchanges: None,
                duration: Some(3.0),
                min_duration: None,
            },
            // Finer than a millisecond: written in full.
            Counting {
                exchanges: None,
                duration: Some(0.000_25),
                min_duration: None,
            },
        ]
    }

    fn schedules() -> [Schedule; 2] {
        [
            Schedule::default(),
            Schedule {
                start: 64,
                end: 1 << 20,
                perturbation: 0,
            },
        ]
    }

    #[test]
    fn every_client_pattern_round_trips() {
        for protocol in PROTOCOLS {
            for common in commons() {
                for sizes in sizes() {
                    for counting in countings() {
                        for schedule in schedules() {
                            round_trips(Invocation::Pingpong(PingpongArgs {
                                common: common.clone(),
                                sizes: sizes.clone(),
                                schedule: schedule.clone(),
                                counting: counting.clone(),
                                trial_time: 0.5,
                                protocol,
                            }));
                            round_trips(Invocation::Stream(StreamArgs {
                                common: common.clone(),
                                sizes: sizes.clone(),
                                schedule,
                                counting: counting.clone(),
                                trial_time: crate::patterns::stream::DEFAULT_TRIAL_TIME_S,
                                protocol,
                            }));
                        }
                        round_trips(Invocation::Token(TokenArgs {
                            common: common.clone(),
                            sizes: sizes.clone(),
                            counting: counting.clone(),
                            protocol,
                        }));
                        for depth in [1, 16] {
                            round_trips(Invocation::Pipeline(PipelineArgs {
                                common: common.clone(),
                                sizes: sizes.clone(),
                                counting: counting.clone(),
                                depth,
                                protocol,
                            }));
                        }
                        for rate in [None, Some("100mbit"), Some("20000")] {
                            round_trips(Invocation::Load(LoadArgs {
                                common: common.clone(),
                                sizes: sizes.clone(),
                                counting: counting.clone(),
                                rate: rate.map(str::to_owned),
                                protocol,
                            }));
                        }
                    }
                }
                for (file, dir, drop_cache) in [
                    (None, None, false),
                    (Some("/data/src.bin"), Some("/scratch"), true),
                ] {
                    round_trips(Invocation::Filecopy(FilecopyArgs {
                        common: common.clone(),
                        file: file.map(PathBuf::from),
                        size: 2 << 20,
                        dir: dir.map(PathBuf::from),
                        drop_cache,
                        protocol,
                    }));
                }
            }
        }
    }

    #[test]
    fn every_collective_round_trips() {
        use crate::patterns::allreduce::AllreduceAlgorithm;
        use crate::patterns::alltoall::AlltoallAlgorithm;
        use crate::patterns::halo::Grid;
        use crate::ranks::RankArgs;

        let peers = vec!["10.111.0.1:7300".to_owned(), "10.112.0.2:7300".to_owned()];
        let plain = RankArgs {
            sizes: Sizes::one(8),
            ..RankArgs::new(0, peers.clone())
        };
        let everything = RankArgs {
            listen: vec!["10.111.0.2:7300".into(), "10.112.0.2:7300".into()],
            sizes: Sizes {
                size: None,
                sizes: Some(vec![8, 1024, 65536]),
            },
            iterations: None,
            duration: Some(2.5),
            warmup: 3,
            go: Some(GoArg::Stdin),
            go_timeout: 12.5,
            timeout: 0.75,
            connect_timeout: 2.0,
            verbose: true,
            ..RankArgs::new(1, peers)
        };
        let counted = RankArgs {
            iterations: Some(400),
            ..plain.clone()
        };
        for ranks in [plain, everything, counted] {
            for algorithm in [
                AllreduceAlgorithm::Ring,
                AllreduceAlgorithm::RecursiveDoubling,
            ] {
                round_trips(Invocation::Allreduce(AllreduceArgs {
                    ranks: ranks.clone(),
                    algorithm,
                }));
            }
            for algorithm in [AlltoallAlgorithm::Pairwise, AlltoallAlgorithm::Linear] {
                round_trips(Invocation::Alltoall(AlltoallArgs {
                    ranks: ranks.clone(),
                    algorithm,
                }));
            }
            for root in [0, 1] {
                round_trips(Invocation::Bcast(BcastArgs {
                    ranks: ranks.clone(),
                    root,
                }));
            }
            for (grid, periodic) in [(None, false), (Some(Grid { rows: 2, cols: 1 }), true)] {
                round_trips(Invocation::Halo(HaloArgs {
                    ranks: ranks.clone(),
                    grid,
                    periodic,
                }));
            }
        }
    }

    #[test]
    fn a_start_time_round_trips() {
        round_trips(Invocation::Token(TokenArgs {
            common: Common {
                start_at: Some(1_700_000_000_000_000_000),
                ..Common::new("10.111.0.2:7171")
            },
            sizes: Sizes::default(),
            counting: Counting::default(),
            protocol: Protocol::Tcp,
        }));
    }

    #[test]
    fn serve_round_trips() {
        let plain = ServeArgs::new(vec!["10.111.0.2:7171".into()]);
        round_trips(Invocation::Serve(plain.clone()));
        round_trips(Invocation::Serve(ServeArgs {
            listen: vec!["10.111.0.2:7171".into(), "10.112.0.2:7171".into()],
            max_sessions: 8,
            max_pending: 16,
            records: true,
            spool_dir: Some("/run/orchestrate/private".into()),
            max_file_bytes: 1 << 20,
            max_spool_bytes: 4 << 20,
            auth_timeout: 0.25,
            handshake_timeout: 3.5,
            max_idle: 60.0,
            protocol_version: 1,
        }));
    }

    #[test]
    fn probe_agent_and_bond_round_trip() {
        round_trips(Invocation::Probe);
        round_trips(Invocation::Agent);
        let bond = BondArgs {
            name: "bond0".into(),
            address: "10.111.0.5/24".into(),
            mode: BondMode::BalanceRr,
            slaves: vec!["eth1".into(), "eth2".into()],
            miimon: None,
            primary: None,
            xmit_hash_policy: None,
            stats_file: None,
        };
        round_trips(Invocation::Bond(bond.clone()));
        round_trips(Invocation::Bond(BondArgs {
            mode: BondMode::ActiveBackup,
            miimon: Some(100),
            primary: Some("eth2".into()),
            stats_file: Some("/run/bond0.stats".into()),
            ..bond.clone()
        }));
        round_trips(Invocation::Bond(BondArgs {
            mode: BondMode::BalanceXor,
            miimon: Some(0),
            xmit_hash_policy: Some(XmitHashPolicy::Layer3And4),
            ..bond
        }));
    }

    /// What the controller has always started its clients and servers with.
    #[test]
    fn the_controllers_lines_read_as_before() {
        let token = TokenArgs {
            common: Common {
                trials: Some(1),
                warmup: Some(20),
                go: Some(GoArg::Stdin),
                ..Common::new("10.111.0.6:7171")
            },
            sizes: Sizes::one(4),
            counting: Counting {
                exchanges: Some(1000),
                duration: None,
                min_duration: None,
            },
            protocol: Protocol::Tcp,
        };
        assert_eq!(
            Invocation::Token(token).to_args().join(" "),
            "token --connect 10.111.0.6:7171 --size 4 --exchanges 1000 --trials 1 --warmup 20 \
             --protocol tcp --go stdin"
        );
        let serve = ServeArgs {
            spool_dir: Some("/tmp/o/private".into()),
            ..ServeArgs::new(vec!["10.111.0.1:7171".into(), "10.112.0.1:7171".into()])
        };
        assert_eq!(
            serve.to_args().join(" "),
            "serve --listen 10.111.0.1:7171 --listen 10.112.0.1:7171 --spool-dir /tmp/o/private"
        );
    }
}
