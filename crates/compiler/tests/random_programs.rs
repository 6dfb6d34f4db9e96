//! Random programs (`pgc_compiler::randprog`) compiled by both gcc and pgc must agree on
//! seeded random inputs, in cleartext and (for some) through the two-party protocol.
//!
//! The integer programs come from `randprog::generate`, the floating-point ones from
//! `randprog::floats::generate` (checked against gcc -O0, with NaN outputs matching any NaN:
//! see docs/c-subset.md, "Floating point").
//!
//! Environment knobs:
//! - `PGC_RANDPROG_COUNT=N`: programs per test (default 300 integer programs, 60 float
//!   programs; the UBSan check uses a third of the integer count).
//! - `PGC_RANDPROG_BASE=S`: the first seed (default 1); programs use seeds S, S+1, ….
//! - `PGC_RANDPROG_LARGE=1`: programs about three times as long (`Config::from_env`; also
//!   read by `tests/compact.rs` and `tests/depth_chains.rs`).
//! - `PGC_RANDPROG_SEEDS=a,b,c`: exactly these seeds (to reproduce a reported failure).
//! - `PGC_RANDPROG_COMPILE_LIMIT_S=S`: a compile taking longer is reported as a hang (60).
//! - `PGC_RANDPROG_VERBOSE=1`: print each program's circuit size and compile time.
//! - `PGC_KEEP_TEMP=1`: keep the generated C files.

mod common;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::Rng;
use common::harness::Source;
use common::oracle::{Case, GccOracle, compare};
use common::values::{Values, random_inputs};
use pgc_circuit::{Circuit, Layout};
use pgc_compiler::randprog::{self, Config, RandomProgram};
use pgc_compiler::{CompileStats, Compiled, Options};

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

fn program(seed: u64) -> RandomProgram {
    randprog::generate(seed, &format!("p{seed}"), &Config::from_env())
}

fn float_program(seed: u64) -> RandomProgram {
    randprog::floats::generate(
        seed,
        &format!("f{seed}"),
        &randprog::floats::Config::default(),
    )
}

fn case_for(p: &RandomProgram) -> Case {
    let name = format!("random_{}.c", p.seed);
    Case {
        label: format!(
            "random program seed {} (rerun alone: PGC_RANDPROG_SEEDS={} cargo test -p \
             pgc-compiler --test random_programs)",
            p.seed, p.seed
        ),
        source: Source::Text {
            name,
            text: p.source.clone(),
        },
        defines: Vec::new(),
        include_dirs: Vec::new(),
        opts: Options {
            entry: Some(p.entry.clone()),
            // Every generated loop runs at most 2 * max_loop_iterations times: a loop pgc
            // cannot bound is then reported at once instead of unrolled a million times.
            unroll_limit: 64,
            ..Options::default()
        },
        any_nan: false,
    }
}

/// A `Compiled` carrying only the generator's idea of the interface, for gcc-only checks.
fn interface_only(p: &RandomProgram) -> Compiled {
    Compiled {
        circuit: Circuit {
            layout: Layout {
                num_wires: 0,
                input_widths: Vec::new(),
                output_widths: Vec::new(),
                output_wires: Vec::new(),
            },
            gates: Vec::new(),
        },
        regions: Vec::new(),
        interface: p.interface.clone(),
        stats: CompileStats {
            passes: Vec::new(),
            gates_emitted: 0,
            gates_final: 0,
            and_gates_final: 0,
            elapsed: Duration::ZERO,
            phases: Vec::new(),
        },
        entry_name: p.entry.clone(),
        entry_params: p.params.clone(),
    }
}

fn report(failures: &[String], total: usize, what: &str) {
    if failures.is_empty() {
        return;
    }
    // One line per failure (its first two lines), then the first few in full.
    let summary: Vec<String> = failures
        .iter()
        .map(|f| f.lines().take(2).collect::<Vec<_>>().join(" | "))
        .collect();
    panic!(
        "{} of {total} {what} failed:\n{}\n\nThe first ones in full:\n\n{}",
        failures.len(),
        summary.join("\n"),
        failures
            .iter()
            .take(4)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n==========\n\n")
    );
}

/// The generator's programs are valid C without undefined behaviour: gcc with UBSan (and
/// -fwrapv, as the oracle uses it) runs them on random inputs without a report. Needs no pgc.
#[test]
fn generated_programs_are_valid_and_free_of_undefined_behaviour() {
    if !common::gcc_available() {
        return;
    }
    let start = Instant::now();
    let all = common::seeds("PGC_RANDPROG", 300, 1);
    let n = (all.len() / 3).max(1);
    let programs: Vec<RandomProgram> = all.iter().take(n).map(|&s| program(s)).collect();
    let cases: Vec<Case> = programs.iter().map(case_for).collect();
    let compiled: Vec<Compiled> = programs.iter().map(interface_only).collect();
    let pairs: Vec<(&Case, &Compiled)> = cases.iter().zip(&compiled).collect();
    let oracle = GccOracle::build_with_flags(
        &pairs,
        &["-fsanitize=undefined", "-fno-sanitize-recover=all"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut calls: Vec<(usize, Values)> = Vec::new();
    for (i, p) in programs.iter().enumerate() {
        let mut rng = Rng::new(p.seed ^ 0xdead_beef);
        for _ in 0..8 {
            calls.push((i, random_inputs(&p.interface, &mut rng)));
        }
    }
    let refs: Vec<(usize, &Values)> = calls.iter().map(|(i, v)| (*i, v)).collect();
    let results = oracle.run(&refs).unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    for ((i, _), r) in calls.iter().zip(&results) {
        if let Err(e) = r {
            failures.push(format!(
                "{}: {e}\n--- program ---\n{}",
                cases[*i].label, programs[*i].source
            ));
        }
    }
    eprintln!(
        "{} random programs × 8 inputs ran under UBSan in {:.1?}",
        programs.len(),
        start.elapsed()
    );
    report(&failures, calls.len(), "UBSan runs");
}

/// The heart of it: hundreds of random programs, pgc vs gcc.
#[test]
fn random_programs_agree_with_gcc() {
    if !common::gcc_available() {
        return;
    }
    let programs: Vec<RandomProgram> = common::seeds("PGC_RANDPROG", 300, 1)
        .into_iter()
        .map(program)
        .collect();
    let cases: Vec<Case> = programs.iter().map(case_for).collect();
    check_programs(&programs, &cases, &[]);
}

/// Random dynamic-programming loops over tables of integer cells (`randprog::ranged`), pgc
/// vs gcc; the value-range analysis must narrow them (fewer ANDs in total than with it off,
/// never more in any one) without changing a result.
#[test]
fn ranged_loop_programs_agree_with_gcc_and_narrow() {
    if !common::gcc_available() {
        return;
    }
    let programs: Vec<RandomProgram> = common::seeds("PGC_RANDPROG", 100, 1)
        .into_iter()
        .map(|s| randprog::ranged::generate(s, &format!("r{s}")))
        .collect();
    let cases: Vec<Case> = programs
        .iter()
        .map(|p| {
            let mut c = case_for(p);
            c.label = c
                .label
                .replace("random program seed", "random ranged-loop program seed")
                .replace("--test random_programs", "--test random_programs ranged");
            c
        })
        .collect();
    check_programs(&programs, &cases, &[]);
    let (mut on_total, mut off_total) = (0u64, 0u64);
    for c in &cases {
        let on = c.compile().unwrap_or_else(|e| panic!("{}: {e}", c.label));
        let mut off_case = c.clone();
        off_case.opts.value_ranges = false;
        let off = off_case
            .compile()
            .unwrap_or_else(|e| panic!("{}: {e}", c.label));
        assert!(
            on.stats.and_gates_final <= off.stats.and_gates_final,
            "{}: {} ANDs with value ranges, {} without",
            c.label,
            on.stats.and_gates_final,
            off.stats.and_gates_final
        );
        on_total += on.stats.and_gates_final;
        off_total += off.stats.and_gates_final;
    }
    eprintln!("ranged-loop programs: {on_total} ANDs with value ranges, {off_total} without");
    assert!(on_total < off_total, "the analysis narrowed nothing");
}

/// Random programs over `float` and `double`, pgc vs gcc -O0 (half of them compiled with
/// `--optimize depth`).
#[test]
fn random_float_programs_agree_with_gcc() {
    if !common::gcc_available() {
        return;
    }
    let programs: Vec<RandomProgram> = common::seeds("PGC_RANDPROG", 60, 1)
        .into_iter()
        .map(float_program)
        .collect();
    let cases: Vec<Case> = programs
        .iter()
        .map(|p| {
            let mut c = case_for(p);
            c.label = c
                .label
                .replace("random program seed", "random float program seed")
                .replace("--test random_programs", "--test random_programs float");
            c.any_nan = true;
            // Odd seeds with the depth-optimized blocks (and integer chains rebalanced).
            if p.seed % 2 == 1 {
                c.opts.optimize = pgc_circuit::OptimizeFor::Depth;
                c.label = c.label.replace(" (rerun", ", --optimize depth (rerun");
            }
            c
        })
        .collect();
    check_programs(&programs, &cases, common::oracle::FLOAT_ORACLE_FLAGS);
}

/// Compiles every program with pgc (on all cores, with a watchdog), runs each on seeded
/// inputs in gcc (built with `gcc_flags`) and in the circuit (one in 30 also through the
/// protocol), and reports every disagreement.
fn check_programs(programs: &[RandomProgram], cases: &[Case], gcc_flags: &[&str]) {
    let start = Instant::now();

    // Compile with pgc on all cores.
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let verbose = std::env::var_os("PGC_RANDPROG_VERBOSE").is_some();
    let mut compiled: Vec<Option<Result<Compiled, String>>> = vec![None; cases.len()];
    // A compiler that never finishes would hang the test silently: a watchdog reports the
    // program and ends the process instead.
    let limit = Duration::from_secs(env_u64("PGC_RANDPROG_COMPILE_LIMIT_S").unwrap_or(60));
    let busy: Mutex<Vec<Option<(usize, Instant)>>> = Mutex::new(vec![None; workers]);
    let done = AtomicBool::new(false);
    let chunk = cases.len().div_ceil(workers).max(1);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let stuck = busy
                    .lock()
                    .unwrap()
                    .iter()
                    .flatten()
                    .find(|(_, t)| t.elapsed() > limit)
                    .copied();
                if let Some((i, _)) = stuck {
                    eprintln!(
                        "\npgc did not finish compiling {} within {limit:?} (a hang?)\n\
                         --- program ---\n{}",
                        cases[i].label, programs[i].source
                    );
                    std::process::exit(101);
                }
            }
        });
        let mut workers_running = Vec::new();
        for (w, (chunk_cases, chunk_out)) in cases
            .chunks(chunk)
            .zip(compiled.chunks_mut(chunk))
            .enumerate()
        {
            let busy = &busy;
            workers_running.push(s.spawn(move || {
                for (k, (case, out)) in chunk_cases.iter().zip(chunk_out).enumerate() {
                    busy.lock().unwrap()[w] = Some((w * chunk + k, Instant::now()));
                    let t = Instant::now();
                    let r = std::panic::catch_unwind(|| case.compile())
                        .unwrap_or_else(|p| {
                            let msg = p
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default();
                            Err(pgc_compiler::CompileError::Source {
                                pos: None,
                                message: format!("pgc PANICKED: {msg}"),
                            })
                        })
                        .map_err(|e| e.to_string());
                    busy.lock().unwrap()[w] = None;
                    if verbose {
                        match &r {
                            Ok(c) => eprintln!(
                                "{}: {} AND gates, {} gates, {:.1?}",
                                case.source.name(),
                                c.stats.and_gates_final,
                                c.stats.gates_final,
                                t.elapsed()
                            ),
                            Err(e) => eprintln!("{}: error {e}", case.source.name()),
                        }
                    }
                    *out = Some(r);
                }
            }));
        }
        for h in workers_running {
            let _ = h.join();
        }
        done.store(true, Ordering::Relaxed);
    });
    let compile_time = start.elapsed();

    let mut failures = Vec::new();
    let mut ok: Vec<(usize, Compiled)> = Vec::new();
    for (i, r) in compiled.into_iter().enumerate() {
        let p = &programs[i];
        match r.expect("compiled") {
            Err(e) => failures.push(format!(
                "pgc rejected {}:\n  {e}\n--- program ---\n{}",
                cases[i].label, p.source
            )),
            Ok(c) => {
                if c.interface != p.interface || c.entry_params != p.params {
                    failures.push(format!(
                        "pgc's interface for {} differs from the program's parameters:\n  \
                         expected params {:?}\n  got {:?}\n  expected {:#?}\n  got {:#?}",
                        cases[i].label, p.params, c.entry_params, p.interface, c.interface
                    ));
                } else {
                    ok.push((i, c));
                }
            }
        }
    }

    let pairs: Vec<(&Case, &Compiled)> = ok.iter().map(|(i, c)| (&cases[*i], c)).collect();
    let inputs_per_program = 10;
    if !pairs.is_empty() {
        let oracle =
            GccOracle::build_with_flags(&pairs, gcc_flags).unwrap_or_else(|e| panic!("{e}"));
        // Inputs seeded per program, so a program rerun alone gets the same inputs.
        let inputs: Vec<Vec<Values>> = ok
            .iter()
            .map(|(i, c)| {
                let mut rng = Rng::new(programs[*i].seed ^ 0x0dd_5eed);
                (0..inputs_per_program)
                    .map(|_| random_inputs(&c.interface, &mut rng))
                    .collect()
            })
            .collect();
        let calls: Vec<(usize, &Values)> = inputs
            .iter()
            .enumerate()
            .flat_map(|(u, sets)| sets.iter().map(move |v| (u, v)))
            .collect();
        let results = oracle.run(&calls).unwrap_or_else(|e| panic!("{e}"));
        let mut results = results.into_iter();
        for (u, (i, c)) in ok.iter().enumerate() {
            let gcc: Vec<_> = results.by_ref().take(inputs_per_program).collect();
            // The protocol on one input set of every 30th program: slower, same circuit.
            let protocol_runs = usize::from(u % 30 == 0);
            let mut f = compare(&cases[*i], c, &inputs[u], &gcc, protocol_runs);
            if !f.is_empty() {
                let n = f.len();
                f.truncate(2);
                failures.push(format!(
                    "{} ({n} mismatches)\n--- program ---\n{}",
                    f.join("\n"),
                    programs[*i].source
                ));
            }
        }
    }
    eprintln!(
        "{} random programs: pgc compiled {} in {:.1?}; {} checked against gcc on {} inputs \
         each; total {:.1?}",
        programs.len(),
        ok.len(),
        compile_time,
        ok.len(),
        inputs_per_program,
        start.elapsed()
    );
    report(&failures, programs.len(), "random programs");
}
