//! `tables.tex`: the report's configurations legend and its results tables as LaTeX, with
//! booktabs rules (`\usepackage{booktabs}`), ready to `\input` into a paper. The same tables
//! as report.md's, from [`crate::report::results_tables`].

use std::fmt::Write;

use super::exporter::{Exporter, RenderedFile};
use crate::report::document::Report;
use crate::report::error::ReportError;
use crate::report::results_tables::{ResultsTable, of_report};
use crate::report::short_labels::ShortLabels;

pub struct Latex;

impl Exporter for Latex {
    fn export(&self, report: &Report) -> Result<Vec<RenderedFile>, ReportError> {
        let (labels, tables) = of_report(report);
        if tables.is_empty() {
            return Ok(Vec::new());
        }
        let name = report
            .runs
            .first()
            .map(|r| r.label.clone())
            .unwrap_or_default();
        let mut s = format!(
            "% Tables of the report {}, written by orchestrate report.\n\
             % Needs \\usepackage{{booktabs}}; \\input{{tables.tex}} where they go.\n\n",
            one_line(&name)
        );
        legend(&mut s, &labels, &name);
        for t in &tables {
            results(&mut s, t, &name);
        }
        Ok(vec![RenderedFile {
            path: "tables.tex".into(),
            bytes: s.into_bytes(),
        }])
    }
}

fn legend(s: &mut String, labels: &ShortLabels, name: &str) {
    let runs = labels.legend.iter().any(|(_, x)| x.run.is_some());
    let _ = writeln!(s, "\\begin{{table}}[t]\n\\centering");
    let _ = writeln!(
        s,
        "\\caption{{Configurations and the labels the tables give them.}}"
    );
    let _ = writeln!(s, "\\label{{tab:{}-configurations}}", slug(name));
    let _ = writeln!(
        s,
        "\\begin{{tabular}}{{l{}ll}}\n\\toprule",
        if runs { "l" } else { "" }
    );
    let _ = writeln!(
        s,
        "Label & {}Topology & Bonding \\\\\n\\midrule",
        if runs { "Run & " } else { "" }
    );
    for (label, setup) in &labels.legend {
        let run = match (&setup.run, runs) {
            (Some(r), true) => format!("{} & ", tex(r)),
            (None, true) => " & ".into(),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "{} & {run}{} & {} \\\\",
            tex(label),
            tex(&setup.topology),
            tex(&setup.bonding_text)
        );
    }
    let _ = writeln!(s, "\\bottomrule\n\\end{{tabular}}\n\\end{{table}}\n");
}

fn results(s: &mut String, t: &ResultsTable, name: &str) {
    let _ = writeln!(s, "\\begin{{table}}[t]\n\\centering");
    let _ = writeln!(s, "\\caption{{{}}}", tex(&t.caption()));
    let _ = writeln!(
        s,
        "\\label{{tab:{}-{}-{}-{}}}",
        slug(name),
        t.measure.pattern.as_str(),
        t.measure.protocol.as_str(),
        t.placement.as_str()
    );
    let _ = writeln!(
        s,
        "\\begin{{tabular}}{{lr{}}}\n\\toprule",
        "r".repeat(t.sizes.len())
    );
    let headers: Vec<String> = t.size_headers().iter().map(|h| tex(h)).collect();
    let _ = writeln!(
        s,
        "Config & Pairs & {} \\\\\n\\midrule",
        headers.join(" & ")
    );
    let mut last: Option<&str> = None;
    for r in &t.rows {
        if last.is_some_and(|l| l != r.label) {
            s.push_str("\\addlinespace\n");
        }
        last = Some(&r.label);
        let cells: Vec<String> = r
            .cells
            .iter()
            .map(|c| c.map(|c| tex(&c.text())).unwrap_or_default())
            .collect();
        let _ = writeln!(
            s,
            "{} & {} & {} \\\\",
            tex(&r.label),
            r.pairs,
            cells.join(" & ")
        );
    }
    let _ = writeln!(s, "\\bottomrule\n\\end{{tabular}}\n\\end{{table}}\n");
}

/// Text as LaTeX sets it: its special characters escaped, `×`, `—` and `…` as commands.
fn tex(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\textbackslash{}"),
            '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            '~' => out.push_str("\\textasciitilde{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            '×' => out.push_str("$\\times$"),
            '—' => out.push_str("---"),
            '…' => out.push_str("\\ldots{}"),
            'µ' => out.push_str("$\\mu$"),
            _ => out.push(c),
        }
    }
    out
}

/// A label's name part: letters, digits and `-` only.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latex_specials_are_escaped_and_signs_set_as_commands() {
        assert_eq!(tex("a_b & 50% #1"), "a\\_b \\& 50\\% \\#1");
        assert_eq!(tex("28.5 (4.17×)"), "28.5 (4.17$\\times$)");
        assert_eq!(tex("—"), "---");
        assert_eq!(tex("{x}\\"), "\\{x\\}\\textbackslash{}");
    }
}
