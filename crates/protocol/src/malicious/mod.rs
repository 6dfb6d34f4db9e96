//! Security against a party that runs modified software: the [`Security`] level both
//! parties agree on at the handshake, and the protocols that provide it.
//!
//! - [`Security::Malicious`]: cut-and-choose Yao as in Kreuter, shelat, Shen, *Billion-Gate
//!   Secure Computation with Malicious Adversaries* (USENIX Security 2012, "KSS12"): §3 the
//!   protocol and its three attacks, §4.4 random-seed checking, §4.5 copies processed in
//!   lockstep. The module [`cut_and_choose`] opens with the message flow and the papers
//!   behind each check.
//! - [`Security::DualExecution`]: Mohassel–Franklin (PKC 2006) dual execution with the
//!   output validation of Huang, Katz, Evans (IEEE S&P 2012): both parties garble, then a
//!   secure equality test of the outputs; a cheater learns at most one bit more than its
//!   output (the one-bit-leakage model of Husted et al., ACSAC 2013, §3). See [`dual`],
//!   and [`peqt`] for the equality test.
//!
//! Who may learn what, and what an abort looks like, is stated in README ("What is
//! protected, against whom") and in `pgc run --help`.

use std::fmt;

use pgc_circuit::{GateSource, Visibility};
use pgc_garble::Garbling;
use pgc_net::Channel;

use crate::gpu::Device;
use crate::yao::{Outcome, Party, ProtocolError, RunOptions, run_evaluator_with, run_garbler_with};

#[cfg(test)]
mod cheat_tests;
pub mod cluster;
#[cfg(test)]
mod cluster_tests;
pub mod cut_and_choose;
pub mod dual;
mod input_ot;
pub mod peqt;

pub use cluster::{run_cut_and_choose_coordinator, run_cut_and_choose_worker};
pub use cut_and_choose::{CopyPlan, run_cut_and_choose};
pub use dual::run_dual_execution;

/// Runs one party's side of `circuit` at the given security level: semi-honest Yao,
/// cut-and-choose Yao or dual execution. `options.threads` also bounds the worker threads
/// the malicious protocols use for their circuit copies (1: none beyond this one); the
/// levels against a cheating peer run on the CPU and garble half-gates, and refuse
/// [`Device::Gpu`] and [`Garbling::ThreeHalves`].
#[allow(clippy::too_many_arguments)]
pub fn run_secured<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    me: Party,
    inputs: &[Vec<bool>],
    security: Security,
    options: RunOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<Outcome, ProtocolError> {
    let RunOptions {
        threads,
        device,
        garbling,
    } = options;
    if garbling == Garbling::ThreeHalves && security != Security::SemiHonest {
        return Err(ProtocolError::Input(format!(
            "--garbling three-halves is a scheme of semi-honest Yao; --security {} garbles \
             half-gates (leave --garbling out)",
            security.name()
        )));
    }
    if device == Device::Gpu && security != Security::SemiHonest {
        return Err(ProtocolError::Input(format!(
            "the GPU engine runs semi-honest Yao only; --security {} runs on the CPU \
             (--device cpu)",
            security.name()
        )));
    }
    match (security, me) {
        (Security::SemiHonest, Party::A) => {
            run_garbler_with(ch, circuit, owners, visibility, inputs, options, progress)
        }
        (Security::SemiHonest, Party::B) => {
            run_evaluator_with(ch, circuit, owners, visibility, inputs, options, progress)
        }
        (Security::Malicious { stat_sec }, _) => run_cut_and_choose(
            ch, circuit, owners, visibility, me, inputs, stat_sec, threads, progress,
        ),
        (Security::DualExecution, _) => {
            run_dual_execution(ch, circuit, owners, visibility, me, inputs, progress)
        }
    }
}

/// How much a party is protected against the other one deviating from the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Security {
    /// Both parties follow the protocol; either may try to learn more from what it sees.
    #[default]
    SemiHonest,
    /// Either party may deviate arbitrarily; cheating succeeds with probability at most
    /// 2^-`stat_sec` (plus negligible terms in the cryptographic assumptions).
    Malicious { stat_sec: u32 },
    /// Either party may deviate; a cheater learns at most one bit beyond its output (whether
    /// the equality test passed), and the honest party never accepts a wrong output.
    DualExecution,
}

/// The statistical security parameter when none is given.
pub const DEFAULT_STAT_SEC: u32 = 40;
/// The largest statistical security parameter accepted (copies grow ≈ 3.1 per bit).
pub const MAX_STAT_SEC: u32 = 128;

impl Security {
    /// The name used on the command line and in messages.
    pub fn name(self) -> &'static str {
        match self {
            Security::SemiHonest => "semi-honest",
            Security::Malicious { .. } => "malicious",
            Security::DualExecution => "dual-execution",
        }
    }

    /// Parses a `--security` value with the statistical parameter `stat_sec`.
    pub fn parse(name: &str, stat_sec: u32) -> Result<Security, String> {
        match name {
            "semi-honest" | "semihonest" => Ok(Security::SemiHonest),
            "malicious" => {
                if !(1..=MAX_STAT_SEC).contains(&stat_sec) {
                    return Err(format!(
                        "--stat-sec {stat_sec} is out of range: give 1 to {MAX_STAT_SEC} \
                         (cheating then succeeds with probability at most 2^-S)"
                    ));
                }
                Ok(Security::Malicious { stat_sec })
            }
            "dual-execution" | "dual" => Ok(Security::DualExecution),
            other => Err(format!(
                "unknown security level {other:?}: use semi-honest, malicious or dual-execution"
            )),
        }
    }

    pub(crate) fn to_bytes(self) -> [u8; 5] {
        let (tag, s) = match self {
            Security::SemiHonest => (0u8, 0u32),
            Security::Malicious { stat_sec } => (1, stat_sec),
            Security::DualExecution => (2, 0),
        };
        let mut b = [0u8; 5];
        b[0] = tag;
        b[1..].copy_from_slice(&s.to_le_bytes());
        b
    }

    pub(crate) fn from_bytes(tag: u8, s: u32) -> Option<Security> {
        match (tag, s) {
            (0, 0) => Some(Security::SemiHonest),
            (1, 1..=MAX_STAT_SEC) => Some(Security::Malicious { stat_sec: s }),
            (2, 0) => Some(Security::DualExecution),
            _ => None,
        }
    }
}

impl fmt::Display for Security {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Security::Malicious { stat_sec } => write!(f, "malicious (s = {stat_sec})"),
            other => f.write_str(other.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn security_round_trips_and_refuses_bad_values() {
        for s in [
            Security::SemiHonest,
            Security::Malicious { stat_sec: 40 },
            Security::DualExecution,
        ] {
            let b = s.to_bytes();
            let n = u32::from_le_bytes(b[1..].try_into().unwrap());
            assert_eq!(Security::from_bytes(b[0], n), Some(s));
        }
        assert_eq!(Security::from_bytes(1, 0), None);
        assert_eq!(Security::from_bytes(3, 0), None);
        assert!(Security::parse("malicious", 0).is_err());
        assert!(Security::parse("paranoid", 40).is_err());
    }
}
