//! `figures/*.png`: raster copies of the SVG figures, on request (cargo feature `png`).
//!
//! The SVGs are rasterised with resvg, so the PNGs show exactly what the SVGs show. Text
//! needs a font file: system fonts are scanned (pure Rust, no fontconfig) and the SVGs'
//! `sans-serif` is mapped to DejaVu Sans when it is installed (Debian: fonts-dejavu-core).

use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg::{Options, Tree};

use super::exporter::{Exporter, RenderedFile};
use super::svg;
use crate::report::document::Report;
use crate::report::error::ReportError;
use crate::report::figures::figures;

/// Pixels per SVG unit: print-friendly without huge files.
const SCALE: f32 = 2.0;

pub struct Png;

impl Exporter for Png {
    fn export(&self, report: &Report) -> Result<Vec<RenderedFile>, ReportError> {
        let mut opt = Options::default();
        let db = opt.fontdb_mut();
        db.load_system_fonts();
        if db.is_empty() {
            return Err(ReportError::Plot(
                "no font found for PNG text; install a TTF font (e.g. fonts-dejavu-core)".into(),
            ));
        }
        let has_dejavu = db
            .faces()
            .any(|f| f.families.iter().any(|(name, _)| name == "DejaVu Sans"));
        if has_dejavu {
            db.set_sans_serif_family("DejaVu Sans");
        }
        let mut out = Vec::new();
        for f in figures(report) {
            let text = svg::render(&f)?;
            let tree = Tree::from_str(&text, &opt)
                .map_err(|e| ReportError::Plot(format!("{}: {e}", f.stem)))?;
            let size = tree.size().to_int_size().scale_by(SCALE).ok_or_else(|| {
                ReportError::Plot(format!("{}: figure too large to rasterise", f.stem))
            })?;
            let mut pixmap = Pixmap::new(size.width(), size.height())
                .ok_or_else(|| ReportError::Plot(format!("{}: empty figure", f.stem)))?;
            resvg::render(
                &tree,
                Transform::from_scale(SCALE, SCALE),
                &mut pixmap.as_mut(),
            );
            let bytes = pixmap
                .encode_png()
                .map_err(|e| ReportError::Plot(format!("{}: {e}", f.stem)))?;
            out.push(RenderedFile {
                path: format!("figures/{}.png", f.stem).into(),
                bytes,
            });
        }
        Ok(out)
    }
}
