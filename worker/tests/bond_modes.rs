//! The userspace bond carrying real TCP between two network namespaces joined by two veth
//! wires (root, namespaces and TUN, as the `netns_tun_` names say): balance-rr stripes one stream over
//! both wires, balance-xor keeps each flow on one wire and spreads flows, broadcast copies to
//! both, and the refused modes fail with a reason.

mod bond_support;
#[path = "../../tests/common/need.rs"]
mod need;

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use bond_support::*;
use orchestrate_worker::bond::mode::{XmitHashPolicy, xmit_hash};
use orchestrate_worker::bond::packet::Packet;

/// Bonds over both wires in each namespace, with `mode` options on both and `a_only` on A's.
fn pair(w: &Wires, mode: &[&str], a_only: &[&str]) -> (BondProc, BondProc) {
    let a_addr = format!("{A_ADDR}/24");
    let b_addr = format!("{B_ADDR}/24");
    let mut a_args = vec!["--address", &a_addr, "--slave", "a1", "--slave", "a2"];
    let mut b_args = vec!["--address", &b_addr, "--slave", "b1", "--slave", "b2"];
    a_args.extend(mode);
    a_args.extend(a_only);
    b_args.extend(mode);
    let mut a = BondProc::start(&w.a, &a_args);
    let mut b = BondProc::start(&w.b, &b_args);
    a.wait_peers(B_ADDR, &["a1", "a2"]);
    b.wait_peers(A_ADDR, &["b1", "b2"]);
    (a, b)
}

/// One TCP transfer of `bytes` from A to B through the bonds; returns the sender's port.
fn transfer(w: &Wires, port: u16, bytes: u64) -> u16 {
    let to: SocketAddr = format!("{B_ADDR}:{port}").parse().unwrap();
    let (rx, ready) = receiver(&w.b, to);
    ready
        .recv_timeout(Duration::from_secs(5))
        .expect("listening");
    let local = sender(&w.a, to, bytes, 64 * 1024, Duration::ZERO)
        .join()
        .expect("sender");
    let (got, intact, _) = rx.join().expect("receiver");
    assert_eq!(got, bytes, "every byte arrives");
    assert!(intact, "bytes arrive in order and unchanged");
    local
}

#[test]
fn netns_tun_balance_rr_stripes_one_tcp_stream_over_both_slaves() {
    require_needs!();
    let w = Wires::new("rr", 2);
    let (mut a, mut b) = pair(&w, &["--mode", "balance-rr"], &[]);
    transfer(&w, 5001, 40 << 20);
    let (sa, sb) = (a.stop(), b.stop());
    let (t1, t2) = (
        count(&sa, "a1", "tx_packets"),
        count(&sa, "a2", "tx_packets"),
    );
    let share = t1 as f64 / (t1 + t2) as f64;
    assert!(t1 + t2 > 20_000, "the stream went through the bond: {sa}");
    assert!(
        (0.45..=0.55).contains(&share),
        "packet by packet in turn: a1 {t1}, a2 {t2}"
    );
    assert!(count(&sb, "b1", "rx_packets") > 10_000 && count(&sb, "b2", "rx_packets") > 10_000);
    // The ACKs come back striped too.
    assert!(count(&sb, "b1", "tx_packets") > 1000 && count(&sb, "b2", "tx_packets") > 1000);
    // Clean shutdown removed the TUN devices.
    assert!(!w.link_exists(&w.a, "bond0") && !w.link_exists(&w.b, "bond0"));
}

/// Which slave (0 or 1) the driver's layer3+4 hash picks for a TCP flow from A to B.
fn predicted_slave(sport: u16, dport: u16) -> usize {
    let mut p = vec![0u8; 40];
    p[0] = 0x45;
    p[9] = 6;
    p[12..16].copy_from_slice(&[10, 111, 0, 1]);
    p[16..20].copy_from_slice(&[10, 111, 0, 2]);
    p[20..22].copy_from_slice(&sport.to_be_bytes());
    p[22..24].copy_from_slice(&dport.to_be_bytes());
    xmit_hash(XmitHashPolicy::Layer3And4, &Packet::parse(&p).unwrap()) as usize % 2
}

#[test]
fn netns_tun_balance_xor_keeps_each_flow_on_one_slave_and_spreads_flows() {
    require_needs!();
    let w = Wires::new("xor", 2);
    let (mut a, mut b) = pair(
        &w,
        &["--mode", "balance-xor", "--xmit-hash-policy", "layer3+4"],
        &[],
    );
    let mut used = [false; 2];
    for flow in 0..12u16 {
        let before = a.stats();
        let dport = 5100 + flow;
        let sport = transfer(&w, dport, 4 << 20);
        let after = a.stats();
        let delta = |s: &str| count(&after, s, "tx_packets") - count(&before, s, "tx_packets");
        let (d1, d2) = (delta("a1"), delta("a2"));
        let carried = if d1 > d2 { 0 } else { 1 };
        // A few packets of other traffic (IPv6 neighbour chatter of the TUN device) may take
        // the other wire; the flow's thousands of segments must not.
        assert!(
            d1.min(d2) < 20 && d1.max(d2) > 2000,
            "flow {sport}->{dport} stays on one slave: a1 {d1}, a2 {d2}"
        );
        assert_eq!(
            carried,
            predicted_slave(sport, dport),
            "flow {sport}->{dport} is on the slave the layer3+4 hash names"
        );
        used[carried] = true;
        if used[0] && used[1] {
            break;
        }
    }
    assert!(used[0] && used[1], "different flows use different slaves");
    a.stop();
    b.stop();
}

#[test]
fn netns_tun_broadcast_sends_every_packet_on_every_slave() {
    require_needs!();
    let w = Wires::new("bc", 2);
    // A smaller MTU on one wire: the bond adds no header, so it takes the smallest slave MTU.
    sh(&format!(
        "ip -n {} link set a2 mtu 1400 && ip -n {} link set b2 mtu 1400",
        w.a, w.b
    ));
    let dir = std::env::temp_dir().join(format!("bond-bc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stats_file = dir.join("a.stats");
    let (mut a, mut b) = pair(
        &w,
        &["--mode", "broadcast"],
        &["--stats-file", stats_file.to_str().unwrap()],
    );
    let ready = a
        .wait_event(|e| e["event"] == "ready", Duration::ZERO)
        .unwrap();
    assert_eq!(ready["mtu"], 1400, "{ready}");
    transfer(&w, 5201, 4 << 20);
    let (sa, sb) = (a.stop(), b.stop());
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats_file).unwrap()).unwrap();
    assert_eq!(
        count(&file, "a1", "tx_packets"),
        count(&sa, "a1", "tx_packets"),
        "the stats file holds the final counters"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let (t1, t2) = (
        count(&sa, "a1", "tx_packets"),
        count(&sa, "a2", "tx_packets"),
    );
    assert_eq!(t1, t2, "one copy per slave");
    assert!(t1 > 2000);
    // The receiver gets both copies and hands both to its kernel; TCP drops the duplicates.
    assert!(count(&sb, "b1", "rx_packets") + count(&sb, "b2", "rx_packets") >= 2 * t1 - 20);
}

#[test]
fn refused_modes_fail_with_the_mode_and_the_reason() {
    // No root needed: the mode is refused before anything is touched.
    for mode in ["802.3ad", "balance-tlb", "balance-alb"] {
        let out = Command::new(BIN)
            .args([
                "bond",
                "--address",
                "10.111.0.1/24",
                "--slave",
                "x1",
                "--mode",
                mode,
            ])
            .output()
            .expect("run worker");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{mode}: {err}");
        assert!(err.contains(mode) && err.contains("not supported"), "{err}");
        assert!(err.contains("kernel"), "says what to do instead: {err}");
    }
    let out = Command::new(BIN)
        .args([
            "bond",
            "--address",
            "10.111.0.1/24",
            "--slave",
            "x1",
            "--mode",
            "rr",
        ])
        .output()
        .expect("run worker");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown bonding mode"));
}
