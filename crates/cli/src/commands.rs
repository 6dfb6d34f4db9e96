//! The `info`, `eval`, `run` and `local` commands.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use pgc_circuit::analysis::{assign_slots, levelize, stats};
use pgc_circuit::bristol::Format;
use pgc_circuit::eval::eval_bits;
use pgc_circuit::value::{BitOrder, decode_outputs};
use pgc_circuit::{GateSource, Layout};
use pgc_net::TcpChannel;
use pgc_protocol::{Party, run_evaluator, run_garbler, run_local_tcp};
use serde_json::json;

use crate::circuits::{self, Loaded};
use crate::progress::Progress;
use crate::report;

/// Options shared by every command that reads a circuit.
#[derive(Args)]
pub struct CircuitArgs {
    /// Circuit file (Bristol Fashion, MAND or old Bristol format), or builtin:NAME
    /// (builtin:millionaires, builtin:aes128, builtin:random:WIDTHxDEPTH).
    pub circuit: String,
    /// File format; detected from the file's line structure when not given.
    #[arg(long, value_parser = parse_format)]
    pub format: Option<Format>,
    /// How each value's bits map to wires: lsb0 (wire 0 = least significant bit; Bristol
    /// Fashion) or msb0 (wire 0 = most significant bit; the old-format AES and SHA circuits).
    #[arg(long, default_value = "lsb0", value_parser = parse_bit_order)]
    pub bit_order: BitOrder,
}

fn parse_format(s: &str) -> Result<Format, String> {
    s.parse()
        .map_err(|_| format!("'{s}' is not a format: use bristol-fashion or bristol"))
}

fn parse_bit_order(s: &str) -> Result<BitOrder, String> {
    s.parse()
        .map_err(|_| format!("'{s}' is not a bit order: use lsb0 or msb0"))
}

#[derive(Args)]
pub struct InfoArgs {
    #[command(flatten)]
    pub c: CircuitArgs,
    /// Print the statistics as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct EvalArgs {
    #[command(flatten)]
    pub c: CircuitArgs,
    /// An input value, decimal or 0x-hex; give one per input value of the circuit, in order.
    #[arg(long = "input", value_name = "V", allow_hyphen_values = true)]
    pub inputs: Vec<String>,
    /// Print the outputs as JSON.
    #[arg(long)]
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
pub struct ProtocolArgs {
    /// Input values that belong to party A, by position (from 0), comma-separated; all others
    /// belong to B. Default: value 0 is A's, the rest are B's.
    #[arg(long, value_delimiter = ',', value_name = "I,J,..")]
    pub inputs_of_a: Option<Vec<usize>>,
    /// Seconds to wait for the peer (to connect, and for each message) before giving up.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print outputs and statistics as JSON.
    #[arg(long)]
    pub json: bool,
}

impl ProtocolArgs {
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
    #[arg(long, value_enum)]
    pub party: PartyArg,
    /// Wait for the peer on this address, e.g. 0.0.0.0:7000.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Connect to the peer at this address, e.g. 192.0.2.1:7000 (retried until --timeout).
    #[arg(long, value_name = "ADDR")]
    pub connect: Option<String>,
    /// One of this party's own input values, decimal or 0x-hex, in circuit order.
    #[arg(long = "input", value_name = "V", allow_hyphen_values = true)]
    pub inputs: Vec<String>,
    #[command(flatten)]
    pub p: ProtocolArgs,
}

#[derive(Args)]
pub struct LocalArgs {
    #[command(flatten)]
    pub c: CircuitArgs,
    /// An input value of party A, decimal or 0x-hex, in circuit order.
    #[arg(long = "a", value_name = "V", allow_hyphen_values = true)]
    pub a: Vec<String>,
    /// An input value of party B, decimal or 0x-hex, in circuit order.
    #[arg(long = "b", value_name = "V", allow_hyphen_values = true)]
    pub b: Vec<String>,
    #[command(flatten)]
    pub p: ProtocolArgs,
}

pub fn info(args: InfoArgs) -> Result<()> {
    let loaded = circuits::load_raw(&args.c.circuit, args.c.format)?;
    let c = match loaded {
        Loaded::Memory(c) => c,
        Loaded::Generated(g) => {
            let v = json!({
                "generated": true,
                "gates": g.gate_count(),
                "and_gates": g.and_count(),
                "and_depth": g.depth,
                "width": g.width,
            });
            if args.json {
                println!("{v}");
            } else {
                println!(
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
    let s = stats(&c);
    let slots = assign_slots(&levelize(&c)?).layout.num_wires;
    if args.json {
        let mut v = serde_json::to_value(&s)?;
        v["fingerprint"] = json!(hex(&c.fingerprint()));
        v["slots_when_run"] = json!(slots);
        v["label_bytes_when_run"] = json!(slots as u64 * 16);
        println!("{v}");
        return Ok(());
    }
    let l = &c.layout;
    let widths = |w: &[u32]| {
        w.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join("+")
    };
    println!("circuit      {}", args.c.circuit);
    println!(
        "gates        {} (AND {}, XOR {}, INV {}, copies {}, constants {})",
        report::group(s.gates),
        report::group(s.and_gates),
        report::group(s.xor_gates),
        report::group(s.inv_gates),
        report::group(s.copy_gates),
        report::group(s.const_gates)
    );
    println!(
        "wires        {} (inputs {} = {}, outputs {} = {})",
        report::group(s.wires),
        s.input_wires,
        widths(&l.input_widths),
        s.output_wires,
        widths(&l.output_widths)
    );
    println!(
        "AND depth    {} to the outputs, {} AND levels in all; widest level {} ANDs, mean {:.1}",
        s.and_depth, s.and_levels, s.max_width, s.mean_width
    );
    print!("level widths");
    for b in &s.width_histogram {
        print!("  {}..{}: {}", b.min, b.max, b.levels);
    }
    println!(" (ANDs per level: levels)");
    println!(
        "live wires   peak {} in file order; {} slots when run ({} of labels per party)",
        report::group(s.peak_live_wires),
        report::group(slots as u64),
        report::bytes(slots as u64 * 16)
    );
    println!("fingerprint  {}", hex(&c.fingerprint()));
    Ok(())
}

pub fn eval(args: EvalArgs) -> Result<()> {
    let loaded = circuits::load_raw(&args.c.circuit, args.c.format)?;
    let layout = loaded.layout().clone();
    let values = circuits::parse_values(
        &args.inputs,
        &layout.input_widths,
        args.c.bit_order,
        "--input",
    )?;
    let bits: Vec<bool> = values.into_iter().flatten().collect();
    let out = eval_bits(&loaded, &bits);
    let outputs = report::outputs_hex(&decode_outputs(&layout, &out), args.c.bit_order);
    if args.json {
        println!("{}", json!({ "outputs": outputs }));
    } else {
        report::print_outputs(&outputs);
    }
    Ok(())
}

pub fn run(args: RunArgs) -> Result<()> {
    let timeout = args.p.timeout()?;
    let circuit = circuits::load_for_run(&args.c.circuit, args.c.format)?;
    let layout: Layout = circuit.layout().clone();
    let owners = circuits::owners(&layout, args.p.inputs_of_a.as_deref())?;
    let me = match args.party {
        PartyArg::A => Party::A,
        PartyArg::B => Party::B,
    };
    let my_widths: Vec<u32> = owners
        .iter()
        .zip(&layout.input_widths)
        .filter(|(o, _)| **o == me)
        .map(|(_, &w)| w)
        .collect();
    let who = format!("party {}", me.letter());
    let inputs = circuits::parse_values(&args.inputs, &my_widths, args.c.bit_order, &who)
        .context("each party gives only its own input values with --input")?;

    let mut ch = match (&args.listen, &args.connect) {
        (Some(addr), _) => {
            let listener = TcpChannel::listen(addr)?;
            if !args.p.quiet && !args.p.json {
                eprintln!(
                    "party {}: waiting for the peer on {}",
                    me.letter(),
                    listener.local_addr()
                );
            }
            listener.accept(timeout)?
        }
        (None, Some(addr)) => TcpChannel::connect(addr, timeout)?,
        (None, None) => unreachable!("clap requires --listen or --connect"),
    };
    ch.set_timeout(Some(timeout))?;
    let mut progress = Progress::new(circuit.and_count(), args.p.quiet || args.p.json);
    let outcome = match me {
        Party::A => run_garbler(&mut ch, &circuit, &owners, &inputs, &mut |n| {
            progress.set(n)
        }),
        Party::B => run_evaluator(&mut ch, &circuit, &owners, &inputs, &mut |n| {
            progress.set(n)
        }),
    };
    progress.finish();
    let outcome = outcome?;
    let outputs = report::outputs_hex(&outcome.outputs, args.c.bit_order);
    if args.p.json {
        println!(
            "{}",
            json!({
                "outputs": outputs,
                "party": me.letter().to_string(),
                "stats": report::stats_json(&outcome.stats),
            })
        );
    } else {
        report::print_outputs(&outputs);
        if !args.p.quiet {
            eprintln!(
                "{}",
                report::stats_line(&format!("party {}", me.letter()), &outcome.stats)
            );
        }
    }
    Ok(())
}

pub fn local(args: LocalArgs) -> Result<()> {
    let timeout = args.p.timeout()?;
    let circuit = circuits::load_for_run(&args.c.circuit, args.c.format)?;
    let layout: Layout = circuit.layout().clone();
    let owners = circuits::owners(&layout, args.p.inputs_of_a.as_deref())?;
    let widths_of = |p: Party| -> Vec<u32> {
        owners
            .iter()
            .zip(&layout.input_widths)
            .filter(|(o, _)| **o == p)
            .map(|(_, &w)| w)
            .collect()
    };
    let a = circuits::parse_values(
        &args.a,
        &widths_of(Party::A),
        args.c.bit_order,
        "party A (--a)",
    )?;
    let b = circuits::parse_values(
        &args.b,
        &widths_of(Party::B),
        args.c.bit_order,
        "party B (--b)",
    )?;
    let mut progress = Progress::new(circuit.and_count(), args.p.quiet || args.p.json);
    let result = run_local_tcp(&circuit, &owners, &a, &b, timeout, &mut |n| progress.set(n));
    progress.finish();
    let (oa, ob) = result?;
    if oa.outputs != ob.outputs {
        bail!("the two parties decoded different outputs; this is a bug in pgc");
    }
    let outputs = report::outputs_hex(&ob.outputs, args.c.bit_order);
    if args.p.json {
        println!(
            "{}",
            json!({
                "outputs": outputs,
                "stats": { "a": report::stats_json(&oa.stats), "b": report::stats_json(&ob.stats) },
            })
        );
    } else {
        report::print_outputs(&outputs);
        if !args.p.quiet {
            eprintln!("{}", report::stats_line("party A (garbler)", &oa.stats));
            eprintln!("{}", report::stats_line("party B (evaluator)", &ob.stats));
        }
    }
    Ok(())
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
