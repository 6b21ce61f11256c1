//! Generators: topologies described by a pattern (a grid of buses, parallel buses, one bus or
//! switch) rather than listed node by node. Each fills a [`Draft`] exactly as the explicit
//! form would, so both resolve through the same checks.

use toml::Spanned;

use crate::spec::limits::{MAX_INTERFACES_PER_NODE, MAX_NODES};
use crate::spec::topology::{Emulation, GeneratorKind, GeneratorSpec, Interconnect, Medium};
use crate::spec::{IfName, Name, NodeName, Rate};

use super::draft::{Draft, DraftBond, DraftPort, DraftSegment, DraftSwitch, Span};

const DEFAULT_RATE: Rate = Rate::from_bits_per_s(10_000_000);

/// A problem with a generator, located at the key at fault.
pub type GenError = (Span, String);

/// Fills `draft`'s nodes, segments, switches and bonds from `spec`, or says, for every field
/// at fault, what is missing, out of range or does not apply. `span` is the `[generator]`
/// table, where errors about a missing field point.
pub fn generate(spec: &GeneratorSpec, span: &Span, draft: &mut Draft) -> Result<(), Vec<GenError>> {
    let mut errors = check_fields(spec);
    let shape = match spec.kind {
        GeneratorKind::Grid => grid_shape(spec, span, &mut errors),
        GeneratorKind::Bus => bus_shape(spec, span, &mut errors),
        GeneratorKind::Single => single_shape(spec, span, &mut errors),
    };
    let Some(shape) = shape.filter(|_| errors.is_empty()) else {
        return Err(errors);
    };
    let g = Gen {
        span: span.clone(),
        rate: spec.rate.as_ref().map_or(DEFAULT_RATE, |r| *r.get_ref()),
        medium: spec.medium.unwrap_or_default(),
        emulation: spec.emulation.unwrap_or(draft.emulation),
    };
    if let Some(host) = spec.host {
        draft.host = host;
    }
    let prefix = spec
        .prefix
        .clone()
        .unwrap_or_else(|| "n".parse().expect("valid"));
    g.build(spec, shape, &prefix, draft)
        .map_err(|e| vec![(span.clone(), e)])
}

/// The checked dimensions of what a generator builds.
#[derive(Clone, Copy)]
enum Shape {
    Grid {
        rows: u32,
        cols: u32,
        interconnect: Interconnect,
    },
    Bus {
        nodes: u32,
        buses: u32,
    },
    Single {
        nodes: u32,
    },
}

/// "grid", "bus" or "single", as the spec spells the kind.
fn kind_name(spec: &GeneratorSpec) -> String {
    format!("{:?}", spec.kind).to_lowercase()
}

/// Every field given is one the generator's kind takes; each that is not is reported at its
/// value.
fn check_fields(spec: &GeneratorSpec) -> Vec<GenError> {
    let allowed: &[&str] = match spec.kind {
        GeneratorKind::Grid => &["rows", "cols", "interconnect"],
        GeneratorKind::Bus => &["nodes", "buses"],
        GeneratorKind::Single => &["nodes"],
    };
    let span_of = |v: &Option<Spanned<u32>>| v.as_ref().map(Spanned::span);
    let given = [
        ("rows", span_of(&spec.rows)),
        ("cols", span_of(&spec.cols)),
        ("nodes", span_of(&spec.node_count)),
        ("buses", span_of(&spec.buses)),
    ];
    let kind = kind_name(spec);
    let mut errors: Vec<GenError> = given
        .into_iter()
        .filter_map(|(field, span)| span.map(|s| (field, s)))
        .filter(|(field, _)| !allowed.contains(field))
        .map(|(field, span)| {
            (
                span,
                format!(
                    "`{field}` does not apply to generator kind \"{kind}\" (it takes {})",
                    allowed.join(", ")
                ),
            )
        })
        .collect();
    if let Some(i) = &spec.interconnect
        && !allowed.contains(&"interconnect")
    {
        errors.push((
            i.span(),
            format!("`interconnect` does not apply to generator kind \"{kind}\""),
        ));
    }
    errors
}

/// A count the generator's kind needs, from `min` to `max`; reported at the value, or at the
/// table when it is missing.
fn need(
    spec: &GeneratorSpec,
    v: &Option<Spanned<u32>>,
    field: &str,
    (min, max): (u32, usize),
    table: &Span,
    errors: &mut Vec<GenError>,
) -> Option<u32> {
    let Some(v) = v else {
        errors.push((
            table.clone(),
            format!("generator kind \"{}\" needs `{field}`", kind_name(spec)),
        ));
        return None;
    };
    let n = *v.get_ref();
    if n < min || n as usize > max {
        errors.push((
            v.span(),
            format!("`{field}` must be from {min} to {max}, got {n}"),
        ));
        return None;
    }
    Some(n)
}

/// A node count is at most [`MAX_NODES`].
fn total_nodes(count: u64, at: Span, errors: &mut Vec<GenError>) -> bool {
    if count > MAX_NODES as u64 {
        errors.push((
            at,
            format!("{count} nodes is more than a topology may have (at most {MAX_NODES})"),
        ));
        return false;
    }
    true
}

fn grid_shape(spec: &GeneratorSpec, table: &Span, errors: &mut Vec<GenError>) -> Option<Shape> {
    let rows = need(spec, &spec.rows, "rows", (2, MAX_NODES / 2), table, errors);
    let cols = need(spec, &spec.cols, "cols", (2, MAX_NODES / 2), table, errors);
    let interconnect = spec.interconnect.as_ref().map(|i| *i.get_ref());
    if interconnect.is_none() {
        errors.push((
            table.clone(),
            "generator kind \"grid\" needs `interconnect` (\"routed\" or \"switched\")".into(),
        ));
    }
    if let Some(b) = &spec.bond
        && interconnect == Some(Interconnect::Routed)
    {
        errors.push((
            b.span(),
            "a bond over a routed mesh's row and column buses would put one address on two \
             subnets joined only by forwarding nodes; bond a switched mesh \
             (interconnect = \"switched\") instead"
                .into(),
        ));
    }
    let (rows, cols, interconnect) = (rows?, cols?, interconnect?);
    let at = spec.cols.as_ref().map_or(table.clone(), Spanned::span);
    total_nodes(u64::from(rows) * u64::from(cols), at, errors).then_some(Shape::Grid {
        rows,
        cols,
        interconnect,
    })
}

fn bus_shape(spec: &GeneratorSpec, table: &Span, errors: &mut Vec<GenError>) -> Option<Shape> {
    let nodes = need(
        spec,
        &spec.node_count,
        "nodes",
        (2, MAX_NODES),
        table,
        errors,
    );
    let buses = match &spec.buses {
        None => Some(2),
        some => need(
            spec,
            some,
            "buses",
            (1, MAX_INTERFACES_PER_NODE),
            table,
            errors,
        ),
    }?;
    if let Some(b) = &spec.bond
        && buses < 2
    {
        errors.push((
            b.span(),
            format!("a bond needs two slaves or more, and {buses} bus gives each node one"),
        ));
        return None;
    }
    Some(Shape::Bus {
        nodes: nodes?,
        buses,
    })
}

fn single_shape(spec: &GeneratorSpec, table: &Span, errors: &mut Vec<GenError>) -> Option<Shape> {
    let nodes = need(
        spec,
        &spec.node_count,
        "nodes",
        (2, MAX_NODES),
        table,
        errors,
    );
    if let Some(b) = &spec.bond {
        errors.push((
            b.span(),
            "a single network has one interface per node: nothing to bond".into(),
        ));
        return None;
    }
    Some(Shape::Single { nodes: nodes? })
}

/// `n01`..`n16`: zero-padded so names sort in order.
fn node_names(prefix: &NodeName, count: u32) -> Result<Vec<NodeName>, String> {
    let width = count.to_string().len().max(2);
    (1..=count)
        .map(|i| {
            format!("{prefix}{i:0width$}")
                .parse()
                .map_err(|e: crate::spec::InvalidValue| format!("`prefix`: {}", e.0))
        })
        .collect()
}

struct Gen {
    span: Span,
    rate: Rate,
    medium: Medium,
    emulation: Emulation,
}

impl Gen {
    fn name<T: std::str::FromStr>(&self, s: &str) -> T
    where
        T::Err: std::fmt::Debug,
    {
        s.parse().expect("generated names are valid")
    }

    fn build(
        &self,
        spec: &GeneratorSpec,
        shape: Shape,
        prefix: &NodeName,
        draft: &mut Draft,
    ) -> Result<(), String> {
        match shape {
            Shape::Grid {
                rows,
                cols,
                interconnect,
            } => self.grid(spec, (rows, cols, interconnect), prefix, draft),
            Shape::Bus { nodes, buses } => self.buses(spec, nodes, buses, prefix, draft),
            Shape::Single { nodes } => self.single(nodes, prefix, draft),
        }
    }

    /// `rows` x `cols` nodes, each on its row's bus (eth1) and its column's (eth2); routed
    /// through the nodes, or with the rows and the columns each joined by a switch.
    fn grid(
        &self,
        spec: &GeneratorSpec,
        (rows, cols, interconnect): (u32, u32, Interconnect),
        prefix: &NodeName,
        draft: &mut Draft,
    ) -> Result<(), String> {
        let names = node_names(prefix, rows * cols)?;
        let at = |r: u32, c: u32| names[(r * cols + c) as usize].clone();
        self.add_nodes(draft, &names);
        for r in 0..rows {
            let members = (0..cols).map(|c| (at(r, c), "eth1")).collect();
            draft
                .segments
                .push(self.segment(&format!("row{}", r + 1), members));
        }
        for c in 0..cols {
            let members = (0..rows).map(|r| (at(r, c), "eth2")).collect();
            draft
                .segments
                .push(self.segment(&format!("col{}", c + 1), members));
        }
        if interconnect == Interconnect::Switched {
            let rows_sw = (1..=rows).map(|r| format!("row{r}")).collect::<Vec<_>>();
            let cols_sw = (1..=cols).map(|c| format!("col{c}")).collect::<Vec<_>>();
            draft.switches.push(self.switch("row-switch", &rows_sw));
            draft.switches.push(self.switch("col-switch", &cols_sw));
        }
        if let Some(t) = &spec.bond {
            self.bond_all(draft, t.get_ref(), &["eth1", "eth2"]);
        }
        Ok(())
    }

    /// Every node on each of `buses` parallel buses (bus-a on eth1, bus-b on eth2, ...).
    fn buses(
        &self,
        spec: &GeneratorSpec,
        n: u32,
        buses: u32,
        prefix: &NodeName,
        draft: &mut Draft,
    ) -> Result<(), String> {
        let names = node_names(prefix, n)?;
        self.add_nodes(draft, &names);
        let ifnames: Vec<String> = (1..=buses).map(|b| format!("eth{b}")).collect();
        for (b, ifname) in ifnames.iter().enumerate() {
            let members = names.iter().map(|n| (n.clone(), ifname.as_str())).collect();
            let name = format!("bus-{}", (b'a' + (b as u8 % 26)) as char);
            let name = if buses > 26 {
                format!("bus{}", b + 1)
            } else {
                name
            };
            draft.segments.push(self.segment(&name, members));
        }
        if let Some(t) = &spec.bond {
            let refs: Vec<&str> = ifnames.iter().map(String::as_str).collect();
            self.bond_all(draft, t.get_ref(), &refs);
        }
        Ok(())
    }

    /// Every node on one network: a bus, or a switch when the medium is switched.
    fn single(&self, n: u32, prefix: &NodeName, draft: &mut Draft) -> Result<(), String> {
        let names = node_names(prefix, n)?;
        self.add_nodes(draft, &names);
        let name = match self.medium {
            Medium::Shared => "bus",
            Medium::Switched => "switch",
        };
        let members = names.iter().map(|n| (n.clone(), "eth1")).collect();
        draft.segments.push(self.segment(name, members));
        Ok(())
    }

    /// The generated nodes, each located at the generator.
    fn add_nodes(&self, draft: &mut Draft, names: &[NodeName]) {
        draft.nodes = names
            .iter()
            .map(|n| (n.clone(), self.span.clone()))
            .collect();
    }

    fn segment(&self, name: &str, members: Vec<(NodeName, &str)>) -> DraftSegment {
        DraftSegment {
            name: (self.name::<Name>(name), self.span.clone()),
            rate: self.rate,
            medium: self.medium,
            emulation: self.emulation,
            members: members
                .into_iter()
                .map(|(node, ifname)| DraftPort {
                    node,
                    interface: self.name(ifname),
                    span: self.span.clone(),
                })
                .collect(),
        }
    }

    fn switch(&self, name: &str, segments: &[String]) -> DraftSwitch {
        DraftSwitch {
            name: (self.name(name), self.span.clone()),
            segments: segments
                .iter()
                .map(|s| (self.name(s), self.span.clone()))
                .collect(),
        }
    }

    fn bond_all(
        &self,
        draft: &mut Draft,
        t: &crate::spec::topology::BondTemplate,
        slaves: &[&str],
    ) {
        let name = t.name.clone().unwrap_or_else(|| self.name("bond0"));
        for (node, _) in draft.nodes.clone() {
            draft.bonds.push(DraftBond {
                node: (node, self.span.clone()),
                name: (name.clone(), self.span.clone()),
                mode: (t.mode, self.span.clone()),
                slaves: slaves
                    .iter()
                    .map(|s| (self.name::<IfName>(s), self.span.clone()))
                    .collect(),
                miimon: t.miimon,
                xmit_hash_policy: t.xmit_hash_policy.map(|x| (x, self.span.clone())),
                primary: None,
                driver: t.driver,
            });
        }
    }
}
