//! Which two-party protocol runs a circuit: Yao's garbled circuits, GMW, or `auto`, which
//! measures the link and picks the one it predicts to finish first.
//!
//! Both parties state their `--protocol` in the [hello](crate::handshake) and must state
//! the same. Under `auto`, after that first hello:
//! 1. A ⇄ B: [`PROBE_PINGS`] small ping-pong frames (A pings, B echoes): the round-trip time
//!    is their minimum.
//! 2. A → B: [`PROBE_BYTES`] of zeros, then B → A a one-byte receipt: A's estimate of the
//!    bandwidth is the bytes over (elapsed time − one round trip).
//! 3. A → B: A's decision (one byte) and the figures behind it, which B prints as A does.
//!
//! The probe carries no secret. The chosen protocol then runs as if it had been asked for,
//! starting with its own hello (so both check again that they run the same).
//!
//! The cost model (why each protocol costs what it does, with the constants measured on
//! this repository's reference machine) is [`predict`]; README "Protocols" shows it
//! against measured runs.

use std::fmt;
use std::time::{Duration, Instant};

use pgc_circuit::{GateSource, Op, Visibility};
use pgc_garble::Garbling;
use pgc_net::Channel;

use crate::yao::{HelloTerms, Party, ProtocolError, begin};

/// The protocol a run uses (or `Auto`: chosen at the handshake).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ProtocolChoice {
    /// Yao's garbled circuits: A garbles, B evaluates; a constant number of rounds.
    #[default]
    Yao,
    /// GMW: both parties hold XOR shares of every wire; one round per AND level, with
    /// multiplication triples from a setup phase.
    Gmw,
    /// Measure the link at the handshake and pick Yao or GMW.
    Auto,
}

impl ProtocolChoice {
    pub fn name(self) -> &'static str {
        match self {
            ProtocolChoice::Yao => "yao",
            ProtocolChoice::Gmw => "gmw",
            ProtocolChoice::Auto => "auto",
        }
    }

    pub fn parse(name: &str) -> Result<ProtocolChoice, String> {
        match name {
            "yao" => Ok(ProtocolChoice::Yao),
            "gmw" => Ok(ProtocolChoice::Gmw),
            "auto" => Ok(ProtocolChoice::Auto),
            other => Err(format!("unknown protocol {other:?}: use yao, gmw or auto")),
        }
    }

    pub(crate) fn to_byte(self) -> u8 {
        match self {
            ProtocolChoice::Yao => 0,
            ProtocolChoice::Gmw => 1,
            ProtocolChoice::Auto => 2,
        }
    }

    pub(crate) fn from_byte(b: u8) -> Option<ProtocolChoice> {
        match b {
            0 => Some(ProtocolChoice::Yao),
            1 => Some(ProtocolChoice::Gmw),
            2 => Some(ProtocolChoice::Auto),
            _ => None,
        }
    }
}

impl fmt::Display for ProtocolChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the handshake measured about the link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkEstimate {
    /// Round-trip time (the least of the pings).
    pub rtt: Duration,
    /// Bytes per second one way (A → B), as the probe transfer saw it.
    pub bytes_per_sec: f64,
}

/// The circuit facts the model needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CircuitShape {
    pub and_gates: u64,
    /// AND depth: GMW's online rounds.
    pub and_depth: u64,
}

/// The AND gates and AND depth of `circuit` (the depth of its deepest AND gate, which is
/// GMW's rounds for a circuit that fits one window), in one pass over its gate stream with
/// one depth counter per wire slot.
pub fn circuit_shape<S: GateSource + ?Sized>(circuit: &S) -> CircuitShape {
    let mut depth = vec![0u32; circuit.layout().num_wires as usize];
    let mut max = 0u32;
    let _ = circuit.for_each_chunk(&mut |gates| -> Result<(), ()> {
        for g in gates {
            let d = match g.op {
                Op::And => depth[g.a as usize].max(depth[g.b as usize]) + 1,
                Op::Xor => depth[g.a as usize].max(depth[g.b as usize]),
                Op::Inv | Op::Copy => depth[g.a as usize],
                Op::Const => 0,
            };
            max = max.max(d);
            depth[g.out as usize] = d;
        }
        Ok(())
    });
    CircuitShape {
        and_gates: circuit.and_count(),
        and_depth: max as u64,
    }
}

/// Per-machine costs the model uses. The defaults were fitted to `scripts/bench_gmw.py` on
/// an AMD EPYC (Zen 5) vCPU pair of this project's reference machine, both parties on it
/// (BENCHMARKS.md, "GMW next to Yao": AES-128, MVMul, BioMatch, MExp within ≈ 50 %, the
/// rate-limited runs within 5 %);
/// other machines differ by a factor, which matters little where one protocol wins by more.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostModel {
    /// Seconds per AND gate of Yao on compiled programs (garbling, evaluating and the XOR
    /// gates around each AND), compute only.
    pub yao_sec_per_and: f64,
    /// Seconds per triple of GMW's setup (two random OTs, and the pass over the gates that
    /// plans the rounds), compute only.
    pub gmw_setup_sec_per_and: f64,
    /// Seconds per AND gate of GMW's online phase, compute only.
    pub gmw_online_sec_per_and: f64,
    /// Fixed cost of one GMW round besides the link's latency (system calls, wake-ups).
    pub gmw_round_overhead: Duration,
    /// Fixed cost of one set of base OTs (Yao runs one, GMW two: an OT extension each way).
    pub base_ot: Duration,
    /// Yao's compute per AND gate with three-halves garbling over that with half-gates (6
    /// hash calls garbling and 3 evaluating against 4 and 2, and the dicing arithmetic).
    pub three_halves_compute_factor: f64,
}

impl Default for CostModel {
    fn default() -> CostModel {
        CostModel {
            yao_sec_per_and: 1.0 / 35e6,
            gmw_setup_sec_per_and: 1.0 / 16e6,
            gmw_online_sec_per_and: 1.0 / 35e6,
            gmw_round_overhead: Duration::from_micros(15),
            base_ot: Duration::from_millis(6),
            three_halves_compute_factor: THREE_HALVES_COMPUTE_FACTOR,
        }
    }
}

/// Bytes on the wire per AND gate: Yao's two garbled rows; GMW's setup (two IKNP OTs of
/// 16 bytes, one in each direction, so 16 bytes each way) and online (2 bits each way).
const YAO_BYTES_PER_AND: f64 = 32.0;
const GMW_SETUP_BYTES_PER_AND_EACH_WAY: f64 = 16.0;
const GMW_ONLINE_BYTES_PER_AND_EACH_WAY: f64 = 0.25;

/// Three-halves' tables: 1.5κ + 5 bits per AND.
const THREE_HALVES_BYTES_PER_AND: f64 = 197.0 / 8.0;
/// See [`CostModel::three_halves_compute_factor`]: from the in-memory garbling and
/// evaluation rates of `pgc bench garbling` (BENCHMARKS.md, "Three-halves garbling": 4–6×
/// on the reference machine, where half-gates has batched VAES kernels and three-halves a
/// straightforward one).
const THREE_HALVES_COMPUTE_FACTOR: f64 = 5.0;

/// Predicted seconds of each protocol for one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    pub yao: f64,
    pub gmw_setup: f64,
    pub gmw_online: f64,
}

impl Prediction {
    pub fn gmw(&self) -> f64 {
        self.gmw_setup + self.gmw_online
    }
}

/// Predicts both protocols' time on this link. Streaming overlaps computing and sending,
/// so each bulk phase costs the larger of the two; every message exchange that waits for
/// the peer costs a round trip (Yao: about 6 in all, with the OT; GMW: setup about 8,
/// online one latency per AND level plus input and output exchanges).
pub fn predict(shape: CircuitShape, link: LinkEstimate, model: &CostModel) -> Prediction {
    let ands = shape.and_gates as f64;
    let rtt = link.rtt.as_secs_f64();
    let bw = link.bytes_per_sec.max(1.0);
    let yao = model.base_ot.as_secs_f64()
        + 6.0 * rtt
        + (ands * model.yao_sec_per_and).max(ands * YAO_BYTES_PER_AND / bw);
    let gmw_setup = 2.0 * model.base_ot.as_secs_f64()
        + 8.0 * rtt
        + (ands * model.gmw_setup_sec_per_and).max(ands * GMW_SETUP_BYTES_PER_AND_EACH_WAY / bw);
    let gmw_online = 3.0 * rtt
        + shape.and_depth as f64 * (rtt / 2.0 + model.gmw_round_overhead.as_secs_f64())
        + (ands * model.gmw_online_sec_per_and).max(ands * GMW_ONLINE_BYTES_PER_AND_EACH_WAY / bw);
    Prediction {
        yao,
        gmw_setup,
        gmw_online,
    }
}

/// The protocol `auto` picks: the one predicted to finish the whole run (setup included)
/// first, and the sentence that says why.
pub fn decide(
    shape: CircuitShape,
    link: LinkEstimate,
    model: &CostModel,
) -> (ProtocolChoice, String) {
    let p = predict(shape, link, model);
    let pick = if p.gmw() < p.yao {
        ProtocolChoice::Gmw
    } else {
        ProtocolChoice::Yao
    };
    let why = format!(
        "{} AND gates at AND depth {} over a link of {:.2} ms round trip and {}: predicted \
         Yao {:.1} ms, GMW {:.1} ms (setup {:.1} + online {:.1})",
        shape.and_gates,
        shape.and_depth,
        link.rtt.as_secs_f64() * 1e3,
        rate_text(link.bytes_per_sec),
        p.yao * 1e3,
        p.gmw() * 1e3,
        p.gmw_setup * 1e3,
        p.gmw_online * 1e3
    );
    (pick, why)
}

/// The garbling scheme `auto` picks for a run of Yao on this link: three-halves where its
/// smaller tables are predicted to finish the circuit phase at least 5 % sooner than
/// half-gates' (the link, not the CPU, is the bottleneck), else half-gates; and why.
pub fn decide_garbling(
    shape: CircuitShape,
    link: LinkEstimate,
    model: &CostModel,
) -> (Garbling, String) {
    let ands = shape.and_gates as f64;
    let bw = link.bytes_per_sec.max(1.0);
    let compute = ands * model.yao_sec_per_and;
    let half = compute.max(ands * YAO_BYTES_PER_AND / bw);
    let three =
        (compute * model.three_halves_compute_factor).max(ands * THREE_HALVES_BYTES_PER_AND / bw);
    let pick = if three < 0.95 * half {
        Garbling::ThreeHalves
    } else {
        Garbling::HalfGates
    };
    let why = format!(
        "garbling {pick}: the tables predicted to take {:.1} ms with half-gates, {:.1} ms \
         with three-halves over {}",
        half * 1e3,
        three * 1e3,
        rate_text(link.bytes_per_sec)
    );
    (pick, why)
}

fn rate_text(bytes_per_sec: f64) -> String {
    let bits = bytes_per_sec * 8.0;
    if bits >= 1e9 {
        format!("{:.1} Gbit/s", bits / 1e9)
    } else {
        format!("{:.0} Mbit/s", bits / 1e6)
    }
}

/// What `auto` chose: the protocol, the garbling scheme (half-gates unless the run may
/// garble three-halves and the link makes it faster) and why.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoPick {
    pub protocol: ProtocolChoice,
    pub garbling: Garbling,
    pub why: String,
}

/// `--protocol auto` up to the choice: the hello (stating `auto`; the peer must too), then
/// the link probe and A's decision. The caller then runs the chosen protocol, which begins
/// with its own hello. `may_three_halves`: A may choose three-halves garbling if Yao wins
/// (the run is semi-honest, sequential and on the CPU).
#[allow(clippy::too_many_arguments)]
pub fn agree_on_protocol<C: Channel + ?Sized, S: GateSource>(
    ch: &mut C,
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    me: Party,
    inputs: &[Vec<bool>],
    model: &CostModel,
    may_three_halves: bool,
) -> Result<AutoPick, ProtocolError> {
    let terms = HelloTerms {
        protocol: ProtocolChoice::Auto,
        ..HelloTerms::default()
    };
    begin(ch, circuit, owners, visibility, me, inputs, terms)?;
    negotiate(ch, me, || circuit_shape(circuit), model, may_three_halves)
}

/// Ping-pong frames of the probe.
pub const PROBE_PINGS: usize = 5;
/// Bytes A sends to estimate the bandwidth: enough to fill a gigabit link for a few ms.
pub const PROBE_BYTES: usize = 1 << 20;
const DECISION_MAX: usize = 4096;

/// Runs the `auto` probe (after the first hello) and returns the protocol and garbling
/// scheme both parties run, with the reason A gave. A decides from its measurement and
/// `shape` (three-halves only if `may_three_halves`); B follows. The decision message is
/// the protocol's byte, the scheme's byte, then the reason.
pub fn negotiate(
    ch: &mut (impl Channel + ?Sized),
    me: Party,
    shape: impl FnOnce() -> CircuitShape,
    model: &CostModel,
    may_three_halves: bool,
) -> Result<AutoPick, ProtocolError> {
    let bad = |what: &str| ProtocolError::Peer(format!("a malformed link probe: {what}"));
    match me {
        Party::A => {
            let mut rtt = Duration::MAX;
            for i in 0..PROBE_PINGS {
                let t = Instant::now();
                ch.send_frame(&[i as u8])?;
                ch.flush()?;
                let echo = ch.recv_frame(1)?;
                if echo != [i as u8] {
                    return Err(bad("the echo of a ping differs"));
                }
                rtt = rtt.min(t.elapsed());
            }
            let t = Instant::now();
            let zeros = vec![0u8; 64 << 10];
            for _ in 0..PROBE_BYTES / zeros.len() {
                ch.send(&zeros)?;
            }
            ch.flush()?;
            let receipt = ch.recv_frame(1)?;
            if receipt != [1] {
                return Err(bad("no receipt for the bandwidth probe"));
            }
            let transfer = t
                .elapsed()
                .saturating_sub(rtt)
                .max(Duration::from_micros(1));
            let link = LinkEstimate {
                rtt,
                bytes_per_sec: PROBE_BYTES as f64 / transfer.as_secs_f64(),
            };
            let shape = shape();
            let (pick, mut why) = decide(shape, link, model);
            let mut garbling = Garbling::HalfGates;
            if pick == ProtocolChoice::Yao && may_three_halves {
                let (g, reason) = decide_garbling(shape, link, model);
                garbling = g;
                why = format!("{why}; {reason}");
            }
            let mut msg = vec![pick.to_byte(), crate::handshake::garbling_byte(garbling)];
            msg.extend_from_slice(why.as_bytes());
            ch.send_frame(&msg)?;
            ch.flush()?;
            Ok(AutoPick {
                protocol: pick,
                garbling,
                why,
            })
        }
        Party::B => {
            for i in 0..PROBE_PINGS {
                let ping = ch.recv_frame(1)?;
                if ping != [i as u8] {
                    return Err(bad("an unexpected ping"));
                }
                ch.send_frame(&ping)?;
                ch.flush()?;
            }
            let mut sink = vec![0u8; 64 << 10];
            for _ in 0..PROBE_BYTES / sink.len() {
                ch.recv(&mut sink)?;
            }
            ch.send_frame(&[1])?;
            ch.flush()?;
            let msg = ch.recv_frame(DECISION_MAX)?;
            let pick = msg
                .first()
                .and_then(|&b| ProtocolChoice::from_byte(b))
                .filter(|&p| p != ProtocolChoice::Auto)
                .ok_or_else(|| bad("no protocol decision"))?;
            let garbling = msg
                .get(1)
                .and_then(|&b| crate::handshake::garbling_from_byte(b))
                .filter(|&g| g == Garbling::HalfGates || pick == ProtocolChoice::Yao)
                .ok_or_else(|| bad("no garbling decision"))?;
            // Printed on this party's terminal: keep the text, drop control characters.
            let why = String::from_utf8_lossy(&msg[2..])
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            Ok(AutoPick {
                protocol: pick,
                garbling,
                why,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_halves_where_the_link_is_the_bottleneck() {
        let shape = CircuitShape {
            and_gates: 10_000_000,
            and_depth: 100,
        };
        let model = CostModel::default();
        let (slow, why) = decide_garbling(shape, link(1.0, 100.0), &model);
        assert_eq!(slow, Garbling::ThreeHalves, "{why}");
        let (fast, why) = decide_garbling(shape, link(0.05, 20_000.0), &model);
        assert_eq!(fast, Garbling::HalfGates, "{why}");
    }

    #[test]
    fn the_decision_carries_the_garbling_scheme() {
        let (mut ca, mut cb) = pgc_net::MemoryChannel::pair();
        let shape = || CircuitShape {
            and_gates: 1_000,
            and_depth: 900,
        };
        let model = CostModel {
            // As if the CPU were free: any link is the bottleneck.
            yao_sec_per_and: 0.0,
            ..CostModel::default()
        };
        let (a, b) = std::thread::scope(|s| {
            let h = s.spawn(|| negotiate(&mut ca, Party::A, shape, &model, true));
            let b = negotiate(&mut cb, Party::B, shape, &model, false);
            (h.join().unwrap().unwrap(), b.unwrap())
        });
        assert_eq!(a.protocol, ProtocolChoice::Yao);
        assert_eq!(a.garbling, Garbling::ThreeHalves, "{}", a.why);
        assert_eq!(a, b);
    }

    fn link(rtt_ms: f64, mbit: f64) -> LinkEstimate {
        LinkEstimate {
            rtt: Duration::from_secs_f64(rtt_ms / 1e3),
            bytes_per_sec: mbit * 1e6 / 8.0,
        }
    }

    #[test]
    fn deep_circuits_on_slow_links_go_to_yao() {
        let deep = CircuitShape {
            and_gates: 6_000_000,
            and_depth: 20_000,
        };
        let (pick, why) = decide(deep, link(100.0, 1000.0), &CostModel::default());
        assert_eq!(pick, ProtocolChoice::Yao, "{why}");
        assert!(why.contains("AND depth 20000"), "{why}");
    }

    #[test]
    fn the_model_charges_gmw_one_latency_per_level() {
        let shape = CircuitShape {
            and_gates: 10_000,
            and_depth: 40,
        };
        let model = CostModel::default();
        let near = predict(shape, link(0.1, 10_000.0), &model);
        let far = predict(shape, link(100.1, 10_000.0), &model);
        let added = far.gmw_online - near.gmw_online;
        // 40 levels × 50 ms + the input and output exchanges (3 round trips).
        assert!((added - (40.0 * 0.05 + 3.0 * 0.1)).abs() < 1e-6, "{added}");
        assert!(far.yao < far.gmw());
    }

    #[test]
    fn choice_round_trips() {
        for p in [
            ProtocolChoice::Yao,
            ProtocolChoice::Gmw,
            ProtocolChoice::Auto,
        ] {
            assert_eq!(ProtocolChoice::from_byte(p.to_byte()), Some(p));
            assert_eq!(ProtocolChoice::parse(p.name()), Ok(p));
        }
        assert!(ProtocolChoice::parse("bmr").is_err());
        assert_eq!(ProtocolChoice::from_byte(3), None);
    }
}
