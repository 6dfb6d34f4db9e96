//! The `info`, `eval`, `run` and `local` commands.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use pgc_circuit::analysis::{assign_slots, levelize, stats};
use pgc_circuit::{GateSource, Interface, ParallelCircuit, RegionInfo, validate};
use pgc_engine::circuits::{self, CircuitArgs, Loaded};
use pgc_engine::level::LevelArgs;
use pgc_engine::options::{PartyArg, ProtocolArgs};
use pgc_engine::protocol_arg::ProtocolChoiceArgs;
use pgc_engine::report;
use pgc_engine::session::{
    Endpoint, InputValues, LocalOptions, PartyOptions, PartySession, eval_clear, run_local,
};
use pgc_engine::typed_io::{self, Scope};
use pgc_net::TcpChannel;
use pgc_net::connect::accept_peer;
use pgc_protocol::{Outcome, ProtocolChoice, Security};
use serde_json::{Value, json};

// `--cluster` (MPI): a child module, so that it can print as `run` does.
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
'a' for a character, [1,2,3] for arrays ([[1,2],[3,4]] nested), \"kitten\" for an array of \
8-bit integers (zero-padded, as in C; quote it for the shell: 'text=\"kitten\"'), \
{x: 1, y: [1,2]} for structs, the bytes of a union ([1,0,0,0]). For a Bristol \
circuit: one bare decimal or 0x-hex value per input value, in circuit order.";

/// `--a`/`--b` on a command without parties' flags (`eval`, `run`), hidden and refused
/// with the flag to use: clap's own suggestion for an unknown `--a` is `--max-memory`.
#[derive(Args)]
pub struct MisplacedPartyFlags {
    #[arg(
        long = "a",
        hide = true,
        allow_hyphen_values = true,
        value_name = "NAME=VALUE"
    )]
    a: Vec<String>,
    #[arg(
        long = "b",
        hide = true,
        allow_hyphen_values = true,
        value_name = "NAME=VALUE"
    )]
    b: Vec<String>,
}

impl MisplacedPartyFlags {
    fn refuse(&self, instead: &str) -> Result<()> {
        if self.a.is_empty() && self.b.is_empty() {
            return Ok(());
        }
        bail!("{instead} (--a and --b are pgc local's, which runs both parties)")
    }
}

#[derive(Args)]
pub struct EvalArgs {
    #[command(flatten)]
    pub c: CircuitArgs,
    #[command(flatten)]
    pub misplaced: MisplacedPartyFlags,
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

/// `--listen`/`--connect`: HOST:PORT with a port from `lowest` (0 lets the system pick one
/// to listen on), checked when the flag is read so that a forgotten port costs no compile.
/// The host itself is left to the resolver.
fn host_and_port(s: &str, lowest: u16) -> Result<String, String> {
    let example = "e.g. 0.0.0.0:7000 to listen, machine1:7000 or [2001:db8::1]:7000 to connect";
    let Some((host, port)) = s.rsplit_once(':').filter(|_| !s.ends_with(']')) else {
        return Err(format!("no port: give HOST:PORT, {example}"));
    };
    if host.is_empty() {
        return Err(format!(
            "no host before ':{port}': give HOST:PORT, {example}"
        ));
    }
    match port.parse::<u16>() {
        Ok(p) if p >= lowest => Ok(s.to_string()),
        _ => Err(format!(
            "'{port}' is not a port number ({lowest} to 65535): give HOST:PORT, {example}"
        )),
    }
}

#[derive(Args)]
#[command(group = clap::ArgGroup::new("endpoint").required(true).args(["listen", "connect"]))]
pub struct RunArgs {
    #[command(flatten)]
    pub c: CircuitArgs,
    #[command(flatten)]
    pub misplaced: MisplacedPartyFlags,
    /// Which party this is: a garbles, b evaluates.
    #[arg(long, value_enum, help_heading = "Connection")]
    pub party: PartyArg,
    /// Wait for the peer on this address, e.g. 0.0.0.0:7000.
    #[arg(long, value_name = "ADDR", help_heading = "Connection",
        value_parser = |s: &str| host_and_port(s, 0))]
    pub listen: Option<String>,
    /// Connect to the peer at this address, e.g. 192.0.2.1:7000 (retried until --timeout).
    #[arg(long, value_name = "ADDR", help_heading = "Connection",
        value_parser = |s: &str| host_and_port(s, 1))]
    pub connect: Option<String>,
    /// One of this party's own inputs (repeat for each).
    #[arg(long = "input", value_name = "NAME=VALUE", allow_hyphen_values = true,
        help_heading = "Inputs",
        long_help = format!("One of this party's own inputs (repeat for each; never the \
        other party's). {INPUT_HELP}"))]
    pub inputs: Vec<String>,
    /// Compiled programs: read this party's input values from a JSON object keyed by input
    /// name, e.g. {"income": 5000} or {"db": [[1,2,3,4],[5,6,7,8]]}; --input values take
    /// precedence.
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
    pub security: pgc_engine::security::SecurityArgs,
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
    /// `--input`, hidden and refused with the flags to use (clap would suggest `--inputs`,
    /// a JSON file).
    #[arg(
        long = "input",
        hide = true,
        allow_hyphen_values = true,
        value_name = "NAME=VALUE"
    )]
    pub misplaced_input: Vec<String>,
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
    // Compiled programs and `.pgc` files without regions are held without a parallel
    // form (the runs do not need one); they still say that they have none.
    let compiled = circuits::is_source(&args.c.circuit)
        || pgc_circuit::pgcfile::is_pgc_file(std::path::Path::new(&args.c.circuit))
            .unwrap_or(false);
    for line in region_lines(program.parallel.as_ref(), compiled, s.and_gates) {
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

/// One line for the regions without AND gates (loops of XORs: nothing to garble in
/// parallel), naming their source lines; `None` when there are none.
pub(crate) fn linear_regions_line(linear: &[RegionInfo]) -> Option<String> {
    if linear.is_empty() {
        return None;
    }
    let distinct: std::collections::BTreeSet<u32> = linear.iter().map(|r| r.line).collect();
    let mut lines: Vec<String> = distinct.iter().take(8).map(|l| l.to_string()).collect();
    if distinct.len() > lines.len() {
        lines.push("…".to_string());
    }
    Some(format!(
        "{} more without AND gates (free XORs only; line{} {})",
        linear.len(),
        if distinct.len() > 1 { "s" } else { "" },
        lines.join(", ")
    ))
}

/// The parallel regions, one line each, for `pgc info`.
fn region_lines(pc: Option<&ParallelCircuit>, compiled: bool, and_total: u64) -> Vec<String> {
    let info = match pc {
        Some(pc) => pc.region_info(),
        None if compiled => vec![],
        None => return vec![],
    };
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
    // As `pgc compile` lists them: regions without ANDs (XOR-only loops) on one line.
    let (linear, with_ands): (Vec<RegionInfo>, Vec<RegionInfo>) = info
        .into_iter()
        .partition(|r| r.and_gates_per_instance == 0);
    for (r, repeats) in RegionInfo::runs(&with_ands) {
        lines.push(format!(
            "  line {:<6} {} instances × {} ANDs ({:.1}% of all ANDs), {} in / {} out wires per instance{}{}",
            r.line,
            r.instances,
            report::group(r.and_gates_per_instance),
            share(r.and_gates * repeats as u64),
            r.inputs_per_instance,
            r.outputs_per_instance,
            if r.templates > 1 {
                format!(", {} distinct templates", r.templates)
            } else {
                String::new()
            },
            if repeats > 1 {
                format!("; {repeats} such regions")
            } else {
                String::new()
            }
        ));
    }
    if let Some(line) = linear_regions_line(&linear) {
        lines.push(format!("  {line}"));
    }
    lines
}

pub fn eval(args: EvalArgs) -> Result<()> {
    args.misplaced.refuse(
        "pgc eval takes every input, both parties', with --input NAME=VALUE, full names where \
         both have an input of that name",
    )?;
    let program = circuits::load(&args.c, args.json)?;
    let inputs = InputValues {
        assignments: args.inputs.clone(),
        file: args.inputs_file.clone(),
        json: None,
    };
    let outputs = eval_clear(&program, &args.c, &[(&inputs, Scope::All, "--input")])?;
    match &program.interface {
        Some(iface) => {
            let outputs: Vec<Option<Vec<bool>>> = outputs.into_iter().map(Some).collect();
            print_typed(iface, &outputs, args.json, json!({}));
        }
        None => {
            let outputs = report::outputs_hex(&outputs, args.c.bit_order());
            if args.json {
                outln!("{}", json!({ "outputs": outputs }));
            } else {
                print_outputs(&outputs);
            }
        }
    }
    Ok(())
}

pub fn run(args: RunArgs) -> Result<()> {
    args.misplaced
        .refuse("pgc run takes this party's own inputs with --input NAME=VALUE")?;
    // Before anything else, so a missing flag costs no compile and no connection.
    let cluster = cluster_arg::start(&args)?;
    let inputs = InputValues {
        assignments: args.inputs.clone(),
        file: args.inputs_file.clone(),
        json: None,
    };
    // A cluster's worker ranks say nothing: rank 0 speaks for the party.
    let mut p = args.p.clone();
    p.quiet |= cluster.as_ref().is_some_and(|c| c.is_worker());
    let session = PartySession::prepare(&PartyOptions {
        circuit: &args.c,
        loaded: None,
        party: args.party.party(),
        inputs: &inputs,
        input_flag: "--input",
        security: &args.security,
        level: &args.level,
        protocol: &args.protocol,
        p: &p,
    })?;
    let listener = match &args.listen {
        Some(addr) if cluster.is_none() => Some(TcpChannel::listen(addr)?),
        _ => None,
    };
    if let Some(cluster) = cluster {
        // It describes the session itself, once the options are known to suit a cluster.
        return cluster_arg::run(cluster, &session, &args);
    }
    session.describe_on_stderr();
    if args.serve {
        let listener = listener
            .as_ref()
            .context("--serve needs --listen (clap enforces this)")?;
        return serve(&session, listener, args.runs, &args);
    }
    let outcome = match (&listener, &args.connect) {
        (Some(listener), _) => {
            let ch = session.accept(listener)?;
            session.run(ch, Endpoint::Listening(listener))?
        }
        (None, Some(addr)) => {
            // Said first, since connecting retries silently until --timeout.
            if !session.quiet {
                eprintln!(
                    "party {}: connecting to {addr} (retrying for up to {} s, --timeout)",
                    session.me.letter(),
                    session.timeout.as_secs_f64()
                );
            }
            let ch = session.connect(addr)?;
            session.run(ch, Endpoint::Connected(addr))?
        }
        (None, None) => unreachable!("clap requires --listen or --connect"),
    };
    print_party(&session, &outcome, &args, json!({}));
    Ok(())
}

/// Prints a run's outputs (stdout) and stats (stderr); `extra` goes into the JSON.
fn print_party(session: &PartySession, outcome: &Outcome, args: &RunArgs, mut extra: Value) {
    let me = session.me;
    extra["party"] = json!(me.letter().to_string());
    extra["stats"] = report::stats_json(&outcome.stats);
    match &session.program.interface {
        Some(iface) => {
            print_typed(iface, &outcome.outputs, args.p.json, extra);
            let hidden = typed_io::hidden_outputs(iface, &outcome.outputs);
            if !session.quiet && !hidden.is_empty() {
                eprintln!(
                    "party {}: not shown (revealed to party {} only): {}",
                    me.letter(),
                    me.other().letter(),
                    hidden.join(", ")
                );
            }
        }
        None => print_hex(&outcome.outputs, args.c.bit_order(), args.p.json, extra),
    }
    if !session.quiet {
        eprintln!(
            "{}",
            report::stats_line(&format!("party {}", me.letter()), &outcome.stats)
        );
    }
}

/// `pgc run --serve`: one run per peer that connects, one after another, with the same
/// program and inputs, until `runs` are done or the user stops it. Each run draws fresh
/// randomness (labels, Δ, OT) as a single run does. A run that fails (a peer that leaves,
/// cheats on the message format or uses the wrong key) is reported and the next peer is
/// served; only a listener that stops working ends the loop with an error.
fn serve(
    session: &PartySession,
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
        let ch = match accept_peer(listener, &session.security, session.timeout, &session.notes) {
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
                print_party(
                    session,
                    &outcome,
                    args,
                    json!({ "run": done, "peer": peer }),
                );
            }
            Err(e) => {
                failed += 1;
                eprintln!(
                    "party {me}: run {done} (peer {peer}) failed: {}",
                    pgc_engine::error_text(&e)
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
    if !args.misplaced_input.is_empty() {
        bail!(
            "pgc local takes party A's inputs with --a NAME=VALUE and party B's with --b \
             NAME=VALUE (--input is pgc run's, for one party, and pgc eval's)"
        );
    }
    let both = InputValues {
        file: args.inputs_file.clone(),
        ..InputValues::default()
    };
    let r = run_local(&LocalOptions {
        circuit: &args.c,
        loaded: None,
        a: &InputValues::texts(&args.a),
        b: &InputValues::texts(&args.b),
        both: &both,
        flags: ("--a", "--b"),
        insecure_plaintext: args.insecure_plaintext,
        level: &args.level,
        protocol: &args.protocol,
        p: &args.p,
    })?;
    let quiet = args.p.quiet || args.p.json;
    let extra = json!({
        "stats": { "a": report::stats_json(&r.a), "b": report::stats_json(&r.b) },
    });
    match &r.interface {
        Some(iface) => print_typed(iface, &r.outputs, args.p.json, extra),
        None => print_hex(&r.outputs, r.bit_order, args.p.json, extra),
    }
    if !quiet {
        if r.level != Security::SemiHonest {
            eprintln!("security level: {}", pgc_engine::level::describe(r.level));
        }
        if r.protocol == ProtocolChoice::Gmw {
            eprintln!(
                "protocol: {}",
                pgc_engine::protocol_arg::describe(r.protocol)
            );
            eprintln!("{}", report::stats_line("party A", &r.a));
            eprintln!("{}", report::stats_line("party B", &r.b));
        } else {
            eprintln!("{}", report::stats_line("party A (garbler)", &r.a));
            eprintln!("{}", report::stats_line("party B (evaluator)", &r.b));
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
fn print_hex(
    outputs: &[Option<Vec<bool>>],
    order: pgc_circuit::BitOrder,
    json: bool,
    extra: Value,
) {
    let visible: Vec<Vec<bool>> = outputs.iter().flatten().cloned().collect();
    let outputs = report::outputs_hex(&visible, order);
    if json {
        let mut v = extra;
        v["outputs"] = json!(outputs);
        outln!("{v}");
    } else {
        print_outputs(&outputs);
    }
}

/// Untyped outputs as `output I: VALUE` lines.
fn print_outputs(outputs: &[String]) {
    for (i, v) in outputs.iter().enumerate() {
        outln!("output {i}: {v}");
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
