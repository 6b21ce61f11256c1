//! Network namespaces for the worker's root-only tests: made per test, joined by veth pairs,
//! deleted on drop. Traffic stays between the test's own namespaces.

use std::process::Command;

/// Runs `cmd` with `sh -c`, failing the test with its stderr if it fails.
pub fn sh(cmd: &str) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Network namespaces made for one test, named `owm<pid><tag><name>`, each with its
/// loopback up; deleted on drop, so also when the test fails.
pub struct Namespaces(pub Vec<String>);

impl Namespaces {
    pub fn new(tag: &str, names: &[&str]) -> Namespaces {
        let mut made = Namespaces(Vec::new());
        for n in names {
            let ns = format!("owm{}{tag}{n}", std::process::id() % 10000);
            let _ = Command::new("ip").args(["netns", "del", &ns]).output();
            made.0.push(ns.clone());
            sh(&format!("ip netns add {ns} && ip -n {ns} link set lo up"));
        }
        made
    }

    /// Joins namespaces `a` and `b` (indexes) with a veth pair `<dev>` in each, addressed
    /// `<net>.1/24` in `a` and `<net>.2/24` in `b`.
    pub fn wire(&self, a: usize, b: usize, dev: &str, net: &str) {
        let (na, nb) = (&self.0[a], &self.0[b]);
        sh(&format!(
            "ip link add {dev} netns {na} type veth peer name {dev} netns {nb} && \
             ip -n {na} addr add {net}.1/24 dev {dev} && ip -n {nb} addr add {net}.2/24 dev {dev} && \
             ip -n {na} link set {dev} up && ip -n {nb} link set {dev} up"
        ));
    }

    /// Bytes `dev` in namespace `i` has sent.
    pub fn tx_bytes(&self, i: usize, dev: &str) -> u64 {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.0[i], "cat"])
            .arg(format!("/sys/class/net/{dev}/statistics/tx_bytes"))
            .output()
            .expect("ip netns exec");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("tx_bytes of {dev}: {out:?}"))
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}
