//! `orchestrate cluster`: the virtual cluster's commands — `image`, `up`, `status`, `verify`,
//! `ssh` and `down` — each a thin layer over `orchestrate::vcluster` that prints what it did.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use orchestrate::vcluster as vc;
use orchestrate::{plan, topology};

use crate::spec_errors::report_spec_errors;
use crate::validate_cmd::{Kind, kind_of};

/// `orchestrate cluster ...`: the virtual cluster's commands.
#[derive(Subcommand)]
pub enum ClusterCommand {
    /// Build the node image (once per change of its inputs): Debian bookworm with sshd,
    /// iproute2, tc and the worker. Uses debian:bookworm-slim where a registry is reachable,
    /// else makes the base offline with debootstrap.
    Image {
        #[command(flatten)]
        image: ImageArgs,
    },
    /// Bring a topology up as a virtual cluster on this machine: docker containers (the
    /// default) or, with `--kind netns`, network namespaces with an sshd each. Writes the
    /// cluster's directory (keys, known_hosts, inventory.toml, ssh_config) under --state-dir.
    Up(UpArgs),
    /// Show a cluster's containers (or namespaces), addresses and emulation devices.
    Status(StatusArgs),
    /// Measure every segment over SSH and check it against its rate and medium.
    Verify(VerifyArgs),
    /// A shell on a node of a running cluster, or one command there (`cluster ssh n01 --
    /// ip -br addr`): ssh through the cluster's ssh_config, its key and the node's pinned host
    /// key. The command's exit status is this one's.
    Ssh(SshArgs),
    /// Remove everything `up` made: containers, networks, ifb devices, the emulator, files;
    /// for a netns cluster its sshds and whatever runs in its namespaces, the namespaces, the
    /// management bridge and veths.
    /// Idempotent: after a `down` that failed (it names what it could not remove and the
    /// command that frees it, and keeps the cluster's state), the next one removes the rest.
    Down {
        /// The cluster (its topology's name unless `up --name` gave another); needed only
        /// when more than one is up.
        #[arg(long, conflicts_with = "all")]
        name: Option<String>,
        /// Every cluster this tool has anything of on the host: containers and networks
        /// with its label, directories under --state-dir and /run/orchestrate, and ifb
        /// devices, wire ends, network namespaces and management links named like a
        /// cluster's. For when the state directory is lost.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        state: StateArgs,
    },
}

#[derive(Args)]
pub struct UpArgs {
    /// A topology file, or an experiment file (then --topology picks one of its topologies
    /// if it has several).
    file: PathBuf,
    /// Cluster name (default: the topology's name).
    #[arg(long)]
    name: Option<String>,
    /// Which of an experiment's topologies.
    #[arg(long)]
    topology: Option<String>,
    #[command(flatten)]
    image: ImageArgs,
    #[command(flatten)]
    state: StateArgs,
    /// Leave a half-made cluster in place if `up` fails (for debugging).
    #[arg(long)]
    keep_on_failure: bool,
    /// What the nodes are. `docker`: containers of the node image (built on first use).
    /// `netns`: network namespaces of this machine, as Mininet makes them: each node runs this
    /// machine's /usr/sbin/sshd with its own hostname and private /run, /root, /tmp and /var/tmp, and
    /// is reached at its address on a management bridge the cluster makes (no NAT, no change
    /// to forwarding). No image and no docker engine are needed, and a thousand nodes come up
    /// in about a minute on two cores; needs root, openssh-server installed (its service need not
    /// run), iproute2 and util-linux. Every segment must be carried by the medium emulator
    /// (netns refuses `emulation = "rate"`). `vm`: a netns cluster whose every node runs a
    /// QEMU guest booting Debian's kernel (fetched with apt on first use into
    /// /var/cache/orchestrate/vm), its NICs spliced to the node's interfaces: a kernel of the
    /// node's own, with its bonding driver; needs qemu-system-x86 and busybox-static; under
    /// TCG each guest takes about 12 s of a core to boot, 256 MiB of guest memory and 370 to
    /// 770 MiB of this machine's. An experiment chooses with `[cluster] kind`.
    #[arg(long, value_enum, default_value_t = vc::Kind::Docker)]
    kind: vc::Kind,
}

#[derive(Args)]
pub struct StatusArgs {
    /// The cluster (its topology's name unless `up --name` gave another); needed only when
    /// more than one is up.
    #[arg(long)]
    name: Option<String>,
    #[command(flatten)]
    state: StateArgs,
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct VerifyArgs {
    /// The cluster (its topology's name unless `up --name` gave another); needed only when
    /// more than one is up.
    #[arg(long)]
    name: Option<String>,
    #[command(flatten)]
    state: StateArgs,
    /// Only these segments.
    #[arg(long = "segment", value_name = "SEGMENT")]
    segments: Vec<String>,
    /// Seconds per measurement (plus one second of warm-up).
    #[arg(long, default_value_t = 5)]
    seconds: u32,
    /// Segments measured at once, at most; segments measured together never share a
    /// measured node. 1 measures one segment after another.
    #[arg(long, default_value_t = vc::DEFAULT_VERIFY_PARALLEL, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..))]
    parallel: u16,
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct SshArgs {
    /// The cluster (its topology's name unless `up --name` gave another); needed only when
    /// more than one is up.
    #[arg(long)]
    name: Option<String>,
    #[command(flatten)]
    state: StateArgs,
    /// The node, as the topology names it (n01, ...).
    node: String,
    /// A command to run instead of a shell; put `--` before it when it has options of its own.
    /// As with ssh, its words are joined into one command line for the node's shell, so
    /// `-- 'ip -br addr | grep eth'` runs the pipe there.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    command: Vec<String>,
}

#[derive(Args)]
pub struct ImageArgs {
    /// Where the image's base comes from.
    #[arg(long, value_enum, default_value_t = vc::BaseSource::Auto)]
    base: vc::BaseSource,
    /// The worker binary to put in the image, or for `--kind netns` to put on every node's
    /// PATH (default: beside this program, else built).
    #[arg(long, value_name = "PATH")]
    worker: Option<PathBuf>,
}

#[derive(Args)]
pub struct StateArgs {
    /// Root of the clusters' directories: <DIR>/clusters/<name>/.
    #[arg(long, value_name = "DIR", default_value = vc::DEFAULT_STATE_DIR)]
    state_dir: PathBuf,
}

impl ImageArgs {
    fn options(&self) -> vc::ImageOptions {
        vc::ImageOptions {
            base: self.base,
            worker: self.worker.clone(),
        }
    }
}

pub fn run(action: ClusterCommand) -> anyhow::Result<ExitCode> {
    match action {
        ClusterCommand::Image { image } => build_image(&image),
        ClusterCommand::Up(args) => up(args),
        ClusterCommand::Status(args) => status(&args),
        ClusterCommand::Verify(args) => verify(args),
        ClusterCommand::Ssh(args) => ssh(args),
        ClusterCommand::Down {
            all: true, state, ..
        } => down_all(&state),
        ClusterCommand::Down { name, state, .. } => down(name, &state),
    }
}

/// The cluster `--name` names, or else the only one that is up.
fn name_or_only(name: Option<String>) -> anyhow::Result<vc::ClusterName> {
    match name {
        Some(n) => Ok(vc::ClusterName::parse(&n)?),
        None => match vc::list_clusters()?.as_slice() {
            [one] => Ok(vc::ClusterName::parse(one)?),
            [] => anyhow::bail!("no virtual cluster is up; name one with --name"),
            many => anyhow::bail!(
                "several clusters are up ({}); choose one with --name",
                many.join(", ")
            ),
        },
    }
}

fn build_image(image: &ImageArgs) -> anyhow::Result<ExitCode> {
    let img = vc::ensure_image(&vc::Docker::connect()?, &image.options())?;
    println!(
        "{} {} (base {}, worker {}) in {:.1} s",
        img.tag,
        if img.built { "built" } else { "up to date" },
        img.base,
        img.worker.display(),
        img.elapsed.as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

fn up(args: UpArgs) -> anyhow::Result<ExitCode> {
    let topologies = match kind_of(&args.file) {
        Kind::Experiment => plan::load(&args.file).map(|e| e.topologies),
        Kind::Topology => topology::load(&args.file).map(|t| vec![t]),
        Kind::Inventory => anyhow::bail!(
            "{} is an inventory: `cluster up` takes a topology or an experiment",
            args.file.display()
        ),
    };
    let Some(topologies) = report_spec_errors(topologies) else {
        return Ok(ExitCode::FAILURE);
    };
    let chosen = choose_topology(&args, &topologies)?;
    let wiring = vc::Wiring::from_topology(chosen)?;
    let name = match args.name {
        Some(n) => vc::ClusterName::parse(&n)?,
        None => vc::ClusterName::from_label(chosen.name.as_str())?,
    };
    let report = vc::up(
        &wiring,
        &vc::UpOptions {
            name: name.clone(),
            state_dir: args.state.state_dir,
            image: args.image.options(),
            source: args.file.display().to_string(),
            keep_on_failure: args.keep_on_failure,
            medium_seed: vc::DEFAULT_MEDIUM_SEED,
            kind: args.kind,
        },
    )?;
    print_up_report(&name, &report);
    Ok(ExitCode::SUCCESS)
}

/// The topology `--topology` names, or the file's only one.
fn choose_topology<'a>(
    args: &UpArgs,
    topologies: &'a [topology::Topology],
) -> anyhow::Result<&'a topology::Topology> {
    let file = &args.file;
    Ok(match (args.topology.as_deref(), topologies) {
        (None, [one]) => one,
        (None, _) => anyhow::bail!(
            "{} has {} topologies ({}); choose one with --topology",
            file.display(),
            topologies.len(),
            topologies
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (Some(want), all) => all
            .iter()
            .find(|t| t.name.as_str() == want)
            .ok_or_else(|| anyhow::anyhow!("{} has no topology named {want:?}", file.display()))?,
    })
}

fn print_up_report(name: &vc::ClusterName, report: &vc::UpReport) {
    let steps: Vec<String> = report
        .steps
        .iter()
        .map(|(s, d)| format!("{s} {:.1}s", d.as_secs_f64()))
        .collect();
    println!(
        "cluster {name} is up: {} nodes, {} switches, {} ifb devices, {} in {:.1} s ({})",
        report.nodes,
        report.switches,
        report.ifbs,
        match report.medium_pid {
            Some(pid) => format!("medium emulator pid {pid}"),
            None => "no medium emulator".into(),
        },
        report.elapsed.as_secs_f64(),
        steps.join(", ")
    );
    println!("inventory: {}", report.dir.inventory().display());
    println!(
        "ssh:       ssh -F {} <node>",
        report.dir.ssh_config().display()
    );
}

fn status(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let st = vc::status(&name_or_only(args.name.clone())?, &args.state.state_dir)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&st)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("cluster {} ({})", st.cluster, st.directory.display());
    if let (Some(t), Some(s), Some(i)) = (&st.topology, &st.source, &st.image) {
        println!("topology {t} from {s}, image {i}");
    }
    match st.kind {
        vc::Kind::Docker => println!(
            "{} containers, {} networks, {} ifb devices",
            st.members.len(),
            st.networks,
            st.ifbs.len()
        ),
        vc::Kind::Netns => println!(
            "{} network namespaces (netns cluster), {} ifb devices",
            st.members.len(),
            st.ifbs.len()
        ),
        vc::Kind::Vm => println!(
            "{} network namespaces, a QEMU guest in each node's (vm cluster), {} ifb devices",
            st.members.len(),
            st.ifbs.len()
        ),
    }
    match &st.medium {
        Some(m) if m.answering => println!(
            "medium emulator: pid {}, {} segment(s), {}, p99 lateness up to {:.1} µs",
            m.pid,
            m.segments,
            if m.realtime_priority {
                "SCHED_FIFO"
            } else {
                "SCHED_OTHER (expect lateness)"
            },
            m.worst_p99_lateness_us
        ),
        Some(m) => println!(
            "medium emulator: pid {} does NOT answer: frames on emulated segments are not \
             delivered; take the cluster down and up again",
            m.pid
        ),
        None => {}
    }
    for m in &st.members {
        println!(
            "  {:<7} {:<12} {:<10} {:<16} {}",
            m.role,
            m.name,
            m.state,
            m.address.as_deref().unwrap_or("-"),
            m.container
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let checks = vc::verify(
        &name_or_only(args.name)?,
        &args.state.state_dir,
        &vc::VerifyOptions {
            seconds: args.seconds,
            segments: args.segments,
            parallel: usize::from(args.parallel),
        },
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        print!("{}", vc::verify_table(&checks));
    }
    let failed = checks.iter().filter(|c| c.pass == Some(false)).count();
    if failed > 0 {
        eprintln!("{failed} check(s) failed");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs ssh in this process's place, so that a shell gets the terminal, signals go to ssh, and
/// the exit status is the remote command's.
fn ssh(args: SshArgs) -> anyhow::Result<ExitCode> {
    use std::os::unix::process::CommandExt;
    let name = name_or_only(args.name)?;
    let mut ssh = vc::ssh_to_node(&name, &args.state.state_dir, &args.node, &args.command)?;
    let err = ssh.exec();
    anyhow::bail!("could not run ssh (openssh-client): {err}")
}

fn down(name: Option<String>, state: &StateArgs) -> anyhow::Result<ExitCode> {
    let name = name_or_only(name)?;
    let r = vc::down(&name, &state.state_dir)?;
    println!("{}", removed(&name, &r));
    Ok(ExitCode::SUCCESS)
}

fn removed(name: &vc::ClusterName, r: &vc::DownReport) -> String {
    format!(
        "cluster {name} removed: {} containers, {} networks, {} ifb devices, {} medium \
         emulator(s), {} files{}",
        r.containers,
        r.networks,
        r.ifbs,
        r.media,
        r.files,
        // Wires go with their containers; only an `up` that died leaves any.
        if r.wires > 0 && r.namespaces == 0 {
            format!(", {} wires left by an unfinished up", r.wires)
        } else {
            String::new()
        }
    ) + &if r.namespaces > 0 || r.processes > 0 {
        format!(
            "; {} network namespaces, {} host links, {} processes",
            r.namespaces, r.wires, r.processes
        )
    } else {
        String::new()
    }
}

/// Every cluster found, each taken down on its own; fails if any one could not be.
fn down_all(state: &StateArgs) -> anyhow::Result<ExitCode> {
    let (clusters, orphan_ifbs) = vc::down_all(&state.state_dir)?;
    if clusters.is_empty() && orphan_ifbs == 0 {
        println!("no cluster of this tool found on this host");
        return Ok(ExitCode::SUCCESS);
    }
    let mut failed = 0;
    for c in &clusters {
        match &c.result {
            Ok(r) => println!("{}", removed(&c.cluster, r)),
            Err(e) => {
                failed += 1;
                eprintln!("cluster {}: {e}", c.cluster);
            }
        }
    }
    if orphan_ifbs > 0 {
        println!("{orphan_ifbs} device(s) of clusters that left no other trace removed");
    }
    if failed > 0 {
        eprintln!(
            "{failed} of {} cluster(s) could not be taken down entirely; what is left is named \
             above, with the command that frees it",
            clusters.len()
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
