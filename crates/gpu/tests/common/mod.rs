//! Random circuits with reused wire slots, and the CPU engine's results on them.

#![allow(dead_code)]

use pgc_circuit::{Gate, Op};
use pgc_crypto::{Block, Prg};
use pgc_garble::{Evaluator, Garbler, random_delta};

pub struct Case {
    pub num_wires: usize,
    pub inputs: usize,
    pub gates: Vec<Gate>,
}

/// `n` random gates over `num_wires` slots, the first `inputs` of them set up front; any
/// slot may be overwritten later, so all three hazards occur.
pub fn random_case(seed: u64, num_wires: usize, inputs: usize, n: usize) -> Case {
    let mut prg = Prg::from_seed(Block(seed as u128 ^ 0x5eed));
    let mut pick = |m: usize| (prg.random_block().0 % m as u128) as u32;
    let mut gates = Vec::with_capacity(n);
    for _ in 0..n {
        let kind = pick(10);
        let (a, b, out) = (pick(num_wires), pick(num_wires), pick(num_wires));
        gates.push(match kind {
            0..=3 => Gate::and(a, b, out),
            4..=6 => Gate::xor(a, b, out),
            7 => Gate::inv(a, out),
            8 => Gate::copy(a, out),
            _ => Gate {
                op: Op::Const,
                a: pick(2),
                b: 0,
                out,
            },
        });
    }
    Case {
        num_wires,
        inputs,
        gates,
    }
}

/// What the CPU engine gives: Δ, hash key, initial zero-labels, the input bits' active
/// labels, the tables, the final zero-labels and the evaluator's final labels.
pub struct CpuRun {
    pub delta: Block,
    pub hash_key: Block,
    pub zero_start: Vec<Block>,
    pub active_start: Vec<Block>,
    pub tables: Vec<Block>,
    pub zero_end: Vec<Block>,
    pub active_end: Vec<Block>,
}

pub fn cpu_run(case: &Case, seed: u64) -> CpuRun {
    let mut prg = Prg::from_seed(Block(seed as u128 ^ 0xabcdef));
    let delta = random_delta(&mut prg);
    let hash_key = prg.random_block();
    let mut garbler = Garbler::new(case.num_wires, delta, hash_key);
    let mut evaluator = Evaluator::new(case.num_wires, hash_key);
    let mut zero_start = vec![Block::ZERO; case.num_wires];
    let mut active_start = vec![Block::ZERO; case.num_wires];
    for w in 0..case.inputs {
        let z = prg.random_block();
        let bit = prg.random_bool();
        zero_start[w] = z;
        active_start[w] = z ^ delta.select(bit);
        garbler.set_zero_label(w as u32, z);
        evaluator.set_label(w as u32, active_start[w]);
    }
    let mut tables = Vec::new();
    garbler.garble(&case.gates, &mut tables);
    evaluator.evaluate(&case.gates, &tables).unwrap();
    let zero_end = (0..case.num_wires as u32)
        .map(|w| garbler.zero_label(w))
        .collect();
    let active_end = (0..case.num_wires as u32)
        .map(|w| evaluator.label(w))
        .collect();
    CpuRun {
        delta,
        hash_key,
        zero_start,
        active_start,
        tables,
        zero_end,
        active_end,
    }
}

/// Cuts `0..n` into windows of the given sizes (cycled), the last one whatever is left.
pub fn windows(n: usize, sizes: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut at, mut k) = (0, 0);
    while at < n {
        let size = sizes[k % sizes.len()].max(1);
        out.push(at..(at + size).min(n));
        at += size;
        k += 1;
    }
    out
}
