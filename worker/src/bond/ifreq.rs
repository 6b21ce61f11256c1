//! Interface ioctls (SIOC*) on an AF_INET datagram socket: the handful of facts and settings
//! the bond needs from slaves and its TUN device, without an rtnetlink dependency.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::mac::Mac;

/// `struct ifreq`: a name and a 24-byte union, of which each call uses the start.
#[repr(C)]
pub struct IfReq {
    pub name: [libc::c_char; libc::IFNAMSIZ],
    pub data: [u8; 24],
}

impl IfReq {
    pub fn new(name: &str) -> io::Result<IfReq> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains(['/', ' ', '\0']) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{name:?} is not a valid interface name (1-15 bytes, no '/', space or NUL)"
                ),
            ));
        }
        let mut r = IfReq {
            name: [0; libc::IFNAMSIZ],
            data: [0; 24],
        };
        for (d, s) in r.name.iter_mut().zip(name.bytes()) {
            *d = s as libc::c_char;
        }
        Ok(r)
    }
}

/// A socket to issue interface ioctls on.
pub struct Ctl(OwnedFd);

impl Ctl {
    pub fn open() -> io::Result<Ctl> {
        // SAFETY: plain socket(2); the descriptor is owned from here on.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh, valid descriptor nobody else owns.
        Ok(Ctl(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn ioctl(
        &self,
        name: &str,
        req: libc::c_ulong,
        set: impl FnOnce(&mut [u8; 24]),
    ) -> io::Result<[u8; 24]> {
        let mut r = IfReq::new(name)?;
        set(&mut r.data);
        // SAFETY: every request used here reads or writes at most a struct ifreq.
        if unsafe { libc::ioctl(self.0.as_raw_fd(), req as _, &mut r as *mut IfReq) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(r.data)
    }

    pub fn index(&self, name: &str) -> io::Result<i32> {
        let d = self.ioctl(name, libc::SIOCGIFINDEX, |_| {})?;
        Ok(i32::from_ne_bytes([d[0], d[1], d[2], d[3]]))
    }

    pub fn mtu(&self, name: &str) -> io::Result<u32> {
        let d = self.ioctl(name, libc::SIOCGIFMTU, |_| {})?;
        Ok(i32::from_ne_bytes([d[0], d[1], d[2], d[3]]) as u32)
    }

    pub fn set_mtu(&self, name: &str, mtu: u32) -> io::Result<()> {
        self.ioctl(name, libc::SIOCSIFMTU, |d| {
            d[..4].copy_from_slice(&(mtu as i32).to_ne_bytes())
        })
        .map(drop)
    }

    pub fn mac(&self, name: &str) -> io::Result<Mac> {
        // struct sockaddr: family (2 bytes), then the address in sa_data.
        let d = self.ioctl(name, libc::SIOCGIFHWADDR, |_| {})?;
        Ok(Mac([d[2], d[3], d[4], d[5], d[6], d[7]]))
    }

    pub fn flags(&self, name: &str) -> io::Result<i16> {
        let d = self.ioctl(name, libc::SIOCGIFFLAGS, |_| {})?;
        Ok(i16::from_ne_bytes([d[0], d[1]]))
    }

    /// Whether the device has carrier (`netif_carrier_ok`, what the bonding driver's MII
    /// monitor reads), by `ETHTOOL_GLINK`; `None` if the driver does not answer that.
    pub fn carrier(&self, name: &str) -> Option<bool> {
        const ETHTOOL_GLINK: u32 = 0x0a;
        #[repr(C)]
        struct EthtoolValue {
            cmd: u32,
            data: u32,
        }
        let mut v = EthtoolValue {
            cmd: ETHTOOL_GLINK,
            data: 0,
        };
        let ptr = (&mut v as *mut EthtoolValue as usize).to_ne_bytes();
        // ifr_data points at the ethtool command, which the kernel fills in.
        self.ioctl(name, libc::SIOCETHTOOL, |d| {
            d[..ptr.len()].copy_from_slice(&ptr)
        })
        .ok()?;
        Some(v.data != 0)
    }

    pub fn set_up(&self, name: &str, up: bool) -> io::Result<()> {
        let flags = self.flags(name)?;
        let up_flag = libc::IFF_UP as i16;
        let new = if up {
            flags | up_flag
        } else {
            flags & !up_flag
        };
        self.ioctl(name, libc::SIOCSIFFLAGS, |d| {
            d[..2].copy_from_slice(&new.to_ne_bytes())
        })
        .map(drop)
    }

    /// Sets an IPv4 address (`SIOCSIFADDR`) or netmask (`SIOCSIFNETMASK`).
    fn set_inet(&self, name: &str, req: libc::c_ulong, a: Ipv4Addr) -> io::Result<()> {
        self.ioctl(name, req, |d| {
            // struct sockaddr_in: family, port, address.
            d[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
            d[4..8].copy_from_slice(&a.octets());
        })
        .map(drop)
    }

    pub fn set_address(&self, name: &str, addr: Ipv4Addr, prefix: u8) -> io::Result<()> {
        self.set_inet(name, libc::SIOCSIFADDR, addr)?;
        let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
        self.set_inet(name, libc::SIOCSIFNETMASK, Ipv4Addr::from(mask))
    }
}
