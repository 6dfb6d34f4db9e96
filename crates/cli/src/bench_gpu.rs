//! `pgc bench gpu`: the GPU engine against the CPU engine on the same circuits, in one run:
//! garbling and evaluation in GPU memory (kernels only) and through to host memory
//! (levelling, copies and kernels), the seed paper's independent garbling (§7.2) next to
//! level-wise half gates, and the CPU engine on 1 and more threads. Every figure's tables
//! are checked against the CPU engine's, block for block, and the outputs of the first copy
//! against cleartext evaluation.

// Without the `gpu` feature only the argument parsing is live: the command says how to build.
#![cfg_attr(not(feature = "gpu"), allow(dead_code, unused_imports))]

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use pgc_circuit::eval::eval_bits;
use pgc_circuit::generate::RandomLayered;
use pgc_circuit::{Gate, GateSource, Op};
use pgc_crypto::{Block, Prg};
use pgc_engine::report::{self, per_sec};
use pgc_garble::{Evaluator, Garbler, random_delta};
use serde_json::json;

#[derive(Args)]
pub struct GpuBenchArgs {
    /// Circuits, comma-separated: `random` (random layered, --width ANDs per level) or any
    /// circuit (a file or builtin:NAME, e.g. builtin:aes128). Each is repeated as copies with
    /// wires of their own until it has --ands AND gates.
    #[arg(long, value_delimiter = ',', default_value = "random,builtin:aes128")]
    circuits: Vec<String>,
    /// AND gates per circuit (whole copies, at least one).
    #[arg(long, default_value_t = 1 << 25)]
    ands: u64,
    /// AND gates per level of `random`.
    #[arg(long, default_value_t = 1 << 16)]
    width: u32,
    /// CPU thread counts to compare with (copies split among threads, as CGP does).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    threads: Vec<usize>,
    /// Timed runs per figure (the median counts).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
}

impl GpuBenchArgs {
    /// One circuit (`pgc bench garble --device gpu`): the GPU next to one CPU thread.
    pub fn one(circuit: String, ands: u64, width: u32) -> GpuBenchArgs {
        GpuBenchArgs {
            circuits: vec![circuit],
            ands,
            width,
            threads: vec![1],
            repeat: 3,
        }
    }
}

/// Cleartext evaluation of one copy: input bits to output bits.
type Cleartext = Box<dyn Fn(&[bool]) -> Vec<bool> + Sync>;

/// A circuit repeated as `copies` with disjoint wires.
struct Workload {
    name: String,
    one: Vec<Gate>,
    one_wires: usize,
    one_inputs: usize,
    one_ands: u64,
    copies: usize,
    gates: Vec<Gate>,
    /// The first copy's output wires, and its cleartext evaluation.
    outputs: Vec<u32>,
    source: Cleartext,
}

fn collect<S: GateSource>(c: &S) -> Vec<Gate> {
    let mut gates = Vec::with_capacity(c.gate_count() as usize);
    let _ = c.for_each_chunk(&mut |g: &[Gate]| -> Result<(), ()> {
        gates.extend_from_slice(g);
        Ok(())
    });
    gates
}

fn workload(spec: &str, ands: u64, width: u32) -> Result<Workload> {
    let (name, one, layout, cleartext): (String, Vec<Gate>, _, Cleartext) = if spec == "random" {
        let depth = (ands.div_ceil(width as u64)).clamp(1, 64) as u32;
        let c = RandomLayered::new(width, depth, 0x9e37_79b9)?;
        let gates = collect(&c);
        let layout = c.layout().clone();
        (
            format!("random layered {width}×{depth}"),
            gates,
            layout,
            Box::new(move |bits: &[bool]| eval_bits(&c, bits)),
        )
    } else {
        let p = pgc_engine::circuits::load_spec_for_run(spec)
            .with_context(|| format!("loading {spec}"))?;
        let c = p.circuit;
        let gates = collect(&c);
        let layout = c.layout().clone();
        (
            spec.to_string(),
            gates,
            layout,
            Box::new(move |bits: &[bool]| eval_bits(&c, bits)),
        )
    };
    let one_ands = one.iter().filter(|g| g.op == Op::And).count() as u64;
    if one_ands == 0 {
        bail!("{spec} has no AND gates");
    }
    let one_wires = layout.num_wires as usize;
    let copies = ands.div_ceil(one_ands).max(1) as usize;
    if (one_wires as u64) * copies as u64 >= u32::MAX as u64 {
        bail!("{spec}: {copies} copies need more than 2^32 wires; give a smaller --ands");
    }
    let mut gates = Vec::with_capacity(one.len() * copies);
    for k in 0..copies {
        let off = (k * one_wires) as u32;
        gates.extend(one.iter().map(|g| Gate {
            op: g.op,
            a: if g.op == Op::Const { g.a } else { g.a + off },
            b: if matches!(g.op, Op::Xor | Op::And) {
                g.b + off
            } else {
                g.b
            },
            out: g.out + off,
        }));
    }
    Ok(Workload {
        name,
        one,
        one_wires,
        one_inputs: layout.num_input_wires() as usize,
        one_ands,
        copies,
        gates,
        outputs: layout.output_wires.clone(),
        source: cleartext,
    })
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The CPU engine on `threads` threads: copies in contiguous groups, each thread one
/// garbler of one copy's wires, each copy's ANDs at their place in the flat order.
fn cpu_garble(
    w: &Workload,
    zero: &[Block],
    delta: Block,
    key: Block,
    threads: usize,
) -> (Duration, Vec<Block>) {
    let per_copy = 2 * w.one_ands as usize;
    let mut tables = vec![Block::ZERO; per_copy * w.copies];
    let t = Instant::now();
    std::thread::scope(|s| {
        let chunk = w.copies.div_ceil(threads);
        for (i, out) in tables.chunks_mut(per_copy * chunk).enumerate() {
            s.spawn(move || {
                let mut g = Garbler::new(w.one_wires, delta, key);
                let mut buf = Vec::with_capacity(per_copy);
                for (j, dst) in out.chunks_mut(per_copy).enumerate() {
                    let k = i * chunk + j;
                    for wire in 0..w.one_inputs {
                        g.set_zero_label(wire as u32, zero[k * w.one_wires + wire]);
                    }
                    g.set_and_index(k as u64 * w.one_ands);
                    buf.clear();
                    g.garble(&w.one, &mut buf);
                    dst.copy_from_slice(&buf);
                }
            });
        }
    });
    (t.elapsed(), tables)
}

fn cpu_evaluate(
    w: &Workload,
    active: &[Block],
    key: Block,
    tables: &[Block],
    threads: usize,
) -> Result<Duration> {
    let per_copy = 2 * w.one_ands as usize;
    let t = Instant::now();
    std::thread::scope(|s| -> Result<()> {
        let chunk = w.copies.div_ceil(threads);
        let handles: Vec<_> = tables
            .chunks(per_copy * chunk)
            .enumerate()
            .map(|(i, part)| {
                s.spawn(move || -> Result<()> {
                    let mut e = Evaluator::new(w.one_wires, key);
                    for (j, t) in part.chunks(per_copy).enumerate() {
                        let k = i * chunk + j;
                        for wire in 0..w.one_inputs {
                            e.set_label(wire as u32, active[k * w.one_wires + wire]);
                        }
                        e.set_and_index(k as u64 * w.one_ands);
                        e.evaluate(&w.one, t)?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| anyhow::anyhow!("a CPU thread panicked"))??;
        }
        Ok(())
    })?;
    Ok(t.elapsed())
}

pub fn bench_gpu(args: GpuBenchArgs, json_out: bool) -> Result<()> {
    #[cfg(not(feature = "gpu"))]
    {
        let _ = (args, json_out);
        Err(pgc_gpu::GpuError::NotBuilt.into())
    }
    #[cfg(feature = "gpu")]
    {
        run(args, json_out)
    }
}

/// Cuts `w`'s gates into windows as a run does and levels them on host threads beside
/// `consume` (the GPU), which gets every window's schedule in order.
#[cfg(feature = "gpu")]
fn levelled_windows(
    w: &Workload,
    mut consume: impl FnMut(pgc_gpu::Schedule) -> Result<()>,
) -> Result<()> {
    use pgc_protocol::gpu::WINDOW_GATES;
    let wires = w.one_wires * w.copies;
    pgc_gpu::pipeline::level_in_parallel::<anyhow::Error>(
        wires,
        pgc_gpu::pipeline::levelling_threads(wires, WINDOW_GATES),
        |send| {
            for window in w.gates.chunks(WINDOW_GATES) {
                send(window.to_vec())?;
            }
            Ok(())
        },
        |_, schedule| consume(schedule),
    )
}

#[cfg(feature = "gpu")]
fn run(args: GpuBenchArgs, json_out: bool) -> Result<()> {
    use pgc_gpu::Scheduler;
    use pgc_gpu::cuda::{GpuDevice, GpuEvaluator, GpuGarbler, garble_independent};
    use pgc_gpu::pipeline::levelling_threads;
    use pgc_protocol::gpu::WINDOW_GATES;

    if args.repeat == 0 || args.threads.contains(&0) {
        bail!("--repeat and --threads must be at least 1");
    }
    let dev = GpuDevice::open()?;
    if !json_out {
        outln!("GPU: {}", dev.describe());
    }
    let mut results = Vec::new();
    for spec in &args.circuits {
        let w = workload(spec, args.ands, args.width)?;
        let n = w.one_ands * w.copies as u64;
        let wires = w.one_wires * w.copies;
        let mut prg = Prg::from_os_entropy();
        let delta = random_delta(&mut prg);
        let key = prg.random_block();
        let mut zero = vec![Block::ZERO; wires];
        let mut active = vec![Block::ZERO; wires];
        let mut bits = vec![false; wires];
        for k in 0..w.copies {
            for i in 0..w.one_inputs {
                let at = k * w.one_wires + i;
                zero[at] = prg.random_block();
                bits[at] = prg.random_bool();
                active[at] = zero[at] ^ delta.select(bits[at]);
            }
        }
        // The CPU engine: the reference tables, and its speed.
        let mut cpu = Vec::new();
        let mut reference = Vec::new();
        for &t in &args.threads {
            let mut g_times = Vec::new();
            let mut e_times = Vec::new();
            for _ in 0..args.repeat {
                let (d, tables) = cpu_garble(&w, &zero, delta, key, t);
                g_times.push(d);
                e_times.push(cpu_evaluate(&w, &active, key, &tables, t)?);
                reference = tables;
            }
            cpu.push((t, median(g_times), median(e_times)));
        }
        // The GPU through to host memory, window by window as a run does.
        let mut to_host = Vec::new();
        let mut kernels = Vec::new();
        let mut eval_to_host = Vec::new();
        let mut eval_kernels = Vec::new();
        let mut breakdown = None;
        for _ in 0..args.repeat {
            let mut g = GpuGarbler::new(dev.clone(), &zero, delta, key)?;
            let mut tables = Vec::with_capacity(reference.len());
            // As a run does: windows levelled on host threads ahead of the GPU.
            let t = Instant::now();
            levelled_windows(&w, |schedule| {
                Ok(g.garble_scheduled(&schedule, Some(&mut tables))?)
            })?;
            to_host.push(t.elapsed());
            kernels.push(g.times().kernels);
            breakdown = Some(g.times());
            if tables != reference {
                bail!(
                    "{}: the GPU's tables differ from the CPU engine's; this is a bug in pgc",
                    w.name
                );
            }
            let mut e = GpuEvaluator::new(dev.clone(), &active, key)?;
            let t = Instant::now();
            let mut at = 0usize;
            levelled_windows(&w, |schedule| {
                let n = 2 * schedule.and_gates as usize;
                e.evaluate_scheduled(&schedule, Some(&tables[at..at + n]))?;
                at += n;
                Ok(())
            })?;
            eval_to_host.push(t.elapsed());
            eval_kernels.push(e.times().kernels);
            // Decode the first copy and compare with cleartext.
            let labels = e.labels()?;
            let zero_after = g.zero_labels()?;
            let got: Vec<bool> = w
                .outputs
                .iter()
                .map(|&x| labels[x as usize].lsb() ^ zero_after[x as usize].lsb())
                .collect();
            if got != (w.source)(&bits[..w.one_inputs]) {
                bail!(
                    "{}: GPU evaluation disagrees with cleartext; this is a bug in pgc",
                    w.name
                );
            }
        }
        // The seed's independent garbling against level-wise, on one window of records.
        let prefix = &w.gates[..w.gates.len().min(WINDOW_GATES)];
        let schedule = Scheduler::new(wires).schedule(prefix)?;
        let mut seed_times = Vec::new();
        let mut level_times = Vec::new();
        for _ in 0..args.repeat {
            let (d, _) = garble_independent(
                &dev,
                &schedule,
                wires,
                prg.random_block(),
                key,
                delta,
                false,
            )?;
            seed_times.push(d);
            let mut g = GpuGarbler::new(dev.clone(), &zero, delta, key)?;
            g.garble_scheduled(&schedule, None)?;
            level_times.push(g.times().kernels);
        }
        let prefix_ands = schedule.and_gates;
        let r = |d: Duration| report::rate(n, d.as_secs_f64());
        let rp = |d: Duration| report::rate(prefix_ands, d.as_secs_f64());
        let b = breakdown.unwrap_or_default();
        let figures = json!({
            "circuit": w.name, "copies": w.copies, "and_gates": n, "gates": w.gates.len(),
            "levels": b.levels, "windows": b.windows,
            "gpu_garble_in_memory_and_per_sec": r(median(kernels.clone())),
            "gpu_garble_to_host_and_per_sec": r(median(to_host.clone())),
            "gpu_eval_in_memory_and_per_sec": r(median(eval_kernels.clone())),
            "gpu_eval_from_host_and_per_sec": r(median(eval_to_host.clone())),
            "levelling_threads": levelling_threads(wires, WINDOW_GATES),
            "garble_breakdown_seconds": {"upload": b.upload.as_secs_f64(),
                "kernels": b.kernels.as_secs_f64(), "download": b.download.as_secs_f64()},
            "seed_scheme_garble_and_per_sec": rp(median(seed_times.clone())),
            "levelwise_same_window_and_per_sec": rp(median(level_times.clone())),
            "seed_scheme_window_ands": prefix_ands,
            "cpu": cpu.iter().map(|(t, g, e)| json!({"threads": t, "garble_and_per_sec": r(*g), "eval_and_per_sec": r(*e)})).collect::<Vec<_>>(),
        });
        if !json_out {
            outln!(
                "{}: {} copies, {} AND gates, {} levels in {} windows",
                w.name,
                w.copies,
                report::group(n),
                b.levels,
                b.windows
            );
            outln!(
                "  GPU garble, in GPU memory    {}",
                per_sec(r(median(kernels)), "AND/s")
            );
            outln!(
                "  GPU garble, to host memory   {}",
                per_sec(r(median(to_host)), "AND/s")
            );
            outln!(
                "    (last run: uploads {:.3} s, kernels {:.3} s, downloads {:.3} s; levelling on {} host threads alongside)",
                b.upload.as_secs_f64(),
                b.kernels.as_secs_f64(),
                b.download.as_secs_f64(),
                levelling_threads(wires, WINDOW_GATES)
            );
            outln!(
                "  GPU evaluate, in GPU memory  {}",
                per_sec(r(median(eval_kernels)), "AND/s")
            );
            outln!(
                "  GPU evaluate, from host      {}",
                per_sec(r(median(eval_to_host)), "AND/s")
            );
            outln!(
                "  seed's independent garbling {} vs level-wise {} (first {} ANDs, kernels only)",
                per_sec(rp(median(seed_times)), "AND/s"),
                per_sec(rp(median(level_times)), "AND/s"),
                report::group(prefix_ands)
            );
            for (t, g, e) in &cpu {
                outln!(
                    "  CPU, {t} thread(s): garble {}, evaluate {}",
                    per_sec(r(*g), "AND/s"),
                    per_sec(r(*e), "AND/s")
                );
            }
        }
        results.push(figures);
    }
    if json_out {
        outln!("{}", json!(results));
    }
    Ok(())
}
