//! Plans: an experiment expanded into configurations and points, with pair placements, time
//! estimates and every node's scripts, so that a person sees exactly what a run will do
//! before anything is touched.

pub mod estimate;
pub mod experiment;
pub mod inventory;
pub mod placement;
pub mod rank_placement;
pub mod render;
pub mod sweep;
pub mod throughput_model;
pub mod twin;

pub use experiment::{Experiment, load};
pub use inventory::{CheckedInventory, check_inventory};
pub use placement::{Placement, PlacementError, PlannedPair, place};
pub use sweep::{Configuration, PlacementEntry, Plan, Point, expand};
