//! The CUDA kernels against the CPU reference and the CPU engine, table by table. Without a
//! GPU these tests say so and pass, unless `PGC_REQUIRE_GPU=1` (set it where a GPU is
//! expected, as on the accelerator machine), which makes a missing GPU a failure.

#![cfg(feature = "cuda")]

mod common;

use std::sync::Arc;

use common::{cpu_run, random_case, windows};
use pgc_crypto::{Block, Prg};
use pgc_garble::Evaluator;
use pgc_gpu::cuda::{GpuDevice, GpuEvaluator, GpuGarbler, garble_independent};
use pgc_gpu::reference::{self, AesMaterial};
use pgc_gpu::{GpuError, Scheduler};

fn device() -> Option<Arc<GpuDevice>> {
    match GpuDevice::open() {
        Ok(d) => Some(d),
        Err(e) => {
            if std::env::var_os("PGC_REQUIRE_GPU").is_some_and(|v| v == "1") {
                panic!("PGC_REQUIRE_GPU=1 but no GPU: {e}");
            }
            eprintln!("skipped: no GPU here ({e})");
            None
        }
    }
}

fn check_on_gpu(
    dev: &Arc<GpuDevice>,
    seed: u64,
    num_wires: usize,
    inputs: usize,
    n: usize,
    sizes: &[usize],
) {
    let case = random_case(seed, num_wires, inputs, n);
    let cpu = cpu_run(&case, seed);
    let mut garbler =
        GpuGarbler::new(dev.clone(), &cpu.zero_start, cpu.delta, cpu.hash_key).unwrap();
    let mut evaluator = GpuEvaluator::new(dev.clone(), &cpu.active_start, cpu.hash_key).unwrap();
    let mut tables = Vec::new();
    for range in windows(n, sizes) {
        let before = tables.len();
        garbler
            .garble(&case.gates[range.clone()], &mut tables)
            .unwrap();
        evaluator
            .evaluate(&case.gates[range], &tables[before..])
            .unwrap();
    }
    assert_eq!(tables.len(), cpu.tables.len());
    for (j, (g, c)) in tables.iter().zip(&cpu.tables).enumerate() {
        assert_eq!(
            g, c,
            "seed {seed}: GPU table block {j} differs from the CPU engine's"
        );
    }
    assert!(
        garbler.zero_labels().unwrap() == cpu.zero_end,
        "seed {seed}: zero-labels"
    );
    assert!(
        evaluator.labels().unwrap() == cpu.active_end,
        "seed {seed}: active labels"
    );
}

#[test]
fn gpu_garbler_and_evaluator_match_the_cpu_engine() {
    let Some(dev) = device() else { return };
    eprintln!("GPU: {}", dev.describe());
    for seed in 0..4 {
        check_on_gpu(&dev, seed, 64, 16, 5000, &[usize::MAX]);
    }
    for seed in 10..14 {
        check_on_gpu(&dev, seed, 9, 4, 3000, &[1, 7, 64, 3, 900]);
    }
    // Wide: many blocks per launch and the grid-stride loop.
    check_on_gpu(&dev, 77, 1 << 20, 1 << 16, 3_000_000, &[1 << 21]);
}

#[test]
fn gpu_garbler_with_cpu_evaluator_and_cpu_garbler_with_gpu_evaluator_interoperate() {
    let Some(dev) = device() else { return };
    let case = random_case(5, 256, 64, 20_000);
    let cpu = cpu_run(&case, 5);
    // GPU garbles, CPU evaluates its tables.
    let mut garbler =
        GpuGarbler::new(dev.clone(), &cpu.zero_start, cpu.delta, cpu.hash_key).unwrap();
    let mut tables = Vec::new();
    garbler.garble(&case.gates, &mut tables).unwrap();
    let mut cpu_eval = Evaluator::new(case.num_wires, cpu.hash_key);
    for (w, &l) in cpu.active_start.iter().enumerate() {
        cpu_eval.set_label(w as u32, l);
    }
    cpu_eval.evaluate(&case.gates, &tables).unwrap();
    let zero = garbler.zero_labels().unwrap();
    for w in 0..case.num_wires as u32 {
        let l = cpu_eval.label(w);
        assert!(
            l == zero[w as usize] || l == zero[w as usize] ^ cpu.delta,
            "wire {w}"
        );
    }
    // CPU garbles (cpu.tables), GPU evaluates.
    let mut gpu_eval = GpuEvaluator::new(dev, &cpu.active_start, cpu.hash_key).unwrap();
    gpu_eval.evaluate(&case.gates, &cpu.tables).unwrap();
    assert!(gpu_eval.labels().unwrap() == cpu.active_end);
}

#[test]
fn gpu_kernels_match_the_cpu_reference_level_by_level() {
    let Some(dev) = device() else { return };
    let case = random_case(8, 5000, 1000, 200_000);
    let cpu = cpu_run(&case, 8);
    let aes = AesMaterial::new(cpu.hash_key);
    let s = Scheduler::new(case.num_wires)
        .schedule(&case.gates)
        .unwrap();
    let mut ref_labels = cpu.zero_start.clone();
    let mut ref_tables = vec![Block::ZERO; 2 * s.and_gates as usize];
    reference::garble_window(&aes, &s, &mut ref_labels, cpu.delta, 0, &mut ref_tables);
    let mut garbler =
        GpuGarbler::new(dev.clone(), &cpu.zero_start, cpu.delta, cpu.hash_key).unwrap();
    let mut tables = Vec::new();
    garbler.garble_scheduled(&s, Some(&mut tables)).unwrap();
    assert!(tables == ref_tables);
    assert!(garbler.zero_labels().unwrap() == ref_labels);
}

#[test]
fn seed_scheme_kernel_matches_the_cpu_reference() {
    let Some(dev) = device() else { return };
    let case = random_case(9, 4000, 4000, 50_000);
    let s = Scheduler::new(case.num_wires)
        .schedule(&case.gates)
        .unwrap();
    let mut prg = Prg::from_seed(Block(1));
    let delta = Block(prg.random_block().0 | 1);
    let (label_key, hash_key) = (prg.random_block(), prg.random_block());
    let (_, got) =
        garble_independent(&dev, &s, case.num_wires, label_key, hash_key, delta, true).unwrap();
    let (tables, corrections) = got.unwrap();
    let label_aes = AesMaterial::new(label_key);
    let labels: Vec<Block> = (0..case.num_wires as u64)
        .map(|w| label_aes.encrypt(Block(w as u128)))
        .collect();
    let mut ref_tables = vec![Block::ZERO; 2 * s.and_gates as usize];
    let mut ref_corr = vec![Block::ZERO; s.records.len()];
    reference::garble_independent(
        &AesMaterial::new(hash_key),
        &s,
        &labels,
        delta,
        0,
        &mut ref_tables,
        &mut ref_corr,
    );
    assert!(tables == ref_tables);
    assert!(corrections == ref_corr);
}

#[test]
fn wrong_table_count_is_an_error_not_a_crash() {
    let Some(dev) = device() else { return };
    let case = random_case(2, 32, 8, 100);
    let cpu = cpu_run(&case, 2);
    let mut e = GpuEvaluator::new(dev, &cpu.active_start, cpu.hash_key).unwrap();
    let err = e.evaluate(&case.gates, &cpu.tables[1..]).unwrap_err();
    assert!(matches!(err, GpuError::TableCount { .. }), "{err}");
}
