//! Running host programs (docker, ip, tc, ssh, ...) with errors that name the step, the exact
//! command line and the program's own complaint.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::error::{Error, Result};

/// One invocation of a host program. Arguments are passed as separate words (never through a
/// shell on the host), so no quoting is involved.
#[derive(Debug, Clone)]
pub struct Cmd {
    program: String,
    args: Vec<String>,
    stdin: Option<Vec<u8>>,
    what: String,
    hint: Option<String>,
    timeout: Option<Duration>,
    current_dir: Option<std::path::PathBuf>,
    env: Vec<(String, String)>,
}

impl Cmd {
    /// `what` describes the step for error messages, e.g. "creating the segment networks".
    pub fn new(program: impl Into<String>, what: impl Into<String>) -> Cmd {
        Cmd {
            program: program.into(),
            args: Vec::new(),
            stdin: None,
            what: what.into(),
            hint: None,
            timeout: None,
            current_dir: None,
            env: Vec::new(),
        }
    }

    pub fn arg(mut self, a: impl Into<String>) -> Cmd {
        self.args.push(a.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Cmd {
        self.stdin = Some(bytes.into());
        self
    }

    /// What the user can do when this command fails.
    pub fn hint(mut self, hint: impl Into<String>) -> Cmd {
        self.hint = Some(hint.into());
        self
    }

    /// Stop the program (and fail) if it runs longer than this.
    pub fn timeout(mut self, t: Duration) -> Cmd {
        self.timeout = Some(t);
        self
    }

    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Cmd {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn current_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Cmd {
        self.current_dir = Some(dir.into());
        self
    }

    /// The command line as a person would type it (for messages and logs).
    pub fn display(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .map(shell_word)
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn spawn(&self) -> Result<Child> {
        let mut c = Command::new(&self.program);
        c.args(&self.args)
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &self.current_dir {
            c.current_dir(dir);
        }
        tracing::debug!(command = %self.display(), "running");
        c.spawn().map_err(|source| Error::Spawn {
            what: self.what.clone(),
            program: self.program.clone(),
            source,
            hint: self.hint.clone(),
        })
    }

    /// Runs the program; returns its exit status and its stdout and stderr as text.
    pub fn output(&self) -> Result<(std::process::ExitStatus, String, String)> {
        let mut child = self.spawn()?;
        let stdin = self.stdin.clone();
        let mut child_stdin = child.stdin.take();
        let writer = thread::spawn(move || {
            if let (Some(bytes), Some(pipe)) = (stdin, child_stdin.as_mut()) {
                // A program that exits without reading all its input is not an error here;
                // its exit status tells.
                let _ = pipe.write_all(&bytes);
            }
            drop(child_stdin);
        });
        let mut out = child.stdout.take().expect("piped");
        let mut err = child.stderr.take().expect("piped");
        let out_reader = thread::spawn(move || {
            let mut s = Vec::new();
            let _ = out.read_to_end(&mut s);
            s
        });
        let err_reader = thread::spawn(move || {
            let mut s = Vec::new();
            let _ = err.read_to_end(&mut s);
            s
        });
        let status = match self.timeout {
            None => child.wait(),
            Some(limit) => {
                let start = Instant::now();
                loop {
                    if let Some(st) = child.try_wait().map_err(|e| self.spawn_err(e))? {
                        break Ok(st);
                    }
                    if start.elapsed() > limit {
                        let _ = child.kill();
                        let _ = child.wait();
                        return Err(Error::Timeout {
                            what: self.what.clone(),
                            command: self.display(),
                            seconds: limit.as_secs(),
                        });
                    }
                    thread::sleep(Duration::from_millis(20));
                }
            }
        }
        .map_err(|e| self.spawn_err(e))?;
        let _ = writer.join();
        let stdout = String::from_utf8_lossy(&out_reader.join().unwrap_or_default()).into_owned();
        let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
        Ok((status, stdout, stderr))
    }

    fn spawn_err(&self, source: std::io::Error) -> Error {
        Error::Spawn {
            what: self.what.clone(),
            program: self.program.clone(),
            source,
            hint: self.hint.clone(),
        }
    }

    /// Runs the program and returns its stdout; a non-zero exit is an error carrying stderr.
    pub fn run(&self) -> Result<String> {
        let (status, stdout, stderr) = self.output()?;
        if status.success() {
            Ok(stdout)
        } else {
            Err(self.failed(status.to_string(), &stderr, &stdout))
        }
    }

    /// Runs the program only to learn whether it succeeds (probes).
    pub fn succeeds(&self) -> bool {
        matches!(self.output(), Ok((status, _, _)) if status.success())
    }

    pub(crate) fn failed(&self, status: String, stderr: &str, stdout: &str) -> Error {
        // Some programs (docker-compose) report on stdout; keep the tail of whichever spoke.
        let text = if stderr.trim().is_empty() {
            stdout
        } else {
            stderr
        };
        Error::Command {
            what: self.what.clone(),
            command: self.display(),
            status,
            stderr: tail(text, 40),
            hint: self.hint.clone(),
        }
    }
}

/// The last `lines` lines of a program's output.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.trim_end().lines().collect();
    let start = all.len().saturating_sub(lines);
    all[start..].join("\n")
}

/// Quotes a word for display the way a POSIX shell would need it.
pub fn shell_word(w: &str) -> String {
    let safe = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if safe {
        w.to_owned()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// Finds a program on PATH.
pub fn on_path(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_names_the_step_command_and_stderr() {
        let err = Cmd::new("sh", "probing the thing")
            .args(["-c", "echo oops >&2; exit 3"])
            .hint("install the thing")
            .run()
            .unwrap_err()
            .to_string();
        assert!(err.contains("probing the thing"), "{err}");
        assert!(err.contains("sh -c 'echo oops >&2; exit 3'"), "{err}");
        assert!(err.contains("oops"), "{err}");
        assert!(err.contains("hint: install the thing"), "{err}");
    }

    #[test]
    fn stdin_is_fed_and_stdout_returned() {
        let out = Cmd::new("cat", "echoing").stdin("hello\n").run().unwrap();
        assert_eq!(out, "hello\n");
    }

    #[test]
    fn a_missing_program_says_it_could_not_run() {
        let err = Cmd::new("/nonexistent/prog", "starting").run().unwrap_err();
        assert!(matches!(err, Error::Spawn { .. }), "{err}");
    }

    #[test]
    fn timeout_stops_the_program() {
        let t0 = Instant::now();
        let err = Cmd::new("sleep", "waiting")
            .arg("5")
            .timeout(Duration::from_millis(200))
            .run()
            .unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err}");
        assert!(t0.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("eth1"), "eth1");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}
