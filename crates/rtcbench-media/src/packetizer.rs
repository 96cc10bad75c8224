//! RTP packetization of a frame: split its payload into packets of at most `max_payload` bytes,
//! as evenly as possible, as libwebrtc's packetizers do (`RtpPacketizer::SplitAboutEqually`):
//! n = ceil(size / max_payload) packets whose sizes differ by at most one byte. Equal sizes avoid
//! a tiny last packet, which would distort per-packet delay measurements.
//!
//! The first packet carries the start-of-frame flag (e.g. VP8's S bit), the last one the RTP
//! marker bit.

use rtcbench_units::DataSize;

/// Default maximum payload per packet: libwebrtc's usual video payload budget, which leaves room
/// for RTP header extensions and SRTP under a 1500-byte MTU.
pub const DEFAULT_MAX_PAYLOAD: DataSize = DataSize::bytes(1200);

/// One packet of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketPlan {
    pub payload: DataSize,
    /// First packet of the frame (start-of-frame flag of the payload format).
    pub first_in_frame: bool,
    /// Last packet of the frame (RTP marker bit).
    pub last_in_frame: bool,
    /// 0-based position in the frame.
    pub index_in_frame: u32,
    pub packets_in_frame: u32,
}

/// Splits frames into packets of at most `max_payload` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packetizer {
    max_payload: DataSize,
}

impl Default for Packetizer {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_PAYLOAD)
    }
}

impl Packetizer {
    /// # Panics
    /// If `max_payload` is zero.
    pub fn new(max_payload: DataSize) -> Self {
        assert!(!max_payload.is_zero(), "max_payload must be at least 1 byte");
        Self { max_payload }
    }

    pub fn max_payload(&self) -> DataSize {
        self.max_payload
    }

    /// The packets of a frame of `frame_size` bytes, in sending order. An empty frame still gives
    /// one (empty) packet, which carries the marker bit.
    pub fn packetize(&self, frame_size: DataSize) -> FramePackets {
        let size = frame_size.as_bytes();
        let count = size.div_ceil(self.max_payload.as_bytes()).max(1);
        FramePackets { size, count, next: 0 }
    }
}

/// Iterator over the packets of one frame (see [`Packetizer::packetize`]).
#[derive(Clone, Debug)]
pub struct FramePackets {
    size: u64,
    count: u64,
    next: u64,
}

impl Iterator for FramePackets {
    type Item = PacketPlan;

    fn next(&mut self) -> Option<PacketPlan> {
        if self.next >= self.count {
            return None;
        }
        let i = self.next;
        self.next += 1;
        let base = self.size / self.count;
        // The last `size % count` packets carry one extra byte.
        let larger_from = self.count - self.size % self.count;
        let payload = base + u64::from(i >= larger_from);
        Some(PacketPlan {
            payload: DataSize::bytes(payload),
            first_in_frame: i == 0,
            last_in_frame: i + 1 == self.count,
            index_in_frame: i as u32,
            packets_in_frame: self.count as u32,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.count - self.next) as usize;
        (left, Some(left))
    }
}

impl ExactSizeIterator for FramePackets {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equal_split() {
        let p = Packetizer::default();
        let sizes: Vec<u64> = p.packetize(DataSize::bytes(2401)).map(|x| x.payload.as_bytes()).collect();
        assert_eq!(sizes, vec![800, 800, 801]);
        let one: Vec<PacketPlan> = p.packetize(DataSize::bytes(1200)).collect();
        assert_eq!(one.len(), 1);
        assert!(one[0].first_in_frame && one[0].last_in_frame);
        let empty: Vec<PacketPlan> = p.packetize(DataSize::ZERO).collect();
        assert_eq!(empty.len(), 1);
        assert_eq!(empty[0].payload, DataSize::ZERO);
    }

    #[test]
    fn flags_and_indices() {
        let pkts: Vec<PacketPlan> = Packetizer::default().packetize(DataSize::bytes(5000)).collect();
        assert_eq!(pkts.len(), 5);
        for (i, p) in pkts.iter().enumerate() {
            assert_eq!(p.index_in_frame as usize, i);
            assert_eq!(p.packets_in_frame, 5);
            assert_eq!(p.first_in_frame, i == 0);
            assert_eq!(p.last_in_frame, i == 4);
        }
    }

    proptest! {
        #[test]
        fn split_is_complete_bounded_and_even(size in 0u64..200_000, max in 1u64..3000) {
            let p = Packetizer::new(DataSize::bytes(max));
            let it = p.packetize(DataSize::bytes(size));
            let n = it.len();
            let pkts: Vec<PacketPlan> = it.collect();
            prop_assert_eq!(pkts.len(), n);
            prop_assert_eq!(n as u64, size.div_ceil(max).max(1));
            let sizes: Vec<u64> = pkts.iter().map(|p| p.payload.as_bytes()).collect();
            prop_assert_eq!(sizes.iter().sum::<u64>(), size);
            prop_assert!(sizes.iter().all(|&s| s <= max));
            let spread = sizes.iter().max().unwrap() - sizes.iter().min().unwrap();
            prop_assert!(spread <= 1);
            prop_assert!(pkts[0].first_in_frame && pkts[n - 1].last_in_frame);
            prop_assert_eq!(pkts.iter().filter(|p| p.last_in_frame).count(), 1);
        }
    }
}
