//! A real sshd on 127.0.0.1 for tests: generated host and client keys, a known_hosts file that
//! pins the host key, and an inventory that maps logical nodes onto it. Killed on drop.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Sshd {
    pub dir: tempfile::TempDir,
    pub port: u16,
    child: Child,
}

fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen runs")
        .success();
    assert!(ok, "ssh-keygen failed");
}

impl Sshd {
    pub fn start() -> Sshd {
        Sshd::start_on(&["127.0.0.1"])
    }

    /// An sshd listening on each of `addresses` (all on loopback), on one port, its host key
    /// pinned for each.
    pub fn start_on(addresses: &[&str]) -> Sshd {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("client_key"));
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let listen: String = addresses
            .iter()
            .map(|a| format!("ListenAddress {a}\n"))
            .collect();
        let config = format!(
            "Port {port}\n{listen}HostKey {hk}\nAuthorizedKeysFile {ak}\nPidFile none\n\
             StrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PermitRootLogin prohibit-password\nMaxSessions 32\nMaxStartups 64\nLogLevel ERROR\n",
            hk = d.join("host_key").display(),
            ak = d.join("authorized_keys").display(),
        );
        std::fs::write(d.join("sshd_config"), config).unwrap();
        std::fs::create_dir_all("/run/sshd").ok();
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sshd starts");
        let deadline = Instant::now() + Duration::from_secs(10);
        for a in addresses {
            while std::net::TcpStream::connect((*a, port)).is_err() {
                assert!(
                    Instant::now() < deadline,
                    "sshd did not listen on {a}:{port}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let host_pub = std::fs::read_to_string(d.join("host_key.pub")).unwrap();
        let key = host_pub
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        let pinned: Vec<String> = addresses.iter().map(|a| format!("[{a}]:{port}")).collect();
        std::fs::write(
            d.join("known_hosts"),
            format!("{} {key}\n", pinned.join(",")),
        )
        .unwrap();
        Sshd { dir, port, child }
    }

    /// An inventory mapping `nodes` onto this sshd.
    pub fn inventory(&self, nodes: &[&str]) -> PathBuf {
        let d = self.dir.path();
        let mut s = format!(
            "[defaults]\nuser = \"{}\"\nport = {}\nidentity = \"{}\"\nknown_hosts = \"{}\"\n",
            std::env::var("USER").unwrap_or_else(|_| "root".into()),
            self.port,
            d.join("client_key").display(),
            d.join("known_hosts").display()
        );
        for n in nodes {
            s += &format!("\n[[host]]\nnodes = \"{n}\"\naddress = \"127.0.0.1\"\n");
        }
        let path = d.join("hosts.toml");
        std::fs::write(&path, s).unwrap();
        path
    }

    /// Replaces the pinned host key with another one, as if the node had been reinstalled or
    /// someone were in the middle.
    pub fn forget_real_host_key(&self) {
        let d = self.dir.path();
        keygen(&d.join("other_key"));
        let other = std::fs::read_to_string(d.join("other_key.pub")).unwrap();
        let key = other
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        std::fs::write(
            d.join("known_hosts"),
            format!("[127.0.0.1]:{} {key}\n", self.port),
        )
        .unwrap();
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
