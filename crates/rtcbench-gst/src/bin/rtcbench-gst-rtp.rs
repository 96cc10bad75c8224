//! `rtcbench-gst-rtp CONFIG.json`: one end of a call on GStreamer's RTP stack, its rate set by
//! GStreamer's own GoogCC, `rtpgccbwe` (`rtcbench_gst::rtp`).

use std::process::ExitCode;

fn main() -> ExitCode {
    rtcbench_live::process::main_with("rtcbench-gst-rtp", rtcbench_gst::rtp::run)
}
