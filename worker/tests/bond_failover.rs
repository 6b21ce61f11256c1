//! active-backup under a link failure (root only; says SKIPPED otherwise): a paced TCP stream
//! between two namespaces keeps going when the active slave's link is set down mid-stream,
//! the bond fails over to the backup within a second, and fails back when the primary's
//! link returns. The gap is measured at the receiver from the arrival times of the data.

mod bond_support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bond_support::*;

#[test]
fn active_backup_keeps_a_stream_going_through_failover_and_back() {
    if skip_unless_root("active_backup_keeps_a_stream_going_through_failover_and_back") {
        return;
    }
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
