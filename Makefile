# One entry point for every routine task. `make demo` and `make test` work on a fresh machine with
# Rust and Python 3.11: they create .venv, install what is needed and build the native extension.

VENV    ?= .venv
PY      := $(VENV)/bin/python
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
CARGO   ?= cargo
# Build jobs: the reference machine has 2 cores.
export CARGO_BUILD_JOBS ?= 2

.PHONY: demo test test-rust test-python test-slow lint fmt bench fuzz build build-release clean tshark chromium firefox janus coturn gstreamer gst-agent

$(PY):
	python3 -m venv $(VENV)

# Python tooling (maturin builds the extension and installs the package's own dependencies).
$(STAMP): pyproject.toml | $(PY)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "maturin>=1.7,<2"
	touch $(STAMP)

# The extension in release mode, with the [dev] extras (pytest, hypothesis, ruff, mypy, pandas),
# and the emulation relay, media agent and Prague agent beside the package (python/rtcbench/_bin, where
# rtcbench.testbed looks).
build-release: $(STAMP)
	$(BIN)/maturin develop --release -q -E dev
	$(CARGO) build --release -q -p rtcbench-live --bins
	$(CARGO) build --release -q -p rtcbench-live --features onnx --bin rtcbench-media
	install -D -m 0755 target/release/rtcbench-relay python/rtcbench/_bin/rtcbench-relay
	install -D -m 0755 target/release/rtcbench-media python/rtcbench/_bin/rtcbench-media
	install -D -m 0755 target/release/rtcbench-prague python/rtcbench/_bin/rtcbench-prague

build: build-release

# The GStreamer stack's agents (docs/gstreamer.md), built against Debian's GStreamer (installed
# first), beside the others: the media agent with GStreamer's real encoders, and GStreamer's RTP
# stack with its own GoogCC, rtpgccbwe.
gst-agent: build-release gstreamer
	$(CARGO) build --release -q -p rtcbench-gst --bins
	install -D -m 0755 target/release/rtcbench-gst-media python/rtcbench/_bin/rtcbench-gst-media
	install -D -m 0755 target/release/rtcbench-gst-rtp python/rtcbench/_bin/rtcbench-gst-rtp

demo: build-release
	$(BIN)/rtcbench run rfc8867-5.1 --cc gcc --seed 1 --out results/demo

test: build-release test-rust test-python

# The capture tests have Debian's tshark dissect our packets.
tshark:
	bash scripts/install-tshark.sh

# The report tests open the HTML report in Debian's headless Chromium, as a person would; the
# browser tests call between Chromium peers, through Debian's Janus for the SFU case and its
# coturn for the relayed one, and between Firefox peers (Debian's firefox-esr) and Chromium ones.
chromium:
	bash scripts/install-chromium.sh

firefox:
	bash scripts/install-firefox.sh

janus:
	bash scripts/install-janus.sh

gstreamer:
	sh scripts/install-gstreamer.sh

coturn:
	bash scripts/install-coturn.sh

test-rust: tshark gstreamer
	$(CARGO) test --workspace --exclude rtcbench-py -q

test-python: tshark chromium firefox janus coturn gst-agent
	$(BIN)/python -m pytest -q -m "not slow"

# The slower tier: longer scenario sweeps.
test-slow: build-release gst-agent
	$(BIN)/python -m pytest -q -m slow

# Needs the installed package: mypy checks against polars' and numpy's types.
lint: build-release gstreamer
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(BIN)/ruff check python tests benches examples experiments
	$(BIN)/ruff format --check python tests benches examples experiments
	$(BIN)/mypy
	$(BIN)/mypy examples
	$(BIN)/mypy experiments/gcc-additive-increase/replay.py

fmt:
	$(CARGO) fmt --all
	$(BIN)/ruff format python tests benches examples
	$(BIN)/ruff check --fix python tests benches examples

# Criterion benchmarks of the simulator, the CLI end to end, a Python controller against gcc, the
# learning environment's steps per second (goal: 1000x real time), then the whole RFC 8867 suite
# with four controllers (budget: under 20 s on 2 cores); prints simulated s per wall s. Then the
# memory of a two-hour run of 16 calls and 4 CUBIC flows (budget: peak under 1 GiB, RSS flat
# while it runs). Then the emulation relay's timing error at 5,000 packets/s (goal: p99 under
# 200 µs; needs root, skipped without). Last, instruction counts (valgrind) against
# benches/instructions.json: the host-independent regression check.
bench: build-release
	$(CARGO) bench -p rtcbench-sim --bench sim
	$(BIN)/python benches/cli_timing.py
	$(BIN)/python benches/python_controller.py
	$(BIN)/python benches/onnx_controller.py
	$(BIN)/python benches/rollouts_ray.py
	$(BIN)/python benches/env_steps.py
	$(BIN)/python benches/suite_timing.py
	$(BIN)/python benches/report_timing.py
	$(BIN)/python benches/memory.py
	$(BIN)/python benches/relay_timing.py
	$(BIN)/python benches/instructions.py

# Every fuzz target for FUZZ_SECONDS each, two at a time, with edge coverage (docs/fuzzing.md).
# The default tests run a short blind smoke of the same targets (cargo test -p rtcbench-fuzz).
FUZZ_SECONDS ?= 20
fuzz:
	bash crates/rtcbench-fuzz/fuzz.sh run --seconds $(FUZZ_SECONDS) --jobs 2 all

clean:
	rm -rf $(VENV) target results
