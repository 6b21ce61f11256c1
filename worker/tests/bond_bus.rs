//! The userspace bond on shared buses, as in the study's bonded dual net (root, namespaces and
//! TUN, as the `netns_tun_` names say): three nodes, each with one slave on each of two bridges. Every bond
//! learns every peer on every bus, sends each packet to the right station, and two
//! transfers to different peers run at once without mixing.

mod bond_support;
#[path = "../../tests/common/need.rs"]
mod need;

use std::net::SocketAddr;
use std::time::Duration;

use bond_support::*;

#[test]
fn netns_tun_balance_rr_on_two_shared_buses_reaches_every_peer() {
    require_needs!();
    let bus = Bus::new("rr", 3, 2);
    let addr = |i: usize| format!("10.111.0.{i}");
    let mut bonds: Vec<BondProc> = (1..=3)
        .map(|i| {
            let a = format!("{}/24", addr(i));
            BondProc::start(
                &bus.nodes[i - 1],
                &[
                    "--address",
                    &a,
                    "--mode",
                    "balance-rr",
                    "--slave",
                    "e1",
                    "--slave",
                    "e2",
                ],
            )
        })
        .collect();
    for (i, b) in bonds.iter_mut().enumerate() {
        for j in (1..=3).filter(|&j| j != i + 1) {
            b.wait_peers(&addr(j), &["e1", "e2"]);
        }
    }

    // n1 -> n2 and n1 -> n3 at the same time.
    let bytes = 8u64 << 20;
    let mut receivers = Vec::new();
    for j in [2usize, 3] {
        let to: SocketAddr = format!("{}:5500", addr(j)).parse().unwrap();
        let (rx, ready) = receiver(&bus.nodes[j - 1], to);
        ready
            .recv_timeout(Duration::from_secs(5))
            .expect("listening");
        receivers.push((
            rx,
            sender(&bus.nodes[0], to, bytes, 64 * 1024, Duration::ZERO),
        ));
    }
    for (rx, tx) in receivers {
        tx.join().expect("sender");
        let (got, intact, _) = rx.join().expect("receiver");
        assert_eq!(got, bytes);
        assert!(intact, "in order and unchanged");
    }
    let exits: Vec<_> = bonds.iter_mut().map(|b| b.stop()).collect();
    assert_eq!(
        exits[0]["counters"]["no_peer"], 0,
        "n1 knew both peers: {}",
        exits[0]
    );
    // Each receiver got its own stream over both buses; a bridge floods a frame to every
    // station until it learns where a MAC is, and the third station must not take it.
    for j in [1usize, 2] {
        let rx = count(&exits[j], "e1", "rx_packets") + count(&exits[j], "e2", "rx_packets");
        let tx0 = count(&exits[0], "e1", "tx_packets") + count(&exits[0], "e2", "tx_packets");
        assert!(
            rx > bytes / 1500 && rx < tx0 * 6 / 10,
            "node {} took its own stream only: rx {rx} of n1's {tx0}",
            j + 1
        );
        assert!(count(&exits[j], "e1", "rx_packets") > 1000);
        assert!(count(&exits[j], "e2", "rx_packets") > 1000);
    }
}
