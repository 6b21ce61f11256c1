//! `orchestrate`: a declarative experiment orchestrator for interconnect topology studies.
//!
//! The crate is layered: [`spec`] reads TOML, [`topology`] resolves it into nodes, wires,
//! addresses and routes, [`plan`] expands an experiment into measurement points and per-node
//! scripts, and [`netconf`] renders those scripts. Lower layers never import higher ones.

pub mod netconf;
pub mod plan;
pub mod remote;
pub mod spec;
pub mod topology;
pub mod vcluster;
