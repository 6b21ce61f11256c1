//! What is lost and how it is counted: a station's or a link's transmit queue holds
//! `queue_limit` frames (the one on the wire among them) and drops what comes beyond; a port
//! that refuses a write loses that frame; a port that cannot be read is given up.

use super::super::fake::Rig;
use super::*;

const T0: Nanos = 1_000_000;
/// Frames handed in at once: three more than a queue holds.
const BURST: usize = QUEUE + 3;
/// Long enough for the whole burst to be carried, whatever the backoffs and turnarounds.
const LATER: Nanos = 100_000_000;

/// `BURST` frames from `port` to `dst`, tagged 0, 1, …, all read in one pass at T0.
fn burst(rig: &Rig, port: usize, dst: [u8; 6]) {
    let frames = (0..BURST)
        .map(|tag| (port, frame(dst, port, 200, tag as u8), Some(T0)))
        .collect();
    rig.arrive_all(T0, frames);
}

fn tags(sent: &[super::super::fake::Sent]) -> Vec<u8> {
    sent.iter().map(|s| *s.frame.last().unwrap()).collect()
}

#[test]
fn a_bus_stations_queue_holds_its_limit_and_drops_and_counts_the_rest() {
    let rig = Rig::new(bus_and_switch());
    burst(&rig, 0, BROADCAST);
    rig.at(LATER);
    let ran = rig.run();
    // The first QUEUE frames are carried, in order, to each other station; the rest were
    // dropped as they came.
    let kept: Vec<u8> = (0..QUEUE as u8).collect();
    assert_eq!(tags(&ran.sent(1)), kept);
    assert_eq!(tags(&ran.sent(2)), kept);
    let c = ran.total().segments[0].counters;
    assert_eq!(c.queue_drops, (BURST - QUEUE) as u64);
    assert_eq!(c.frames, QUEUE as u64);
    assert_eq!(ran.total().segments[1].counters.queue_drops, 0);
}

#[test]
fn a_switch_ports_link_holds_its_limit_and_drops_and_counts_the_rest() {
    let rig = Rig::new(bus_and_switch());
    burst(&rig, SWITCH[0], BROADCAST);
    rig.at(LATER);
    let ran = rig.run();
    // The uplink queues QUEUE frames; the downlink takes them at the rate they come, so it
    // drops nothing more.
    let kept: Vec<u8> = (0..QUEUE as u8).collect();
    assert_eq!(tags(&ran.sent(SWITCH[1])), kept);
    let c = ran.total().segments[1].counters;
    assert_eq!(c.queue_drops, (BURST - QUEUE) as u64);
    assert_eq!(c.frames, QUEUE as u64);
}

#[test]
fn frames_a_port_refuses_are_counted_as_send_errors_and_the_others_are_written() {
    let rig = Rig::new(bus_and_switch());
    rig.ports[1].refuse_writes();
    // Three broadcasts, each due at port 1 (refused) and port 2, one after the other.
    let frames = 3;
    let mut t = T0;
    for tag in 0..frames {
        rig.arrive(t, 0, frame(BROADCAST, 0, 60, tag));
        t += 1_000_000;
        rig.at(t);
    }
    let ran = rig.run();
    assert_eq!(ran.stopped.send_errors, u64::from(frames));
    assert_eq!(ran.sent(1), []);
    assert_eq!(tags(&ran.sent(2)), [0, 1, 2]);
}

#[test]
fn a_port_that_cannot_be_read_is_given_up_and_the_others_go_on() {
    let rig = Rig::new(bus_and_switch());
    rig.ports[2].vanish();
    rig.arrive(T0, 2, frame(BROADCAST, 2, 60, 9));
    let t1 = T0 + 1_000_000;
    rig.arrive(t1, 0, frame(BROADCAST, 0, 60, 1));
    rig.at(t1 + wire_ns(60));
    let ran = rig.run();
    assert_eq!(ran.forgotten, [2]);
    // Port 2's frame never reached the bus; port 0's reached both others.
    assert_eq!(tags(&ran.sent(1)), [1]);
    assert_eq!(ran.sent(1)[0].at, t1 + wire_ns(60));
    assert_eq!(tags(&ran.sent(2)), [1]);
}
