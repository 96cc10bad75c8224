//! A Python controller for an emulated call: the media agent's [`Controller`], whose decisions come
//! from a child process (`python -m rtcbench.emulation._controller_agent`) that runs the user's
//! `rtcbench.Controller` subclass, over a pipe of JSON lines (the protocol is in that module's
//! docs). The simulator runs the same class in-process (`rtcbench-py`); both feed it the same
//! inputs, `on_packet_sent` (if overridden), `on_feedback` and `on_timeout`, and ask its getters
//! after each, so a controller behaves alike in both modes.
//!
//! Each input is a round trip (tens of microseconds). A controller that fails, or a helper that
//! ends, is recorded once in the shared [`Failure`] slot; from then on the controller keeps its
//! last answers and the agent ends the call with the helper's message.

use std::cell::RefCell;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::rc::Rc;

use rtcbench_cc::{Controller, ControllerMetrics, Ecn, FeedbackReport, Metric, ProbeInfo, SentPacket};
use rtcbench_rtp::CallPlan;
use rtcbench_units::{Bitrate, DataSize, Instant};
use serde::Deserialize;
use serde_json::{json, Value};

/// The first failure of the controller, shared with the agent that reports it.
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

#[derive(Deserialize)]
struct Answers {
    target: f64,
    pacing: Option<f64>,
    timeout: Option<i64>,
}

#[derive(Deserialize)]
struct MetricsAnswer {
    metrics: Vec<(String, Option<f64>)>,
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
    pipe: RefCell<Pipe>,
    packet_sent: bool,
    timeout_asked: bool,
    pacing_asked: bool,
    metrics_asked: bool,
    target: Bitrate,
    pacing: Option<Bitrate>,
    timeout: Option<Instant>,
    metrics: RefCell<ControllerMetrics>,
    failure: Failure,
}

impl PipeController {
    /// Starts the helper (`argv`, its stderr to `stderr`) for the call of `plan`, reads which
    /// methods the class overrides and the feedback it asks for, and starts the controller with
    /// the `CallInfo` the simulator gives it (`rtcbench_sim::CallSetup`, from the same plan).
    pub fn spawn(
        argv: &[String],
        stderr: std::fs::File,
        plan: &CallPlan,
        failure: Failure,
    ) -> Result<(Self, UserFeedback), String> {
        let (program, args) = argv.split_first().ok_or("no command for the Python controller")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start the Python controller ({program}): {e}"))?;
        let stdin = child.stdin.take().expect("piped");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        let hello: Option<Hello> = match stdout.read_line(&mut line) {
            Ok(n) if n > 0 => serde_json::from_str(&line).ok(),
            _ => None,
        };
        let pipe = Pipe { child, stdin, stdout, line: String::new() };
        let hello = hello.ok_or("the Python controller did not start")?;
        let has = |m: &str| hello.overrides.iter().any(|o| o == m);
        let limits = plan.limits();
        let mut c = Self {
            packet_sent: has("on_packet_sent"),
            timeout_asked: has("next_timeout_us"),
            pacing_asked: has("pacing_rate"),
            metrics_asked: has("metrics"),
            pipe: RefCell::new(pipe),
            target: limits.start,
            pacing: None,
            timeout: None,
            metrics: RefCell::new(ControllerMetrics::new()),
            failure,
        };
        let start = plan.start_at().as_micros();
        let call = json!({
            "call": plan.call,
            "start_us": start,
            "min_rate_bps": limits.min.as_bps(),
            "max_rate_bps": limits.max.as_bps(),
            "start_rate_bps": limits.start.as_bps(),
            "priority": plan.priority,
            "seed": plan.controller_seed,
        });
        c.input(&json!({"m": "start", "now": start, "call": call}));
        Ok((c, hello.feedback))
    }

    fn failed(&self) -> bool {
        self.failure.borrow().is_some()
    }

    fn fail(&self, why: String) {
        self.failure.borrow_mut().get_or_insert(why);
    }

    /// One input, then the getters' answers.
    fn input(&mut self, message: &Value) {
        if self.failed() {
            return;
        }
        let answer = {
            let mut pipe = self.pipe.borrow_mut();
            pipe.ask(message).and_then(|line| {
                serde_json::from_str::<Answers>(line)
                    .map_err(|e| format!("the Python controller said {line:?} ({e})"))
            })
        };
        match answer {
            Ok(a) => {
                // Converted as the simulator converts a Python controller's answers.
                self.target = Bitrate::from_bps_f64(a.target);
                self.pacing = a.pacing.map(Bitrate::from_bps_f64);
                self.timeout = a.timeout.map(|us| Instant::ZERO + rtcbench_units::Duration::from_micros(us));
            }
            Err(why) => self.fail(why),
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
            self.input(&json!({"m": "sent", "now": now.as_micros(), "p": p}));
        }
    }

    fn on_feedback(&mut self, now: Instant, r: &FeedbackReport) {
        self.input(&json!({"m": "feedback", "now": now.as_micros(), "r": report(r)}));
    }

    fn on_timeout(&mut self, now: Instant) {
        self.input(&json!({"m": "timeout", "now": now.as_micros()}));
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
            let answer = {
                let mut pipe = self.pipe.borrow_mut();
                pipe.ask(&json!({"m": "metrics"})).and_then(|line| {
                    serde_json::from_str::<MetricsAnswer>(line)
                        .map_err(|e| format!("the Python controller said {line:?} ({e})"))
                })
            };
            match answer {
                Ok(m) => *self.metrics.borrow_mut() = typed(&m.metrics),
                Err(why) => self.fail(why),
            }
        }
        self.metrics.borrow().clone()
    }
}

/// Python metrics typed as the simulator types them (`rtcbench-py`): a name ending in `_bps` is
/// a rate and one ending in `_bytes` a size (the unit then comes back as the column's suffix);
/// any other is a number.
fn typed(values: &[(String, Option<f64>)]) -> ControllerMetrics {
    let mut m = ControllerMetrics::new();
    for (key, value) in values {
        let metric = if let Some(name) = key.strip_suffix("_bps") {
            (ControllerMetrics::intern(name), Metric::Rate(value.map(Bitrate::from_bps_f64)))
        } else if let Some(name) = key.strip_suffix("_bytes") {
            (
                ControllerMetrics::intern(name),
                Metric::Size(value.map(|v| DataSize::bytes(v.round().max(0.0) as u64))),
            )
        } else {
            (ControllerMetrics::intern(key), Metric::Real(*value))
        };
        m = m.with(metric.0, metric.1);
    }
    m
}
