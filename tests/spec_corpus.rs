//! Every bad spec under tests/specs/bad/ must fail with its expected message at its expected
//! place. Each file's first line says what: `# expect: LINE:COLUMN: message fragment`.

mod common;

use std::path::Path;

use orchestrate::spec::SpecErrors;

fn load(path: &Path) -> Result<(), SpecErrors> {
    let text = std::fs::read_to_string(path).unwrap();
    let table: toml::Table = text.parse().unwrap_or_default();
    if table.contains_key("workload") || table.contains_key("topologies") {
        orchestrate::plan::load(path).map(|_| ())
    } else {
        orchestrate::topology::load(path).map(|_| ())
    }
}

#[test]
fn every_bad_spec_gets_its_message_and_location() {
    let dir = common::root().join("tests/specs/bad");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(
        files.len() >= 30,
        "the corpus has {} files; it must keep at least 30",
        files.len()
    );
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let expect = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| {
                panic!(
                    "{}: first line must be `# expect: LINE:COL: message`",
                    f.display()
                )
            });
        let (loc, fragment) = expect.split_once(": ").unwrap_or((expect, ""));
        let (line, col) = loc.split_once(':').expect("LINE:COL");
        let (line, col): (usize, usize) = (line.parse().unwrap(), col.parse().unwrap());
        match load(f) {
            Ok(()) => failures.push(format!("{}: loaded without error", f.display())),
            Err(errs) => {
                let first = &errs.errors[0];
                let got = (first.location.line, first.location.column);
                let full = format!(
                    "{} {}",
                    first.message,
                    first.help.clone().unwrap_or_default()
                );
                if got != (line, col) || !full.contains(fragment) {
                    failures.push(format!(
                        "{}: expected {line}:{col} containing {fragment:?}, got {}:{} {full:?}",
                        f.file_name().unwrap().to_string_lossy(),
                        got.0,
                        got.1
                    ));
                }
                assert_eq!(first.location.file, *f, "errors name the file they are in");
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
