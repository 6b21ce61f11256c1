//! The programs a node's scripts call are all checked before the first change: every command
//! word of every rendered apply and teardown script of the shipped topologies (kernel and
//! userspace bonds alike) is a builtin, a function the script defines, or in the script's
//! `tools`; and an apply script run where one of them is missing stops, naming it, before it
//! writes its ledger.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use orchestrate::netconf::{self, NodeScripts};

/// Words sh runs itself, in dash, bash and busybox ash alike.
const BUILTINS: &[&str] = &[
    "[", ":", ".", "break", "continue", "echo", "printf", "set", "exit", "return", "shift", "kill",
    "test", "true", "false", "command", "cd", "read", "trap", "wait", "eval", "exec", "export",
    "unset",
];
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}",
];
/// Functions of the scripts that run their arguments as a command, after this many words.
const RUNNERS: &[(&str, usize)] = &[("undo", 1)];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Context {
    Code,
    Quoted,
    /// Inside `$( )`.
    Substitution,
}

/// The command words of a POSIX sh script as the scripts here write it: quotes, escapes,
/// `$( )`, `$(( ))`, redirections, `for` lists and line continuations. Words starting with
/// `$` or `"$` (a command held in a variable) are left out.
struct Scanner {
    stack: Vec<(Context, String, bool)>,
    word: String,
    /// Whether the word being read is in command position.
    command_position: bool,
    /// Words still to skip before a command (after `undo N`, within a `for` list, after a
    /// redirection).
    skip: usize,
    in_for: bool,
    words: BTreeSet<String>,
}

impl Scanner {
    fn new() -> Self {
        Scanner {
            stack: Vec::new(),
            word: String::new(),
            command_position: true,
            skip: 0,
            in_for: false,
            words: BTreeSet::new(),
        }
    }

    fn end_word(&mut self) {
        let w = std::mem::take(&mut self.word);
        if w.is_empty() {
            return;
        }
        if self.in_for || !self.command_position {
            return;
        }
        if self.skip > 0 {
            self.skip -= 1;
            return;
        }
        if w == "for" {
            self.in_for = true;
        } else if KEYWORDS.contains(&w.as_str()) {
            // The next word is a command too.
        } else if w.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }) {
            // An assignment; a command may follow.
        } else {
            if !(w.starts_with('$') || w.starts_with("\"$")) {
                self.words.insert(w.clone());
            }
            match RUNNERS.iter().find(|(name, _)| *name == w) {
                Some((_, args)) => self.skip = *args,
                None => self.command_position = false,
            }
        }
    }

    fn separator(&mut self) {
        self.end_word();
        self.command_position = true;
        self.in_for = false;
        self.skip = 0;
    }

    fn scan(mut self, script: &str) -> BTreeSet<String> {
        let chars: Vec<char> = script.chars().collect();
        let mut ctx = Context::Code;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            match (ctx, c) {
                (_, '\\') => {
                    // A line continuation joins; any other escape is part of the word.
                    if let Some(n) = next.filter(|n| *n != '\n') {
                        self.word.push(c);
                        self.word.push(n);
                    }
                    i += 2;
                    continue;
                }
                (_, '$') if next == Some('(') && chars.get(i + 2) == Some(&'(') => {
                    // Arithmetic: no commands inside.
                    let rest: String = chars[i..].iter().collect();
                    let len = rest.find("))").expect("closed arithmetic") + 2;
                    self.word.push_str(&rest[..len]);
                    i += len;
                    continue;
                }
                (_, '$') if next == Some('(') => {
                    let outer = (ctx, std::mem::take(&mut self.word), self.command_position);
                    self.stack.push(outer);
                    ctx = Context::Substitution;
                    self.command_position = true;
                    i += 2;
                    continue;
                }
                (Context::Quoted, '"') => {
                    let (c, w, p) = self.stack.pop().expect("opened");
                    (ctx, self.word, self.command_position) = (c, w + &self.word, p);
                }
                (Context::Quoted, _) => self.word.push(c),
                (Context::Substitution, ')') => {
                    self.end_word();
                    let (c, w, p) = self.stack.pop().expect("opened");
                    (ctx, self.word, self.command_position) = (c, w + "$()", p);
                }
                (_, '"') => {
                    let outer = (ctx, std::mem::take(&mut self.word), self.command_position);
                    self.stack.push(outer);
                    self.word = "\"".into();
                    ctx = Context::Quoted;
                }
                (_, '\'') => {
                    let len = chars[i + 1..]
                        .iter()
                        .position(|&q| q == '\'')
                        .expect("closed");
                    self.word.extend(&chars[i..i + len + 2]);
                    i += len + 2;
                    continue;
                }
                (_, '#') if self.word.is_empty() => {
                    let len = chars[i..]
                        .iter()
                        .position(|&n| n == '\n')
                        .unwrap_or(chars.len() - i);
                    i += len;
                    continue;
                }
                (_, '>' | '<') => {
                    self.end_word();
                    // The target is not a command: `>&2`, `2>&1`, `>>"$ledger"`, `<"/proc/..."`.
                    while matches!(chars.get(i + 1), Some('>' | '&')) {
                        i += 1;
                    }
                    while chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()) {
                        i += 1;
                    }
                    if self.command_position {
                        self.skip += 1;
                    }
                }
                (_, ';' | '&' | '|' | '\n' | '(' | ')') => self.separator(),
                (_, ' ' | '\t') => self.end_word(),
                _ => self.word.push(c),
            }
            i += 1;
        }
        self.end_word();
        self.words
    }
}

fn command_words(script: &str) -> BTreeSet<String> {
    Scanner::new().scan(script)
}

/// `name() {` definitions.
fn functions(script: &str) -> BTreeSet<String> {
    script
        .lines()
        .filter_map(|l| l.trim_start().split_once("() {").map(|(f, _)| f.to_owned()))
        .collect()
}

/// Every node's scripts of every shipped topology, bonds on either driver.
fn all_scripts() -> Vec<(String, NodeScripts)> {
    let mut all = Vec::new();
    for name in common::SHIPPED_TOPOLOGIES {
        let t = common::topology(name);
        for n in &t.nodes {
            for kernel in [true, false] {
                let settled = netconf::settle_bond_drivers(n, kernel);
                all.push((
                    format!("{name} {} kernel={kernel}", n.name),
                    netconf::render(&t, &settled),
                ));
            }
        }
    }
    all
}

#[test]
fn the_scanner_finds_command_words_and_nothing_else() {
    let words = command_words(
        "set -eu\nx=$(dirname \"$a\") # not_a_command\nif [ -s \"$l\" ]; then fail \"a; b $(tail -n 3 \"$f\")\"; fi\n\
         for d in a b; do ip link show >/dev/null 2>&1 || n=$((n + 1)); done\nundo 3 sysctl -qw 'a;b'\n\
         nohup \"$w\" x </dev/null >\"$log\" 2>&1 &\n",
    );
    let expected: BTreeSet<String> = [
        "set", "dirname", "[", "fail", "tail", "ip", "undo", "sysctl", "nohup",
    ]
    .map(String::from)
    .into();
    assert_eq!(words, expected);
}

#[test]
fn every_program_the_scripts_call_is_checked_before_any_change() {
    let mut gaps = Vec::new();
    for (what, s) in all_scripts() {
        for script in [&s.apply, &s.teardown] {
            let defined = functions(script);
            for w in command_words(script) {
                let known = BUILTINS.contains(&w.as_str())
                    || defined.contains(&w)
                    || s.tools.contains(&w.as_str())
                    // Optional, and guarded where it is used.
                    || script.contains(&format!("command -v {w} "));
                if !known {
                    gaps.push(format!("{what}: `{w}`"));
                }
            }
        }
        assert!(
            s.apply
                .contains(&format!("for tool in {}; do", s.tools.join(" "))),
            "{what}: the apply script checks its tools"
        );
    }
    gaps.sort();
    gaps.dedup();
    assert!(
        gaps.is_empty(),
        "called but not checked:\n{}",
        gaps.join("\n")
    );
}

/// A directory of links to the real programs `tools` names, except `without`.
fn path_without(dir: &Path, tools: &[&str], without: &str) {
    for t in tools.iter().chain(&["sh"]).filter(|t| **t != without) {
        let found = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {t}"))
            .output()
            .unwrap();
        let real = String::from_utf8(found.stdout).unwrap();
        if !real.trim().is_empty() {
            std::os::unix::fs::symlink(real.trim(), dir.join(t)).unwrap();
        }
    }
}

#[test]
fn a_missing_program_stops_the_apply_script_before_its_first_change() {
    let t = common::topology("routed-mesh-4x4");
    let n = t
        .nodes
        .iter()
        .find(|n| n.forwarding)
        .expect("a forwarding node");
    let s = netconf::render(&t, n);
    assert!(s.tools.contains(&"sysctl") && s.tools.contains(&"ip"));
    for missing in ["ip", "sysctl", "sed"] {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        path_without(&bin, &s.tools, missing);
        let ledger = dir.path().join("run/ledger");
        let sh = std::fs::read_link(bin.join("sh")).expect("sh is installed");
        let out = Command::new(sh)
            .args(["-s", "--"])
            .arg(&ledger)
            .env_clear()
            .env("PATH", &bin)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write as _;
                c.stdin.take().unwrap().write_all(s.apply.as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{missing}: {stderr}");
        assert!(
            stderr.contains(&format!("on {}: missing tools: {missing} ", n.name)),
            "{missing}: the node and the missing tool are named: {stderr}"
        );
        assert!(
            !ledger.exists() && !ledger.parent().unwrap().exists(),
            "{missing}: nothing was changed"
        );
    }
}
