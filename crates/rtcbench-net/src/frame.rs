//! A raw IP packet as an element carries it: the bytes a relay read from a TUN device or a
//! packet socket, measured, classified and marked from its own header.

use rtcbench_units::DataSize;
use rtcbench_wire::ip::{self, FiveTuple};
use rtcbench_wire::Ecn;

use crate::packet::{FlowKey, NetPacket};

/// An IPv4 or IPv6 packet in a buffer. Its size is the buffer's length; its flow is its 5-tuple
/// ([`FiveTuple`]); its ECN field is read and written in the header, an IPv4 checksum kept
/// valid. Bytes that are not an IP packet still pass: they are never marked (Not-ECT) and share
/// one flow key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpFrame {
    bytes: Vec<u8>,
    /// Computed once, on arrival: the header does not change on the way, but for its ECN field.
    key: FlowKey,
}

impl IpFrame {
    pub fn new(bytes: Vec<u8>) -> Self {
        let key = FiveTuple::parse(&bytes).map_or(FlowKey(0), |t| flow_key(&t));
        Self { bytes, key }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

impl NetPacket for IpFrame {
    fn size(&self) -> DataSize {
        DataSize::bytes(self.bytes.len() as u64)
    }

    fn flow_key(&self) -> FlowKey {
        self.key
    }

    fn ecn(&self) -> Ecn {
        ip::ecn(&self.bytes).unwrap_or(Ecn::NotEct)
    }

    fn set_ecn(&mut self, ecn: Ecn) {
        // Not IP: nothing to mark (and `ecn` reports Not-ECT, so no queue asks).
        let _ = ip::set_ecn(&mut self.bytes, ecn);
    }

    fn dscp(&self) -> u8 {
        // Not IP: default forwarding.
        ip::dscp(&self.bytes).unwrap_or(0)
    }
}

/// FNV-1a over the 5-tuple's fields: stable across platforms and runs, unlike `std`'s hasher, so
/// a relay classifies a flow the same way every time (FQ-CoDel perturbs it per queue).
fn flow_key(t: &FiveTuple) -> FlowKey {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for addr in [t.src, t.dst] {
        match addr {
            std::net::IpAddr::V4(a) => eat(&a.octets()),
            std::net::IpAddr::V6(a) => eat(&a.octets()),
        }
    }
    eat(&[t.protocol]);
    eat(&t.src_port.to_be_bytes());
    eat(&t.dst_port.to_be_bytes());
    FlowKey(h)
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, SocketAddrV4};

    use super::*;

    fn udp(src_port: u16, dst_port: u16, ecn: Ecn) -> IpFrame {
        let a = |last, port| SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, last), port);
        IpFrame::new(ip::ipv4_udp_datagram(a(1, src_port), a(2, dst_port), ecn, &[], 100).unwrap())
    }

    #[test]
    fn a_flow_is_its_five_tuple() {
        assert_eq!(udp(5004, 5004, Ecn::NotEct).flow_key(), udp(5004, 5004, Ecn::Ect1).flow_key());
        assert_ne!(udp(5004, 5004, Ecn::NotEct).flow_key(), udp(5005, 5004, Ecn::NotEct).flow_key());
        assert_ne!(udp(5004, 5004, Ecn::NotEct).flow_key(), udp(5004, 5005, Ecn::NotEct).flow_key());
    }

    #[test]
    fn size_is_the_buffer_and_ecn_is_the_header() {
        let mut f = udp(1, 2, Ecn::Ect0);
        assert_eq!(f.size(), DataSize::bytes(128));
        assert_eq!(f.ecn(), Ecn::Ect0);
        f.set_ecn(Ecn::Ce);
        assert_eq!(f.ecn(), Ecn::Ce);
        assert_eq!(ip::ecn(f.bytes()), Ok(Ecn::Ce));
    }

    #[test]
    fn bytes_that_are_not_ip_pass_unmarked() {
        let mut f = IpFrame::new(vec![0xff; 64]);
        assert_eq!((f.size(), f.ecn(), f.flow_key()), (DataSize::bytes(64), Ecn::NotEct, FlowKey(0)));
        f.set_ecn(Ecn::Ce);
        assert_eq!(f.into_bytes(), vec![0xff; 64]);
    }
}
