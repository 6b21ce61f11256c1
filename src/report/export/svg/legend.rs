//! A legend entry and the sizes the legend is laid out by, shared by the figure's layout
//! ([`super`]) and the overlay that draws the legend ([`super::overlay`]).

use crate::report::figures::Style;

/// The figure's margin in px, which the legend keeps too.
pub const PAD: i32 = 12;
pub const LEGEND_ROW_H: u32 = 22;
pub const LEGEND_LINE_H: u32 = 16;
/// Where a legend entry's text starts, right of its line sample.
pub const LEGEND_TEXT_X: i32 = PAD + 56;
/// The legend's font size in px as it appears in the SVG (9.1 pt in print).
pub const LEGEND_PX: f64 = 13.0;

/// One series in the legend, its label wrapped to the width.
pub struct LegendEntry {
    pub label: String,
    pub lines: Vec<String>,
    pub style: Style,
    pub reference: bool,
}

impl LegendEntry {
    pub fn height(&self) -> u32 {
        LEGEND_ROW_H + LEGEND_LINE_H * (self.lines.len().max(1) as u32 - 1)
    }
}
