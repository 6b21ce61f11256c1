//! `orchestrate`: a declarative experiment orchestrator for interconnect topology studies.
//!
//! The crate is layered: [`spec`] reads TOML, [`topology`] resolves it into nodes, wires,
//! addresses and routes, [`plan`] expands an experiment into measurement points and per-node
//! scripts, and [`netconf`] renders those scripts. [`remote`] reaches nodes over SSH.
//! [`results`] stores what the worker measured and [`report`] turns it into tables and figures.
//! Lower layers never import higher ones.

pub mod netconf;
pub mod plan;
pub mod remote;
pub mod report;
pub mod results;
pub mod runner;
pub mod spec;
pub mod topology;
pub mod vcluster;
