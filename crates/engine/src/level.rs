//! `--security` and `--stat-sec` of `pgc run`, `pgc local` and `pgc bench run`: how far
//! each party is protected against the other running modified software. The protocols are
//! in `pgc_protocol::malicious`; the guarantees stated here match README ("What is
//! protected, against whom").

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use pgc_protocol::Security;
use pgc_protocol::malicious::{DEFAULT_STAT_SEC, MAX_STAT_SEC};

/// `--security`: the variants' comments are the guarantees `--help` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LevelArg {
    /// If both parties run pgc unmodified, each learns the outputs revealed to it and
    /// nothing else about the other's inputs. A party running modified software can learn
    /// more of the other's inputs or make the result wrong, undetected. The fastest level,
    /// and the only one with the --parallel modes, GMW and the GPU.
    SemiHonest,
    /// Cut-and-choose Yao (KSS12, majority output): against a party running arbitrary
    /// modified software, the honest party's inputs stay private and its outputs are
    /// correct, except with probability at most 2^-S (S = --stat-sec). A detected cheat
    /// aborts the run with an error naming the check that failed; no output is given (a
    /// garbler caught cheating learns that it was caught, with a chance that does not depend
    /// on the evaluator's inputs). Costs ≈ 3.1·S garbled copies of the circuit (123 for
    /// S = 40, 45 of them evaluated); the circuit runs sequentially, up to --threads copies
    /// at a time.
    Malicious,
    /// Each party garbles once and evaluates the other's circuit, then a secure equality
    /// test compares the outputs. A cheater can learn at most one bit about the other's
    /// inputs beyond its outputs (whether the test passed, which can answer a yes/no
    /// question of its choosing; with --serve, one bit per run), and the honest party never
    /// accepts a wrong output: a failed test aborts the run. About 2× semi-honest; every
    /// output must be revealed to both (OUTPUT_x); the circuit runs sequentially.
    DualExecution,
}

/// How much each party is protected against the other; both parties must choose the same.
#[derive(Args, Clone, Copy, Debug)]
#[command(next_help_heading = "Against a cheating peer")]
pub struct LevelArgs {
    /// What a peer running modified software can do (both parties must give the same level;
    /// the connection is protected the same way at every level).
    ///
    /// At no level can a party be stopped from choosing its own inputs freely, quitting
    /// (also after it has its outputs, before the other has its own) or not taking part; nor
    /// does a run hide whether it aborted.
    #[arg(long = "security", value_enum, value_name = "LEVEL",
        default_value_t = LevelArg::SemiHonest)]
    pub level: LevelArg,
    /// With --security malicious: a cheat succeeds with probability at most 2^-S; the copies
    /// grow ≈ 3.1 per bit. 1 to 128 [default: 40]. An error with any other level, where it
    /// would mean nothing.
    #[arg(long, value_name = "S",
        value_parser = clap::value_parser!(u32).range(1..=MAX_STAT_SEC as i64))]
    pub stat_sec: Option<u32>,
}

impl Default for LevelArgs {
    /// Semi-honest, as the CLI without `--security`.
    fn default() -> Self {
        LevelArgs {
            level: LevelArg::SemiHonest,
            stat_sec: None,
        }
    }
}

impl LevelArgs {
    /// The level both parties state in the hello.
    pub fn resolve(&self) -> Result<Security> {
        let name = match self.level {
            LevelArg::SemiHonest => "semi-honest",
            LevelArg::Malicious => "malicious",
            LevelArg::DualExecution => "dual-execution",
        };
        if let Some(s) = self.stat_sec
            && self.level != LevelArg::Malicious
        {
            bail!(
                "--stat-sec {s} applies to --security malicious only; --security {name} has \
                 no statistical parameter (leave --stat-sec out, or add --security malicious)"
            );
        }
        Security::parse(name, self.stat_sec.unwrap_or(DEFAULT_STAT_SEC)).map_err(anyhow::Error::msg)
    }
}

/// One line for the notes on stderr: the level and what it covers.
pub fn describe(level: Security) -> String {
    match level {
        Security::SemiHonest => {
            "semi-honest (protects against a peer that follows the protocol, not one running \
             modified software; see --security)"
                .into()
        }
        Security::Malicious { stat_sec } => format!(
            "malicious, cut-and-choose (a cheating peer succeeds with probability at most \
             2^-{stat_sec})"
        ),
        Security::DualExecution => {
            "dual execution (a cheating peer learns at most one bit more, and is caught \
             before a wrong output is accepted)"
                .into()
        }
    }
}
