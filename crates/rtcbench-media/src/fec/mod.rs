//! The sender's forward error correction as libwebrtc runs ULPFEC (RFC 5109) for video: how much
//! protection to send, which media packets each FEC packet covers, and when.
//!
//! * [`protection`]: the protection level from loss, RTT, rate and resolution
//!   (modules/video_coding/media_opt_util.cc and fec_controller_default.cc): a Q8 *FEC rate* (FEC
//!   packets per media packet × 256) for delta frames and one for keyframes, and how many frames one
//!   set of FEC packets may span.
//! * [`generator`]: the RTP module's side (modules/rtp_rtcp/source/ulpfec_generator.cc): media
//!   packets are collected until a frame ends and enough are collected, then
//!   [`num_fec_packets`] FEC packets are made over them with [`packet_masks`].
//!
//! The XOR itself and the FEC header formats are in `rtcbench_wire::fec`; this module decides
//! only *which* packets each FEC packet protects.
//!
//! # Data carried from libwebrtc
//!
//! Two of libwebrtc's choices are tables computed offline that no formula reproduces, so they are
//! carried as data (figures, cited here; not code):
//!
//! * `data/fec_rate_table.txt`: `kFecRateTable` (modules/video_coding/fec_rate_table.h), the
//!   delta-frame protection factor for 50 effective-rate rows × 129 loss columns (loss in 1/255
//!   up to 128/255), 6450 values. libwebrtc's own comment calls it "a big static table"
//!   it would like to replace with a closed form; none exists yet.
//! * `data/fec_masks_random.txt`: the "random" packet masks for 1 to 12 media packets
//!   (`kPacketMaskRandomTbl`, modules/rtp_rtcp/source/fec_private_tables_random.cc), the mask
//!   type libwebrtc uses for video (`FecControllerDefault::UpdateFecRates` sets `kFecMaskRandom`
//!   for delta and key frames). From 13 media packets libwebrtc interleaves: FEC packet `r` of `m`
//!   protects media packets `r, r + m, r + 2m, …` (`PacketMaskTable::LookUp`); so does
//!   [`packet_masks`].
//!
//! Both were transcribed twice, from two independent copies of the libwebrtc tree, and the
//! transcriptions compared equal; the tests check their shape.

pub mod generator;
pub mod protection;

use std::sync::OnceLock;

/// The most media packets one set of FEC packets protects (libwebrtc `kUlpfecMaxMediaPackets`:
/// a ULPFEC mask has at most 48 bits, RFC 5109 §7.4 with L = 1).
pub const MAX_MEDIA_PACKETS: usize = 48;

/// Rows and columns of `kFecRateTable`.
pub(crate) const RATE_TABLE_ROWS: usize = 50;
/// libwebrtc `kPacketLossMax`: loss columns 0..=128 (in 1/255).
pub(crate) const PACKET_LOSS_MAX: usize = 129;
/// Media packet counts the random mask table covers.
const MASK_TABLE_MAX: usize = 12;

/// The lines of a data file that are not comments (`#`, naming the source).
fn data_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.starts_with('#'))
}

/// `kFecRateTable[row * 129 + loss]` (see module docs).
pub(crate) fn rate_table() -> &'static [u8] {
    static TABLE: OnceLock<Vec<u8>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let values: Vec<u8> = data_lines(include_str!("../../data/fec_rate_table.txt"))
            .flat_map(str::split_whitespace)
            .map(|v| v.parse().expect("fec_rate_table.txt holds integers 0..=255"))
            .collect();
        assert_eq!(values.len(), RATE_TABLE_ROWS * PACKET_LOSS_MAX, "fec_rate_table.txt is 50 × 129");
        values
    })
}

/// The random mask table: `masks[k - 1][m - 1]` holds the `m` rows for `k` media packets, bit `j`
/// of a row set when it protects media packet `j` (the least significant bit is the first media
/// packet).
fn mask_table() -> &'static [Vec<Vec<u64>>] {
    static TABLE: OnceLock<Vec<Vec<Vec<u64>>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table: Vec<Vec<Vec<u64>>> = (1..=MASK_TABLE_MAX).map(Vec::with_capacity).collect();
        for line in data_lines(include_str!("../../data/fec_masks_random.txt")) {
            let mut fields = line.split_whitespace();
            let mut number = || fields.next().and_then(|f| f.parse::<usize>().ok());
            let (k, m) = (number().expect("k"), number().expect("m"));
            let rows: Vec<u64> = line
                .split_whitespace()
                .skip(2)
                .map(|row| row.chars().enumerate().fold(0, |acc, (j, c)| acc | u64::from(c == '1') << j))
                .collect();
            assert!(rows.len() == m && table[k - 1].len() == m - 1, "fec_masks_random.txt: line {k} {m}");
            table[k - 1].push(rows);
        }
        table
    })
}

/// How many FEC packets `media` media packets get at FEC rate `rate` (Q8): the rate's share
/// rounded half up, at least one when the rate is not zero (libwebrtc
/// `ForwardErrorCorrection::NumFecPackets`).
pub fn num_fec_packets(media: usize, rate: u8) -> usize {
    let n = (media * usize::from(rate) + (1 << 7)) >> 8;
    if rate > 0 && n == 0 {
        1
    } else {
        n
    }
}

/// The masks of `fec` FEC packets over `media` media packets, one row per FEC packet, bit `j`
/// set when the row protects media packet `j` (see the module docs for where they come from).
///
/// `media` must be 1..=[`MAX_MEDIA_PACKETS`] and `fec` 1..=`media`.
pub fn packet_masks(media: usize, fec: usize) -> Vec<u64> {
    assert!((1..=MAX_MEDIA_PACKETS).contains(&media) && (1..=media).contains(&fec), "{fec} of {media}");
    if media <= MASK_TABLE_MAX {
        return mask_table()[media - 1][fec - 1].clone();
    }
    (0..fec).map(|row| (row..media).step_by(fec).fold(0, |acc, j| acc | 1 << j)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_table_protects_nothing_without_loss_and_at_most_half() {
        let table = rate_table();
        for row in table.chunks(PACKET_LOSS_MAX) {
            assert_eq!(row[0], 0, "no loss, no protection");
        }
        // The table's factor is a share of all packets (source + FEC); libwebrtc caps it below
        // 50 % (128/255) after the lookup, and the table itself never exceeds 50 % by much.
        assert!(table.iter().all(|&v| v <= 128), "{:?}", table.iter().max());
        // Checked values (row 0 and the last row's start, from the source).
        assert_eq!(&table[33..36], &[11, 11, 11]);
        assert_eq!(&table[129..132], &[0, 0, 0]);
    }

    #[test]
    fn every_table_mask_covers_every_media_packet() {
        for k in 1..=MASK_TABLE_MAX {
            for m in 1..=k {
                let rows = packet_masks(k, m);
                assert_eq!(rows.len(), m);
                let union = rows.iter().fold(0u64, |a, r| a | r);
                assert_eq!(union, (1u64 << k) - 1, "k={k} m={m}");
                assert!(rows.iter().all(|&r| r != 0));
            }
        }
        // libwebrtc's kMaskRandom4_2: 0xc0 0x00, 0xb0 0x00.
        assert_eq!(packet_masks(4, 2), vec![0b0011, 0b1101]);
        // One FEC packet protects them all.
        assert_eq!(packet_masks(12, 1), vec![0xFFF]);
    }

    #[test]
    fn beyond_twelve_media_packets_protection_is_interleaved() {
        let rows = packet_masks(14, 3);
        assert_eq!(rows[0], (0..14).step_by(3).fold(0, |a, j| a | 1 << j));
        assert_eq!(rows[2], 1 << 2 | 1 << 5 | 1 << 8 | 1 << 11);
        let union = rows.iter().fold(0u64, |a, r| a | r);
        assert_eq!(union, (1 << 14) - 1);
        assert_eq!(rows.iter().map(|r| r.count_ones()).sum::<u32>(), 14, "each packet once");
        assert_eq!(packet_masks(48, 48).len(), 48);
    }

    #[test]
    fn fec_packets_round_half_up_and_never_to_zero() {
        assert_eq!(num_fec_packets(10, 0), 0);
        assert_eq!(num_fec_packets(1, 1), 1);
        // 10 × 51 / 256 = 1.99 → 2; 3 × 85 / 256 = 0.996 → 1; 5 × 128 / 256 = 2.5 → 3.
        assert_eq!(num_fec_packets(10, 51), 2);
        assert_eq!(num_fec_packets(3, 85), 1);
        assert_eq!(num_fec_packets(5, 128), 3);
        assert_eq!(num_fec_packets(48, 255), 48);
    }
}
