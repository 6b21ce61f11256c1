//! What each value of an inventory may be. Users, addresses and jump hosts reach `ssh`'s
//! command line as arguments of their own; they are held to plain names so that none can be
//! read as an option (a leading `-`), split into two words, or mean something to a shell or
//! to ssh's own `%` and `${}` expansion:
//!
//! - a **user** is 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with `-`;
//! - an **address** is a host name or IPv4 address (1 to 253 of `A-Z a-z 0-9 . _ -`, starting
//!   with a letter, digit or `_`), or an IPv6 literal as written to ssh (`fe80::1`, with an
//!   optional `%zone` of the same characters). No `user@` or `:port`: those have their keys;
//! - a **jump** host is what `ssh -J` takes: hops separated by commas, each
//!   `[user@]host[:port]`, with an IPv6 host in brackets (`[fe80::1]:2222`);
//! - a **port** is 1 to 65535;
//! - an **identity** or **known_hosts** path names a readable file, with no whitespace,
//!   control characters, quotes, `%` or `$` (ssh splits UserKnownHostsFile at whitespace and
//!   expands `%` and `${}` in both).

use std::fs::File;
use std::net::Ipv6Addr;
use std::path::Path;

const MAX_USER: usize = 64;
const MAX_HOST_NAME: usize = 253;

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// The first character of `s` that `ok` refuses, described for a message.
fn first_bad(s: &str, ok: impl Fn(char) -> bool) -> Option<String> {
    let (i, c) = s.char_indices().find(|&(_, c)| !ok(c))?;
    let what = if c.is_whitespace() {
        "whitespace"
    } else if c.is_control() {
        "a control character"
    } else {
        "the character"
    };
    Some(format!("{what} {c:?} at byte {i}"))
}

/// A login name.
pub fn user(s: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > MAX_USER {
        return Err(format!("user {s:?} must have 1 to {MAX_USER} characters"));
    }
    if s.starts_with('-') {
        return Err(format!(
            "user {s:?} starts with '-': ssh would read it as an option"
        ));
    }
    match first_bad(s, name_char) {
        Some(bad) => Err(format!(
            "user {s:?} has {bad}: a user is letters, digits, '.', '_' and '-'"
        )),
        None => Ok(()),
    }
}

/// One host's address, after range expansion.
pub fn address(s: &str) -> Result<(), String> {
    if is_ipv6(s) {
        return Ok(());
    }
    host_name(s, "address").map_err(|e| {
        if s.contains('@') {
            format!("{e} (give the user as `user = \"...\"`)")
        } else if s.contains(':') {
            format!("{e} (give the port as `port = ...`; IPv6 literals are written bare)")
        } else {
            e
        }
    })
}

/// A host name or IPv4 address.
fn host_name(s: &str, what: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > MAX_HOST_NAME {
        return Err(format!(
            "{what} {s:?} must have 1 to {MAX_HOST_NAME} characters"
        ));
    }
    if s.starts_with('-') {
        return Err(format!(
            "{what} {s:?} starts with '-': ssh would read it as an option"
        ));
    }
    if s.starts_with('.') {
        return Err(format!("{what} {s:?} starts with '.'"));
    }
    match first_bad(s, name_char) {
        Some(bad) => Err(format!(
            "{what} {s:?} has {bad}: a host is a name or IPv4 address (letters, digits, '.', \
             '_', '-') or an IPv6 literal"
        )),
        None => Ok(()),
    }
}

/// `fe80::1` or `fe80::1%eth0`.
fn is_ipv6(s: &str) -> bool {
    let (addr, zone) = match s.split_once('%') {
        Some((a, z)) => (a, Some(z)),
        None => (s, None),
    };
    addr.parse::<Ipv6Addr>().is_ok()
        && zone.is_none_or(|z| !z.is_empty() && z.chars().all(name_char))
}

/// A jump host specification as `ssh -J` takes it.
pub fn jump(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("jump host is empty".into());
    }
    for hop in s.split(',') {
        jump_hop(hop).map_err(|e| format!("jump host {s:?}: {e}"))?;
    }
    Ok(())
}

/// `[user@]host[:port]`, IPv6 in brackets.
fn jump_hop(hop: &str) -> Result<(), String> {
    if hop.contains("://") {
        return Err(format!("{hop:?}: write [user@]host[:port], not a URI"));
    }
    let (user_part, rest) = match hop.rsplit_once('@') {
        Some((u, r)) => (Some(u), r),
        None => (None, hop),
    };
    if let Some(u) = user_part {
        user(u)?;
    }
    let (host, port_part) = if let Some(inner) = rest.strip_prefix('[') {
        let (v6, after) = inner
            .split_once(']')
            .ok_or_else(|| format!("{rest:?} opens '[' without closing it"))?;
        if !is_ipv6(v6) {
            return Err(format!("{v6:?} in brackets is not an IPv6 address"));
        }
        match after {
            "" => (None, None),
            _ => match after.strip_prefix(':') {
                Some(p) => (None, Some(p)),
                None => return Err(format!("unexpected {after:?} after ']'")),
            },
        }
    } else if rest.matches(':').count() > 1 {
        return Err(format!(
            "{rest:?}: write IPv6 jump hosts in brackets, e.g. [fe80::1]:22"
        ));
    } else {
        match rest.split_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(rest), None),
        }
    };
    if let Some(h) = host {
        host_name(h, "host")?;
    }
    if let Some(p) = port_part {
        let n: i64 = p
            .parse()
            .map_err(|_| format!("port {p:?} is not a number"))?;
        port(n)?;
    }
    Ok(())
}

/// A TCP port.
pub fn port(n: i64) -> Result<u16, String> {
    match u16::try_from(n) {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(format!("port {n} is out of range: ports are 1 to 65535")),
    }
}

/// A path ssh is given (identity, known_hosts), before it is resolved.
pub fn ssh_path(s: &str, key: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err(format!("`{key}` is empty"));
    }
    let ok =
        |c: char| !(c.is_whitespace() || c.is_control() || matches!(c, '%' | '$' | '"' | '\''));
    match first_bad(s, ok) {
        Some(bad) => Err(format!(
            "`{key}` path {s:?} has {bad}: ssh splits this path at whitespace and expands '%' \
             and '$' in it; rename or link the file"
        )),
        None => Ok(()),
    }
}

/// A file the controller must be able to read, resolved to where it is.
pub fn readable_file(p: &Path, key: &str) -> Result<(), String> {
    let shown = p.display();
    match std::fs::metadata(p) {
        Err(e) => Err(format!("`{key}` file {shown}: {e}")),
        Ok(m) if !m.is_file() => Err(format!("`{key}` {shown} is not a file")),
        Ok(_) => File::open(p)
            .map(drop)
            .map_err(|e| format!("`{key}` file {shown} cannot be read: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_are_plain_login_names() {
        for ok in ["root", "a.b_c-d", "_svc", "u1"] {
            assert_eq!(user(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("-oProxyCommand=x", "starts with '-'"),
            ("a b", "whitespace ' '"),
            ("a;b", "the character ';'"),
            ("a$(id)", "the character '$'"),
            ("a\tb", "whitespace '\\t'"),
            ("a\u{1}", "a control character"),
            ("", "1 to 64"),
            ("a@b", "the character '@'"),
        ] {
            let e = user(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        assert!(user(&"u".repeat(65)).is_err());
    }

    #[test]
    fn addresses_are_names_or_ip_literals() {
        for ok in [
            "node01.cluster",
            "10.0.0.1",
            "fe80::1",
            "fe80::1%eth0",
            "::1",
            "my_alias",
        ] {
            assert_eq!(address(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("-v", "starts with '-'"),
            ("-oProxyCommand=sh", "starts with '-'"),
            ("a b", "whitespace"),
            ("a|b", "'|'"),
            ("a`b`", "'`'"),
            ("root@n1", "give the user"),
            ("n1:22", "give the port"),
            ("[::1]", "'['"),
            (".n1", "starts with '.'"),
            ("fe80::1%", "IPv6 literal"),
            ("a\nb", "whitespace '\\n'"),
        ] {
            let e = address(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn jump_hosts_take_the_forms_ssh_j_takes() {
        for ok in [
            "gw",
            "admin@gw.example:2222",
            "[fe80::1]:22",
            "u@[::1]",
            "gw1,u@gw2:2200",
        ] {
            assert_eq!(jump(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("-oProxyCommand=x", "starts with '-'"),
            ("gw:0", "ports are 1 to 65535"),
            ("gw:70000", "ports are 1 to 65535"),
            ("gw:ssh", "not a number"),
            ("fe80::1", "in brackets"),
            ("[gw]:22", "not an IPv6"),
            ("gw,,gw2", "1 to 253"),
            ("-l@gw", "starts with '-'"),
            ("gw x", "whitespace"),
            ("ssh://gw", "not a URI"),
            ("", "empty"),
        ] {
            let e = jump(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn ports_are_1_to_65535() {
        assert_eq!(port(1), Ok(1));
        assert_eq!(port(65535), Ok(65535));
        for bad in [0, -1, 65536, i64::MAX] {
            assert!(port(bad).unwrap_err().contains("1 to 65535"), "{bad}");
        }
    }

    #[test]
    fn ssh_paths_have_nothing_ssh_would_expand_or_split() {
        assert_eq!(ssh_path("~/.ssh/id_ed25519", "identity"), Ok(()));
        for bad in ["a b", "id_%u", "${HOME}/k", "k\"", ""] {
            assert!(ssh_path(bad, "identity").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn files_must_exist_be_files_and_be_readable() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("k");
        std::fs::write(&f, "x").unwrap();
        assert_eq!(readable_file(&f, "identity"), Ok(()));
        let e = readable_file(&dir.path().join("nope"), "identity").unwrap_err();
        assert!(e.contains("No such file"), "{e}");
        let e = readable_file(dir.path(), "identity").unwrap_err();
        assert!(e.contains("is not a file"), "{e}");
    }
}
