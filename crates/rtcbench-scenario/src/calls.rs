//! The calls of a run: every `[[calls]]` entry, then the streams each `[[conferences]]` entry
//! expands into, in the order `meta.calls` lists them (docs/traces.md). The world builds its
//! endpoints from this list, validation checks its routes and flow names, and live agents plan
//! from it, so all three agree on what a conference is.

use super::{CallSpec, ScenarioSpec, Topology};

/// What part a call plays in its conference (`meta.calls[].role`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A call between two endpoints: a `[[calls]]` entry, or a mesh or one-to-many stream.
    Call,
    /// A participant's stream up to an SFU.
    Publish,
    /// An SFU's downlink of a published stream to one viewer.
    Forward,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Self::Call => "call",
            Self::Publish => "publish",
            Self::Forward => "forward",
        }
    }
}

/// One call of the run.
#[derive(Clone, Debug)]
pub struct RunCall {
    /// `name` or `call<i>` for a `[[calls]]` entry; `<conference>.<from>-<to>` for a stream (a
    /// forward leg is named after the publisher and the viewer).
    pub name: String,
    /// The call as the endpoints are built from it, with its ends: for a forward leg, the SFU
    /// node to the viewer, with the published stream's settings.
    pub spec: CallSpec,
    /// Index into `ScenarioSpec::conferences`, if the call is a conference's stream.
    pub conference: Option<usize>,
    pub role: Role,
    /// For a forward leg: the id (index in this list) of the publish call it carries.
    pub forwards: Option<u32>,
    /// The SFU node of an SFU conference's calls.
    pub sfu: Option<String>,
    /// What the call's random streams are derived from (`rtcbench_net::rng::rng_for`): `call<i>`
    /// for a `[[calls]]` entry, as always; `conference/<name>` for a stream, so that adding a
    /// call or a conference moves no other call's draws.
    pub label: String,
    /// Where the scenario file describes it, for errors: `calls.<i>` or `conferences.<i>`.
    pub field: String,
}

impl RunCall {
    /// `meta.calls[].topology`: `p2p` for a `[[calls]]` entry, else the conference's.
    pub fn topology(&self, spec: &ScenarioSpec) -> &'static str {
        self.conference.map_or("p2p", |c| spec.conferences[c].topology.name())
    }
}

/// Every call of a validated scenario, in `meta.calls` order: `[[calls]]` in file order, then
/// each conference's streams in file order, pairs in participant order (for an SFU: every
/// publish call, then the forward legs ordered by publisher and viewer).
pub fn run_calls(spec: &ScenarioSpec) -> Vec<RunCall> {
    let mut out: Vec<RunCall> = spec
        .calls
        .iter()
        .enumerate()
        .map(|(i, c)| RunCall {
            name: c.name_or_default(i),
            spec: c.clone(),
            conference: None,
            role: Role::Call,
            forwards: None,
            sfu: None,
            label: format!("call{i}"),
            field: format!("calls.{i}"),
        })
        .collect();
    for (i, conf) in spec.conferences.iter().enumerate() {
        let name = conf.name_or_default(i);
        let stream = |from: &str, to: &str, via: Option<&String>, role: Role| {
            let stream = format!("{name}.{from}-{to}");
            RunCall {
                spec: CallSpec {
                    name: Some(stream.clone()),
                    from: from.to_string(),
                    to: to.to_string(),
                    via: via.cloned(),
                    ..conf.call.0.clone()
                },
                label: format!("conference/{stream}"),
                name: stream,
                conference: Some(i),
                role,
                forwards: None,
                sfu: None,
                field: format!("conferences.{i}"),
            }
        };
        let parts = &conf.participants;
        match conf.topology {
            Topology::Mesh => {
                for a in parts {
                    for b in parts.iter().filter(|b| *b != a) {
                        out.push(stream(a, b, conf.via.as_ref(), Role::Call));
                    }
                }
            }
            Topology::OneToMany => {
                let source = conf.source.as_deref().expect("validated: one-to-many has a source");
                for b in parts.iter().filter(|b| *b != source) {
                    out.push(stream(source, b, conf.via.as_ref(), Role::Call));
                }
            }
            Topology::Sfu => {
                let sfu = conf.sfu.as_deref().expect("validated: an SFU conference has its node");
                let first = out.len();
                for p in parts {
                    out.push(RunCall { sfu: Some(sfu.to_string()), ..stream(p, sfu, None, Role::Publish) });
                }
                for (k, p) in parts.iter().enumerate() {
                    for v in parts.iter().filter(|v| *v != p) {
                        let mut leg = stream(p, v, None, Role::Forward);
                        leg.spec.from = sfu.to_string();
                        leg.forwards = Some((first + k) as u32);
                        leg.sfu = Some(sfu.to_string());
                        out.push(leg);
                    }
                }
            }
        }
    }
    out
}

/// How many calls `run_calls` makes, without making them (checked against the limit first).
pub fn count(spec: &ScenarioSpec) -> usize {
    let streams = spec.conferences.iter().map(|c| {
        let n = c.participants.len();
        match c.topology {
            Topology::Mesh => n * n.saturating_sub(1),
            Topology::OneToMany => n.saturating_sub(1),
            Topology::Sfu => n * n,
        }
    });
    spec.calls.len() + streams.sum::<usize>()
}
