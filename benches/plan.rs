//! Times planning: loading, resolving and path-checking the study's five topologies, then
//! expanding grid4x4's sweep over them with placements and every node's scripts.
//! Run with `cargo bench --bench plan`.

use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    let exp = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/five-topologies.toml");
    let runs = 20;
    let mut times: Vec<Duration> = Vec::with_capacity(runs);
    let mut points = 0;
    for _ in 0..runs {
        let start = Instant::now();
        let e = orchestrate::plan::load(&exp).expect("the bench experiment loads");
        let plan = orchestrate::plan::expand(&e).expect("the bench experiment plans");
        times.push(start.elapsed());
        points = plan.points.len();
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "plan: 5 topologies x grid4x4 sweep ({points} points), {runs} runs: min {:.1} ms, median {:.1} ms, max {:.1} ms",
        ms(times[0]),
        ms(times[runs / 2]),
        ms(times[runs - 1])
    );
}
