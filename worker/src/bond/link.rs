//! One slave wire: an AF_PACKET socket bound to the slave interface for the bond's ethertype,
//! so packets travel below IP as with the kernel's bonding and the slave needs no address.
//! Frames are plain Ethernet: destination, source, ethertype 0x88B5 (IEEE 802 local
//! experimental), then either an IP packet, unchanged, or a control message (first byte 0,
//! which no IP packet has). Nothing is added to the IP packet, so the bond's MTU is the
//! slaves' MTU.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::ifreq::Ctl;
use super::mac::Mac;

/// Ethertype of every frame the bond sends.
pub const ETHERTYPE: u16 = 0x88b5;
pub const ETH_HEADER: usize = 14;

/// Not in every libc version: `setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING)` (Linux 4.20).
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// A slave interface and the socket that carries the bond's frames on it.
pub struct SlaveLink {
    pub name: String,
    pub mac: Mac,
    pub mtu: u32,
    sock: OwnedFd,
}

impl SlaveLink {
    pub fn open(name: &str, ctl: &Ctl) -> Result<SlaveLink, String> {
        let what = |w: &str, e: io::Error| format!("slave {name}: cannot {w}: {e}");
        let index = ctl.index(name).map_err(|e| {
            format!("slave {name}: no such interface ({e}); check the --slave names on this node")
        })?;
        let mac = ctl.mac(name).map_err(|e| what("read its MAC address", e))?;
        let mtu = ctl.mtu(name).map_err(|e| what("read its MTU", e))?;
        let proto = ETHERTYPE.to_be();
        // SAFETY: plain socket(2); the descriptor is owned from here on.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::c_int::from(proto),
            )
        };
        if fd < 0 {
            return Err(what(
                "open an AF_PACKET socket (needs root or CAP_NET_RAW)",
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: fd is a fresh, valid descriptor nobody else owns.
        let sock = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_ll is plain data; zeroed is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = index;
        // SAFETY: binding a valid socket to a sockaddr_ll of the right size.
        let r = unsafe {
            libc::bind(
                fd,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if r < 0 {
            return Err(what("bind to it", io::Error::last_os_error()));
        }
        // Room for bursts: a slave's frames queue here while the receive thread hands the
        // previous ones to the kernel. Best effort (FORCE needs CAP_NET_ADMIN).
        let bytes: libc::c_int = 4 << 20;
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_SNDBUFFORCE] {
            // SAFETY: setsockopt with a pointer to an int of the stated size.
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    opt,
                    &bytes as *const libc::c_int as *const libc::c_void,
                    std::mem::size_of::<libc::c_int>() as u32,
                );
            }
        }
        // Our own transmissions would otherwise come back to us on the same socket's tap.
        // Best effort: older kernels lack the option, and the receive path ignores frames
        // whose source is our own MAC anyway.
        let one: libc::c_int = 1;
        // SAFETY: setsockopt with a pointer to an int of the stated size.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_PACKET,
                PACKET_IGNORE_OUTGOING,
                &one as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as u32,
            );
        }
        Ok(SlaveLink {
            name: name.to_owned(),
            mac,
            mtu,
            sock,
        })
    }

    /// Fills in the Ethernet header in `frame[..14]` and sends the whole frame.
    pub fn send(&self, to: Mac, frame: &mut [u8]) -> io::Result<()> {
        frame[..6].copy_from_slice(&to.0);
        frame[6..12].copy_from_slice(&self.mac.0);
        frame[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
        // SAFETY: the buffer is valid for its length.
        let n = unsafe {
            libc::send(
                self.sock.as_raw_fd(),
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                0,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Receives one waiting frame of the bond's ethertype without blocking; returns its
    /// length, or `None` when nothing is waiting.
    pub fn try_recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            // SAFETY: the buffer is valid for its length.
            let n = unsafe {
                libc::recv(
                    self.sock.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n >= 0 {
                return Ok(Some(n as usize));
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => return Ok(None),
                _ => return Err(e),
            }
        }
    }

    /// The socket, for poll(2).
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.sock.as_raw_fd()
    }

    /// Frames the kernel dropped because this socket's receive buffer was full, since the
    /// last call (the kernel resets the count when it is read).
    pub fn overruns(&self) -> u64 {
        // SAFETY: tpacket_stats is plain data; zeroed is a valid value.
        let mut st: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `st`.
        let r = unsafe {
            libc::getsockopt(
                self.sock.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut st as *mut libc::tpacket_stats as *mut libc::c_void,
                &mut len,
            )
        };
        if r == 0 { u64::from(st.tp_drops) } else { 0 }
    }

    /// Whether a received frame is for this slave: to its MAC or to a group address, and not
    /// one of its own. A veth or a bridge hands a packet socket frames for other stations
    /// too, which a NIC's MAC filter would have dropped.
    pub fn wants(&self, frame: &[u8]) -> bool {
        frame.len() > ETH_HEADER && {
            let dst = Mac([frame[0], frame[1], frame[2], frame[3], frame[4], frame[5]]);
            (dst == self.mac || dst.is_group()) && frame[6..12] != self.mac.0
        }
    }

    /// The link state the driver's MII monitor uses: the interface is up and has carrier.
    /// Asked of the kernel by ioctl: /sys/class/net shows another namespace's interfaces
    /// when the bond runs in a namespace entered without remounting /sys, and the
    /// operational state (IFF_RUNNING) trails carrier changes by up to a second.
    pub fn carrier(&self, ctl: &Ctl) -> bool {
        let Ok(flags) = ctl.flags(&self.name) else {
            return false;
        };
        let up = flags & libc::IFF_UP as i16 != 0;
        let running = flags & libc::IFF_RUNNING as i16 != 0;
        up && ctl.carrier(&self.name).unwrap_or(running)
    }
}

/// Source MAC of a received frame.
pub fn source(frame: &[u8]) -> Mac {
    Mac([frame[6], frame[7], frame[8], frame[9], frame[10], frame[11]])
}
