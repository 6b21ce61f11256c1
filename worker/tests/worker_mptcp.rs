//! Multipath TCP: every TCP pattern over `--protocol mptcp` on loopback (one subflow), a
//! stream striped over two paths between two network namespaces (two subflows), a connection
//! fallen back to plain TCP (zero), and the errors of a kernel with MPTCP off, on the client's
//! node and on the server's. The loopback
//! tests need a kernel with MPTCP; the namespace tests need root and `ip netns` too, each named
//! for what it needs (tests/common/need.rs). All traffic stays on loopback or between the tests' own namespaces.

mod common;
#[path = "../../tests/common/need.rs"]
mod need;

use std::time::Duration;

use common::netns::{Namespaces, sh};
use common::{Run, Server, client, run_cmd, u, worker_in};

const LIMIT: Duration = Duration::from_secs(60);

/// A client over mptcp against a loopback server that must succeed: every record is mptcp,
/// error-free and counted one subflow, and both sides saw the same payload.
fn run_mptcp(pattern: &str, args: &[&str]) -> Run {
    let srv = Server::start(&[]);
    let mut all = vec![pattern, "--connect", &srv.addr, "--protocol", "mptcp"];
    all.extend(args);
    let r = client(&all, LIMIT);
    assert_eq!(r.code, Some(0), "{all:?}: {}\n{}", r.stdout, r.stderr);
    let (c, s) = (r.role("client"), r.role("server"));
    assert!(!c.is_empty() && c.len() == s.len(), "{}", r.stdout);
    for rec in &r.records {
        assert!(rec["error"].is_null(), "error record: {rec}");
        assert_eq!(rec["protocol"], "mptcp", "{rec}");
        assert_eq!(rec["subflows"], 1, "one path, one subflow: {rec}");
    }
    for (c, s) in c.iter().zip(&s) {
        assert_eq!(c["trial"], s["trial"]);
        if pattern != "load" {
            assert_eq!(u(c, "bytes"), u(s, "bytes"), "{c}\n{s}");
        }
    }
    r
}

#[test]
fn mptcp_token_on_loopback() {
    require_needs!();
    let r = run_mptcp(
        "token",
        &["--sizes", "4,8K", "--exchanges", "500", "--trials", "2"],
    );
    assert_eq!(r.role("client").len(), 4);
}

#[test]
fn mptcp_pingpong_on_loopback() {
    require_needs!();
    let r = run_mptcp(
        "pingpong",
        &["--sizes", "1,1000", "--exchanges", "300", "--trials", "2"],
    );
    for c in r.role("client") {
        assert_eq!(u(c, "messages"), 300);
    }
}

#[test]
fn mptcp_stream_on_loopback() {
    require_needs!();
    let r = run_mptcp(
        "stream",
        &["--size", "64K", "--exchanges", "300", "--trials", "2"],
    );
    for s in r.role("server") {
        assert_eq!(u(s, "bytes"), 300 * 65536, "the receiver counts every byte");
    }
}

#[test]
fn mptcp_pipeline_on_loopback() {
    require_needs!();
    let r = run_mptcp(
        "pipeline",
        &[
            "--size",
            "64",
            "--depth",
            "8",
            "--exchanges",
            "2000",
            "--trials",
            "1",
        ],
    );
    assert_eq!(u(r.role("server")[0], "messages"), 2000);
}

#[test]
fn mptcp_load_on_loopback() {
    require_needs!();
    let r = run_mptcp(
        "load",
        &["--size", "1K", "--rate", "2000", "--duration", "0.5"],
    );
    let (c, s) = (r.role("client")[0], r.role("server")[0]);
    assert_eq!(u(c, "messages"), 1000);
    assert_eq!(u(s, "messages"), 1000);
}

#[test]
fn mptcp_filecopy_on_loopback() {
    require_needs!();
    let r = run_mptcp("filecopy", &["--size", "2M", "--trials", "1"]);
    assert_eq!(u(r.role("server")[0], "bytes"), 2 << 20);
}

#[test]
fn tcp_records_carry_no_subflows_and_udp_is_refused_for_stream() {
    let srv = Server::start(&[]);
    let r = client(
        &[
            "token",
            "--connect",
            &srv.addr,
            "--size",
            "64",
            "--exchanges",
            "100",
            "--trials",
            "1",
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!r.stdout.contains("subflows"), "{}", r.stdout);
    let r = client(
        &[
            "stream",
            "--connect",
            &srv.addr,
            "--protocol",
            "udp",
            "--size",
            "1K",
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("stream runs over tcp or mptcp only"),
        "{}",
        r.stderr
    );
}

#[test]
fn netns_mptcp_off_in_the_clients_kernel_fails_with_the_reason() {
    require_needs!();
    let ns = Namespaces::new("off", &["c"]);
    sh(&format!(
        "ip netns exec {} sysctl -qw net.mptcp.enabled=0",
        ns.0[0]
    ));
    // The socket is refused before any connection is tried: no server is needed.
    let r = run_cmd(
        worker_in(&ns.0[0]),
        &["token", "--connect", "127.0.0.1:9", "--protocol", "mptcp"],
        LIMIT,
    );
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    let e = r.error().expect("an error record");
    assert!(
        e.starts_with(
            "cannot open an MPTCP socket: MPTCP is off in this kernel (net.mptcp.enabled = 0"
        ) && e.ends_with("(os error 92)"),
        "{e}"
    );
}

#[test]
fn netns_mptcp_a_server_with_mptcp_off_serves_tcp_and_refuses_mptcp() {
    require_needs!();
    let ns = Namespaces::new("srvoff", &["c", "s"]);
    ns.wire(0, 1, "p1", "10.112.1");
    sh(&format!(
        "ip netns exec {} sysctl -qw net.mptcp.enabled=0",
        ns.0[1]
    ));
    let srv = Server::start_with(worker_in(&ns.0[1]), "10.112.1.2:0", &[]);
    assert!(
        srv.wait_log("MPTCP is off in this kernel", Duration::from_secs(5))
            .is_some(),
        "serve says it listens with plain TCP"
    );
    let run = |protocol: &str| {
        run_cmd(
            worker_in(&ns.0[0]),
            &[
                "token",
                "--connect",
                &srv.addr,
                "--protocol",
                protocol,
                "--size",
                "64",
                "--exchanges",
                "100",
                "--trials",
                "1",
            ],
            LIMIT,
        )
    };
    let tcp = run("tcp");
    assert_eq!(tcp.code, Some(0), "{}", tcp.stdout);
    let mptcp = run("mptcp");
    assert_eq!(mptcp.code, Some(1), "{}", mptcp.stdout);
    let e = mptcp.error().expect("an error record");
    assert!(
        e.contains("this server cannot serve mptcp: cannot open an MPTCP socket: MPTCP is off"),
        "{e}"
    );
}

#[test]
fn netns_mptcp_a_connection_fallen_back_to_plain_tcp_counts_zero_subflows() {
    require_needs!();
    // A server that listened while MPTCP was off has a plain TCP listener; with MPTCP back on
    // it accepts the session, and the client's MPTCP connection falls back to plain TCP.
    let ns = Namespaces::new("fb", &["c", "s"]);
    ns.wire(0, 1, "p1", "10.112.1");
    let server_mptcp = |on: u8| {
        sh(&format!(
            "ip netns exec {} sysctl -qw net.mptcp.enabled={on}",
            ns.0[1]
        ))
    };
    server_mptcp(0);
    let srv = Server::start_with(worker_in(&ns.0[1]), "10.112.1.2:0", &[]);
    server_mptcp(1);
    let r = run_cmd(
        worker_in(&ns.0[0]),
        &[
            "token",
            "--connect",
            &srv.addr,
            "--protocol",
            "mptcp",
            "--size",
            "64",
            "--exchanges",
            "100",
            "--trials",
            "2",
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.records.len(), 4);
    for rec in &r.records {
        assert_eq!(rec["protocol"], "mptcp");
        assert_eq!(rec["subflows"], 0, "fell back to plain TCP: {rec}");
    }
}

#[test]
fn netns_mptcp_stream_over_two_paths_is_striped_over_two_subflows() {
    require_needs!();
    // Client (0) and server (1) joined by two wires, one /24 each; the server announces its
    // second address, the client opens a subflow from its own. Each wire carries 100 Mbit/s
    // from the client: unshaped, a veth takes the whole stream at memory speed and the
    // scheduler may leave the second subflow nearly idle (4% of the bytes seen on a loaded
    // 2-core host), which says nothing about striping; with both wires the bottleneck, a
    // subflow that can send does.
    let ns = Namespaces::new("two", &["c", "s"]);
    ns.wire(0, 1, "p1", "10.112.1");
    ns.wire(0, 1, "p2", "10.112.2");
    for dev in ["p1", "p2"] {
        sh(&format!(
            "tc -n {} qdisc add dev {dev} root tbf rate 100mbit burst 32k latency 20ms",
            ns.0[0]
        ));
    }
    for n in &ns.0 {
        sh(&format!(
            "ip -n {n} mptcp limits set subflows 2 add_addr_accepted 2"
        ));
    }
    sh(&format!(
        "ip -n {} mptcp endpoint add 10.112.2.2 dev p2 signal",
        ns.0[1]
    ));
    sh(&format!(
        "ip -n {} mptcp endpoint add 10.112.2.1 dev p2 subflow",
        ns.0[0]
    ));
    let srv = Server::start_with(worker_in(&ns.0[1]), "10.112.1.2:0", &[]);
    let before = (ns.tx_bytes(0, "p1"), ns.tx_bytes(0, "p2"));
    let r = run_cmd(
        worker_in(&ns.0[0]),
        &[
            "stream",
            "--connect",
            &srv.addr,
            "--protocol",
            "mptcp",
            "--size",
            "64K",
            "--duration",
            "0.75",
            "--trials",
            "2",
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.role("client").len(), 2);
    for rec in &r.records {
        assert!(rec["error"].is_null(), "error record: {rec}");
        assert_eq!(rec["protocol"], "mptcp");
        assert_eq!(rec["subflows"], 2, "striped over both paths: {rec}");
    }
    // Both wires carried the stream, not just its signalling: each at least a fifth of it
    // (an even split would be half).
    let sent = (
        ns.tx_bytes(0, "p1") - before.0,
        ns.tx_bytes(0, "p2") - before.1,
    );
    let payload: u64 = r.role("server").iter().map(|s| u(s, "bytes")).sum();
    assert!(
        sent.0 > payload / 5 && sent.1 > payload / 5,
        "wire bytes {sent:?} for {payload} bytes of payload"
    );
}
