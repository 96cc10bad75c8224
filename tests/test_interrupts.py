"""Every long command stops when asked: Ctrl-C (SIGINT) or SIGTERM ends `run`, `suite`, `sweep`
and `report` within a second, with status 130 and one line, and leaves no partial result, no
temporary folder and no worker process, whether the signal reaches the command alone (`kill`) or
its whole process group (Ctrl-C in a terminal), and even when the command was started in the
background with SIGINT ignored (`cmd &` in a script); workers die with their parent even when it
is killed; a later run removes the temporary folders of a killed one; results follow the umask.

These tests start real processes and signal them, as a user or a batch system would.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

import rtcbench
from rtcbench.results import remove_stale
from rtcbench.workers import interrupts_held

RTCBENCH = [sys.executable, "-m", "rtcbench.cli"]
# A call that lasts as long as the run: a day is far more than any test waits for.
LONG = ["--set", "duration=86400s"]
STOP_WITHIN_S = 1.0


_started: list[subprocess.Popen[str]] = []


def start(args: Sequence[str], **kw: object) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        [*RTCBENCH, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw
    )  # type: ignore[call-overload]
    _started.append(p)
    return p


@pytest.fixture(autouse=True)
def _no_process_outlives_its_test() -> Iterator[None]:
    """A test that fails before it stops its command (a wait that timed out on a loaded host)
    must not leave a day-long run behind: kill what is still running, and its workers."""
    yield
    while _started:
        p = _started.pop()
        if p.poll() is None:
            for child in children(p.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)
            p.kill()
            p.wait()
        if p.stderr is not None:
            p.stderr.close()


def children(pid: int) -> set[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_until(condition: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return bool(condition())  # type: ignore[operator]


def catches(pid: int, sig: int) -> bool:
    """Whether process `pid` has a handler for `sig` (SigCgt in /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(mask >> (sig - 1) & 1)


def stop(p: subprocess.Popen[str], sig: int, *, group: bool = False) -> tuple[int, float, str]:
    """Signals `p` (with `group`, its process group, as Ctrl-C in a terminal does), waits for it;
    (status, seconds it took, stderr)."""
    t0 = time.monotonic()
    if group:
        os.killpg(p.pid, sig)
    else:
        p.send_signal(sig)
    try:
        code = p.wait(timeout=15)
    except subprocess.TimeoutExpired:
        p.kill()
        raise
    took = time.monotonic() - t0
    assert p.stderr is not None
    err = p.stderr.read()
    p.stderr.close()
    return code, took, err


def assert_clean(out: Path) -> None:
    """No temporary folder, no partial run, under `out`."""
    hidden = [p for p in out.rglob(".*")] if out.exists() else []
    assert hidden == [], f"temporary files left: {hidden}"
    partial = [p for p in out.rglob("seed-*") if not (p / "summary.json").is_file()] if out.exists() else []
    assert partial == [], f"partial runs left: {partial}"


def running(out: Path) -> int:
    """How many runs are going under `out` (their temporary folders). A folder may be renamed or
    removed while the walk reads it (a run moving into place): that walk counts as none, and the
    caller polls again."""
    try:
        return len(list(out.rglob(".seed-*.tmp")))
    except FileNotFoundError:
        return 0


def wait_for_simulation(p: subprocess.Popen[str], out: Path) -> None:
    """Until the run's temporary folder exists: the simulation is going."""
    assert wait_until(lambda: running(out) > 0 or p.poll() is not None, 30)
    assert p.poll() is None, p.stderr.read() if p.stderr else ""
    time.sleep(0.3)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_run_stops_within_a_second_and_leaves_nothing(tmp_path: Path, sig: int) -> None:
    out = tmp_path / "out"
    p = start(["run", "seed001-sudden-reduction", *LONG, "--out", str(out)])
    wait_for_simulation(p, out)
    code, took, err = stop(p, sig)
    assert code == 130, err
    assert took < STOP_WITHIN_S, f"stopped in {took:.2f} s"
    assert err.strip().splitlines() == [
        f"interrupted: no half-written run is left; finished variants are kept in {out}"
    ], err
    assert_clean(out)
    assert not out.exists() or not any(out.iterdir()), "the folders made for the run are removed"


def _suite_args(out: Path, jobs: int = 2) -> list[str]:
    # Four long runs on two workers.
    return ["suite", "rfc8867-5.1", "--cc", "gcc", *LONG, "--jobs", str(jobs), "--out", str(out)]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_suite_stops_its_workers_with_it(tmp_path: Path, sig: int) -> None:
    out = tmp_path / "out"
    p = start(_suite_args(out))
    assert wait_until(lambda: running(out) >= 2 or p.poll() is not None, 60)
    workers = children(p.pid)
    assert len(workers) >= 2, "two workers are running"
    code, took, err = stop(p, sig)  # the parent only, as `kill` would
    assert code == 130, err
    assert took < STOP_WITHIN_S + 0.5, f"stopped in {took:.2f} s"
    assert "interrupted: finished runs are kept" in err and "Traceback" not in err, err
    assert wait_until(lambda: not any(alive(w) for w in workers), 2), "workers left running"
    assert_clean(out)


def _ignoring_sigint() -> None:
    # What a shell does to a command it starts in the background (`cmd &`) when job control is off,
    # as in a script, a CI wrapper or `make test > log 2>&1 &`.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("command", ["run", "suite"])
def test_a_command_started_in_the_background_stops_on_sigint(tmp_path: Path, command: str) -> None:
    out = tmp_path / "out"
    args = (
        ["run", "seed001-sudden-reduction", *LONG, "--out", str(out)]
        if command == "run"
        else _suite_args(out)
    )
    p = start(args, preexec_fn=_ignoring_sigint)
    if command == "run":
        wait_for_simulation(p, out)
    else:
        assert wait_until(lambda: running(out) >= 2 or p.poll() is not None, 60)
    code, took, err = stop(p, signal.SIGINT)
    assert code == 130, err
    assert took < STOP_WITHIN_S + (0 if command == "run" else 0.5), f"stopped in {took:.2f} s"
    assert len(err.strip().splitlines()) == 1 and err.startswith("interrupted: "), err
    assert_clean(out)


@pytest.mark.parametrize("command", ["suite", "sweep"])
def test_ctrl_c_in_a_terminal_stops_every_process_quietly_and_leaves_nothing(
    tmp_path: Path, command: str
) -> None:
    # Ctrl-C signals the whole process group, workers included, and the parent passes the
    # interrupt on too: a worker interrupted twice used to cut its clean-up short, leaving its
    # temporary folder and printing a traceback.
    out = tmp_path / "out"
    if command == "suite":
        args = _suite_args(out)
    else:
        spec = tmp_path / "sweep.toml"
        spec.write_text(
            'scenarios = ["rfc8867-5.1"]\ncontrollers = ["gcc"]\n[[points]]\nduration = "86400s"\n'
        )
        args = ["sweep", str(spec), "--jobs", "2", "--out", str(out)]
    p = start(args, start_new_session=True)
    assert wait_until(lambda: running(out) >= 2 or p.poll() is not None, 60)
    workers = children(p.pid)
    assert len(workers) >= 2, "two workers are running"
    time.sleep(0.3)
    code, took, err = stop(p, signal.SIGINT, group=True)
    assert code == 130, err
    assert took < STOP_WITHIN_S + 0.5, f"stopped in {took:.2f} s"
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "Exception" not in err, err
    assert wait_until(lambda: not any(alive(w) for w in workers), 2), "workers left running"
    assert_clean(out)


def test_workers_die_when_their_parent_is_killed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    p = start(_suite_args(out))
    assert wait_until(lambda: running(out) >= 2 or p.poll() is not None, 60)
    workers = children(p.pid)
    assert workers
    p.kill()
    p.wait()
    assert p.stderr is not None
    p.stderr.close()
    assert wait_until(lambda: not any(alive(w) for w in workers), 3), "workers outlived a killed parent"
    # The workers, interrupted, removed their runs' folders; a run the parent held itself stays
    # (nobody could remove it), and the next run there removes it: its process is gone.
    for parent in {t.parent for t in out.rglob(".seed-*.tmp")}:
        remove_stale(parent)
    assert_clean(out)


def test_an_interrupt_while_workers_start_is_clean(tmp_path: Path) -> None:
    out = tmp_path / "out"
    p = start(_suite_args(out))
    # While the parent imports and spawns its workers.
    assert wait_until(lambda: bool(children(p.pid)) or p.poll() is not None, 30)
    code, took, err = stop(p, signal.SIGINT)
    assert code == 130 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert took < STOP_WITHIN_S + 0.5


@pytest.mark.parametrize("after_s", [0.0, 0.1, 0.25, 0.4, 0.6])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_while_the_command_loads_is_clean(
    tmp_path: Path, after_s: float, sig: signal.Signals
) -> None:
    # The first half second imports polars, matplotlib and the core: an interrupt there ends the
    # process at once, with one line, nothing written (cli.main), as one later does.
    # From the moment it catches SIGTERM (which Python itself leaves alone): before that, the
    # interpreter is still starting and the signal's default action is all there is.
    out = tmp_path / "out"
    p = start(["run", "rfc8867-5.1", "--cc", "gcc", *LONG, "--out", str(out)])
    assert wait_until(lambda: catches(p.pid, signal.SIGTERM) or p.poll() is not None, 30)
    time.sleep(after_s)
    code, took, err = stop(p, sig)
    assert code == 130 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert took < STOP_WITHIN_S + 0.5
    assert not out.exists() or not any(out.rglob("*.tmp")), "nothing half-made"


_INTERRUPT_IN_EVAL = """
import rtcbench.cli.commands as commands
from rtcbench.cli import main


def app(**kw):
    # As when SIGTERM lands while Typer evaluates a command's annotations (a string, with eval).
    exec("raise KeyboardInterrupt")


commands.app = app
main()
"""


def test_an_interrupt_caught_after_it_went_through_eval_still_ends_with_130(tmp_path: Path) -> None:
    # CPython marks an interrupt that went through eval or exec of a string as unhandled even once
    # caught, and at exit kills itself with SIGINT (status -2) unless the command line leaves on its
    # own (cli._leave_interrupted). Seen in CI: SIGTERM while Typer built the app, 3 s into a start.
    # Run as a module, as `python -m rtcbench.cli` is (`-c` exits by another path).
    (tmp_path / "interrupted_in_eval.py").write_text(_INTERRUPT_IN_EVAL)
    done = subprocess.run(
        [sys.executable, "-m", "interrupted_in_eval"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert done.stderr.strip().splitlines() == ["interrupted: nothing was started"], done.stderr


def _run_app_with(
    app: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[object, list[str]]:
    """`run_app` in this process with `app` in place of the Typer app, and no handlers of its own:
    its exit status and the lines it wrote on stderr."""
    from rtcbench.cli import commands, errors

    monkeypatch.setattr(commands, "interrupt_on_signals", lambda sigint=None: None)
    monkeypatch.setattr(commands, "app", app)
    monkeypatch.setattr(errors, "_stage", "before")
    with pytest.raises(SystemExit) as ended:
        commands.run_app()
    return ended.value.code, capsys.readouterr().err.strip().splitlines()


def _app_of(command: Callable[[], None]) -> Callable[..., int]:
    """An app that runs a guarded `command` and returns its exit status, as Typer's would."""
    from rtcbench.cli import errors

    def app(**kw: object) -> int:
        try:
            command()
        except errors.typer.Exit as e:
            return int(e.exit_code)
        return 0

    return app


def _app_interrupted(**kw: object) -> int:
    raise KeyboardInterrupt


def _app_answering_130(**kw: object) -> int:
    # As Typer does with an interrupt while it parses the command line: status 130, no word.
    return 130


@pytest.mark.parametrize("app", [_app_interrupted, _app_answering_130])
def test_an_interrupt_before_any_command_began_gets_its_line(
    app: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # CI once sent SIGINT while Typer built the app (after the loading handler, before any
    # command's own): a traceback and death by signal; SIGTERM there got status 130 and no line.
    # Deterministic here: the app itself is interrupted.
    assert _run_app_with(app, monkeypatch, capsys) == (130, ["interrupted: nothing was started"])


def test_a_command_that_answered_its_interrupt_gets_no_second_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rtcbench.cli import errors

    @errors.guarded("nothing was written")
    def command() -> None:
        raise KeyboardInterrupt

    assert _run_app_with(_app_of(command), monkeypatch, capsys) == (130, ["interrupted: nothing was written"])


def test_an_interrupt_another_thread_receives_waits_for_the_held_block() -> None:
    # The kernel may hand a process-wide SIGINT to any thread that does not block it; Python then
    # runs the handler on the main thread, blocked there or not. A held block still finishes
    # first, and the interrupt comes after it.
    def interrupt_from_a_thread_that_does_not_block_it() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        os.kill(os.getpid(), signal.SIGINT)

    done = []
    with pytest.raises(KeyboardInterrupt), interrupts_held():
        other = threading.Thread(target=interrupt_from_a_thread_that_does_not_block_it)
        other.start()
        other.join()
        time.sleep(0.05)  # the main thread runs pending handlers meanwhile
        done.append(True)
    assert done == [True]


_SWALLOWING_JOB = """
import os, signal, sys, time
from rtcbench import workers

class Interrupted:
    def __del__(self):
        # The interrupt arrives while this finalizer runs: its handler runs here too.
        os.kill(os.getpid(), int(sys.argv[1]))
        time.sleep(0.05)

def forever():
    Interrupted()  # collected at once
    while True:
        time.sleep(0.01)

workers.init_worker(os.getppid())
workers.job(forever)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_a_finalizer_swallows_still_stops_the_job(sig: int) -> None:
    # An interrupt that lands inside a finalizer (or a callback from C, as polars' `DataTypeClass`
    # did in CI) raises where Python can only print "Exception ignored in" and go on: the job then
    # ran on, deaf to further interrupts, until its parent killed it.
    p = subprocess.run(
        [sys.executable, "-c", _SWALLOWING_JOB, str(int(sig))],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert (p.returncode, p.stderr) == (130, "")


# As on a loaded machine: the first timer that delivers the interrupt again fires while the hook
# that started it is still in `Thread.start`.
_SWALLOWING_JOB_SLOW_START = (
    """
import threading, time
first = []
started = threading.Thread.start

def start_slowly(self):
    started(self)
    if not first:
        first.append(self)
        time.sleep(0.2)

threading.Thread.start = start_slowly
"""
    + _SWALLOWING_JOB
)


def test_an_interrupt_delivered_again_inside_the_hook_still_stops_the_job() -> None:
    p = subprocess.run(
        [sys.executable, "-c", _SWALLOWING_JOB_SLOW_START, str(int(signal.SIGTERM))],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert (p.returncode, p.stderr) == (130, "")


def test_a_sweep_stops_when_asked(tmp_path: Path) -> None:
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        'scenarios = ["seed001-sudden-reduction"]\ncontrollers = ["gcc", "nada"]\n'
        '[[points]]\nduration = "86400s"\n'
    )
    out = tmp_path / "out"
    p = start(["sweep", str(spec), "--jobs", "2", "--out", str(out)])
    assert wait_until(lambda: running(out) >= 1 or p.poll() is not None, 60)
    code, took, err = stop(p, signal.SIGINT)
    assert code == 130 and "interrupted: finished runs are kept; the same command resumes" in err, err
    assert took < STOP_WITHIN_S + 0.5
    assert_clean(out)
    assert not (out / "sweep.parquet").exists()


def test_a_report_stops_when_asked_and_writes_nothing(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    # Twelve runs of ten minutes, each with its own figure: drawn by two worker processes, for a
    # few seconds.
    for seed in range(1, 13):
        rtcbench.run("seed001-sudden-reduction", "gcc", seed, out=runs, sets=["duration=600s"], figure=False)
    p = start(["report", str(runs), "--run-figures", "all", "--jobs", "2"])
    assert wait_until(lambda: len(children(p.pid)) >= 2 or p.poll() is not None, 30)
    assert p.poll() is None, "the report is still being made"
    code, took, err = stop(p, signal.SIGINT)
    assert code == 130 and "interrupted: no report was written" in err, err
    assert took < STOP_WITHIN_S + 0.5
    assert not (runs / "report.html").exists()
    assert not [f for f in runs.iterdir() if f.name.startswith(".")]


def test_a_killed_run_leaves_a_temporary_folder_that_the_next_run_removes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["run", "seed001-sudden-reduction", "--out", str(out), "--no-figure"]
    p = start([*args, *LONG])
    wait_for_simulation(p, out)
    p.kill()
    p.wait()
    assert p.stderr is not None
    p.stderr.close()
    left = list(out.rglob(".seed-*.tmp"))
    assert len(left) == 1
    done = subprocess.run(
        [*RTCBENCH, *args, "--set", "duration=5s"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert not left[0].exists(), "the killed run's temporary folder is gone"
    assert_clean(out)


@pytest.mark.parametrize(("umask", "folder", "file"), [(0o022, 0o755, 0o644), (0o077, 0o700, 0o600)])
def test_results_follow_the_umask(tmp_path: Path, umask: int, folder: int, file: int) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [*RTCBENCH, "run", "seed001-sudden-reduction", "--set", "duration=3s", "--out", str(out)],
        capture_output=True, text=True, check=False, preexec_fn=lambda: os.umask(umask),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run,) = [p.parent for p in out.rglob("summary.json")]
    assert run.stat().st_mode & 0o777 == folder
    assert {p.stat().st_mode & 0o777 for p in run.iterdir()} == {file}


def test_an_error_an_interrupt_caused_is_answered_as_the_interrupt(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # SIGTERM one second into `report`, as matplotlib loaded, once in about 80 tries: a pybind11
    # module whose initialisation the interrupt cut short fails its import as "initialization
    # failed", the interrupt its cause, and the command ended with that ImportError's traceback.
    from rtcbench.cli import errors

    @errors.guarded("no report was written")
    def command() -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as e:
            raise ImportError("initialization failed") from e

    assert _run_app_with(_app_of(command), monkeypatch, capsys) == (
        130,
        ["interrupted: no report was written"],
    )

    @errors.guarded("no figure was written")
    def cleanup_failed() -> None:
        # SIGINT 1.1 s into `figure` (tests/test_interrupt_trials.py): the interrupt cut
        # matplotlib's PDF stream short, and its clean-up failed on the half-made stream.
        try:
            raise KeyboardInterrupt
        finally:
            raise AttributeError("'Stream' object has no attribute 'pos'")

    assert _run_app_with(_app_of(cleanup_failed), monkeypatch, capsys) == (
        130,
        ["interrupted: no figure was written"],
    )

    @errors.guarded("no report was written")
    def broken() -> None:
        raise ImportError("no module named matplotlib")

    with pytest.raises(ImportError, match="matplotlib"):
        broken()  # not an interrupt: a bug, with its traceback


_INTERRUPT_IN_A_FINALIZER = """
import time

import rtcbench.cli.commands as commands
from rtcbench.cli import errors, main


class Collected:
    def __del__(self):
        # As SIGTERM landing while a weakref's callback runs: Python cannot raise it from here.
        raise KeyboardInterrupt


@errors.guarded("no figure was written")
def command():
    Collected()  # collected at once: the interrupt is swallowed, "Exception ignored in ..."
    time.sleep(5)  # the command would run on, and end with status 0
    print("finished")


def app(**kw):
    try:
        command()
    except errors.typer.Exit as e:  # as Typer's app returns it
        return e.exit_code
    return 0


commands.app = app
main()
"""


def test_an_interrupt_a_finalizer_swallows_in_the_command_still_stops_it(tmp_path: Path) -> None:
    # Seen by tests/test_interrupt_trials.py: SIGTERM 1.2 s into `figure` landed in a weakref's
    # callback; Python printed "Exception ignored in" and a traceback, and the command ran on to
    # status 0. It is delivered again (`cli.errors.hear_swallowed_interrupts`).
    (tmp_path / "swallowed.py").write_text(_INTERRUPT_IN_A_FINALIZER)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "swallowed"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert done.stderr.strip().splitlines() == ["interrupted: no figure was written"], done.stderr
    assert "finished" not in done.stdout and time.monotonic() - started < 5
