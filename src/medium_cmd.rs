//! `orchestrate medium`: the Ethernet medium emulator's commands — `simulate` (the MAC model
//! in simulated time, to check it against published measurements) and the hidden `serve`
//! (the real-time emulator process a virtual cluster runs).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use orchestrate_medium::config::{DEFAULT_COLLISION_WINDOW_NS, MediumConfig};
use orchestrate_medium::realtime::{self, Timing};
use orchestrate_medium::sim::{Saturation, metcalfe_boggs_efficiency, saturate};
use orchestrate_medium::time::{FCS_BYTES, IFG_BITS, PREAMBLE_BYTES, SLOT_BITS, WireClock};

#[derive(Subcommand)]
pub enum MediumCommand {
    /// Saturate one simulated shared segment with N stations and print what it carries.
    ///
    /// Every station always has a frame ready (as in Boggs, Mogul & Kent's 1988 measurement);
    /// the run is deterministic per seed. Throughput counts frame bits (header, payload and
    /// FCS), as that paper plotted it; the Metcalfe & Boggs (1976) efficiency formula, with a
    /// contention slot of 512 bit times (51.2 µs at 10 Mbit/s, 5.12 µs at 100), is printed
    /// beside it as the floor it is.
    Simulate(SimulateArgs),
    /// Run the real-time emulator on a virtual cluster's ports (started by `cluster up`).
    #[command(hide = true)]
    Serve {
        #[arg(long)]
        config: PathBuf,
        #[arg(long)]
        socket: PathBuf,
        /// Stay SCHED_OTHER instead of asking for SCHED_FIFO.
        #[arg(long)]
        no_fifo: bool,
        /// Keep the event thread on this CPU (`cluster up` steers the nodes' receive work to
        /// the others).
        #[arg(long)]
        cpu: Option<usize>,
    },
}

#[derive(Args)]
pub struct SimulateArgs {
    /// Numbers of saturated stations.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,24")]
    stations: Vec<usize>,
    /// Frame lengths on the wire, FCS included, 64 to 1536 bytes (1536 is Boggs et al.'s long
    /// packet). Each size is its own run.
    #[arg(long, value_delimiter = ',', default_value = "64,1536")]
    frames: Vec<u32>,
    /// Segment rate, spelt as in a topology ("10mbit", "10 Mbit/s", "100Mbit"), or a bare
    /// number of bit/s.
    #[arg(long, default_value = "10 Mbit/s", value_parser = bit_rate)]
    rate: u64,
    /// Simulated seconds per run.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Seeds the stations' backoff draws: the same seed gives the same run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the results as JSON lines.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: MediumCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        MediumCommand::Simulate(a) => simulate(&a),
        MediumCommand::Serve {
            config,
            socket,
            no_fifo,
            cpu,
        } => {
            let text = std::fs::read_to_string(&config)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", config.display()))?;
            let config: MediumConfig = serde_json::from_str(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", config.display()))?;
            let mut timing = Timing::default();
            if no_fifo {
                timing.fifo_priority = 0;
            }
            timing.cpu = cpu;
            realtime::run(&config, &socket, timing)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `--rate` by the one unit module, as topologies write rates; a bare number is bit/s, as
/// this flag took before it read units.
fn bit_rate(s: &str) -> Result<u64, String> {
    if let Ok(bits) = s.trim().parse::<u64>() {
        return Ok(bits);
    }
    orchestrate_worker::units::parse_bit_rate(s)
        .map(|bits| bits.round() as u64)
        .map_err(|e| e.to_string())
}

fn simulate(a: &SimulateArgs) -> anyhow::Result<ExitCode> {
    if let Some(bad) = a.frames.iter().find(|&&f| !(64..=1536).contains(&f)) {
        anyhow::bail!("--frames: {bad} is not an Ethernet frame length (64 to 1536 bytes)");
    }
    if a.rate < 8_000 {
        anyhow::bail!("--rate: {} bit/s is below 8 kbit/s", a.rate);
    }
    if a.stations.contains(&0) {
        anyhow::bail!("--stations: a segment needs at least one station");
    }
    if !(a.seconds > 0.0 && a.seconds <= 3600.0) {
        anyhow::bail!("--seconds: between 0 and 3600 simulated seconds");
    }
    if !a.json {
        println!(
            "{:>6} {:>8} {:>12} {:>12} {:>11} {:>9} {:>12}",
            "frame", "stations", "Mbit/s", "utilisation", "coll/frame", "fairness", "M-B Mbit/s"
        );
    }
    for &frame in &a.frames {
        for &n in &a.stations {
            let r = saturate(&Saturation {
                stations: n,
                frame_lens: vec![frame - FCS_BYTES as u32],
                rate_bps: a.rate,
                collision_window_ns: DEFAULT_COLLISION_WINDOW_NS,
                turnaround_ns: WireClock::new(a.rate).turnaround(),
                queue_limit: 4,
                duration: (a.seconds * 1e9) as u64,
                seed: a.seed,
            });
            // Metcalfe & Boggs count a frame's whole time on the wire as P.
            let p = f64::from(frame) * 8.0 + PREAMBLE_BYTES as f64 * 8.0 + IFG_BITS as f64;
            let mb = metcalfe_boggs_efficiency(n, p, SLOT_BITS as f64) * f64::from(frame) * 8.0 / p
                * a.rate as f64
                / 1e6;
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({
                        "frame_bytes": frame, "stations": n,
                        "mbit_s": r.frame_mbit_s(), "utilisation": r.utilisation(),
                        "collisions_per_frame": r.counters.collisions_per_frame(),
                        "excess_collision_drops": r.counters.excess_collision_drops,
                        "fairness": r.fairness(), "metcalfe_boggs_mbit_s": mb,
                    })
                );
            } else {
                println!(
                    "{frame:>6} {n:>8} {:>12.2} {:>12.3} {:>11.3} {:>9.3} {mb:>12.2}",
                    r.frame_mbit_s(),
                    r.utilisation(),
                    r.counters.collisions_per_frame(),
                    r.fairness()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
