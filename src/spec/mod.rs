//! Spec files: the TOML schemas of topologies and experiments, loaded with their source text so
//! that every error points at file:line:column.

pub mod cluster_kind;
pub mod experiment;
pub mod host;
pub mod hostlist;
pub mod limits;
pub mod located;
pub mod multipath;
pub mod names;
pub mod reference;
pub mod topology;
pub mod traffic;

pub use experiment::ExperimentSpec;
pub use host::{HostProfile, HostSpec};
pub use located::{Location, SourceFile, SpecError, SpecErrors, best_match, escape_control};
pub use names::{ByteSize, IfName, InvalidValue, Name, NodeName, Rate};
pub use topology::TopologySpec;

/// Whether a spec's text is an experiment (it names `topologies` or has a `workload`) rather
/// than a topology. Read leniently, so that an experiment with a syntax error or an
/// out-of-range value is still reported as the experiment it is.
pub fn is_experiment(text: &str) -> bool {
    let (root, _) = toml::de::DeTable::parse_recoverable(text);
    let root = root.get_ref();
    root.contains_key("workload") || root.contains_key("topologies")
}

/// Whether a spec's text is an inventory (it has `[defaults]` or an array of `[[host]]`
/// tables; a topology's `host` is a profile name or one table, never an array), read as
/// leniently as [`is_experiment`].
pub fn is_inventory(text: &str) -> bool {
    let (root, _) = toml::de::DeTable::parse_recoverable(text);
    let root = root.get_ref();
    root.contains_key("defaults")
        || root
            .get("host")
            .is_some_and(|h| matches!(h.get_ref(), toml::de::DeValue::Array(_)))
}

/// The JSON Schema of one spec format, one document an editor loads (taplo's `#:schema`).
pub fn json_schema(format: SpecFormat) -> serde_json::Value {
    let schema = match format {
        SpecFormat::Topology => schemars::schema_for!(TopologySpec),
        SpecFormat::Experiment => schemars::schema_for!(ExperimentSpec),
    };
    serde_json::to_value(schema).expect("a schema is JSON")
}

/// The two spec formats, each with a schema of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecFormat {
    Topology,
    Experiment,
}
