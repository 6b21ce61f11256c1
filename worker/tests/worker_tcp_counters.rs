//! TCP's own counters in the records: a stream between two network namespaces over a plain
//! veth retransmits nothing, and the same stream through a token bucket with room for two
//! frames loses segments, which both records' `tcp_retrans` count. Needs root and `ip netns`
//! (tests/common/need.rs). Traffic stays between the
//! test's own namespaces.

mod common;
#[path = "../../tests/common/need.rs"]
mod need;

use std::process::Command;
use std::time::Duration;

use common::netns::{Namespaces, sh};
use common::{Run, Server, run_cmd, u, worker_in};

const LIMIT: Duration = Duration::from_secs(60);

/// A one-second stream of 64 KiB writes from namespace 0 to a server in namespace 1, twice.
fn stream(ns: &Namespaces) -> Run {
    let srv = Server::start_with(worker_in(&ns.0[1]), "10.113.1.2:0", &[]);
    let r = run_cmd(
        worker_in(&ns.0[0]),
        &[
            "stream",
            "--connect",
            &srv.addr,
            "--size",
            "64K",
            "--duration",
            "1",
            "--trials",
            "2",
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.role("client").len(), 2, "{}", r.stdout);
    for rec in &r.records {
        assert!(rec["error"].is_null(), "error record: {rec}");
        for k in ["tcp_retrans", "tcp_rtt_us", "tcp_snd_cwnd"] {
            assert!(rec[k].is_u64(), "{k} missing from a tcp record: {rec}");
        }
    }
    r
}

fn retransmitted(r: &Run, role: &str) -> u64 {
    r.role(role).iter().map(|rec| u(rec, "tcp_retrans")).sum()
}

/// Puts a 10 Mbit/s token bucket with a queue of `limit` bytes on the sender's side, in place
/// of the one before. The clean path is paced too: a veth at full speed loses segments in the
/// receiving CPU's backlog (7143 retransmissions in two seconds here), which is a real loss
/// but not the one this test makes.
fn pace(ns: &Namespaces, limit: u32) {
    sh(&format!(
        "ip netns exec {} tc qdisc replace dev p1 root tbf rate 10mbit burst 3028 limit {limit}",
        ns.0[0]
    ));
}

/// Segments the sender's qdisc dropped since it was put there.
fn qdisc_drops(ns: &Namespaces) -> u64 {
    let out = Command::new("ip")
        .args([
            "netns", "exec", &ns.0[0], "tc", "-s", "qdisc", "show", "dev", "p1",
        ])
        .output()
        .expect("tc runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let after = text
        .split("dropped ")
        .nth(1)
        .unwrap_or_else(|| panic!("no drop count in {text}"));
    after
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no drop count in {text}"))
}

#[test]
fn netns_retransmissions_are_counted_on_a_lossy_path_and_not_on_a_clean_one() {
    require_needs!();
    let ns = Namespaces::new("tcp", &["c", "s"]);
    ns.wire(0, 1, "p1", "10.113.1");

    // A queue larger than all the sender can have in flight (its largest send buffer,
    // net.ipv4.tcp_wmem's 4 MiB): nothing can be dropped, so nothing is sent twice.
    pace(&ns, 8 << 20);
    let clean = stream(&ns);
    assert_eq!(qdisc_drops(&ns), 0, "the deep queue dropped");
    assert_eq!(
        retransmitted(&clean, "client"),
        0,
        "nothing was lost, yet the sender counted retransmissions: {}",
        clean.stdout
    );

    // Room for two full frames: TCP's bursts overflow it, and every data segment dropped
    // there is sent again.
    pace(&ns, 3028);
    let lossy = stream(&ns);
    let drops = qdisc_drops(&ns);
    let retrans = retransmitted(&lossy, "client");
    assert!(drops > 0, "the two-frame queue dropped nothing");
    assert!(
        retrans > 0,
        "{drops} segments dropped, yet no retransmission recorded: {}",
        lossy.stdout
    );
    // The server sends only ACKs, which are never retransmitted: its side reads zero.
    assert_eq!(retransmitted(&lossy, "server"), 0, "{}", lossy.stdout);
}
