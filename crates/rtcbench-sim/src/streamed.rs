//! A run on a thread of its own that hands its trace out in pieces while it goes, so that its
//! owner writes the rows out and memory stays bounded by a piece, however long the run
//! (`docs/limits.md`).
//!
//! The thread advances the [`Simulation`] in slices of at most [`StreamOptions::slice_events`]
//! events and, whenever [`StreamOptions::piece_rows`] trace rows are held (and at the end), sends
//! the rows that can no longer change ([`Simulation::take_trace`]). The channel holds one piece:
//! a simulation faster than its reader waits for it. Between two slices the thread looks at its
//! stop flag, so [`StreamedRun::stop`] ends a run within one slice (a few milliseconds) wherever
//! it is. A capture, if asked for, is written by the same thread to a temporary file beside its
//! destination and renamed into place only when the run is complete.
//!
//! The pieces, appended in order, are the trace [`crate::simulate_with`] returns: the same events
//! run in the same order, whatever the slices.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration as WallDuration;

use crate::trace::Trace;
use crate::world::{CaptureWriter, ControllerChoice, RunOptions, Simulation};
use crate::Meta;
use rtcbench_scenario::{Scenario, ScenarioError};

/// Runs `work` in whatever context the simulation needs (a Python controller: with the GIL held).
pub type Hold = dyn FnMut(&mut dyn FnMut()) + Send;

/// How a streamed run is cut.
pub struct StreamOptions {
    /// Events per slice: the longest the run goes without looking at its stop flag. At a few
    /// million events per second, 100 000 events are some 30-50 ms.
    pub slice_events: u64,
    /// Rows held before they are sent as a piece (all tables together).
    pub piece_rows: usize,
    /// Write every packet as it left its sender to this pcap file.
    pub pcap: Option<PathBuf>,
    /// Wraps every slice of work and the building of the run (see [`Hold`]).
    pub hold: Option<Box<Hold>>,
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self { slice_events: 100_000, piece_rows: 1 << 20, pcap: None, hold: None }
    }
}

/// What a streamed run sends, in this order: `Started`, any number of `Piece`s, then `Done`;
/// or `Failed` at any point (and nothing after it).
pub enum Message {
    /// The run is built: its links, calls and flows.
    Started(Box<Meta>),
    /// Rows in table order, after those of the pieces before.
    Piece(Box<Trace>),
    /// The run is complete (and its capture in place): events processed and the wall-clock
    /// seconds spent simulating (time spent waiting for the reader left out).
    Done { events: u64, simulating_s: f64 },
    /// The run could not be built, or its capture could not be written.
    Failed(RunFailure),
}

/// Why a streamed run ended early.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunFailure {
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    #[error("{path}: {message}")]
    Capture { path: PathBuf, message: String },
    /// The run's thread ended without a `Done` or `Failed`: a panic, which is a bug (its message
    /// went to stderr when it happened).
    #[error("the run stopped without finishing (an internal error; its message is above)")]
    Ended,
}

/// A run going on in a thread of its own. Dropping it stops the run and waits for the thread.
pub struct StreamedRun {
    rx: Receiver<Message>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// A `Done` or `Failed` was handed out: the channel closes after it.
    finished: std::cell::Cell<bool>,
}

impl StreamedRun {
    /// Starts the run (`scenario` with `controller` and `seed`; shared, so that a caller that keeps
    /// a loaded variant need not copy it). `capture` in `run` is set from `stream.pcap`.
    pub fn start(
        scenario: impl Into<Arc<Scenario>>,
        controller: ControllerChoice,
        seed: u64,
        run: RunOptions,
        stream: StreamOptions,
    ) -> std::io::Result<Self> {
        let scenario = scenario.into();
        let (tx, rx) = sync_channel(1);
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new().name("rtcbench-run".into()).spawn(move || {
            drive(&scenario, controller, seed, run, stream, &stopped, &tx);
        })?;
        Ok(Self { rx, stop, thread: Some(thread), finished: std::cell::Cell::new(false) })
    }

    /// The next message, or `None` if none came within `timeout`. After `Done` or `Failed`, or
    /// once the run was stopped, the channel is closed and this returns `None` at once. A run
    /// whose thread ended without either (it panicked) gives `Failed(RunFailure::Ended)` once,
    /// so that a caller waiting for its next message is not left waiting for ever.
    pub fn next(&self, timeout: WallDuration) -> Option<Message> {
        match self.rx.recv_timeout(timeout) {
            Ok(m) => {
                if matches!(m, Message::Done { .. } | Message::Failed(_)) {
                    self.finished.set(true);
                }
                Some(m)
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                if self.finished.replace(true) || self.stop.load(Ordering::Relaxed) {
                    None
                } else {
                    Some(Message::Failed(RunFailure::Ended))
                }
            }
        }
    }

    /// Asks the run to stop after its current slice and waits for its thread; a capture being
    /// written is removed.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // The thread may be waiting to send a piece nobody will read.
        while self.rx.try_recv().is_ok() {}
        if let Some(thread) = self.thread.take() {
            loop {
                match self.rx.recv_timeout(WallDuration::from_millis(5)) {
                    Ok(_) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                    Err(RecvTimeoutError::Timeout) if thread.is_finished() => break,
                    Err(RecvTimeoutError::Timeout) => {}
                }
            }
            // A panic in the run is a bug; it was reported on stderr when it happened.
            let _ = thread.join();
        }
    }
}

impl Drop for StreamedRun {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The temporary name a capture is written under.
fn partial(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".{}.tmp", std::process::id()));
    path.with_file_name(name)
}

struct Capture {
    path: PathBuf,
    tmp: PathBuf,
    writer: CaptureWriter<BufWriter<File>>,
}

impl Capture {
    fn create(path: PathBuf) -> Result<Self, RunFailure> {
        let tmp = partial(&path);
        let fail = |message: String| RunFailure::Capture { path: path.clone(), message };
        let file = File::create(&tmp).map_err(|e| fail(e.to_string()))?;
        let writer = CaptureWriter::new(BufWriter::new(file)).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            fail(e.to_string())
        });
        Ok(Self { writer: writer?, path, tmp })
    }

    fn fail(&self, message: String) -> RunFailure {
        let _ = std::fs::remove_file(&self.tmp);
        RunFailure::Capture { path: self.path.clone(), message }
    }

    fn write(&mut self, sim: &mut Simulation) -> Result<(), RunFailure> {
        let packets = sim.take_capture();
        self.writer.write(&packets).map_err(|e| self.fail(e.to_string()))
    }

    fn finish(self) -> Result<(), RunFailure> {
        let Self { path, tmp, writer } = self;
        let done = writer
            .into_inner()
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|mut f| f.flush().and_then(|()| f.sync_all()))
            .and_then(|()| std::fs::rename(&tmp, &path));
        done.map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            RunFailure::Capture { path, message: e.to_string() }
        })
    }

    fn discard(self) {
        let _ = std::fs::remove_file(&self.tmp);
    }
}

fn drive(
    scenario: &Scenario,
    controller: ControllerChoice,
    seed: u64,
    mut run: RunOptions,
    stream: StreamOptions,
    stop: &AtomicBool,
    tx: &SyncSender<Message>,
) {
    let StreamOptions { slice_events, piece_rows, pcap, hold } = stream;
    let mut hold = hold.unwrap_or_else(|| Box::new(|work: &mut dyn FnMut()| work()));
    run.capture = pcap.is_some();
    let mut built = None;
    let mut inputs = Some((controller, run));
    hold(&mut || {
        let (choice, run) = inputs.take().expect("built once");
        built = Some(Simulation::new(scenario, choice, seed, run));
    });
    let mut sim = match built.expect("the hold runs its work") {
        Ok(sim) => sim,
        Err(e) => {
            let _ = tx.send(Message::Failed(e.into()));
            return;
        }
    };
    sim.hand_over_every(piece_rows);
    if tx.send(Message::Started(Box::new(sim.meta().clone()))).is_err() {
        return;
    }
    let mut capture = match pcap.map(Capture::create).transpose() {
        Ok(c) => c,
        Err(e) => {
            let _ = tx.send(Message::Failed(e));
            return;
        }
    };
    let slice = slice_events.max(1);
    let mut simulating = WallDuration::ZERO;
    loop {
        if stop.load(Ordering::Relaxed) {
            if let Some(c) = capture {
                c.discard();
            }
            return;
        }
        let t0 = std::time::Instant::now();
        let mut done = false;
        hold(&mut || done = sim.run_for(slice));
        simulating += t0.elapsed();
        if let Some(c) = &mut capture {
            if let Err(e) = c.write(&mut sim) {
                let _ = tx.send(Message::Failed(e));
                return;
            }
        }
        if done || sim.trace_rows() >= piece_rows {
            let piece = Box::new(sim.take_trace());
            if tx.send(Message::Piece(piece)).is_err() {
                if let Some(c) = capture {
                    c.discard();
                }
                return;
            }
        }
        if done {
            break;
        }
    }
    if let Some(c) = capture {
        if let Err(e) = c.finish() {
            let _ = tx.send(Message::Failed(e));
            return;
        }
    }
    let _ = tx.send(Message::Done { events: sim.events(), simulating_s: simulating.as_secs_f64() });
}
