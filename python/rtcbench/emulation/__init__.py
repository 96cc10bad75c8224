"""Emulation (`--mode emulate`, docs/emulation.md): a scenario variant on the testbed
(`rtcbench.testbed`: namespaces, relay, cross traffic) with rtcbench's own media agents at the
ends of its calls, in real time.

- `run`: one emulated run, start to trace tables (`emulate`); also the run's planned `meta` and
  the relay's part of the summary, which browser runs share;
- `media`: the media agents (`rtcbench-media`), one per call end;
- `_controller_agent`: the helper process that runs a Python controller beside a sender agent;
- `trace`: the trace tables from the relay's packet log and the agents' logs (the relay's part is
  read by browser runs too).

Nothing is imported here, so that the controller helper (`python -m
rtcbench.emulation._controller_agent`) starts without the testbed.
"""
