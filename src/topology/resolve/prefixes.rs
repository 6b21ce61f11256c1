//! A prefix for every subnet: a subnet with addresses given by hand takes their network; the
//! others are carved, in order, from the addressing base around those.

use ipnet::Ipv4Net;

use crate::spec::SpecErrors;
use crate::topology::draft::Draft;

use super::errors::Errors;
use super::links::LinkGroup;
use super::overrides::Overrides;

/// Returns one prefix per group, in the groups' order.
pub(super) fn assign_prefixes(
    draft: &Draft,
    groups: &[LinkGroup],
    overrides: &Overrides,
    errs: &mut Errors,
) -> Result<Vec<Ipv4Net>, SpecErrors> {
    check_prefix_len(draft, errs)?;
    let prefixes = prefixes_given(groups, overrides, errs);
    let fixed: Vec<(Ipv4Net, usize)> = prefixes
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.map(|p| (p, i)))
        .collect();
    check_overlaps(&fixed, groups, overrides, errs);
    errs.check()?;
    carve(draft, prefixes, &fixed, errs)
}

/// The subnet prefix lies between the base's and /30 (a /31 or /32 has no room for hosts).
fn check_prefix_len(draft: &Draft, errs: &mut Errors) -> Result<(), SpecErrors> {
    let (base, _) = &draft.base;
    let (prefix_len, prefix_span) = &draft.prefix;
    if *prefix_len < base.prefix_len() || *prefix_len > 30 {
        let at = if prefix_span.is_empty() {
            &draft.base.1
        } else {
            prefix_span
        };
        errs.push(
            at,
            format!(
                "prefix {prefix_len} does not fit: expected between the base's /{} and /30",
                base.prefix_len()
            ),
        );
        errs.check()?;
    }
    Ok(())
}

/// The network of each group's hand-given addresses, which must all agree; `None` where the
/// group has none.
fn prefixes_given(
    groups: &[LinkGroup],
    overrides: &Overrides,
    errs: &mut Errors,
) -> Vec<Option<Ipv4Net>> {
    let mut prefixes: Vec<Option<Ipv4Net>> = vec![None; groups.len()];
    for (gi, group) in groups.iter().enumerate() {
        for l in &group.links {
            if let Some((net, span)) = overrides.of(l) {
                let trunc = net.trunc();
                match prefixes[gi] {
                    None => prefixes[gi] = Some(trunc),
                    Some(p) if p != trunc => errs.push(
                        span,
                        format!("address {net} is not in {p}, the subnet already given to the other interfaces on this network"),
                    ),
                    Some(_) => {}
                }
            }
        }
    }
    prefixes
}

/// No two hand-given subnets overlap. `fixed` pairs each with its group's position.
fn check_overlaps(
    fixed: &[(Ipv4Net, usize)],
    groups: &[LinkGroup],
    overrides: &Overrides,
    errs: &mut Errors,
) {
    for (i, (a, ai)) in fixed.iter().enumerate() {
        for (b, bi) in &fixed[i + 1..] {
            if a.contains(&b.network()) || b.contains(&a.network()) {
                let span = overrides
                    .first_span_among(&groups[*bi].links)
                    .unwrap_or(0..0);
                errs.push(
                    &span,
                    format!(
                        "subnet {b} overlaps {a}, used on network(s) {}",
                        groups[*ai]
                            .networks
                            .iter()
                            .map(|n| n.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
        }
    }
}

/// Fills each missing prefix with the base's next subnet that overlaps no hand-given one.
fn carve(
    draft: &Draft,
    mut prefixes: Vec<Option<Ipv4Net>>,
    fixed: &[(Ipv4Net, usize)],
    errs: &mut Errors,
) -> Result<Vec<Ipv4Net>, SpecErrors> {
    let (base, base_span) = &draft.base;
    let prefix_len = draft.prefix.0;
    let needed = prefixes.len();
    let mut candidates = base.subnets(prefix_len).expect("prefix checked");
    for p in prefixes.iter_mut().filter(|p| p.is_none()) {
        let next = candidates.find(|c| {
            !fixed
                .iter()
                .any(|(f, _)| f.contains(&c.network()) || c.contains(&f.network()))
        });
        match next {
            Some(c) => *p = Some(c),
            None => {
                let bits = usize::BITS - needed.saturating_sub(1).leading_zeros();
                let help = format!(
                    "{needed} subnets need {bits} bits between the base and the prefix: give a \
                     `base` of /{} or shorter under [addressing], or a `prefix` of {} or more \
                     if the subnets still hold every node",
                    u32::from(prefix_len).saturating_sub(bits),
                    u32::from(base.prefix_len()) + bits,
                );
                let span = [base_span, &draft.prefix.1]
                    .into_iter()
                    .find(|s| !s.is_empty())
                    .cloned()
                    .unwrap_or_else(|| draft.nodes.first().map_or(0..0, |(_, s)| s.clone()));
                errs.push_help(
                    &span,
                    format!("addressing base {base} has too few /{prefix_len} subnets for the {needed} this topology needs"),
                    help,
                );
                return Err(errs.check().expect_err("just pushed"));
            }
        }
    }
    Ok(prefixes.into_iter().map(|p| p.expect("assigned")).collect())
}
