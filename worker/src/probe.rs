//! `probe`: facts about this node as JSON — kernel, interfaces (name, MTU, speed, addresses,
//! qdiscs), whether the bonding driver, netem and TUN are available, IP forwarding, Multipath
//! TCP and the multipath route hash, and the clock source — so the controller can check a node
//! before touching it and record it in the run's manifest. Read-only: it changes nothing.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

fn read(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn read_num(path: impl AsRef<Path>) -> Option<i64> {
    read(path).and_then(|s| s.parse().ok())
}

/// The kernel configuration, if the kernel exposes it.
fn kernel_config() -> Option<String> {
    if !Path::new("/proc/config.gz").exists() {
        return None;
    }
    let out = Command::new("zcat").arg("/proc/config.gz").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// How a kernel feature is present: built in, loaded as a module, available as a module, or not.
fn feature(config: Option<&str>, option: &str, module: &str, release: &str) -> Value {
    let setting = config.and_then(|c| {
        c.lines()
            .find_map(|l| l.strip_prefix(&format!("{option}=")).map(str::to_string))
    });
    let loaded = Path::new("/sys/module").join(module).exists();
    let module_file = find_module(release, module);
    let present = loaded || module_file || setting.as_deref().is_some_and(|s| s == "y" || s == "m");
    json!({
        "present": present,
        "loaded": loaded,
        "module_file": module_file,
        "config": setting,
    })
}

fn find_module(release: &str, module: &str) -> bool {
    let dep = Path::new("/lib/modules").join(release).join("modules.dep");
    let Some(text) = read(dep) else { return false };
    let needle = format!("/{module}.ko");
    text.lines()
        .any(|l| l.split(':').next().is_some_and(|p| p.contains(&needle)))
}

/// Interface addresses from getifaddrs, by interface name.
fn addresses() -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list that we walk read-only and free exactly once.
    unsafe {
        if libc::getifaddrs(&mut ifap) != 0 {
            return map;
        }
        let mut p = ifap;
        while !p.is_null() {
            let ifa = &*p;
            p = ifa.ifa_next;
            if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
                continue;
            }
            let name = CStr::from_ptr(ifa.ifa_name).to_string_lossy().into_owned();
            let fam = (*ifa.ifa_addr).sa_family as i32;
            let addr = match fam {
                libc::AF_INET => {
                    let sa = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    let ip = std::net::Ipv4Addr::from(u32::from_be(sa.sin_addr.s_addr));
                    let plen = if ifa.ifa_netmask.is_null() {
                        32
                    } else {
                        let m = &*(ifa.ifa_netmask as *const libc::sockaddr_in);
                        u32::from_be(m.sin_addr.s_addr).count_ones()
                    };
                    format!("{ip}/{plen}")
                }
                libc::AF_INET6 => {
                    let sa = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                    let ip = std::net::Ipv6Addr::from(sa.sin6_addr.s6_addr);
                    let plen: u32 = if ifa.ifa_netmask.is_null() {
                        128
                    } else {
                        let m = &*(ifa.ifa_netmask as *const libc::sockaddr_in6);
                        m.sin6_addr.s6_addr.iter().map(|b| b.count_ones()).sum()
                    };
                    format!("{ip}/{plen}")
                }
                _ => continue,
            };
            map.entry(name).or_default().push(addr);
        }
        libc::freeifaddrs(ifap);
    }
    map
}

/// Qdiscs per device from `tc -j qdisc show`, when iproute2 is installed.
fn qdiscs() -> Option<BTreeMap<String, Vec<Value>>> {
    let out = Command::new("tc")
        .args(["-j", "qdisc", "show"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).ok()?;
    let mut map: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for q in list {
        if let Some(dev) = q.get("dev").and_then(Value::as_str) {
            map.entry(dev.to_string()).or_default().push(q.clone());
        }
    }
    Some(map)
}

/// Everything `probe` prints.
pub fn probe() -> Value {
    let release = read("/proc/sys/kernel/osrelease").unwrap_or_default();
    let config = kernel_config();
    let addrs = addresses();
    let qd = qdiscs();
    let mut ifaces = Vec::new();
    if let Ok(dir) = fs::read_dir("/sys/class/net") {
        let mut names: Vec<String> = dir
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let base = Path::new("/sys/class/net").join(&name);
            // Speed reads fail (EINVAL) on virtual devices and down links: report null.
            let speed = read_num(base.join("speed")).filter(|s| *s > 0);
            ifaces.push(json!({
                "name": name,
                "mtu": read_num(base.join("mtu")),
                "speed_mbit_s": speed,
                "operstate": read(base.join("operstate")),
                "mac": read(base.join("address")),
                "addresses": addrs.get(&name).cloned().unwrap_or_default(),
                "is_bond": base.join("bonding").exists(),
                "qdiscs": qd.as_ref().map(|m| m.get(&name).cloned().unwrap_or_default()),
            }));
        }
    }
    json!({
        "software": crate::client::software(),
        "hostname": read("/proc/sys/kernel/hostname"),
        "kernel": {
            "release": release,
            "version": read("/proc/sys/kernel/version"),
            "config_available": config.is_some(),
        },
        "cpus": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "interfaces": ifaces,
        "bonding": feature(config.as_deref(), "CONFIG_BONDING", "bonding", &release),
        "netem": feature(config.as_deref(), "CONFIG_NET_SCH_NETEM", "sch_netem", &release),
        "tbf": feature(config.as_deref(), "CONFIG_NET_SCH_TBF", "sch_tbf", &release),
        "tun": {
            "device": Path::new("/dev/net/tun").exists(),
            "driver": feature(config.as_deref(), "CONFIG_TUN", "tun", &release),
        },
        "ip_forward": {
            "ipv4": read_num("/proc/sys/net/ipv4/ip_forward").map(|v| v == 1),
            "ipv6": read_num("/proc/sys/net/ipv6/conf/all/forwarding").map(|v| v == 1),
        },
        // Multipath TCP: `enabled` is null where the kernel has none (CONFIG_MPTCP unset), false
        // where it is switched off (net.mptcp.enabled = 0).
        "mptcp": {
            "enabled": read_num("/proc/sys/net/mptcp/enabled").map(|v| v == 1),
            "kernel": feature(config.as_deref(), "CONFIG_MPTCP", "mptcp", &release),
        },
        // How multipath routes pick a next hop: 0 hashes addresses (L3), 1 ports too (L4).
        "fib_multipath_hash_policy": read_num("/proc/sys/net/ipv4/fib_multipath_hash_policy"),
        "clocksource": {
            "current": read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
            "available": read("/sys/devices/system/clocksource/clocksource0/available_clocksource"),
        },
        "unix_ns": crate::session::unix_ns(),
    })
}
