//! What a network element reads and writes in an IP header: the ECN field (RFC 3168 §5), the
//! DSCP a Wi-Fi MAC maps to an access category (RFC 2474 §3) and the 5-tuple a flow queue
//! classifies by (RFC 8290 §4.1). IPv4 (RFC 791 §3.1) and IPv6 (RFC 8200
//! §3), read in place from the packet's bytes.
//!
//! ```text
//! IPv4:  |Version|  IHL  |  DSCP     |ECN|          Total Length         |
//!        |  ...  Protocol (byte 9), Header Checksum (10-11), Source (12-15), Destination (16-19)
//! IPv6:  |Version| Traffic Class |           Flow Label                  |
//!        |  ...  Next Header (byte 6), Source (8-23), Destination (24-39)
//! ```
//!
//! The ECN field is the low two bits of IPv4's former TOS octet and of IPv6's Traffic Class
//! (RFC 3168 §5). Rewriting it in an IPv4 header updates the header checksum incrementally
//! (RFC 1624 §3, eqn. 3), as a router that marks CE does.
//!
//! Ports are read for TCP, UDP, UDP-Lite, DCCP and SCTP, whose first four bytes are the source
//! and destination ports, and only from the first fragment of an IPv4 datagram. IPv6 extension
//! headers are not walked: such a packet is classified by its addresses and first Next Header
//! with ports 0, as a packet of any other protocol is.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddrV4};

use crate::pcap::{emit_ipv4, udp_header, Segment, IP_PROTOCOL_UDP, UDP_CHECKSUM_AT, UDP_HEADER_LEN};
use crate::WireError;

/// ECN codepoint of a packet (RFC 3168 §5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ecn {
    #[default]
    NotEct,
    Ect1,
    Ect0,
    Ce,
}

impl Ecn {
    /// The two-bit ECN field of the IP header (RFC 3168 §5): 00, 01, 10, 11.
    pub fn bits(self) -> u8 {
        match self {
            Self::NotEct => 0b00,
            Self::Ect1 => 0b01,
            Self::Ect0 => 0b10,
            Self::Ce => 0b11,
        }
    }

    /// The codepoint of a two-bit ECN field (higher bits are ignored).
    pub fn from_bits(bits: u8) -> Self {
        match bits & 0b11 {
            0b00 => Self::NotEct,
            0b01 => Self::Ect1,
            0b10 => Self::Ect0,
            _ => Self::Ce,
        }
    }

    /// The names rtcbench gives the codepoints everywhere (the trace's `packets.ecn`, a Python
    /// controller's feedback, the live agents' messages), indexed by the two ECN bits.
    pub const NAMES: [&'static str; 4] = ["not-ect", "ect1", "ect0", "ce"];

    /// The codepoint's name ([`Ecn::NAMES`]).
    pub fn name(self) -> &'static str {
        Self::NAMES[usize::from(self.bits())]
    }

    /// The codepoint a name ([`Ecn::NAMES`]) stands for.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::NAMES.iter().position(|n| *n == name).map(|bits| Self::from_bits(bits as u8))
    }
}

/// IPv4's minimum header length (IHL 5).
const IPV4_MIN_HEADER_LEN: usize = 20;
/// IPv6's fixed header length.
const IPV6_HEADER_LEN: usize = 40;
/// Protocols whose header starts with a 16-bit source and destination port: TCP, UDP, DCCP,
/// SCTP, UDP-Lite (IANA protocol numbers).
const PORTED_PROTOCOLS: [u8; 5] = [6, 17, 33, 132, 136];

/// What identifies a packet's flow: addresses, protocol and ports (0 where the protocol has none,
/// or the packet does not carry them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FiveTuple {
    pub src: IpAddr,
    pub dst: IpAddr,
    /// IPv4 Protocol or IPv6 Next Header.
    pub protocol: u8,
    pub src_port: u16,
    pub dst_port: u16,
}

impl FiveTuple {
    /// The 5-tuple of an IPv4 or IPv6 packet.
    pub fn parse(packet: &[u8]) -> Result<Self, WireError> {
        let (src, dst, protocol, transport) = match version(packet)? {
            4 => {
                let ihl = ipv4_header_len(packet)?;
                let src = Ipv4Addr::from(<[u8; 4]>::try_from(&packet[12..16]).expect("4 bytes"));
                let dst = Ipv4Addr::from(<[u8; 4]>::try_from(&packet[16..20]).expect("4 bytes"));
                // Fragment offset: only the first fragment carries the transport header.
                let first_fragment = u16::from_be_bytes([packet[6], packet[7]]) & 0x1fff == 0;
                let transport = if first_fragment { &packet[ihl..] } else { &[][..] };
                (IpAddr::V4(src), IpAddr::V4(dst), packet[9], transport)
            }
            _ => {
                check_len(packet, IPV6_HEADER_LEN, "IPv6 header")?;
                let src = Ipv6Addr::from(<[u8; 16]>::try_from(&packet[8..24]).expect("16 bytes"));
                let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&packet[24..40]).expect("16 bytes"));
                (IpAddr::V6(src), IpAddr::V6(dst), packet[6], &packet[IPV6_HEADER_LEN..])
            }
        };
        let (src_port, dst_port) = match transport {
            [a, b, c, d, ..] if PORTED_PROTOCOLS.contains(&protocol) => {
                (u16::from_be_bytes([*a, *b]), u16::from_be_bytes([*c, *d]))
            }
            _ => (0, 0),
        };
        Ok(Self { src, dst, protocol, src_port, dst_port })
    }
}

/// The ECN field of an IPv4 or IPv6 packet.
pub fn ecn(packet: &[u8]) -> Result<Ecn, WireError> {
    match version(packet)? {
        4 => {
            ipv4_header_len(packet)?;
            Ok(Ecn::from_bits(packet[1]))
        }
        _ => {
            check_len(packet, IPV6_HEADER_LEN, "IPv6 header")?;
            Ok(Ecn::from_bits(packet[1] >> 4))
        }
    }
}

/// The DSCP of an IPv4 or IPv6 packet: the high six bits of IPv4's former TOS octet and of
/// IPv6's Traffic Class (RFC 2474 §3).
pub fn dscp(packet: &[u8]) -> Result<u8, WireError> {
    match version(packet)? {
        4 => {
            ipv4_header_len(packet)?;
            Ok(packet[1] >> 2)
        }
        _ => {
            check_len(packet, IPV6_HEADER_LEN, "IPv6 header")?;
            // Traffic Class straddles bytes 0 and 1: its high four bits are byte 0's low nibble.
            Ok(((packet[0] & 0x0f) << 2) | (packet[1] >> 6))
        }
    }
}

/// Rewrites the ECN field of an IPv4 or IPv6 packet in place, keeping an IPv4 header checksum
/// valid (RFC 1624 §3, eqn. 3: HC' = ~(~HC + ~m + m'), m the header's first 16-bit word).
pub fn set_ecn(packet: &mut [u8], ecn: Ecn) -> Result<(), WireError> {
    match version(packet)? {
        4 => {
            ipv4_header_len(packet)?;
            let old = u16::from_be_bytes([packet[0], packet[1]]);
            packet[1] = (packet[1] & !0b11) | ecn.bits();
            let new = u16::from_be_bytes([packet[0], packet[1]]);
            let checksum = u16::from_be_bytes([packet[10], packet[11]]);
            let sum = u32::from(!checksum) + u32::from(!old) + u32::from(new);
            let folded = (sum & 0xffff) + (sum >> 16);
            let folded = (folded & 0xffff) + (folded >> 16);
            packet[10..12].copy_from_slice(&(!(folded as u16)).to_be_bytes());
        }
        _ => {
            check_len(packet, IPV6_HEADER_LEN, "IPv6 header")?;
            packet[1] = (packet[1] & !0b0011_0000) | (ecn.bits() << 4);
        }
    }
    Ok(())
}

/// An IPv4/UDP datagram from `src` to `dst` with the `ecn` codepoint: `data` followed by
/// `payload` zero bytes, with valid IPv4 and UDP checksums (the datagrams a capture holds,
/// [`crate::pcap`]; identification 0, Don't Fragment, TTL 64).
pub fn ipv4_udp_datagram(
    src: SocketAddrV4,
    dst: SocketAddrV4,
    ecn: Ecn,
    data: &[u8],
    payload: usize,
) -> Result<Vec<u8>, WireError> {
    let udp_data_len = data.len() + payload;
    if udp_data_len > crate::pcap::MAX_UDP_DATA.as_bytes() as usize {
        return Err(WireError::InvalidField {
            field: "UDP data",
            reason: format!(
                "{udp_data_len} bytes, at most {} fit one IPv4 datagram",
                crate::pcap::MAX_UDP_DATA
            ),
        });
    }
    let udp = udp_header(src.port(), dst.port(), data, udp_data_len);
    let segment = Segment { protocol: IP_PROTOCOL_UDP, checksum_at: UDP_CHECKSUM_AT, header: &udp };
    let mut buf = Vec::new();
    emit_ipv4(&mut buf, 0, (*src.ip(), *dst.ip()), ecn.bits(), segment, UDP_HEADER_LEN + udp_data_len);
    Ok(buf)
}

/// The IP version of a packet, 4 or 6.
fn version(packet: &[u8]) -> Result<u8, WireError> {
    let first = *packet.first().ok_or(WireError::Truncated { what: "IP header", needed: 1, actual: 0 })?;
    match first >> 4 {
        v @ (4 | 6) => Ok(v),
        version => Err(WireError::NotIp { version }),
    }
}

/// The length of an IPv4 header (IHL × 4), checked against the packet.
fn ipv4_header_len(packet: &[u8]) -> Result<usize, WireError> {
    check_len(packet, IPV4_MIN_HEADER_LEN, "IPv4 header")?;
    let ihl = usize::from(packet[0] & 0x0f) * 4;
    if ihl < IPV4_MIN_HEADER_LEN {
        return Err(WireError::BadIpHeader("IPv4 IHL below 5 (20 bytes)"));
    }
    check_len(packet, ihl, "IPv4 header with options")?;
    Ok(ihl)
}

fn check_len(packet: &[u8], needed: usize, what: &'static str) -> Result<(), WireError> {
    if packet.len() < needed {
        return Err(WireError::Truncated { what, needed, actual: packet.len() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codepoint_has_one_name_and_back() {
        for bits in 0..4u8 {
            let ecn = Ecn::from_bits(bits);
            assert_eq!(Ecn::from_name(ecn.name()), Some(ecn));
            assert_eq!(Ecn::NAMES[usize::from(ecn.bits())], ecn.name());
        }
        assert_eq!(Ecn::Ce.name(), "ce");
        assert_eq!(Ecn::from_name("ECT(0)"), None);
    }

    fn addr(last: u8, port: u16) -> SocketAddrV4 {
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, last), port)
    }

    /// The RFC 1071 checksum over an IPv4 header is zero when the header's checksum is right.
    fn header_checksum_ok(packet: &[u8]) -> bool {
        let ihl = usize::from(packet[0] & 0x0f) * 4;
        let mut sum = 0u32;
        for w in packet[..ihl].chunks_exact(2) {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum == 0xffff
    }

    #[test]
    fn codepoints_round_trip_through_their_bits() {
        for e in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            assert_eq!(Ecn::from_bits(e.bits()), e);
        }
    }

    #[test]
    fn an_ipv4_udp_datagram_gives_its_five_tuple_and_ecn() {
        let p = ipv4_udp_datagram(addr(1, 5004), addr(2, 6000), Ecn::Ect1, b"rtp", 100).unwrap();
        assert_eq!(p.len(), 20 + 8 + 3 + 100);
        let t = FiveTuple::parse(&p).unwrap();
        assert_eq!(t.src, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(t.dst, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)));
        assert_eq!((t.protocol, t.src_port, t.dst_port), (17, 5004, 6000));
        assert_eq!(ecn(&p), Ok(Ecn::Ect1));
        assert!(header_checksum_ok(&p));
    }

    #[test]
    fn marking_ce_keeps_the_ipv4_header_checksum_valid() {
        for from in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            for to in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
                let mut p = ipv4_udp_datagram(addr(1, 1), addr(2, 2), from, &[], 0).unwrap();
                let before = p.clone();
                set_ecn(&mut p, to).unwrap();
                assert_eq!(ecn(&p), Ok(to));
                assert!(header_checksum_ok(&p), "{from:?} -> {to:?}");
                // Only the ECN bits and the checksum changed.
                assert_eq!(p[1] & !0b11, before[1] & !0b11);
                let unchanged = |b: &[u8]| [&b[..1], &b[2..10], &b[12..]].concat();
                assert_eq!(unchanged(&p), unchanged(&before));
            }
        }
    }

    #[test]
    fn ipv6_carries_ecn_in_its_traffic_class() {
        // Version 6, traffic class 0xb9 (DSCP 46 = EF, ECN 01), flow label 0x12345, UDP.
        let mut p = vec![0x6b, 0x91, 0x23, 0x45, 0, 8, 17, 64];
        p.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        p.extend_from_slice(
            &Ipv6Addr::from([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]).octets(),
        );
        p.extend_from_slice(&[0x13, 0x8c, 0x17, 0x70, 0, 8, 0, 0]);
        assert_eq!(ecn(&p), Ok(Ecn::Ect1));
        assert_eq!(dscp(&p), Ok(46));
        let t = FiveTuple::parse(&p).unwrap();
        assert_eq!((t.protocol, t.src_port, t.dst_port), (17, 5004, 6000));
        assert_eq!(t.src, IpAddr::V6(Ipv6Addr::LOCALHOST));
        set_ecn(&mut p, Ecn::Ce).unwrap();
        assert_eq!(ecn(&p), Ok(Ecn::Ce));
        // DSCP and flow label untouched.
        assert_eq!(&p[..4], &[0x6b, 0xb1, 0x23, 0x45]);
    }

    #[test]
    fn ipv4_carries_its_dscp_above_the_ecn_bits() {
        let mut p = ipv4_udp_datagram(addr(1, 1), addr(2, 2), Ecn::Ect0, &[], 0).unwrap();
        assert_eq!(dscp(&p), Ok(0));
        p[1] = (34 << 2) | Ecn::Ect0.bits(); // AF41
        assert_eq!((dscp(&p), ecn(&p)), (Ok(34), Ok(Ecn::Ect0)));
        assert_eq!(dscp(&[0x20; 40]), Err(WireError::NotIp { version: 2 }));
    }

    #[test]
    fn later_fragments_and_portless_protocols_have_no_ports() {
        let mut p = ipv4_udp_datagram(addr(1, 5004), addr(2, 6000), Ecn::NotEct, &[], 10).unwrap();
        p[6..8].copy_from_slice(&0x0010u16.to_be_bytes()); // fragment offset 16 × 8 bytes
        assert_eq!(FiveTuple::parse(&p).map(|t| (t.src_port, t.dst_port)), Ok((0, 0)));
        let mut p = ipv4_udp_datagram(addr(1, 5004), addr(2, 6000), Ecn::NotEct, &[], 10).unwrap();
        p[9] = 1; // ICMP
        assert_eq!(FiveTuple::parse(&p).map(|t| (t.protocol, t.src_port)), Ok((1, 0)));
    }

    #[test]
    fn what_is_not_an_ip_packet_is_an_error_not_a_panic() {
        assert!(matches!(FiveTuple::parse(&[]), Err(WireError::Truncated { .. })));
        assert_eq!(ecn(&[0x20; 40]), Err(WireError::NotIp { version: 2 }));
        assert!(matches!(ecn(&[0x45; 19]), Err(WireError::Truncated { needed: 20, .. })));
        assert_eq!(
            set_ecn(&mut [0x44; 40], Ecn::Ce),
            Err(WireError::BadIpHeader("IPv4 IHL below 5 (20 bytes)"))
        );
        // IHL 15 (60 bytes) in a 40-byte packet.
        assert!(matches!(FiveTuple::parse(&[0x4f; 40]), Err(WireError::Truncated { needed: 60, .. })));
        assert!(matches!(ecn(&[0x60; 39]), Err(WireError::Truncated { needed: 40, .. })));
    }
}
