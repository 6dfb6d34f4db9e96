//! Parallel garbling figures (paper Fig. 5 and single-thread overhead), offline: tables are
//! computed into each thread's buffer and dropped.
//!
//! 1. Overhead: a layered circuit (4096 ANDs + 4096 XORs per layer, 256 layers, single
//!    assignment) garbled by the sequential `Garbler` in 16Ki-gate calls versus
//!    `parallel::garble` with a `Mode::None` plan on one thread, both timed from the
//!    allocation of the label array to the last gate; best of `runs`.
//! 2. FGP level width: for widths 2^4..2^10, depth 1000, only ANDs (random wiring to the
//!    layer before), garbling time on each thread count with `Mode::Fgp` and τ = 1 (every
//!    level split), and the efficiency t₁ / (T · t_T).
//!
//! `cargo run --release -p pgc-garble --example parallel_speed [runs] [threads,...]`

use std::time::Instant;

use pgc_circuit::generate::SplitMix64;
use pgc_circuit::{Circuit, Gate, GateSource, Layout, ParallelCircuit, WireId};
use pgc_crypto::{Block, Prg};
use pgc_garble::parallel::{self, Mode, Plan};
use pgc_garble::{Garbler, random_delta};

/// `depth` layers of `width` ANDs (and `width` XORs if `xors`), each gate reading two
/// random wires of the layer before; single assignment.
fn layered(width: u32, depth: u32, xors: bool, seed: u64) -> Circuit {
    let mut rng = SplitMix64::new(seed);
    let per_layer = if xors { 2 * width } else { width };
    let mut gates = Vec::with_capacity((depth * per_layer) as usize);
    let (mut prev, mut prev_len) = (0u32, 2 * width);
    let mut next = 2 * width;
    for _ in 0..depth {
        let start = next;
        for k in 0..per_layer {
            let (a, b) = (prev + rng.below(prev_len), prev + rng.below(prev_len));
            gates.push(if k < width {
                Gate::and(a, b, next)
            } else {
                Gate::xor(a, b, next)
            });
            next += 1;
        }
        (prev, prev_len) = (start, per_layer);
    }
    Circuit {
        layout: Layout {
            num_wires: next,
            input_widths: vec![width, width],
            output_widths: vec![width.min(64)],
            output_wires: (next - width.min(64)..next).collect(),
        },
        gates,
    }
}

fn best_of(runs: usize, mut f: impl FnMut() -> f64) -> f64 {
    (0..runs).map(|_| f()).fold(f64::INFINITY, f64::min)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    let threads: Vec<usize> = args
        .next()
        .map(|s| s.split(',').filter_map(|t| t.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2]);

    // 1. Single-thread overhead.
    let c = layered(4096, 256, true, 1);
    let pc = ParallelCircuit::sequential(&c).expect("single assignment");
    let ands = pc.and_count();
    // The whole job on both sides: label array, inputs, gates (`parallel::garble` allocates
    // its labels too).
    let sequential_once = || {
        let mut prg = Prg::from_seed(Block(7));
        let (delta, key) = (random_delta(&mut prg), prg.random_block());
        let mut inputs = vec![Block::ZERO; c.layout.num_input_wires() as usize];
        prg.fill_blocks(&mut inputs);
        let start = Instant::now();
        let mut garbler = Garbler::new(c.layout.num_wires as usize, delta, key);
        for (w, &label) in inputs.iter().enumerate() {
            garbler.set_zero_label(w as WireId, label);
        }
        let mut tables = Vec::with_capacity(1 << 16);
        for chunk in c.gates.chunks(1 << 14) {
            tables.clear();
            garbler.garble(chunk, &mut tables);
            std::hint::black_box(&tables);
        }
        std::hint::black_box(garbler.zero_label(c.layout.output_wires[0]));
        start.elapsed().as_secs_f64()
    };
    let plan = Plan::new(&pc, 1, Mode::None, parallel::DEFAULT_TAU);
    // Alternating runs, best of each: the machine's load drifts.
    let (mut sequential, mut planned) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..runs.max(5) {
        sequential = sequential.min(sequential_once());
        planned = planned.min(parallel::garble_offline(&plan, &pc).seconds);
    }
    println!(
        "overhead: {ands} ANDs, Garbler {:.1} M AND/s, Mode::None 1 thread {:.1} M AND/s ({:+.1}%)",
        ands as f64 / sequential / 1e6,
        ands as f64 / planned / 1e6,
        100.0 * (planned / sequential - 1.0)
    );

    // 2. FGP efficiency over level widths.
    print!("{:>6}", "width");
    for &t in &threads {
        print!(" {:>17}", format!("{t} thr M AND/s eff"));
    }
    println!();
    for log in 4..=10 {
        let width = 1u32 << log;
        let pc = ParallelCircuit::sequential(&layered(width, 1000, false, log as u64))
            .expect("single assignment");
        let single = Plan::new(&pc, 1, Mode::None, 1);
        let t1 = best_of(runs, || parallel::garble_offline(&single, &pc).seconds);
        print!("{width:>6}");
        for &t in &threads {
            let plan = Plan::new(&pc, t, Mode::Fgp, 1);
            let tt = best_of(runs, || parallel::garble_offline(&plan, &pc).seconds);
            let rate = (width as f64 * 1000.0) / tt / 1e6;
            print!(" {:>11.1} {:>5.2}", rate, t1 / (t as f64 * tt));
        }
        println!();
    }
}
