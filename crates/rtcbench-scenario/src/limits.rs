//! What a scenario may ask for, and why (`docs/limits.md` is the user-facing table).
//!
//! The limits keep every run finite and a mistake visible: a value far outside what any real
//! network or test case uses is almost always a typo ("1e30Mbps", "0ms"), and some would make a
//! run hang (a feedback interval of zero schedules endless events at one instant) or take the
//! memory of a machine (100 000 TCP flows). They are wide enough for every published test case
//! and for days of simulated time.

use rtcbench_units::{Bitrate, DataSize, Duration};

/// Longest run: a week of simulated time (a 1 h run of 16 calls takes about 20 s).
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);
/// Highest capacity or rate: 100 Gbit/s.
pub const MAX_RATE: Bitrate = Bitrate::mbps(100_000);
/// Longest one-way propagation delay of a link: a minute (a geostationary hop is 0.27 s).
pub const MAX_DELAY: Duration = Duration::from_secs(60);
/// Widest jitter: a standard deviation of 10 s, truncated at most 10 standard deviations out.
pub const MAX_JITTER_STD: Duration = Duration::from_secs(10);
pub const MAX_JITTER_N_STD: f64 = 10.0;
/// Queue sizes: at least one full-size packet, at most a minute of drain time or 10 GB.
pub const MIN_QUEUE_BYTES: DataSize = DataSize::bytes(1500);
pub const MAX_QUEUE_BYTES: DataSize = DataSize::bytes(10_000_000_000);
pub const MAX_QUEUE_TIME: Duration = Duration::from_secs(60);
/// AQM targets, intervals and thresholds.
pub const MAX_AQM_TIME: Duration = Duration::from_secs(10);
/// DualPI2's update interval: at least 1 ms, since every interval of a run is an update (1 µs
/// would be 3.6 billion updates an hour).
pub const MIN_DUALPI2_T_UPDATE: Duration = Duration::from_millis(1);
/// DualPI2's gains alpha and beta, in Hz: the defaults are 0.15 to 3.2 Hz; at 100 Hz a 10 ms
/// change of delay already moves p' by 1 in one update.
pub const MAX_DUALPI2_GAIN: f64 = 100.0;
/// DualPI2's coupling factor k: Linux's range (a byte, at least 1); RFC 9332 recommends 2.
pub const MIN_DUALPI2_COUPLING: f64 = 1.0;
pub const MAX_DUALPI2_COUPLING: f64 = 255.0;
/// DualPI2's Th_len, in packets: up to Linux's default packet limit.
pub const MAX_DUALPI2_TH_LEN: u32 = 10_000;
/// Feedback and report intervals: at least 1 ms (zero would schedule endless reports at one
/// instant); at most the longest run (an interval beyond the run's end turns reports off).
pub const MIN_FEEDBACK_INTERVAL: Duration = Duration::from_millis(1);
pub const MAX_FEEDBACK_INTERVAL: Duration = MAX_DURATION;
/// Audio packet intervals: from 1 ms (no codec packs less) to a second.
pub const MIN_AUDIO_INTERVAL: Duration = Duration::from_millis(1);
pub const MAX_AUDIO_INTERVAL: Duration = Duration::from_secs(1);
/// Longest `jitter_buffer.rtx_min_delay`: 10 s, far beyond any jitter buffer's latency (a request
/// that waits longer than the packet is kept is never sent).
pub const MAX_RTX_MIN_DELAY: Duration = Duration::from_secs(10);
/// Highest audio rate: 10 Mbit/s (multichannel studio audio is below 2 Mbit/s).
pub const MAX_AUDIO_RATE: Bitrate = Bitrate::mbps(10);
/// Most payload bytes of one audio packet (rate × `packet_interval`): a 1500-byte MTU less IPv4
/// and UDP (28 bytes) and RTP with the header extensions the sender adds (24 bytes).
pub const MAX_AUDIO_PAYLOAD: DataSize = DataSize::bytes(1500 - 28 - 24);
/// How many elements a scenario may have.
pub const MAX_LINKS: usize = 1_000;
pub const MAX_CALLS: usize = 500;
pub const MAX_TCP_FLOWS: u64 = 1_000;
pub const MAX_CBR_FLOWS: usize = 500;
pub const MAX_SCHEDULE_STEPS: usize = 1_000_000;
/// Wi-Fi: stations per BSS (the model costs O(N) per change of the medium; RFC 8869 §3.2 uses
/// 24 at most), attempts per MPDU (802.11's default is 7; Chen et al. 2015 extends it by up to 7),
/// and packets per MAC queue.
pub const MAX_WIFI_STATIONS: usize = 128;
/// UEs of one LTE cell.
pub const MAX_LTE_UES: usize = 256;
/// An LTE RLC buffer (per UE and direction).
pub const MAX_LTE_BUFFER: DataSize = DataSize::bytes(1_000_000_000);
pub const MAX_WIFI_RETRY_LIMIT: u32 = 64;
pub const MAX_WIFI_QUEUE_PACKETS: u32 = 100_000;
/// Short TCP flows: file sizes up to 10 GB, idle times up to a day, up to a million files a burst.
pub const MAX_FILE_SIZE: DataSize = DataSize::bytes(10_000_000_000);
pub const MAX_IDLE_MEAN: Duration = Duration::from_secs(24 * 3600);
pub const MAX_FILES: u32 = 1_000_000;
/// Most variants one scenario file may expand into (the product of its sets' sizes). RFC 8867's
/// cases have at most 8; a sweep file, not a scenario, is the tool for large grids. Checked
/// before any variant is built, so 20 sets of 10 values are an error, not 10^20 allocations.
pub const MAX_VARIANTS: usize = 10_000;
/// Largest scenario text (a file, or a resolved variant). Loading takes memory in proportion to
/// the text (its TOML tree and the typed scenario; docs/limits.md gives the measured ratio), so
/// the bound keeps a run's start within a fixed budget; a longer capacity variation belongs in a
/// capacity trace file, which loads compactly.
pub const MAX_SCENARIO_BYTES: usize = 8 * 1024 * 1024;
/// Longest scenario id: it names a results folder.
pub const MAX_ID_LEN: usize = 100;

/// Whether `id` can name a results folder (docs/limits.md): 1 to [`MAX_ID_LEN`] letters, digits
/// and `.`, `-`, `_`, `@`, `=`, `,`, not starting with `.` (temporary folders do).
pub fn id_error(id: &str) -> Option<String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || ".-_@=,".contains(c);
    if id.is_empty() {
        return Some("must not be empty: it names the results folder".into());
    }
    if id.len() > MAX_ID_LEN {
        return Some(format!("is {} characters long; at most {MAX_ID_LEN}", id.len()));
    }
    if let Some(c) = id.chars().find(|&c| !allowed(c)) {
        return Some(format!(
            "{id:?} has {c:?}: an id names a results folder and may hold letters, digits, '.', '-', '_', \
             '@', '=' and ','"
        ));
    }
    if id.starts_with('.') {
        return Some(format!("{id:?} starts with '.': hidden folders are rtcbench's temporary ones"));
    }
    None
}
