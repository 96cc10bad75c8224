"""Browser runs (`--mode browser`, docs/browser.md): a scenario variant on the testbed
(`rtcbench.testbed`) with real Chromium peers at the ends of its calls, in real time.

- `run`: one browser run, start to trace tables (`browse`);
- `chromium`: the headless browsers, their pages and the calls between them;
- `devtools`: Chromium driven over the DevTools protocol on a pipe;
- `sdp`: what a call's SDP negotiates, and the edits that carry scenario settings into it;
- `sfu`, `turn`: Janus (an SFU conference's node) and coturn (a call's `via` node);
- `trace`: the trace tables from the relay's packet log, `getStats()` and the SDP.

It builds on the emulation's planning (`rtcbench.emulation.run.planned_meta`,
`rtcbench.emulation.media.call_plans`) and its reading of the relay's log
(`rtcbench.emulation.trace`). Nothing is imported here: `rtcbench.runner` needs `devtools` alone.
"""
