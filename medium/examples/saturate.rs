//! Prints the simulated throughput of N saturated stations: `cargo run -p orchestrate-medium
//! --example saturate`.
use orchestrate_medium::sim::{Saturation, metcalfe_boggs_efficiency, saturate};

fn main() {
    for len in [60u32, 1532] {
        for n in [1usize, 2, 4, 8, 16, 24] {
            let r = saturate(&Saturation {
                stations: n,
                frame_lens: vec![len],
                rate_bps: 10_000_000,
                collision_window_ns: 2_000,
                turnaround_ns: std::env::args()
                    .nth(1)
                    .map_or(19_200, |a| a.parse().unwrap()),
                queue_limit: 4,
                duration: 5_000_000_000,
                seed: 1,
            });
            let p = f64::from(len + 4 + 8) * 8.0 + 96.0;
            println!(
                "{len:>5} B x{n:>2}: {:.2} Mbit/s frames, util {:.3}, coll/frame {:.3}, fair {:.3}, M-B {:.3}",
                r.frame_mbit_s(),
                r.utilisation(),
                r.counters.collisions_per_frame(),
                r.fairness(),
                metcalfe_boggs_efficiency(n, p, 512.0) * f64::from(len + 4) * 8.0 / p * 10.0
            );
        }
    }
}
