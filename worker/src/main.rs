//! `orchestrate-worker`: the program copied to every node. This file only parses the command
//! line ([`orchestrate_worker::invocation`]) and hands each invocation to the library.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use orchestrate_worker::client_command::{self, ClientCommand};
use orchestrate_worker::invocation::{Cli, Invocation};
use orchestrate_worker::patterns::allreduce::Allreduce;
use orchestrate_worker::patterns::alltoall::Alltoall;
use orchestrate_worker::patterns::bcast::Bcast;
use orchestrate_worker::{agent, bond, probe, ranks, serve};

fn main() -> ExitCode {
    let code = match Cli::parse().invocation {
        Invocation::Serve(a) => match a.options() {
            Ok(opts) => serve::serve(opts),
            Err(e) => {
                eprintln!("orchestrate-worker serve: {e}");
                2
            }
        },
        Invocation::Agent => agent::run(),
        Invocation::Probe => {
            let _ = writeln!(std::io::stdout(), "{}", probe::probe());
            0
        }
        Invocation::Bond(a) => bond::main(a),
        Invocation::Pingpong(a) => client(client_command::pingpong(&a)),
        Invocation::Stream(a) => client(client_command::stream(&a)),
        Invocation::Token(a) => client(client_command::token(&a)),
        Invocation::Pipeline(a) => client(client_command::pipeline(&a)),
        Invocation::Load(a) => client(client_command::load(&a)),
        Invocation::Filecopy(a) => client(client_command::filecopy(&a)),
        Invocation::Halo(a) => ranks::run(&a.ranks, &a.collective()),
        Invocation::Alltoall(a) => ranks::run(
            &a.ranks,
            &Alltoall {
                algorithm: a.algorithm,
            },
        ),
        Invocation::Allreduce(a) => ranks::run(
            &a.ranks,
            &Allreduce {
                algorithm: a.algorithm,
            },
        ),
        Invocation::Bcast(a) => ranks::run(
            &a.ranks,
            &Bcast {
                root: a.root as usize,
            },
        ),
    };
    ExitCode::from(code as u8)
}

/// Runs a client pattern, or says why its command line is refused (exit status 2).
fn client(command: Result<ClientCommand, String>) -> i32 {
    match command {
        Ok(c) => c.run(),
        Err(e) => {
            eprintln!("orchestrate-worker: {e}");
            2
        }
    }
}
