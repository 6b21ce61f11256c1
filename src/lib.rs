//! `orchestrate`: a declarative experiment orchestrator for interconnect topology studies.
//!
//! The crate is layered; each layer imports only those listed before it, never one after:
//! 1. [`spec`] reads the TOML files (experiments, topologies, inventories) with their source
//!    locations, so that every problem names file:line:column;
//! 2. [`topology`] resolves a topology into nodes, wires, addresses and routes, and checks
//!    every planned path;
//! 3. [`netconf`] renders each node's apply and teardown scripts from a topology;
//! 4. [`remote`] reaches nodes: inventories, SSH sessions, Slurm allocations, and the
//!    [`remote::NodeSource`] every way of obtaining nodes implements;
//! 5. [`plan`] expands an experiment into configurations and points, with pair placements,
//!    the throughput model and every node's scripts;
//! 6. [`results`] owns the run directory (its layout, writing it as a run goes, reading it
//!    back) and loads what the worker measured into Polars;
//! 7. [`report`] turns a run directory into tables, figures and the studies' answers;
//! 8. [`vcluster`] obtains nodes on this machine: docker containers joined by the tool's own
//!    emulated wires, a [`remote::NodeSource`] like any other;
//! 9. [`runner`] runs a plan on nodes from any source, stage by stage, into a run directory.
//!
//! The binary (`main.rs` and its `*_cmd.rs` files) only parses the command line and wires
//! these together; it chooses the node source, so the runner never names the virtual cluster.

pub mod netconf;
pub mod plan;
pub mod remote;
pub mod report;
pub mod results;
pub mod runner;
pub mod spec;
pub mod topology;
pub mod vcluster;
