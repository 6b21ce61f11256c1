//! Measuring TCP goodput between nodes over SSH, as the controller would reach them, with the
//! worker's `stream` pattern: the receiving server times the blocks as they arrive, after a
//! short untimed warm-up, so the figure is what crossed the wire, not what the sender wrote
//! into socket buffers and a deep queue.

use std::time::Duration;

use serde::Serialize;

use super::error::{Error, Result};
use super::inventory::Host;
use super::ssh;

/// One measured flow.
#[derive(Debug, Clone, Serialize)]
pub struct Flow {
    pub from: String,
    pub to: String,
    pub mbit_s: f64,
}

/// A tested interface with its temporary address.
pub struct Station<'a> {
    pub node: &'a str,
    pub host: &'a Host,
    pub ifname: &'a str,
    pub addr: String,
}

/// Block size of the measuring stream.
const BLOCK: &str = "64K";
/// Untimed blocks first, so slow start and the queue's filling are not measured.
const WARMUP_BLOCKS: u32 = 8;

/// Runs the flows at once (one worker server per flow, started first) and returns each
/// receiver's goodput.
pub fn measure(flows: &[(&Station, &Station, u16)], seconds: u32) -> Result<Vec<Flow>> {
    let files = |port: u16| {
        (
            format!("/tmp/orchestrate-verify-{port}.log"),
            format!("/tmp/orchestrate-verify-{port}.pid"),
        )
    };
    for (_, to, port) in flows {
        let (log, pid) = files(*port);
        ssh::command(
            to.host,
            &format!("starting a worker server on {}", to.node),
            // Returns once the server listens, or fails with what it logged.
            &format!(
                "rm -f {log} {pid}; nohup orchestrate-worker serve --listen {addr}:{port} >{log} 2>&1 </dev/null & \
                 echo $! >{pid}; for i in $(seq 50); do grep -q listening {log} && exit 0; sleep 0.1; done; \
                 echo 'the worker server is not listening:' >&2; cat {log} >&2; exit 1",
                addr = to.addr,
            ),
        )
        .timeout(Duration::from_secs(20))
        .run()?;
    }
    let outputs: Vec<Result<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = flows
            .iter()
            .map(|(from, to, port)| {
                s.spawn(move || {
                    let remote = format!(
                        "orchestrate-worker stream --connect {}:{port} --size {BLOCK} --duration {seconds} \
                         --warmup {WARMUP_BLOCKS} --trials 1",
                        to.addr
                    );
                    ssh::command(from.host, &format!("sending {} -> {}", from.node, to.node), &remote)
                        .timeout(Duration::from_secs(u64::from(seconds) + 60))
                        .run()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("sending thread"))
            .collect()
    });
    let mut out = Vec::new();
    for ((from, to, port), sent) in flows.iter().zip(outputs) {
        // Stop the server whatever happened to the client.
        let (log, pid) = files(*port);
        let _ = ssh::command(
            to.host,
            &format!("stopping the worker server on {}", to.node),
            &format!("kill $(cat {pid}) 2>/dev/null; rm -f {log} {pid}"),
        )
        .timeout(Duration::from_secs(20))
        .run();
        let records = sent?;
        out.push(Flow {
            from: format!("{}:{}", from.node, from.ifname),
            to: format!("{}:{}", to.node, to.ifname),
            mbit_s: receiver_goodput(&records, &format!("stream {} -> {}", from.node, to.node))?,
        });
    }
    Ok(out)
}

/// The receiving server's rate from the worker's records (one JSON object per line), Mbit/s.
fn receiver_goodput(records: &str, command: &str) -> Result<f64> {
    let unexpected = |detail: String| Error::Unexpected {
        what: "reading the worker's stream records".into(),
        command: command.into(),
        detail,
    };
    let mut rate = None;
    for line in records.lines().filter(|l| l.starts_with('{')) {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| unexpected(e.to_string()))?;
        if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
            return Err(unexpected(e.to_owned()));
        }
        if v.get("role").and_then(|r| r.as_str()) == Some("server") {
            rate = v.get("throughput_mbit_s").and_then(|t| t.as_f64());
        }
    }
    rate.ok_or_else(|| unexpected("no receiver record".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_receivers_record_gives_the_rate_and_errors_are_reported() {
        let ok = "{\"ready\":true}\n{\"role\":\"client\",\"throughput_mbit_s\":12.0}\n{\"role\":\"server\",\"throughput_mbit_s\":9.4}\n";
        assert!((receiver_goodput(ok, "x").unwrap() - 9.4).abs() < 1e-12);
        let e = receiver_goodput(
            "{\"role\":\"client\",\"error\":\"connection refused\"}\n",
            "x",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("connection refused"), "{e}");
        assert!(receiver_goodput("", "x").is_err());
    }
}
