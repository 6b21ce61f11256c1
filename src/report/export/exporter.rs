//! What every output format implements, apart from the list of formats and the writer in
//! the parent module, so that each format depends only on this.

use std::path::PathBuf;

use crate::report::document::Report;
use crate::report::error::ReportError;

/// One file an exporter rendered: its bytes and where they go, relative to the output
/// directory ([`super::write_all`] writes them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedFile {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

/// Turns a report into files. Implementations must be deterministic: the same report gives
/// the same bytes, so re-running a report changes nothing on disk. A report without medium
/// statistics (`report.media.present` false) must come out exactly as it would without them.
pub trait Exporter {
    fn export(&self, report: &Report) -> Result<Vec<RenderedFile>, ReportError>;
}
