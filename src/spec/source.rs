//! Spec files with their text kept, so every error can name file:line:column and show the
//! offending span.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use miette::{Diagnostic, NamedSource, SourceSpan};

/// A spec file's path and text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: PathBuf,
    pub text: String,
}

/// Where in a file something is, 1-based, columns counted in characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
    #[source_code]
    source_code: NamedSource<String>,
    #[label("here")]
    span: SourceSpan,
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

impl SourceFile {
    pub fn read(path: &Path) -> Result<SourceFile, SpecErrors> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(SourceFile {
                path: path.to_owned(),
                text,
            }),
            Err(e) => Err(SourceFile {
                path: path.to_owned(),
                text: String::new(),
            }
            .error(0..0, format!("cannot read the file: {e}"), None)
            .into()),
        }
    }

    /// An error at a byte span of this file.
    pub fn error(
        &self,
        span: Range<usize>,
        message: impl Into<String>,
        help: Option<String>,
    ) -> SpecError {
        let start = span.start.min(self.text.len());
        let before = &self.text[..start];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        SpecError {
            location: Location {
                file: self.path.clone(),
                line,
                column,
            },
            message: message.into(),
            help,
            source_code: NamedSource::new(self.path.display().to_string(), self.text.clone()),
            span: (start, span.end.min(self.text.len()).saturating_sub(start)).into(),
        }
    }

    /// Parses the whole file into `T`, turning the TOML or schema error into a located one
    /// with a "did you mean" for misspelt keys and variants.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, SpecErrors> {
        toml::from_str(&self.text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            let message = e.message().trim().to_owned();
            let help = did_you_mean(&message);
            self.error(span, message, help).into()
        })
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
    fn locations_are_one_based_lines_and_character_columns() {
        let f = SourceFile {
            path: "x.toml".into(),
            text: "a = 1\nbé = 2\n".into(),
        };
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
