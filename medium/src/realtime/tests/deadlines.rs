//! A frame leaves for its recipients when its last bit would reach them, not before.

use super::super::fake::Rig;
use super::super::wait::Sleep;
use super::*;

/// Well after the loop starts, so that nothing is decided before the frame arrives.
const T0: Nanos = 1_000_000;

#[test]
fn a_bus_frame_leaves_for_every_other_station_at_its_wire_time_and_not_before() {
    let len = 1000;
    let f = frame(BROADCAST, 0, len, 1);
    // The bus is idle: the frame starts when it arrives, its last bit is at the others one
    // frame's wire time later.
    let due = T0 + wire_ns(len);
    let rig = Rig::new(bus_and_switch());
    rig.arrive(T0, 0, f.clone());
    rig.at(T0 + WINDOW);
    rig.at(due - 1);
    rig.at(due);
    rig.at(due + 1_000_000);
    let ran = rig.run();
    for p in [1, 2] {
        let sent = ran.sent(p);
        assert_eq!(sent.len(), 1, "port {p}");
        assert_eq!(sent[0].at, due, "port {p}");
        assert!(sent[0].frame == f, "port {p}: another frame");
    }
    // Not back to its sender, nor onto the other segment.
    for p in [0, SWITCH[0], SWITCH[1]] {
        assert_eq!(ran.sent(p), [], "port {p}");
    }
}

#[test]
fn the_loop_sleeps_until_a_spin_before_the_frame_is_due() {
    let len = 1000;
    let due = T0 + wire_ns(len);
    let mut rig = Rig::new(bus_and_switch());
    // A spin shorter than the frame's wire time, so that there is a sleep to see.
    rig.timing.spin_ns = 20_000;
    let spin = rig.timing.spin_ns;
    rig.arrive(T0, 0, frame(BROADCAST, 0, len, 1));
    rig.at(T0 + WINDOW);
    rig.at(due);
    let ran = rig.run();
    // Once the start is decided (at the end of the collision window) the loop knows when the
    // frame is due and sleeps until a spin before it.
    let asked: Vec<Sleep> = ran
        .sleeps
        .iter()
        .filter(|(at, _)| *at == T0 + WINDOW)
        .map(|&(_, s)| s)
        .collect();
    assert_eq!(asked, [Sleep::Until(due - spin)]);
}

#[test]
fn a_switch_delivers_a_frame_two_wire_times_after_it_arrives() {
    let len = 300;
    let f = frame(BROADCAST, SWITCH[0], len, 2);
    // Store and forward: the frame is all in the switch after one wire time, and all out
    // on the other port's link after another.
    let due = T0 + 2 * wire_ns(len);
    let rig = Rig::new(bus_and_switch());
    rig.arrive(T0, SWITCH[0], f.clone());
    rig.at(T0 + wire_ns(len));
    rig.at(due - 1);
    rig.at(due);
    let ran = rig.run();
    assert_eq!(ran.sent(SWITCH[1]).len(), 1);
    assert_eq!(ran.sent(SWITCH[1])[0].at, due);
    assert!(ran.sent(SWITCH[1])[0].frame == f, "another frame");
    for p in BUS.into_iter().chain([SWITCH[0]]) {
        assert_eq!(ran.sent(p), [], "port {p}");
    }
}

#[test]
fn a_unicast_frame_goes_only_to_the_port_its_address_was_learnt_on() {
    let rig = Rig::new(bus_and_switch());
    // Port 2's node announces itself; its frame is carried first.
    let hello = frame(BROADCAST, 2, 60, 1);
    rig.arrive(T0, 2, hello);
    let learnt = T0 + wire_ns(60);
    rig.at(learnt);
    // Then port 0's node writes to it, on an idle bus.
    let t1 = learnt + 1_000_000;
    let len = 500;
    let f = frame(mac(2), 0, len, 2);
    rig.arrive(t1, 0, f.clone());
    let due = t1 + wire_ns(len);
    rig.at(due - 1);
    rig.at(due);
    let ran = rig.run();
    let to_2 = ran.sent(2);
    assert_eq!(to_2.len(), 1);
    assert_eq!(to_2[0].at, due);
    assert!(to_2[0].frame == f, "another frame");
    // Port 1 saw only the broadcast.
    assert_eq!(ran.sent(1).len(), 1);
    assert_eq!(ran.sent(1)[0].at, learnt);
}
