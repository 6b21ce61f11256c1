//! Output formats: one file per format behind one trait, and a writer for all of them.

mod applications_csv;
mod comparison_csv;
mod exporter;
mod latex;
mod markdown;
mod media_csv;
mod model_csv;
mod netpipe;
#[cfg(feature = "png")]
mod png;
mod summary_csv;
mod summary_json;
pub(super) mod svg;

use std::path::{Path, PathBuf};

use super::document::Report;
use super::error::ReportError;

pub use applications_csv::ApplicationsCsv;
pub use comparison_csv::ComparisonCsv;
pub use exporter::Exporter;
pub use latex::Latex;
pub use markdown::Markdown;
pub use media_csv::MediaCsv;
pub use model_csv::ModelCsv;
pub use netpipe::Netpipe;
#[cfg(feature = "png")]
pub use png::Png;
pub use summary_csv::SummaryCsv;
pub use summary_json::SummaryJson;
pub use svg::Svg;

/// The outputs of a report: CSVs (`media.csv` only when the run has medium statistics,
/// `applications.csv` only when it ran collectives),
/// `summary.json`, Markdown (report.md and appendix.md), the tables as LaTeX, SVG figures and
/// NetPIPE-format curves, plus PNG copies when asked for.
pub fn standard(png: bool) -> Result<Vec<Box<dyn Exporter>>, ReportError> {
    let mut all: Vec<Box<dyn Exporter>> = vec![
        Box::new(SummaryCsv),
        Box::new(SummaryJson),
        Box::new(ComparisonCsv),
        Box::new(Markdown),
        Box::new(Latex),
        Box::new(ModelCsv),
        Box::new(ApplicationsCsv),
        Box::new(MediaCsv),
        Box::new(Svg),
        Box::new(Netpipe),
    ];
    if png {
        all.push(png_exporter()?);
    }
    Ok(all)
}

#[cfg(feature = "png")]
fn png_exporter() -> Result<Box<dyn Exporter>, ReportError> {
    Ok(Box::new(Png))
}

#[cfg(not(feature = "png"))]
fn png_exporter() -> Result<Box<dyn Exporter>, ReportError> {
    Err(ReportError::PngUnavailable)
}

/// Renders `report` with every exporter and writes the files under `dir`. Returns the paths
/// written, in order.
pub fn write_all(
    dir: &Path,
    report: &Report,
    exporters: &[Box<dyn Exporter>],
) -> Result<Vec<PathBuf>, ReportError> {
    let mut written = Vec::new();
    for e in exporters {
        for file in e.export(report)? {
            let path = dir.join(&file.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| ReportError::Io {
                    path: parent.to_path_buf(),
                    source: e,
                })?;
            }
            std::fs::write(&path, &file.bytes).map_err(|e| ReportError::Io {
                path: path.clone(),
                source: e,
            })?;
            written.push(path);
        }
    }
    Ok(written)
}
