//! `--protocol` of `pgc run`, `pgc local` and `pgc bench run`: Yao's garbled circuits, GMW,
//! or `auto`. The protocols are in `pgc_protocol::yao` and `pgc_protocol::gmw`; the choice
//! and its cost model in `pgc_protocol::choice`; README "Protocols" shows when each wins.

use std::time::Duration;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use pgc_net::LinkShape;
use pgc_protocol::choice::{
    AutoPick, CircuitShape, CostModel, LinkEstimate, decide, decide_garbling,
};
use pgc_protocol::{Garbling, ProtocolChoice, Security};

/// `--protocol`: the variants' comments are what `--help` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProtocolArg {
    /// Yao's garbled circuits (half-gates): A garbles, B evaluates; a constant number of
    /// rounds whatever the circuit's depth, 32 bytes per AND gate one way. The default, and
    /// the only protocol with --security malicious and dual-execution and with the
    /// --parallel modes.
    Yao,
    /// GMW: both parties hold XOR shares of every wire and do the same work. A setup phase
    /// (independent of the inputs) makes one multiplication triple per AND gate with OT
    /// extension (16 bytes each way per AND); the online phase then sends 2 bits each way
    /// per AND gate but waits for the peer once per AND level (one one-way latency each), so
    /// it suits circuits of low AND depth (compile with --optimize depth) on a fast link.
    /// Semi-honest only: each party learns its outputs and nothing else if both follow the
    /// protocol; a party running modified software can change the result undetected or
    /// learn more. One thread.
    Gmw,
    /// Measure the link at the handshake (round trip, bandwidth) and run the protocol
    /// predicted to finish first for this circuit's AND gates and AND depth; both parties
    /// print which and why. Where Yao wins, runs sequentially on the CPU and the link rather
    /// than the CPU limits it, Yao garbles three-halves (see --garbling).
    Auto,
}

#[derive(Args, Clone, Copy, Debug)]
#[command(next_help_heading = "Protocol")]
pub struct ProtocolChoiceArgs {
    /// The two-party protocol (both parties must give the same). Both are semi-honest
    /// (secure against a peer that follows the protocol); Yao also runs the levels of
    /// --security against cheaters.
    #[arg(long = "protocol", value_enum, value_name = "PROTOCOL",
        default_value_t = ProtocolArg::Yao)]
    pub protocol: ProtocolArg,
}

impl Default for ProtocolChoiceArgs {
    /// Yao, as the CLI without `--protocol`.
    fn default() -> Self {
        ProtocolChoiceArgs {
            protocol: ProtocolArg::Yao,
        }
    }
}

impl ProtocolChoiceArgs {
    /// The protocol, checked against the security level.
    pub fn resolve(&self, level: Security) -> Result<ProtocolChoice> {
        let choice = match self.protocol {
            ProtocolArg::Yao => ProtocolChoice::Yao,
            ProtocolArg::Gmw => ProtocolChoice::Gmw,
            ProtocolArg::Auto => ProtocolChoice::Auto,
        };
        if choice != ProtocolChoice::Yao && level != Security::SemiHonest {
            bail!(
                "--protocol {choice} is semi-honest only; --security {} runs Yao's garbled \
                 circuits (leave --protocol out, or use --security semi-honest)",
                level.name()
            );
        }
        Ok(choice)
    }
}

/// One line for the notes on stderr.
pub fn describe(choice: ProtocolChoice) -> &'static str {
    match choice {
        ProtocolChoice::Yao => "Yao's garbled circuits",
        ProtocolChoice::Gmw => "GMW (XOR-shared wires, one round per AND level)",
        ProtocolChoice::Auto => "auto (measured at the handshake)",
    }
}

/// `pgc local --protocol auto`: both parties run here, so the link is this machine's
/// loopback as shaped by --latency and --rate-limit, known without a probe. Yao may garble
/// three-halves if `may_three_halves` (as under `pgc run`, see
/// [`pgc_protocol::choice::decide_garbling`]).
pub fn decide_local(shape: CircuitShape, link: LinkShape, may_three_halves: bool) -> AutoPick {
    // Loopback TLS measured here: ≈ 50 µs round trip, a few GB/s.
    let estimate = LinkEstimate {
        rtt: 2 * link.latency + Duration::from_micros(50),
        bytes_per_sec: link
            .rate_bits_per_sec
            .filter(|&r| r > 0)
            .map_or(2e9, |r| r as f64 / 8.0),
    };
    let model = CostModel::default();
    let (pick, mut why) = decide(shape, estimate, &model);
    let mut garbling = Garbling::HalfGates;
    if pick == ProtocolChoice::Yao && may_three_halves {
        let (g, reason) = decide_garbling(shape, estimate, &model);
        garbling = g;
        why = format!("{why}; {reason}");
    }
    AutoPick {
        protocol: pick,
        garbling,
        why: format!("{why} (the loopback link as shaped here)"),
    }
}
