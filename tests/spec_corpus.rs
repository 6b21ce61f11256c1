//! Every bad spec under tests/specs/bad/ must fail with its expected message at its expected
//! place. Each file's first line says what: `# expect: LINE:COLUMN: message fragment`; one of
//! the errors reported must be there and say that. A second line `# errors: N` says how many
//! errors the file has; without it, exactly one.

mod common;

use std::path::Path;

use orchestrate::spec::SpecErrors;

fn load(path: &Path) -> Result<(), SpecErrors> {
    let text = std::fs::read_to_string(path).unwrap();
    if orchestrate::spec::is_experiment(&text) {
        let e = orchestrate::plan::load(path)?;
        orchestrate::plan::expand(&e).map(|_| ())
    } else {
        orchestrate::topology::load(path).map(|_| ())
    }
}

/// What a corpus file declares about itself.
struct Expectation {
    line: usize,
    column: usize,
    fragment: String,
    errors: usize,
}

fn expectation(path: &Path, text: &str) -> Expectation {
    let mut lines = text.lines();
    let expect = lines
        .next()
        .and_then(|l| l.strip_prefix("# expect: "))
        .unwrap_or_else(|| {
            panic!(
                "{}: first line must be `# expect: LINE:COL: message`",
                path.display()
            )
        });
    let (loc, fragment) = expect.split_once(": ").unwrap_or((expect, ""));
    let (line, column) = loc.split_once(':').expect("LINE:COL");
    let errors = lines
        .next()
        .and_then(|l| l.strip_prefix("# errors: "))
        .map_or(1, |n| n.trim().parse().expect("# errors: N"));
    Expectation {
        line: line.parse().unwrap(),
        column: column.parse().unwrap(),
        fragment: fragment.to_owned(),
        errors,
    }
}

/// Why `path` does not fail as its first lines say, if it does not.
fn check(path: &Path) -> Option<String> {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(path).unwrap();
    let want = expectation(path, &text);
    let errs = match load(path) {
        Ok(()) => return Some(format!("{name}: loaded without error")),
        Err(errs) => errs,
    };
    let describe = |e: &orchestrate::spec::SpecError| {
        format!(
            "{}:{} {} {}",
            e.location.line,
            e.location.column,
            e.message,
            e.help.clone().unwrap_or_default()
        )
    };
    for e in &errs.errors {
        assert_eq!(e.location.file, path, "errors name the file they are in");
    }
    let found = errs.errors.iter().any(|e| {
        (e.location.line, e.location.column) == (want.line, want.column)
            && describe(e).contains(&want.fragment)
    });
    let all: Vec<String> = errs.errors.iter().map(describe).collect();
    if !found {
        return Some(format!(
            "{name}: expected {}:{} containing {:?}, got {all:#?}",
            want.line, want.column, want.fragment
        ));
    }
    if errs.errors.len() != want.errors {
        return Some(format!(
            "{name}: expected {} error(s), got {}: {all:#?}",
            want.errors,
            errs.errors.len()
        ));
    }
    None
}

#[test]
fn every_bad_spec_gets_its_message_and_location() {
    let dir = common::root().join("tests/specs/bad");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 100,
        "the corpus has {} files; it must keep at least 100",
        files.len()
    );
    let failures: Vec<String> = files.iter().filter_map(|f| check(f)).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_good_spec_loads() {
    let dir = common::root().join("tests/specs/good");
    for f in std::fs::read_dir(&dir).unwrap() {
        let path = f.unwrap().path();
        if let Err(e) = load(&path) {
            panic!("{}: {}", path.display(), e.render());
        }
    }
}
