//! What the relay is told to do, as JSON from `rtcbench.testbed.relay`: the scenario's network
//! as the simulator would build it (`rtcbench_scenario::elements::NetworkPlan`, serialised)
//! and the testbed's interfaces, one per scenario node.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use rtcbench_scenario::elements::NetworkPlan;
use rtcbench_units::Duration;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelayConfig {
    pub plan: NetworkPlan,
    pub interfaces: Vec<Interface>,
    /// Where the relay writes its report, drop log and captures (the run's folder, or a
    /// temporary one inside it).
    pub out_dir: PathBuf,
    /// How long before a departure the relay stops sleeping and spins on the clock
    /// (docs/adr/0001-relay-packet-io.md: a wake-up is late by tens of µs, a spin is not).
    #[serde(default = "default_spin")]
    pub spin: Duration,
    /// Write `relay-in.pcap` (every frame as it arrived) and `relay-out.pcap` (as delivered).
    #[serde(default)]
    pub capture: bool,
    /// Write `relay-packets.csv` (every frame's arrival, departure or drop, and the background
    /// packets) and `relay-links.csv` (every link's state, sampled as the simulator samples it):
    /// what an emulated run's trace tables are made from.
    #[serde(default)]
    pub trace: bool,
    /// Bytes of each UDP payload `relay-packets.csv` shows (`head`, hex): the default holds an
    /// RTP fixed header or an RTCP packet's first words, what an emulated run needs; a browser run
    /// asks for more, to read the header extensions (the transport-wide sequence number) and a
    /// TURN ChannelData header before them.
    #[serde(default = "default_udp_head")]
    pub udp_head: usize,
    /// The CPU the forwarding thread runs on, alone among the relay's threads; the testbed sends
    /// the namespaces' packet processing to the other CPUs (`rtcbench.testbed.netns`), so that a
    /// frame the relay sends never makes it run the receiving host's TCP (docs/emulation.md,
    /// "The relay"). None: anywhere.
    #[serde(default)]
    pub cpu: Option<usize>,
}

/// The `udp_head` of an emulated run: an RTP fixed header (RFC 3550 §5.1).
fn default_udp_head() -> usize {
    12
}

/// The most `udp_head` may ask for: the bytes a frame's record keeps without a capture. 96: an
/// RTP header with its extensions inside a TURN Send indication (36 bytes before it, RFC 8656
/// §11), as Firefox relays media.
pub const MAX_UDP_HEAD: usize = 96;

fn default_spin() -> Duration {
    Duration::from_micros(50)
}

/// A node's veth pair as the relay sees it: its end in the net namespace, and the host's address
/// and MAC at the other end.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interface {
    pub node: String,
    /// The veth end in the net namespace, e.g. `rb1a2b3c-r0`.
    pub name: String,
    pub host_ip: Ipv4Addr,
    /// "02:72:62:00:01:02"
    pub host_mac: String,
}

impl Interface {
    pub fn mac(&self) -> Result<[u8; 6], String> {
        let bad = || {
            format!(
                "interface {}: host_mac {:?} is not a MAC address like 02:00:00:00:00:01",
                self.name, self.host_mac
            )
        };
        let parts: Vec<&str> = self.host_mac.split(':').collect();
        if parts.len() != 6 {
            return Err(bad());
        }
        let mut mac = [0u8; 6];
        for (byte, part) in mac.iter_mut().zip(parts) {
            *byte = u8::from_str_radix(part, 16).map_err(|_| bad())?;
        }
        Ok(mac)
    }
}
