//! Generators: topologies described by a pattern (a grid of buses, parallel buses, one bus or
//! switch) rather than listed node by node. Each fills a [`Draft`] exactly as the explicit
//! form would, so both resolve through the same checks.

use crate::spec::topology::{Emulation, GeneratorKind, GeneratorSpec, Interconnect, Medium};
use crate::spec::{IfName, Name, NodeName, Rate};

use super::draft::{Draft, DraftBond, DraftPort, DraftSegment, DraftSwitch, Span};

const DEFAULT_RATE: Rate = Rate::from_bits_per_s(10_000_000);

/// Fills `draft`'s nodes, segments, switches and bonds from `spec`, or says which field is
/// missing or does not apply.
pub fn generate(spec: &GeneratorSpec, span: &Span, draft: &mut Draft) -> Result<(), String> {
    check_fields(spec)?;
    let g = Gen {
        span: span.clone(),
        rate: spec.rate.unwrap_or(DEFAULT_RATE),
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
    match spec.kind {
        GeneratorKind::Grid => g.grid(spec, &prefix, draft),
        GeneratorKind::Bus => g.buses(spec, &prefix, draft),
        GeneratorKind::Single => g.single(spec, &prefix, draft),
    }
}

/// "grid", "bus" or "single", as the spec spells the kind.
fn kind_name(spec: &GeneratorSpec) -> String {
    format!("{:?}", spec.kind).to_lowercase()
}

/// Every field given is one the generator's kind takes.
fn check_fields(spec: &GeneratorSpec) -> Result<(), String> {
    let allowed: &[&str] = match spec.kind {
        GeneratorKind::Grid => &["rows", "cols", "interconnect"],
        GeneratorKind::Bus => &["nodes", "buses"],
        GeneratorKind::Single => &["nodes"],
    };
    let given = [
        ("rows", spec.rows.is_some()),
        ("cols", spec.cols.is_some()),
        ("interconnect", spec.interconnect.is_some()),
        ("nodes", spec.node_count.is_some()),
        ("buses", spec.buses.is_some()),
    ];
    let kind = kind_name(spec);
    for (field, present) in given {
        if present && !allowed.contains(&field) {
            return Err(format!(
                "`{field}` does not apply to generator kind \"{kind}\" (it takes {})",
                allowed.join(", ")
            ));
        }
    }
    Ok(())
}

/// A count the generator's kind needs, at least `min`.
fn need(spec: &GeneratorSpec, v: Option<u32>, field: &str, min: u32) -> Result<u32, String> {
    let v = v.ok_or_else(|| format!("generator kind \"{}\" needs `{field}`", kind_name(spec)))?;
    if v < min {
        return Err(format!("`{field}` must be at least {min}, got {v}"));
    }
    Ok(v)
}

/// `n01`..`n16`: zero-padded so names sort in order.
fn node_names(prefix: &NodeName, count: u32) -> Result<Vec<NodeName>, String> {
    if count > 4096 {
        return Err(format!(
            "{count} nodes is more than this tool plans for (4096)"
        ));
    }
    let width = count.to_string().len().max(2);
    (1..=count)
        .map(|i| {
            format!("{prefix}{i:0width$}")
                .parse()
                .map_err(|e: crate::spec::InvalidValue| e.0)
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

    /// `rows` x `cols` nodes, each on its row's bus (eth1) and its column's (eth2); routed
    /// through the nodes, or with the rows and the columns each joined by a switch.
    fn grid(
        &self,
        spec: &GeneratorSpec,
        prefix: &NodeName,
        draft: &mut Draft,
    ) -> Result<(), String> {
        let rows = need(spec, spec.rows, "rows", 2)?;
        let cols = need(spec, spec.cols, "cols", 2)?;
        let interconnect = spec
            .interconnect
            .ok_or("generator kind \"grid\" needs `interconnect` (\"routed\" or \"switched\")")?;
        if spec.bond.is_some() && interconnect == Interconnect::Routed {
            return Err(
                "a bond over a routed mesh's row and column buses would put one \
                        address on two subnets joined only by forwarding nodes; bond a \
                        switched mesh (interconnect = \"switched\") instead"
                    .into(),
            );
        }
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
            self.bond_all(draft, t, &["eth1", "eth2"]);
        }
        Ok(())
    }

    /// Every node on each of `buses` parallel buses (bus-a on eth1, bus-b on eth2, ...).
    fn buses(
        &self,
        spec: &GeneratorSpec,
        prefix: &NodeName,
        draft: &mut Draft,
    ) -> Result<(), String> {
        let n = need(spec, spec.node_count, "nodes", 2)?;
        let buses = spec.buses.unwrap_or(2);
        if buses == 0 {
            return Err("`buses` must be at least 1".into());
        }
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
            self.bond_all(draft, t, &refs);
        }
        Ok(())
    }

    /// Every node on one network: a bus, or a switch when the medium is switched.
    fn single(
        &self,
        spec: &GeneratorSpec,
        prefix: &NodeName,
        draft: &mut Draft,
    ) -> Result<(), String> {
        let n = need(spec, spec.node_count, "nodes", 2)?;
        if spec.bond.is_some() {
            return Err("a single network has one interface per node: nothing to bond".into());
        }
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
