//! A Markdown table padded to equal column widths.

use std::fmt::Write;

/// A Markdown table with columns padded to equal width, so the file reads well as text too.
pub fn table(s: &mut String, header: &[String], rows: &[Vec<String>], right: &[bool]) {
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].chars().count(), 3])
            .max()
            .unwrap_or(3)
    };
    let widths: Vec<usize> = (0..header.len()).map(width).collect();
    let line = |s: &mut String, cells: &[String]| {
        s.push('|');
        for (i, c) in cells.iter().enumerate() {
            let pad = widths[i] - c.chars().count();
            if right[i] {
                let _ = write!(s, " {}{} |", " ".repeat(pad), c);
            } else {
                let _ = write!(s, " {}{} |", c, " ".repeat(pad));
            }
        }
        s.push('\n');
    };
    line(s, header);
    s.push('|');
    for (i, w) in widths.iter().enumerate() {
        if right[i] {
            let _ = write!(s, " {}: |", "-".repeat(w - 1));
        } else {
            let _ = write!(s, " {} |", "-".repeat(*w));
        }
    }
    s.push('\n');
    for r in rows {
        line(s, r);
    }
    s.push('\n');
}
