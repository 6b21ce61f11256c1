//! Arbitrary input to the three spec loaders (topology, experiment with its plan, inventory)
//! never panics, hangs or allocates without bound: it loads or is rejected with errors.
//!
//! The loads run in a child process (this test binary, re-run as `loader_child`) whose address
//! space is capped with RLIMIT_AS, and each input has a time bound; a panic, a timeout or a
//! child killed by the cap fails the test. Inputs are raw bytes, TOML assembled from the
//! formats' keys with hostile values, and the shipped specs with one value replaced.
//!
//! Every input that ever failed is kept in tests/fuzz-corpus/ (the test writes it there) and
//! replayed first on every run.
//!
//! Knobs: `ORCHESTRATE_FUZZ_CASES` (default 2000 generated inputs, a few seconds in a
//! debug build), `ORCHESTRATE_FUZZ_TIMEOUT_SECS` (per input, default 20),
//! `ORCHESTRATE_FUZZ_MEMORY_MB` (the child's address space, default 2048).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Which loader an input is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Topology,
    Experiment,
    Inventory,
}

impl Format {
    fn tag(self) -> &'static str {
        match self {
            Format::Topology => "topology",
            Format::Experiment => "experiment",
            Format::Inventory => "inventory",
        }
    }

    fn from_tag(tag: &str) -> Format {
        match tag {
            "experiment" => Format::Experiment,
            "inventory" => Format::Inventory,
            _ => Format::Topology,
        }
    }
}

/// Starts each answer of the loader child.
const ANSWER: &str = "\u{1e}loaded: ";

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------------------------------
// The child: reads `FORMAT LENGTH\n` and LENGTH bytes per input, loads it, answers one line.

/// The loader process the fuzz tests start (this test, re-run with `ORCHESTRATE_FUZZ_CHILD`
/// set). Run as a test of its own, it checks in-process what the parent relies on: one
/// answer per input, after the marker, whether the input loads or is rejected.
#[test]
fn loader_child() {
    if std::env::var_os("ORCHESTRATE_FUZZ_CHILD").is_none() {
        let good = std::fs::read(common::root().join("topologies/single-net.toml")).unwrap();
        let bad = b"[[segment]\nname = 3".to_vec();
        let mut input = Vec::new();
        for (tag, bytes) in [
            ("topology", &good),
            ("experiment", &bad),
            ("inventory", &bad),
        ] {
            input.extend(format!("{tag} {}\n", bytes.len()).bytes());
            input.extend(bytes);
        }
        let mut out = Vec::new();
        serve(&input[..], &mut out);
        let answers: Vec<&str> = std::str::from_utf8(&out)
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix(ANSWER))
            .collect();
        assert_eq!(answers, ["done"; 3], "{}", String::from_utf8_lossy(&out));
        return;
    }
    let mb: u64 = env_or("ORCHESTRATE_FUZZ_MEMORY_MB", 2048);
    let limit = libc::rlimit {
        rlim_cur: mb << 20,
        rlim_max: mb << 20,
    };
    // SAFETY: setrlimit with a valid struct; only lowers this process's own limit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
    std::panic::set_hook(Box::new(|_| {}));
    serve(std::io::stdin().lock(), std::io::stdout());
}

/// Reads `FORMAT LENGTH\n` and LENGTH bytes per input, loads it, answers one line.
fn serve(mut input: impl BufRead, mut out: impl Write) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        common::root().join("topologies/single-net.toml"),
        dir.path().join("t.toml"),
    )
    .unwrap();
    let mut header = String::new();
    while {
        header.clear();
        input.read_line(&mut header).unwrap() > 0
    } {
        let (tag, len) = header.trim().split_once(' ').unwrap();
        let mut bytes = vec![0; len.parse().unwrap()];
        input.read_exact(&mut bytes).unwrap();
        let path = dir.path().join("input.toml");
        std::fs::write(&path, &bytes).unwrap();
        let outcome = std::panic::catch_unwind(|| load(Format::from_tag(tag), &path));
        let answer = match outcome {
            Ok(()) => "done".to_owned(),
            Err(p) => format!(
                "panic {}",
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
                    .replace('\n', " ")
            ),
        };
        writeln!(out, "{ANSWER}{answer}").unwrap();
        out.flush().unwrap();
    }
}

/// Loads and, where it loads, goes on as the commands do (plan and render it); errors are
/// rendered too, since printing them is part of what must not crash.
fn load(format: Format, path: &Path) {
    match format {
        Format::Topology => match orchestrate::topology::load(path) {
            Ok(t) => {
                let _ = orchestrate::topology::draw::svg(&t);
            }
            Err(e) => {
                let _ = e.render();
            }
        },
        Format::Experiment => match orchestrate::plan::load(path) {
            Ok(e) => match orchestrate::plan::expand(&e) {
                Ok(p) => {
                    let _ = orchestrate::plan::render::text(&p, None);
                }
                Err(e) => {
                    let _ = e.render();
                }
            },
            Err(e) => {
                let _ = e.render();
            }
        },
        Format::Inventory => {
            if let Err(e) = orchestrate::remote::Inventory::load(path) {
                let _ = e.render();
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The parent: feeds inputs to a child, restarting it after a failure.

struct Loader {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<String>,
    timeout: Duration,
}

impl Loader {
    fn start() -> Loader {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["loader_child", "--exact", "--nocapture", "--test-threads=1"])
            .env("ORCHESTRATE_FUZZ_CHILD", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, answers) = channel();
        std::thread::spawn(move || {
            // The test harness writes its own words on the same stream, even on the line
            // of the first answer: an answer is what follows the marker.
            for line in stdout.lines().map_while(Result::ok) {
                if let Some((_, answer)) = line.split_once(ANSWER)
                    && tx.send(answer.to_owned()).is_err()
                {
                    break;
                }
            }
        });
        Loader {
            child,
            stdin,
            answers,
            timeout: Duration::from_secs(env_or("ORCHESTRATE_FUZZ_TIMEOUT_SECS", 20)),
        }
    }

    /// Loads one input; `Err` says how it failed (the loader is then restarted).
    fn check(&mut self, format: Format, bytes: &[u8]) -> Result<(), String> {
        let sent = writeln!(self.stdin, "{} {}", format.tag(), bytes.len())
            .and_then(|()| self.stdin.write_all(bytes))
            .and_then(|()| self.stdin.flush());
        let failure = match (sent, self.answers.recv_timeout(self.timeout)) {
            (Ok(()), Ok(answer)) if answer == "done" => return Ok(()),
            (Ok(()), Ok(panic)) => panic.replacen("panic", "panicked:", 1),
            (_, Err(RecvTimeoutError::Timeout)) => {
                format!("no answer within {:?}", self.timeout)
            }
            (_, Err(RecvTimeoutError::Disconnected)) | (Err(_), _) => {
                let status = self.child.wait().ok();
                format!("the loader died ({status:?}): over the memory cap, or aborted")
            }
        };
        self.restart();
        Err(failure)
    }

    fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        *self = Loader::start();
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn corpus_dir() -> PathBuf {
    common::root().join("tests/fuzz-corpus")
}

/// Keeps a failing input as `<format>-<hash>.toml` for every later run to replay.
fn keep(format: Format, bytes: &[u8]) -> PathBuf {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    });
    let path = corpus_dir().join(format!("{}-{hash:016x}.toml", format.tag()));
    std::fs::create_dir_all(corpus_dir()).unwrap();
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn kept_failures_load_or_are_rejected_cleanly() {
    let mut loader = Loader::start();
    let mut failures = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let format = Format::from_tag(name.split('-').next().unwrap_or(""));
        let bytes = std::fs::read(&f).unwrap();
        if let Err(why) = loader.check(format, &bytes) {
            failures.push(format!("{name}: {why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn arbitrary_input_loads_or_is_rejected_cleanly() {
    let cases: u32 = env_or("ORCHESTRATE_FUZZ_CASES", 2000);
    let mut runner = TestRunner::new(Config {
        cases,
        max_shrink_iters: 8,
        failure_persistence: None,
        ..Config::default()
    });
    let loader = std::cell::RefCell::new(Loader::start());
    let checked = std::cell::Cell::new(0u32);
    let result = runner.run(&input(), |(format, bytes)| {
        checked.set(checked.get() + 1);
        loader.borrow_mut().check(format, &bytes).map_err(|why| {
            let kept = keep(format, &bytes);
            TestCaseError::fail(format!("{why} (kept as {})", kept.display()))
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(
        checked.get() >= cases,
        "only {} inputs were checked",
        checked.get()
    );
}

// ---------------------------------------------------------------------------------------
// Inputs.

fn input() -> impl Strategy<Value = (Format, Vec<u8>)> {
    let format = prop_oneof![
        Just(Format::Topology),
        Just(Format::Experiment),
        Just(Format::Inventory)
    ];
    prop_oneof![
        1 => (format.clone(), proptest::collection::vec(any::<u8>(), 0..300)),
        3 => format.clone().prop_flat_map(|f| (Just(f), assembled(f))),
        3 => mutated(),
    ]
}

/// Values chosen to sit on or past every limit, of every TOML type.
const HOSTILE: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "-1",
    "255",
    "256",
    "257",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "nan",
    "inf",
    "true",
    "\"\"",
    "\"a b\"",
    "\"n\\t1\"",
    "\"\\u001b[2J\"",
    "\"\\u202e\"",
    "\"n[1-9999999]\"",
    "\"n[1-100000][1-100000]\"",
    "\"n[0-0]\"",
    "\"n[01-16]\"",
    "\"n[1-2\"",
    "\"n1,n1\"",
    "\"n[1-300]\"",
    "\"n[1-2]:eth1\"",
    "\"n[1-9999999]:eth1\"",
    "\"x:eth1\"",
    "[]",
    "[[]]",
    "{}",
    "[\"n1\", \"n1\"]",
    "[[\"n01\", \"n02\"], [\"n01\", \"n01\"]]",
    "{ from = 1, to = 4294967295 }",
    "{ from = 0, to = 0 }",
    "{ from = 1, to = \"64GiB\", factor = 2 }",
    "{ netpipe = true, from = 1, to = \"64MiB\", perturbation = 18446744073709551615 }",
    "\"0s\"",
    "\"1ns\"",
    "\"500000000000y\"",
    "\"1bit\"",
    "\"10000gbit\"",
    "\"10mbit\"",
    "\"0.0.0.0/0\"",
    "\"255.255.255.255/32\"",
    "\"127.0.0.1\"",
    "\"10.0.0.1/24\"",
    "\"255.255.255.252/30\"",
    "\"224.0.0.1\"",
    "\"64GiB\"",
    "\"18446744073709551615\"",
    "[64, \"64MiB\", 0]",
    "\"grid\"",
    "\"bus\"",
    "\"single\"",
    "\"routed\"",
    "\"switched\"",
    "\"token\"",
    "\"pipeline\"",
    "\"load\"",
    "\"filecopy\"",
    "\"udp\"",
    "\"balance-rr\"",
    "\"802.3ad\"",
    "\"userspace\"",
    "\"486dx4\"",
    "{ send = \"1s\", receive = \"0s\", forward = \"2s\" }",
    "[\"t.toml\"]",
    "[\"t.toml\", \"t.toml\"]",
    "[\"/dev/zero\"]",
    "[\"../../../../../../etc/passwd\"]",
    "[\"eth1\"]",
    "[\"eth1\", \"eth1\"]",
];

/// Keys of the three formats, with the tables they sit in.
const TOPOLOGY_KEYS: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "name",
            "description",
            "routing",
            "host",
            "emulation",
            "nodes",
        ],
    ),
    ("[addressing]", &["base", "prefix"]),
    (
        "[generator]",
        &[
            "kind",
            "rows",
            "cols",
            "interconnect",
            "nodes",
            "buses",
            "rate",
            "medium",
            "prefix",
            "host",
            "bond",
        ],
    ),
    (
        "[[segment]]",
        &["name", "rate", "medium", "emulation", "members"],
    ),
    ("[[switch]]", &["name", "segments"]),
    (
        "[[bond]]",
        &[
            "name",
            "nodes",
            "mode",
            "slaves",
            "driver",
            "miimon",
            "xmit_hash_policy",
            "primary",
        ],
    ),
    ("[[route]]", &["node", "to", "via"]),
    ("[[address]]", &["node", "interface", "address"]),
];
const EXPERIMENT_KEYS: &[(&str, &[&str])] = &[
    ("", &["name", "description", "seed", "topologies", "host"]),
    ("[cluster]", &["kind", "inventory"]),
    ("[bonding]", &["modes"]),
    (
        "[[workload]]",
        &[
            "pattern",
            "protocol",
            "sizes",
            "pairs",
            "placement",
            "explicit_pairs",
            "exchanges",
            "duration",
            "warmup",
            "repetitions",
            "statistic",
            "depth",
            "rate",
            "drop_caches",
        ],
    ),
    ("[report]", &["baseline", "formats"]),
];
const INVENTORY_KEYS: &[(&str, &[&str])] = &[
    (
        "[defaults]",
        &["user", "port", "identity", "known_hosts", "sudo", "jump"],
    ),
    (
        "[[host]]",
        &[
            "nodes",
            "address",
            "user",
            "port",
            "identity",
            "known_hosts",
            "jump",
            "sudo",
        ],
    ),
];

/// A document of the format's tables, each with some of its keys set to hostile values.
fn assembled(format: Format) -> impl Strategy<Value = Vec<u8>> {
    let keys = match format {
        Format::Topology => TOPOLOGY_KEYS,
        Format::Experiment => EXPERIMENT_KEYS,
        Format::Inventory => INVENTORY_KEYS,
    };
    let entry = (
        0..keys.len(),
        any::<prop::sample::Index>(),
        0..HOSTILE.len(),
    );
    proptest::collection::vec(entry, 1..12).prop_map(move |entries| {
        let mut doc = match format {
            Format::Experiment => "topologies = [\"t.toml\"]\n".to_owned(),
            _ => String::new(),
        };
        let mut current = "";
        for (table, key, value) in entries {
            let (header, names) = keys[table];
            if header != current || header.starts_with("[[") {
                doc.push_str(header);
                doc.push('\n');
                current = header;
            }
            let key = names[key.index(names.len())];
            doc.push_str(&format!("{key} = {}\n", HOSTILE[value]));
        }
        doc.into_bytes()
    })
}

/// A shipped spec with one value replaced by a hostile one.
fn mutated() -> impl Strategy<Value = (Format, Vec<u8>)> {
    let files: Vec<(Format, String)> = shipped_specs();
    let count = files.len();
    (0..count, any::<prop::sample::Index>(), 0..HOSTILE.len()).prop_map(
        move |(file, line, value)| {
            let (format, text) = &files[file];
            let lines: Vec<&str> = text.lines().collect();
            let assignments: Vec<usize> = (0..lines.len())
                .filter(|&i| lines[i].contains(" = ") && !lines[i].starts_with('#'))
                .collect();
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            if !assignments.is_empty() {
                let i = assignments[line.index(assignments.len())];
                let key = lines[i].split(" = ").next().unwrap_or("x");
                out[i] = format!("{key} = {}", HOSTILE[value]);
            }
            (*format, out.join("\n").into_bytes())
        },
    )
}

/// The shipped topologies and experiments (their topology paths pointed at the child's
/// `t.toml`), and a small inventory.
fn shipped_specs() -> Vec<(Format, String)> {
    let root = common::root();
    let mut specs = Vec::new();
    for dir in ["topologies", "tests/specs/good"] {
        for f in std::fs::read_dir(root.join(dir)).unwrap() {
            specs.push((
                Format::Topology,
                std::fs::read_to_string(f.unwrap().path()).unwrap(),
            ));
        }
    }
    for f in std::fs::read_dir(root.join("experiments")).unwrap() {
        // The experiments only: not the data they draw beside their runs.
        let path = f.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let pointed: Vec<String> = text
            .lines()
            .map(|l| {
                if l.starts_with("topologies") {
                    "topologies = [\"t.toml\"]".to_owned()
                } else {
                    l.to_owned()
                }
            })
            .collect();
        specs.push((Format::Experiment, pointed.join("\n")));
    }
    specs.push((
        Format::Inventory,
        "[defaults]\nuser = \"root\"\nport = 22\n\n[[host]]\nnodes = \"n[01-16]\"\naddress = \"node[01-16].cluster\"\n"
            .to_owned(),
    ));
    specs
}
