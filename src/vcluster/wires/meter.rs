//! Measuring TCP goodput between nodes over SSH, as the controller would reach them.
//!
//! iperf3 in the node image stands in for the worker's streaming pattern until the worker has
//! one; only this module knows. Rates are the receiver's: bytes over time in its whole
//! one-second intervals once TCP has settled, the last left out (the sender's own figures count
//! what it wrote into socket buffers and a deep queue, not what crossed the wire).

use std::time::Duration;

use serde::Serialize;

use crate::remote::Host;
use crate::vcluster::error::{Error, Result};
use crate::vcluster::ssh;

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

/// Whole one-second intervals left out at the start of every flow: TCP's slow start, and the
/// tail drop that ends it in a deep shaper queue. The drop's recovery hands the receiver a
/// window of data held out of order at once, so the interval after it shows more than the
/// wire can carry (11.4 Mbit/s on a 10 Mbit/s wire measured with one interval left out), and
/// two streams in opposite directions, each queueing the other's ACKs behind its data, take
/// up to three seconds to reach their steady rate (8.0 and 8.4 Mbit/s averaged from the second
/// second, 9.15 each once settled).
const SETTLING_INTERVALS: usize = 3;

/// Runs the flows at once (one iperf3 server per flow, started first) and returns each
/// receiver's goodput over `seconds` once settled: bytes over time in the receiver's whole
/// one-second intervals, the first [`SETTLING_INTERVALS`] and the last left out. (The sender's
/// own figures count what it wrote into socket buffers and a deep queue, not what crossed the
/// wire.)
pub fn measure(flows: &[(&Station, &Station, u16)], seconds: u32) -> Result<Vec<Flow>> {
    let log = |port: u16| format!("/tmp/orchestrate-verify-{port}.json");
    for (_, to, port) in flows {
        // -1: serve one test and exit; the idle timeout ends it if the client never comes.
        ssh::command(
            to.host,
            &format!("starting an iperf3 server on {}", to.node),
            // Returns once the server listens, or fails with what it logged.
            &format!(
                "rm -f {log}; iperf3 -s -1 -D -J --logfile {log} -B {addr} -p {port} --idle-timeout 30 \
                 && for i in $(seq 30); do \
                      ss -ltnH | grep -q '{addr}:{port} ' && exit 0; sleep 0.1; \
                    done; echo 'the iperf3 server is not listening:' >&2; cat {log} >&2; exit 1",
                addr = to.addr,
                log = log(*port)
            ),
        )
        .timeout(Duration::from_secs(20))
        .run()?;
    }
    // The settling intervals and the last one are not counted.
    let total = seconds + SETTLING_INTERVALS as u32 + 1;
    let sent: Vec<Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = flows
            .iter()
            .map(|(from, to, port)| {
                s.spawn(move || {
                    let remote = format!(
                        "iperf3 -c {} -B {} -p {port} -t {total} --connect-timeout 3000 >/dev/null",
                        to.addr, from.addr
                    );
                    let what = format!("sending {} -> {}", from.node, to.node);
                    let mut attempt = 0;
                    loop {
                        attempt += 1;
                        match ssh::command(from.host, &what, &remote)
                            .timeout(Duration::from_secs(u64::from(total) + 40))
                            .run()
                        {
                            // The server may still be getting ready to listen.
                            Err(_) if attempt < 5 => std::thread::sleep(Duration::from_millis(300)),
                            Err(e) => return Err(e),
                            Ok(_) => return Ok(()),
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("sending thread"))
            .collect()
    });
    let mut out = Vec::new();
    for ((from, to, port), sent) in flows.iter().zip(sent) {
        // Read the receiver's report even when sending failed: it removes the log file.
        let remote = format!(
            "f={log}; for i in $(seq 50); do grep -q '\"end\"' $f 2>/dev/null && break; sleep 0.1; done; \
             cat $f; rm -f $f",
            log = log(*port)
        );
        let json = ssh::command(
            to.host,
            &format!("reading the receiver's report on {}", to.node),
            &remote,
        )
        .timeout(Duration::from_secs(30))
        .run()?;
        sent?;
        out.push(Flow {
            from: format!("{}:{}", from.node, from.ifname),
            to: format!("{}:{}", to.node, to.ifname),
            mbit_s: receiver_goodput(&json, &remote)?,
        });
    }
    Ok(out)
}

/// The receiver's bytes over time in its whole intervals, without the settling ones and the
/// last, in Mbit/s.
fn receiver_goodput(json: &str, command: &str) -> Result<f64> {
    let unexpected = |detail: String| Error::Unexpected {
        what: "reading iperf3's receiver report".into(),
        command: command.into(),
        detail,
    };
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| unexpected(e.to_string()))?;
    if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
        return Err(unexpected(e.to_owned()));
    }
    // (bytes, seconds) of each whole interval; iperf3 ends with a sliver of an interval whose
    // rate means nothing.
    let intervals: Vec<(f64, f64)> = v
        .get("intervals")
        .and_then(|i| i.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|i| {
                    let bytes = i.pointer("/sum/bytes").and_then(|b| b.as_f64())?;
                    let secs = i.pointer("/sum/seconds").and_then(|b| b.as_f64())?;
                    Some((bytes, secs))
                })
                .filter(|(_, secs)| *secs >= 0.5)
                .collect()
        })
        .unwrap_or_default();
    let needed = SETTLING_INTERVALS + 2;
    if intervals.len() < needed {
        return Err(unexpected(format!(
            "{} whole intervals; at least {needed} are needed",
            intervals.len()
        )));
    }
    let middle = &intervals[SETTLING_INTERVALS..intervals.len() - 1];
    let bytes: f64 = middle.iter().map(|(b, _)| b).sum();
    let secs: f64 = middle.iter().map(|(_, s)| s).sum();
    Ok(bytes * 8.0 / secs / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receiver_goodput_leaves_out_the_settling_and_last_whole_intervals_and_slivers() {
        let iv = |mbit: f64, secs: f64| {
            format!(
                r#"{{"sum":{{"bytes":{},"seconds":{secs}}}}}"#,
                mbit * 1e6 / 8.0 * secs
            )
        };
        // Slow start, a recovery burst over the wire's rate, a settling second, then steady.
        let j = format!(
            r#"{{"intervals":[{}, {}, {}, {}, {}, {}, {}],"end":{{}}}}"#,
            iv(6.0, 1.0),
            iv(11.4, 1.0),
            iv(8.0, 1.0),
            iv(9.0, 1.0),
            iv(10.0, 1.0),
            iv(1.0, 1.0),
            iv(50.0, 0.013)
        );
        assert!((receiver_goodput(&j, "x").unwrap() - 9.5).abs() < 1e-9);
        // Too short to have settled: refused, not averaged over the transient.
        let short = format!(
            r#"{{"intervals":[{}, {}, {}, {}],"end":{{}}}}"#,
            iv(6.0, 1.0),
            iv(11.4, 1.0),
            iv(8.0, 1.0),
            iv(9.0, 1.0)
        );
        assert!(receiver_goodput(&short, "x").is_err());
        let e = receiver_goodput(r#"{"error":"unable to connect"}"#, "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unable to connect"), "{e}");
        assert!(receiver_goodput(r#"{"intervals":[]}"#, "x").is_err());
    }
}
