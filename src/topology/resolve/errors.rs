//! The problems a resolution stage finds, each located in the topology file's text, and the
//! "did you mean" every stage offers for a misspelt name. Apart from the stages' driver in
//! `mod.rs`, so that the stages reach it without importing their own caller.

use crate::spec::{SourceFile, SpecError, SpecErrors, best_match};
use crate::topology::draft::Span;

/// The problems found so far, each located in the topology file's text.
pub(super) struct Errors<'a> {
    source: &'a SourceFile,
    list: Vec<SpecError>,
}

impl<'a> Errors<'a> {
    pub(super) fn new(source: &'a SourceFile) -> Self {
        Errors {
            source,
            list: Vec::new(),
        }
    }
    pub(super) fn push(&mut self, span: &Span, message: impl Into<String>) {
        self.list
            .push(self.source.error(span.clone(), message, None));
    }
    pub(super) fn push_help(&mut self, span: &Span, message: impl Into<String>, help: String) {
        self.list
            .push(self.source.error(span.clone(), message, Some(help)));
    }
    /// Ends a stage: later stages assume earlier ones held.
    pub(super) fn check(&mut self) -> Result<(), SpecErrors> {
        if self.list.is_empty() {
            Ok(())
        } else {
            Err(SpecErrors::new(std::mem::take(&mut self.list)))
        }
    }
}

pub(super) fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match best_match(word, candidates) {
        Some(m) => format!("did you mean `{m}`?"),
        None => "check the spelling against the names defined in this file".into(),
    }
}
