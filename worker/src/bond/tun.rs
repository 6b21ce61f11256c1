//! The bond's face to the local kernel: a TUN device (IP packets, no packet-information
//! header) that carries the bond's address. It is not made persistent, so it disappears when
//! the process exits, whichever way it exits.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

use super::ifreq::{Ctl, IfReq};

/// `_IOW('T', 202, int)`
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

pub struct Tun {
    file: File,
    name: String,
}

impl Tun {
    /// Creates TUN device `name`, gives it `addr/prefix` and `mtu`, and brings it up.
    pub fn create(name: &str, addr: Ipv4Addr, prefix: u8, mtu: u32) -> Result<Tun, String> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(|e| {
                format!(
                    "cannot open /dev/net/tun: {e} (the kernel needs CONFIG_TUN, and the \
                     bond needs root or CAP_NET_ADMIN)"
                )
            })?;
        let mut req = IfReq::new(name).map_err(|e| e.to_string())?;
        let flags = (libc::IFF_TUN | libc::IFF_NO_PI) as i16;
        req.data[..2].copy_from_slice(&flags.to_ne_bytes());
        // SAFETY: TUNSETIFF reads and writes one struct ifreq.
        if unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, &mut req as *mut IfReq) } < 0 {
            let e = io::Error::last_os_error();
            return Err(format!(
                "cannot create TUN device {name}: {e} (an interface of that name may already \
                 exist: remove it or choose another --name)"
            ));
        }
        let tun = Tun {
            file,
            name: name.to_owned(),
        };
        let ctl = Ctl::open().map_err(|e| format!("interface control socket: {e}"))?;
        let step = |what: &str, r: io::Result<()>| {
            r.map_err(|e| format!("cannot set {what} on TUN device {name}: {e}"))
        };
        step("MTU", ctl.set_mtu(name, mtu))?;
        step("address", ctl.set_address(name, addr, prefix))?;
        step("link up", ctl.set_up(name, true))?;
        Ok(tun)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one packet the kernel sends through the bond.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        (&self.file).read(buf)
    }

    /// Hands one received packet to the kernel.
    pub fn send(&self, pkt: &[u8]) -> io::Result<usize> {
        (&self.file).write(pkt)
    }
}
