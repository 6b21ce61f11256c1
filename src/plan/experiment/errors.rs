//! The errors found in one experiment file, gathered so that one attempt reports them all.

use std::ops::Range;

use crate::spec::{SourceFile, SpecError, SpecErrors};

/// The errors found in one experiment file so far, in the order they were found.
pub(super) struct ErrorList<'a> {
    pub(super) source: &'a SourceFile,
    errors: Vec<SpecError>,
}

impl<'a> ErrorList<'a> {
    pub(super) fn new(source: &'a SourceFile) -> Self {
        ErrorList {
            source,
            errors: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, span: Range<usize>, message: impl Into<String>) {
        self.push_with_help(span, message, None);
    }

    pub(super) fn push_with_help(
        &mut self,
        span: Range<usize>,
        message: impl Into<String>,
        help: Option<String>,
    ) {
        self.errors.push(self.source.error(span, message, help));
    }

    pub(super) fn extend(&mut self, errors: Vec<SpecError>) {
        self.errors.extend(errors);
    }

    /// Some checks run only on an otherwise clean file: after an earlier error they would
    /// mostly repeat it (a baseline "missing" because its topology failed to load).
    pub(super) fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    pub(super) fn into_result(self) -> Result<(), SpecErrors> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(SpecErrors::new(self.errors))
        }
    }
}
