//! Spec files with their text kept, so every error can name file:line:column and show the
//! offending span.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use std::borrow::Cow;
use std::sync::Arc;

use miette::{Diagnostic, NamedSource, SourceSpan};

use super::limits::MAX_REPORTED_ERRORS;

/// A spec file's path and text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: PathBuf,
    pub text: String,
    /// The text as error snippets show it, shared by every error of the file.
    shown: Arc<ShownText>,
}

/// Where in a file something is, 1-based, columns counted in characters; line and column 0
/// for a problem with the file as a whole (it cannot be read), which has no place in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl Location {
    /// Whether this names the file as a whole rather than a place in it.
    pub fn is_whole_file(&self) -> bool {
        self.line == 0
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_whole_file() {
            return write!(f, "{}", self.file.display());
        }
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// One problem in a spec: what is wrong, where, and what was expected.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{location}: {message}")]
pub struct SpecError {
    pub location: Location,
    pub message: String,
    #[help]
    pub help: Option<String>,
    /// The file's text, to show the place; none for a file that could not be read.
    #[source_code]
    source_code: Option<NamedSource<Arc<str>>>,
    #[label("here")]
    span: Option<SourceSpan>,
}

/// Every problem found in one pass over the specs, in file order.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{} problem(s) in the spec", .errors.len())]
pub struct SpecErrors {
    #[related]
    pub errors: Vec<SpecError>,
}

impl From<SpecError> for SpecErrors {
    fn from(e: SpecError) -> Self {
        SpecErrors { errors: vec![e] }
    }
}

impl SpecErrors {
    /// The errors, each reported once: a check that runs per node can find the same problem
    /// at the same place several times (a bond given to every node).
    pub fn new(errors: Vec<SpecError>) -> SpecErrors {
        let mut seen = std::collections::HashSet::new();
        let errors = errors
            .into_iter()
            .filter(|e| seen.insert((e.location.line, e.location.column, e.message.clone())))
            .collect();
        SpecErrors { errors }
    }

    /// The errors in the order a reader meets them: by file, line and column. (Checks run
    /// in stages, so they find problems in another order.)
    pub fn in_file_order(mut self) -> SpecErrors {
        self.errors.sort_by(|a, b| {
            let place =
                |e: &SpecError| (e.location.file.clone(), e.location.line, e.location.column);
            place(a).cmp(&place(b))
        });
        self
    }

    /// The errors as a person reads them, each with its snippet, in file order: the first
    /// [`MAX_REPORTED_ERRORS`] only, then how many more there are.
    pub fn render(self) -> String {
        let more = self.errors.len().saturating_sub(MAX_REPORTED_ERRORS);
        let mut out = String::new();
        for e in self
            .in_file_order()
            .errors
            .into_iter()
            .take(MAX_REPORTED_ERRORS)
        {
            out.push_str(&format!("{:?}\n", miette::Report::new(e)));
        }
        if more > 0 {
            out.push_str(&format!("... and {more} more problem(s)\n"));
        }
        out
    }
}

impl SourceFile {
    pub fn new(path: impl Into<PathBuf>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        SourceFile {
            path: path.into(),
            shown: Arc::new(ShownText::new(&text)),
            text,
        }
    }

    pub fn read(path: &Path) -> Result<SourceFile, SpecErrors> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(SourceFile::new(path, text)),
            // No place in the file to point at: not a made-up 1:1.
            Err(e) => Err(SpecError {
                location: Location {
                    file: path.to_owned(),
                    line: 0,
                    column: 0,
                },
                message: escape_control(&format!("cannot read the file: {e}")).into_owned(),
                help: std::fs::metadata(path)
                    .is_ok_and(|m| m.is_dir())
                    .then(|| "it is a directory: give the files in it, e.g. DIR/*.toml".into()),
                source_code: None,
                span: None,
            }
            .into()),
        }
    }

    /// An error at a byte span of this file. Control characters in the message and help are
    /// escaped, and shown as symbols in the snippet: they would otherwise reach the terminal.
    pub fn error(
        &self,
        span: Range<usize>,
        message: impl Into<String>,
        help: Option<String>,
    ) -> SpecError {
        let start = floor_char_boundary(&self.text, span.start);
        let end = floor_char_boundary(&self.text, span.end).max(start);
        let before = &self.text[..start];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        let (shown_start, shown_end) = (self.shown.offset(start), self.shown.offset(end));
        SpecError {
            location: Location {
                file: self.path.clone(),
                line,
                column,
            },
            message: escape_control(&message.into()).into_owned(),
            help: help.map(|h| escape_control(&h).into_owned()),
            source_code: Some(NamedSource::new(
                escape_control(&self.path.display().to_string()),
                self.shown.text.clone(),
            )),
            span: Some((shown_start, shown_end - shown_start).into()),
        }
    }

    /// Parses the whole file into `T`, turning TOML and schema errors into located ones with
    /// a "did you mean" for misspelt keys and variants. Every syntax error is reported, and
    /// every schema error in a different key or array element: the part at fault is set
    /// aside and the rest parsed again, up to [`MAX_REPORTED_ERRORS`] times.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, SpecErrors> {
        let (mut root, syntax) = toml::de::DeTable::parse_recoverable(&self.text);
        if !syntax.is_empty() {
            let errors = syntax.iter().map(|e| self.toml_error(e)).collect();
            return Err(SpecErrors { errors });
        }
        let mut errors = Vec::new();
        let mut set_aside: Vec<String> = Vec::new();
        while errors.len() <= MAX_REPORTED_ERRORS {
            let e = match T::deserialize(toml::de::Deserializer::from(root.clone())) {
                Ok(v) if errors.is_empty() => return Ok(v),
                Ok(_) => break,
                Err(e) => e,
            };
            if follows_from(&e, &set_aside) {
                break;
            }
            // The same error again means setting a part aside did not reach what it is
            // about (a whole `[[table]]`, whose header starts before its key): once is enough.
            let error = self.toml_error(&e);
            if errors.last().map(SpecError::to_string) == Some(error.to_string()) {
                break;
            }
            errors.push(error);
            match e
                .span()
                .and_then(|s| set_aside_part(root.get_mut(), s.start))
            {
                Some(key) => set_aside.push(key),
                None => break,
            }
        }
        Err(SpecErrors { errors })
    }

    /// Where the key at `path` (e.g. `["addressing", "prefix"]`) is written, if it is.
    pub fn key_span(&self, path: &[&str]) -> Option<Range<usize>> {
        let (root, _) = toml::de::DeTable::parse_recoverable(&self.text);
        let (last, tables) = path.split_last()?;
        let mut table = root.get_ref();
        for t in tables {
            match table.get(*t)?.get_ref() {
                toml::de::DeValue::Table(inner) => table = inner,
                _ => return None,
            }
        }
        table.get_key_value(*last).map(|(k, _)| k.span())
    }

    fn toml_error(&self, e: &toml::de::Error) -> SpecError {
        let span = e.span().unwrap_or(0..0);
        let message = e.message().trim();
        let help = did_you_mean(message);
        self.error(span, in_project_words(message), help)
    }
}

/// The largest char boundary of `s` at or before `i`.
fn floor_char_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Whether a schema error is only the consequence of a part set aside: a required key
/// "missing" because it was removed after an error of its own.
fn follows_from(e: &toml::de::Error, set_aside: &[String]) -> bool {
    let m = e.message();
    m.starts_with("missing field") && set_aside.iter().any(|k| m.contains(&format!("`{k}`")))
}

/// Removes the innermost key or array element that holds byte `at`: an array's element as a
/// whole (the others can then be checked), a table's key when nothing inside it holds `at`.
/// Returns the name of the key it was under; `None` if nothing holds `at`.
fn set_aside_part(table: &mut toml::de::DeTable<'_>, at: usize) -> Option<String> {
    // A key written at or before `at`, or one whose value holds it: an array of tables'
    // key is written inside its header, after the `[[` an error about the table points at.
    let key = table
        .iter()
        .filter(|(k, v)| k.span().start <= at || v.span().contains(&at))
        .max_by_key(|(k, _)| k.span().start)
        .map(|(k, _)| k.clone())?;
    let name = key.get_ref().to_string();
    let value = table.get_mut(&key)?;
    let element_removed = match value.get_mut() {
        toml::de::DeValue::Table(inner) => match set_aside_part(inner, at) {
            Some(inner_name) => return Some(inner_name),
            None => false,
        },
        toml::de::DeValue::Array(items) => remove_element(items, at),
        _ => false,
    };
    if !element_removed {
        table.remove(&key);
    }
    Some(name)
}

/// Drops the last element that starts at or before `at`; false if there is none.
fn remove_element(items: &mut toml::de::DeArray<'_>, at: usize) -> bool {
    let Some(i) = items.iter().rposition(|v| v.span().start <= at) else {
        return false;
    };
    let mut kept = toml::de::DeArray::new();
    for (j, v) in items.iter().enumerate() {
        if j != i {
            kept.push(v.clone());
        }
    }
    *items = kept;
    true
}

/// `s` with control characters (other than newline and tab) and bidirectional overrides
/// written as escapes (`\u{1b}`), so that text from a spec cannot move the cursor, change
/// colours or reorder what a terminal shows.
pub fn escape_control(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// A file's text as snippets show it: each unsafe character replaced by a visible symbol
/// (the Control Pictures block for C0 controls and DEL, U+FFFD for the rest), with the byte
/// offsets that moved.
#[derive(Debug)]
struct ShownText {
    text: Arc<str>,
    /// (offset in the original, bytes added by the replacements up to and including it).
    shifts: Vec<(usize, usize)>,
}

impl ShownText {
    fn new(original: &str) -> ShownText {
        let mut text = String::with_capacity(original.len());
        let mut shifts = Vec::new();
        let mut added = 0usize;
        let mut chars = original.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let crlf = c == '\r' && chars.peek().is_some_and(|(_, n)| *n == '\n');
            if is_unsafe(c) && !crlf {
                let shown = match u32::from(c) {
                    n @ 0..=0x1F => char::from_u32(0x2400 + n).unwrap_or('\u{FFFD}'),
                    0x7F => '\u{2421}',
                    _ => '\u{FFFD}',
                };
                text.push(shown);
                added += shown.len_utf8() - c.len_utf8();
                shifts.push((i, added));
            } else {
                text.push(c);
            }
        }
        ShownText {
            text: text.into(),
            shifts,
        }
    }

    /// Where byte `i` of the original is in the shown text.
    fn offset(&self, i: usize) -> usize {
        let before = self.shifts.partition_point(|(at, _)| *at < i);
        i + before.checked_sub(1).map_or(0, |k| self.shifts[k].1)
    }
}

/// serde's and the parsers' wording in the words of a spec's author: a key, not a field; a
/// value, not a variant; "a whole number from 0 to 4294967295", not `u32`; what was found
/// after what was expected. Messages the project wrote itself pass through unchanged.
fn in_project_words(message: &str) -> String {
    let typed = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "));
    if let Some((found, expected)) = typed.and_then(|rest| rest.rsplit_once(", expected ")) {
        return format!(
            "expected {}, found {}",
            expected_words(expected),
            found_words(found)
        );
    }
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        return format!(
            "unknown value {}",
            rest.replacen(", expected", ": expected", 1)
        );
    }
    for (serde, ours) in [
        ("unknown field ", "unknown key "),
        ("missing field ", "missing key "),
        ("duplicate field ", "duplicate key "),
    ] {
        if let Some(rest) = message.strip_prefix(serde) {
            return format!("{ours}{}", rest.replacen(", expected", ": expected", 1));
        }
    }
    if message.starts_with("data did not match any variant") {
        return "not a value this key takes".into();
    }
    if message == "invalid IP address syntax" {
        return "invalid address: expected an IPv4 address (such as 192.0.2.5) or network \
                (192.0.2.0/24)"
            .into();
    }
    message.to_owned()
}

/// What serde says it expected (`u32`, `a sequence`, `struct X`), in words.
fn expected_words(expected: &str) -> String {
    let whole = |max: u64| format!("a whole number from 0 to {max}");
    match expected {
        "u8" => whole(u8::MAX.into()),
        "u16" => whole(u16::MAX.into()),
        "u32" => whole(u32::MAX.into()),
        "u64" | "usize" => whole(u64::MAX),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "a boolean" => "true or false".into(),
        "a sequence" => "a list ([...])".into(),
        "a map" => "a table".into(),
        e if e.starts_with("struct ") => "a table".into(),
        e if e.starts_with("enum ") || e == "variant identifier" => "one of its names".into(),
        e => e.to_owned(),
    }
}

/// What serde says it found (`integer `5``, `string "4"`, `floating point `4.5``), in words.
fn found_words(found: &str) -> String {
    let quoted = found.split('`').nth(1);
    match found.split_whitespace().next() {
        Some("integer") | Some("floating") | Some("boolean") => quoted.unwrap_or(found).to_owned(),
        Some("string") => format!("the string {}", found.trim_start_matches("string ")),
        Some("sequence") => "a list".into(),
        Some("map") => "a table".into(),
        _ => found.to_owned(),
    }
}

/// Suggests the closest expected name for serde's "unknown field `x`, expected one of `a`,
/// `b`" and "unknown variant" messages.
fn did_you_mean(message: &str) -> Option<String> {
    if !(message.starts_with("unknown field") || message.starts_with("unknown variant")) {
        return None;
    }
    let quoted: Vec<&str> = message.split('`').skip(1).step_by(2).collect();
    let (unknown, expected) = quoted.split_first()?;
    best_match(unknown, expected.iter().copied()).map(|m| format!("did you mean `{m}`?"))
}

/// The candidate closest to `word`, if any is close enough to be a likely typo.
pub fn best_match<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serdes_wording_becomes_the_projects() {
        for (serde, ours) in [
            (
                "invalid value: integer `-4`, expected u32",
                "expected a whole number from 0 to 4294967295, found -4",
            ),
            (
                "invalid type: integer `99999999999999999999` as i128, expected u32",
                "expected a whole number from 0 to 4294967295, found 99999999999999999999",
            ),
            (
                "invalid type: string \"4\", expected u32",
                "expected a whole number from 0 to 4294967295, found the string \"4\"",
            ),
            (
                "invalid type: integer `10`, expected a string",
                "expected a string, found 10",
            ),
            (
                "invalid type: sequence, expected struct SegmentSpec",
                "expected a table, found a list",
            ),
            (
                "unknown variant `hub`, expected `shared` or `switched`",
                "unknown value `hub`: expected `shared` or `switched`",
            ),
            (
                "unknown field `rat`, expected one of `name`, `rate`",
                "unknown key `rat`: expected one of `name`, `rate`",
            ),
            ("missing field `members`", "missing key `members`"),
            (
                "invalid rate \"10mb\": unknown unit",
                "invalid rate \"10mb\": unknown unit",
            ),
        ] {
            assert_eq!(in_project_words(serde), ours, "{serde}");
        }
    }

    #[test]
    fn locations_are_one_based_lines_and_character_columns() {
        let f = SourceFile::new("x.toml", "a = 1\nbé = 2\n");
        let e = f.error(10..11, "bad", None);
        assert_eq!(e.location.to_string(), "x.toml:2:4");
    }

    #[test]
    fn misspelt_keys_get_a_suggestion() {
        let m = "unknown field `rat`, expected one of `name`, `rate`, `medium`";
        assert_eq!(did_you_mean(m).as_deref(), Some("did you mean `rate`?"));
        assert_eq!(
            did_you_mean("unknown field `zzzzzz`, expected `name`"),
            None
        );
        assert_eq!(did_you_mean("invalid type"), None);
    }
}
