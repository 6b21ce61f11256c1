//! The guest's first root: a cpio archive (the kernel's "newc" format, uncompressed, which
//! every kernel reads) holding a static busybox, the modules the guest needs before it can
//! see its root (virtio PCI, network, 9p and overlayfs), and `/init`, which loads them,
//! mounts this host's root read-only over virtio-9p under an overlay whose upper layer is
//! the guest's memory (so the guest can write anywhere and the host never sees it), and
//! hands over to the node's own init script.

use std::path::Path;

use crate::vcluster::error::{Error, Result};

/// Where the guest's init finds the node's init script: a kernel parameter, so that one
/// initramfs serves every node of every cluster.
pub const INIT_PARAMETER: &str = "orchestrate.init";
/// The 9p mount tag of this host's root.
pub const HOST_ROOT_TAG: &str = "hostroot";

/// The modules, by name, whose files (with what they depend on, in load order) go into the
/// archive.
pub const EARLY_MODULES: [&str; 5] = ["virtio_pci", "virtio_net", "9pnet_virtio", "9p", "overlay"];

/// `/init`: PID 1 until the node's own script takes over (by `switch_root`, so that the
/// archive's memory is freed).
fn init_script() -> String {
    format!(
        r#"#!/bin/busybox sh
# The guest's first init, written by `orchestrate cluster up --kind vm`.
B=/bin/busybox
$B mount -t proc proc /proc
$B mount -t devtmpfs dev /dev
for m in $($B cat /modules.order); do
    $B insmod /lib/modules/$m || echo "init: loading $m failed" >/dev/console
done
next=
for w in $($B cat /proc/cmdline); do
    case "$w" in {INIT_PARAMETER}=*) next=${{w#{INIT_PARAMETER}=}} ;; esac
done
fail() {{ echo "init: $*" >/dev/console; $B poweroff -f; }}
$B mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 {HOST_ROOT_TAG} /host \
    || fail "cannot mount the host's root over 9p"
$B mount -t tmpfs -o mode=0755 guest /guest || fail "cannot make the guest's layer"
$B mkdir /guest/upper /guest/work
$B mount -t overlay -o lowerdir=/host,upperdir=/guest/upper,workdir=/guest/work root /newroot \
    || fail "cannot lay the guest's layer over the host's root"
$B mount --move /dev /newroot/dev
$B umount /proc
exec $B switch_root /newroot /bin/sh "$next"
"#
    )
}

/// One file or directory of the archive.
struct Entry {
    name: String,
    mode: u32,
    data: Vec<u8>,
}

/// The archive, from the busybox binary and the module files (each path as loaded, in order).
pub fn build(busybox: &Path, modules: &[std::path::PathBuf]) -> Result<Vec<u8>> {
    let read = |p: &Path, what: &str| std::fs::read(p).map_err(|e| Error::io(what, p, e));
    let busybox_bytes = read(busybox, "reading busybox")?;
    refuse_dynamic(busybox, &busybox_bytes)?;
    let dir = |name: &str| Entry {
        name: name.into(),
        mode: 0o040755,
        data: Vec::new(),
    };
    let mut entries = vec![
        dir("bin"),
        dir("dev"),
        dir("guest"),
        dir("host"),
        dir("lib"),
        dir("lib/modules"),
        dir("newroot"),
        dir("proc"),
        Entry {
            name: "bin/busybox".into(),
            mode: 0o100755,
            data: busybox_bytes,
        },
        Entry {
            name: "init".into(),
            mode: 0o100755,
            data: init_script().into_bytes(),
        },
    ];
    let mut order = String::new();
    for m in modules {
        let file = m
            .file_name()
            .and_then(|f| f.to_str())
            .ok_or_else(|| Error::Wiring(format!("module path {} has no name", m.display())))?;
        order += file;
        order.push('\n');
        entries.push(Entry {
            name: format!("lib/modules/{file}"),
            mode: 0o100644,
            data: read(m, "reading a kernel module")?,
        });
    }
    entries.push(Entry {
        name: "modules.order".into(),
        mode: 0o100644,
        data: order.into_bytes(),
    });
    Ok(newc(&entries))
}

/// A busybox linked against the C library cannot run before there is one: Debian's
/// `busybox-static` is what works. A dynamically linked ELF program names its interpreter in
/// a program header of type `PT_INTERP`.
fn refuse_dynamic(path: &Path, bytes: &[u8]) -> Result<()> {
    if has_interpreter(bytes) {
        return Err(Error::Host {
            problem: format!("{} is linked dynamically", path.display()),
            what_to_do: "install Debian's busybox-static, whose busybox runs in an initramfs"
                .into(),
        });
    }
    Ok(())
}

/// Whether a 64-bit little-endian ELF file has a `PT_INTERP` program header.
fn has_interpreter(elf: &[u8]) -> bool {
    const PT_INTERP: u32 = 3;
    let u16_at = |o: usize| {
        elf.get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
    };
    let u32_at = |o: usize| {
        elf.get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    let u64_at = |o: usize| {
        elf.get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()) as usize)
    };
    if !elf.starts_with(b"\x7fELF\x02\x01") {
        return false;
    }
    let (Some(phoff), Some(size), Some(count)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38)) else {
        return false;
    };
    (0..count).any(|i| u32_at(phoff + i * size) == Some(PT_INTERP))
}

/// The entries as a "newc" cpio archive: a header of 13 hex fields, the name and the data,
/// each padded to 4 bytes; then the trailer.
fn newc(entries: &[Entry]) -> Vec<u8> {
    fn pad(out: &mut Vec<u8>) {
        while out.len() % 4 != 0 {
            out.push(0);
        }
    }
    fn header(out: &mut Vec<u8>, ino: u32, mode: u32, size: usize, name: &str) {
        let nlink = if mode & 0o040000 != 0 { 2 } else { 1 };
        let fields = [
            ino,
            mode,
            0, // uid
            0, // gid
            nlink,
            0, // mtime: fixed, so the same inputs make the same archive
            size as u32,
            0,
            0,
            0,
            0,
            name.len() as u32 + 1,
            0,
        ];
        out.extend_from_slice(b"070701");
        for f in fields {
            out.extend_from_slice(format!("{f:08X}").as_bytes());
        }
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        pad(out);
    }
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        header(&mut out, i as u32 + 1, e.mode, e.data.len(), &e.name);
        out.extend_from_slice(&e.data);
        pad(&mut out);
    }
    header(&mut out, 0, 0, 0, "TRAILER!!!");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_archive_is_newc_with_each_entry_aligned_and_a_trailer() {
        let a = newc(&[Entry {
            name: "init".into(),
            mode: 0o100755,
            data: b"abcde".to_vec(),
        }]);
        assert!(a.starts_with(b"070701"));
        // Header (110) + "init\0" (5) padded to 116, then 5 bytes of data padded to 124.
        assert_eq!(&a[110..115], b"init\0");
        assert_eq!(&a[116..121], b"abcde");
        assert_eq!(&a[124..130], b"070701");
        let mode = std::str::from_utf8(&a[14..22]).unwrap();
        assert_eq!(u32::from_str_radix(mode, 16).unwrap(), 0o100755);
        assert!(a.windows(11).any(|w| w == b"TRAILER!!!\0"));
        assert_eq!(a.len() % 4, 0);
    }

    #[test]
    fn init_hands_over_to_the_script_the_kernel_parameter_names() {
        let s = init_script();
        assert!(
            s.contains("orchestrate.init=*) next=${w#orchestrate.init=}"),
            "{s}"
        );
        assert!(s.contains("switch_root /newroot /bin/sh \"$next\""), "{s}");
    }

    /// A minimal ELF64 header with one program header of type `p_type`.
    fn elf_with(p_type: u32) -> Vec<u8> {
        let mut e = vec![0u8; 64 + 56];
        e[..6].copy_from_slice(b"\x7fELF\x02\x01");
        e[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        e[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        e[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        e[64..68].copy_from_slice(&p_type.to_le_bytes());
        e
    }

    #[test]
    fn a_dynamically_linked_busybox_is_refused_with_the_package_that_works() {
        let err = refuse_dynamic(Path::new("/bin/busybox"), &elf_with(3))
            .unwrap_err()
            .to_string();
        assert!(err.contains("busybox-static"), "{err}");
        // PT_LOAD only: static.
        assert!(refuse_dynamic(Path::new("/bin/busybox"), &elf_with(1)).is_ok());
        // This program has an interpreter.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(has_interpreter(&me));
    }
}
