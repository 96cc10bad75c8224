//! The system calls the relay needs and the standard library does not offer: packet sockets with
//! kernel receive timestamps, a timer and an epoll set on the monotonic clock, signals as a file
//! descriptor, real-time scheduling. Each wrapper checks the call's result and turns it into an
//! `io::Error`; nothing else in the crate is `unsafe`.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn check_size(ret: libc::ssize_t) -> io::Result<usize> {
    usize::try_from(ret).map_err(|_| io::Error::last_os_error())
}

/// `CLOCK_MONOTONIC` and `CLOCK_REALTIME` in nanoseconds.
pub fn clock_ns(clock: libc::clockid_t) -> i128 {
    // SAFETY: `ts` is a valid, writable timespec; both clocks always exist on Linux.
    let mut ts: libc::timespec = unsafe { zeroed() };
    unsafe { libc::clock_gettime(clock, &mut ts) };
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

pub fn monotonic_ns() -> i128 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

pub fn realtime_ns() -> i128 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// The index of a network interface by name.
pub fn interface_index(name: &str) -> io::Result<u32> {
    let c = CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in name"))?;
    // SAFETY: `c` is a NUL-terminated string that outlives the call.
    let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if index == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(index)
    }
}

fn set_option<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` points at a live `T` of the size passed.
    let ret = unsafe {
        libc::setsockopt(fd, level, name, std::ptr::from_ref(value).cast(), size_of::<T>() as libc::socklen_t)
    };
    check(ret).map(drop)
}

/// A `SOCK_DGRAM` packet socket bound to one interface: it reads the IP packets the host on the
/// other end of the veth sends (the kernel strips the Ethernet header and reports its protocol)
/// and sends IP packets to that host (the kernel writes the Ethernet header: the interface's own
/// MAC as source, the host's as destination). See docs/adr/0001-relay-packet-io.md.
pub struct PacketSocket {
    fd: OwnedFd,
    ifindex: u32,
    host_mac: [u8; 6],
}

/// One frame read: its bytes are in the caller's buffer.
pub struct Received {
    pub len: usize,
    /// The frame's Ethernet protocol (`ETH_P_IP` for IPv4).
    pub protocol: u16,
    /// The kernel's receive timestamp, CLOCK_REALTIME nanoseconds (0 if it gave none).
    pub realtime_ns: i128,
    /// The frame was longer than the buffer (and cut).
    pub truncated: bool,
}

/// Whether `PacketSocket::send_ipv4` found the socket's send buffer full, and then how long (ns)
/// it waited for room: frames a host has not yet consumed count against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendWait {
    None,
    Waited(u64),
}

/// How long `PacketSocket::send_ipv4` waits for room in a full send buffer.
const SEND_WAIT: Duration = Duration::from_secs(1);

impl PacketSocket {
    /// Opens a non-blocking packet socket on `interface`, whose host is at `host_mac`, with
    /// `buffer` bytes for frames received and as many for frames sent and not yet taken by the
    /// host's side of the link.
    pub fn open(interface: &str, host_mac: [u8; 6], buffer: usize) -> io::Result<Self> {
        let ifindex = interface_index(interface)?;
        let protocol = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket(2); the descriptor is owned at once.
        let raw = check(unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                i32::from(protocol),
            )
        })?;
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let one: libc::c_int = 1;
        set_option(raw, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &one)?;
        set_option(raw, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &one)?;
        set_option(raw, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &one)?;
        let size = libc::c_int::try_from(buffer).unwrap_or(libc::c_int::MAX);
        // SO_RCVBUFFORCE (root) goes past net.core.rmem_max; plain SO_RCVBUF otherwise.
        if set_option(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &size).is_err() {
            set_option(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, &size)?;
        }
        // A frame sent over a veth counts against this socket until the host's side consumes it:
        // the default (net.core.wmem_default, 208 kB) filled behind a TCP receiver in
        // seed000-5.3.8 and refused the next frame (EAGAIN).
        if set_option(raw, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &size).is_err() {
            set_option(raw, libc::SOL_SOCKET, libc::SO_SNDBUF, &size)?;
        }
        // SAFETY: an all-zero sockaddr_ll is valid; the fields set are the ones bind reads.
        let mut addr: libc::sockaddr_ll = unsafe { zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = protocol;
        addr.sll_ifindex = ifindex as i32;
        // SAFETY: `addr` is a valid sockaddr_ll of the size passed.
        check(unsafe {
            libc::bind(
                raw,
                std::ptr::from_ref(&addr).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        Ok(Self { fd, ifindex, host_mac })
    }

    /// Reads one frame into `buf` without blocking; `Ok(None)` when none is waiting.
    pub fn receive(&self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        // SAFETY: every pointer in `msg` refers to a live local buffer of the length given, and
        // the control-message walk stays within `control` as the CMSG macros guarantee.
        unsafe {
            let mut from: libc::sockaddr_ll = zeroed();
            let mut control = [0u64; 16];
            let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
            let mut msg: libc::msghdr = zeroed();
            msg.msg_name = std::ptr::from_mut(&mut from).cast();
            msg.msg_namelen = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = size_of::<[u64; 16]>();
            let n = libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_TRUNC);
            if n < 0 {
                let e = io::Error::last_os_error();
                return if e.kind() == io::ErrorKind::WouldBlock { Ok(None) } else { Err(e) };
            }
            let n = n as usize;
            let mut realtime_ns = 0;
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                    realtime_ns = i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec);
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
            Ok(Some(Received {
                len: n.min(buf.len()),
                protocol: u16::from_be(from.sll_protocol),
                realtime_ns,
                truncated: n > buf.len(),
            }))
        }
    }

    /// Sends an IPv4 packet to the host at the other end. A full send buffer is waited on, up to
    /// `SEND_WAIT`: the frame then leaves late, and the caller's lateness measure says by how
    /// much; after that the error is returned.
    pub fn send_ipv4(&self, packet: &[u8]) -> io::Result<SendWait> {
        match self.try_send_ipv4(packet) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let asked = monotonic_ns();
                let mut ready = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
                let wait_ms = libc::c_int::try_from(SEND_WAIT.as_millis()).unwrap_or(libc::c_int::MAX);
                // SAFETY: `ready` is one valid pollfd.
                check(unsafe { libc::poll(&mut ready, 1, wait_ms) })?;
                self.try_send_ipv4(packet)?;
                Ok(SendWait::Waited((monotonic_ns() - asked).max(0) as u64))
            }
            other => other.map(|()| SendWait::None),
        }
    }

    fn try_send_ipv4(&self, packet: &[u8]) -> io::Result<()> {
        // SAFETY: an all-zero sockaddr_ll is valid; `packet` and `addr` outlive the call.
        let sent = unsafe {
            let mut addr: libc::sockaddr_ll = zeroed();
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_protocol = (libc::ETH_P_IP as u16).to_be();
            addr.sll_ifindex = self.ifindex as i32;
            addr.sll_halen = 6;
            addr.sll_addr[..6].copy_from_slice(&self.host_mac);
            libc::sendto(
                self.fd.as_raw_fd(),
                packet.as_ptr().cast(),
                packet.len(),
                0,
                std::ptr::from_ref(&addr).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        check_size(sent).map(drop)
    }

    /// Frames the kernel dropped because the socket's buffer was full, since the last call.
    pub fn kernel_drops(&self) -> io::Result<u32> {
        // SAFETY: `stats` is a writable tpacket_stats and `len` its size.
        unsafe {
            let mut stats: libc::tpacket_stats = zeroed();
            let mut len = size_of::<libc::tpacket_stats>() as libc::socklen_t;
            check(libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                std::ptr::from_mut(&mut stats).cast(),
                &mut len,
            ))?;
            Ok(stats.tp_drops)
        }
    }
}

impl AsRawFd for PacketSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A one-shot timer on CLOCK_MONOTONIC, armed at absolute instants.
pub struct Timer(OwnedFd);

impl Timer {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain timerfd_create(2); the descriptor is owned at once.
        let raw = check(unsafe {
            libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC)
        })?;
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(raw) }))
    }

    /// Fires at `monotonic_ns` (absolute); `None` disarms.
    pub fn arm(&self, monotonic_ns: Option<i128>) -> io::Result<()> {
        // SAFETY: zeroed itimerspec is "disarmed"; the pointers refer to locals.
        unsafe {
            let mut spec: libc::itimerspec = zeroed();
            if let Some(ns) = monotonic_ns {
                let ns = ns.max(1);
                spec.it_value.tv_sec = (ns / 1_000_000_000) as libc::time_t;
                spec.it_value.tv_nsec = (ns % 1_000_000_000) as libc::c_long;
            }
            check(libc::timerfd_settime(
                self.0.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            ))
            .map(drop)
        }
    }

    /// Clears an expiry so the descriptor stops being readable.
    pub fn clear(&self) {
        let mut expirations = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a local buffer of 8.
        unsafe { libc::read(self.0.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) };
    }
}

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// SIGINT and SIGTERM as a readable descriptor (they are blocked for the process, so they only
/// make it readable), and SIGPIPE ignored.
pub struct Signals(OwnedFd);

impl Signals {
    pub fn new() -> io::Result<Self> {
        // SAFETY: the signal set is a local initialised by sigemptyset; signalfd gets a fresh
        // descriptor, owned at once.
        unsafe {
            let mut set: libc::sigset_t = zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            check(libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()))?;
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
            let raw = check(libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC))?;
            Ok(Self(OwnedFd::from_raw_fd(raw)))
        }
    }
}

impl AsRawFd for Signals {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// An epoll set whose events carry the index the caller registered each descriptor with.
pub struct Poll(OwnedFd);

impl Poll {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain epoll_create1(2); the descriptor is owned at once.
        let raw = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(raw) }))
    }

    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut event = libc::epoll_event { events: libc::EPOLLIN as u32, u64: token };
        // SAFETY: `event` is a valid local epoll_event.
        check(unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut event) }).map(drop)
    }

    /// Waits up to `timeout` for readiness; returns the tokens of the ready descriptors.
    pub fn wait(&self, timeout: Duration, ready: &mut Vec<u64>) -> io::Result<()> {
        ready.clear();
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 16];
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: `events` is a writable array of the length passed.
        let n = unsafe {
            libc::epoll_wait(self.0.as_raw_fd(), events.as_mut_ptr(), events.len() as libc::c_int, ms)
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(()) } else { Err(e) };
        }
        ready.extend(events[..n as usize].iter().map(|e| e.u64));
        Ok(())
    }
}

/// Real-time FIFO scheduling at `priority` for the calling thread; an error if not permitted.
pub fn set_fifo_scheduling(priority: i32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: `param` is a valid local sched_param.
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) }).map(drop)
}

/// The CPUs the calling thread may run on.
pub fn affinity() -> io::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is an empty set; sched_getaffinity writes exactly its size
    // and CPU_ISSET reads within it.
    unsafe {
        let mut set: libc::cpu_set_t = zeroed();
        check(libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set))?;
        Ok((0..libc::CPU_SETSIZE as usize).filter(|&cpu| libc::CPU_ISSET(cpu, &set)).collect())
    }
}

/// Lets the calling thread (and the threads it starts afterwards) run on `cpus` only.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is an empty set; CPU_SET ignores CPUs beyond its size, and
    // sched_setaffinity reads exactly its size.
    unsafe {
        let mut set: libc::cpu_set_t = zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        check(libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set)).map(drop)
    }
}

/// Timer slack of 1 ns (the default 50 µs would make every wake-up up to 50 µs late).
pub fn set_minimal_timer_slack() -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument.
    check(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) }).map(drop)
}

/// Locks the process's memory so a page fault never delays a departure.
pub fn lock_memory() -> io::Result<()> {
    // SAFETY: mlockall takes flags only.
    check(unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) }).map(drop)
}

/// The parent's death sends SIGTERM, so a relay never outlives the process that started it.
pub fn terminate_with_parent() -> io::Result<()> {
    // SAFETY: PR_SET_PDEATHSIG takes a signal number.
    check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0) }).map(drop)
}

/// Sends every datagram of a UDP socket with this IP TOS byte (its low two bits: ECN).
pub fn set_ip_tos(socket: &impl AsRawFd, tos: u8) -> io::Result<()> {
    set_option(socket.as_raw_fd(), libc::IPPROTO_IP, libc::IP_TOS, &libc::c_int::from(tos))
}

/// Asks the kernel to report each received datagram's IP TOS byte ([`receive_with_tos`]).
pub fn enable_receive_tos(socket: &impl AsRawFd) -> io::Result<()> {
    set_option(socket.as_raw_fd(), libc::IPPROTO_IP, libc::IP_RECVTOS, &1 as &libc::c_int)
}

/// Reads one datagram without blocking: its length (cut to `buf`) and IP TOS byte; `Ok(None)`
/// when none is waiting.
pub fn receive_with_tos(socket: &impl AsRawFd, buf: &mut [u8]) -> io::Result<Option<(usize, u8)>> {
    Ok(receive_from_with_tos(socket, buf)?.map(|(n, tos, _)| (n, tos)))
}

/// As [`receive_with_tos`], with the sender's address (`None` if it is not IPv4): what an
/// unconnected socket that serves several peers needs.
pub fn receive_from_with_tos(
    socket: &impl AsRawFd,
    buf: &mut [u8],
) -> io::Result<Option<(usize, u8, Option<SocketAddrV4>)>> {
    // SAFETY: every pointer in `msg` refers to a live local buffer of the length given, and the
    // control-message walk stays within `control` as the CMSG macros guarantee; `from` is read
    // as a sockaddr_in only when the kernel says it wrote an AF_INET address of that size.
    unsafe {
        let mut control = [0u64; 8];
        let mut from: libc::sockaddr_in = zeroed();
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        let mut msg: libc::msghdr = zeroed();
        msg.msg_name = std::ptr::from_mut(&mut from).cast();
        msg.msg_namelen = size_of::<libc::sockaddr_in>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = size_of::<[u64; 8]>();
        let n = libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT);
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock { Ok(None) } else { Err(e) };
        }
        let mut tos = 0u8;
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::IPPROTO_IP && (*cmsg).cmsg_type == libc::IP_TOS {
                tos = *libc::CMSG_DATA(cmsg);
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        let ipv4 = msg.msg_namelen as usize == size_of::<libc::sockaddr_in>()
            && libc::c_int::from(from.sin_family) == libc::AF_INET;
        let peer = ipv4.then(|| {
            SocketAddrV4::new(Ipv4Addr::from(u32::from_be(from.sin_addr.s_addr)), u16::from_be(from.sin_port))
        });
        Ok(Some((n as usize, tos, peer)))
    }
}

/// A receive buffer of `bytes` whatever `net.core.rmem_max` says (SO_RCVBUFFORCE, which needs
/// CAP_NET_ADMIN: the agents run as root in their namespaces), so that a late wake-up does not
/// drop datagrams at the host.
pub fn force_receive_buffer(socket: &impl AsRawFd, bytes: usize) -> io::Result<()> {
    let bytes = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    set_option(socket.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &bytes)
}
