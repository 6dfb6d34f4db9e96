//! The options of a protocol run, shared by `pgc run`/`pgc local` and the Python package:
//! which party, how the work is spread over threads, timeouts and network shaping. They are
//! clap argument structs, so the CLI's flags, their help and the library's options are one
//! definition.

use std::time::Duration;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use pgc_net::LinkShape;
use pgc_protocol::parallel::{ParallelConfig, ParallelMode};
use pgc_protocol::{Device, Garbling, Party, ProtocolChoice, Security};

use crate::level::LevelArgs;
use crate::protocol_arg::ProtocolChoiceArgs;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PartyArg {
    /// Party A: garbles the circuit.
    A,
    /// Party B: evaluates the garbled circuit.
    B,
}

/// Options shared by the commands that run the protocol.
#[derive(Args, Clone, Debug)]
#[command(next_help_heading = "Running")]
pub struct ProtocolArgs {
    /// Bristol circuits: input values that belong to party A, by position (from 0),
    /// comma-separated; all others belong to B. Default: value 0 is A's, the rest are B's.
    /// (A compiled program's INPUT_A_/INPUT_B_ names say who owns what.)
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "I,J,..",
        help_heading = "Inputs"
    )]
    pub inputs_of_a: Option<Vec<usize>>,
    /// Seconds to wait for the peer (to connect, retried while nobody listens or its host
    /// name does not resolve yet, and for each message: a message must arrive whole within
    /// this time, however its bytes are spread) before giving up;
    /// `run` also ends a run in which nothing moves (no byte, no AND gate) for this long.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// No progress bar, statistics or notes.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print outputs and statistics as JSON: "outputs" is an object keyed by output name
    /// for compiled programs (integers signed per C type, lists for arrays, objects for
    /// structs), a list of 0x-hex values for Bristol circuits.
    #[arg(long)]
    pub json: bool,
    /// How the work is spread over threads (both parties must choose the same). Modes of the
    /// semi-honest protocol: with another --security level the circuit runs sequentially, and
    /// a mode other than auto or none is an error.
    #[arg(long, value_enum, default_value_t = ParallelArg::Auto, help_heading = "Parallelism")]
    pub parallel: ParallelArg,
    /// Worker threads per party (default: every core of this machine, or half of them each
    /// under `pgc local`, where both parties share it; the parties use the smaller of their
    /// two counts). Under ipp, this many garbling and as many evaluating
    /// threads; under --security malicious, the threads that process the circuit copies;
    /// for compact circuits (under auto, and only when given), the threads that run calls
    /// sharing no wire (each party its own count).
    #[arg(long, value_name = "N", help_heading = "Parallelism")]
    pub threads: Option<usize>,
    /// Fine-grained threshold τ: an AND level is split among threads only where it has at
    /// least τ ANDs per thread (default: what `pgc bench width` measured on this machine,
    /// else 128; party A's value is used).
    #[arg(long, value_name = "ANDS", help_heading = "Parallelism")]
    pub tau: Option<usize>,
    /// Limit what this party sends to MBIT megabits per second, to try a WAN on a LAN or
    /// one machine (with `local`: each party's sends) [default: no limit].
    #[arg(long, value_name = "MBIT", help_heading = "Network shaping")]
    pub rate_limit: Option<f64>,
    /// Delay everything this party sends by MS milliseconds (one way; with `local`: both
    /// directions, so a round trip takes 2 × MS) [default: no delay].
    #[arg(long, value_name = "MS", help_heading = "Network shaping")]
    pub latency: Option<f64>,
    /// Where this party garbles or evaluates: cpu (the default), gpu (an NVIDIA GPU; needs a
    /// build with `--features gpu`, the NVIDIA driver and NVRTC at run time; semi-honest Yao
    /// on the sequential gate stream, i.e. --parallel none or auto on a circuit auto runs
    /// sequentially), or auto (the GPU where one is usable for this run, else the CPU). The
    /// tables are the CPU engine's bit for bit: each party chooses alone, the peer need not
    /// know, and the guarantee is the semi-honest one. Δ and labels go into this machine's GPU
    /// memory; its AES uses lookup tables whose timing code sharing the GPU could observe, so
    /// use a GPU no untrusted tenant shares.
    #[arg(long, value_enum, default_value_t = DeviceArg::Cpu, help_heading = "Parallelism")]
    pub device: DeviceArg,
    /// How Yao's AND gates are garbled (both parties must give the same; checked at the
    /// handshake).
    #[arg(long, value_enum, default_value_t = GarblingArg::HalfGates, help_heading = "Protocol")]
    pub garbling: GarblingArg,
}

/// `--garbling`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum GarblingArg {
    /// Half-gates (Zahur, Rosulek, Evans 2015): 32 bytes per AND gate, the fastest to
    /// compute. The default.
    #[default]
    HalfGates,
    /// Three-halves (Rosulek, Roy, CRYPTO 2021): 1.5κ + 5 bits, ≈ 24.6 bytes per AND gate
    /// (23 % less traffic than half-gates) for 1.5× the hashing (6 AES-based hash calls per
    /// AND garbling, 3 evaluating; pgc's three-halves code runs 4–8× slower than its tuned
    /// half-gates, see BENCHMARKS.md): faster where the link, not the CPU, is the
    /// bottleneck (measured: 0.77× the time at 100 Mbit/s and 1 Gbit/s).
    /// The same semi-honest guarantee as half-gates, under the paper's assumption on the
    /// hash (pgc's TMMO hash, as for half-gates). Semi-honest Yao on the sequential gate
    /// stream, on the CPU: --parallel auto then runs sequentially, and other --parallel
    /// modes, --security levels, --protocol gmw/auto and --device gpu are refused.
    ThreeHalves,
}

impl GarblingArg {
    pub fn garbling(self) -> Garbling {
        match self {
            GarblingArg::HalfGates => Garbling::HalfGates,
            GarblingArg::ThreeHalves => Garbling::ThreeHalves,
        }
    }
}

/// `--device`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum DeviceArg {
    /// The CPU engine.
    #[default]
    Cpu,
    /// The GPU engine; an error where it cannot run (no GPU, no driver, no NVRTC, a build
    /// without it, or a run it does not cover).
    Gpu,
    /// The GPU where it can run this run, else the CPU (said on stderr, with why).
    Auto,
}

impl DeviceArg {
    /// The device for a run of `protocol` at `level`, sequential (`sequential`: no parallel
    /// mode, the gate stream as one) or not. `Err` for `gpu` where it cannot run; for
    /// `auto`, the CPU then and the reason.
    pub fn resolve(
        self,
        protocol: ProtocolChoice,
        level: Security,
        sequential: bool,
    ) -> Result<(Device, Option<String>)> {
        if self == DeviceArg::Cpu {
            return Ok((Device::Cpu, None));
        }
        let why = if protocol == ProtocolChoice::Gmw {
            "the GPU engine runs Yao's protocol, not GMW".to_string()
        } else if level != Security::SemiHonest {
            format!(
                "the GPU engine runs semi-honest Yao only, not --security {}",
                level.name()
            )
        } else if !sequential {
            "the GPU engine takes the sequential gate stream: give --parallel none (on both \
             sides; the peer may use any device)"
                .to_string()
        } else {
            match pgc_gpu::probe() {
                Ok(gpu) => return Ok((Device::Gpu, Some(format!("garbling on the GPU: {gpu}")))),
                Err(e) => e.to_string(),
            }
        };
        if self == DeviceArg::Gpu {
            bail!("--device gpu: {why}");
        }
        Ok((Device::Cpu, Some(format!("--device auto chose cpu: {why}"))))
    }
}

/// `--parallel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ParallelArg {
    /// Chosen per circuit (the default): coarse-grained (cgp) where parallel regions hold
    /// most of the AND gates, else the sequential protocol (none); said on stderr, with why.
    /// Both parties choose alike from the circuit. Compact circuits run sequentially, with
    /// their independent calls on --threads threads if given.
    Auto,
    /// One thread: the sequential protocol.
    None,
    /// Fine-grained: split wide AND levels among threads.
    Fgp,
    /// Coarse-grained: the instances of each parallel region (independent loop
    /// iterations the compiler found) over threads.
    Cgp,
    /// Inter-party: A garbles half of each region's instances and B the other half, each
    /// evaluating the other's, so both machines' cores and both network directions work.
    /// Semi-honest only, like the rest: here both parties garble, so neither may deviate.
    Ipp,
}

impl ProtocolArgs {
    /// `both_parties_here`: both parties run on this machine (`pgc local`), so by default
    /// each takes half of its cores; with more busy threads than cores, fine-grained steps
    /// wait on each other's barriers (measured: EDT-255 at 0.8 M AND/s with 2 threads per
    /// party on 2 vCPUs against 37 M with 1).
    pub fn parallel_config(&self, both_parties_here: bool) -> Result<ParallelConfig> {
        let threads = match self.threads {
            Some(0) => bail!("--threads must be at least 1"),
            Some(n) if n > pgc_protocol::parallel::MAX_THREADS => bail!(
                "--threads {n}: at most {} are supported",
                pgc_protocol::parallel::MAX_THREADS
            ),
            Some(n) => n,
            None => {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                if both_parties_here {
                    (cores / 2).max(1)
                } else {
                    cores
                }
            }
        };
        let tau = match self.tau {
            Some(0) => bail!("--tau must be at least 1"),
            Some(t) => t,
            None => measured_tau().unwrap_or(pgc_garble::parallel::DEFAULT_TAU),
        };
        Ok(ParallelConfig {
            mode: match self.parallel {
                ParallelArg::Auto => ParallelMode::Auto,
                ParallelArg::None => ParallelMode::None,
                ParallelArg::Fgp => ParallelMode::Fgp,
                ParallelArg::Cgp => ParallelMode::Cgp,
                ParallelArg::Ipp => ParallelMode::Ipp,
            },
            threads,
            tau,
        })
    }

    /// The security level and how the work is spread. The levels against a cheating peer
    /// run the sequential protocol (cut-and-choose spreads its circuit copies over
    /// `--threads` instead), so an explicit parallel mode is refused there.
    pub fn level_and_config(
        &self,
        level: &LevelArgs,
        protocol: &ProtocolChoiceArgs,
        both_parties_here: bool,
    ) -> Result<(Security, ProtocolChoice, ParallelConfig)> {
        let level = level.resolve()?;
        let protocol = protocol.resolve(level)?;
        let mut config = self.parallel_config(both_parties_here)?;
        if protocol == ProtocolChoice::Gmw {
            if !matches!(self.parallel, ParallelArg::Auto | ParallelArg::None) {
                bail!(
                    "--parallel {} is a mode of Yao's protocol; --protocol gmw runs on one \
                     thread: leave --parallel out (or give --parallel none)",
                    config.mode.name()
                );
            }
            config.mode = ParallelMode::None;
        }
        if level != Security::SemiHonest {
            if !matches!(self.parallel, ParallelArg::Auto | ParallelArg::None) {
                let instead = match level {
                    Security::Malicious { .. } => {
                        "runs the circuit sequentially, up to --threads of its copies at a time"
                    }
                    _ => "runs the circuit sequentially",
                };
                bail!(
                    "--parallel {} is a mode of the semi-honest protocol only; --security {} \
                     {instead}: leave --parallel out (or give --parallel none)",
                    config.mode.name(),
                    level.name()
                );
            }
            config.mode = ParallelMode::None;
        } else if self.parallel == ParallelArg::None {
            // One thread: compact circuits would otherwise spread their calls.
            config.threads = 1;
        }
        if self.garbling == GarblingArg::ThreeHalves {
            self.check_three_halves(level, protocol)?;
            // The sequential gate stream on one thread is all three-halves runs.
            config.mode = ParallelMode::None;
            config.threads = 1;
        }
        Ok((level, protocol, config))
    }

    /// `--garbling three-halves` runs semi-honest Yao on the sequential gate stream, on the
    /// CPU; anything else is refused here, before inputs are read or anything connects.
    fn check_three_halves(&self, level: Security, protocol: ProtocolChoice) -> Result<()> {
        let why = if level != Security::SemiHonest {
            format!(
                "--security {} garbles half-gates (its checks are built on them)",
                level.name()
            )
        } else if protocol != ProtocolChoice::Yao {
            format!("--protocol {protocol} may run GMW, which garbles nothing: give --protocol yao")
        } else if !matches!(self.parallel, ParallelArg::Auto | ParallelArg::None) {
            format!(
                "--parallel {} garbles half-gates; three-halves runs the sequential protocol \
                 (leave --parallel out or give --parallel none)",
                match self.parallel {
                    ParallelArg::Fgp => "fgp",
                    ParallelArg::Cgp => "cgp",
                    _ => "ipp",
                }
            )
        } else if self.device == DeviceArg::Gpu {
            "the GPU engine garbles half-gates: give --device cpu".to_string()
        } else {
            return Ok(());
        };
        bail!("--garbling three-halves is refused: {why} (or leave --garbling out)")
    }

    /// `--device` as this run uses it: three-halves runs on the CPU (`auto` picks it).
    pub fn device_for_garbling(&self) -> DeviceArg {
        match self.garbling {
            GarblingArg::ThreeHalves => DeviceArg::Cpu,
            GarblingArg::HalfGates => self.device,
        }
    }

    pub fn link_shape(&self) -> Result<LinkShape> {
        let rate = match self.rate_limit {
            None => None,
            // Below one bit per second the rate would round to 0, which means no limit.
            Some(m) if m * 1e6 >= 1.0 && m.is_finite() => Some((m * 1e6) as u64),
            Some(_) => bail!(
                "--rate-limit must be a positive number of megabits per second, at least \
                 0.000001 (one bit per second)"
            ),
        };
        let latency = match self.latency {
            None => Duration::ZERO,
            Some(ms) if ms >= 0.0 && ms.is_finite() && ms < 3.6e6 => {
                Duration::from_secs_f64(ms / 1000.0)
            }
            Some(_) => bail!(
                "--latency must be a number of milliseconds, 0 or more and below 3600000 (an \
                 hour)"
            ),
        };
        // Every message would wait out its delay before its deadline could fail it: a run
        // that cannot succeed, which would end only after the delay (up to an hour).
        if latency.as_secs_f64() >= self.timeout {
            bail!(
                "--latency {} ms delays every message past --timeout {} s, so every message \
                 would time out: lower --latency or raise --timeout",
                latency.as_millis(),
                self.timeout
            );
        }
        Ok(LinkShape {
            rate_bits_per_sec: rate,
            latency,
        })
    }

    pub fn timeout(&self) -> Result<Duration> {
        // Above the bound, deadlines (now + timeout) would overflow and panic; a billion
        // seconds is as good as no limit.
        if !(self.timeout > 0.0 && self.timeout <= MAX_TIMEOUT_SECS) {
            bail!("--timeout must be a positive number of seconds, at most {MAX_TIMEOUT_SECS:e}");
        }
        Ok(Duration::from_secs_f64(self.timeout))
    }
}

impl PartyArg {
    pub fn party(self) -> Party {
        match self {
            PartyArg::A => Party::A,
            PartyArg::B => Party::B,
        }
    }
}

/// The largest `--timeout`, in seconds (about 32 years).
pub const MAX_TIMEOUT_SECS: f64 = 1e9;

impl Default for ProtocolArgs {
    /// What the CLI gives when no flag is set.
    fn default() -> Self {
        ProtocolArgs {
            inputs_of_a: None,
            timeout: 60.0,
            quiet: false,
            json: false,
            parallel: ParallelArg::Auto,
            threads: None,
            tau: None,
            rate_limit: None,
            latency: None,
            device: DeviceArg::Cpu,
            garbling: GarblingArg::HalfGates,
        }
    }
}

/// Where `pgc bench width` keeps the FGP threshold τ it measured on this machine.
pub fn tau_file() -> Option<std::path::PathBuf> {
    crate::circuits::cache_dir().map(|d| d.join("fgp-tau"))
}

/// The FGP threshold τ `pgc bench width` measured here, if it ran.
pub fn measured_tau() -> Option<usize> {
    let text = std::fs::read_to_string(tau_file()?).ok()?;
    text.trim().parse().ok().filter(|&t: &usize| t > 0)
}
