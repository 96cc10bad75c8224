"""Running scenarios: simulate each variant, compute metrics from the trace tables, write results."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rtcbench import _core
from rtcbench._malloc import fix_mmap_threshold
from rtcbench.browser.choice import BROWSER_CONTROLLERS, CHROMIUM, Browsers
from rtcbench.controller import (
    ControllerLike,
    UnknownController,
    UserController,
    load_controller,
    user_controller,
)
from rtcbench.identity import (
    BROWSER,
    EMULATE,
    EVENTLOG,
    GSTREAMER,
    GSTREAMER_CC,
    MODES,
    SIMULATE,
    TESTBED_INFO,
    controller_identity,
    model_revision,
    provenance,
    run_key,
)
from rtcbench.learned import ONNX, OnnxController, load_onnx
from rtcbench.measure import figure_tables, measure_folder, measure_tables
from rtcbench.results import (
    BROWSER_TABLES,
    FILES_KEY,
    SUMMARY,
    TABLES,
    InputError,
    PathArg,
    TraceWriter,
    atomic_dir,
    atomic_file,
    concat_pieces,
    file_records,
    load_tables,
    piece_frames,
    read_table,
    remove_stale_runs,
    run_dir,
    tables_from_core,
    write_parquet,
)
from rtcbench.scenarios import MODELLED_CODEC, Variant, other_codecs, resolve
from rtcbench.tables import Tables

__all__ = [
    "KEEP_ROWS",
    "MAX_MEMORY_ROWS",
    "MAX_SEED",
    "ControllerArg",
    "RunResult",
    "TraceTooLarge",
    "UnknownController",
    "check_codecs",
    "check_mode",
    "check_seed",
    "controller_name",
    "controllers",
    "resolve_controller",
    "run",
    "run_folder",
    "run_variant",
    "summarize_core",
]

FIGURE = "overview.png"
"""The standard figure of a run: rates against capacity, queuing delay, loss."""


ControllerArg = str | ControllerLike | UserController | OnnxController
"""A controller as runs take it: a built-in name (`controllers`), ``package.module:Class`` or
``path/to/file.py:Class``, ``onnx:path/to/model.onnx`` (a learned policy,
`rtcbench.learned.load_onnx`), or a Python controller (`rtcbench.controller.user_controller`)."""

Resolved = str | UserController | OnnxController
"""A controller as `resolve_controller` gives it."""


def controllers() -> list[tuple[str, str]]:
    """(name, description) of every built-in controller."""
    return list(_core.controllers())


def resolve_controller(controller: ControllerArg, *, share_instance: bool = True) -> Resolved:
    """A built-in controller's name as it is; a learned policy (``onnx:MODEL``) loaded and checked
    (`InputError` for a bad model); a Python controller as the `UserController` that builds it per
    call (``share_instance``: see `rtcbench.controller.user_controller`). Raises
    `UnknownController` (or its `ControllerNotFound`) for a name that is none of these."""
    if isinstance(controller, UserController | OnnxController):
        return controller
    if isinstance(controller, str):
        known = [n for n, _ in controllers()]
        if controller in known or controller == GSTREAMER_CC:
            return controller
        if controller.startswith(ONNX):
            return load_onnx(controller)
        if ":" in controller:
            return load_controller(controller)
        raise UnknownController(
            f"unknown controller {controller!r} (allowed: {', '.join(known)}); a Python controller is "
            f"named package.module:Class or path/to/file.py:Class"
        )
    return user_controller(controller, share_instance=share_instance)


def controller_name(controller: Resolved) -> str:
    """The name runs, traces and results folders give a resolved controller."""
    return controller if isinstance(controller, str) else controller.name


def _identity(
    variant: Variant, controller: Resolved, mode: str = SIMULATE, browsers: Browsers | None = None
) -> dict[str, Any]:
    """What a run is, as its summary records it and its folder is keyed (`rtcbench.identity`): a
    browser run also by the browsers that ran it, their versions (`Browsers.describe`), the
    field trials its Chromium peers forced, if any (Chromium's L4S mode's among them, which
    `l4s` names), and whether they wrote their logs."""
    cc = controller_identity(controller)
    identity = {
        "key": "",
        "scenario_sha256": variant.fingerprint,
        "controller": cc,
        "model_revision": model_revision(mode),
    }
    runtime = None
    if mode == BROWSER:
        browsers = browsers or Browsers()
        if cc["name"] in BROWSER_CONTROLLERS:
            browsers = browsers.for_controller(str(cc["name"]))
        runtime = identity["browser"] = browsers.describe(browsers.versions())
        if browsers.forced_trials:
            identity["field_trials"] = browsers.forced_trials
            runtime = f"{runtime or ''} field-trials={browsers.forced_trials}"
        if browsers.l4s:
            identity["l4s"] = browsers.l4s
        if browsers.log:
            # Logging costs the browsers some CPU: a logged run is another run.
            identity["browser_log"] = True
            runtime = f"{runtime or ''} browser-log"
        if browsers.event_log:
            identity["browser_event_log"] = True
            runtime = f"{runtime or ''} browser-event-log"
    elif mode == GSTREAMER:
        from rtcbench.emulation import gstreamer

        identity["gstreamer"] = gstreamer.version()
        runtime = f"gstreamer {identity['gstreamer']} encoders={gstreamer.ENCODER_REVISION}"
        if cc["name"] == GSTREAMER_CC:
            # GStreamer's own controller: a new version of its plugin is another controller.
            identity["gst_plugin_rtp"] = gstreamer.GST_PLUGIN_RTP
            plugin, stack = gstreamer.GST_PLUGIN_RTP, gstreamer.RTP_STACK_REVISION
            runtime = f"{runtime} gst-plugin-rtp={plugin} rtp-stack={stack}"
    identity["key"] = run_key(variant.fingerprint, cc, mode, runtime)
    return identity


def run_folder(
    out: Path,
    variant: Variant,
    controller: Resolved,
    seed: int,
    mode: str = SIMULATE,
    browsers: Browsers | None = None,
) -> Path:
    """The results folder of one run of `variant` with a resolved `controller` under `out`, in
    `mode` (`simulate`, `emulate`, `browser` or `gstreamer`: each mode's runs have keys of their own), a
    browser run with `browsers` (default: all Chromium)."""
    key = _identity(variant, controller, mode, browsers)["key"]
    return run_dir(Path(out), variant.scenario_id, variant.slug, controller_name(controller), key, seed)


def check_codecs(variant: Variant) -> None:
    """`InputError` (one line naming the field) for a call whose video codec the simulator and
    the emulation do not model: only a browser run sends it (`scenarios.other_codecs`)."""
    other = other_codecs(variant)
    if other:
        field, codec = other[0]
        raise InputError(
            f"{variant.scenario_id}: {field} = {codec!r}: the simulator and the emulation model "
            f"{MODELLED_CODEC!r} only; run it with --mode browser, or leave codec out"
        )


def check_gstreamer_cc(controller: ControllerArg, mode: str) -> None:
    """`InputError` (one line) for GStreamer's own controller outside a GStreamer run: it is an
    element of GStreamer's RTP stack, which only `--mode gstreamer` runs."""
    if controller == GSTREAMER_CC and mode != GSTREAMER:
        raise InputError(
            f"--cc {GSTREAMER_CC} is GStreamer's own GoogCC element, which runs on GStreamer's RTP stack: "
            f"run it with --mode gstreamer (this run's mode is {mode})"
        )


def check_mode(mode: str) -> None:
    """`InputError` unless `mode` is one of `MODES`."""
    if mode not in MODES:
        raise InputError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")


def check_browsers(
    browser: str,
    trials: str,
    mode: str,
    log: bool = False,
    l4s: str = "",
    controllers: Sequence[str] = (),
    *,
    event_log: bool = False,
) -> Browsers | None:
    """The browsers of a browser run (`--browser`, `Browsers.parse`) with the field trials its
    Chromium peers force (`--field-trials`, in the form Chromium's `--force-fieldtrials` takes:
    `chromium.field_trials`), Chromium's L4S mode (`--browser-l4s`, settled with each run's
    controller by `Browsers.for_controller`) and whether they write their libwebrtc's logs
    (`--browser-log`), and whether Chromium peers write their RTC event logs
    (`--browser-event-log`); None for a mode that runs no browser. `InputError` for a value that is not
    one, for any of these options given to a mode that runs no browser, and for a browser run of
    one of `controllers` (built-in names) that cannot be as asked."""
    if mode != BROWSER:
        only = f"it applies to --mode browser, not --mode {mode}"
        if trials:
            raise InputError(f"--field-trials sets Chromium's field trials: {only}")
        if l4s:
            raise InputError(f"--browser-l4s sets Chromium's L4S mode: {only}")
        if browser not in ("", CHROMIUM):
            raise InputError(f"--browser chooses a browser run's peers: {only}")
        if log:
            raise InputError(f"--browser-log writes the browsers' own logs: {only}")
        if event_log:
            raise InputError(f"--browser-event-log records Chromium's RTC event log: {only}")
        return None
    if trials:
        # Imported here, as the testbed is (chromium's module starts browsers in namespaces).
        from rtcbench.browser.chromium import field_trials

        trials = field_trials(trials)
    browsers = Browsers.parse(browser, trials, log, l4s, event_log)
    for name in controllers:
        browsers.for_controller(name)
    return browsers


class RunResult:
    """One finished run: where it was written (if anywhere), its summary, and its tables and time
    series. A run written to a folder is read back from it when `tables` or `timeseries` is first
    asked for, unless it was small enough to keep (`KEEP_ROWS`): a long run's tables do not fit
    in memory (docs/limits.md)."""

    def __init__(
        self,
        path: Path | None,
        summary: dict[str, Any],
        tables: Tables | None = None,
        timeseries: pl.DataFrame | None = None,
    ) -> None:
        if path is None and (tables is None or timeseries is None):
            raise ValueError("a run that was not written keeps its tables and time series")
        self.path = path
        self.summary = summary
        self._tables = tables
        self._timeseries = timeseries

    @property
    def tables(self) -> Tables:
        if self._tables is None:
            assert self.path is not None  # checked by the constructor
            self._tables = load_tables(self.path)
        return self._tables

    @property
    def timeseries(self) -> pl.DataFrame:
        """Per flow and 200 ms window: rates, delays, loss (docs/metrics.md)."""
        if self._timeseries is None:
            assert self.path is not None  # checked by the constructor
            self._timeseries = read_table(self.path / "timeseries.parquet")
        return self._timeseries

    def __repr__(self) -> str:
        s = self.summary
        what = ", ".join(repr(s.get(k)) for k in ("scenario", "variant", "controller"))
        return f"RunResult({what}, seed={s.get('seed')}, path={self.path})"


class TraceTooLarge(ValueError):
    """A run kept in memory (no results folder) recorded more trace rows than allowed."""


MAX_MEMORY_ROWS = 20_000_000
"""Trace rows a run kept in memory may record (`run(out=None)`), about 3 GB as tables: beyond
that a run must be written to a folder, which holds any length in bounded memory."""

KEEP_ROWS = 2_000_000
"""A run written to a folder keeps its tables in memory for its `RunResult` (and measures them
there) if it recorded at most this many rows; a longer run is measured from its files a batch of
flows at a time (`rtcbench.measure`) and read back only when asked."""

PIECE_ROWS = 1 << 18
"""Rows the simulation hands over at a time while a run is written to a folder (a piece may
exceed it by what one slice of `SLICE_EVENTS` records)."""

SLICE_EVENTS = 100_000
"""Events the simulation runs between two looks at its stop flag: some 30-50 ms of work, so an
interrupt stops a run well within a second."""


MAX_SEED = 2**64 - 1
"""Seeds are unsigned 64-bit integers, as the core's generators take them."""


def check_seed(seed: int, what: str = "--seed") -> None:
    """`InputError` (a `ValueError`) unless `seed` is an integer from 0 to `MAX_SEED`."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise InputError(f"{what} must be an integer from 0 to 2**64 - 1, got {seed!r}")


def summarize_core(
    variant: Variant, controller: str, seed: int, raw: dict[str, Any], *, command: str | None = None
) -> tuple[dict[str, Any], Tables, pl.DataFrame]:
    """The summary (as `summary.json` holds it, ``wall_s`` not yet known), trace tables and
    timeseries of a run as `_core.Simulation.finish` returns it (the learning environment's)."""
    meta: dict[str, Any] = json.loads(raw["meta"])
    tables = tables_from_core(raw, meta)
    measured = measure_tables(tables)
    assert measured.timeseries is not None
    summary = _summary(
        variant, controller, seed, meta, measured.summary, raw["wall_s"], raw["events"], command
    )
    return summary, tables, measured.timeseries


def _summary(
    variant: Variant,
    controller: Resolved,
    seed: int,
    meta: dict[str, Any],
    measured: dict[str, Any],
    sim_wall_s: float | None,
    events: int | None,
    command: str | None,
    mode: str = SIMULATE,
    browsers: Browsers | None = None,
) -> dict[str, Any]:
    return {
        "scenario": variant.scenario_id,
        "variant": variant.variant,
        "controller": controller_name(controller),
        "seed": seed,
        "mode": mode,
        "identity": _identity(variant, controller, mode, browsers),
        "provenance": provenance(command),
        "simulated_s": meta["duration_s"],
        "wall_s": None,
        "sim_wall_s": sim_wall_s,
        "events": events,
        "flows": measured["flows"],
        "phases": measured["phases"],
        "periods": measured["periods"],
        **{k: measured[k] for k in ("fairness", "feedback_overhead", "cross_traffic")},
        # Only a run with a Wi-Fi BSS has it (analysis.wifi_nodes).
        **({"wifi": measured["wifi"]} if "wifi" in measured else {}),
        # Only a run with an LTE cell has it (analysis.lte_buffers).
        **({"lte": measured["lte"]} if "lte" in measured else {}),
        # Only a run with a DualPI2 bottleneck has it (analysis.l4s).
        **({"l4s": measured["l4s"]} if "l4s" in measured else {}),
        "meta": meta,
    }


def _pieces(core_run: Any, meta: dict[str, Any]) -> Iterator[dict[str, pl.DataFrame]]:
    """The pieces of a `_core.Run` as typed tables; the run is closed however the loop ends."""
    try:
        while (raw := core_run.piece()) is not None:
            yield piece_frames(raw, meta)
    finally:
        core_run.close()


def _start(variant: Variant, cc: Resolved, seed: int, pcap: Path | None, piece_rows: int) -> Any:
    fix_mmap_threshold()
    name = controller_name(cc)
    return _core.Run(
        variant.core,
        name,
        seed,
        factory=cc.make if isinstance(cc, UserController) else None,
        policy=cc.policy if isinstance(cc, OnnxController) else None,
        pcap=str(pcap) if pcap is not None else None,
        piece_rows=piece_rows,
        slice_events=SLICE_EVENTS,
    )


def run_variant(
    variant: Variant,
    controller: ControllerArg = "gcc",
    seed: int = 1,
    out: PathArg | None = None,
    *,
    figure: bool = True,
    command: str | None = None,
    pcap: PathArg | None = None,
    max_memory_rows: int = MAX_MEMORY_ROWS,
    mode: str = SIMULATE,
    field_trials: str = "",
    browser: str = CHROMIUM,
    browser_log: bool = False,
    browser_l4s: str = "",
    browser_event_log: bool = False,
) -> RunResult:
    """Simulates one variant and, if `out` is given, writes its results folder atomically: the
    trace is written while the run goes, so a run of any length takes bounded memory. Without
    `out` the run is kept in memory, up to `max_memory_rows` trace rows (`TraceTooLarge` beyond).
    With `pcap`, the call's packets are also written to that capture file (Wireshark opens it
    with `-d udp.port==5004,rtp`).

    `controller` is a built-in name or a Python controller (`ControllerArg`); an exception in a
    Python controller raises `rtcbench.ControllerError`, naming the controller, call and method.
    An interrupt stops the run within a fraction of a second and leaves nothing behind.

    With `mode="emulate"` the variant runs in real time on an emulated network of Linux network
    namespaces instead (docs/emulation.md; root and iproute2 needed, built-in controllers only),
    and its results folder has the same tables, keyed apart from the simulated run's. With
    `mode="browser"` its calls run between browser peers over such a network (docs/browser.md;
    controller `gcc`, the browsers' own GoogCC, or `scream2`, Chromium's ScreamV2 in its L4S
    mode), with two tables more (`stats`, `usage`); `browser` chooses the peers' browsers
    (`chromium`, `firefox`, or per node: `firefox,B=chromium`; `Browsers.parse`) and
    `field_trials` forces Chromium field trials in every Chromium peer (`Trial/Group/` pairs, as
    Chromium's `--force-fieldtrials` takes them: docs/browser.md); `browser_l4s` chooses
    Chromium's L4S mode (`always` or `only_after_ce` with `scream2`, `goog_cc_with_ect1` with
    `gcc`; docs/browser.md, "Chromium's L4S mode"); `browser_log` has every browser write its
    libwebrtc's log into its peer's folder (docs/browser.md, "The browsers' own logs"), and
    `browser_event_log` every Chromium peer its RTC event log (docs/browser.md, "The RTC event
    log"); the run is keyed by all of them.
    `mode="gstreamer"` is an emulated run whose senders encode real video with GStreamer, the
    controller setting the encoder's target (docs/gstreamer.md); it is keyed by GStreamer's
    version.
    """
    check_seed(seed)
    check_mode(mode)
    browsers = check_browsers(
        browser, field_trials, mode, browser_log, browser_l4s, event_log=browser_event_log
    )
    check_gstreamer_cc(controller, mode)
    if mode == GSTREAMER:
        from rtcbench.emulation import gstreamer
        from rtcbench.emulation.media import call_plans

        gstreamer.check_video(variant)
        if controller == GSTREAMER_CC:
            gstreamer.check_rtp_stack(variant, call_plans(variant, seed))
    elif mode != BROWSER:
        check_codecs(variant)
    cc = resolve_controller(controller)
    if browsers is not None and controller_name(cc) in BROWSER_CONTROLLERS:
        browsers = browsers.for_controller(controller_name(cc))
    started = time.perf_counter()
    out = Path(out) if out is not None else None
    pcap = Path(pcap) if pcap is not None else None
    if mode != SIMULATE:
        return _testbed_variant(
            variant, cc, seed, out, figure=figure, command=command, pcap=pcap, mode=mode, browsers=browsers
        )
    if out is None:
        core_run = _start(variant, cc, seed, pcap, max_memory_rows)
        meta: dict[str, Any] = json.loads(core_run.meta)
        pieces = []
        for piece in _pieces(core_run, meta):
            pieces.append(piece)
            if len(pieces) > 1:
                raise TraceTooLarge(
                    f"{variant.scenario_id} records more than {max_memory_rows:,} trace rows, too many to "
                    "keep in memory; give a results folder (out=...) to write them as the run goes"
                )
        in_memory = concat_pieces(pieces, meta)
        measured = measure_tables(in_memory)
        summary = _summary(
            variant, cc, seed, meta, measured.summary, core_run.sim_wall_s, core_run.events, command
        )
        summary["wall_s"] = time.perf_counter() - started
        return RunResult(None, summary, in_memory, measured.timeseries)

    path = run_folder(out, variant, cc, seed)
    remove_stale_runs(path.parent.parent, out)
    with atomic_dir(path, out) as tmp:
        core_run = _start(variant, cc, seed, pcap, PIECE_ROWS)
        meta = json.loads(core_run.meta)
        writer = TraceWriter(tmp)
        kept: list[dict[str, pl.DataFrame]] | None = []
        rows = 0
        try:
            for piece in _pieces(core_run, meta):
                writer.write_piece(piece)
                rows += sum(df.height for df in piece.values())
                if kept is not None and rows <= KEEP_ROWS:
                    kept.append(piece)
                else:
                    kept = None
            writer.close()
        except BaseException:
            writer.abort()
            raise
        tables = concat_pieces(kept, meta) if kept is not None else None
        del kept
        summary, timeseries = _finish_folder(
            tmp,
            variant,
            cc,
            seed,
            meta,
            tables,
            figure=figure,
            command=command,
            started=started,
            sim_wall_s=core_run.sim_wall_s,
            events=core_run.events,
        )
    return RunResult(path, summary, tables, timeseries)


def _finish_folder(
    tmp: Path,
    variant: Variant,
    cc: Resolved,
    seed: int,
    meta: dict[str, Any],
    tables: Tables | None,
    *,
    figure: bool,
    command: str | None,
    started: float,
    sim_wall_s: float | None,
    events: int | None,
    mode: str = SIMULATE,
    browsers: Browsers | None = None,
    extra: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], pl.DataFrame | None]:
    """Completes a results folder whose trace tables are written: the scenario, the time series
    (measured from `tables` if kept in memory, else from the files), the figure and the summary."""
    (tmp / "scenario.toml").write_text(variant.toml, encoding="utf-8")
    if tables is not None:
        measured = measure_tables(tables, delays=figure)
        assert measured.timeseries is not None
        write_parquet(measured.timeseries, tmp / "timeseries.parquet")
    else:
        measured = measure_folder(tmp, meta, delays=figure)
    if figure:
        # Imported here: matplotlib takes longer to import than a short run takes, and a
        # suite draws no figure.
        from rtcbench import plots

        title = f"{variant.scenario_id} {variant.variant} · {controller_name(cc)} · seed {seed}".replace(
            "  ", " "
        )
        if mode != SIMULATE:
            how = {
                EMULATE: "emulated",
                GSTREAMER: "GStreamer encoders",
                EVENTLOG: "from its RTC event log",
            }.get(mode, "browser peers")
            title += f" · {how}"
        if tables is not None and measured.timeseries is not None:
            plots.plot_run(tables, measured.timeseries, tmp / FIGURE, title, measured.delays)
        else:
            light, ts = figure_tables(tmp, meta)
            plots.plot_run(light, ts, tmp / FIGURE, title, measured.delays)
    summary = _summary(variant, cc, seed, meta, measured.summary, sim_wall_s, events, command, mode, browsers)
    summary.update(extra or {})
    summary[FILES_KEY] = file_records(tmp)
    summary["wall_s"] = time.perf_counter() - started
    with open(tmp / SUMMARY, "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=2, allow_nan=False)
        fh.write("\n")
    return summary, measured.timeseries


def _testbed_variant(
    variant: Variant,
    cc: Resolved,
    seed: int,
    out: Path | None,
    *,
    figure: bool,
    command: str | None,
    pcap: Path | None,
    mode: str,
    browsers: Browsers | None = None,
) -> RunResult:
    """`run_variant` in real time on network namespaces: emulated (docs/emulation.md) or between
    Chromium peers (docs/browser.md). The summary says what the testbed reported under the mode's
    name (`emulation` or `browser`)."""
    # Imported here: the testbed is Linux-only and a simulated run needs none of it.
    from rtcbench.browser.run import BrowserModeError, browse
    from rtcbench.emulation.run import emulate

    started = time.perf_counter()
    info_key = TESTBED_INFO[mode]
    if mode == BROWSER and controller_name(cc) not in BROWSER_CONTROLLERS:
        raise BrowserModeError(
            "a browser run runs Chromium's own congestion control: libwebrtc's GoogCC, --cc gcc "
            "(rtcbench's port of it), or its ScreamV2, --cc scream2 (Chromium's L4S mode), not "
            f"{controller_name(cc)}"
        )

    def testbed_run(work: Path) -> tuple[Tables, dict[str, Any]]:
        if mode in (EMULATE, GSTREAMER):
            em = emulate(variant, cc, seed, work, capture=pcap is not None, real_encoders=mode == GSTREAMER)
            return em.tables, em.info
        b = browse(variant, seed, work, capture=pcap is not None, browsers=browsers)
        return b.tables, b.info

    if out is None:
        with tempfile.TemporaryDirectory(prefix=f"rtcbench-{mode}-") as work:
            tables, info = testbed_run(Path(work))
            if pcap is not None:
                _place_capture(Path(work) / "relay", pcap)
        measured = measure_tables(tables)
        summary = _summary(
            variant, cc, seed, tables.meta, measured.summary, None, None, command, mode, browsers
        )
        summary[info_key] = info
        summary["wall_s"] = time.perf_counter() - started
        return RunResult(None, summary, tables, measured.timeseries)

    path = run_folder(out, variant, cc, seed, mode, browsers)
    remove_stale_runs(path.parent.parent, out)
    with atomic_dir(path, out) as tmp:
        tables, info = testbed_run(tmp / info_key)
        if pcap is not None:
            _place_capture(tmp / info_key / "relay", pcap)
        writer = TraceWriter(tmp)
        try:
            writer.write_piece({name: getattr(tables, name) for name in TABLES})
            if mode == BROWSER:
                writer.write_piece({name: getattr(tables, name) for name in BROWSER_TABLES})
            writer.close()
        except BaseException:
            writer.abort()
            raise
        summary, timeseries = _finish_folder(
            tmp,
            variant,
            cc,
            seed,
            tables.meta,
            tables,
            figure=figure,
            command=command,
            started=started,
            sim_wall_s=None,
            events=None,
            mode=mode,
            browsers=browsers,
            extra={info_key: info},
        )
    return RunResult(path, summary, tables, timeseries)


def _place_capture(relay_dir: Path, pcap: Path) -> None:
    """The relay's capture of what the hosts sent (`relay-in.pcap`), moved to `pcap` whole."""
    with open(relay_dir / "relay-in.pcap", "rb") as src, atomic_file(pcap) as dst:
        shutil.copyfileobj(src, dst)


def run(
    scenario: str | Path,
    controller: ControllerArg = "gcc",
    seed: int = 1,
    out: PathArg | None = None,
    sets: Sequence[str] = (),
    *,
    figure: bool = True,
    command: str | None = None,
    pcap: PathArg | None = None,
    mode: str = SIMULATE,
    field_trials: str = "",
    browser: str = CHROMIUM,
    browser_log: bool = False,
    browser_l4s: str = "",
    browser_event_log: bool = False,
) -> list[RunResult]:
    """Runs every variant of a built-in scenario id or scenario file; one result per variant.

    `controller` is a built-in name (`controllers()`), ``package.module:Class``,
    ``path/to/file.py:Class``, or a Python controller: an `rtcbench.Controller` subclass, a function
    of no arguments that returns one, or an instance. Each call of each variant runs its own
    controller: a class or function is called for each; an instance runs as it is if the scenario
    has one variant with one call, and is copied (`copy.deepcopy`, before any run) for each call
    otherwise, so every variant starts from the instance as it was given.

    With `pcap` and several variants, each variant's capture is `<stem>@<variant>.pcap`.
    """
    check_mode(mode)
    browsers = check_browsers(
        browser, field_trials, mode, browser_log, browser_l4s, event_log=browser_event_log
    )
    if isinstance(controller, str):
        controller = resolve_controller(controller)
    pcap = Path(pcap) if pcap is not None else None
    variants = resolve(scenario, list(sets))
    cc = resolve_controller(controller, share_instance=len(variants) == 1)

    def capture(v: Variant) -> Path | None:
        if pcap is None or len(variants) == 1:
            return pcap
        return pcap.with_name(f"{pcap.stem}@{v.slug}{pcap.suffix or '.pcap'}")

    return [
        run_variant(
            v,
            cc,
            seed,
            out,
            figure=figure,
            command=command,
            pcap=capture(v),
            mode=mode,
            field_trials=browsers.field_trials if browsers is not None else "",
            browser=browser,
            browser_log=browser_log,
            browser_l4s=browser_l4s,
            browser_event_log=browser_event_log,
        )
        for v in variants
    ]
