//! The one error type of this crate. Every parser returns it instead of panicking, so a malformed
//! packet in live mode can be counted and dropped (STYLE.md §7).

/// Why bytes could not be parsed or a `Repr` could not be emitted.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The input ends before the structure it announces.
    #[error("truncated {what}: need {needed} bytes, have {actual}")]
    Truncated {
        /// The structure being parsed, e.g. "RTP fixed header".
        what: &'static str,
        /// Bytes the structure needs.
        needed: usize,
        /// Bytes available.
        actual: usize,
    },
    /// The output buffer given to an `emit` is shorter than `buffer_len()`.
    #[error("output buffer too small for {what}: need {needed} bytes, have {actual}")]
    BufferTooSmall {
        /// The structure being emitted.
        what: &'static str,
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        actual: usize,
    },
    /// The version field is not 2 (RFC 3550 §5.1 for RTP, §6.4.1 for RTCP).
    #[error("unsupported {what} version {version}, only version 2 is allowed")]
    BadVersion {
        /// "RTP" or "RTCP".
        what: &'static str,
        /// The version found.
        version: u8,
    },
    /// The RTP padding count (last octet of a padded packet, RFC 3550 §5.1) is 0 or longer than
    /// the payload.
    #[error("invalid RTP padding: {0}")]
    BadPadding(&'static str),
    /// A header extension element (RFC 8285 §4.2) is malformed or has the wrong length for the
    /// extension its ID is bound to in this crate.
    #[error("bad RTP header extension (id {id}): {reason}")]
    BadExtension {
        /// The one-byte-form extension ID.
        id: u8,
        /// What is wrong, and what is allowed.
        reason: String,
    },
    /// A field of a `Repr` cannot be encoded (out of range for its wire width).
    #[error("cannot encode {field}: {reason}")]
    InvalidField {
        /// The field name, as in the `Repr`.
        field: &'static str,
        /// The value found and the allowed range.
        reason: String,
    },
    /// The RTCP packet is valid but of another type than the parser expects.
    #[error("expected {expected}, found RTCP packet type {packet_type} with FMT/RC {fmt}")]
    WrongPacketType {
        /// What the caller asked for, e.g. "transport-wide CC feedback (PT 205, FMT 15)".
        expected: &'static str,
        /// The packet type found.
        packet_type: u8,
        /// The FMT (or RC) field found.
        fmt: u8,
    },
    /// A transport-wide feedback packet is inconsistent (TWCC-01 §3.1), e.g. fewer status
    /// symbols than its packet status count.
    #[error("malformed transport-wide feedback: {0}")]
    BadTransportFeedback(String),
    /// An RFC 8888 congestion control feedback packet is inconsistent (RFC 8888 §3.1), e.g. a
    /// report block announces more metric blocks than the packet holds.
    #[error("malformed RFC 8888 congestion control feedback: {0}")]
    BadCongestionControlFeedback(String),
    /// A REMB packet (draft-alvestrand-rmcat-remb-03 §2.2) is malformed, e.g. its SSRC list does
    /// not match its Num SSRC field or its bitrate overflows 64 bits.
    #[error("malformed REMB: {0}")]
    BadRemb(String),
    /// A generic NACK, PLI or FIR packet (RFC 4585 §6.2.1, §6.3.1; RFC 5104 §4.3.1) is malformed,
    /// e.g. a NACK without FCI entries or a PLI with a non-empty FCI.
    #[error("malformed {message}: {reason}")]
    BadFeedback {
        /// "generic NACK", "PLI" or "FIR".
        message: &'static str,
        /// What is wrong, and what is allowed.
        reason: String,
    },
    /// A ULPFEC or FlexFEC header (RFC 5109 §7.3, RFC 8627 §4.2) uses a variant rtcbench does not
    /// model, or a recovery was asked of packets that cannot give it (RFC 5109 §9, RFC 8627 §6.3).
    #[error("FEC: {0}")]
    BadFec(String),
    /// This message kind is parsed (as [`RtcpMessage::Other`](crate::rtcp::RtcpMessage::Other))
    /// but cannot be emitted.
    #[error("cannot emit {0}")]
    Unsupported(&'static str),
    /// The input given to an encoder is not usable, e.g. sequence numbers not increasing.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The first nibble of a packet given as IP is neither 4 nor 6 (RFC 791 §3.1, RFC 8200 §3).
    #[error("not an IP packet: version {version}, only 4 and 6 are allowed")]
    NotIp {
        /// The version found.
        version: u8,
    },
    /// An IP header is inconsistent, e.g. an IPv4 IHL below 5.
    #[error("bad IP header: {0}")]
    BadIpHeader(&'static str),
    /// An RTCP packet was rejected by the `rtcp-types` parser.
    #[error("RTCP parse error: {0}")]
    Rtcp(#[from] rtcp_types::RtcpParseError),
    /// The `rtcp-types` writer refused a packet.
    #[error("RTCP write error: {0}")]
    RtcpWrite(#[from] rtcp_types::RtcpWriteError),
}

impl From<rtp_types::RtpParseError> for WireError {
    /// `RtpParseError` is neither `Eq` nor `Clone`, so its cases are mapped onto ours.
    fn from(e: rtp_types::RtpParseError) -> Self {
        match e {
            rtp_types::RtpParseError::UnsupportedVersion(version) => {
                Self::BadVersion { what: "RTP", version }
            }
            rtp_types::RtpParseError::Truncated { expected, actual } => {
                Self::Truncated { what: "RTP packet", needed: expected, actual }
            }
            rtp_types::RtpParseError::PaddingInvalid(_) => Self::BadPadding("padding count is 0"),
        }
    }
}
