//! Typed command-line arguments written back out as the words a worker is started with: the
//! other half of clap's parsing, used by every `to_args()` of [`crate::invocation`].
//!
//! A value is written so that parsing it gives the same value again (the round-trip tests of
//! `invocation` hold each `to_args()` to that); an option left at its default is not written.

use std::fmt::Display;

/// The words of one worker command line, built option by option.
#[derive(Debug)]
pub struct Argv(Vec<String>);

impl Argv {
    /// A command line starting with `subcommand`.
    pub fn new(subcommand: &str) -> Argv {
        Argv(vec![subcommand.to_owned()])
    }

    /// Options alone, for a caller that writes the subcommand itself.
    pub fn options() -> Argv {
        Argv(Vec::new())
    }

    /// `--flag VALUE`.
    pub fn opt(&mut self, flag: &str, value: impl Display) {
        self.0.push(flag.to_owned());
        self.0.push(value.to_string());
    }

    /// `--flag VALUE` when there is a value.
    pub fn opt_some(&mut self, flag: &str, value: Option<impl Display>) {
        if let Some(v) = value {
            self.opt(flag, v);
        }
    }

    /// `--flag VALUE` unless the value is the option's default.
    pub fn opt_unless<T: Display + PartialEq>(&mut self, flag: &str, value: T, default: T) {
        if value != default {
            self.opt(flag, value);
        }
    }

    /// `--flag` when `on`.
    pub fn flag(&mut self, flag: &str, on: bool) {
        if on {
            self.0.push(flag.to_owned());
        }
    }

    pub fn into_vec(self) -> Vec<String> {
        self.0
    }
}

/// A value of a clap `ValueEnum` as it is written on the command line.
pub fn value_name(v: &impl clap::ValueEnum) -> String {
    v.to_possible_value()
        .expect("no value of the worker's options is skipped")
        .get_name()
        .to_owned()
}
