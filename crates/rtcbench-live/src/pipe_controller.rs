//! A Python controller for an emulated call: the media agent's [`Controller`], whose decisions come
//! from a child process (`python -m rtcbench.emulation._controller_agent`) that runs the user's
//! `rtcbench.Controller` subclass, over a pipe of JSON lines (the protocol is in that module's
//! docs). The simulator runs the same class in-process (`rtcbench-py`); both feed it the same
//! inputs, `on_packet_sent` (if overridden), `on_feedback` and `on_timeout`, and ask its getters
//! after each, so a controller behaves alike in both modes.
//!
//! The helper sends what the class's methods return as it finds them; the checks on those answers
//! are the simulator's own (`rtcbench_cc::user`), so a value is accepted, typed and refused alike in
//! both modes, with the same message.
//!
//! Each input is a round trip (tens of microseconds). A controller that fails, or a helper that
//! ends, is recorded once in the shared [`Failure`] slot; from then on the controller keeps its
//! last answers and the agent ends the call with that message.

use std::cell::RefCell;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::rc::Rc;

use std::path::{Path, PathBuf};

use rtcbench_cc::user::{self, BadAnswer};
use rtcbench_cc::{Controller, ControllerMetrics, Ecn, FeedbackReport, ProbeInfo, SentPacket};
use rtcbench_rtp::CallPlan;
use rtcbench_units::{Bitrate, Instant};
use serde::Deserialize;
use serde_json::{json, Value};

/// The first failure of the controller, as its one-line message (the controller's label first),
/// shared with the agent that reports it.
pub type Failure = Rc<RefCell<Option<String>>>;

/// The feedback the Python class asks its receiver for (`Controller.feedback`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserFeedback {
    Twcc,
    Ccfb,
}

#[derive(Deserialize)]
struct Hello {
    overrides: Vec<String>,
    feedback: UserFeedback,
}

/// The getters' answers after an input, each as the helper found it ([`wire`]).
#[derive(Deserialize)]
struct Answers {
    target: Value,
    pacing: Value,
    timeout: Value,
}

/// `metrics()`'s answer: the dict's pairs (`None` if it is not a dict) and its `repr`.
#[derive(Deserialize)]
struct MetricsAnswer {
    metrics: Option<Vec<(Value, Value)>>,
    r: String,
}

/// A value a method returned, as the helper sends it (`_controller_agent._wire`): `null`, a plain
/// int, or an object with its `repr` in `r` and one of `b` (a bool), `i` (an int that is not an
/// `int`), `f` (a real number, as Python prints the float) or `s` (a str); `r` alone is anything
/// else. Returns the value and its `repr`.
fn wire(v: &Value) -> (user::Value, String) {
    let shown = || v.get("r").and_then(Value::as_str).unwrap_or("?").to_string();
    match v {
        Value::Null => (user::Value::None, "None".to_string()),
        Value::Number(n) => match n.as_i64() {
            Some(i) => (user::Value::Int(i), i.to_string()),
            None => (user::Value::Other, n.to_string()),
        },
        Value::Object(o) => {
            let value = if let Some(b) = o.get("b").and_then(Value::as_bool) {
                user::Value::Bool(b)
            } else if let Some(i) = o.get("i").and_then(Value::as_i64) {
                user::Value::Int(i)
            } else if let Some(x) = o.get("f").and_then(Value::as_str).and_then(|f| f.parse().ok()) {
                user::Value::Float(x)
            } else if let Some(s) = o.get("s").and_then(Value::as_str) {
                user::Value::Str(s.to_string())
            } else {
                user::Value::Other
            };
            (value, shown())
        }
        _ => (user::Value::Other, v.to_string()),
    }
}

struct Pipe {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Pipe {
    fn ask(&mut self, message: &Value) -> Result<&str, String> {
        let mut bytes = serde_json::to_vec(message).expect("JSON");
        bytes.push(b'\n');
        self.stdin
            .write_all(&bytes)
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("the Python controller stopped listening ({e})"))?;
        self.line.clear();
        match self.stdout.read_line(&mut self.line) {
            Ok(0) | Err(_) => Err("the Python controller ended".to_string()),
            Ok(_) => Ok(&self.line),
        }
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct PipeController {
    /// `controller NAME (call N)`, as the simulator names it in messages.
    label: String,
    /// Where the helper's standard error goes: its last line says why it ended.
    stderr: PathBuf,
    pipe: RefCell<Pipe>,
    packet_sent: bool,
    timeout_asked: bool,
    pacing_asked: bool,
    metrics_asked: bool,
    target: Bitrate,
    pacing: Option<Bitrate>,
    timeout: Option<Instant>,
    /// `now` of the latest input, and of the latest `on_timeout`, for the deadline's check.
    now: Instant,
    timed_out: Option<Instant>,
    checker: RefCell<user::Metrics>,
    metrics: RefCell<ControllerMetrics>,
    failure: Failure,
}

/// How the media agent runs a Python controller (its configuration's `python`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Helper {
    /// The helper's command line (`python -m rtcbench.emulation._controller_agent CONFIG`).
    pub argv: Vec<String>,
    /// Where the helper's standard error goes; its last line is the message if it ends.
    pub stderr: PathBuf,
    /// `controller NAME (call N)`, put in front of every message.
    pub label: String,
    /// The columns every controller table has (`_core.trace_schema()`): no metric may take
    /// their names.
    pub reserved: Vec<String>,
}

/// The last line the helper wrote on its standard error, else `seen`.
fn last_line(stderr: &Path, seen: &str) -> String {
    let text = std::fs::read_to_string(stderr).unwrap_or_default();
    text.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or(seen).to_string()
}

impl PipeController {
    /// Starts the helper for the call of `plan`, reads which methods the class overrides and the
    /// feedback it asks for, and starts the controller with the `CallInfo` the simulator gives it
    /// (`rtcbench_sim::CallSetup`, from the same plan). An error is the one-line message.
    pub fn spawn(helper: &Helper, plan: &CallPlan, failure: Failure) -> Result<(Self, UserFeedback), String> {
        let label = &helper.label;
        let stderr = std::fs::File::create(&helper.stderr)
            .map_err(|e| format!("{label}: creating {}: {e}", helper.stderr.display()))?;
        let (program, args) = helper.argv.split_first().ok_or("no command for the Python controller")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("{label}: cannot start the Python controller ({program}): {e}"))?;
        let stdin = child.stdin.take().expect("piped");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        let hello: Option<Hello> = match stdout.read_line(&mut line) {
            Ok(n) if n > 0 => serde_json::from_str(&line).ok(),
            _ => None,
        };
        let mut pipe = Pipe { child, stdin, stdout, line: String::new() };
        let Some(hello) = hello else {
            let _ = pipe.child.wait();
            return Err(format!(
                "{label}: {}",
                last_line(&helper.stderr, "the Python controller did not start")
            ));
        };
        let has = |m: &str| hello.overrides.iter().any(|o| o == m);
        let limits = plan.limits();
        let start = plan.start_at();
        let mut c = Self {
            label: label.clone(),
            stderr: helper.stderr.clone(),
            packet_sent: has("on_packet_sent"),
            timeout_asked: has("next_timeout_us"),
            pacing_asked: has("pacing_rate"),
            metrics_asked: has("metrics"),
            pipe: RefCell::new(pipe),
            target: limits.start,
            pacing: None,
            timeout: None,
            now: start,
            timed_out: None,
            checker: RefCell::new(user::Metrics::new(helper.reserved.iter().cloned())),
            metrics: RefCell::new(ControllerMetrics::new()),
            failure,
        };
        let call = json!({
            "call": plan.call,
            "start_us": start.as_micros(),
            "min_rate_bps": limits.min.as_bps(),
            "max_rate_bps": limits.max.as_bps(),
            "start_rate_bps": limits.start.as_bps(),
            "priority": plan.priority,
            "seed": plan.controller_seed,
        });
        c.input(start, false, &json!({"m": "start", "now": start.as_micros(), "call": call}));
        Ok((c, hello.feedback))
    }

    fn failed(&self) -> bool {
        self.failure.borrow().is_some()
    }

    fn fail(&self, why: String) {
        self.failure.borrow_mut().get_or_insert(why);
    }

    fn refused(&self, bad: BadAnswer) {
        self.fail(format!("{}: {bad}", self.label));
    }

    /// One message and its answer, parsed; a helper that ended or answered nonsense fails the
    /// controller with the last line it wrote on its standard error.
    fn ask<T: serde::de::DeserializeOwned>(&self, message: &Value) -> Option<T> {
        let mut pipe = self.pipe.borrow_mut();
        let answer = pipe.ask(message).and_then(|line| {
            serde_json::from_str::<T>(line).map_err(|e| format!("the Python controller said {line:?} ({e})"))
        });
        match answer {
            Ok(a) => Some(a),
            Err(why) => {
                // Its message is on its standard error once it has ended.
                let _ = pipe.child.kill();
                let _ = pipe.child.wait();
                self.fail(format!("{}: {}", self.label, last_line(&self.stderr, &why)));
                None
            }
        }
    }

    /// One input at `now` (`timeout` if it is `on_timeout`), then the getters' answers, checked as
    /// the simulator checks them.
    fn input(&mut self, now: Instant, timeout: bool, message: &Value) {
        if self.failed() {
            return;
        }
        self.now = now;
        if timeout {
            self.timed_out = Some(now);
        }
        let Some(a) = self.ask::<Answers>(message) else { return };
        let (target, shown) = wire(&a.target);
        match user::rate("target_rate", now, &target, false, || shown) {
            Ok(rate) => self.target = rate.expect("not optional"),
            Err(bad) => return self.refused(bad),
        }
        if self.pacing_asked {
            let (pacing, shown) = wire(&a.pacing);
            match user::rate("pacing_rate", now, &pacing, true, || shown) {
                Ok(rate) => self.pacing = rate,
                Err(bad) => return self.refused(bad),
            }
        }
        if self.timeout_asked {
            let (timeout, shown) = wire(&a.timeout);
            match user::timeout(now, self.timed_out, &timeout, || shown) {
                Ok(t) => self.timeout = t,
                Err(bad) => self.refused(bad),
            }
        }
    }
}

fn probe(p: Option<ProbeInfo>) -> Value {
    p.map_or(Value::Null, |p| json!([p.cluster_id, p.min_probes, p.min_bytes.as_bytes()]))
}

fn report(r: &FeedbackReport) -> Value {
    let packets: Vec<Value> = r
        .packets
        .iter()
        .map(|p| {
            json!([
                p.seq,
                p.size.as_bytes(),
                p.sent_at.as_micros(),
                p.arrival.map(Instant::as_micros),
                Ecn::name(p.ecn),
                p.is_audio,
                probe(p.probe)
            ])
        })
        .collect();
    json!({
        "packets": packets,
        "data_in_flight": r.data_in_flight.as_bytes(),
        "loss": r.loss.map(|l| json!({
            "fraction_lost": l.fraction_lost,
            "packets_lost_delta": l.packets_lost_delta,
            "packets_received_delta": l.packets_received_delta,
        })),
        "rtt_us": r.rtt.map(|d| d.as_micros()),
        "remb_bps": r.remb.map(Bitrate::as_bps),
    })
}

impl Controller for PipeController {
    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        if self.packet_sent {
            let p = json!([
                pkt.seq,
                pkt.size.as_bytes(),
                pkt.sent_at.as_micros(),
                pkt.is_audio,
                pkt.data_in_flight.as_bytes(),
                probe(pkt.probe)
            ]);
            self.input(now, false, &json!({"m": "sent", "now": now.as_micros(), "p": p}));
        }
    }

    fn on_feedback(&mut self, now: Instant, r: &FeedbackReport) {
        self.input(now, false, &json!({"m": "feedback", "now": now.as_micros(), "r": report(r)}));
    }

    fn on_timeout(&mut self, now: Instant) {
        self.input(now, true, &json!({"m": "timeout", "now": now.as_micros()}));
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.failed() || !self.timeout_asked {
            return None;
        }
        self.timeout
    }

    fn target_rate(&self) -> Bitrate {
        self.target
    }

    fn pacing_rate(&self) -> Option<Bitrate> {
        if self.pacing_asked {
            self.pacing
        } else {
            None
        }
    }

    fn metrics(&self) -> ControllerMetrics {
        if self.metrics_asked && !self.failed() {
            if let Some(m) = self.ask::<MetricsAnswer>(&json!({"m": "metrics"})) {
                let entries: Option<Vec<(user::Value, user::Value)>> =
                    m.metrics.map(|pairs| pairs.iter().map(|(k, v)| (wire(k).0, wire(v).0)).collect());
                match self.checker.borrow_mut().check(self.now, entries.as_deref(), || m.r) {
                    Ok(typed) => *self.metrics.borrow_mut() = typed,
                    Err(bad) => self.refused(bad),
                }
            }
        }
        self.metrics.borrow().clone()
    }
}
