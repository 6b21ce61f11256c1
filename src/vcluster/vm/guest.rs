//! One VM node: a QEMU guest booting Debian's kernel inside the node's network namespace,
//! its NICs spliced to the namespace's interfaces. Each of the namespace's interfaces
//! (`mgmt0` and the node's wires) gets a tap beside it, and a pair of `tc` ingress redirects
//! (mirred) passes every frame from one to the other: the guest's NIC, with `mgmt0`'s MAC
//! for the management network, becomes the far end of the same veth the netns kind gives the
//! node, so the wires, the medium emulator, the management bridge and the teardown stay
//! the netns kind's. The namespace's own stack hears nothing after the splice.
//!
//! The guest sees this host's root read-only over virtio-9p (as a netns node sees the host's
//! files, but unable to change them) and makes its own /run, /root, /tmp and /var/tmp; its
//! init script is rendered here, per node.

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use super::initramfs::{HOST_ROOT_TAG, INIT_PARAMETER};
use super::kernel::GuestKernel;

/// The guest's memory: Debian's kernel, sshd and the worker fit with room to spare.
pub const MEMORY_MIB: u32 = 256;

/// What makes a VM node: the namespace it runs in and what its guest must look like.
#[derive(Debug, Clone)]
pub struct Guest {
    pub node: String,
    pub namespace: String,
    /// `ip` lines that give `mgmt0` its address, as inside a netns node.
    pub mgmt_lines: Vec<String>,
    pub mgmt_mac: String,
    /// The node's experiment interfaces, in the topology's order.
    pub ports: Vec<String>,
    pub sysctls: Vec<(&'static str, &'static str)>,
    /// This node's files on the host: its init script, console and QEMU log.
    pub dir: PathBuf,
}

/// Where the guest finds what it copies in at boot: this host's paths, which it sees as they
/// are (absolute).
#[derive(Debug, Clone)]
pub struct SharedFiles {
    pub sshd_config: PathBuf,
    pub host_key: PathBuf,
    pub authorized_keys: PathBuf,
    /// The directory holding `orchestrate-worker`, laid over /usr/local/bin.
    pub worker_dir: PathBuf,
    /// The worker's file name where the runner installs it (`/var/tmp/orchestrate-0/…`).
    pub installed_worker: String,
}

/// The tap beside the namespace's interface `i` (0 is `mgmt0`).
pub fn tap(i: usize) -> String {
    format!("vt{i}")
}

impl Guest {
    /// The namespace's interfaces the guest's NICs take over, in NIC order.
    pub fn spliced(&self) -> Vec<String> {
        std::iter::once(crate::vcluster::names::MGMT_IFNAME.to_owned())
            .chain(self.ports.iter().cloned())
            .collect()
    }

    /// MAC of the guest's NIC `i`: `mgmt0`'s own for the management network (the host holds
    /// it as the node's permanent neighbour), a locally administered one per port otherwise.
    pub fn mac(&self, index: usize, i: usize) -> String {
        if i == 0 {
            return self.mgmt_mac.clone();
        }
        let b = (index as u32).to_be_bytes();
        format!("02:76:{:02x}:{:02x}:{:02x}:{:02x}", b[2], b[3], b[1], i)
    }

    /// `ip -n <ns>` lines: a tap beside each spliced interface, up.
    pub fn tap_lines(&self) -> Vec<String> {
        (0..self.spliced().len())
            .flat_map(|i| {
                [
                    format!("tuntap add dev {} mode tap", tap(i)),
                    format!("link set dev {} up", tap(i)),
                ]
            })
            .collect()
    }

    /// `tc -n <ns> -batch` lines: every frame arriving on an interface leaves by its tap, and
    /// every frame from the tap leaves by the interface.
    pub fn splice_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (i, dev) in self.spliced().iter().enumerate() {
            for (from, to) in [(dev.clone(), tap(i)), (tap(i), dev.clone())] {
                lines.push(format!("qdisc add dev {from} ingress"));
                lines.push(format!(
                    "filter add dev {from} parent ffff: protocol all prio 1 u32 match u32 0 0 \
                     action mirred egress redirect dev {to}"
                ));
            }
        }
        lines
    }

    /// QEMU's arguments: no devices but a serial console (to a file), the host's root over
    /// 9p and one virtio NIC per tap, with no offloads (no vnet header), so that every frame
    /// the guest sends is a frame the medium emulator can clock.
    pub fn qemu_args(
        &self,
        index: usize,
        kernel: &GuestKernel,
        accel: Accel,
        init: &Path,
    ) -> Vec<String> {
        let mut args: Vec<String> = [
            "-name",
            &self.node,
            "-accel",
            accel.as_str(),
            "-cpu",
            accel.cpu(),
            "-smp",
            "1",
            "-m",
            &MEMORY_MIB.to_string(),
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-monitor",
            "none",
            "-no-reboot",
            "-serial",
            &format!("file:{}", self.dir.join("console.log").display()),
            "-kernel",
            &kernel.vmlinuz().display().to_string(),
            "-initrd",
            &kernel.initramfs().display().to_string(),
            "-append",
            &format!(
                "console=ttyS0 panic=-1 quiet {INIT_PARAMETER}={}",
                init.display()
            ),
            "-fsdev",
            // Files of the host's other file systems (/run, /boot) keep inode numbers of
            // their own in the guest.
            "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap",
            "-device",
            &format!("virtio-9p-pci,fsdev=hostroot,mount_tag={HOST_ROOT_TAG}"),
        ]
        .map(str::to_owned)
        .into();
        for i in 0..self.spliced().len() {
            args.push("-netdev".into());
            args.push(format!(
                "tap,id=n{i},ifname={},script=no,downscript=no,vnet_hdr=off",
                tap(i)
            ));
            args.push("-device".into());
            args.push(format!(
                "virtio-net-pci,netdev=n{i},mac={}",
                self.mac(index, i)
            ));
        }
        args
    }

    /// The guest's PID 1 once the initramfs hands over: mounts, the guest kernel's modules,
    /// the worker, sshd's files, hostname, sysctls, NICs named by MAC, `mgmt0` addressed; then
    /// sshd, and a loop that reaps whatever is orphaned to it. Its root is this host's under
    /// a layer in the guest's memory: whatever it writes stays in the guest.
    pub fn init_script(&self, index: usize, kernel: &GuestKernel, files: &SharedFiles) -> String {
        let q = |p: &Path| shell_quote(&p.display().to_string());
        let version = &kernel.version;
        let mut s = format!(
            "#!/bin/sh\n\
             # PID 1 of VM node {node}, written by `orchestrate cluster up --kind vm`: Debian's\n\
             # kernel, this host's programs (its root, read-only over 9p, under the guest's layer).\n\
             export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n\
             say() {{ echo \"node-init: $*\" >/dev/console; }}\n\
             mount -t proc proc /proc\n\
             mount -t sysfs sysfs /sys\n\
             mkdir -p /dev/pts && mount -t devpts devpts /dev/pts\n\
             # What the guest takes from the host's paths, first: /run, /tmp and /var/tmp\n\
             # become its own below, and the cluster's files may live under any of them.\n\
             mkdir -p /.node\n\
             cp {sshd_config} /.node/sshd_config\n\
             cp {host_key} /.node/ssh_host_ed25519_key\n\
             cp {authorized_keys} /.node/authorized_keys\n\
             cp {worker} /.node/orchestrate-worker\n\
             # The guest kernel's modules where its modprobe looks (bonding among them).\n\
             mkdir -p /lib/modules/{version}\n\
             mount --bind {modules} /lib/modules/{version}\n\
             # /dev/net/tun for the worker's userspace bond: no udev makes it on demand.\n\
             modprobe tun || say 'no TUN driver: the userspace bond cannot run here'\n\
             mount -t tmpfs -o mode=0755 tmpfs /run\n\
             mount -t tmpfs -o mode=0700 tmpfs /root\n\
             mount -t tmpfs -o mode=1777 tmpfs /tmp\n\
             mount -t tmpfs -o mode=1777 tmpfs /var/tmp\n\
             mkdir -p /run/sshd /run/node\n\
             cp /.node/sshd_config /.node/ssh_host_ed25519_key /.node/authorized_keys /run/node/\n\
             chmod 0600 /run/node/ssh_host_ed25519_key\n\
             # The worker on the PATH and where the runner installs it, as in a netns node.\n\
             mkdir -m 0700 /var/tmp/orchestrate-0\n\
             mv /.node/orchestrate-worker /var/tmp/orchestrate-0/{installed}\n\
             ln -sf /var/tmp/orchestrate-0/{installed} /usr/local/bin/orchestrate-worker\n\
             hostname {node}\n",
            node = self.node,
            modules = q(&kernel.modules()),
            installed = files.installed_worker,
            worker = q(&files.worker_dir.join("orchestrate-worker")),
            sshd_config = q(&files.sshd_config),
            host_key = q(&files.host_key),
            authorized_keys = q(&files.authorized_keys),
        );
        for (key, value) in &self.sysctls {
            let _ = writeln!(s, "sysctl -qw {key}={value}");
        }
        s += "ip link set dev lo up\n\
              # NICs by MAC: first out of the way, then to the topology's names.\n\
              nic() { for d in /sys/class/net/*; do [ \"$(cat \"$d/address\")\" = \"$1\" ] && echo \"${d##*/}\"; done; }\n";
        let names = self.spliced();
        for (i, _) in names.iter().enumerate() {
            let _ = writeln!(
                s,
                "ip link set dev \"$(nic {})\" name vmnic{i}",
                self.mac(index, i)
            );
        }
        for (i, name) in names.iter().enumerate() {
            let _ = writeln!(s, "ip link set dev vmnic{i} name {name}");
        }
        for port in &self.ports {
            let _ = writeln!(s, "ip link set dev {port} up");
        }
        s += "ip -batch - <<'EOF'\n";
        for line in &self.mgmt_lines {
            s += line;
            s.push('\n');
        }
        s += "EOF\n\
              /usr/sbin/sshd -f /run/node/sshd_config -E /run/node/sshd.log || say 'sshd did not start'\n\
              say \"ready after $(cut -d' ' -f1 /proc/uptime) s\"\n\
              # PID 1 reaps every orphan: `wait` collects any child while one job remains.\n\
              sleep infinity &\n\
              while :; do wait; done\n";
        s
    }
}

/// How QEMU runs the guest's CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    /// The host's CPU, through /dev/kvm.
    Kvm,
    /// QEMU's own translation: slower, and works everywhere.
    Tcg,
}

impl Accel {
    pub fn as_str(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
    fn cpu(self) -> &'static str {
        match self {
            Accel::Kvm => "host",
            Accel::Tcg => "max",
        }
    }
}

/// `s` as one word for sh.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:=@,".contains(c))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The guest's management address, for waiting on its sshd.
pub fn address_of(lines: &[String]) -> Option<Ipv4Addr> {
    lines.iter().find_map(|l| {
        let rest = l.strip_prefix("addr add ")?;
        rest.split(['/', ' ']).next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guest() -> Guest {
        Guest {
            node: "n1".into(),
            namespace: "ocabcn0".into(),
            mgmt_lines: vec![
                "addr add 10.255.248.2/22 dev mgmt0".into(),
                "link set dev mgmt0 up".into(),
            ],
            mgmt_mac: "02:6f:00:00:00:00".into(),
            ports: vec!["eth1".into(), "eth2".into()],
            sysctls: vec![("net.ipv4.ip_forward", "1")],
            dir: PathBuf::from("/s/clusters/c/vm/n1"),
        }
    }

    fn kernel() -> GuestKernel {
        GuestKernel {
            version: "6.1.0-57-amd64".into(),
            dir: PathBuf::from("/var/cache/orchestrate/vm/6.1.0-57-amd64"),
        }
    }

    fn files() -> SharedFiles {
        SharedFiles {
            sshd_config: "/s/clusters/c/sshd_config".into(),
            host_key: "/s/clusters/c/nodes/n1/ssh_host_ed25519_key".into(),
            authorized_keys: "/s/clusters/c/authorized_keys".into(),
            worker_dir: "/run/orchestrate/c/bin".into(),
            installed_worker: "orchestrate-worker-0123456789abcdef".into(),
        }
    }

    #[test]
    fn every_spliced_interface_redirects_both_ways_through_its_own_tap() {
        let g = guest();
        assert_eq!(g.spliced(), ["mgmt0", "eth1", "eth2"]);
        let lines = g.splice_lines();
        for (i, dev) in ["mgmt0", "eth1", "eth2"].iter().enumerate() {
            let tap = tap(i);
            assert!(
                lines
                    .iter()
                    .any(|l| l.starts_with(&format!("filter add dev {dev} "))
                        && l.ends_with(&format!("redirect dev {tap}")))
            );
            assert!(
                lines
                    .iter()
                    .any(|l| l.starts_with(&format!("filter add dev {tap} "))
                        && l.ends_with(&format!("redirect dev {dev}")))
            );
        }
        assert_eq!(lines.len(), 3 * 4);
    }

    #[test]
    fn the_management_nic_keeps_mgmt0s_mac_and_ports_get_their_own() {
        let g = guest();
        assert_eq!(g.mac(7, 0), "02:6f:00:00:00:00");
        let macs: Vec<String> = (1..3).map(|i| g.mac(7, i)).collect();
        assert_eq!(macs, ["02:76:00:07:00:01", "02:76:00:07:00:02"]);
        assert_ne!(g.mac(7, 1), g.mac(8, 1));
    }

    #[test]
    fn qemu_gets_one_offload_free_nic_per_tap_and_the_host_root_read_only() {
        let args = guest().qemu_args(0, &kernel(), Accel::Tcg, Path::new("/s/init.sh"));
        let joined = args.join(" ");
        assert!(joined.contains("-accel tcg -cpu max"), "{joined}");
        assert!(
            joined.contains("path=/,security_model=none,readonly=on"),
            "{joined}"
        );
        assert_eq!(joined.matches("vnet_hdr=off").count(), 3, "{joined}");
        assert!(joined.contains("orchestrate.init=/s/init.sh"), "{joined}");
        assert!(joined.contains("mac=02:6f:00:00:00:00"), "{joined}");
    }

    #[test]
    fn init_names_nics_by_mac_through_temporary_names_and_starts_sshd() {
        let s = guest().init_script(0, &kernel(), &files());
        let first = s.find("name vmnic2").unwrap();
        let last = s.find("ip link set dev vmnic0 name mgmt0").unwrap();
        assert!(
            first < last,
            "every NIC is moved out of the way first:\n{s}"
        );
        assert!(s.contains("ip link set dev vmnic1 name eth1"), "{s}");
        assert!(s.contains("sysctl -qw net.ipv4.ip_forward=1"), "{s}");
        assert!(s.contains("addr add 10.255.248.2/22 dev mgmt0"), "{s}");
        assert!(
            s.contains("mount --bind /var/cache/orchestrate/vm/6.1.0-57-amd64/lib/modules/6.1.0-57-amd64 /lib/modules/6.1.0-57-amd64"),
            "{s}"
        );
        // The host's files are copied before /run, /tmp and /var/tmp are covered.
        for taken in [
            "cp /s/clusters/c/sshd_config",
            "cp /run/orchestrate/c/bin/orchestrate-worker",
        ] {
            assert!(
                s.find(taken).unwrap() < s.find("tmpfs /run").unwrap(),
                "{taken}:\n{s}"
            );
        }
        assert!(s.contains("/usr/sbin/sshd -f /run/node/sshd_config"), "{s}");
    }

    #[test]
    fn paths_with_spaces_are_one_word() {
        assert_eq!(shell_quote("/a b/c"), "'/a b/c'");
        assert_eq!(shell_quote("/a/b-c_d.e"), "/a/b-c_d.e");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn the_guest_is_waited_for_at_its_management_address() {
        assert_eq!(
            address_of(&guest().mgmt_lines),
            Some(Ipv4Addr::new(10, 255, 248, 2))
        );
    }
}
