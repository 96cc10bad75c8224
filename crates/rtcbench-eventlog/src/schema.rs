//! The messages of the RTC event log's new format that rtcbench reads, written from the
//! format's documented field numbers and types (libwebrtc's `rtc_event_log2.proto`, package
//! `webrtc.rtclog2`). Fields rtcbench does not read are left out: protobuf skips them, so a
//! log with more fields, or from a newer writer, still reads.
//!
//! Each message is a *batch*: its plain fields hold the first event, `number_of_deltas` says
//! how many more follow, and each `*_deltas` field holds one column of them (`crate::delta`).
//! Enumerations are read as their `int32` numbers.

use prost::Message;

/// Top-level field numbers of `EventStream`. A log is a concatenation of such fields; the
/// reader walks them itself so that an error can name the event and its offset.
pub mod field {
    /// `repeated Event stream = 1`: the legacy format's only field.
    pub const LEGACY_EVENT: u32 = 1;
    pub const INCOMING_RTP: u32 = 2;
    pub const OUTGOING_RTP: u32 = 3;
    pub const INCOMING_RTCP: u32 = 4;
    pub const OUTGOING_RTCP: u32 = 5;
    pub const BEGIN_LOG: u32 = 16;
    pub const END_LOG: u32 = 17;
    pub const LOSS_BASED_BWE: u32 = 18;
    pub const DELAY_BASED_BWE: u32 = 19;
    pub const PROBE_CLUSTER: u32 = 21;
    pub const PROBE_SUCCESS: u32 = 22;
    pub const PROBE_FAILURE: u32 = 23;
    pub const ALR_STATE: u32 = 24;
    pub const ROUTE_CHANGE: u32 = 32;
    pub const TARGET_RATE: u32 = 33;
    pub const AUDIO_RECV_CONFIG: u32 = 101;
    pub const AUDIO_SEND_CONFIG: u32 = 102;
    pub const VIDEO_RECV_CONFIG: u32 = 103;
    pub const VIDEO_SEND_CONFIG: u32 = 104;
}

/// `IncomingRtpPackets` and `OutgoingRtpPackets`: the two share their fields.
#[derive(Clone, PartialEq, Message)]
pub struct RtpPackets {
    #[prost(int64, optional, tag = "1")]
    pub timestamp_ms: Option<i64>,
    #[prost(bool, optional, tag = "2")]
    pub marker: Option<bool>,
    #[prost(uint32, optional, tag = "3")]
    pub payload_type: Option<u32>,
    #[prost(uint32, optional, tag = "4")]
    pub sequence_number: Option<u32>,
    #[prost(fixed32, optional, tag = "5")]
    pub rtp_timestamp: Option<u32>,
    #[prost(fixed32, optional, tag = "6")]
    pub ssrc: Option<u32>,
    /// Media payload bytes, without RTP header or padding.
    #[prost(uint32, optional, tag = "8")]
    pub payload_size: Option<u32>,
    #[prost(uint32, optional, tag = "9")]
    pub header_size: Option<u32>,
    #[prost(uint32, optional, tag = "10")]
    pub padding_size: Option<u32>,
    #[prost(uint32, optional, tag = "11")]
    pub number_of_deltas: Option<u32>,
    #[prost(uint32, optional, tag = "15")]
    pub transport_sequence_number: Option<u32>,
    #[prost(int32, optional, tag = "16")]
    pub transmission_time_offset: Option<i32>,
    #[prost(uint32, optional, tag = "17")]
    pub absolute_send_time: Option<u32>,
    #[prost(uint32, optional, tag = "19")]
    pub audio_level: Option<u32>,
    #[prost(bytes = "vec", optional, tag = "101")]
    pub timestamp_ms_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "102")]
    pub marker_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "103")]
    pub payload_type_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "104")]
    pub sequence_number_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "105")]
    pub rtp_timestamp_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "106")]
    pub ssrc_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "108")]
    pub payload_size_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "109")]
    pub header_size_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "110")]
    pub padding_size_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "115")]
    pub transport_sequence_number_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "116")]
    pub transmission_time_offset_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "117")]
    pub absolute_send_time_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "119")]
    pub audio_level_deltas: Option<Vec<u8>>,
}

/// `IncomingRtcpPackets` and `OutgoingRtcpPackets`: whole RTCP packets as sent or received.
#[derive(Clone, PartialEq, Message)]
pub struct RtcpPackets {
    #[prost(int64, optional, tag = "1")]
    pub timestamp_ms: Option<i64>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub raw_packet: Option<Vec<u8>>,
    #[prost(uint32, optional, tag = "3")]
    pub number_of_deltas: Option<u32>,
    #[prost(bytes = "vec", optional, tag = "101")]
    pub timestamp_ms_deltas: Option<Vec<u8>>,
    /// The later packets: every length as a varint, then every packet.
    #[prost(bytes = "vec", optional, tag = "102")]
    pub raw_packet_blobs: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct BeginLogEvent {
    #[prost(int64, optional, tag = "1")]
    pub timestamp_ms: Option<i64>,
    #[prost(uint32, optional, tag = "2")]
    pub version: Option<u32>,
    #[prost(int64, optional, tag = "3")]
    pub utc_time_ms: Option<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct EndLogEvent {
    #[prost(int64, optional, tag = "1")]
    pub timestamp_ms: Option<i64>,
}

/// The loss-based estimator's updates.
#[derive(Clone, PartialEq, Message)]
pub struct LossBasedBweUpdates {
    #[prost(int64, optional, tag = "1")]
    pub timestamp_ms: Option<i64>,
    #[prost(uint32, optional, tag = "2")]
    pub bitrate_bps: Option<u32>,
    /// floor(256 x lost / total) since the last receiver report.
    #[prost(uint32, optional, tag = "3")]
    pub fraction_loss: Option<u32>,
    #[prost(uint32, optional, tag = "4")]
    pub total_packets: Option<u32>,
    #[prost(uint32, optional, tag = "5")]
    pub number_of_deltas: Option<u32>,
    #[prost(bytes = "vec", optional, tag = "101")]
    pub timestamp_ms_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "102")]
    pub bitrate_bps_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "103")]
    pub fraction_loss_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "104")]
    pub total_packets_deltas: Option<Vec<u8>>,
}

/// The delay-based estimator's updates: its estimate and the over-use detector's state
/// (0 unknown, 1 normal, 2 underusing, 3 overusing).
#[derive(Clone, PartialEq, Message)]
pub struct DelayBasedBweUpdates {
    #[prost(int64, optional, tag = "1")]
    pub timestamp_ms: Option<i64>,
    #[prost(uint32, optional, tag = "2")]
    pub bitrate_bps: Option<u32>,
    #[prost(int32, optional, tag = "3")]
    pub detector_state: Option<i32>,
    #[prost(uint32, optional, tag = "4")]
    pub number_of_deltas: Option<u32>,
    #[prost(bytes = "vec", optional, tag = "101")]
    pub timestamp_ms_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "102")]
    pub bitrate_bps_deltas: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "103")]
    pub detector_state_deltas: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct BweProbeCluster {
    #[prost(int64, optional, tag = "1")]
    pub timestamp_ms: Option<i64>,
    #[prost(uint32, optional, tag = "2")]
    pub id: Option<u32>,
    #[prost(uint32, optional, tag = "3")]
    pub bitrate_bps: Option<u32>,
    #[prost(uint32, optional, tag = "4")]
    pub min_packets: Option<u32>,
    #[prost(uint32, optional, tag = "5")]
    pub min_bytes: Option<u32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct BweProbeResultSuccess {
    #[prost(int64, optional, tag = "1")]
    pub timestamp_ms: Option<i64>,
    #[prost(uint32, optional, tag = "2")]
    pub id: Option<u32>,
    #[prost(uint32, optional, tag = "3")]
    pub bitrate_bps: Option<u32>,
}

/// A failed probe: 0 unknown, 1 invalid send/receive interval, 2 invalid send/receive ratio,
/// 3 timeout.
#[derive(Clone, PartialEq, Message)]
pub struct BweProbeResultFailure {
    #[prost(int64, optional, tag = "1")]
    pub timestamp_ms: Option<i64>,
    #[prost(uint32, optional, tag = "2")]
    pub id: Option<u32>,
    #[prost(int32, optional, tag = "3")]
    pub failure: Option<i32>,
}

/// Application-limited region: the sender has less to send than the estimate allows.
#[derive(Clone, PartialEq, Message)]
pub struct AlrState {
    #[prost(int64, optional, tag = "1")]
    pub timestamp_ms: Option<i64>,
    #[prost(bool, optional, tag = "2")]
    pub in_alr: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
pub struct RouteChange {
    #[prost(int64, optional, tag = "1")]
    pub timestamp_ms: Option<i64>,
    #[prost(bool, optional, tag = "2")]
    pub connected: Option<bool>,
    /// Per-packet overhead of the route, bytes.
    #[prost(uint32, optional, tag = "3")]
    pub overhead: Option<u32>,
}

/// The target rate handed to the encoders.
#[derive(Clone, PartialEq, Message)]
pub struct TargetRateBweUpdates {
    #[prost(int64, optional, tag = "1")]
    pub timestamp_ms: Option<i64>,
    #[prost(int32, optional, tag = "2")]
    pub target_rate: Option<i32>,
}

/// `AudioSendStreamConfig` and `VideoSendStreamConfig` (field 4, the header extensions, is
/// not read).
#[derive(Clone, PartialEq, Message)]
pub struct SendStreamConfig {
    #[prost(int64, optional, tag = "1")]
    pub timestamp_ms: Option<i64>,
    #[prost(uint32, optional, tag = "2")]
    pub ssrc: Option<u32>,
    /// Video only (reserved in the audio config).
    #[prost(uint32, optional, tag = "3")]
    pub rtx_ssrc: Option<u32>,
}

/// `AudioRecvStreamConfig` and `VideoRecvStreamConfig` (field 5, the header extensions, is
/// not read).
#[derive(Clone, PartialEq, Message)]
pub struct RecvStreamConfig {
    #[prost(int64, optional, tag = "1")]
    pub timestamp_ms: Option<i64>,
    #[prost(uint32, optional, tag = "2")]
    pub remote_ssrc: Option<u32>,
    #[prost(uint32, optional, tag = "3")]
    pub local_ssrc: Option<u32>,
    /// Video only (reserved in the audio config).
    #[prost(uint32, optional, tag = "4")]
    pub rtx_ssrc: Option<u32>,
}
