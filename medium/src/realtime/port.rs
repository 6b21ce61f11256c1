//! A port: one host-side veth of a segment, read and written raw through an AF_PACKET socket.
//! The socket sees every frame the node sends (not the ones it is sent: those are ours) and
//! writes around the host's qdiscs.
//!
//! Every frame comes with the kernel's receive time (`SO_TIMESTAMPNS`, on CLOCK_REALTIME),
//! taken when the node's write reached this end of the veth, so the event thread knows how
//! long a frame waited for it (ingress lateness) and can start it on the wire when it
//! arrived rather than when it was read. Kernels that keep a sender's delivery time on a
//! forwarded frame instead (TCP's departure time, on CLOCK_MONOTONIC) give a stamp the
//! caller recognises as implausible and replaces with its read time.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Linux's `PACKET_QDISC_BYPASS` and `PACKET_IGNORE_OUTGOING` (not in every libc version).
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
/// `SO_TIMESTAMPNS` (`SO_TIMESTAMPNS_OLD`: a 64-bit `timespec`) and its control message;
/// not in libc for Linux.
const SO_TIMESTAMPNS: libc::c_int = 35;
const SCM_TIMESTAMPNS: libc::c_int = SO_TIMESTAMPNS;
/// Big enough for anything a veth can carry, offloads or not.
const MAX_FRAME: usize = 65_536;

/// A frame the node sent, with the kernel's receive time when it has one.
#[derive(Debug)]
pub struct Received {
    pub frame: Vec<u8>,
    /// CLOCK_REALTIME ns at which the frame reached the port.
    pub stamp_realtime: Option<u64>,
}

/// What the event loop does with a port: read what the node sent, write what is due to it.
/// Passed in so that the loop runs against in-memory ports in tests; the loop is generic over
/// it, so production calls [`Port`]'s methods directly (one `recvmsg` or `send` per frame).
pub trait PortIo {
    /// The next frame the node sent, or `None` when there is none waiting.
    fn recv(&self, buf: &mut Vec<u8>) -> io::Result<Option<Received>>;
    /// Writes a frame out to the node (as if it came off the wire).
    fn send(&self, frame: &[u8]) -> io::Result<()>;
    /// The interface's name, for messages.
    fn name(&self) -> &str;
}

pub struct Port {
    fd: OwnedFd,
    pub ifname: String,
}

impl PortIo for Port {
    #[inline]
    fn recv(&self, buf: &mut Vec<u8>) -> io::Result<Option<Received>> {
        Port::recv(self, buf)
    }

    #[inline]
    fn send(&self, frame: &[u8]) -> io::Result<()> {
        Port::send(self, frame)
    }

    fn name(&self) -> &str {
        &self.ifname
    }
}

/// Refuses anything but a free veth end: the emulator relays frames between its ports, so a
/// config naming the host's own uplink or a bridge port must not be followed.
fn check_port(ifname: &str) -> io::Result<()> {
    let refuse = |why: &str| {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{ifname} {why}; the medium emulator only takes free veth ends"),
        ))
    };
    if ifname.is_empty() || ifname.contains('/') || ifname.starts_with('.') {
        return refuse("is not an interface name");
    }
    let sys = std::path::Path::new("/sys/class/net").join(ifname);
    if sys.join("master").exists() {
        return refuse("is enslaved to a bridge or bond");
    }
    let read = |f: &str| std::fs::read_to_string(sys.join(f)).map(|s| s.trim().to_owned());
    // A veth end's iflink is its peer's index; a physical NIC's is its own.
    match (read("ifindex"), read("iflink")) {
        (Ok(index), Ok(link)) if index != link => Ok(()),
        (Ok(_), Ok(_)) => refuse("is not one end of a veth pair"),
        _ => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface {ifname}"),
        )),
    }
}

fn check(ret: libc::c_int, what: &str, ifname: &str) -> io::Result<libc::c_int> {
    if ret < 0 {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what} on {ifname}: {e}")))
    } else {
        Ok(ret)
    }
}

fn set_int(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: libc::c_int) -> libc::c_int {
    // SAFETY: a valid socket and a pointer to a live c_int of the size given.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&raw const v).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    }
}

impl Port {
    pub fn open(ifname: &str) -> io::Result<Port> {
        let name = CString::new(ifname).map_err(|_| io::Error::other("interface name with NUL"))?;
        // SAFETY: a NUL-terminated name.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no interface {ifname}"),
            ));
        }
        check_port(ifname)?;
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // Protocol 0: the socket receives nothing until it is bound to the port below (with
        // ETH_P_ALL it would see every host interface's frames in between).
        // SAFETY: plain socket creation; the result is checked.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        check(raw, "opening a packet socket", ifname)?;
        // SAFETY: `raw` is a socket we own from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let f = fd.as_raw_fd();
        check(
            set_int(f, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1),
            "PACKET_IGNORE_OUTGOING",
            ifname,
        )?;
        check(
            set_int(f, libc::SOL_PACKET, PACKET_QDISC_BYPASS, 1),
            "PACKET_QDISC_BYPASS",
            ifname,
        )?;
        check(
            set_int(f, libc::SOL_SOCKET, SO_TIMESTAMPNS, 1),
            "SO_TIMESTAMPNS",
            ifname,
        )?;
        // Room for a burst while the event thread is busy elsewhere; root may exceed rmem_max.
        set_int(f, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 4 << 20);
        set_int(f, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, 4 << 20);
        // SAFETY: zeroed sockaddr_ll is valid; we fill the fields bind needs.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: a valid socket and address of the size given.
        let r = unsafe {
            libc::bind(
                f,
                (&raw const sll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        check(r, "binding a packet socket", ifname)?;
        Ok(Port {
            fd,
            ifname: ifname.to_owned(),
        })
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The next frame the node sent, or `None` when there is none waiting.
    pub fn recv(&self, buf: &mut Vec<u8>) -> io::Result<Option<Received>> {
        buf.resize(MAX_FRAME, 0);
        // Room for one cmsghdr and a timespec, aligned as cmsghdr wants.
        let mut control = [0u64; 8];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: zeroed msghdr is valid; the pointers set below are live for the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &raw mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        // SAFETY: the socket is ours; `msg` points at live buffers of the lengths given.
        let n = unsafe { libc::recvmsg(self.raw_fd(), &raw mut msg, libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                // The node took its interface down (a cable pulled, a failover test): the
                // socket reports it once; frames resume when the link comes back.
                io::ErrorKind::NetworkDown => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some(Received {
            frame: buf[..n as usize].to_vec(),
            stamp_realtime: receive_stamp(&msg),
        }))
    }

    /// Writes a frame out to the node (as if it came off the wire).
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: the socket is ours; the buffer is live for the call.
        let n = unsafe { libc::send(self.raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

/// The `SCM_TIMESTAMPNS` control message of a received `msg`, in ns.
fn receive_stamp(msg: &libc::msghdr) -> Option<u64> {
    // SAFETY: walking the control messages the kernel wrote into `msg`'s live buffer with
    // the libc macros; the payload is read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                let ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
                return (ns > 0).then_some(ns);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
        None
    }
}
