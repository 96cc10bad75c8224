//! `rtcbench-prague CONFIG.json`: TCP Prague flows over UDP between emulated hosts, run by the
//! simulator's own TCP model ([`rtcbench_live::prague`] has the whole story).

use std::process::ExitCode;

fn main() -> ExitCode {
    rtcbench_live::process::main_with("rtcbench-prague", rtcbench_live::prague::run)
}
