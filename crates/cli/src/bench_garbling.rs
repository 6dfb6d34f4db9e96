//! `pgc bench garbling`: three-halves (Rosulek–Roy 2021) against half-gates, side by side
//! in one run: garbling and evaluation in memory on one thread, then the whole protocol
//! over loopback plaintext TCP, unshaped and with each party's sends shaped to each
//! `--rate-limit`, the two schemes alternated and the medians reported. Every run checks
//! its result against cleartext evaluation.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Args;
use pgc_circuit::GateSource;
use pgc_circuit::eval::eval_bits;
use pgc_circuit::generate::RandomLayered;
use pgc_crypto::{Block, Prg};
use pgc_garble::{Garbling, random_delta, three_halves};
use pgc_net::LinkShape;
use pgc_protocol::{LocalSecurity, LocalTcpOptions, Party, all_visible, run_local_tcp_with};
use serde_json::json;

use pgc_engine::report::{self, per_sec};

use crate::bench::{generated, random_bits};

#[derive(Args)]
pub struct GarblingBenchArgs {
    /// AND gates in the generated random layered circuit (rounded up to whole levels).
    #[arg(long, default_value_t = 4_000_000)]
    ands: u64,
    /// AND gates per level of the generated circuit.
    #[arg(long, default_value_t = 4096)]
    width: u32,
    /// Link rates to shape each party's sends to, in Mbit/s (comma-separated); the
    /// protocol also runs unshaped.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "100,1000",
        value_name = "MBIT,.."
    )]
    rate_limit: Vec<f64>,
    /// Runs of each scheme per setting, alternated; the medians are reported (--repeat, as
    /// the other benchmarks spell it, works too).
    #[arg(long, visible_alias = "repeat", default_value_t = 3)]
    repeats: usize,
    /// Only the in-memory figures.
    #[arg(long)]
    memory_only: bool,
}

const SCHEMES: [Garbling; 2] = [Garbling::HalfGates, Garbling::ThreeHalves];

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Garbles then evaluates `circuit` in memory with `scheme` (each side timed alone);
/// returns (garbler AND/s, evaluator AND/s) after checking the outputs.
fn in_memory(circuit: &RandomLayered, scheme: Garbling) -> Result<(f64, f64)> {
    let layout = circuit.layout().clone();
    let mut prg = Prg::from_os_entropy();
    let delta = random_delta(&mut prg);
    let key = prg.random_block();
    let n = layout.num_wires as usize;
    let inputs = random_bits(&mut prg, layout.num_input_wires() as usize);
    let zero: Vec<Block> = inputs.iter().map(|_| prg.random_block()).collect();
    let (mut garbling, mut evaluating) = (Duration::ZERO, Duration::ZERO);
    let decoded = match scheme {
        Garbling::HalfGates => {
            let mut g = pgc_garble::Garbler::new(n, delta, key);
            let mut e = pgc_garble::Evaluator::new(n, key);
            for (w, (&bit, &z)) in inputs.iter().zip(&zero).enumerate() {
                g.set_zero_label(w as u32, z);
                e.set_label(w as u32, z ^ delta.select(bit));
            }
            let mut tables = Vec::new();
            circuit.for_each_chunk(&mut |gates| -> Result<()> {
                tables.clear();
                let t = Instant::now();
                g.garble(gates, &mut tables);
                garbling += t.elapsed();
                let t = Instant::now();
                e.evaluate(gates, &tables)?;
                evaluating += t.elapsed();
                Ok(())
            })?;
            e.decode(&layout.output_wires, &g.decoding_bits(&layout.output_wires))
        }
        Garbling::ThreeHalves => {
            let seed = prg.random_block();
            let mut g = three_halves::Garbler::new(n, delta, key, Prg::from_seed(seed));
            let mut e = three_halves::Evaluator::new(n, key);
            for (w, (&bit, &z)) in inputs.iter().zip(&zero).enumerate() {
                g.set_zero_label(w as u32, z);
                e.set_label(w as u32, z ^ delta.select(bit));
            }
            let mut tables = three_halves::Tables::default();
            circuit.for_each_chunk(&mut |gates| -> Result<()> {
                tables.clear();
                let t = Instant::now();
                g.garble(gates, &mut tables);
                garbling += t.elapsed();
                let t = Instant::now();
                e.evaluate(gates, (&tables).into())?;
                evaluating += t.elapsed();
                Ok(())
            })?;
            e.decode(&layout.output_wires, &g.decoding_bits(&layout.output_wires))
        }
    };
    if decoded != eval_bits(circuit, &inputs) {
        bail!("{scheme}: garbled evaluation disagrees with cleartext evaluation; a bug in pgc");
    }
    let ands = circuit.and_count();
    Ok((
        report::rate(ands, garbling.as_secs_f64()),
        report::rate(ands, evaluating.as_secs_f64()),
    ))
}

/// One protocol run over loopback plaintext TCP; returns (seconds, bytes A sent).
fn protocol(circuit: &RandomLayered, scheme: Garbling, shape: LinkShape) -> Result<(f64, u64)> {
    let layout = circuit.layout().clone();
    let mut prg = Prg::from_os_entropy();
    let a = vec![random_bits(&mut prg, layout.input_widths[0] as usize)];
    let b = vec![random_bits(&mut prg, layout.input_widths[1] as usize)];
    let options = LocalTcpOptions {
        timeout: Duration::from_secs(600),
        channel: LocalSecurity::Plaintext,
        garbling: scheme,
        shape,
        ..LocalTcpOptions::default()
    };
    let (oa, ob) = run_local_tcp_with(
        circuit,
        &[Party::A, Party::B],
        &all_visible(&layout),
        &a,
        &b,
        options,
        &mut |_| {},
    )?;
    let all: Vec<bool> = a.iter().chain(&b).flatten().copied().collect();
    let got: Vec<bool> = ob.outputs.iter().flatten().flatten().copied().collect();
    if got != eval_bits(circuit, &all) || oa.outputs != ob.outputs {
        bail!("{scheme}: the protocol's outputs disagree with cleartext evaluation");
    }
    Ok((ob.stats.seconds, oa.stats.bytes_sent))
}

pub fn bench_garbling(args: GarblingBenchArgs, json: bool) -> Result<()> {
    if args.repeats == 0 {
        bail!("--repeats must be at least 1");
    }
    for &r in &args.rate_limit {
        if !(r > 0.0 && r.is_finite()) {
            bail!("--rate-limit must be positive numbers of megabits per second");
        }
    }
    let circuit = generated(args.ands, args.width)?;
    let ands = circuit.and_count();
    let mut results = serde_json::Map::new();
    if !json {
        outln!(
            "half-gates against three-halves, {} AND gates ({} per level, random wiring), \
             medians of {} alternated runs:",
            report::group(ands),
            args.width,
            args.repeats
        );
    }
    // In memory, one thread.
    let mut rates = [(vec![], vec![]), (vec![], vec![])];
    for _ in 0..args.repeats {
        for (k, &scheme) in SCHEMES.iter().enumerate() {
            let (g, e) = in_memory(&circuit, scheme)?;
            rates[k].0.push(g);
            rates[k].1.push(e);
        }
    }
    let mut memory = serde_json::Map::new();
    for (k, scheme) in SCHEMES.iter().enumerate() {
        let (g, e) = (median(rates[k].0.clone()), median(rates[k].1.clone()));
        memory.insert(
            scheme.name().into(),
            json!({ "garble_and_per_sec": g, "eval_and_per_sec": e }),
        );
        if !json {
            outln!(
                "  in memory  {:<13} garbler {}, evaluator {}",
                scheme.name(),
                per_sec(g, "AND/s"),
                per_sec(e, "AND/s")
            );
        }
    }
    results.insert("in_memory".into(), memory.into());
    if !args.memory_only {
        let mut links: Vec<(String, LinkShape)> = vec![("unshaped".into(), LinkShape::default())];
        for &r in &args.rate_limit {
            links.push((
                format!("{r} Mbit/s"),
                LinkShape {
                    rate_bits_per_sec: Some((r * 1e6) as u64),
                    latency: Duration::ZERO,
                },
            ));
        }
        let mut runs = Vec::new();
        for (name, shape) in &links {
            let mut seconds = [vec![], vec![]];
            let mut bytes = [0u64; 2];
            for _ in 0..args.repeats {
                for (k, &scheme) in SCHEMES.iter().enumerate() {
                    let (s, b) = protocol(&circuit, scheme, *shape)?;
                    seconds[k].push(s);
                    bytes[k] = b;
                }
            }
            let mut per = serde_json::Map::new();
            let med = [median(seconds[0].clone()), median(seconds[1].clone())];
            for (k, scheme) in SCHEMES.iter().enumerate() {
                let per_and = bytes[k] as f64 / ands as f64;
                per.insert(
                    scheme.name().into(),
                    json!({ "seconds": med[k], "and_per_sec": report::rate(ands, med[k]),
                            "bytes_a_to_b": bytes[k], "bytes_a_to_b_per_and": per_and }),
                );
                if !json {
                    outln!(
                        "  {name:<10} {:<13} {:>8.3} s, {}, A→B {:.2} bytes per AND",
                        scheme.name(),
                        med[k],
                        per_sec(report::rate(ands, med[k]), "AND/s"),
                        per_and
                    );
                }
            }
            if !json {
                outln!(
                    "  {name:<10} three-halves takes {:.3}× the half-gates time",
                    med[1] / med[0]
                );
            }
            per.insert(
                "three_halves_time_over_half_gates".into(),
                json!(med[1] / med[0]),
            );
            runs.push(json!({ "link": name, "schemes": per }));
        }
        results.insert("protocol_plaintext_loopback".into(), runs.into());
    }
    results.insert("and_gates".into(), json!(ands));
    if json {
        outln!("{}", serde_json::Value::Object(results));
    }
    Ok(())
}
