//! The wide benchmark circuit shared by `benches/garble.rs` and `examples/garble_speed.rs`.
//!
//! Layers of `WIDTH` ANDs interleaved with `WIDTH` XORs; each gate reads two outputs of the
//! previous layer and writes a ring of `RING_LAYERS` layers of slots, so the gate list of
//! `RING_LAYERS` layers (one *period*) repeats verbatim and the whole circuit is that
//! period garbled again and again.

use pgc_circuit::{Gate, WireId};
use pgc_crypto::{Block, Prg};
use pgc_garble::{Evaluator, Garbler, random_delta};
use std::time::{Duration, Instant};

pub const WIDTH: usize = 4096;
pub const RING_LAYERS: usize = 2;
pub const NUM_WIRES: usize = 2 * WIDTH * RING_LAYERS;
/// Periods per run: 1222 × 2 layers × 4096 = 10,010,624 ANDs.
pub const PERIODS: usize = 1222;

pub fn and_gates_per_run() -> u64 {
    (PERIODS * RING_LAYERS * WIDTH) as u64
}

/// The gates of one period (`RING_LAYERS` layers).
pub fn period_gates() -> Vec<Gate> {
    let per_layer = 2 * WIDTH;
    let spread = |k: usize, mul: usize, add: usize| ((k * mul + add) % per_layer) as WireId;
    let mut gates = Vec::with_capacity(RING_LAYERS * per_layer);
    for layer in 0..RING_LAYERS {
        let prev = (((layer + RING_LAYERS - 1) % RING_LAYERS) * per_layer) as WireId;
        let cur = (layer * per_layer) as WireId;
        for k in 0..WIDTH {
            gates.push(Gate::and(
                prev + spread(k, 37, 11),
                prev + spread(k, 101, 3001),
                cur + k as WireId,
            ));
            gates.push(Gate::xor(
                prev + spread(k, 53, 7),
                prev + spread(k, 197, 999),
                cur + (WIDTH + k) as WireId,
            ));
        }
    }
    gates
}

/// A garbler with random zero-labels and an evaluator holding the labels of all-zero
/// inputs (so the evaluation is a real one).
pub fn fresh_parties(seed: u128) -> (Garbler, Evaluator) {
    let mut prg = Prg::from_seed(Block(seed));
    let delta = random_delta(&mut prg);
    let hash_key = prg.random_block();
    let mut garbler = Garbler::new(NUM_WIRES, delta, hash_key);
    let mut evaluator = Evaluator::new(NUM_WIRES, hash_key);
    for w in 0..NUM_WIRES as WireId {
        let label = prg.random_block();
        garbler.set_zero_label(w, label);
        evaluator.set_label(w, label);
    }
    (garbler, evaluator)
}

/// Garbles and evaluates the whole run, period by period, as a protocol would (the
/// evaluator's tables are fresh in cache, as if just received). Returns the time spent in
/// `garble` and in `evaluate`, each summed over the run.
pub fn run(
    garbler: &mut Garbler,
    evaluator: &mut Evaluator,
    period: &[Gate],
) -> (Duration, Duration) {
    let mut tables = Vec::with_capacity(2 * RING_LAYERS * WIDTH);
    let (mut garbling, mut evaluating) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..PERIODS {
        tables.clear();
        let start = Instant::now();
        garbler.garble(period, &mut tables);
        let mid = Instant::now();
        evaluator
            .evaluate(period, &tables)
            .expect("tables match the circuit");
        evaluating += mid.elapsed();
        garbling += mid - start;
    }
    (garbling, evaluating)
}
