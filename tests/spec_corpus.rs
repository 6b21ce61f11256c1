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
    // An empty fragment is in every message: it would check the place alone.
    assert!(
        !fragment.trim().is_empty(),
        "{}: `# expect:` names no message fragment",
        path.display()
    );
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
    let files = specs_in("tests/specs/bad");
    assert!(
        files.len() >= 100,
        "the corpus has {} files; it must keep at least 100",
        files.len()
    );
    let failures: Vec<String> = files.iter().filter_map(|f| check(f)).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every `.toml` directly in `dir`, sorted.
fn specs_in(dir: &str) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(common::root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

/// The test corpus of good specs and every spec the project ships: each loads (an experiment
/// also plans). Each directory is counted, so a corpus emptied or moved fails here instead of
/// passing on nothing.
#[test]
fn every_good_spec_and_every_shipped_spec_loads() {
    for (dir, at_least) in [
        ("tests/specs/good", 2),
        ("experiments", 5),
        ("topologies", 6),
    ] {
        let files = specs_in(dir);
        assert!(
            files.len() >= at_least,
            "{dir} has {} specs; it must keep at least {at_least}",
            files.len()
        );
        for path in files {
            if let Err(e) = load(&path) {
                panic!("{}: {}", path.display(), e.render());
            }
        }
    }
}

/// serde's and the parsers' own words never reach a spec's author: every bad spec's errors
/// are in the project's terms (a key, a value, a whole number).
#[test]
fn no_bad_spec_is_answered_in_serdes_words() {
    const SERDE: [&str; 10] = [
        "invalid type",
        "invalid value",
        "variant",
        "field `",
        "u32",
        "u64",
        "i128",
        "untagged",
        "IP address syntax",
        "struct ",
    ];
    let mut leaks = Vec::new();
    for path in specs_in("tests/specs/bad") {
        let Err(errs) = load(&path) else { continue };
        for e in &errs.errors {
            let text = format!("{} {}", e.message, e.help.clone().unwrap_or_default());
            if let Some(word) = SERDE.iter().find(|w| text.contains(**w)) {
                leaks.push(format!("{}: {word:?} in {text}", path.display()));
            }
        }
    }
    assert!(leaks.is_empty(), "{leaks:#?}");
}
