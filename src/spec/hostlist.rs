//! Slurm/pdsh-style host lists (`n[01-16]`, `a,b`, `r[1-2]c[1-4]`) expanded with bounds: the
//! expression is checked and the number of names it stands for counted *before* anything is
//! expanded, so `n[1-9999999]` is an error, not gigabytes of strings. `hostlist_parser` does the
//! expansion itself; what it would quietly do (skip whitespace, drop repeated names) is an
//! error here instead. Topologies' node lists and inventories' host lists both come here.

use super::limits::{MAX_HOSTLIST_CHARS, MAX_NODES};
use super::names::InvalidValue;

/// How large a host list may be.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Names it may stand for.
    pub names: usize,
    /// Characters its text may have.
    pub chars: usize,
}

/// The names `text` stands for, in order, each parsed as a `T`; at most `max` of them.
pub fn expand<T>(text: &str, what: &str, max: usize) -> Result<Vec<T>, String>
where
    T: std::str::FromStr<Err = InvalidValue>,
{
    let bounds = Bounds {
        names: max,
        chars: MAX_HOSTLIST_CHARS,
    };
    expand_names(text, what, bounds)?
        .iter()
        .map(|n| n.parse::<T>().map_err(|e| e.0))
        .collect()
}

/// The names `text` stands for, in order, within `bounds`.
pub fn expand_names(text: &str, what: &str, bounds: Bounds) -> Result<Vec<String>, String> {
    check_characters(text, what, bounds.chars)?;
    let count = count(text)
        .ok_or_else(|| format!("invalid {what} list {text:?}: unbalanced `[` or `]`"))?;
    if count > bounds.names as u128 {
        return Err(format!(
            "{what} list {text:?} stands for {count} names; at most {} are allowed",
            bounds.names
        ));
    }
    let names = hostlist_parser::parse(text).map_err(|e| {
        format!(
            "invalid {what} list {text:?}: {}",
            e.to_string().replace('\n', "; ").trim_end_matches("; ")
        )
    })?;
    if (names.len() as u128) < count {
        return Err(format!(
            "{what} list {text:?} names the same {what} more than once"
        ));
    }
    Ok(names)
}

/// The cap for node lists.
pub fn expand_nodes<T>(text: &str) -> Result<Vec<T>, String>
where
    T: std::str::FromStr<Err = InvalidValue>,
{
    expand(text, "node", MAX_NODES)
}

/// Only what a host list may hold: no whitespace or control characters (which the parser
/// would skip, joining `n 1` into `n1`), and not too long.
fn check_characters(text: &str, what: &str, max_chars: usize) -> Result<(), String> {
    if let Some(c) = text.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "invalid {what} list {text:?}: {c:?} is not allowed in a name; names are letters, \
             digits, '_', '.' and '-'"
        ));
    }
    let chars = text.chars().count();
    if chars > max_chars {
        return Err(format!(
            "{what} list of {chars} characters is too long: at most {max_chars}"
        ));
    }
    Ok(())
}

/// How many names `text` stands for, saturating: the sum over its comma-separated items of the
/// product of each item's bracket sizes. Pieces that are not numbers count as one (the parser
/// rejects them). `None` when brackets do not balance.
pub fn count(text: &str) -> Option<u128> {
    let mut total: u128 = 0;
    let mut item: u128 = 1;
    let mut rest = text;
    while !rest.is_empty() {
        let next = rest.find([',', '[', ']']).unwrap_or(rest.len());
        let (_, tail) = rest.split_at(next);
        match tail.chars().next() {
            Some(',') => {
                total = total.saturating_add(item);
                item = 1;
                rest = &tail[1..];
            }
            Some('[') => {
                let close = tail.find(']')?;
                let inner = &tail[1..close];
                if inner.contains('[') {
                    return None;
                }
                item = item.saturating_mul(bracket_size(inner));
                rest = &tail[close + 1..];
            }
            Some(_) => return None,
            None => rest = tail,
        }
    }
    Some(total.saturating_add(item))
}

/// Names one bracket stands for: `1-16,20` is 17. A number too long for u128 counts as the
/// largest.
fn bracket_size(inner: &str) -> u128 {
    let number = |s: &str| s.parse::<u128>().unwrap_or(u128::MAX);
    inner
        .split(',')
        .map(|piece| match piece.split_once('-') {
            Some((a, b)) => number(a).abs_diff(number(b)).saturating_add(1),
            None => 1,
        })
        .fold(0u128, u128::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::names::NodeName;

    fn nodes(text: &str) -> Result<Vec<String>, String> {
        expand_nodes::<NodeName>(text).map(|v| v.into_iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn ranges_expand_in_order_with_their_padding() {
        assert_eq!(nodes("n[01-03]").unwrap(), ["n01", "n02", "n03"]);
        assert_eq!(nodes("a,b").unwrap(), ["a", "b"]);
        assert_eq!(
            nodes("r[1-2]c[1-2]").unwrap(),
            ["r1c1", "r1c2", "r2c1", "r2c2"]
        );
    }

    #[test]
    fn huge_ranges_are_refused_before_expansion() {
        let e = nodes("n[1-9999999]").unwrap_err();
        assert!(e.contains("9999999 names"), "{e}");
        let e = nodes("n[1-100000][1-100000]").unwrap_err();
        assert!(e.contains("10000000000 names"), "{e}");
        let e = nodes("n[1-99999999999999999999999999999999999999999]").unwrap_err();
        assert!(
            e.contains(&format!("at most {MAX_NODES} are allowed")),
            "{e}"
        );
    }

    #[test]
    fn counting_matches_expansion() {
        for text in [
            "n[1-5]",
            "a[1-2]b[3-5]",
            "n[5-1]",
            "n[1,3-4],m[01-10]",
            "x,y,z",
            "10.0.[0-1].[1,3]",
        ] {
            let expanded = hostlist_parser::parse(text).unwrap().len() as u128;
            assert_eq!(count(text), Some(expanded), "{text}");
        }
    }

    #[test]
    fn whitespace_and_repeats_are_errors_not_dropped() {
        assert!(nodes("n 1").unwrap_err().contains("' '"));
        assert!(nodes("n\t1").unwrap_err().contains("'\\t'"));
        assert!(nodes("n1,n1").unwrap_err().contains("more than once"));
        assert!(nodes("n[1-2").is_err());
        assert!(nodes(&"n".repeat(300)).unwrap_err().contains("too long"));
    }
}
