//! One rank's run: connect to the others, wait for the go, then every size as the OSU
//! micro-benchmarks time a collective (each iteration timed on its own, an untimed barrier
//! after each), and one record per size on stdout.

use std::io::Write;
use std::time::{Duration, Instant};

use super::args::{Iterations, RankArgs};
use super::collective::Collective;
use super::comm::{Bufs, Comm};
use super::mesh;
use super::world::World;
use crate::auth::Secret;
use crate::error::{Result, WorkerError};
use crate::patterns::client_args::GoArg;
use crate::record::{Protocol, Record, Role};
use crate::session::{Stopwatch, unix_ns};
use crate::tcp_counters::{TcpCounters, TrialTcp};

/// The most timed iterations a duration may ask for, so that a pace misread from a very fast
/// warm-up cannot keep the ranks busy for hours.
const MAX_ITERATIONS: f64 = 10_000_000.0;

/// Runs this rank of `coll`; the process's exit status: 0, 1 after a failure (written as a
/// record with an `error`), 2 for a command line that cannot run.
pub fn run(args: &RankArgs, coll: &dyn Collective) -> i32 {
    let name = coll.pattern().as_str();
    if let Err(e) = args.validate() {
        eprintln!("orchestrate-worker {name}: {e}");
        return 2;
    }
    let world = World {
        rank: args.rank as usize,
        size: args.peers.len(),
    };
    let sizes = args.size_list().expect("validated");
    // What the collective cannot run is refused before any socket, as a bad option is.
    if let Some(why) = sizes.iter().find_map(|&s| coll.refuse(world, s as usize)) {
        eprintln!("orchestrate-worker {name}: {why}");
        return 2;
    }
    let mut at_size = sizes[0];
    match run_sizes(args, coll, world, &sizes, &mut at_size) {
        Ok(()) => 0,
        Err(e) => {
            let mut rec = record(args, coll, world, at_size);
            rec.error = Some(e.to_string());
            print(&rec);
            1
        }
    }
}

fn run_sizes(
    args: &RankArgs,
    coll: &dyn Collective,
    world: World,
    sizes: &[u64],
    at_size: &mut u64,
) -> Result<()> {
    let secret = Secret::from_env().map_err(|e| WorkerError::Usage(e.to_string()))?;
    let started = Instant::now();
    let links = mesh::connect_all(
        world,
        &args.listen_addrs(),
        &args.peers,
        &secret,
        Duration::from_secs_f64(args.connect_timeout),
    )?;
    let mut comm = Comm::new(world, links, Duration::from_secs_f64(args.timeout))?;
    if args.verbose {
        eprintln!(
            "rank {} of {}: connected to every rank in {:.3} s",
            world.rank,
            world.size,
            started.elapsed().as_secs_f64()
        );
    }
    if args.go == Some(GoArg::Stdin) {
        let ready = serde_json::json!({
            "ready": true,
            "pattern": coll.pattern(),
            "rank": world.rank,
            "ranks": world.size,
            "unix_ns": unix_ns(),
        });
        print_line(&ready.to_string());
        crate::client::wait_stdin_line(Duration::from_secs_f64(args.go_timeout))?;
    }
    for &size in sizes {
        *at_size = size;
        let rec = run_size(args, coll, &mut comm, size)?;
        print(&rec);
    }
    Ok(())
}

/// Warm-up, the timed iterations and the checked one at one size.
fn run_size(args: &RankArgs, coll: &dyn Collective, comm: &mut Comm, size: u64) -> Result<Record> {
    let world = comm.world;
    let bytes = size as usize;
    let mut bufs = Bufs::new(coll.buffers(world, bytes));
    coll.fill(world, bytes, &mut bufs);
    comm.barrier(&mut bufs)?;

    let iterations = args.iterations();
    // A duration is counted from the warm-up's pace: at least one iteration of it.
    let warmup = match iterations {
        Iterations::Duration(_) => args.warmup.max(1),
        Iterations::Count(_) => args.warmup,
    };
    let warm = Instant::now();
    for _ in 0..warmup {
        coll.iterate(comm, bytes, &mut bufs)?;
        comm.barrier(&mut bufs)?;
    }
    let pace = warm.elapsed().as_secs_f64() / warmup.max(1) as f64;
    let count = match iterations {
        Iterations::Count(n) => n,
        Iterations::Duration(s) => {
            let mine = (s / pace.max(1e-9)).ceil().clamp(1.0, MAX_ITERATIONS) as u64;
            comm.share_from_first(mine, &mut bufs)?
        }
    };
    if args.verbose && world.rank == 0 {
        eprintln!(
            "{} {size} B: {warmup} warm-up iterations at {:.1} µs each, {count} timed",
            coll.pattern().as_str(),
            pace * 1e6
        );
    }

    let mut times = Vec::with_capacity(count as usize);
    let tcp: Vec<Option<TrialTcp>> = comm.links().map(TrialTcp::start).collect();
    comm.take_sent();
    let watch = Stopwatch::start();
    for _ in 0..count {
        let t0 = Instant::now();
        coll.iterate(comm, bytes, &mut bufs)?;
        times.push(t0.elapsed().as_nanos() as u64);
        comm.barrier(&mut bufs)?;
    }
    let (start, end, _) = watch.stop();
    let sent = comm.take_sent();
    let counters = sum_counters(comm, &tcp);

    // The checked iteration, untimed: fresh input, the output cleared, one run.
    coll.fill(world, bytes, &mut bufs);
    coll.iterate(comm, bytes, &mut bufs)?;
    comm.take_sent();
    if let Err(e) = coll.check(world, bytes, &bufs) {
        return Err(WorkerError::Protocol(format!(
            "rank {}: the {} of {size} B gave a wrong result: {e}",
            world.rank,
            coll.pattern().as_str()
        )));
    }
    comm.barrier(&mut bufs)?;

    let mut rec = record(args, coll, world, size);
    rec.messages = count;
    rec.bytes = sent;
    rec.start_unix_ns = start;
    rec.end_unix_ns = end;
    rec.elapsed_ns = times.iter().sum();
    let us = |ns: u64| ns as f64 / 1e3;
    rec.latency_us = Some(us(rec.elapsed_ns) / count as f64);
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    rec.latency_p50_us = Some(us(at(0.5)));
    rec.latency_p90_us = Some(us(at(0.9)));
    rec.latency_p99_us = Some(us(at(0.99)));
    rec.latency_max_us = times.last().map(|&t| us(t));
    rec.tcp_retrans = counters.map(|c| c.retrans);
    rec.tcp_reord_seen = counters.map(|c| c.reord_seen);
    rec.tcp_dsack_dups = counters.map(|c| c.dsack_dups);
    rec.tcp_rcv_ooopack = counters.map(|c| c.rcv_ooopack);
    Ok(rec)
}

/// A record of this rank at `size`, its figures still to be filled in.
fn record(args: &RankArgs, coll: &dyn Collective, world: World, size: u64) -> Record {
    let mut rec = Record::new(coll.pattern(), Protocol::Tcp, Role::Rank);
    rec.local_addr = args.listen_addrs().join(",");
    rec.size_bytes = size;
    rec.rank = Some(world.rank as u32);
    rec.ranks = Some(world.size as u32);
    rec.algorithm = Some(coll.algorithm(world, size as usize));
    rec
}

/// This rank's connections' events summed (retransmissions, reorderings, out-of-order
/// arrivals); the states at the end (round trip, window) differ per connection and are left
/// out. `None` if the kernel would not say for some connection.
fn sum_counters(comm: &Comm, start: &[Option<TrialTcp>]) -> Option<TcpCounters> {
    let mut sum = TcpCounters::default();
    for (link, s) in comm.links().zip(start) {
        let c = s.as_ref()?.counters(link)?;
        sum.retrans += c.retrans;
        sum.reord_seen += c.reord_seen;
        sum.dsack_dups += c.dsack_dups;
        sum.rcv_ooopack += c.rcv_ooopack;
    }
    Some(sum)
}

fn print(rec: &Record) {
    print_line(&serde_json::to_string(rec).expect("a record serializes"));
}

fn print_line(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
