//! Time to run a trivial command on every node of an inventory over warm connections, as the
//! runner does between points. `scripts/bench-exec` runs it beside pdsh and clush.
//! Usage: ORCHESTRATE_BENCH_INVENTORY=path/to/inventory.toml cargo bench --bench exec

use std::time::{Duration, Instant};

use orchestrate::remote::{ConnectOptions, Inventory, Sessions};

fn main() {
    let Some(path) = std::env::var_os("ORCHESTRATE_BENCH_INVENTORY") else {
        eprintln!("set ORCHESTRATE_BENCH_INVENTORY to an inventory file (scripts/bench-exec does)");
        return;
    };
    let runs: usize = std::env::var("ORCHESTRATE_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10);
    let inv = Inventory::load(std::path::Path::new(&path)).expect("inventory loads");
    let nodes: Vec<_> = inv.hosts.keys().cloned().collect();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let cluster = Sessions::connect(&inv, &nodes, &ConnectOptions::default()).await.expect("connects");
        // Warm: one round first.
        cluster.run_all("true", Duration::from_secs(30)).await;
        let mut times = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            for (n, r) in cluster.run_all("true", Duration::from_secs(30)).await {
                r.unwrap_or_else(|e| panic!("{n}: {e}"));
            }
            times.push(t.elapsed());
        }
        times.sort();
        println!(
            "orchestrate run_all true on {} nodes, warm, {runs} runs: min {:.3} s, median {:.3} s, max {:.3} s",
            nodes.len(),
            times[0].as_secs_f64(),
            times[runs / 2].as_secs_f64(),
            times[runs - 1].as_secs_f64()
        );
        cluster.close().await;
    });
}
