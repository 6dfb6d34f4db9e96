//! Replays every committed fuzz input through the fuzz targets' entry points on a plain
//! `cargo test` (stable, no libFuzzer), so that the seeds and the regression inputs of past
//! findings keep guarding after the fuzz run: the seeds in `fuzz/seeds/TARGET/`, and the
//! regression inputs in `crates/*/tests/fuzz_regressions/TARGET/` (each owning crate also
//! asserts its own clean error for them). A panic here is a regression.

use std::path::{Path, PathBuf};

use pgc_fuzz::{TARGETS, Target};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Files directly in `dir` (none if it does not exist), sorted.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a readable directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// The committed inputs of `target`: its seeds, then every crate's regression inputs.
fn committed_inputs(target: &Target) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let root = repo_root();
    let seeds = files_in(&root.join("fuzz/seeds").join(target.name));
    let mut regressions = Vec::new();
    for krate in files_in_dirs(&root.join("crates")) {
        regressions.extend(files_in(
            &krate.join("tests/fuzz_regressions").join(target.name),
        ));
    }
    (seeds, regressions)
}

fn files_in_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the crates folder is readable")
        .map(|e| e.expect("a readable directory entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn replay(target: &Target, files: &[PathBuf]) {
    for file in files {
        let data = std::fs::read(file).expect("a committed fuzz input is readable");
        let outcome = std::panic::catch_unwind(|| (target.run)(&data));
        assert!(
            outcome.is_ok(),
            "fuzz target {} panicked on {}",
            target.name,
            file.display()
        );
    }
}

#[test]
fn every_target_has_seeds_and_replays_them_and_its_regressions() {
    for target in TARGETS {
        let (seeds, regressions) = committed_inputs(target);
        assert!(
            !seeds.is_empty(),
            "fuzz target {} has no seeds in fuzz/seeds/{}",
            target.name,
            target.name
        );
        replay(target, &seeds);
        replay(target, &regressions);
    }
}

#[test]
fn every_target_has_a_cargo_fuzz_binary() {
    let manifest = std::fs::read_to_string(repo_root().join("fuzz/Cargo.toml"))
        .expect("fuzz/Cargo.toml is readable");
    for target in TARGETS {
        let path = format!("fuzz_targets/{}.rs", target.name);
        assert!(
            manifest.contains(&path),
            "fuzz/Cargo.toml has no [[bin]] for {}",
            target.name
        );
        let source = std::fs::read_to_string(repo_root().join("fuzz").join(&path))
            .unwrap_or_else(|e| panic!("fuzz/{path}: {e}"));
        assert!(
            source.contains(&format!("pgc_fuzz::{}(data)", target.name)),
            "fuzz/{path} does not call pgc_fuzz::{}",
            target.name
        );
    }
}

/// The protocol seeds are honest transcripts: they start with the current hello of the
/// peer. When the protocol or the fixed circuits change, they go stale (and the fuzzer
/// would start from messages refused at the handshake): regenerate them with
/// `cargo run -p pgc-fuzz --example write_seeds -- fuzz/seeds`.
#[test]
fn protocol_seeds_start_with_the_current_hello() {
    use pgc_protocol::Party;
    let root = repo_root().join("fuzz/seeds");
    for (target, peer) in [("yao_evaluator", Party::A), ("yao_garbler", Party::B)] {
        let seed = std::fs::read(root.join(target).join("honest")).expect("the honest seed");
        let hello = pgc_fuzz::yao_hello(peer).to_bytes();
        let mut frame = (hello.len() as u32).to_le_bytes().to_vec();
        frame.extend_from_slice(&hello);
        assert!(
            seed.starts_with(&frame),
            "fuzz/seeds/{target}/honest is stale: regenerate it with \
             `cargo run -p pgc-fuzz --example write_seeds -- fuzz/seeds`"
        );
    }
}

/// The checksum fix-up makes an edited file pass both checksums, so that the fuzzer reaches
/// the checks behind them: one more wire in a real file's layout fails on the header
/// checksum as it is, and on the wire count itself once the checksums are fixed.
#[test]
fn fixed_up_checksums_let_an_edit_reach_the_decoder() {
    use pgc_circuit::pgcfile::read_pgc_from;
    let path = repo_root().join("fuzz/seeds/pgc_v1/millionaires.pgc");
    let mut file = std::fs::read(path).expect("the v1 seed");
    let (original, _) = read_pgc_from(&file[..]).expect("the seed reads");
    // The layout starts at byte 20 with its wire count; this one is far beyond what the
    // file's gates can justify, so the decoder refuses it once the checksums pass.
    let num_wires = original.layout.num_wires * 1000;
    file[20..24].copy_from_slice(&num_wires.to_le_bytes());
    let raw = read_pgc_from(&file[..]).unwrap_err().to_string();
    assert!(raw.contains("checksum"), "{raw}");
    pgc_fuzz::fix_pgc_checksums(&mut file);
    let fixed = read_pgc_from(&file[..]).unwrap_err().to_string();
    assert!(
        fixed.contains(&format!("declares {num_wires} wires")),
        "{fixed}"
    );
}

/// The protocol seeds reach the end of the protocol: an honest party given the recorded
/// messages of an honest peer completes the run (with fresh randomness its outputs are
/// meaningless, but every decoder on the way has seen well-formed messages), so the fuzzer
/// mutates messages at every stage, not only the first.
#[test]
fn protocol_seeds_run_to_the_outputs() {
    let root = repo_root().join("fuzz/seeds");
    let evaluator = std::fs::read(root.join("yao_evaluator/honest")).expect("the seed");
    pgc_fuzz::yao_evaluator_run(&evaluator).expect("the evaluator completes");
    let garbler = std::fs::read(root.join("yao_garbler/honest")).expect("the seed");
    pgc_fuzz::yao_garbler_run(&garbler).expect("the garbler completes");
    for party in ["A", "B"] {
        let data = std::fs::read(root.join("gmw_peer").join(party)).expect("the seed");
        let outcome = pgc_fuzz::gmw_peer_run(&data).expect("a non-empty seed");
        outcome.unwrap_or_else(|e| panic!("gmw_peer/{party}: {e}"));
    }
    let seeds = files_in(&root.join("parallel_peer"));
    assert!(seeds.len() >= 10, "a seed per mode and party");
    for seed in seeds {
        let data = std::fs::read(&seed).expect("the seed");
        let outcome = pgc_fuzz::parallel_peer_run(&data).expect("a non-empty seed");
        if let Err(e) = outcome {
            panic!("{}: {e}", seed.display());
        }
    }
}

/// The seeds of the targets that replay their entropy run to the end with the correct
/// outputs, in a fuzzing build only (the entropy replay exists there): an honest cut-and-choose
/// or dual-execution party fed the recorded peer passes every check. Run with
/// `RUSTFLAGS="--cfg fuzzing" cargo test -p pgc-fuzz --target-dir fuzz/target/cfg-fuzzing`.
#[cfg(fuzzing)]
#[test]
fn replayed_entropy_seeds_run_to_the_correct_outputs() {
    use pgc_fuzz::{malicious, yao_variants};
    let root = repo_root().join("fuzz/seeds");
    let runs: [(&str, fn(&[u8]) -> Option<Result<_, _>>); 4] = [
        ("cut_and_choose", malicious::cut_and_choose_run),
        ("dual_execution", malicious::dual_execution_run),
        ("yao_three_halves", yao_variants::yao_three_halves_run),
        ("yao_compact", yao_variants::yao_compact_run),
    ];
    for (target, run) in runs {
        let seeds = files_in(&root.join(target));
        assert!(seeds.len() >= 2, "{target}: a seed per party");
        for seed in seeds {
            let data = std::fs::read(&seed).expect("the seed");
            let outcome: pgc_protocol::Outcome = run(&data)
                .expect("a non-empty seed")
                .unwrap_or_else(|e| panic!("{}: {e}", seed.display()));
            // The millionaires circuit on the parties' inputs (A: 200, B: 77).
            if target != "yao_compact" {
                let inputs: Vec<bool> = (0..8)
                    .map(|i| 200u8 >> i & 1 == 1)
                    .chain((0..8).map(|i| 77u8 >> i & 1 == 1))
                    .collect();
                let expected = pgc_circuit::eval_bits(pgc_fuzz::yao_circuit(), &inputs);
                for output in outcome.outputs.iter().flatten() {
                    assert_eq!(output, &expected, "{}", seed.display());
                }
            }
        }
    }
}

/// The cut-and-choose target's parameter leaves more than one evaluated copy, so that the
/// majority vote and the input-consistency check across copies are fuzzed too.
#[test]
fn cut_and_choose_target_evaluates_several_copies() {
    let plan = pgc_fuzz::malicious::cut_and_choose_plan();
    assert!(plan.evaluated() >= 2 && plan.checked >= 1, "{plan:?}");
}

/// The front-end seeds reach a result, so the fuzzer starts from inputs that pass the
/// parsers: every C seed but one compiles under the targets' small limits (`mexp.c` is kept
/// for the gate-budget error) and, preprocessed, compiles both ways `c_semantics` compares,
/// every netlist maps, every inputs object gives all values.
#[test]
fn front_end_seeds_reach_a_result() {
    let root = repo_root().join("fuzz/seeds");
    for seed in files_in(&root.join("c_program")) {
        let data = std::fs::read(&seed).expect("the seed");
        let outcome = pgc_fuzz::front_ends::c_program_run(&data).expect("a non-empty seed");
        if seed.ends_with("mexp.c") {
            let e = outcome.expect_err("mexp is over the budget");
            assert!(e.contains("more than 65536 gates"), "{e}");
        } else if let Err(e) = outcome {
            panic!("{}: {e}", seed.display());
        }
    }
    // Both compilations of every preprocessed seed (mexp.c's is over the budget), so the
    // fuzzer starts where the outputs are compared.
    for seed in files_in(&root.join("c_semantics")) {
        let data = std::fs::read(&seed).expect("the seed");
        let outcome = pgc_fuzz::front_ends::c_semantics_run(&data).expect("a non-empty seed");
        if seed
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("mexp"))
        {
            let e = outcome.expect_err("mexp is over the budget");
            assert!(e.contains("more than 65536 gates"), "{e}");
        } else {
            let compared = outcome.unwrap_or_else(|e| panic!("{}: {e}", seed.display()));
            assert!(compared, "{}: the variant did not compile", seed.display());
        }
    }
    for seed in files_in(&root.join("yosys_json")) {
        let data = std::fs::read(&seed).expect("the seed");
        pgc_fuzz::front_ends::yosys_json_run(&data)
            .unwrap_or_else(|e| panic!("{}: {e}", seed.display()));
    }
    for seed in files_in(&root.join("inputs_json")) {
        let data = std::fs::read(&seed).expect("the seed");
        let outcome = pgc_fuzz::front_ends::inputs_json_run(&data).expect("a non-empty seed");
        outcome.unwrap_or_else(|e| panic!("{}: {e}", seed.display()));
    }
}

/// The cluster ranks' seeds run to the end: rank 0 given what an honest peer and worker
/// sent it completes the run, and the worker given what an honest rank 0 and peer rank
/// sent it finishes its share, so the fuzzer mutates every plan message and the tables,
/// not only the set-up. Only in a fuzzing build, as the other replayed-entropy seeds (rank
/// 0 of cut-and-choose B draws the check set); the workers draw nothing, so their seeds
/// are checked in every build.
#[test]
fn cluster_rank_seeds_run_to_the_end() {
    use pgc_fuzz::cluster::{RankEnd, cluster_rank_run};
    let seeds = files_in(&repo_root().join("fuzz/seeds/cluster_rank"));
    assert_eq!(seeds.len(), 8, "a seed per protocol, party and rank");
    for seed in seeds {
        let data = std::fs::read(&seed).expect("the seed");
        let end = cluster_rank_run(&data).expect("a non-empty seed");
        match end {
            Ok(RankEnd::Worker(pgc_protocol::cluster::WorkerEnd::Finished(_))) => {}
            Ok(RankEnd::Coordinator(_)) if cfg!(fuzzing) => {}
            Err(_) | Ok(RankEnd::Coordinator(_)) if !cfg!(fuzzing) && data[0] & 4 == 0 => {}
            other => panic!("{}: {other:?}", seed.display()),
        }
    }
}
