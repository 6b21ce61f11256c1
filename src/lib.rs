//! `orchestrate`: a declarative experiment orchestrator for interconnect topology studies.

pub mod vcluster;
