//! The `info`, `eval`, `run` and `local` commands.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use pgc_circuit::analysis::{assign_slots, levelize, stats};
use pgc_circuit::eval::eval_bits_checked;
use pgc_circuit::value::decode_outputs;
use pgc_circuit::{
    GateSource, Interface, Layout, Owner, ParallelCircuit, ValueFormat, Visibility,
    WithValueFormat, validate,
};
use std::sync::atomic::AtomicU64;

use pgc_net::connect::{accept_peer, connect_peer};
use pgc_net::{LinkShape, SharedLink, TcpChannel};
use pgc_protocol::choice::{CostModel, agree_on_protocol, circuit_shape};
use pgc_protocol::malicious::run_secured;
use pgc_protocol::parallel::{ParallelConfig, ParallelExtras, ParallelMode, run_parallel_with};
use pgc_protocol::{
    GmwConfig, LocalSecurity, Outcome, Party, ProtocolChoice, Security, run_gmw, run_local_gmw,
    run_local_parallel_secured, run_local_tcp_shaped,
};
use serde_json::{Value, json};

use crate::circuits::{self, CircuitArgs, Loaded};
use crate::level::LevelArgs;
use crate::progress::Progress;
use crate::protocol_arg::ProtocolChoiceArgs;
use crate::report;
use crate::typed_io::{self, Gathered, Scope};
use crate::watchdog::{Side, Watchdog, WatchedStreams};

// `--cluster` (MPI): a child module so that it can build on `Session`.
#[path = "cluster_arg.rs"]
mod cluster_arg;

#[derive(Args)]
pub struct InfoArgs {
    #[command(flatten)]
    pub c: CircuitArgs,
    /// Print the statistics as JSON.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// How inputs are given; the same wording for every command.
const INPUT_HELP: &str = "For a compiled program: NAME=VALUE, NAME with or without its \
INPUT_A_/INPUT_B_ prefix; VALUE decimal (negative for signed types) or 0x-hex, true/false, \
[1,2,3] for arrays ([[1,2],[3,4]] nested), {x: 1, y: [1,2]} for structs. For a Bristol \
circuit: one bare decimal or 0x-hex value per input value, in circuit order.";

#[derive(Args)]
pub struct EvalArgs {
    #[command(flatten)]
    pub c: CircuitArgs,
    /// An input value (repeat for each input; all parties' inputs, since this is cleartext).
    #[arg(long = "input", value_name = "NAME=VALUE", allow_hyphen_values = true,
        help_heading = "Inputs",
        long_help = format!("An input value; give every input (both parties', since this is \
        cleartext evaluation). {INPUT_HELP}"))]
    pub inputs: Vec<String>,
    /// Compiled programs: read input values from a JSON object keyed by input name, e.g.
    /// {"INPUT_A_income": 5000, "INPUT_B_income": 7000}; --input values take precedence.
    #[arg(long = "inputs", value_name = "FILE.json", help_heading = "Inputs")]
    pub inputs_file: Option<PathBuf>,
    /// Print the outputs as JSON.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum PartyArg {
    /// Party A: garbles the circuit.
    A,
    /// Party B: evaluates the garbled circuit.
    B,
}

/// Options shared by the commands that run the protocol.
#[derive(Args)]
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
    /// Seconds to wait for the peer (to connect, and for each message: a message must
    /// arrive whole within this time, however its bytes are spread) before giving up;
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
    /// one machine (with `local`: each party's sends).
    #[arg(long, value_name = "MBIT", help_heading = "Network shaping")]
    pub rate_limit: Option<f64>,
    /// Delay everything this party sends by MS milliseconds (one way; with `local`: both
    /// directions, so a round trip takes 2 × MS).
    #[arg(long, value_name = "MS", help_heading = "Network shaping")]
    pub latency: Option<f64>,
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
    fn parallel_config(&self, both_parties_here: bool) -> Result<ParallelConfig> {
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
            None => crate::bench::measured_tau().unwrap_or(pgc_garble::parallel::DEFAULT_TAU),
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
    fn level_and_config(
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
        Ok((level, protocol, config))
    }

    fn link_shape(&self) -> Result<LinkShape> {
        let rate = match self.rate_limit {
            None => None,
            Some(m) if m > 0.0 && m.is_finite() => Some((m * 1e6) as u64),
            Some(_) => bail!("--rate-limit must be a positive number of megabits per second"),
        };
        let latency = match self.latency {
            None => Duration::ZERO,
            Some(ms) if ms >= 0.0 && ms.is_finite() && ms < 3.6e6 => {
                Duration::from_secs_f64(ms / 1000.0)
            }
            Some(_) => bail!("--latency must be a number of milliseconds, 0 or more"),
        };
        Ok(LinkShape {
            rate_bits_per_sec: rate,
            latency,
        })
    }

    fn timeout(&self) -> Result<Duration> {
        if !(self.timeout > 0.0 && self.timeout.is_finite()) {
            bail!("--timeout must be a positive number of seconds");
        }
        Ok(Duration::from_secs_f64(self.timeout))
    }
}

#[derive(Args)]
#[command(group = clap::ArgGroup::new("endpoint").required(true).args(["listen", "connect"]))]
pub struct RunArgs {
    #[command(flatten)]
    pub c: CircuitArgs,
    /// Which party this is: a garbles, b evaluates.
    #[arg(long, value_enum, help_heading = "Connection")]
    pub party: PartyArg,
    /// Wait for the peer on this address, e.g. 0.0.0.0:7000.
    #[arg(long, value_name = "ADDR", help_heading = "Connection")]
    pub listen: Option<String>,
    /// Connect to the peer at this address, e.g. 192.0.2.1:7000 (retried until --timeout).
    #[arg(long, value_name = "ADDR", help_heading = "Connection")]
    pub connect: Option<String>,
    /// One of this party's own inputs (repeat for each).
    #[arg(long = "input", value_name = "NAME=VALUE", allow_hyphen_values = true,
        help_heading = "Inputs",
        long_help = format!("One of this party's own inputs (repeat for each; never the \
        other party's). {INPUT_HELP}"))]
    pub inputs: Vec<String>,
    /// Compiled programs: read this party's input values from a JSON object keyed by input
    /// name; --input values take precedence.
    #[arg(long = "inputs", value_name = "FILE.json", help_heading = "Inputs")]
    pub inputs_file: Option<PathBuf>,
    /// Keep listening after a run and serve the next peer, one run per connection, with the
    /// same program and inputs, until stopped (Ctrl-C) or --runs are done. A failed run is
    /// reported and serving goes on.
    #[arg(long, requires = "listen", help_heading = "Connection")]
    pub serve: bool,
    /// With --serve: stop after this many runs.
    #[arg(
        long,
        value_name = "N",
        requires = "serve",
        help_heading = "Connection"
    )]
    pub runs: Option<u64>,
    #[command(flatten)]
    pub security: crate::security::SecurityArgs,
    #[command(flatten)]
    pub level: LevelArgs,
    #[command(flatten)]
    pub protocol: ProtocolChoiceArgs,
    #[command(flatten)]
    pub p: ProtocolArgs,
    #[command(flatten)]
    pub cluster: cluster_arg::ClusterArgs,
}

#[derive(Args)]
pub struct LocalArgs {
    #[command(flatten)]
    pub c: CircuitArgs,
    /// An input of party A (repeat for each).
    #[arg(long = "a", value_name = "NAME=VALUE", allow_hyphen_values = true,
        help_heading = "Inputs",
        long_help = format!("An input of party A (repeat for each). {INPUT_HELP}"))]
    pub a: Vec<String>,
    /// An input of party B (repeat for each).
    #[arg(long = "b", value_name = "NAME=VALUE", allow_hyphen_values = true,
        help_heading = "Inputs",
        long_help = format!("An input of party B (repeat for each). {INPUT_HELP}"))]
    pub b: Vec<String>,
    /// Compiled programs: read input values of both parties from a JSON object keyed by
    /// input name (full names where both parties have an input of the same short name);
    /// --a/--b values take precedence.
    #[arg(long = "inputs", value_name = "FILE.json", help_heading = "Inputs")]
    pub inputs_file: Option<PathBuf>,
    /// Connect the two parties over plain TCP instead of TLS with fresh keys (to compare
    /// speeds; both parties are in this process either way).
    #[arg(long, help_heading = "Security")]
    pub insecure_plaintext: bool,
    #[command(flatten)]
    pub level: LevelArgs,
    #[command(flatten)]
    pub protocol: ProtocolChoiceArgs,
    #[command(flatten)]
    pub p: ProtocolArgs,
}

pub fn info(args: InfoArgs) -> Result<()> {
    let program = circuits::load(&args.c, args.json)?;
    let c = match program.circuit {
        Loaded::Memory(c) => c,
        Loaded::Compact(cf) => return compact_info(&args, &cf, program.interface.as_ref()),
        Loaded::Unrolled(uf) => return unrolled_info(&args, &uf, program.interface.as_ref()),
        Loaded::Generated(g) => {
            let v = json!({
                "generated": true,
                "gates": g.gate_count(),
                "and_gates": g.and_count(),
                "and_depth": g.depth,
                "width": g.width,
            });
            if args.json {
                outln!("{v}");
            } else {
                outln!(
                    "generated layered circuit: {} gates, {} AND gates, AND depth {}, {} ANDs per level",
                    report::group(g.gate_count()),
                    report::group(g.and_count()),
                    g.depth,
                    g.width
                );
            }
            return Ok(());
        }
    };
    circuits::analysis_memory(&c).check()?;
    validate(&c).with_context(|| format!("checking {}", args.c.circuit))?;
    let s = stats(&c);
    let slots = assign_slots(&levelize(&c)?).layout.num_wires;
    if args.json {
        let mut v = serde_json::to_value(&s)?;
        v["fingerprint"] = json!(hex(&c.fingerprint()));
        v["slots_when_run"] = json!(slots);
        v["regions"] = json!(region_json(program.parallel.as_ref()));
        v["label_bytes_when_run"] = json!(slots as u64 * 16);
        if let Some(iface) = &program.interface {
            let (inputs, outputs) = typed_io::interface_json(iface);
            v["inputs"] = inputs;
            v["outputs"] = outputs;
        }
        outln!("{v}");
        return Ok(());
    }
    let l = &c.layout;
    let widths = |w: &[u32]| {
        w.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join("+")
    };
    outln!("circuit      {}", args.c.circuit);
    outln!(
        "gates        {} (AND {}, XOR {}, INV {}, copies {}, constants {})",
        report::group(s.gates),
        report::group(s.and_gates),
        report::group(s.xor_gates),
        report::group(s.inv_gates),
        report::group(s.copy_gates),
        report::group(s.const_gates)
    );
    outln!(
        "wires        {} (inputs {} = {}, outputs {} = {})",
        report::group(s.wires),
        s.input_wires,
        widths(&l.input_widths),
        s.output_wires,
        widths(&l.output_widths)
    );
    outln!(
        "AND depth    {} to the outputs, {} AND levels in all; widest level {} ANDs, mean {:.1}",
        s.and_depth,
        s.and_levels,
        s.max_width,
        s.mean_width
    );
    out!("level widths");
    for b in &s.width_histogram {
        out!("  {}..{}: {}", b.min, b.max, b.levels);
    }
    outln!(" (ANDs per level: levels)");
    outln!(
        "live wires   peak {} in file order; {} slots when run ({} of labels per party)",
        report::group(s.peak_live_wires),
        report::group(slots as u64),
        report::bytes(slots as u64 * 16)
    );
    outln!("fingerprint  {}", hex(&c.fingerprint()));
    for line in region_lines(program.parallel.as_ref(), s.and_gates) {
        outln!("{line}");
    }
    if let Some(iface) = &program.interface {
        for line in typed_io::interface_lines(iface) {
            outln!("{line}");
        }
    }
    Ok(())
}

/// `pgc info` for a compact circuit: expanded size, templates, and the working set.
fn compact_info(
    args: &InfoArgs,
    cf: &pgc_circuit::pgcfile::CompactFile,
    iface: Option<&Interface>,
) -> Result<()> {
    let s = cf.stats();
    let label_bytes = s.peak_live_wires * 16;
    if args.json {
        let mut v = json!({
            "compact": true,
            "gates": cf.gate_count(),
            "and_gates": cf.and_count(),
            "templates": s.templates,
            "calls": s.calls,
            "main_slots": s.main_slots,
            "scratch_slots": s.scratch_slots,
            "peak_live_wires": s.peak_live_wires,
            "slots_when_run": s.peak_live_wires,
            "label_bytes_when_run": label_bytes,
            "fingerprint": hex(&cf.fingerprint()),
            "regions": [],
        });
        if let Some(iface) = iface {
            let (inputs, outputs) = typed_io::interface_json(iface);
            v["inputs"] = inputs;
            v["outputs"] = outputs;
        }
        outln!("{v}");
        return Ok(());
    }
    outln!("circuit      {} (compact)", args.c.circuit);
    outln!(
        "gates        {} expanded (AND {})",
        report::group(cf.gate_count()),
        report::group(cf.and_count())
    );
    outln!(
        "templates    {} stored once, called {} times from the main body",
        s.templates,
        report::group(s.calls)
    );
    outln!(
        "live wires   {} slots when run ({} main + {} template scratch): {} of labels per party",
        report::group(s.peak_live_wires),
        report::group(s.main_slots),
        report::group(s.scratch_slots),
        report::bytes(label_bytes)
    );
    outln!("fingerprint  {}", hex(&cf.fingerprint()));
    outln!(
        "parallel     calls that share no wire run on --threads threads (sequential protocol, same tables)"
    );
    if let Some(iface) = iface {
        for line in typed_io::interface_lines(iface) {
            outln!("{line}");
        }
    }
    Ok(())
}

/// `pgc info` for a streamed unrolled circuit: what one streaming pass measures (no
/// live-wire count, which needs each wire's last use).
fn unrolled_info(
    args: &InfoArgs,
    uf: &pgc_circuit::pgcfile::UnrolledFile,
    iface: Option<&Interface>,
) -> Result<()> {
    let s = uf.stats();
    let l = uf.layout();
    let levels: Vec<u64> = s
        .ands_per_level
        .iter()
        .copied()
        .filter(|&n| n > 0)
        .collect();
    let max_width = levels.iter().copied().max().unwrap_or(0);
    let mean_width = s.and_gates as f64 / levels.len().max(1) as f64;
    let histogram = pgc_circuit::analysis::width_histogram(&levels);
    let label_bytes = l.num_wires as u64 * 16;
    let in_regions: u64 = s.regions.iter().map(|r| r.and_gates).sum();
    if args.json {
        let mut v = json!({
            "streamed": true,
            "gates": s.gates,
            "and_gates": s.and_gates,
            "xor_gates": s.xor_gates,
            "inv_gates": s.inv_gates,
            "copy_gates": s.copy_gates,
            "const_gates": s.const_gates,
            "wires": l.num_wires,
            "input_wires": l.num_input_wires(),
            "output_wires": l.output_wires.len(),
            "and_depth": s.and_depth,
            "and_levels": levels.len(),
            "max_width": max_width,
            "mean_width": mean_width,
            "width_histogram": histogram,
            "label_bytes_when_run": label_bytes,
            "fingerprint": hex(&uf.fingerprint()),
            "regions": s.regions.iter().map(|r| json!({
                "line": r.line,
                "instances": r.instances,
                "and_gates": r.and_gates,
            })).collect::<Vec<_>>(),
        });
        if let Some(iface) = iface {
            let (inputs, outputs) = typed_io::interface_json(iface);
            v["inputs"] = inputs;
            v["outputs"] = outputs;
        }
        outln!("{v}");
        return Ok(());
    }
    let widths = |w: &[u32]| {
        w.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join("+")
    };
    outln!("circuit      {} (streamed)", args.c.circuit);
    outln!(
        "gates        {} (AND {}, XOR {}, INV {}, copies {}, constants {})",
        report::group(s.gates),
        report::group(s.and_gates),
        report::group(s.xor_gates),
        report::group(s.inv_gates),
        report::group(s.copy_gates),
        report::group(s.const_gates)
    );
    outln!(
        "wires        {} (inputs {} = {}, outputs {} = {})",
        report::group(l.num_wires as u64),
        l.num_input_wires(),
        widths(&l.input_widths),
        l.output_wires.len(),
        widths(&l.output_widths)
    );
    outln!(
        "AND depth    {} to the outputs, {} AND levels in all; widest level {} ANDs, mean {:.1}",
        s.and_depth,
        levels.len(),
        max_width,
        mean_width
    );
    out!("level widths");
    for b in &histogram {
        out!("  {}..{}: {}", b.min, b.max, b.levels);
    }
    outln!(" (ANDs per level: levels)");
    outln!(
        "live wires   not counted when streaming; run with --parallel none, it needs {} of \
         labels per party (every wire)",
        report::bytes(label_bytes)
    );
    outln!("fingerprint  {}", hex(&uf.fingerprint()));
    if !s.regions.is_empty() {
        outln!(
            "regions      {} parallel region(s) holding {:.1}% of the AND gates",
            s.regions.len(),
            100.0 * in_regions as f64 / s.and_gates.max(1) as f64
        );
    }
    if let Some(iface) = iface {
        for line in typed_io::interface_lines(iface) {
            outln!("{line}");
        }
    }
    Ok(())
}

/// `"regions"` of `pgc info --json`: one object per parallel region.
fn region_json(pc: Option<&ParallelCircuit>) -> Vec<Value> {
    pc.map(|pc| pc.region_info())
        .unwrap_or_default()
        .iter()
        .map(|r| {
            json!({
                "line": r.line,
                "instances": r.instances,
                "and_gates_per_instance": r.and_gates_per_instance,
                "and_gates": r.and_gates,
                "templates": r.templates,
                "inputs_per_instance": r.inputs_per_instance,
                "outputs_per_instance": r.outputs_per_instance,
            })
        })
        .collect()
}

/// The parallel regions, one line each, for `pgc info`.
fn region_lines(pc: Option<&ParallelCircuit>, and_total: u64) -> Vec<String> {
    let Some(pc) = pc else {
        return vec![];
    };
    let info = pc.region_info();
    if info.is_empty() {
        return vec!["regions      none (no loop with independent iterations was found)".into()];
    }
    let share = |x: u64| 100.0 * x as f64 / and_total.max(1) as f64;
    let in_regions: u64 = info.iter().map(|r| r.and_gates).sum();
    let mut lines = vec![format!(
        "regions      {} parallel region(s) holding {:.1}% of the AND gates:",
        info.len(),
        share(in_regions)
    )];
    for r in &info {
        lines.push(format!(
            "  line {:<6} {} instances × {} ANDs ({:.1}% of all ANDs), {} in / {} out wires per instance{}",
            r.line,
            r.instances,
            report::group(r.and_gates_per_instance),
            share(r.and_gates),
            r.inputs_per_instance,
            r.outputs_per_instance,
            if r.templates > 1 {
                format!(", {} distinct templates", r.templates)
            } else {
                String::new()
            }
        ));
    }
    lines
}

pub fn eval(args: EvalArgs) -> Result<()> {
    let program = circuits::load(&args.c, args.json)?;
    let layout = program.circuit.layout().clone();
    // Before the inputs are parsed too: their bits are part of what is measured.
    pgc_circuit::eval::memory_needed(&layout).check()?;
    match &program.interface {
        Some(iface) => {
            args.c.check_typed()?;
            let flag_for = |_: Owner| "--input";
            let mut g = Gathered::new(iface);
            g.add_assignments(&args.inputs, Scope::All, "--input", &flag_for)?;
            if let Some(file) = &args.inputs_file {
                g.add_file(file, Scope::All, &flag_for)?;
            }
            let values = g.finish(Scope::All, &flag_for)?;
            let bits: Vec<bool> = values.into_iter().flatten().collect();
            let out = eval_bits_checked(&program.circuit, &bits)?;
            program.check_stream()?;
            let outputs: Vec<Option<Vec<bool>>> = decode_outputs(&layout, &out)
                .into_iter()
                .map(Some)
                .collect();
            print_typed(iface, &outputs, args.json, json!({}));
        }
        None => {
            refuse_inputs_file(&args.inputs_file)?;
            let values = circuits::parse_values(
                &args.inputs,
                &layout.input_widths,
                args.c.bit_order(),
                "--input",
            )?;
            let bits: Vec<bool> = values.into_iter().flatten().collect();
            let out = eval_bits_checked(&program.circuit, &bits)?;
            program.check_stream()?;
            let outputs = report::outputs_hex(&decode_outputs(&layout, &out), args.c.bit_order());
            if args.json {
                outln!("{}", json!({ "outputs": outputs }));
            } else {
                report::print_outputs(&outputs);
            }
        }
    }
    Ok(())
}

/// Dual execution reveals every output to both parties (each evaluates the other's
/// circuit and the outputs are compared), so an output for one party only is refused.
fn check_outputs_for_level(
    level: Security,
    visibility: &[Visibility],
    interface: Option<&Interface>,
) -> Result<()> {
    if level != Security::DualExecution || visibility.iter().all(|v| *v == Visibility::Both) {
        return Ok(());
    }
    let private: Vec<String> = match interface {
        Some(iface) => iface
            .outputs
            .iter()
            .filter(|p| p.visibility != Visibility::Both)
            .map(|p| p.name.clone())
            .collect(),
        None => vec![],
    };
    bail!(
        "--security dual-execution reveals every output to both parties, but {} for one \
         party only; reveal every output to both (OUTPUT_x), or use --security malicious",
        if private.is_empty() {
            "this circuit has outputs".to_string()
        } else {
            let verb = if private.len() == 1 { "is" } else { "are" };
            format!("{} {verb}", private.join(", "))
        }
    )
}

fn refuse_inputs_file(file: &Option<PathBuf>) -> Result<()> {
    if file.is_some() {
        bail!(
            "--inputs FILE.json needs a compiled program (.c or .pgc) whose inputs have names; \
             give a Bristol circuit's values in order with --input/--a/--b"
        );
    }
    Ok(())
}

/// Who owns each input and who sees each output: from the program's names, or (Bristol)
/// `--inputs-of-a` and every output revealed to both.
fn roles(
    interface: Option<&Interface>,
    layout: &Layout,
    p: &ProtocolArgs,
) -> Result<(Vec<Party>, Vec<Visibility>)> {
    match interface {
        Some(iface) => {
            if p.inputs_of_a.is_some() {
                bail!(
                    "--inputs-of-a applies to Bristol circuits; in a compiled program the \
                     INPUT_A_/INPUT_B_ names say who owns each input"
                );
            }
            Ok((typed_io::owners(iface), typed_io::visibility(iface)))
        }
        None => Ok((
            circuits::owners(layout, p.inputs_of_a.as_deref())?,
            pgc_protocol::all_visible(layout),
        )),
    }
}

/// The circuit as phases and regions for the parallel protocol, or `None` where it runs
/// the sequential protocol (`--parallel none`, and generated circuits, which are never
/// held in memory).
fn parallel_form(
    program: &circuits::Program,
    config: &ParallelConfig,
) -> Result<Option<ParallelCircuit>> {
    if config.mode == ParallelMode::None {
        return Ok(None);
    }
    if let Some(pc) = &program.parallel {
        return Ok(Some(pc.clone()));
    }
    match &program.circuit {
        Loaded::Memory(c) => Ok(Some(ParallelCircuit::sequential(c).context(
            "this circuit is not in single-assignment form, which the parallel protocol needs; \
             run it with --parallel none",
        )?)),
        Loaded::Generated(_) | Loaded::Unrolled(_) => Ok(None),
        Loaded::Compact(_) => {
            if config.mode != ParallelMode::Auto {
                bail!(
                    "compact circuits run sequentially: use --parallel none (or auto), or \
                     compile with --compact never to unroll the program for the parallel modes"
                );
            }
            Ok(None)
        }
    }
}

/// Loads what a protocol run needs: the sequential protocol takes the circuit levelized
/// and packed into slots; the parallel one takes it as phases and regions. Under
/// `--parallel auto` the circuit is loaded first and then `config` is set to what auto
/// chose for it (see [`pgc_protocol::auto`]), which is said on stderr unless `quiet`.
/// `threads_given`: `--threads` was given; `both_parties_here`: under `pgc local`; `who`
/// prefixes the note (`"party A: "` under `run`).
fn load_for_protocol(
    c: &CircuitArgs,
    config: &mut ParallelConfig,
    threads_given: bool,
    both_parties_here: bool,
    quiet: bool,
    who: &str,
) -> Result<circuits::Program> {
    match config.mode {
        ParallelMode::None => circuits::load_for_run(c, c.stream_for_run(), quiet),
        ParallelMode::Auto => {
            // Loaded as for the sequential protocol (streamed only when it must be), but
            // not yet levelized: that is done only if auto runs it sequentially.
            let program = circuits::load_streamed(c, c.stream_for_run(), quiet)?;
            let shared_cores = both_parties_here
                .then(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let choice = auto_choice(&program, config.threads, threads_given, shared_cores);
            if !quiet {
                eprintln!(
                    "{who}--parallel auto chose {}: {}",
                    choice.mode.name(),
                    choice.reason
                );
            }
            config.mode = choice.mode;
            config.threads = choice.threads;
            if choice.mode == ParallelMode::None {
                circuits::prepare(program, &c.circuit)
            } else {
                Ok(program)
            }
        }
        _ => {
            if c.stream {
                bail!("--stream runs the sequential protocol: add --parallel none (on both sides)");
            }
            circuits::load_streamed(c, circuits::Stream::Never, quiet)
        }
    }
}

/// What `--parallel auto` runs `program` with. The choice depends only on the circuit (see
/// [`pgc_protocol::auto`]), so two parties loading the same program choose alike.
/// `threads_given`: whether `--threads` was given (compact circuits spread their calls
/// only then); `shared_cores`: the cores both parties share under `pgc local`.
fn auto_choice(
    program: &circuits::Program,
    threads: usize,
    threads_given: bool,
    shared_cores: Option<usize>,
) -> pgc_protocol::auto::AutoChoice {
    let sequential = |reason: &str| pgc_protocol::auto::AutoChoice {
        mode: ParallelMode::None,
        threads: 1,
        reason: reason.to_string(),
    };
    match (&program.circuit, &program.parallel) {
        (Loaded::Memory(_), Some(pc)) => pgc_protocol::auto::choose(pc, threads),
        (Loaded::Memory(_), None) => sequential(
            "the circuit has no parallel regions: the sequential protocol garbles it in \
             AND-level batches",
        ),
        (Loaded::Compact(_), _) => {
            // Spreading calls has not been measured on real cores yet, and on one core it
            // only adds the scheduling: by default one thread.
            let wanted = if threads_given { threads } else { 1 };
            // Both parties on one machine: more threads than cores would make each wait for
            // the other's (measured: 4× slower on EDT-63 with 2 + 2 threads on 2 vCPUs).
            let threads = match shared_cores {
                Some(cores) => wanted.min((cores / 2).max(1)),
                None => wanted,
            };
            let reason = if threads < wanted {
                format!(
                    "a compact circuit runs the sequential protocol, its calls that share no \
                     wire on {threads} thread(s): --threads {wanted} cut since both parties \
                     share {} core(s)",
                    shared_cores.unwrap_or(1)
                )
            } else if threads > 1 {
                format!(
                    "a compact circuit runs the sequential protocol, its calls that share no \
                     wire on {threads} threads (the tables and their order are those of one \
                     thread)"
                )
            } else {
                "a compact circuit runs the sequential protocol on one thread (give --threads \
                 to run its calls that share no wire on several)"
                    .to_string()
            };
            pgc_protocol::auto::AutoChoice {
                mode: ParallelMode::None,
                threads,
                reason,
            }
        }
        (Loaded::Generated(_), _) => {
            sequential("generated circuits are garbled as they are generated, in order")
        }
        (Loaded::Unrolled(_), _) => {
            sequential("the circuit is streamed from its file, which runs sequentially")
        }
    }
}

pub fn run(args: RunArgs) -> Result<()> {
    // Before anything else, so a missing flag costs no compile and no connection.
    let cluster = cluster_arg::start(&args)?;
    let security = crate::security::resolve(&args.security)?;
    let (level, protocol, mut config) =
        args.p
            .level_and_config(&args.level, &args.protocol, false)?;
    let timeout = args.p.timeout()?;
    let quiet = args.p.quiet || args.p.json || cluster.as_ref().is_some_and(|c| c.is_worker());
    let shape = args.p.link_shape()?;
    let who = match args.party {
        PartyArg::A => "party A: ",
        PartyArg::B => "party B: ",
    };
    let program = load_for_protocol(
        &args.c,
        &mut config,
        args.p.threads.is_some(),
        false,
        quiet,
        who,
    )?;
    let parallel = parallel_form(&program, &config)?;
    circuits::check_label_memory(&program, parallel.as_ref())?;
    let circuit = &program.circuit;
    let layout: Layout = circuit.layout().clone();
    let (owners, visibility) = roles(program.interface.as_ref(), &layout, &args.p)?;
    check_outputs_for_level(level, &visibility, program.interface.as_ref())?;
    let me = match args.party {
        PartyArg::A => Party::A,
        PartyArg::B => Party::B,
    };
    let inputs = match &program.interface {
        Some(iface) => {
            args.c.check_typed()?;
            let flag_for = |_: Owner| "--input";
            let mut g = Gathered::new(iface);
            g.add_assignments(&args.inputs, Scope::Party(me), "--input", &flag_for)?;
            if let Some(file) = &args.inputs_file {
                g.add_file(file, Scope::Party(me), &flag_for)?;
            }
            g.finish(Scope::Party(me), &flag_for)?
        }
        None => {
            refuse_inputs_file(&args.inputs_file)?;
            let my_widths: Vec<u32> = owners
                .iter()
                .zip(&layout.input_widths)
                .filter(|(o, _)| **o == me)
                .map(|(_, &w)| w)
                .collect();
            let who = format!("party {}", me.letter());
            circuits::parse_values(&args.inputs, &my_widths, args.c.bit_order(), &who)
                .context("each party gives only its own input values with --input")?
        }
    };

    let link = (!shape.is_none()).then(|| SharedLink::new(shape));
    let listener = match &args.listen {
        Some(addr) if cluster.is_none() => Some(TcpChannel::listen(addr)?),
        _ => None,
    };
    if !quiet {
        eprintln!(
            "party {}: connection: {}",
            me.letter(),
            crate::security::describe(&security)
        );
        eprintln!(
            "party {}: security level: {}",
            me.letter(),
            crate::level::describe(level)
        );
        if protocol != ProtocolChoice::Yao {
            eprintln!(
                "party {}: protocol: {}",
                me.letter(),
                crate::protocol_arg::describe(protocol)
            );
        }
    }
    let notes = crate::security::stderr_notes(me.letter(), !args.p.quiet);
    let session = Session {
        me,
        program: &program,
        parallel: parallel.as_ref(),
        owners: &owners,
        visibility: &visibility,
        inputs: &inputs,
        level,
        protocol,
        config: &config,
        security: &security,
        notes: &notes,
        link: &link,
        bit_order: args.c.bit_order(),
        timeout,
        quiet,
    };
    if let Some(cluster) = cluster {
        return cluster_arg::run(cluster, &session, &args);
    }
    if args.serve {
        let listener = listener
            .as_ref()
            .context("--serve needs --listen (clap enforces this)")?;
        return serve(&session, listener, args.runs, &args);
    }
    let ch = match (&listener, &args.connect) {
        (Some(listener), _) => {
            if !quiet {
                eprintln!(
                    "party {}: waiting for the peer on {}",
                    me.letter(),
                    listener.local_addr()
                );
            }
            accept_peer(listener, &security, timeout, &notes)?
        }
        (None, Some(addr)) => connect_peer(addr, &security, timeout)?,
        (None, None) => unreachable!("clap requires --listen or --connect"),
    };
    let endpoint = match (&listener, &args.connect) {
        (Some(listener), _) => Endpoint::Listening(listener),
        (None, Some(addr)) => Endpoint::Connected(addr),
        (None, None) => unreachable!("clap requires --listen or --connect"),
    };
    let outcome = session.run(ch, endpoint)?;
    session.print(&outcome, &args, json!({}));
    Ok(())
}

/// Where the peer's connections come from: accepted on our listener, or opened to its
/// address (the worker streams of parallel modes follow the main connection).
#[derive(Clone, Copy)]
enum Endpoint<'a> {
    Listening(&'a pgc_net::TcpListenerHandle),
    Connected(&'a str),
}

/// Everything one protocol run of `pgc run` needs apart from the connection, prepared once
/// (and reused for every run under `--serve`).
struct Session<'a> {
    me: Party,
    program: &'a circuits::Program,
    parallel: Option<&'a ParallelCircuit>,
    owners: &'a [Party],
    visibility: &'a [Visibility],
    inputs: &'a [Vec<bool>],
    level: Security,
    protocol: ProtocolChoice,
    config: &'a ParallelConfig,
    security: &'a pgc_net::connect::ChannelSecurity,
    notes: &'a pgc_net::connect::RefusalNotes,
    link: &'a Option<SharedLink>,
    bit_order: pgc_circuit::BitOrder,
    timeout: Duration,
    quiet: bool,
}

impl Session<'_> {
    /// One run of the protocol over the connected main channel `ch`.
    fn run(&self, mut ch: pgc_net::connect::PeerChannel, endpoint: Endpoint) -> Result<Outcome> {
        let me = self.me;
        let quiet = self.quiet;
        let circuit = &self.program.circuit;
        ch.set_timeout(Some(self.timeout))?;
        // From here on, a run in which nothing moves for `timeout` is ended.
        let dog = Watchdog::start(self.timeout);
        dog.watch_socket(ch.try_clone_socket().ok());
        let mut ch = dog.watch(ch.shaped(self.link)?);
        if !quiet && let Some(l) = self.link {
            eprintln!(
                "party {}: shaping what it sends to {}",
                me.letter(),
                l.shape()
            );
        }
        // How this party reads and prints values: compared with the peer's at the handshake,
        // so that both print the same result (same C types, same bit order).
        let value_format = match &self.program.interface {
            Some(iface) => ValueFormat::typed(iface),
            None => ValueFormat::Untyped(self.bit_order),
        };
        let protocol = match self.protocol {
            ProtocolChoice::Auto => {
                let described = WithValueFormat::new(circuit, value_format.clone());
                let (pick, why) = dog.explain(
                    agree_on_protocol(
                        &mut ch,
                        &described,
                        self.owners,
                        self.visibility,
                        me,
                        self.inputs,
                        &CostModel::default(),
                    )
                    .map_err(anyhow::Error::from),
                )?;
                if !quiet {
                    eprintln!("party {}: --protocol auto chose {pick}: {why}", me.letter());
                }
                pick
            }
            p => p,
        };
        let outcome = match self.parallel {
            _ if protocol == ProtocolChoice::Gmw => {
                let mut progress = Progress::new(circuit.and_count(), quiet);
                let config = GmwConfig {
                    send_ahead_bytes: if self.link.is_some() {
                        pgc_protocol::local::SHAPED_SEND_AHEAD_BYTES
                    } else {
                        GmwConfig::default().send_ahead_bytes
                    },
                    ..GmwConfig::default()
                };
                // Under auto the program may also be held as phases and regions; GMW runs
                // the whole circuit as one gate stream (the same on both sides).
                let outcome = run_gmw(
                    &mut ch,
                    &WithValueFormat::new(circuit, value_format),
                    self.owners,
                    self.visibility,
                    me,
                    self.inputs,
                    &config,
                    &mut |n| {
                        progress.set(n);
                        dog.set_ands(n);
                    },
                );
                progress.finish();
                outcome
            }
            None => {
                let mut progress = Progress::new(circuit.and_count(), quiet);
                let circuit = &WithValueFormat::new(circuit, value_format);
                // Semi-honest: the plain garbler or evaluator.
                let outcome = run_secured(
                    &mut ch,
                    circuit,
                    self.owners,
                    self.visibility,
                    me,
                    self.inputs,
                    self.level,
                    self.config.threads,
                    &mut |n| {
                        progress.set(n);
                        dog.set_ands(n);
                    },
                );
                progress.finish();
                outcome
            }
            // Only at the semi-honest level (`level_and_config` makes the others sequential).
            Some(pc) => {
                let counter = dog.ands();
                let side = match endpoint {
                    Endpoint::Listening(listener) => Side::Accept(listener, self.notes),
                    Endpoint::Connected(addr) => Side::Connect(addr.to_string()),
                };
                let mut opener = WatchedStreams {
                    side,
                    security: self.security,
                    timeout: self.timeout,
                    link: self.link.clone(),
                    dog: &dog,
                };
                let extras = ParallelExtras {
                    value_format,
                    ..ParallelExtras::default()
                };
                crate::progress::watch(pc.and_count(), quiet, counter, || {
                    run_parallel_with(
                        me,
                        &mut ch,
                        &mut opener,
                        pc,
                        self.owners,
                        self.visibility,
                        self.inputs,
                        self.config,
                        counter,
                        &extras,
                    )
                })
            }
        };
        // The protocol checked both parties' gate streams before revealing any output.
        dog.explain(outcome.map_err(anyhow::Error::from))
    }

    /// Prints a run's outputs (stdout) and stats (stderr); `extra` goes into the JSON.
    fn print(&self, outcome: &Outcome, args: &RunArgs, mut extra: Value) {
        let me = self.me;
        extra["party"] = json!(me.letter().to_string());
        extra["stats"] = report::stats_json(&outcome.stats);
        match &self.program.interface {
            Some(iface) => {
                print_typed(iface, &outcome.outputs, args.p.json, extra);
                let hidden = typed_io::hidden_outputs(iface, &outcome.outputs);
                if !self.quiet && !hidden.is_empty() {
                    eprintln!(
                        "party {}: not shown (revealed to party {} only): {}",
                        me.letter(),
                        me.other().letter(),
                        hidden.join(", ")
                    );
                }
            }
            None => print_hex(outcome, args.c.bit_order(), args.p.json, extra),
        }
        if !self.quiet {
            eprintln!(
                "{}",
                report::stats_line(&format!("party {}", me.letter()), &outcome.stats)
            );
        }
    }
}

/// `pgc run --serve`: one run per peer that connects, one after another, with the same
/// program and inputs, until `runs` are done or the user stops it. Each run draws fresh
/// randomness (labels, Δ, OT) as a single run does. A run that fails (a peer that leaves,
/// cheats on the message format or uses the wrong key) is reported and the next peer is
/// served; only a listener that stops working ends the loop with an error.
fn serve(
    session: &Session,
    listener: &pgc_net::TcpListenerHandle,
    runs: Option<u64>,
    args: &RunArgs,
) -> Result<()> {
    let me = session.me.letter();
    // Serving notes go to stderr, so --json (which shapes stdout) leaves them on.
    let notes = !args.p.quiet;
    if notes {
        eprintln!(
            "party {me}: serving runs on {} until {}",
            listener.local_addr(),
            match runs {
                Some(n) => format!("{n} have run"),
                None => "stopped (Ctrl-C)".to_string(),
            }
        );
    }
    let (mut done, mut failed) = (0u64, 0u64);
    while runs.is_none_or(|n| done < n) {
        // Idle waiting has no deadline: keep accepting until a peer completes set-up.
        let ch = match accept_peer(listener, session.security, session.timeout, session.notes) {
            Ok(ch) => ch,
            Err(pgc_net::NetError::AcceptTimeout { .. }) => continue,
            Err(e) => return Err(e).context("the listening socket stopped working"),
        };
        let peer = ch
            .peer_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        done += 1;
        match session.run(ch, Endpoint::Listening(listener)) {
            Ok(outcome) => {
                if !args.p.json {
                    outln!("run {done} (peer {peer}):");
                }
                session.print(&outcome, args, json!({ "run": done, "peer": peer }));
            }
            Err(e) => {
                failed += 1;
                eprintln!(
                    "party {me}: run {done} (peer {peer}) failed: {}",
                    crate::error_text(&e)
                );
            }
        }
    }
    if notes {
        eprintln!("party {me}: served {done} runs ({failed} failed)");
    }
    Ok(())
}

pub fn local(args: LocalArgs) -> Result<()> {
    let (level, protocol, mut config) =
        args.p.level_and_config(&args.level, &args.protocol, true)?;
    let timeout = args.p.timeout()?;
    let quiet = args.p.quiet || args.p.json;
    let shape = args.p.link_shape()?;
    let program = load_for_protocol(
        &args.c,
        &mut config,
        args.p.threads.is_some(),
        true,
        quiet,
        "",
    )?;
    let parallel = parallel_form(&program, &config)?;
    circuits::check_label_memory(&program, parallel.as_ref())?;
    let circuit = &program.circuit;
    let layout: Layout = circuit.layout().clone();
    let (owners, visibility) = roles(program.interface.as_ref(), &layout, &args.p)?;
    check_outputs_for_level(level, &visibility, program.interface.as_ref())?;
    let (a, b) = match &program.interface {
        Some(iface) => {
            args.c.check_typed()?;
            let flag_for = |o: Owner| match o {
                Owner::A => "--a",
                Owner::B => "--b",
            };
            let mut g = Gathered::new(iface);
            g.add_assignments(&args.a, Scope::Party(Party::A), "--a", &flag_for)?;
            g.add_assignments(&args.b, Scope::Party(Party::B), "--b", &flag_for)?;
            if let Some(file) = &args.inputs_file {
                g.add_file(file, Scope::All, &flag_for)?;
            }
            let a = g.finish(Scope::Party(Party::A), &flag_for);
            let b = g.finish(Scope::Party(Party::B), &flag_for);
            match (a, b) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(ea), Err(eb)) => bail!("{ea}\n       {eb}"),
                (Err(e), _) | (_, Err(e)) => return Err(e),
            }
        }
        None => {
            refuse_inputs_file(&args.inputs_file)?;
            let widths_of = |p: Party| -> Vec<u32> {
                owners
                    .iter()
                    .zip(&layout.input_widths)
                    .filter(|(o, _)| **o == p)
                    .map(|(_, &w)| w)
                    .collect()
            };
            let order = args.c.bit_order();
            (
                circuits::parse_values(&args.a, &widths_of(Party::A), order, "party A (--a)")?,
                circuits::parse_values(&args.b, &widths_of(Party::B), order, "party B (--b)")?,
            )
        }
    };
    let security = if args.insecure_plaintext {
        LocalSecurity::Plaintext
    } else {
        LocalSecurity::Tls
    };
    let protocol = match protocol {
        ProtocolChoice::Auto => {
            let (pick, why) = crate::protocol_arg::decide_local(circuit_shape(circuit), shape);
            if !quiet {
                eprintln!("--protocol auto chose {pick}: {why}");
            }
            pick
        }
        p => p,
    };
    let result = match &parallel {
        _ if protocol == ProtocolChoice::Gmw => {
            let mut progress = Progress::new(circuit.and_count(), quiet);
            // Under auto the program may also be held as phases and regions; GMW runs the
            // whole circuit as one gate stream (the same on both sides).
            let r = run_local_gmw(
                circuit,
                &owners,
                &visibility,
                &a,
                &b,
                &GmwConfig::default(),
                shape,
                timeout,
                security,
                &mut |n| progress.set(n),
            );
            progress.finish();
            r
        }
        None => {
            let mut progress = Progress::new(circuit.and_count(), quiet);
            let r = run_local_tcp_shaped(
                circuit,
                &owners,
                &visibility,
                &a,
                &b,
                timeout,
                security,
                level,
                config.threads,
                shape,
                &mut |n| progress.set(n),
            );
            progress.finish();
            r
        }
        Some(pc) => {
            let counter = AtomicU64::new(0);
            crate::progress::watch(pc.and_count(), quiet, &counter, || {
                run_local_parallel_secured(
                    pc,
                    &owners,
                    &visibility,
                    &a,
                    &b,
                    &config,
                    shape,
                    timeout,
                    security,
                    &counter,
                )
            })
        }
    };
    // The protocol checked both parties' gate streams before revealing any output.
    let (oa, ob) = result?;
    // Both parties run here: show every output, each as the party allowed to see it decoded
    // it, after checking that outputs seen by both agree.
    let mut outputs = Vec::with_capacity(visibility.len());
    for (j, v) in visibility.iter().enumerate() {
        let (from_a, from_b) = (&oa.outputs[j], &ob.outputs[j]);
        if *v == Visibility::Both && from_a != from_b {
            bail!("the two parties decoded different outputs; this is a bug in pgc");
        }
        outputs.push(from_a.clone().or_else(|| from_b.clone()));
    }
    let merged = Outcome {
        outputs,
        stats: ob.stats.clone(),
    };
    let extra = json!({
        "stats": { "a": report::stats_json(&oa.stats), "b": report::stats_json(&ob.stats) },
    });
    match &program.interface {
        Some(iface) => print_typed(iface, &merged.outputs, args.p.json, extra),
        None => print_hex(&merged, args.c.bit_order(), args.p.json, extra),
    }
    if !quiet {
        if level != Security::SemiHonest {
            eprintln!("security level: {}", crate::level::describe(level));
        }
        if protocol == ProtocolChoice::Gmw {
            eprintln!("protocol: {}", crate::protocol_arg::describe(protocol));
            eprintln!("{}", report::stats_line("party A", &oa.stats));
            eprintln!("{}", report::stats_line("party B", &ob.stats));
        } else {
            eprintln!("{}", report::stats_line("party A (garbler)", &oa.stats));
            eprintln!("{}", report::stats_line("party B (evaluator)", &ob.stats));
        }
    }
    Ok(())
}

/// Typed outputs: `NAME = VALUE` lines, or with `json` an object `{"outputs": {...}}` merged
/// with `extra`.
fn print_typed(iface: &Interface, outputs: &[Option<Vec<bool>>], json: bool, extra: Value) {
    if json {
        let mut v = extra;
        v["outputs"] = typed_io::outputs_json(iface, outputs);
        outln!("{v}");
    } else {
        for line in typed_io::output_lines(iface, outputs) {
            outln!("{line}");
        }
    }
}

/// Untyped outputs as 0x-hex (every output is visible to both for Bristol circuits).
fn print_hex(outcome: &Outcome, order: pgc_circuit::BitOrder, json: bool, extra: Value) {
    let visible: Vec<Vec<bool>> = outcome.outputs.iter().flatten().cloned().collect();
    let outputs = report::outputs_hex(&visible, order);
    if json {
        let mut v = extra;
        v["outputs"] = json!(outputs);
        outln!("{v}");
    } else {
        report::print_outputs(&outputs);
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
