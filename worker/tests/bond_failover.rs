//! active-backup under a link failure (root, namespaces and TUN, as the `netns_tun_` names say): a paced TCP stream
//! between two namespaces keeps going when the active slave's link is set down mid-stream,
//! the bond fails over to the backup within a second, and fails back when the primary's
//! link returns. The gap is measured at the receiver from the arrival times of the data.

mod bond_support;
#[path = "../../tests/common/need.rs"]
mod need;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bond_support::*;

#[test]
fn netns_tun_active_backup_keeps_a_stream_going_through_failover_and_back() {
    require_needs!();
    let w = Wires::new("ab", 2);
    let ab = ["--mode", "active-backup", "--miimon", "100"];
    let a_addr = format!("{A_ADDR}/24");
    let b_addr = format!("{B_ADDR}/24");
    let mut a_args = vec!["--address", &a_addr, "--slave", "a1", "--slave", "a2"];
    a_args.extend(ab);
    a_args.extend(["--primary", "a1"]);
    let mut b_args = vec!["--address", &b_addr, "--slave", "b1", "--slave", "b2"];
    b_args.extend(ab);
    b_args.extend(["--primary", "b1"]);
    let mut a = BondProc::start(&w.a, &a_args);
    let mut b = BondProc::start(&w.b, &b_args);
    a.wait_peers(B_ADDR, &["a1", "a2"]);
    b.wait_peers(A_ADDR, &["b1", "b2"]);

    // 4 s of 4 KiB every 5 ms (about 6.5 Mbit/s): link down at 1 s, back up at 2.5 s.
    let to: SocketAddr = format!("{B_ADDR}:5301").parse().unwrap();
    let (rx, ready) = receiver(&w.b, to);
    ready
        .recv_timeout(Duration::from_secs(5))
        .expect("listening");
    let chunk = 4096;
    let bytes = 800 * chunk as u64;
    let start = Instant::now();
    let tx = sender(&w.a, to, bytes, chunk, Duration::from_millis(5));
    std::thread::sleep(Duration::from_secs(1));
    let before = a.stats();
    w.set(&w.a, "a1", false);
    let down_at = Instant::now();
    let fo = a
        .wait_event(
            |e| e["event"] == "failover" && e["from"] == "a1" && e["to"] == "a2",
            Duration::from_secs(2),
        )
        .expect("A fails over from a1 to a2");
    let detect = down_at.elapsed();
    std::thread::sleep(Duration::from_millis(1500));
    let during = a.stats();
    w.set(&w.a, "a1", true);
    a.wait_event(
        |e| e["event"] == "failover" && e["from"] == "a2" && e["to"] == "a1",
        Duration::from_secs(3),
    )
    .expect("A fails back to its primary a1 when its link returns");
    tx.join().expect("sender finished");
    let (got, intact, gap) = rx.join().expect("receiver");
    let elapsed = start.elapsed();
    let (sa, sb) = (a.stop(), b.stop());

    assert_eq!(got, bytes, "the whole stream arrived");
    assert!(intact, "in order and unchanged");
    assert!(
        gap < Duration::from_secs(1),
        "longest pause in the stream {gap:?} (failover detected after {detect:?}); {fo}"
    );
    eprintln!(
        "active-backup: longest gap {:.0} ms, failover seen {:.0} ms after link down, \
         stream {:.1} s",
        gap.as_secs_f64() * 1e3,
        detect.as_secs_f64() * 1e3,
        elapsed.as_secs_f64()
    );
    // While a1 was down the traffic moved to a2.
    let moved = count(&during, "a2", "tx_packets") - count(&before, "a2", "tx_packets");
    assert!(
        moved > 100,
        "a2 carried the stream while a1 was down ({moved} packets)"
    );
    assert_eq!(sa["counters"]["failovers"], 2, "{sa}");
    assert_eq!(sa["active"], "a1");
    // B's peer end lost carrier too and followed, so nothing is stuck on a backup.
    assert!(
        b.events
            .iter()
            .any(|e| e["event"] == "failover" && e["to"] == "b2"),
        "B failed over too"
    );
    assert_eq!(sb["active"], "b1");
}

#[test]
fn netns_tun_balance_rr_leaves_out_a_slave_whose_link_is_down_and_takes_it_back() {
    require_needs!();
    let w = Wires::new("rrd", 2);
    let a_addr = format!("{A_ADDR}/24");
    let b_addr = format!("{B_ADDR}/24");
    let rr = ["--mode", "balance-rr", "--miimon", "50"];
    let mut a_args = vec!["--address", &a_addr, "--slave", "a1", "--slave", "a2"];
    a_args.extend(rr);
    let mut b_args = vec!["--address", &b_addr, "--slave", "b1", "--slave", "b2"];
    b_args.extend(rr);
    let mut a = BondProc::start(&w.a, &a_args);
    let mut b = BondProc::start(&w.b, &b_args);
    a.wait_peers(B_ADDR, &["a1", "a2"]);
    b.wait_peers(A_ADDR, &["b1", "b2"]);
    let link = |slave: &'static str, up: bool| {
        move |e: &serde_json::Value| e["event"] == "link" && e["slave"] == slave && e["up"] == up
    };
    let run = |port: u16| {
        let to: SocketAddr = format!("{B_ADDR}:{port}").parse().unwrap();
        let (rx, ready) = receiver(&w.b, to);
        ready
            .recv_timeout(Duration::from_secs(5))
            .expect("listening");
        sender(&w.a, to, 4 << 20, 64 * 1024, Duration::ZERO)
            .join()
            .expect("sender");
        let (got, intact, _) = rx.join().expect("receiver");
        assert!(got == 4 << 20 && intact, "stream intact");
    };

    w.set(&w.a, "a2", false);
    a.wait_event(link("a2", false), Duration::from_secs(2))
        .expect("A's monitor sees a2 down");
    b.wait_event(link("b2", false), Duration::from_secs(2))
        .expect("B's monitor sees b2 lose carrier");
    let before = a.stats();
    run(5601);
    let during = a.stats();
    let d = |s: &str| count(&during, s, "tx_packets") - count(&before, s, "tx_packets");
    assert!(
        d("a1") > 2000 && d("a2") == 0,
        "a1 {} a2 {}",
        d("a1"),
        d("a2")
    );

    w.set(&w.a, "a2", true);
    a.wait_event(link("a2", true), Duration::from_secs(2))
        .expect("A's monitor sees a2 up");
    b.wait_event(link("b2", true), Duration::from_secs(2))
        .expect("B's monitor sees b2 up");
    run(5602);
    let after = a.stop();
    b.stop();
    let d2 = |s: &str| count(&after, s, "tx_packets") - count(&during, s, "tx_packets");
    let share = d2("a2") as f64 / (d2("a1") + d2("a2")) as f64;
    assert!(
        (0.4..0.6).contains(&share),
        "a2 back in turn: a1 {} a2 {}",
        d2("a1"),
        d2("a2")
    );
}
