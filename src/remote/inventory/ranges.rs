//! Host lists (`n[01-16]`, `a,b`, `10.0.0.[1-4]`) expanded only after their size is known to
//! be sane: the expander materialises every name, so `n[1-99999999999]` would otherwise take
//! all the memory there is before any check could refuse it.

/// The most hosts one inventory may list. Far above any cluster this tool drives over SSH
/// from one controller, far below what would strain memory.
pub const MAX_HOSTS: u64 = 4096;

/// Expands `text` into its names, in order, refusing lists of more than `room` names before
/// expanding them. Plain names (no `[` or `,`) are taken as they are, so that characters the
/// expander does not know (`_`) still work there.
pub fn expand(text: &str, room: u64) -> Result<Vec<String>, String> {
    if !text.contains(['[', ',']) {
        return Ok(vec![text.to_owned()]);
    }
    let count = upper_count(text);
    if count > room {
        let count = match count {
            u64::MAX => "too many".to_owned(),
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
    let names = hostlist_parser::parse(text).map_err(|e| {
        format!(
            "{text:?} is not a host list: {}",
            e.to_string().replace('\n', " ").trim()
        )
    })?;
    // The expander drops repeats silently; a repeated name would then shift every later one
    // against its partner list.
    if (names.len() as u64) < count {
        return Err(format!(
            "{text:?} names some host more than once ({count} names, {} different)",
            names.len()
        ));
    }
    Ok(names)
}

/// How many names `text` expands to, counted from its brackets without expanding them;
/// saturates at `u64::MAX`. Exact for well-formed lists; for others, the expander's own
/// error follows.
fn upper_count(text: &str) -> u64 {
    let mut total: u64 = 0;
    for list in split_top_level(text) {
        let mut product: u64 = 1;
        let mut rest = list;
        while let Some(open) = rest.find('[') {
            // Unclosed: the expander's error says so.
            let Some(close) = rest[open..].find(']').map(|c| open + c) else {
                break;
            };
            let group = &rest[open + 1..close];
            let sum = group
                .split(',')
                .map(range_len)
                .fold(0u64, u64::saturating_add);
            product = product.saturating_mul(sum.max(1));
            rest = &rest[close + 1..];
        }
        total = total.saturating_add(product);
    }
    total
}

/// The lists of `text` separated by commas outside brackets.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut depth = 0usize;
    let mut start = 0;
    let mut lists = Vec::new();
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                lists.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    lists.push(&text[start..]);
    lists
}

/// How many numbers `a-b` (in either order) or a single `a` stands for. Numbers beyond
/// `u64` count as `u64::MAX`; what is not a number at all is the expander's to refuse.
fn range_len(item: &str) -> u64 {
    let number = |s: &str| {
        let s = s.trim();
        match s.parse::<u64>() {
            Ok(n) => n,
            Err(_) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => u64::MAX,
            Err(_) => 0,
        }
    };
    match item.split_once('-') {
        Some((a, b)) => number(a).abs_diff(number(b)).saturating_add(1),
        None => 1,
    }
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
    fn counting_matches_expansion() {
        for text in [
            "n[1-5]",
            "a[1-2]b[3-5]",
            "n[5-1]",
            "n[1,3-4],m[01-10]",
            "x,y,z",
        ] {
            assert_eq!(
                upper_count(text),
                hostlist_parser::parse(text).unwrap().len() as u64,
                "{text}"
            );
        }
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
                .contains("not a host list")
        );
    }
}
