//! Host lists (`n[01-16]`, `a,b`, `10.0.0.[1-4]`) of an inventory: the spec's bounded
//! expander ([`crate::spec::hostlist`]), with the room left in the inventory as its bound, so
//! `n[1-99999999999]` is refused before anything is expanded.

use crate::spec::hostlist::{self, Bounds};

/// The most hosts one inventory may list. Far above any cluster this tool drives over SSH
/// from one controller, far below what would strain memory.
pub const MAX_HOSTS: u64 = 4096;

/// Characters one host list may have: room for 4096 names written out one by one.
const MAX_CHARS: usize = 64 * 1024;

/// Expands `text` into its names, in order, refusing lists of more than `room` names before
/// expanding them. A plain name (no `[` or `,`) is taken as it is, for the inventory's rules
/// to judge: they say best what a user or an address may hold.
pub fn expand(text: &str, room: u64) -> Result<Vec<String>, String> {
    if !text.contains(['[', ',']) {
        return Ok(vec![text.to_owned()]);
    }
    let count = hostlist::count(text).unwrap_or(0);
    if count > u128::from(room) {
        let count = match count {
            u128::MAX => "too many".to_owned(),
            n => n.to_string(),
        };
        let fit = match room {
            MAX_HOSTS => String::new(),
            n => format!(", only {n} more fit"),
        };
        return Err(format!(
            "{text:?} names {count} hosts{fit}: an inventory lists at most {MAX_HOSTS}"
        ));
    }
    let bounds = Bounds {
        names: room as usize,
        chars: MAX_CHARS,
    };
    hostlist::expand_names(text, "host", bounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_expand_in_order() {
        assert_eq!(
            expand("n[01-03],x", MAX_HOSTS).unwrap(),
            ["n01", "n02", "n03", "x"]
        );
        assert_eq!(
            expand("10.0.[0-1].[1,3]", MAX_HOSTS).unwrap(),
            ["10.0.0.1", "10.0.0.3", "10.0.1.1", "10.0.1.3"]
        );
        assert_eq!(expand("under_score", MAX_HOSTS).unwrap(), ["under_score"]);
    }

    #[test]
    fn huge_lists_are_refused_before_expansion() {
        for text in [
            "n[1-99999999999]",
            "n[0-18446744073709551615]",
            "n[1-99999999999999999999999]",
            "a[1-100000]b[1-100000]",
            "n[1-4097]",
        ] {
            let e = expand(text, MAX_HOSTS).unwrap_err();
            assert!(e.contains("at most 4096"), "{text}: {e}");
        }
        assert_eq!(expand("n[1-4096]", MAX_HOSTS).unwrap().len(), 4096);
        assert!(
            expand("n[1-10]", 9).is_err(),
            "the room left is what counts"
        );
    }

    #[test]
    fn repeats_and_bad_syntax_are_errors() {
        assert!(
            expand("n[1,1]", MAX_HOSTS)
                .unwrap_err()
                .contains("more than once")
        );
        assert!(
            expand("n1,n1", MAX_HOSTS)
                .unwrap_err()
                .contains("more than once")
        );
        assert!(
            expand("n[1-", MAX_HOSTS)
                .unwrap_err()
                .contains("invalid host list")
        );
    }
}
