//! The management subnet of a netns cluster: one no route or address of this host overlaps,
//! so that the host reaches its nodes through the cluster's bridge and nothing else changes.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::Deserialize;

use crate::vcluster::cmd::Cmd;
use crate::vcluster::error::{Error, Result};

/// 2048 addresses: the gateway and up to 2045 nodes.
pub const PREFIX_LEN: u8 = 21;

/// The first candidate and the last: the top of 10.0.0.0/8 downwards, far from docker's
/// default pools (172.17.0.0/12, 192.168.0.0/16) and from the 10.x networks people tend to
/// number from the bottom.
const HIGHEST: Ipv4Addr = Ipv4Addr::new(10, 255, 248, 0);
const LOWEST: Ipv4Addr = Ipv4Addr::new(10, 200, 0, 0);

/// The highest candidate /21 that overlaps none of `taken`.
pub fn choose(taken: &[Ipv4Net]) -> Option<Ipv4Net> {
    let step = 1u32 << (32 - u32::from(PREFIX_LEN));
    let mut at = u32::from(HIGHEST);
    while at >= u32::from(LOWEST) {
        let candidate = Ipv4Net::new(Ipv4Addr::from(at), PREFIX_LEN).expect("a valid prefix");
        if !taken.iter().any(|t| overlaps(*t, candidate)) {
            return Some(candidate);
        }
        at -= step;
    }
    None
}

fn overlaps(a: Ipv4Net, b: Ipv4Net) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

#[derive(Deserialize)]
struct Route {
    dst: String,
}

#[derive(Deserialize)]
struct AddrInfo {
    #[serde(default)]
    local: Option<String>,
    #[serde(default)]
    prefixlen: Option<u8>,
}

#[derive(Deserialize)]
struct Interface {
    #[serde(default)]
    addr_info: Vec<AddrInfo>,
}

/// The destinations of `ip -j -4 route show table all`; the default route is no network of
/// its own (it would overlap everything).
fn parse_routes(json: &str) -> Result<Vec<Ipv4Net>> {
    let routes: Vec<Route> = serde_json::from_str(json).map_err(|e| unexpected("routes", e))?;
    Ok(routes
        .iter()
        .filter(|r| r.dst != "default")
        .filter_map(|r| match r.dst.split_once('/') {
            Some(_) => r.dst.parse().ok(),
            None => r.dst.parse::<Ipv4Addr>().ok().map(Ipv4Net::from),
        })
        .collect())
}

/// The networks of `ip -j -4 addr show`.
fn parse_addresses(json: &str) -> Result<Vec<Ipv4Net>> {
    let interfaces: Vec<Interface> =
        serde_json::from_str(json).map_err(|e| unexpected("addresses", e))?;
    Ok(interfaces
        .iter()
        .flat_map(|i| &i.addr_info)
        .filter_map(|a| {
            let addr: Ipv4Addr = a.local.as_deref()?.parse().ok()?;
            Ipv4Net::new(addr, a.prefixlen?).ok().map(|n| n.trunc())
        })
        .collect())
}

fn unexpected(what: &str, e: serde_json::Error) -> Error {
    Error::Unexpected {
        what: format!("reading this host's {what}"),
        command: "ip -j -4".into(),
        detail: format!("{e}; iproute2 with JSON output (-j) is needed"),
    }
}

/// Every network this host routes to or has an address in.
pub fn taken_on_host() -> Result<Vec<Ipv4Net>> {
    let routes = Cmd::new("ip", "reading this host's routes")
        .args(["-j", "-4", "route", "show", "table", "all"])
        .run()?;
    let addresses = Cmd::new("ip", "reading this host's addresses")
        .args(["-j", "-4", "addr", "show"])
        .run()?;
    let mut taken = parse_routes(&routes)?;
    taken.extend(parse_addresses(&addresses)?);
    Ok(taken)
}

/// A free management subnet, or an error saying what to free.
pub fn free_on_host() -> Result<Ipv4Net> {
    choose(&taken_on_host()?).ok_or_else(|| Error::Host {
        problem: format!(
            "no /{PREFIX_LEN} between {LOWEST} and {HIGHEST} is free of this host's routes and \
             addresses for a netns cluster's management network"
        ),
        what_to_do: "take down clusters you no longer need (`orchestrate cluster down --all`)"
            .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> Ipv4Net {
        s.parse().unwrap()
    }

    #[test]
    fn the_highest_free_candidate_is_chosen() {
        assert_eq!(choose(&[]), Some(net("10.255.248.0/21")));
        // A host route inside the first candidate, and a wider network over the second.
        let taken = [net("10.255.250.7/32"), net("10.255.240.0/20")];
        assert_eq!(choose(&taken), Some(net("10.255.232.0/21")));
        // Unrelated networks change nothing.
        let other = [
            net("172.17.0.0/16"),
            net("192.0.2.0/24"),
            net("10.0.0.0/16"),
        ];
        assert_eq!(choose(&other), Some(net("10.255.248.0/21")));
    }

    #[test]
    fn a_host_that_routes_all_of_ten_has_no_candidate() {
        assert_eq!(choose(&[net("10.0.0.0/8")]), None);
        assert_eq!(choose(&[net("10.128.0.0/9")]), None);
    }

    #[test]
    fn routes_and_addresses_are_read_and_the_default_route_is_not_a_network() {
        let routes = r#"[{"dst":"default","gateway":"192.0.2.1","dev":"eth0"},
            {"dst":"172.17.0.0/16","dev":"docker0"},{"dst":"10.255.250.9","dev":"x"}]"#;
        assert_eq!(
            parse_routes(routes).unwrap(),
            [net("172.17.0.0/16"), net("10.255.250.9/32")]
        );
        let addrs = r#"[{"ifname":"lo","addr_info":[{"local":"127.0.0.1","prefixlen":8}]},
            {"ifname":"eth0","addr_info":[{"local":"10.255.249.3","prefixlen":22}]}]"#;
        let taken = parse_addresses(addrs).unwrap();
        assert_eq!(taken, [net("127.0.0.0/8"), net("10.255.248.0/22")]);
        assert_eq!(choose(&taken), Some(net("10.255.240.0/21")));
    }
}
