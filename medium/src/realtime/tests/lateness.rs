//! What the loop records of its own lateness, per segment: egress (written after it was due),
//! ingress (read after it arrived) and entry (put on the wire after it arrived).

use super::super::fake::Rig;
use super::*;
use crate::stats::{Lateness, LatenessHistogram, timing_kept};

const T0: Nanos = 1_000_000;

/// The summary the statistics give for these lateness samples (ns). Below 256 ns the
/// histogram is exact to the nanosecond, above it to two significant digits, and it records
/// a punctual frame as its floor of 1 ns.
fn summary(samples: &[Nanos]) -> Lateness {
    let mut h = LatenessHistogram::default();
    samples.iter().for_each(|&s| h.record(s));
    h.summary()
}

#[test]
fn a_late_pass_is_recorded_as_exactly_its_delay_on_its_segment_and_a_punctual_one_as_none() {
    // The bus's frame is written 200 ns after it was due; the switch's on the nanosecond.
    let late = 200;
    let (bus_len, switch_len) = (1000, 300);
    let bus_due = T0 + wire_ns(bus_len);
    let switch_due = T0 + 2 * wire_ns(switch_len);
    let rig = Rig::new(bus_and_switch());
    rig.arrive_all(
        T0,
        vec![
            (0, frame(BROADCAST, 0, bus_len, 1), Some(T0)),
            (
                SWITCH[0],
                frame(BROADCAST, SWITCH[0], switch_len, 2),
                Some(T0),
            ),
        ],
    );
    rig.at(T0 + WINDOW);
    rig.at(T0 + wire_ns(switch_len));
    assert!(switch_due < bus_due + late);
    rig.at(switch_due);
    rig.at(bus_due + late);
    let ran = rig.run();
    assert_eq!(ran.sent(1)[0].at, bus_due + late);
    assert_eq!(ran.sent(SWITCH[1])[0].at, switch_due);
    let total = ran.total();
    let (bus, switch) = (&total.segments[0], &total.segments[1]);
    // Both of the bus's recipients were written late by the same 200 ns.
    assert_eq!(bus.lateness, summary(&[late, late]));
    assert_eq!(bus.lateness.max_us, late as f64 / 1000.0);
    assert_eq!(switch.lateness, summary(&[0]));
    assert_eq!(switch.lateness.max_us, 0.001);
}

#[test]
fn a_frame_written_over_a_millisecond_late_breaks_its_segments_timing_bound() {
    let len = 60;
    let due = T0 + wire_ns(len);
    let stall = 1_500_000;
    let run = |pass_at: Nanos| {
        let rig = Rig::new(bus_and_switch());
        rig.arrive(T0, 0, frame(BROADCAST, 0, len, 1));
        rig.at(pass_at);
        rig.run().total().segments[0].clone()
    };
    let punctual = run(due);
    assert_eq!(punctual.lateness, summary(&[0, 0]));
    assert!(timing_kept(&punctual));
    let stalled = run(due + stall);
    assert_eq!(stalled.lateness, summary(&[stall, stall]));
    assert!(stalled.lateness.max_us > crate::stats::MAX_LATENESS_US);
    assert!(!timing_kept(&stalled));
}

#[test]
fn ingress_is_the_wait_to_be_read_and_entry_the_wait_for_a_wire_already_decided_past() {
    let len = 100;
    // The frame reaches its port at T0, but the loop only reads it at T0 + 150: by then it
    // has decided the bus up to T0 + 100, so the frame can enter the wire no earlier.
    let (decided, read) = (100, 150);
    let entered = T0 + decided;
    let due = entered + wire_ns(len);
    let rig = Rig::new(bus_and_switch());
    rig.at(T0 + decided);
    rig.arrive_stamped(T0 + read, 0, frame(BROADCAST, 0, len, 1), Some(T0));
    rig.at(due);
    // A frame without a receive stamp counts as arriving when it is read: no ingress, no
    // entry delay.
    let t1 = due + 1_000_000;
    rig.arrive_stamped(t1, 1, frame(BROADCAST, 1, len, 2), None);
    rig.at(t1 + wire_ns(len));
    let ran = rig.run();
    assert_eq!(ran.sent(1)[0].at, due);
    assert_eq!(ran.sent(2)[0].at, due);
    let bus = &ran.total().segments[0];
    assert_eq!(bus.ingress, summary(&[read]));
    assert_eq!(bus.entry, summary(&[decided, 0]));
    assert_eq!(bus.lateness, summary(&[0, 0, 0, 0]));
}

#[test]
fn each_write_makes_the_frames_written_after_it_later() {
    // Writing to a port takes 120 ns: of two frames due together, the second is written
    // 120 ns after it was due.
    let write = 120;
    let len = 60;
    let due = T0 + wire_ns(len);
    let rig = Rig::with_write_cost(bus_and_switch(), write);
    rig.arrive(T0, 0, frame(BROADCAST, 0, len, 1));
    rig.at(due);
    let ran = rig.run();
    let mut at = [ran.sent(1)[0].at, ran.sent(2)[0].at];
    at.sort_unstable();
    assert_eq!(at, [due, due + write]);
    assert_eq!(ran.total().segments[0].lateness, summary(&[0, write]));
}
