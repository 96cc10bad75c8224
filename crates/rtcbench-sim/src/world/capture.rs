//! Packet captures: every packet as its sender put it on the wire, written as a pcap file.

use rtcbench_units::{DataSize, Instant};

/// A packet as it left its sender, for a pcap file.
#[derive(Clone, Debug)]
pub struct Captured {
    pub t: Instant,
    /// Indices into [`Meta::nodes`].
    pub src: u16,
    pub dst: u16,
    pub transport: CapturedTransport,
    /// The IPv4 ECN bits the sender set (RFC 3168 §5).
    pub ecn: u8,
    /// RTP header with extensions, the whole RTCP packet, or the TCP header; empty for CBR.
    pub data: Vec<u8>,
    /// Bytes that follow `data` on the wire (zeros in a capture): media payload, probe padding,
    /// TCP or CBR payload.
    pub payload: DataSize,
}

/// How a captured packet travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapturedTransport {
    /// RTP and RTCP multiplexed on UDP port 5004 (RFC 5761).
    RtpUdp,
    /// A CBR datagram, to and from the discard port (9, RFC 863) so nothing decodes it as RTP.
    CbrUdp,
    /// A TCP segment; its header carries the ports.
    Tcp,
}

/// The UDP port of CBR cross traffic in captures: discard (RFC 863).
const CBR_CAPTURE_PORT: u16 = 9;

/// Writes captured packets as a pcap file that Wireshark and tshark open (raw IPv4; RTP and RTCP
/// multiplexed on UDP port 5004 as WebRTC does, TCP with its own ports, CBR on the discard port
/// 9; node `i` is the (i+1)-th address of 10.0.0.0/16), in as many pieces as the run is taken in
/// ([`Simulation::take_capture`]).
/// Decode with `tshark -d udp.port==5004,rtp` (see `rtcbench_wire::pcap::TSHARK_ARGS`).
pub struct CaptureWriter<W: std::io::Write> {
    w: rtcbench_wire::pcap::PcapWriter<W>,
}

impl<W: std::io::Write> CaptureWriter<W> {
    /// Writes the file header.
    pub fn new(out: W) -> Result<Self, rtcbench_wire::pcap::CaptureError> {
        Ok(Self { w: rtcbench_wire::pcap::PcapWriter::new(out)? })
    }

    /// Appends packets, in the order they were captured.
    pub fn write(&mut self, packets: &[Captured]) -> Result<(), rtcbench_wire::pcap::CaptureError> {
        use rtcbench_wire::pcap::DEFAULT_PORT;
        use std::net::{Ipv4Addr, SocketAddrV4};
        let ip = |n: u16| Ipv4Addr::new(10, 0, (n >> 8) as u8, (n & 0xff) as u8 + 1);
        for p in packets {
            let (src, dst) = (ip(p.src), ip(p.dst));
            let udp = |port| (SocketAddrV4::new(src, port), SocketAddrV4::new(dst, port));
            match p.transport {
                CapturedTransport::RtpUdp => {
                    let (a, b) = udp(DEFAULT_PORT);
                    self.w.write_udp_ecn(p.t, a, b, p.ecn, &p.data, p.payload)?
                }
                CapturedTransport::CbrUdp => {
                    let (a, b) = udp(CBR_CAPTURE_PORT);
                    self.w.write_udp_ecn(p.t, a, b, p.ecn, &p.data, p.payload)?
                }
                CapturedTransport::Tcp => self.w.write_tcp(p.t, (src, dst), p.ecn, &p.data, p.payload)?,
            };
        }
        Ok(())
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.w.into_writer()
    }
}

/// Writes captured packets as one pcap file ([`CaptureWriter`] in one piece).
pub fn write_pcap<W: std::io::Write>(
    out: W,
    packets: &[Captured],
) -> Result<W, rtcbench_wire::pcap::CaptureError> {
    let mut w = CaptureWriter::new(out)?;
    w.write(packets)?;
    Ok(w.into_inner())
}
