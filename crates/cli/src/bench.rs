//! `pgc bench`: throughput of garbling, OT extension and the whole protocol, on circuits
//! generated on the fly (no files needed). Every benchmark also checks its own result.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use pgc_circuit::GateSource;
use pgc_circuit::eval::eval_bits;
use pgc_circuit::generate::RandomLayered;
use pgc_crypto::{Block, Prg};
use pgc_garble::{Evaluator, Garbler, random_delta};
use pgc_net::TcpChannel;
use pgc_ot::{IknpReceiver, IknpSender};
use pgc_protocol::{
    Device, GmwConfig, LocalSecurity, LocalTcpOptions, Outcome, Party, ProtocolChoice, Security,
    all_visible, run_local_gmw, run_local_tcp_with,
};
use serde_json::json;

use pgc_engine::options::DeviceArg;
use pgc_engine::progress::Progress;
use pgc_engine::report::{self, per_sec};

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: BenchKind,
    /// Print the figures as JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand)]
enum BenchKind {
    /// Garble and evaluate in memory, one thread, no network: the raw half-gates speed.
    Garble {
        /// AND gates to garble (rounded up to whole levels, or to whole repetitions of
        /// --circuit).
        #[arg(long, default_value_t = 20_000_000)]
        ands: u64,
        /// AND gates per level of the generated circuit.
        #[arg(long, default_value_t = 4096)]
        width: u32,
        /// Garble this circuit (a Bristol, .pgc or .c file, or builtin:NAME) again and again
        /// instead of a generated one, e.g. a Bristol AES or SHA-256 file.
        #[arg(long, value_name = "CIRCUIT")]
        circuit: Option<String>,
        /// cpu: this benchmark; gpu: `pgc bench gpu` on the same circuit (the GPU next to
        /// one CPU thread); auto: gpu where one is usable.
        #[arg(long, value_enum, default_value_t = DeviceArg::Cpu)]
        device: DeviceArg,
    },
    /// IKNP correlated OT extension between two threads over loopback TCP.
    Ot {
        /// Number of correlated OTs.
        #[arg(long, default_value_t = 1 << 23)]
        ots: usize,
    },
    /// The whole protocol, both parties over loopback, on a streamed generated circuit:
    /// over TLS (the default channel) and again over plaintext TCP, side by side, at the
    /// --security level (give malicious a smaller --ands: it garbles ≈ 3.1·S copies).
    Run {
        /// AND gates in the generated circuit (rounded up to whole levels).
        #[arg(long, default_value_t = 52_000_000)]
        ands: u64,
        /// AND gates per level of the generated circuit.
        #[arg(long, default_value_t = 4096)]
        width: u32,
        /// Only the TLS run (skip the plaintext comparison).
        #[arg(long)]
        tls_only: bool,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
        /// Under --security malicious: the threads per party that process the circuit
        /// copies [default: half of this machine's cores each, as both parties run here].
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
        #[command(flatten)]
        level: pgc_engine::level::LevelArgs,
        #[command(flatten)]
        protocol: pgc_engine::protocol_arg::ProtocolChoiceArgs,
        /// Where both parties garble and evaluate (see `pgc run --help`).
        #[arg(long, value_enum, default_value_t = DeviceArg::Cpu)]
        device: DeviceArg,
    },
    /// FGP efficiency by level width on AND-only random circuits (seed paper Fig. 5), and
    /// the FGP threshold τ derived from it (saved for later runs).
    Width(crate::experiments::WidthArgs),
    /// The seed applications BioMatch, MExp and MVMul: circuit properties, offline FGP/CGP
    /// speed-up, level widths, single-core protocol and CGP speed-up (Tables 2–3, Figs. 6–8).
    Apps(crate::experiments::AppsArgs),
    /// Inter-party parallelism against the sequential protocol and, with --rate-limit or
    /// --latency, against CGP over a shaped link (seed paper Tables 4–5).
    Ipp(crate::experiments::IppArgs),
    /// The GPU engine against the CPU engine on the same circuits: garbling and evaluation
    /// in GPU memory and through to host memory, the seed paper's independent garbling
    /// next to level-wise half gates, and the CPU on --threads threads (needs a build with
    /// `--features gpu` and an NVIDIA GPU).
    Gpu(crate::bench_gpu::GpuBenchArgs),
    /// Three-halves garbling against half-gates, side by side: in memory, and the whole
    /// protocol over loopback unshaped and at each --rate-limit (bytes per AND, time).
    Garbling(crate::bench_garbling::GarblingBenchArgs),
}

pub fn bench(args: BenchArgs) -> Result<()> {
    match args.what {
        BenchKind::Garble {
            ands,
            width,
            circuit,
            device,
        } if device != DeviceArg::Cpu && (device == DeviceArg::Gpu || pgc_gpu::probe().is_ok()) => {
            crate::bench_gpu::bench_gpu(
                crate::bench_gpu::GpuBenchArgs::one(
                    circuit.unwrap_or_else(|| "random".into()),
                    ands,
                    width,
                ),
                args.json,
            )
        }
        BenchKind::Garble {
            ands,
            width,
            circuit: None,
            ..
        } => {
            let circuit = generated(ands, width)?;
            let what = format!("{width} ANDs per level, random wiring");
            bench_garble(&circuit, 1, &what, args.json)
        }
        BenchKind::Garble {
            ands,
            circuit: Some(spec),
            ..
        } => {
            let circuit = pgc_engine::circuits::load_spec_for_run(&spec)?.circuit;
            let per_run = circuit.and_count().max(1);
            bench_garble(&circuit, ands.div_ceil(per_run), &spec, args.json)
        }
        BenchKind::Ot { ots } => bench_ot(ots, args.json),
        BenchKind::Run {
            ands,
            width,
            tls_only,
            quiet,
            threads,
            level,
            protocol,
            device,
        } => {
            let level = level.resolve()?;
            let protocol = protocol.resolve(level)?;
            let (device, note) = device.resolve(
                if protocol == ProtocolChoice::Gmw {
                    ProtocolChoice::Gmw
                } else {
                    ProtocolChoice::Yao
                },
                level,
                true,
            )?;
            if !(quiet || args.json)
                && let Some(note) = note
            {
                eprintln!("{note}");
            }
            let threads = match threads {
                Some(0) => bail!("--threads must be at least 1"),
                Some(n) if n > pgc_protocol::parallel::MAX_THREADS => bail!(
                    "--threads {n}: at most {} are supported",
                    pgc_protocol::parallel::MAX_THREADS
                ),
                Some(n) => n,
                None => (std::thread::available_parallelism().map_or(1, |n| n.get()) / 2).max(1),
            };
            let how = HowToRun {
                level,
                protocol,
                device,
                threads,
                tls_only,
                quiet: quiet || args.json,
            };
            bench_run(ands, width, &how, args.json)
        }
        BenchKind::Width(a) => crate::experiments::width(a, args.json),
        BenchKind::Apps(a) => crate::experiments::apps(a, args.json),
        BenchKind::Ipp(a) => crate::experiments::ipp(a, args.json),
        BenchKind::Gpu(a) => crate::bench_gpu::bench_gpu(a, args.json),
        BenchKind::Garbling(a) => crate::bench_garbling::bench_garbling(a, args.json),
    }
}

pub(crate) fn generated(ands: u64, width: u32) -> Result<RandomLayered> {
    if width == 0 || ands == 0 {
        bail!("--ands and --width must be positive");
    }
    let depth = ands.div_ceil(width as u64);
    let depth = u32::try_from(depth)
        .map_err(|_| anyhow::anyhow!("--ands is too large for --width {width}"))?;
    Ok(RandomLayered::new(width, depth, 0x9e37_79b9)?)
}

pub(crate) fn random_bits(prg: &mut Prg, n: usize) -> Vec<bool> {
    (0..n).map(|_| prg.random_bool()).collect()
}

/// Garbles and evaluates `circuit` `repeats` times in memory, timing each side alone, and
/// checks the last evaluation against cleartext evaluation.
fn bench_garble<S: GateSource>(circuit: &S, repeats: u64, what: &str, json: bool) -> Result<()> {
    let layout = circuit.layout().clone();
    let mut prg = Prg::from_os_entropy();
    let delta = random_delta(&mut prg);
    let hash_key = prg.random_block();
    let mut garbler = Garbler::new(layout.num_wires as usize, delta, hash_key);
    let mut evaluator = Evaluator::new(layout.num_wires as usize, hash_key);
    let inputs = random_bits(&mut prg, layout.num_input_wires() as usize);
    let zero_labels: Vec<Block> = inputs.iter().map(|_| prg.random_block()).collect();
    let mut tables: Vec<Block> = Vec::new();
    let (mut garbling, mut evaluating) = (Duration::ZERO, Duration::ZERO);
    // CPU time of each side, where the platform tells it.
    let (mut garbling_cpu, mut evaluating_cpu) = (Some(Duration::ZERO), Some(Duration::ZERO));
    let add = |sum: &mut Option<Duration>, from: Option<Duration>, to: Option<Duration>| {
        *sum = sum
            .zip(from.zip(to))
            .map(|(s, (f, t))| s + t.saturating_sub(f));
    };
    for _ in 0..repeats {
        // Input slots may be reused by later gates, so every repetition starts afresh.
        for (w, (&bit, &zero)) in inputs.iter().zip(&zero_labels).enumerate() {
            garbler.set_zero_label(w as u32, zero);
            evaluator.set_label(w as u32, zero ^ delta.select(bit));
        }
        circuit.for_each_chunk(&mut |gates| -> Result<()> {
            tables.clear();
            let (t, c) = (Instant::now(), pgc_compiler::thread_cpu_time());
            garbler.garble(gates, &mut tables);
            garbling += t.elapsed();
            let (t, c2) = (Instant::now(), pgc_compiler::thread_cpu_time());
            add(&mut garbling_cpu, c, c2);
            evaluator.evaluate(gates, &tables)?;
            evaluating += t.elapsed();
            add(&mut evaluating_cpu, c2, pgc_compiler::thread_cpu_time());
            Ok(())
        })?;
    }
    let decoding = garbler.decoding_bits(&layout.output_wires);
    if evaluator.decode(&layout.output_wires, &decoding) != eval_bits(circuit, &inputs) {
        bail!("garbled evaluation disagrees with cleartext evaluation; this is a bug in pgc");
    }
    let n = circuit.and_count() * repeats;
    let g = report::rate(n, garbling.as_secs_f64());
    let e = report::rate(n, evaluating.as_secs_f64());
    let cpu_rates = garbling_cpu.zip(evaluating_cpu).map(|(gc, ec)| {
        (
            report::rate(n, gc.as_secs_f64()),
            report::rate(n, ec.as_secs_f64()),
        )
    });
    if json {
        let mut figures = json!({ "garble_and_per_sec": g, "eval_and_per_sec": e, "and_gates": n,
                    "garble_seconds": garbling.as_secs_f64(), "eval_seconds": evaluating.as_secs_f64() });
        if let Some((gc, ec)) = cpu_rates {
            figures["garble_and_per_cpu_sec"] = json!(gc);
            figures["eval_and_per_cpu_sec"] = json!(ec);
        }
        outln!("{figures}");
    } else {
        outln!(
            "half-gates on one thread, {} AND gates ({what}), in memory:",
            report::group(n)
        );
        outln!("  garbler    {}", per_sec(g, "AND/s"));
        outln!("  evaluator  {}", per_sec(e, "AND/s"));
        if let Some((gc, ec)) = cpu_rates {
            outln!(
                "  per second of this thread's CPU time: garbler {}, evaluator {}",
                per_sec(gc, "AND/s"),
                per_sec(ec, "AND/s")
            );
        }
    }
    Ok(())
}

fn bench_ot(n: usize, json: bool) -> Result<()> {
    if n == 0 {
        bail!("--ots must be positive");
    }
    let listener = TcpChannel::listen("127.0.0.1:0")?;
    let addr = listener.local_addr().to_string();
    let timeout = Duration::from_secs(60);
    let mut prg = Prg::from_os_entropy();
    let choices = random_bits(&mut prg, n);
    let (sent, received) = std::thread::scope(|s| -> Result<_> {
        let sender = s.spawn(|| -> Result<_> {
            let mut ch = listener.accept(timeout)?;
            let mut prg = Prg::from_os_entropy();
            let delta = random_delta(&mut prg);
            let t = Instant::now();
            let mut ot = IknpSender::setup(&mut ch, delta, &mut prg)?;
            let setup = t.elapsed();
            // Output memory is allocated and touched before the clock starts: the figure is
            // the extension's speed, not the allocator's.
            let mut x0 = vec![Block::ONES; n];
            let t = Instant::now();
            ot.send_correlated_into(&mut ch, &mut x0)?;
            Ok((x0, delta, setup, t.elapsed()))
        });
        let mut ch = TcpChannel::connect(&addr, timeout)?;
        let mut prg = Prg::from_os_entropy();
        let t = Instant::now();
        let mut ot = IknpReceiver::setup(&mut ch, &mut prg)?;
        let setup = t.elapsed();
        let mut r = vec![Block::ONES; n];
        let t = Instant::now();
        ot.receive_correlated_into(&mut ch, &choices, &mut r)?;
        let received = (r, setup, t.elapsed());
        let sent = sender
            .join()
            .map_err(|_| anyhow::anyhow!("OT sender thread panicked"))??;
        Ok((sent, received))
    })?;
    let (x0, delta, setup_s, ext_s) = sent;
    let (r, setup_r, ext_r) = received;
    if (0..n).any(|j| r[j] != x0[j] ^ delta.select(choices[j])) {
        bail!("correlated OT outputs are wrong; this is a bug in pgc");
    }
    let ext = ext_s.max(ext_r).as_secs_f64();
    let rate = report::rate(n as u64, ext);
    let setup = setup_s.max(setup_r).as_secs_f64();
    if json {
        outln!(
            "{}",
            json!({ "ots_per_sec": rate, "ots": n, "extension_seconds": ext, "base_ot_seconds": setup })
        );
    } else {
        outln!(
            "IKNP correlated OT over loopback TCP, {} OTs:",
            report::group(n as u64)
        );
        outln!("  base OTs (128, Ristretto)  {:.1} ms", setup * 1e3);
        outln!("  extension                  {}", per_sec(rate, "OT/s"));
    }
    Ok(())
}

/// What `pgc bench run` runs: the security level, its threads, which channels, quietly or not.
struct HowToRun {
    level: Security,
    protocol: ProtocolChoice,
    device: Device,
    threads: usize,
    tls_only: bool,
    quiet: bool,
}

/// One protocol run of `circuit` over loopback with `security`, checked against
/// cleartext evaluation; returns (A's outcome, B's outcome).
fn protocol_run(
    circuit: &RandomLayered,
    security: LocalSecurity,
    how: &HowToRun,
) -> Result<(Outcome, Outcome)> {
    let layout = circuit.layout().clone();
    let owners = [Party::A, Party::B];
    let mut prg = Prg::from_os_entropy();
    let a = vec![random_bits(&mut prg, layout.input_widths[0] as usize)];
    let b = vec![random_bits(&mut prg, layout.input_widths[1] as usize)];
    let mut progress = Progress::new(circuit.and_count(), how.quiet);
    let protocol = match how.protocol {
        ProtocolChoice::Auto => {
            let pgc_protocol::choice::AutoPick {
                protocol: pick,
                why,
                ..
            } = pgc_engine::protocol_arg::decide_local(
                pgc_protocol::choice::circuit_shape(circuit),
                pgc_net::LinkShape::default(),
                false,
            );
            if !how.quiet {
                eprintln!("--protocol auto chose {pick}: {why}");
            }
            pick
        }
        p => p,
    };
    let result = if protocol == ProtocolChoice::Gmw {
        run_local_gmw(
            circuit,
            &owners,
            &all_visible(&layout),
            &a,
            &b,
            &GmwConfig::default(),
            pgc_net::LinkShape::default(),
            Duration::from_secs(60),
            security,
            &mut |n| progress.set(n),
        )
    } else {
        let options = LocalTcpOptions {
            channel: security,
            level: how.level,
            threads: how.threads,
            devices: [how.device; 2],
            ..LocalTcpOptions::default()
        };
        run_local_tcp_with(
            circuit,
            &owners,
            &all_visible(&layout),
            &a,
            &b,
            options,
            &mut |n| progress.set(n),
        )
    };
    progress.finish();
    let (oa, ob) = result?;
    let all: Vec<bool> = a.iter().chain(&b).flatten().copied().collect();
    let expect = eval_bits(circuit, &all);
    let got: Vec<bool> = ob.outputs.iter().flatten().flatten().copied().collect();
    if got != expect || oa.outputs != ob.outputs {
        bail!("the protocol's outputs disagree with cleartext evaluation; this is a bug in pgc");
    }
    Ok((oa, ob))
}

/// `pgc bench run`: the whole protocol over loopback TLS (as `pgc local` and `pgc run`
/// use it) and, unless `tls_only`, again over plaintext TCP, side by side.
fn bench_run(ands: u64, width: u32, how: &HowToRun, json: bool) -> Result<()> {
    let circuit = generated(ands, width)?;
    let mut runs = vec![("TLS 1.3", protocol_run(&circuit, LocalSecurity::Tls, how)?)];
    if !how.tls_only {
        runs.push((
            "plaintext",
            protocol_run(&circuit, LocalSecurity::Plaintext, how)?,
        ));
    }
    // The circuit's AND gates, computed securely once, whatever the level garbles for them:
    // the rates compare the levels' cost for the same computation.
    let and_gates = circuit.and_count();
    let figures = |(oa, ob): &(Outcome, Outcome)| {
        let s = &ob.stats;
        json!({ "and_gates": and_gates, "seconds": s.seconds,
                "and_per_sec": report::rate(and_gates, s.seconds),
                "bytes_a_to_b": oa.stats.bytes_sent, "bytes_b_to_a": ob.stats.bytes_sent })
    };
    let tls_over_plain =
        (runs.len() == 2).then(|| runs[0].1.1.stats.seconds / runs[1].1.1.stats.seconds.max(1e-9));
    let gmw = runs[0].1.1.stats.gmw.is_some();
    let (protocol, stat_sec) = match how.level {
        Security::SemiHonest if gmw => ("semi-honest GMW".to_string(), None),
        Security::SemiHonest => ("semi-honest Yao".to_string(), None),
        Security::Malicious { stat_sec } => {
            let plan = pgc_protocol::malicious::CopyPlan::for_stat_sec(stat_sec);
            (
                format!(
                    "malicious (s = {stat_sec}) cut-and-choose Yao, {} copies ({} checked, {} \
                     evaluated)",
                    plan.copies,
                    plan.checked,
                    plan.evaluated()
                ),
                Some(stat_sec),
            )
        }
        Security::DualExecution => ("dual-execution Yao".to_string(), None),
    };
    if json {
        let mut v = figures(&runs[0].1);
        v["tls"] = figures(&runs[0].1);
        v["security"] = json!(how.level.name());
        v["protocol"] = json!(if gmw { "gmw" } else { "yao" });
        if let Some(g) = &runs[0].1.1.stats.gmw {
            v["gmw"] = report::stats_json(&runs[0].1.1.stats)["gmw"].clone();
            v["online_and_per_sec"] = json!(report::rate(and_gates, g.online_seconds));
        }
        v["stat_sec"] = json!(stat_sec);
        if let Some(ratio) = tls_over_plain {
            v["plaintext"] = figures(&runs[1].1);
            v["tls_time_over_plaintext"] = json!(ratio);
        }
        outln!("{v}");
        return Ok(());
    }
    outln!(
        "{protocol}, both parties on this machine over loopback, {} AND gates:",
        report::group(and_gates)
    );
    for (name, (oa, ob)) in &runs {
        let s = &ob.stats;
        outln!(
            "  {name:<10} {:>8.2} s end to end, {}",
            s.seconds,
            per_sec(report::rate(and_gates, s.seconds), "AND/s")
        );
        let (a, b) = if gmw {
            ("party A", "party B")
        } else {
            ("party A (garbler)", "party B (evaluator)")
        };
        outln!("    {}", report::stats_line(a, &oa.stats));
        outln!("    {}", report::stats_line(b, &ob.stats));
    }
    if let Some(ratio) = tls_over_plain {
        outln!(
            "  TLS takes {ratio:.3}× the plaintext time ({:+.1} %)",
            (ratio - 1.0) * 100.0
        );
    }
    Ok(())
}
