//! A study's section ([`crate::report::study`]): its heading and introduction, then each
//! finding under its own heading with its verdict and the points it rests on; the cells behind
//! them, where a study shows them, in the appendix.

use std::fmt::Write;

use crate::report::study::StudyFindings;

pub fn study(s: &mut String, study: &StudyFindings) {
    let _ = write!(s, "## {}\n\n{}\n\n", study.title, study.introduction);
    for f in &study.findings {
        let _ = writeln!(s, "### {} — {}\n", f.heading, f.verdict.as_str());
        for point in &f.points {
            let _ = writeln!(s, "- {point}");
        }
        s.push('\n');
    }
    if study.table.is_some() {
        let _ = write!(
            s,
            "Every cell these findings rest on: [appendix.md](appendix.md), \"{}: cell by \
             cell\".\n\n",
            study.title
        );
    }
}

/// A study's cells, for the appendix (too wide for report.md's 100 characters).
pub fn cells(s: &mut String, study: &StudyFindings) {
    if let Some(t) = &study.table {
        let _ = write!(s, "## {}: cell by cell\n\n{}\n\n", study.title, t.caption);
        super::table::table(s, &t.header, &t.rows, &t.right);
        s.push('\n');
    }
}
