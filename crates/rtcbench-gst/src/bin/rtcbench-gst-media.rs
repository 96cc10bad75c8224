//! `rtcbench-gst-media CONFIG.json`: `rtcbench-media` (one end of a call, `rtcbench_live::media`)
//! whose sender encodes with GStreamer when its configuration names an `encoder`.

use std::process::ExitCode;

fn main() -> ExitCode {
    rtcbench_live::process::main_with("rtcbench-gst-media", |path| {
        rtcbench_live::media::run(path, Some(&rtcbench_gst::build))
    })
}
