//! A study's section ([`crate::report::study`]): its heading and introduction, then each
//! finding under its own heading with its verdict and the points it rests on.

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
}
