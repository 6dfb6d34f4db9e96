//! `pgc demo`: the real protocol between two parties on this machine (TLS over loopback), on
//! circuits pgc builds itself or compiles from an embedded C example, each result checked
//! against an independent answer.

use std::time::Duration;

use anyhow::{Result, bail};
use pgc_circuit::GateSource;
use pgc_circuit::builder;
use pgc_circuit::generate::RandomLayered;
use pgc_circuit::value::{BitOrder, format_value, parse_value};
use pgc_crypto::Prg;
use pgc_protocol::{LocalTcpOptions, Outcome, Party, RunStats, run_local_tcp, run_local_tcp_with};
use serde_json::{Value, json};

use pgc_engine::report::{self, per_sec};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The demos' loopback runs: TLS, semi-honest, one thread, [`TIMEOUT`].
fn demo_options() -> LocalTcpOptions {
    LocalTcpOptions {
        timeout: TIMEOUT,
        ..LocalTcpOptions::default()
    }
}

/// A run with test-only cheating parties, recorded by the protocol's tests (which check
/// that it still matches what the protocol does).
const CAUGHT_CHEAT: &str = include_str!("../../../docs/transcripts/caught-cheat.txt");

/// The C example the demo compiles (examples/millionaires.c, embedded in the binary).
const MILLIONAIRES_C: &str = include_str!("../../../examples/millionaires.c");

pub fn demo(json: bool) -> Result<()> {
    let mut results: Vec<Value> = Vec::new();
    let say = |s: String| {
        if !json {
            outln!("{s}");
        }
    };

    // 1. Millionaires: who is richer, without either revealing their wealth.
    say("1. Millionaires' problem: is A richer than B? (32-bit comparison)".into());
    let (wealth_a, wealth_b) = (5_000_000u64, 7_250_000u64);
    let c = builder::millionaires_circuit(32);
    let a = vec![parse_value(&wealth_a.to_string(), 32, BitOrder::Lsb0)?];
    let b = vec![parse_value(&wealth_b.to_string(), 32, BitOrder::Lsb0)?];
    let (oa, ob) = run_local_tcp(&c, &[Party::A, Party::B], &a, &b, TIMEOUT, &mut |_| {})?;
    let richer = visible(&ob)?[0][0];
    check(&oa, &ob, richer == (wealth_a > wealth_b), "millionaires")?;
    say(format!(
        "   A holds {wealth_a}, B holds {wealth_b} (private inputs; both parties run here)\n   \
         result: A is richer = {richer}  [correct]\n   {}",
        summary(&ob.stats)
    ));
    results.push(json!({"name": "millionaires", "a_richer": richer, "correct": true, "stats": report::stats_json(&ob.stats)}));

    // 2. The same question as a C program, compiled here and run with named, typed inputs.
    say("2. The same as a C program: examples/millionaires.c, compiled by pgc".into());
    let (income_a, income_b) = (5000i32, 7000i32);
    let (result, stats) = c_millionaires(income_a, income_b)?;
    say(format!(
        "   void mpc_main(int INPUT_A_income, int INPUT_B_income, int *OUTPUT_result)\n   \
         A: income={income_a}, B: income={income_b}\n   OUTPUT_result = {result}  [correct]\n   {}",
        summary(&stats)
    ));
    results.push(json!({"name": "millionaires.c", "OUTPUT_result": result, "correct": true, "stats": report::stats_json(&stats)}));

    // 3. AES-128: A holds the key, B the plaintext; FIPS-197 appendix C.1.
    say("3. AES-128: A holds the key, B holds the plaintext (FIPS-197 C.1 test vector)".into());
    let c = builder::aes::aes128_circuit();
    let key = parse_value("0x000102030405060708090a0b0c0d0e0f", 128, BitOrder::Lsb0)?;
    let pt = parse_value("0x00112233445566778899aabbccddeeff", 128, BitOrder::Lsb0)?;
    let (oa, ob) = run_local_tcp(
        &c,
        &[Party::A, Party::B],
        &[key],
        &[pt],
        TIMEOUT,
        &mut |_| {},
    )?;
    let ct = format_value(&visible(&ob)?[0], BitOrder::Lsb0);
    let expected = "0x69c4e0d86a7b0430d8cdb78070b4c55a";
    check(&oa, &ob, ct == expected, "AES-128")?;
    say(format!(
        "   ciphertext {ct}\n   FIPS-197   {expected}  [match]\n   {}",
        summary(&ob.stats)
    ));
    results.push(json!({"name": "aes128", "ciphertext": ct, "correct": true, "stats": report::stats_json(&ob.stats)}));
    // The same under GMW: XOR-shared wires, triples made in a setup phase, one round per AND
    // level online.
    let (ga, gb) = pgc_protocol::run_local_gmw(
        &c,
        &[Party::A, Party::B],
        &pgc_protocol::all_visible(c.layout()),
        &[parse_value(
            "0x000102030405060708090a0b0c0d0e0f",
            128,
            BitOrder::Lsb0,
        )?],
        &[parse_value(
            "0x00112233445566778899aabbccddeeff",
            128,
            BitOrder::Lsb0,
        )?],
        &pgc_protocol::GmwConfig::default(),
        pgc_net::LinkShape::default(),
        TIMEOUT,
        pgc_protocol::LocalSecurity::Tls,
        &mut |_| {},
    )?;
    let gmw_ct = format_value(&visible(&gb)?[0], BitOrder::Lsb0);
    check(&ga, &gb, gmw_ct == expected, "AES-128 under GMW")?;
    if let Some(g) = &gb.stats.gmw {
        say(format!(
            "   the same under --protocol gmw: {gmw_ct}  [match]
   setup {:.1} ms ({} triples), \
             online {:.1} ms ({} rounds, one per AND level)",
            g.setup_seconds * 1e3,
            report::group(g.triples),
            g.online_seconds * 1e3,
            g.rounds
        ));
    }
    results.push(json!({"name": "aes128 --protocol gmw", "ciphertext": gmw_ct, "correct": true, "stats": report::stats_json(&gb.stats)}));

    // 4. Throughput on a larger generated circuit, checked against cleartext evaluation.
    let g = RandomLayered::new(4096, 2500, 2026)?;
    say(format!(
        "4. Throughput: a generated circuit of {} AND gates, streamed",
        report::group(g.and_count())
    ));
    let layout = g.layout().clone();
    let mut prg = Prg::from_os_entropy();
    let mut bits = |n: u32| (0..n).map(|_| prg.random_bool()).collect::<Vec<bool>>();
    let a = vec![bits(layout.input_widths[0])];
    let b = vec![bits(layout.input_widths[1])];
    let (oa, ob) = run_local_tcp(&g, &[Party::A, Party::B], &a, &b, TIMEOUT, &mut |_| {})?;
    let all: Vec<bool> = a.iter().chain(&b).flatten().copied().collect();
    let got: Vec<bool> = visible(&ob)?.concat();
    check(
        &oa,
        &ob,
        got == pgc_circuit::eval::eval_bits(&g, &all),
        "throughput run",
    )?;
    say(format!(
        "   outputs match cleartext evaluation\n   {}",
        summary(&ob.stats)
    ));
    results.push(
        json!({"name": "random_layered", "correct": true, "stats": report::stats_json(&ob.stats)}),
    );

    say("5. Automatic parallelization: examples/biomatch.c (the seed paper's BioMatch, 128 templates)".into());
    let (regions, runs) = parallel_biomatch()?;
    say(format!("   pgc found {regions}"));
    for (name, stats) in &runs {
        say(format!("   --parallel {name:<18} {}", summary(stats)));
        results.push(json!({"name": format!("biomatch --parallel {name}"), "correct": true, "stats": report::stats_json(stats)}));
    }
    say("   all modes give the cleartext result".into());

    say(format!(
        "6. A compact circuit: examples/edit_distance_large.c, {EDIT_DEMO_LEN}×{EDIT_DEMO_LEN} edit distance"
    ));
    let (line, distance, stats) = compact_edit_distance()?;
    say(format!(
        "   {line}\n   OUTPUT_distance = {distance}  [correct]\n   {}",
        summary(&stats)
    ));
    results.push(json!({"name": "edit_distance_large.c --compact always", "OUTPUT_distance": distance, "correct": true, "stats": report::stats_json(&stats)}));

    // 7. Against a cheater: the millionaires again at --security malicious, then a recorded
    // run in which a cheating party is caught (this binary cannot cheat: the cheating party
    // exists only in the tests, which recorded the transcript).
    say(
        "7. Against a cheating peer: the millionaires at --security malicious --stat-sec 40".into(),
    );
    let plan = pgc_protocol::malicious::CopyPlan::for_stat_sec(40);
    let c = builder::millionaires_circuit(32);
    let a = vec![parse_value(&wealth_a.to_string(), 32, BitOrder::Lsb0)?];
    let b = vec![parse_value(&wealth_b.to_string(), 32, BitOrder::Lsb0)?];
    let owners = [Party::A, Party::B];
    let options = LocalTcpOptions {
        level: pgc_protocol::Security::Malicious { stat_sec: 40 },
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        ..demo_options()
    };
    let (oa, ob) = run_local_tcp_with(
        &c,
        &owners,
        &pgc_protocol::all_visible(c.layout()),
        &a,
        &b,
        options,
        &mut |_| {},
    )?;
    let richer = visible(&ob)?[0][0];
    check(
        &oa,
        &ob,
        richer == (wealth_a > wealth_b),
        "malicious millionaires",
    )?;
    say(format!(
        "   result: A is richer = {richer}  [correct]; {} copies garbled, {} checked, {} evaluated\n   {}",
        plan.copies,
        plan.checked,
        plan.evaluated(),
        summary(&ob.stats)
    ));
    say(format!(
        "   A recorded run with cheating parties (docs/transcripts/caught-cheat.txt):\n{}",
        CAUGHT_CHEAT
            .lines()
            .map(|l| format!("   | {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    ));
    results.push(json!({"name": "millionaires --security malicious", "a_richer": richer, "correct": true, "copies": plan.copies, "stats": report::stats_json(&ob.stats)}));

    if json {
        outln!("{}", json!({ "demos": results }));
    } else {
        outln!(
            "\nAll results correct. Each party learned the outputs and nothing else about the other's\n\
             inputs (semi-honest security in steps 1-6; step 7 also against a cheating peer).\n\
             Try your own: pgc local --help, pgc run --help."
        );
    }
    Ok(())
}

/// Compiles the embedded millionaires program and runs it on typed inputs; returns
/// OUTPUT_result (checked against `income_a > income_b`) and B's run statistics.
const BIOMATCH_C: &str = include_str!("../../../examples/biomatch.c");

/// Compiles BioMatch at 128 templates and runs it sequentially, with every core (coarse-
/// and fine-grained parallelism) and with inter-party parallelization, on random inputs;
/// returns the regions found and each run's stats.
fn parallel_biomatch() -> Result<(String, Vec<(String, RunStats)>)> {
    use pgc_protocol::{ParallelConfig, ParallelMode, run_local_parallel};
    let opts = pgc_compiler::Options {
        defines: vec!["BIOMATCH_N=128".into()],
        ..pgc_compiler::Options::default()
    };
    let compiled = pgc_compiler::compile_source(BIOMATCH_C, "biomatch.c", &opts)?;
    let pc = compiled.parallel_circuit()?;
    let info = pc.region_info();
    let regions = match info.first() {
        Some(r) => format!(
            "{} parallel region: the loop at line {}, {} independent instances of {} AND gates",
            info.len(),
            r.line,
            r.instances,
            report::group(r.and_gates_per_instance)
        ),
        None => bail!("the embedded BioMatch should have a parallel region"),
    };
    let iface = &compiled.interface;
    let owners = pgc_engine::typed_io::owners(iface);
    let visibility = pgc_engine::typed_io::visibility(iface);
    let layout = pc.layout.clone();
    let mut prg = Prg::from_os_entropy();
    // Small values so the squared distances stay far from overflow (any value would do).
    let mut inputs: Vec<Vec<bool>> = Vec::new();
    for &w in &layout.input_widths {
        inputs.push((0..w).map(|i| i % 64 < 12 && prg.random_bool()).collect());
    }
    let all: Vec<bool> = inputs.concat();
    let expect = pgc_circuit::eval::eval_bits(&pc, &all);
    let pick = |p: Party| -> Vec<Vec<bool>> {
        owners
            .iter()
            .zip(&inputs)
            .filter(|(o, _)| **o == p)
            .map(|(_, v)| v.clone())
            .collect()
    };
    let (a, b) = (pick(Party::A), pick(Party::B));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut runs = Vec::new();
    for (mode, threads, name) in [
        (ParallelMode::None, 1, "none".to_string()),
        (ParallelMode::Auto, cores, format!("auto --threads {cores}")),
        (ParallelMode::Ipp, 1, "ipp --threads 1".to_string()),
    ] {
        let config = ParallelConfig {
            mode,
            threads,
            tau: pgc_engine::options::measured_tau().unwrap_or(pgc_garble::parallel::DEFAULT_TAU),
        };
        let (oa, ob) = run_local_parallel(
            &pc,
            &owners,
            &visibility,
            &a,
            &b,
            &config,
            pgc_net::LinkShape::default(),
            TIMEOUT,
            &std::sync::atomic::AtomicU64::new(0),
        )?;
        let got: Vec<bool> = visible(&ob)?.concat();
        check(&oa, &ob, got == expect, "parallel BioMatch")?;
        runs.push((name, ob.stats));
    }
    Ok((regions, runs))
}

const EDIT_DISTANCE_C: &str = include_str!("../../../examples/edit_distance_large.c");
const EDIT_DEMO_LEN: usize = 200;

/// Compiles the edit distance example compact (its cell function stored once) and runs it
/// on two random strings; returns a line about the compact circuit, the distance (checked
/// against a plain implementation) and B's run statistics.
fn compact_edit_distance() -> Result<(String, u64, RunStats)> {
    let opts = pgc_compiler::Options {
        defines: vec![format!("EDIT_LEN={EDIT_DEMO_LEN}")],
        ..pgc_compiler::Options::default()
    };
    let compiled =
        pgc_compiler::compile_compact_source(EDIT_DISTANCE_C, "edit_distance_large.c", &opts)?;
    let stats = pgc_circuit::compact::compact_stats(&compiled.circuit)?;
    let line = format!(
        "{} templates, {} calls: {} gates ({} AND) expanded while garbling; labels for {} live wires ({}) per party",
        stats.templates,
        report::group(stats.calls),
        report::group(stats.gates),
        report::group(stats.and_gates),
        report::group(stats.peak_live_wires),
        report::bytes(stats.label_bytes_per_party)
    );
    let source = pgc_circuit::compact::CompactSource::new(compiled.circuit)?;
    let mut prg = Prg::from_os_entropy();
    let mut text = || -> Vec<u8> {
        (0..EDIT_DEMO_LEN)
            .map(|_| b'a' + (prg.random_u64() % 4) as u8)
            .collect()
    };
    let (ta, tb) = (text(), text());
    let bits = |t: &[u8]| -> Vec<bool> {
        t.iter()
            .flat_map(|&c| (0..8).map(move |i| c >> i & 1 == 1))
            .collect()
    };
    let iface = &compiled.interface;
    let (oa, ob) = run_local_tcp_with(
        &source,
        &pgc_engine::typed_io::owners(iface),
        &pgc_engine::typed_io::visibility(iface),
        &[bits(&ta)],
        &[bits(&tb)],
        demo_options(),
        &mut |_| {},
    )?;
    let out = &visible(&ob)?[0];
    let distance = out
        .iter()
        .enumerate()
        .map(|(i, &b)| (b as u64) << i)
        .sum::<u64>();
    let mut row: Vec<u64> = (0..=EDIT_DEMO_LEN as u64).collect();
    for i in 1..=EDIT_DEMO_LEN {
        let mut diagonal = row[0];
        row[0] = i as u64;
        for j in 1..=EDIT_DEMO_LEN {
            let above = row[j];
            row[j] = (above + 1)
                .min(row[j - 1] + 1)
                .min(diagonal + (ta[i - 1] != tb[j - 1]) as u64);
            diagonal = above;
        }
    }
    check(
        &oa,
        &ob,
        distance == row[EDIT_DEMO_LEN],
        "compact edit distance",
    )?;
    Ok((line, distance, ob.stats))
}

fn c_millionaires(income_a: i32, income_b: i32) -> Result<(i64, RunStats)> {
    use pgc_circuit::typed::{parse_port_value, port_value_json};
    let compiled = pgc_compiler::compile_source(
        MILLIONAIRES_C,
        "millionaires.c",
        &pgc_compiler::Options::default(),
    )?;
    let circuit = pgc_circuit::assign_slots(&pgc_circuit::levelize(&compiled.circuit)?);
    let iface = &compiled.interface;
    let port = |name: &str| {
        iface
            .inputs
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| anyhow::anyhow!("the embedded example has no input {name}"))
    };
    let (pa, pb) = (port("INPUT_A_income")?, port("INPUT_B_income")?);
    if iface.inputs.len() != 2 || iface.outputs.len() != 1 {
        bail!("the embedded example should have two inputs and one output");
    }
    let a = parse_port_value(&income_a.to_string(), &pa.ctype, &pa.name)?;
    let b = parse_port_value(&income_b.to_string(), &pb.ctype, &pb.name)?;
    let owners = pgc_engine::typed_io::owners(iface);
    let visibility = pgc_engine::typed_io::visibility(iface);
    let (oa, ob) = run_local_tcp_with(
        &circuit,
        &owners,
        &visibility,
        &[a],
        &[b],
        demo_options(),
        &mut |_| {},
    )?;
    let out = &iface.outputs[0];
    let result = port_value_json(&visible(&ob)?[0], &out.ctype)
        .as_i64()
        .ok_or_else(|| anyhow::anyhow!("{} is not an integer", out.name))?;
    check(
        &oa,
        &ob,
        result == (income_a > income_b) as i64,
        "millionaires.c",
    )?;
    Ok((result, ob.stats))
}

/// The outputs of a run in which both parties see every output.
fn visible(o: &Outcome) -> Result<Vec<Vec<bool>>> {
    o.all_outputs()
        .ok_or_else(|| anyhow::anyhow!("an output was withheld from a party; this is a bug in pgc"))
}

fn check(a: &Outcome, b: &Outcome, correct: bool, what: &str) -> Result<()> {
    if a.outputs != b.outputs {
        bail!("{what}: the two parties decoded different outputs; this is a bug in pgc");
    }
    if !correct {
        bail!("{what}: the secure computation gave a wrong result; this is a bug in pgc");
    }
    Ok(())
}

fn summary(s: &RunStats) -> String {
    format!(
        "{} AND gates, {:.1} ms end to end, circuit phase {}, {} sent by the garbler",
        report::group(s.and_gates),
        s.seconds * 1e3,
        per_sec(report::rate(s.and_gates, s.circuit_seconds), "AND/s"),
        report::bytes(s.bytes_received)
    )
}
