//! Settling `driver = "auto"` for one node: the kernel's bonding driver where the node's probe
//! found it, the worker's userspace bond where it did not. Rendering shows `auto` bonds on the
//! kernel path; whoever has the probe calls this first, so the scripts say what will run.

use crate::topology::{BondDriver, DriverChoice, Node};

/// `node` with every `auto` bond given the driver the node has. Bonds that name a driver
/// keep it: a `kernel` bond on a node without the driver still fails the apply checks.
pub fn settle_bond_drivers(node: &Node, kernel_has_bonding: bool) -> Node {
    let mut n = node.clone();
    for b in n
        .bonds
        .iter_mut()
        .filter(|b| b.driver == DriverChoice::Auto)
    {
        b.driver = DriverChoice::Named(if kernel_has_bonding {
            BondDriver::Kernel
        } else {
            BondDriver::Userspace
        });
    }
    n
}
