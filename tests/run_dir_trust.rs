//! A run directory read back by `orchestrate teardown` and `run --resume` is data: one another
//! user could write is refused, and a teardown script or ledger changed after the run wrote it
//! is refused before any node is reached. Every test runs under umask 000, so the run
//! directories the tool writes here must get safe modes by themselves.
//!
//! The ledgers point at nodes on 127.0.0.1 port 9, where nothing answers: a run directory that
//! passes every check fails on connecting, which is how the tests tell "accepted" from
//! "refused" without a node to run anything on.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use orchestrate::netconf;
use orchestrate::remote::InventoryFile;
use orchestrate::results::run_dir::Ledger;
use orchestrate::runner::{OpenRun, RunStart, teardown_from_ledger};
use orchestrate::spec::NodeName;

mod common;

const NODE_LEDGER: &str = orchestrate::netconf::DEFAULT_LEDGER;

/// A run of a three-node experiment on an inventory, as `orchestrate run` writes it before
/// applying anything, with a ledger naming every node.
struct Fixture {
    _tmp: tempfile::TempDir,
    inventory: PathBuf,
    run: PathBuf,
    topology: String,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::of("tests/specs/good/two-buses-routed.toml", |_| {})
    }

    /// A run of `topology` (relative to the repository), its scripts changed by `rewrite`
    /// before the ledger is written, as preparing the nodes does.
    fn of(topology: &str, rewrite: impl FnOnce(&mut OpenRun)) -> Fixture {
        // SAFETY: umask has no preconditions; every test of this binary sets the same value.
        unsafe { libc::umask(0) };
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::copy(common::root().join(topology), d.join("topology.toml")).unwrap();
        let experiment = d.join("experiment.toml");
        std::fs::write(
            &experiment,
            r#"name = "trust"
topologies = ["topology.toml"]

[cluster]
kind = "inventory"
inventory = "hosts.toml"

[[workload]]
pattern = "token"
protocol = "tcp"
sizes = [4]
pairs = [1]
placement = ["local-wire"]
exchanges = 10
repetitions = 1
"#,
        )
        .unwrap();
        // The inventory first: a run checks it before it creates anything.
        let inventory = d.join("hosts.toml");
        let mut hosts = String::from("[defaults]\nport = 9\n");
        let topology = orchestrate::topology::load(&d.join("topology.toml")).unwrap();
        for n in topology.nodes.iter().map(|n| &n.name) {
            hosts += &format!("\n[[host]]\nnodes = \"{n}\"\naddress = \"127.0.0.1\"\n");
        }
        std::fs::write(&inventory, hosts).unwrap();
        let mut open = OpenRun::open(RunStart::New {
            experiment: &experiment,
            out_root: &d.join("reports"),
        })
        .unwrap();
        rewrite(&mut open);
        let config = &open.plan.configurations[0];
        let nodes: Vec<NodeName> = config
            .topology
            .nodes
            .iter()
            .map(|n| n.name.clone())
            .collect();
        open.writer
            .write_ledger(&Ledger {
                configuration: config.id,
                topology: config.topology.name.to_string(),
                inventory: inventory.clone(),
                node_ledger: NODE_LEDGER.into(),
                nodes,
                owner: None,
                copies: Default::default(),
            })
            .unwrap();
        let run = open.writer.root().to_owned();
        Fixture {
            _tmp: tmp,
            inventory,
            run,
            topology: config.topology.name.to_string(),
        }
    }

    fn teardown_script(&self, node: &str) -> PathBuf {
        self.run
            .join(format!("scripts/0-{}", self.topology))
            .join(format!("{node}.teardown.sh"))
    }

    /// `orchestrate teardown` on the run; its error text.
    fn teardown(&self) -> String {
        let source = InventoryFile {
            path: self.inventory.clone(),
        };
        let rt = tokio::runtime::Runtime::new().unwrap();
        let result = rt.block_on(teardown_from_ledger(&self.run, &source));
        format!("{:#}", result.expect_err("nothing answers on port 9"))
    }

    /// Replaces the ledger with `json`, as an editor keeping the file's mode would.
    fn write_ledger(&self, json: &serde_json::Value) {
        overwrite(&self.run.join("ledger.json"), json.to_string().as_bytes());
    }

    fn ledger(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.run.join("ledger.json")).unwrap())
            .unwrap()
    }
}

/// Writes `bytes` to an existing file, keeping its mode.
fn overwrite(path: &Path, bytes: &[u8]) {
    let mut f = OpenOptions::new()
        .write(true)
        .truncate(true)
        .mode(0o644)
        .open(path)
        .unwrap();
    f.write_all(bytes).unwrap();
}

/// What the checks say when they let a run directory through.
const ACCEPTED: &str = "cannot reach every node of the ledger";

fn assert_refused(err: &str, because: &str) {
    assert!(!err.contains(ACCEPTED), "accepted: {err}");
    assert!(err.contains(because), "{err}");
}

/// Every file and directory below `dir`, with `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut all = vec![dir.to_owned()];
    if dir.is_dir() {
        for e in std::fs::read_dir(dir).unwrap() {
            all.extend(walk(&e.unwrap().path()));
        }
    }
    all
}

#[test]
fn a_run_written_under_umask_000_is_writable_by_its_owner_alone_and_accepted() {
    let f = Fixture::new();
    for p in walk(&f.run) {
        let mode = std::fs::symlink_metadata(&p).unwrap().mode() & 0o777;
        assert_eq!(mode & 0o022, 0, "{} has mode {mode:o}", p.display());
    }
    let err = f.teardown();
    assert!(err.contains(ACCEPTED), "{err}");
    OpenRun::open(RunStart::Resume(&f.run)).unwrap();
}

#[test]
fn teardowns_rendered_for_either_bond_driver_are_accepted() {
    let f = Fixture::of("topologies/bonded-dual-net.toml", |open| {
        let t = &open.plan.configurations[0].topology;
        let userspace: Vec<_> = t
            .nodes
            .iter()
            .map(|n| netconf::render(t, &netconf::settle_bond_drivers(n, false)))
            .collect();
        let planned = &open.plan.configurations[0].scripts;
        assert_ne!(userspace[0].teardown, planned[0].teardown);
        open.writer
            .write_scripts(0, t.name.as_str(), &userspace)
            .unwrap();
    });
    let err = f.teardown();
    assert!(err.contains(ACCEPTED), "{err}");
}

#[test]
fn a_changed_teardown_script_is_refused_before_any_node_is_reached() {
    let f = Fixture::new();
    let script = f.teardown_script("n2");
    let mut text = std::fs::read(&script).unwrap();
    text.extend_from_slice(b"touch /tmp/pwned\n");
    overwrite(&script, &text);
    let err = f.teardown();
    assert_refused(
        &err,
        &format!(
            "{}: not the teardown this orchestrate renders for n2 in configuration 0",
            script.display()
        ),
    );
}

#[test]
fn a_command_in_the_ledgers_node_ledger_is_refused() {
    let f = Fixture::new();
    let mut l = f.ledger();
    l["node_ledger"] = format!("{NODE_LEDGER}; touch /tmp/pwned").into();
    f.write_ledger(&l);
    assert_refused(&f.teardown(), "refusing a changed ledger");
}

#[test]
fn a_ledger_naming_another_topology_or_configuration_is_refused() {
    let f = Fixture::new();
    let original = f.ledger();
    let mut l = original.clone();
    l["topology"] = "../../../tmp; touch /tmp/pwned".into();
    f.write_ledger(&l);
    assert_refused(&f.teardown(), "names topology");

    let mut l = original.clone();
    l["configuration"] = 7.into();
    f.write_ledger(&l);
    assert_refused(&f.teardown(), "names configuration 7");

    let mut l = original;
    l["nodes"] = serde_json::json!(["n1", "n1; touch /tmp/pwned"]);
    f.write_ledger(&l);
    assert_refused(&f.teardown(), r#"invalid node name "n1; touch /tmp/pwned""#);
}

#[test]
fn a_node_the_configuration_lacks_is_refused() {
    let f = Fixture::new();
    let mut l = f.ledger();
    l["nodes"] = serde_json::json!(["n1", "n9"]);
    f.write_ledger(&l);
    assert_refused(&f.teardown(), "names node n9, which configuration 0");
}

#[test]
fn a_run_directory_others_can_write_is_refused_by_teardown_and_resume() {
    let f = Fixture::new();
    std::fs::set_permissions(&f.run, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_refused(&f.teardown(), "is writable by group or others (mode 777)");
    let resumed = OpenRun::open(RunStart::Resume(&f.run)).err().unwrap();
    assert!(
        resumed.to_string().contains("fix: chmod -R go-w"),
        "{resumed}"
    );

    std::fs::set_permissions(&f.run, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = f.teardown_script("n1");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_refused(
        &f.teardown(),
        &format!("{}: is writable by group or others", script.display()),
    );
}
