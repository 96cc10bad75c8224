//! The RTP retransmission payload format, RTX (RFC 4588 §4): a retransmitted packet is sent in a
//! separate retransmission stream, its payload the original sequence number (OSN) followed by
//! the original payload.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |                         RTP header                            |
//! |            OSN                |                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               |
//! |                  original RTP packet payload                  |
//! ```
//!
//! The RTP header of a retransmission (RFC 4588 §4):
//!
//! * **from the retransmission stream**: the SSRC (WebRTC multiplexes the retransmission stream
//!   by SSRC, so it differs from the original's; with session multiplexing it would be the same),
//!   the payload type (the RTX payload type, associated with the original one by the SDP `apt`
//!   parameter), and the sequence number, which counts retransmissions in the stream's own
//!   sequence space, one more than the previous retransmission;
//! * **kept from the original packet**: the timestamp (it MUST equal the original's), the marker
//!   bit, the CSRC list and the header extensions. Extensions whose value belongs to the send
//!   time, such as the transport-wide sequence number and abs-send-time, are written anew for
//!   each transmission, as libwebrtc does, since the feedback reports the retransmission itself.
//!
//! The OSN follows the RTP header (after its CSRCs and extension block) and is all a receiver
//! needs to put the original packet back in its place. Padding, if any, follows the original
//! payload. A packet on the retransmission stream too short for an OSN is not a retransmission:
//! [`rtx_osn`] errors on it (libwebrtc sends padding-only packets there for probing, with no OSN).

use crate::WireError;

/// Bytes of the OSN at the start of an RTX payload.
pub const OSN_LEN: usize = 2;

/// The original sequence number of the RTX `payload`: the bytes after the RTP header (from
/// [`RtpHeaderRepr::parse`](crate::RtpHeaderRepr::parse)'s header length on).
pub fn rtx_osn(payload: &[u8]) -> Result<u16, WireError> {
    match payload {
        [hi, lo, ..] => Ok(u16::from_be_bytes([*hi, *lo])),
        _ => Err(WireError::Truncated {
            what: "RTX original sequence number",
            needed: OSN_LEN,
            actual: payload.len(),
        }),
    }
}

/// Writes `osn` at the start of `payload`, the bytes after the RTP header; the original payload
/// goes after it, at `payload[OSN_LEN..]`. Returns the bytes written, [`OSN_LEN`].
pub fn write_osn(payload: &mut [u8], osn: u16) -> Result<usize, WireError> {
    let actual = payload.len();
    let field = payload.get_mut(..OSN_LEN).ok_or(WireError::BufferTooSmall {
        what: "RTX original sequence number",
        needed: OSN_LEN,
        actual,
    })?;
    field.copy_from_slice(&osn.to_be_bytes());
    Ok(OSN_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtp::RtpHeaderRepr;
    use proptest::prelude::*;
    use rtcbench_units::SeqNo;

    /// A retransmission of packet 0x1234 written by hand from RFC 3550 §5.1 and RFC 4588 §4.
    const HAND_WRITTEN: [u8; 17] = [
        0x80, // V=2, P=0, X=0, CC=0
        0xE1, // M=1 (kept from the original), PT=97 (the RTX payload type)
        0x00, 0x07, // sequence number 7 in the retransmission stream
        0xDE, 0xAD, 0xBE, 0xEF, // timestamp of the original packet
        0x0B, 0x0B, 0x0B, 0x0B, // SSRC of the retransmission stream
        0x12, 0x34, // OSN 0x1234
        0xAA, 0xBB, 0xCC, // original payload
    ];

    #[test]
    fn hand_written_retransmission_reads_back() {
        let (header, len) = RtpHeaderRepr::parse(&HAND_WRITTEN).unwrap();
        assert_eq!((header.payload_type, header.seq, header.ssrc, len), (97, SeqNo::new(7), 0x0B0B_0B0B, 12));
        assert_eq!(rtx_osn(&HAND_WRITTEN[len..]), Ok(0x1234));
        assert_eq!(&HAND_WRITTEN[len + OSN_LEN..], [0xAA, 0xBB, 0xCC]);

        let mut bytes = vec![0; 17];
        header.emit(&mut bytes).unwrap();
        assert_eq!(write_osn(&mut bytes[len..], 0x1234), Ok(OSN_LEN));
        bytes[len + OSN_LEN..].copy_from_slice(&[0xAA, 0xBB, 0xCC]);
        assert_eq!(bytes, HAND_WRITTEN);
    }

    #[test]
    fn short_payloads_are_errors() {
        for payload in [&[][..], &[0x12]] {
            assert_eq!(
                rtx_osn(payload),
                Err(WireError::Truncated {
                    what: "RTX original sequence number",
                    needed: 2,
                    actual: payload.len()
                })
            );
            let mut buf = payload.to_vec();
            assert!(matches!(write_osn(&mut buf, 1), Err(WireError::BufferTooSmall { needed: 2, .. })));
        }
        // The OSN alone, of a packet whose original payload was empty.
        assert_eq!(rtx_osn(&[0xFF, 0xFF]), Ok(65535));
    }

    proptest! {
        #[test]
        fn osns_round_trip(osn in any::<u16>(), rest in proptest::collection::vec(any::<u8>(), 0..8)) {
            let mut payload = vec![0; OSN_LEN];
            payload.extend(rest);
            write_osn(&mut payload, osn).unwrap();
            prop_assert_eq!(rtx_osn(&payload), Ok(osn));
        }
    }
}
