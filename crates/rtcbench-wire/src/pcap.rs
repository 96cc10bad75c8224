//! Capture files (libpcap format) of simulated traffic, to open a run in Wireshark or tshark as
//! it would look on the wire.
//!
//! Each packet is written as a raw IPv4 datagram (`LINKTYPE_RAW`, 101: no link layer, so no
//! made-up MAC addresses) carrying one UDP datagram (RFC 791, RFC 768) whose data is the RTP
//! header bytes followed by `payload` zero bytes, or a whole RTCP packet; or one TCP segment
//! (RFC 9293) whose header the caller gives, followed by `payload` zero bytes. Sizes match what
//! the simulator counts: 20 bytes of IPv4 header + 8 of UDP + header bytes + payload
//! ([`IPV4_UDP_OVERHEAD`] + data) for UDP, 20 + TCP header + payload for TCP, and the write
//! methods return that wire size. The IPv4, UDP and TCP checksums are computed, so Wireshark's
//! checksum validation reports them as good; the IPv4 ECN field carries the sender's codepoint.
//!
//! Timestamps have microsecond resolution. `Instant::ZERO` is written as 2026-01-01 00:00:00 UTC
//! ([`EPOCH_UNIX_SECS`]), the same base as [`ntp`](crate::ntp), so the capture time of a sender
//! report equals the NTP timestamp it carries. Files are byte-identical for identical input: the
//! byte order is fixed (little-endian) and the IPv4 identification is a per-writer counter.
//!
//! # Dissecting with tshark
//!
//! rtcbench multiplexes RTP and RTCP on one UDP port pair (rtcp-mux, RFC 5761 §4), as WebRTC
//! does, and nothing in the capture (no SDP) tells Wireshark that the ports carry RTP. Decoding
//! the ports as RTP is enough: Wireshark's RTP dissector (`packet-rtp.c`) hands every datagram
//! whose second byte is 192-223 (marker bit set and "payload type" 64-95, the range RFC 5761 §4
//! reserves for RTCP packet types such as SR 200 ... PSFB 206) to the RTCP dissector, so RTP
//! frames show `raw:ip:udp:rtp` and RTCP frames `raw:ip:udp:rtp:rtcp`. RTP payload types must
//! therefore stay outside 64-95, as RFC 5761 §4 requires anyway.
//! Heuristics are no substitute: `--enable-heuristic rtp_udp` finds the RTP packets and the
//! default `rtcp_udp` heuristic finds SR/RR, but a feedback packet sent alone (reduced-size
//! RTCP, RFC 5506) stays undissected UDP. [`TSHARK_ARGS`] is the decode-as option for
//! [`DEFAULT_PORT`] plus checksum validation; for other ports repeat `-d udp.port==PORT,rtp` or
//! give a range, `-d udp.port==5000-5010,rtp`.
//!
//! ```text
//! tshark -r run.pcap -d udp.port==5004,rtp -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE \
//!        -T fields -E occurrence=a -E aggregator='|' -e frame.number -e rtp.seq -e rtcp.pt
//! ```
//!
//! Field names, checked with Wireshark 4.0.17 (Debian 12; `tshark -G fields` lists them all).
//! With `-T fields`, fields shown in hex by Wireshark print as `0x…` (SSRCs, `rtp.ext.profile`),
//! the others in decimal, byte fields as bare hex; `-E occurrence=a` prints every occurrence.
//!
//! * IPv4/UDP: `ip.checksum.status` and `udp.checksum.status` are 1 ("Good") with the two `-o`
//!   options (2 is "Unverified", 0 "Bad"); `ip.len`, `udp.length`, `frame.len`,
//!   `frame.time_epoch` (`1767225601.000000000` for `Instant::from_secs(1)`).
//! * RTP (RFC 3550): `rtp.version`, `rtp.p_type`, `rtp.marker` (0/1), `rtp.seq`,
//!   `rtp.timestamp`, `rtp.ssrc`, `rtp.ext.profile` (`0xbede`), `rtp.ext.len` (32-bit words),
//!   `rtp.payload`.
//! * One-byte header extensions (RFC 8285 §4.2, "RFC 5285" in Wireshark): per element, one
//!   occurrence each of `rtp.ext.rfc5285.id`, `rtp.ext.rfc5285.len` (data bytes, the len nibble
//!   plus one) and `rtp.ext.rfc5285.data` (hex, e.g. `040000` for abs-send-time 1 s, `fffe` for
//!   transport seq 65534, `e0` for frame marking S|E|I). Wireshark 4.0 decodes none of
//!   abs-send-time, transport-cc or frame marking, and has no preference or "Decode As" entry
//!   to bind an ID to one (its `rtp.ext.rfc5285.id` table is not user-settable), so read values
//!   from the data bytes.
//! * SR/RR (RFC 3550 §6.4): `rtcp.pt`, `rtcp.rc`, `rtcp.length_check` (1 = OK),
//!   `rtcp.senderssrc`, `rtcp.timestamp.ntp.msw`, `rtcp.timestamp.ntp.lsw`,
//!   `rtcp.timestamp.rtp`, `rtcp.sender.packetcount`, `rtcp.sender.octetcount`;
//!   per report block `rtcp.ssrc.identifier`, `rtcp.ssrc.fraction`, `rtcp.ssrc.cum_nr`
//!   (signed), `rtcp.ssrc.ext_high`, `rtcp.ssrc.high_cycles`, `rtcp.ssrc.high_seq`,
//!   `rtcp.ssrc.jitter`, `rtcp.ssrc.lsr`, `rtcp.ssrc.dlsr`. With
//!   `-o rtcp.show_roundtrip_calculation:TRUE` Wireshark also computes `rtcp.roundtrip-delay`
//!   (ms, truncated) from LSR, DLSR and the capture time of the RR, and adds a Note-level
//!   expert item for it.
//! * Transport-wide feedback (RTPFB FMT 15): `rtcp.rtpfb.fmt`, `rtcp.mediassrc`,
//!   `rtcp.rtpfb.transportcc.baseseq`, `.statuscount`, `.reftime` (64 ms units), `.pktcount`,
//!   `.pktchunk` (decimal), `.recv_delta` (one per received packet in 250 µs ticks, printed as
//!   hex of its wire width: `0x18` for a one-byte delta, `0xfff6` for a two-byte -10), and
//!   `rtcp.rtpfb.transportcc_bad` when chunks exceed the status count.
//! * REMB (PSFB FMT 15): `rtcp.psfb.fmt`, `rtcp.psfb.remb.identifier` (`REMB`),
//!   `rtcp.psfb.remb.fci.number_ssrcs`, `rtcp.psfb.remb.fci.br_exp`,
//!   `rtcp.psfb.remb.fci.br_mantissa`, `rtcp.psfb.remb.fci.ssrc`. In 4.0
//!   `rtcp.psfb.remb.fci.bitrate` prints empty with `-T fields`: compute mantissa << exp.
//! * Generic NACK (RTPFB FMT 1): `rtcp.rtpfb.fmt`, `rtcp.mediassrc`, and per FCI entry
//!   `rtcp.rtpfb.nack_pid` and `rtcp.rtpfb.nack_blp` (hex, `0xffff`). Wireshark adds one more
//!   `rtcp.rtpfb.nack_pid` occurrence for each packet the BLP marks, counting on past 65535
//!   without wrapping (a run from PID 65530 lists 65531 ... 65546).
//! * PLI (PSFB FMT 1): `rtcp.psfb.fmt`, `rtcp.senderssrc`, `rtcp.mediassrc`. FIR (PSFB FMT 4):
//!   per entry `rtcp.psfb.fir.fci.ssrc`, `rtcp.psfb.fir.fci.csn` and `rtcp.psfb.fir.fci.reserved`.
//! * RED (RFC 2198): Wireshark decodes only payload type 99 as RED; `-d rtp.pt==PT,rtp_rfc2198`
//!   adds another, and its block headers show as "RFC 2198: Redundant Audio Data".
//! * RFC 8888 feedback (RTPFB FMT 11): Wireshark 4.0 has no dissector; it shows "Unknown (11)",
//!   reads the first report SSRC as `rtcp.mediassrc` and the rest as raw `rtcp.fci` bytes.
//!   Later versions add `rtcp.rtpfb.ccfb.*` fields.
//! * Problems: `_ws.malformed` (and `_ws.expert` with severity Error) for a malformed packet,
//!   `_ws.expert`/`_ws.expert.message` for any expert item.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddrV4};

use pcap_file::pcap::{PcapHeader, PcapPacket};
use pcap_file::{DataLink, Endianness, TsResolution};
use rtcbench_units::{DataSize, Instant};

use crate::ntp::NTP_BASE_SECS;
use crate::rtp::IPV4_UDP_OVERHEAD;

/// Unix time (seconds since 1970-01-01 UTC) written for `Instant::ZERO`: 2026-01-01 00:00:00 UTC,
/// the same instant as [`ntp::NTP_BASE_SECS`](crate::ntp::NTP_BASE_SECS).
pub const EPOCH_UNIX_SECS: u64 = NTP_BASE_SECS - NTP_UNIX_OFFSET_SECS;
/// Seconds from the NTP epoch (1900) to the Unix epoch (1970), RFC 868.
const NTP_UNIX_OFFSET_SECS: u64 = 2_208_988_800;

/// The pcap link type: raw IP, the version read from the first nibble (`LINKTYPE_RAW`).
pub const LINKTYPE_RAW: u32 = 101;
/// The UDP port rtcbench writes when a caller has no better one: 5004, the registered RTP port
/// (RFC 3551 §8), which [`TSHARK_ARGS`] tells tshark to decode as RTP.
pub const DEFAULT_PORT: u16 = 5004;

/// tshark options that decode every packet of a capture on [`DEFAULT_PORT`] as RTP or RTCP and
/// validate the IPv4 and UDP checksums (see the module docs).
pub const TSHARK_ARGS: &[&str] =
    &["-d", "udp.port==5004,rtp", "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE"];

/// Largest UDP data in an IPv4 datagram: 65535 - 20 (IPv4 header) - 8 (UDP header).
pub const MAX_UDP_DATA: DataSize = DataSize::bytes(65_507);

const IPV4_HEADER_LEN: usize = 20;
pub(crate) const UDP_HEADER_LEN: usize = 8;
/// Version 4, IHL 5 words (no options).
const IPV4_VERSION_IHL: u8 = 0x45;
/// Don't Fragment, as WebRTC stacks set it (path MTU discovery); offset 0.
const IPV4_FLAGS_DF: u16 = 0x4000;
const IPV4_TTL: u8 = 64;
pub(crate) const IP_PROTOCOL_UDP: u8 = 17;
const IP_PROTOCOL_TCP: u8 = 6;
/// Where the checksum sits in a UDP (RFC 768) and a TCP (RFC 9293 §3.1) header.
pub(crate) const UDP_CHECKSUM_AT: usize = 6;
const TCP_CHECKSUM_AT: usize = 16;
/// Smallest TCP header (data offset 5).
const TCP_MIN_HEADER_LEN: usize = 20;
/// The pcap snapshot length: the largest IPv4 datagram, so no packet is ever truncated.
const SNAPLEN: u32 = 65_535;

/// Why a packet could not be written to a capture.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// The UDP data would not fit one IPv4 datagram.
    #[error(
        "UDP datagram too large for IPv4: {data_len} header bytes + {payload} payload is more than \
         the {MAX_UDP_DATA} allowed"
    )]
    DatagramTooLarge {
        /// RTP header or RTCP bytes given.
        data_len: usize,
        /// Zero payload bytes asked for.
        payload: DataSize,
    },
    /// The instant falls outside the pcap timestamp range (Unix seconds 0 to 2^32 - 1, i.e.
    /// 1970 to 2106).
    #[error("capture time {t} (relative to 2026-01-01 UTC) is outside pcap's 1970-2106 range")]
    TimeOutOfRange {
        /// The instant given.
        t: Instant,
    },
    /// A TCP header shorter than 20 bytes or longer than its data offset allows.
    #[error("a TCP header of {len} bytes is not a header (20 to 60 bytes)")]
    BadTcpHeader {
        /// The length given.
        len: usize,
    },
    /// The underlying writer failed.
    #[error("writing the capture file: {0}")]
    Pcap(#[from] pcap_file::PcapError),
}

/// Writes simulated UDP datagrams into a libpcap capture (see the module docs).
///
/// Wrap files in a `BufWriter`; [`into_writer`](Self::into_writer) gives it back to flush.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    inner: pcap_file::pcap::PcapWriter<W>,
    /// IPv4 identification of the next datagram (RFC 6864 allows any value with DF set; a
    /// counter keeps captures deterministic and readable).
    next_ip_id: u16,
    /// Reused for every datagram.
    buf: Vec<u8>,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the pcap file header to `writer`.
    pub fn new(writer: W) -> Result<Self, CaptureError> {
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen: SNAPLEN,
            datalink: DataLink::RAW,
            ts_resolution: TsResolution::MicroSecond,
            // Fixed rather than the host's, so captures are byte-identical everywhere.
            endianness: Endianness::Little,
        };
        debug_assert_eq!(u32::from(header.datalink), LINKTYPE_RAW);
        let inner = pcap_file::pcap::PcapWriter::with_header(writer, header)?;
        Ok(Self { inner, next_ip_id: 0, buf: Vec::new() })
    }

    /// Writes one IPv4/UDP datagram from `src` to `dst` captured at `t`: `data` (an RTP header
    /// or RTCP packet) followed by `payload` zero bytes, not ECN-capable. Returns its wire size,
    /// [`IPV4_UDP_OVERHEAD`] + `data.len()` + `payload`.
    ///
    /// Errors when `data` and `payload` together exceed [`MAX_UDP_DATA`], when `t` cannot be
    /// expressed as a pcap timestamp, or when the writer fails.
    pub fn write_udp(
        &mut self,
        t: Instant,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        data: &[u8],
        payload: DataSize,
    ) -> Result<DataSize, CaptureError> {
        self.write_udp_ecn(t, src, dst, 0, data, payload)
    }

    /// [`write_udp`](Self::write_udp) with the two ECN bits of the IPv4 header (RFC 3168 §5).
    pub fn write_udp_ecn(
        &mut self,
        t: Instant,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        ecn: u8,
        data: &[u8],
        payload: DataSize,
    ) -> Result<DataSize, CaptureError> {
        let too_large = || CaptureError::DatagramTooLarge { data_len: data.len(), payload };
        let udp_data_len = (data.len() as u64).checked_add(payload.as_bytes()).ok_or_else(too_large)?;
        if udp_data_len > MAX_UDP_DATA.as_bytes() {
            return Err(too_large());
        }
        let udp = udp_header(src.port(), dst.port(), data, udp_data_len as usize);
        let segment = Segment { protocol: IP_PROTOCOL_UDP, checksum_at: UDP_CHECKSUM_AT, header: &udp };
        let wire =
            self.write_ipv4(t, (*src.ip(), *dst.ip()), ecn, segment, UDP_HEADER_LEN + udp_data_len as usize)?;
        debug_assert_eq!(wire, IPV4_UDP_OVERHEAD + DataSize::bytes(udp_data_len));
        Ok(wire)
    }

    /// Writes one IPv4/TCP segment captured at `t`: `header` (a TCP header with its ports and
    /// options; its checksum field is overwritten) followed by `payload` zero bytes. Returns
    /// its wire size, 20 + `header.len()` + `payload`.
    pub fn write_tcp(
        &mut self,
        t: Instant,
        (src, dst): (Ipv4Addr, Ipv4Addr),
        ecn: u8,
        header: &[u8],
        payload: DataSize,
    ) -> Result<DataSize, CaptureError> {
        if !(TCP_MIN_HEADER_LEN..=60).contains(&header.len()) {
            return Err(CaptureError::BadTcpHeader { len: header.len() });
        }
        let len = (header.len() as u64)
            .checked_add(payload.as_bytes())
            .filter(|&l| l <= MAX_UDP_DATA.as_bytes() + 8);
        let len = len.ok_or(CaptureError::DatagramTooLarge { data_len: header.len(), payload })?;
        let segment = Segment { protocol: IP_PROTOCOL_TCP, checksum_at: TCP_CHECKSUM_AT, header };
        self.write_ipv4(t, (src, dst), ecn, segment, len as usize)
    }

    /// Writes an IPv4 header and `segment` zero-filled to `len` bytes, with all checksums.
    fn write_ipv4(
        &mut self,
        t: Instant,
        addrs: (Ipv4Addr, Ipv4Addr),
        ecn: u8,
        segment: Segment<'_>,
        len: usize,
    ) -> Result<DataSize, CaptureError> {
        let timestamp = pcap_timestamp(t)?;
        emit_ipv4(&mut self.buf, self.next_ip_id, addrs, ecn, segment, len);
        self.next_ip_id = self.next_ip_id.wrapping_add(1);
        let packet = PcapPacket::new(timestamp, self.buf.len() as u32, &self.buf);
        self.inner.write_packet(&packet)?;
        Ok(DataSize::bytes(self.buf.len() as u64))
    }

    /// Writes an IP packet exactly as it crossed a real interface (an emulation relay's
    /// capture), captured at `t`. No IP packet exceeds the snapshot length (65,535 bytes, the
    /// largest IPv4 total length); longer bytes are refused.
    pub fn write_raw(&mut self, t: Instant, packet: &[u8]) -> Result<(), CaptureError> {
        if packet.len() > SNAPLEN as usize {
            return Err(CaptureError::DatagramTooLarge { data_len: packet.len(), payload: DataSize::ZERO });
        }
        let timestamp = pcap_timestamp(t)?;
        self.inner.write_packet(&PcapPacket::new(timestamp, packet.len() as u32, packet))?;
        Ok(())
    }

    /// The underlying writer, e.g. to flush a `BufWriter`.
    pub fn into_writer(self) -> W {
        self.inner.into_writer()
    }
}

/// Time since the Unix epoch of `t`, with `Instant::ZERO` at [`EPOCH_UNIX_SECS`].
fn pcap_timestamp(t: Instant) -> Result<std::time::Duration, CaptureError> {
    let micros = (EPOCH_UNIX_SECS as i128) * 1_000_000 + i128::from(t.as_micros());
    // pcap's 32-bit unsigned seconds field.
    if !(0..(1i128 << 32) * 1_000_000).contains(&micros) {
        return Err(CaptureError::TimeOutOfRange { t });
    }
    Ok(std::time::Duration::from_micros(micros as u64))
}

/// A UDP header (RFC 768) with a zero checksum, followed by `data`, for a datagram of
/// `udp_data_len` bytes after the header (`data` and the payload after it).
pub(crate) fn udp_header(src_port: u16, dst_port: u16, data: &[u8], udp_data_len: usize) -> Vec<u8> {
    let mut udp = Vec::with_capacity(UDP_HEADER_LEN + data.len());
    udp.extend_from_slice(&src_port.to_be_bytes());
    udp.extend_from_slice(&dst_port.to_be_bytes());
    udp.extend_from_slice(&((UDP_HEADER_LEN + udp_data_len) as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(data);
    udp
}

/// A transport header (and any data after it) to put in an IPv4 datagram.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segment<'a> {
    pub(crate) protocol: u8,
    /// Offset of the 16-bit checksum field within `header`.
    pub(crate) checksum_at: usize,
    pub(crate) header: &'a [u8],
}

/// Replaces `buf` with an IPv4 header (RFC 791 §3.1) and `segment`, zero-filled to `len` bytes
/// (at least `segment.header.len()`), and fills in both checksums: the IPv4 header's and the
/// transport's over its pseudo-header (RFC 768, RFC 9293 §3.1).
pub(crate) fn emit_ipv4(
    buf: &mut Vec<u8>,
    ip_id: u16,
    (src, dst): (Ipv4Addr, Ipv4Addr),
    ecn: u8,
    segment: Segment<'_>,
    len: usize,
) {
    let total_len = (IPV4_HEADER_LEN + len) as u16;
    buf.clear();
    buf.reserve(usize::from(total_len));

    // IPv4 header, checksum filled in below.
    buf.push(IPV4_VERSION_IHL);
    buf.push(ecn & 0b11); // DSCP 0 and the ECN field
    buf.extend_from_slice(&total_len.to_be_bytes());
    buf.extend_from_slice(&ip_id.to_be_bytes());
    buf.extend_from_slice(&IPV4_FLAGS_DF.to_be_bytes());
    buf.push(IPV4_TTL);
    buf.push(segment.protocol);
    buf.extend_from_slice(&[0, 0]);
    buf.extend_from_slice(&src.octets());
    buf.extend_from_slice(&dst.octets());
    let ip_checksum = internet_checksum(0, &buf[..IPV4_HEADER_LEN]);
    buf[10..12].copy_from_slice(&ip_checksum.to_be_bytes());

    // The segment with a zero checksum, then the checksum.
    buf.extend_from_slice(segment.header);
    buf.resize(usize::from(total_len), 0);
    let at = IPV4_HEADER_LEN + segment.checksum_at;
    buf[at..at + 2].fill(0);
    let pseudo = pseudo_header_sum(src, dst, segment.protocol, len as u16);
    let checksum = match internet_checksum(pseudo, &buf[IPV4_HEADER_LEN..]) {
        // RFC 768: a computed 0 is sent as all ones, since 0 means "no checksum" (harmless for TCP).
        0 => 0xFFFF,
        c => c,
    };
    buf[at..at + 2].copy_from_slice(&checksum.to_be_bytes());
}

/// The one's-complement sum of the UDP/TCP pseudo-header (RFC 768, RFC 9293 §3.1): source and
/// destination address, zero, the protocol and the transport length.
fn pseudo_header_sum(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, len: u16) -> u32 {
    let mut pseudo = [0u8; 12];
    pseudo[0..4].copy_from_slice(&src.octets());
    pseudo[4..8].copy_from_slice(&dst.octets());
    pseudo[9] = protocol;
    pseudo[10..12].copy_from_slice(&len.to_be_bytes());
    ones_complement_sum(0, &pseudo)
}

/// The Internet checksum (RFC 1071): the one's complement of the one's-complement sum of
/// `bytes` as big-endian 16-bit words (an odd last byte padded with zero), starting from
/// `initial`.
fn internet_checksum(initial: u32, bytes: &[u8]) -> u16 {
    !(ones_complement_sum(initial, bytes) as u16)
}

/// Adds `bytes` to `sum` as 16-bit words and folds the carries back in (RFC 1071 §4.1).
fn ones_complement_sum(sum: u32, bytes: &[u8]) -> u32 {
    let mut sum = u64::from(sum);
    let mut words = bytes.chunks_exact(2);
    for w in &mut words {
        sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    sum as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(a: u8, port: u16) -> SocketAddrV4 {
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, a), port)
    }

    /// A UDP datagram of `data` zero-filled to `udp_data_len`, as `write_udp` lays it out.
    fn emit_ipv4_udp(
        buf: &mut Vec<u8>,
        ip_id: u16,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        data: &[u8],
        udp_data_len: usize,
    ) {
        let len = UDP_HEADER_LEN + udp_data_len;
        let mut udp = Vec::new();
        udp.extend_from_slice(&src.port().to_be_bytes());
        udp.extend_from_slice(&dst.port().to_be_bytes());
        udp.extend_from_slice(&(len as u16).to_be_bytes());
        udp.extend_from_slice(&[0, 0]);
        udp.extend_from_slice(data);
        let segment = Segment { protocol: IP_PROTOCOL_UDP, checksum_at: UDP_CHECKSUM_AT, header: &udp };
        emit_ipv4(buf, ip_id, (*src.ip(), *dst.ip()), 0, segment, len);
    }

    /// A 4-byte datagram from 10.0.0.1:5004 to 10.0.0.2:5004, checksums computed by hand.
    ///
    /// ```text
    /// IPv4 header words: 4500 0020 0007 4000 4011 [0000] 0a00 0001 0a00 0002
    ///   running sum 4520, 4527, 8527, c538, cf38, cf39, d939, d93b (no carry)
    ///   checksum !d93b = 26c4
    /// UDP pseudo-header: 0a00 0001 0a00 0002 0011 000c       sum 1420
    ///   header 138c 138c 000c [0000], data 8060 0001
    ///   running sum 1420+138c+138c = 3b38, 3b44, bba4, bba5 (no carry)
    ///   checksum !bba5 = 445a
    /// ```
    #[test]
    fn checksums_match_a_hand_computed_vector() {
        let mut buf = Vec::new();
        emit_ipv4_udp(&mut buf, 7, addr(1, 5004), addr(2, 5004), &[0x80, 0x60, 0x00, 0x01], 4);
        #[rustfmt::skip]
        let expected: [u8; 32] = [
            0x45, 0x00, 0x00, 0x20, 0x00, 0x07, 0x40, 0x00, 0x40, 0x11, 0x26, 0xC4,
            10, 0, 0, 1, 10, 0, 0, 2,
            0x13, 0x8C, 0x13, 0x8C, 0x00, 0x0C, 0x44, 0x5A,
            0x80, 0x60, 0x00, 0x01,
        ];
        assert_eq!(buf, expected);
        // A receiver's check: summing a header including its checksum gives all ones.
        assert_eq!(ones_complement_sum(0, &buf[..20]), 0xFFFF);
        let pseudo =
            pseudo_header_sum(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), IP_PROTOCOL_UDP, 12);
        assert_eq!(ones_complement_sum(pseudo, &buf[20..]), 0xFFFF);
    }

    #[test]
    fn tcp_segments_carry_a_valid_checksum_and_the_ecn_field() {
        // A pure ACK header (data offset 5, ACK) whose checksum field holds garbage: the writer
        // replaces it. 1460 payload bytes follow, as zeros.
        let mut header = [0u8; 20];
        header[0..2].copy_from_slice(&49152u16.to_be_bytes());
        header[2..4].copy_from_slice(&5201u16.to_be_bytes());
        header[12] = 5 << 4;
        header[13] = 0x10;
        header[16..18].copy_from_slice(&[0xAB, 0xCD]);
        let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let wire = w.write_tcp(Instant::ZERO, (src, dst), 0b10, &header, DataSize::bytes(1460)).unwrap();
        assert_eq!(wire, DataSize::bytes(1500));
        let buf = &w.buf;
        assert_eq!((buf[1], buf[9]), (0b10, IP_PROTOCOL_TCP), "ECT(0) in the ECN field; protocol 6");
        assert_eq!(ones_complement_sum(0, &buf[..20]), 0xFFFF);
        let pseudo = pseudo_header_sum(src, dst, IP_PROTOCOL_TCP, 1480);
        assert_eq!(ones_complement_sum(pseudo, &buf[20..]), 0xFFFF, "the receiver's TCP checksum check");
        let short = w.write_tcp(Instant::ZERO, (src, dst), 0, &header[..19], DataSize::ZERO).unwrap_err();
        assert!(matches!(short, CaptureError::BadTcpHeader { len: 19 }), "{short}");
    }

    #[test]
    fn raw_packets_are_written_as_given() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let packet: Vec<u8> = (0..=255u8).cycle().take(1500).collect();
        w.write_raw(Instant::ZERO + rtcbench_units::Duration::from_micros(2_500_001), &packet).unwrap();
        let long = w.write_raw(Instant::ZERO, &vec![0x45; SNAPLEN as usize + 1]).unwrap_err();
        assert!(matches!(long, CaptureError::DatagramTooLarge { data_len: 65_536, .. }), "{long}");
        let bytes = w.into_writer();
        let mut r = pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap();
        let first = r.next_packet().unwrap().unwrap();
        assert_eq!((first.orig_len, &first.data[..]), (1500, &packet[..]));
        assert_eq!(first.timestamp, std::time::Duration::from_micros(1_767_225_602_500_001));
        assert!(r.next_packet().is_none(), "the refused packet left nothing");
    }

    #[test]
    fn odd_lengths_and_carries_follow_rfc_1071() {
        // RFC 1071 §3 example: 0001 f203 f4f5 f6f7 sums to 0xddf2 after folding carries.
        assert_eq!(ones_complement_sum(0, &[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]), 0xDDF2);
        assert_eq!(internet_checksum(0, &[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]), 0x220D);
        // An odd last byte is the high half of a word.
        assert_eq!(ones_complement_sum(0, &[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
    }

    #[test]
    fn a_zero_udp_checksum_is_sent_as_all_ones() {
        // Find data whose sum makes the checksum 0: choose the last data word so that the sum
        // of everything else plus it is 0xFFFF.
        let mut buf = Vec::new();
        emit_ipv4_udp(&mut buf, 0, addr(1, 1), addr(2, 2), &[0, 0], 2);
        let pseudo =
            pseudo_header_sum(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), IP_PROTOCOL_UDP, 10);
        let rest = ones_complement_sum(pseudo, &buf[20..26]) as u16;
        let word = (0xFFFF - rest).to_be_bytes();
        emit_ipv4_udp(&mut buf, 0, addr(1, 1), addr(2, 2), &word, 2);
        assert_eq!(&buf[26..28], &[0xFF, 0xFF]);
        assert_eq!(ones_complement_sum(pseudo, &buf[20..]), 0xFFFF);
    }

    #[test]
    fn sizes_are_ip_and_udp_headers_plus_data_plus_payload() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let header = [0x80u8; 28];
        let wire = w.write_udp(Instant::ZERO, addr(1, 5004), addr(2, 5004), &header, DataSize::bytes(1200));
        assert_eq!(wire.unwrap(), DataSize::bytes(20 + 8 + 28 + 1200));
        let wire = w.write_udp(Instant::ZERO, addr(2, 5004), addr(1, 5004), &[0x81; 32], DataSize::ZERO);
        assert_eq!(wire.unwrap(), IPV4_UDP_OVERHEAD + DataSize::bytes(32));
        // The largest datagram fits; one more byte does not.
        let max = MAX_UDP_DATA - DataSize::bytes(12);
        let wire = w.write_udp(Instant::ZERO, addr(1, 5004), addr(2, 5004), &[0; 12], max);
        assert_eq!(wire.unwrap(), DataSize::bytes(65_535));
        let err = w.write_udp(Instant::ZERO, addr(1, 5004), addr(2, 5004), &[0; 13], max).unwrap_err();
        assert!(matches!(err, CaptureError::DatagramTooLarge { data_len: 13, .. }), "{err}");
        let huge = DataSize::bytes(u64::MAX);
        let err = w.write_udp(Instant::ZERO, addr(1, 5004), addr(2, 5004), &[0; 13], huge).unwrap_err();
        assert!(matches!(err, CaptureError::DatagramTooLarge { .. }), "{err}");

        // File: 24-byte header, then per packet a 16-byte record header and the datagram.
        let bytes = w.into_writer();
        assert_eq!(bytes.len(), 24 + (16 + 1256) + (16 + 60) + (16 + 65_535));
        // Little-endian magic for microsecond resolution, version 2.4, snaplen, LINKTYPE_RAW.
        assert_eq!(&bytes[0..8], &[0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0]);
        assert_eq!(&bytes[16..24], &[0xFF, 0xFF, 0, 0, 101, 0, 0, 0]);
        // First record: 2026-01-01 00:00:00 UTC, 1256 bytes captured of 1256.
        let ts_sec = (EPOCH_UNIX_SECS as u32).to_le_bytes();
        assert_eq!(&bytes[24..28], &ts_sec);
        assert_eq!(&bytes[28..40], &[0, 0, 0, 0, 0xE8, 0x04, 0, 0, 0xE8, 0x04, 0, 0]);
        // IP identification counts up: 0, then 1.
        assert_eq!(&bytes[40 + 4..40 + 6], &[0, 0]);
        assert_eq!(&bytes[24 + 16 + 1256 + 16 + 4..][..2], &[0, 1]);
    }

    #[test]
    fn timestamps_count_from_2026_in_microseconds() {
        assert_eq!(EPOCH_UNIX_SECS, 1_767_225_600);
        let t = Instant::from_micros(2_500_001);
        assert_eq!(pcap_timestamp(t).unwrap(), std::time::Duration::from_micros(1_767_225_602_500_001));
        // Before the run is fine back to 1970; 2106 is the end of 32-bit seconds.
        assert!(pcap_timestamp(Instant::from_secs(-1_767_225_600)).is_ok());
        assert!(pcap_timestamp(Instant::from_micros(-1_767_225_600_000_001)).is_err());
        let end = (1i64 << 32) - 1_767_225_600;
        assert!(pcap_timestamp(Instant::from_micros(end * 1_000_000 - 1)).is_ok());
        assert!(matches!(pcap_timestamp(Instant::from_secs(end)), Err(CaptureError::TimeOutOfRange { .. })));
    }
}
