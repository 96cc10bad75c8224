//! `rtcbench-media CONFIG.json`: one end of a media call on a UDP socket, in real time, its video
//! from the RFC 8593 model ([`rtcbench_live::media`] has the whole story). The GStreamer stack's
//! agent, `rtcbench-gst-media` (crate `rtcbench-gst`), is the same program with a real encoder.

use std::process::ExitCode;

fn main() -> ExitCode {
    rtcbench_live::process::main_with("rtcbench-media", |path| rtcbench_live::media::run(path, None))
}
