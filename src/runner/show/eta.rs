//! The time a run has left: the plan's estimate of what remains, corrected by how the points
//! measured so far compared with their estimates. The plan's estimates come from wire rates
//! and are good to tens of percent; the ratio of measured to estimated time of the finished
//! points carries what they miss on this cluster (process start-up, SSH round trips, a
//! slower medium) over to the points still to come. Setting up a configuration (bringing up
//! a virtual cluster, installing, applying) is not a point: once one has been set up, the
//! configurations left are counted at the mean measured setup time instead of the plan's.

use std::time::Duration;

use crate::plan::sweep::CONFIGURE_OVERHEAD;

#[derive(Debug, Clone, PartialEq)]
pub struct Eta {
    /// The plan's estimates of the points not finished yet, summed.
    points_left: Duration,
    /// Configurations with points to measure that have not been set up yet.
    configurations_left: u32,
    /// The finished points' estimates and measured times, summed.
    estimated_done: Duration,
    measured_done: Duration,
    /// Setup times measured so far.
    setups: Vec<Duration>,
}

impl Eta {
    /// Before the first point: the estimates of every point to measure, and how many
    /// configurations they need.
    pub fn new(points_left: impl IntoIterator<Item = Duration>, configurations_left: u32) -> Eta {
        Eta {
            points_left: points_left.into_iter().sum(),
            configurations_left,
            estimated_done: Duration::ZERO,
            measured_done: Duration::ZERO,
            setups: Vec::new(),
        }
    }

    pub fn configuration_started(&mut self) {
        self.configurations_left = self.configurations_left.saturating_sub(1);
    }

    /// A configuration took `took` from its start to its first point.
    pub fn configuration_set_up(&mut self, took: Duration) {
        self.setups.push(took);
    }

    /// A point estimated at `estimate` took `measured`.
    pub fn point_finished(&mut self, estimate: Duration, measured: Duration) {
        self.points_left = self.points_left.saturating_sub(estimate);
        self.estimated_done += estimate;
        self.measured_done += measured;
    }

    /// Measured over estimated time of the finished points; 1 before any has finished.
    pub fn ratio(&self) -> f64 {
        if self.estimated_done.is_zero() {
            1.0
        } else {
            self.measured_done.as_secs_f64() / self.estimated_done.as_secs_f64()
        }
    }

    /// The points left at the corrected rate, and the configurations left at the mean setup
    /// time measured (the plan's before any).
    pub fn left(&self) -> Duration {
        let setup = match self.setups.len() {
            0 => CONFIGURE_OVERHEAD,
            n => self.setups.iter().sum::<Duration>() / n as u32,
        };
        self.points_left.mul_f64(self.ratio()) + setup * self.configurations_left
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn before_any_point_the_plans_estimate_stands() {
        let eta = Eta::new([secs(10), secs(20), secs(30)], 2);
        assert_eq!(eta.ratio(), 1.0);
        assert_eq!(eta.left(), secs(60) + CONFIGURE_OVERHEAD * 2);
    }

    #[test]
    fn points_slower_than_estimated_stretch_the_rest_by_the_same_ratio() {
        let mut eta = Eta::new([secs(10), secs(10), secs(20), secs(40)], 1);
        eta.configuration_started();
        // Two points estimated at 10 s each took 15 s and 25 s: 40 s for 20 s, twice as slow.
        eta.point_finished(secs(10), secs(15));
        eta.point_finished(secs(10), secs(25));
        assert_eq!(eta.ratio(), 2.0);
        assert_eq!(eta.left(), secs(120));
    }

    #[test]
    fn faster_points_shorten_it_and_configurations_left_keep_their_setup_time() {
        let mut eta = Eta::new([secs(40), secs(40), secs(40)], 3);
        eta.configuration_started();
        eta.point_finished(secs(40), secs(10));
        assert_eq!(eta.ratio(), 0.25);
        assert_eq!(eta.left(), secs(20) + CONFIGURE_OVERHEAD * 2);
    }

    #[test]
    fn configurations_left_take_the_mean_measured_setup_once_there_is_one() {
        let mut eta = Eta::new([secs(10); 6], 3);
        eta.configuration_started();
        eta.configuration_set_up(secs(50));
        eta.point_finished(secs(10), secs(10));
        assert_eq!(eta.left(), secs(50) + secs(50) * 2);
        eta.configuration_started();
        eta.configuration_set_up(secs(70));
        assert_eq!(eta.left(), secs(50) + secs(60));
    }

    #[test]
    fn after_the_last_point_nothing_is_left() {
        let mut eta = Eta::new([secs(3)], 1);
        eta.configuration_started();
        eta.point_finished(secs(3), secs(7));
        assert_eq!(eta.left(), Duration::ZERO);
        // More starts than planned (a resumed run's bookkeeping) never go below zero.
        eta.configuration_started();
        assert_eq!(eta.left(), Duration::ZERO);
    }
}
