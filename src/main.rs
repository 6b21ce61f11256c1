//! `orchestrate`: the command line. Each subcommand only wires the library's parts together.

mod cluster_cmd;
mod medium_cmd;
mod plan_cmd;
mod run_cmd;
mod spec_errors;
mod validate_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use orchestrate::spec::NodeName;

/// Declarative experiments for interconnect topology studies.
///
/// Write an experiment in TOML (topologies, bonding, traffic pattern, pair counts, sizes);
/// `orchestrate plan` shows exactly what would run on every node, `orchestrate run` runs it.
/// Start with `orchestrate plan experiments/grid4x4.toml`.
#[derive(Parser)]
#[command(version, about, long_about, propagate_version = true)]
struct Cli {
    /// More log output (-v: debug, -vv: trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Only warnings and errors: no progress, no log.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check experiment, topology and inventory files without touching any node.
    ///
    /// Each file is read as an experiment if it has `workload` or `topologies`, as an
    /// inventory if it has `[defaults]` or `[[host]]` tables, else as a topology. An
    /// experiment's inventory (`[cluster] inventory = ...`) is checked with it, against its
    /// topologies. Every problem is reported as file:line:column with what was expected (at
    /// most 20 per file, then how many more). Counts are capped: at most 4096 nodes per
    /// topology, 16 buses, 32 topologies, 1024 sizes or pair counts per workload, 1000
    /// repetitions, 100 million exchanges, runs of a day, 100000 points per plan; message
    /// sizes up to the worker's 64 MiB (65507 bytes over UDP); rates of 1 kbit/s or more.
    /// Exits non-zero if any file has a problem.
    Validate {
        /// Files to check, e.g. experiments/*.toml topologies/*.toml hosts.toml.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print one JSON document on stdout instead: `ok`, and per file `file`, `kind`,
        /// `ok`, `summary`, `errors` and `notes`, each problem with `message`, `file`,
        /// `line`, `column` and `help` (null where they do not apply).
        #[arg(long)]
        json: bool,
    },
    /// Show what a run would do: configurations, pair placements and paths, points in run
    /// order with a time estimate, and every node's apply and teardown scripts.
    Plan {
        /// The experiment file.
        experiment: PathBuf,
        /// Show only this node: its interfaces, addresses, bonds and routes in each
        /// configuration, and its scripts.
        #[arg(long, value_name = "NODE")]
        node: Option<NodeName>,
        /// Print the plan as JSON on stdout instead of text.
        #[arg(long)]
        json: bool,
        /// Also write a drawing of each topology into DIR, as SVG and as Graphviz DOT.
        #[arg(long, value_name = "DIR")]
        graph: Option<PathBuf>,
    },
    /// Aggregate a run's records into tables, findings and figures (CSV, Markdown, LaTeX, SVG).
    ///
    /// Writes into the run directory: report.md (laid out for a paper: summary, the study,
    /// a legend of short labels, results tables), appendix.md (every cell's interval and
    /// winner, the model, the medium, the environment), tables.tex (the results tables in
    /// booktabs), summary.csv, comparison.csv, model.csv, summary.json and figures/*.svg at
    /// print size.
    ///
    /// Runs automatically at the end of `run`; re-running it on the same directory gives
    /// byte-identical files. `--compare` puts several runs side by side; `--compare OLD NEW
    /// --threshold 5%` checks NEW for regressions against OLD instead. Token-test cells are
    /// set beside the analytic model (model.csv); a run of the study's configurations also
    /// gets "Against the 1996 paper" in report.md. The experiment's `[[reference]]` values
    /// are checked, shown in report.md and kept run after run in `history.csv` (and drawn in
    /// `history.svg`) beside the experiment's run directories.
    ///
    /// Exit status: 0 when written (and every check passed), 3 when a regression check finds
    /// a cell worse or missing or a reference value fails, 1 on any other error.
    Report(orchestrate::report::ReportArgs),
    /// The virtual cluster: a topology as docker containers with emulated wires, reached
    /// over SSH like real machines (image, up, status, verify, down).
    Cluster {
        #[command(subcommand)]
        action: cluster_cmd::ClusterCommand,
    },
    /// Run an experiment: configure every node over SSH, measure every point, tear down.
    ///
    /// With `kind = "docker"` (the default) the virtual cluster is built and brought up for
    /// each topology, and taken down afterwards unless --keep-cluster. Records are appended to
    /// `<out>/<experiment>/<time>/` as each point finishes; the report is written at the end.
    /// Nodes are left as they were found, on success, failure and Ctrl-C.
    ///
    /// Exit status: 0 when every point was measured and every `[[reference]]` value of the
    /// experiment holds, 3 when the points were measured but a reference value fails, 130
    /// after Ctrl-C, 1 on a failed point or any other error.
    Run(run_cmd::RunArgs),
    /// The Ethernet medium emulator: simulate a saturated segment in simulated time.
    ///
    /// Virtual clusters emulate shared segments frame by frame (serialization, CSMA/CD,
    /// host costs); `simulate` runs the same MAC model with synthetic stations, e.g.
    /// `orchestrate medium simulate --stations 1,8,24 --frames 64,1536`.
    Medium {
        #[command(subcommand)]
        action: medium_cmd::MediumCommand,
    },
    /// Undo what a crashed or interrupted run left configured, from its ledger.json.
    Teardown {
        /// The run directory.
        run_dir: PathBuf,
    },
    /// Print the JSON Schema of one file format, for editors: save it and point the file at
    /// it (`#:schema ./topology.schema.json` on the first line, for taplo and Even Better
    /// TOML), e.g. `orchestrate schema topology > topology.schema.json`.
    Schema {
        /// Which file format: a topology, an experiment or an inventory.
        #[arg(value_enum)]
        format: SchemaFormat,
    },
    /// Print a shell completion script, e.g. `orchestrate completions bash > ~/.local/share/bash-completion/completions/orchestrate`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// The file formats `orchestrate schema` describes.
#[derive(Clone, Copy, clap::ValueEnum)]
enum SchemaFormat {
    Topology,
    Experiment,
    Inventory,
}

impl Command {
    /// Commands that only read files and print: when their reader goes away (`| head`), they
    /// stop quietly, as `cat` does. The others keep Rust's default of ignoring SIGPIPE: they
    /// talk to sockets and children, where a closed peer is an error to report, not a reason
    /// to die.
    fn only_prints(&self) -> bool {
        match self {
            Command::Validate { .. }
            | Command::Plan { .. }
            | Command::Report(_)
            | Command::Schema { .. }
            | Command::Completions { .. } => true,
            Command::Run(args) => args.dry_run,
            Command::Cluster { .. } | Command::Medium { .. } | Command::Teardown { .. } => false,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.command.only_prints() {
        // SAFETY: restoring the default disposition of one signal, before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    if matches!(cli.command, Command::Report(_) | Command::Run(_)) {
        one_malloc_arena();
    }
    init_logging(cli.verbose, cli.quiet);
    match run(cli.command, cli.quiet) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Has glibc's malloc serve every thread from one arena, for the commands that aggregate
/// records. Polars' engine frees on one thread what it decoded on another; with an arena per
/// thread the freed memory stayed with its arena, and a report of 10 million records held
/// 0.95-1.0 GiB instead of 0.8, and ran no faster. (The emulator runs as a process of its own,
/// `orchestrate medium`, and keeps glibc's default.)
fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a limit glibc reads when a thread first allocates; called
    // before any thread starts.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

fn init_logging(verbose: u8, quiet: bool) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "info",
        (false, 1) => "debug",
        (false, _) => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("ORCHESTRATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(orchestrate::runner::LogWriter)
        .with_ansi(colour_on_stderr())
        .without_time()
        .init();
}

/// Colour only for a person at a terminal who has not asked for none (https://no-color.org):
/// escape codes in a log file or a pipe are noise.
fn colour_on_stderr() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn run(command: Command, quiet: bool) -> anyhow::Result<ExitCode> {
    match command {
        Command::Validate { files, json } => Ok(validate_cmd::validate(&files, json)),
        Command::Plan {
            experiment,
            node,
            json,
            graph,
        } => plan_cmd::plan(&experiment, node.as_ref(), json, graph.as_deref()),
        Command::Report(args) => {
            let dir = args
                .run_dir
                .clone()
                .or_else(|| args.compare.first().cloned())
                .unwrap_or_default();
            let drawer = orchestrate::runner::RunDrawings::new(&dir);
            let model = orchestrate::runner::RunModel::new(&dir);
            use orchestrate::report::{CHECK_FAILED, Outcome};
            let wires = orchestrate::runner::PlannedWires;
            match orchestrate::report::run_command(
                args,
                Some(&drawer),
                Some(&model),
                Some(&model),
                Some(&wires),
            )? {
                Outcome::Passed => Ok(ExitCode::SUCCESS),
                Outcome::ChecksFailed => Ok(ExitCode::from(CHECK_FAILED)),
            }
        }
        Command::Cluster { action } => cluster_cmd::run(action),
        Command::Run(args) if args.dry_run => run(
            Command::Plan {
                experiment: args.experiment_file(),
                node: None,
                json: false,
                graph: None,
            },
            quiet,
        ),
        Command::Run(args) => run_cmd::run(args, quiet),
        Command::Teardown { run_dir } => run_cmd::teardown(run_dir),
        Command::Medium { action } => medium_cmd::run(action),
        Command::Schema { format } => {
            use orchestrate::spec::{SpecFormat, json_schema};
            let schema = match format {
                SchemaFormat::Topology => json_schema(SpecFormat::Topology),
                SchemaFormat::Experiment => json_schema(SpecFormat::Experiment),
                SchemaFormat::Inventory => orchestrate::remote::inventory::json_schema(),
            };
            println!("{}", serde_json::to_string_pretty(&schema)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "orchestrate",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
