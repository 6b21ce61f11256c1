//! Spec files: the TOML schemas of topologies and experiments, loaded with their source text so
//! that every error points at file:line:column.

pub mod experiment;
pub mod host;
pub mod names;
pub mod reference;
pub mod source;
pub mod topology;

pub use experiment::ExperimentSpec;
pub use host::{HostProfile, HostSpec};
pub use names::{ByteSize, IfName, InvalidValue, Name, NodeName, Rate};
pub use source::{Location, SourceFile, SpecError, SpecErrors, best_match};
pub use topology::TopologySpec;

/// The JSON Schema of both spec formats, for editors.
pub fn json_schema() -> serde_json::Value {
    serde_json::json!({
        "topology": schemars::schema_for!(TopologySpec),
        "experiment": schemars::schema_for!(ExperimentSpec),
    })
}
