//! Shared harness for the block tests: build a circuit from a block with NetBuilder, then
//! evaluate it on many cases (64 at a time, bit-sliced) against a reference function.

#![allow(dead_code)]

use pgc_circuit::analysis::{stats, validate_ssa};
use pgc_circuit::eval::eval_bitsliced;
use pgc_circuit::generate::SplitMix64;
use pgc_circuit::ir::Circuit;
use pgc_circuit::netlist::{Lit, NetBuilder, OptimizeFor};

pub const MODES: [OptimizeFor; 2] = [OptimizeFor::Size, OptimizeFor::Depth];

pub fn mask(n: u32) -> u128 {
    if n >= 128 {
        u128::MAX
    } else {
        (1u128 << n) - 1
    }
}

/// Sign-extends the low `n` bits of `x`.
pub fn sext(x: u128, n: u32) -> i128 {
    let shift = 128 - n;
    ((x << shift) as i128) >> shift
}

/// A circuit with inputs of the given widths and one output value per returned word.
pub fn build(
    mode: OptimizeFor,
    widths: &[u32],
    f: impl FnOnce(&mut NetBuilder, &[Vec<Lit>]) -> Vec<Vec<Lit>>,
) -> Circuit {
    let mut g = NetBuilder::new(mode);
    let inputs: Vec<Vec<Lit>> = widths.iter().map(|&w| g.input(w)).collect();
    for out in f(&mut g, &inputs) {
        g.output(&out);
    }
    let (c, _) = g.finish();
    validate_ssa(&c).expect("valid circuit");
    c
}

/// Output values (up to 128 bits each) for each case (one value per input).
pub fn eval_cases(c: &Circuit, cases: &[Vec<u128>]) -> Vec<Vec<u128>> {
    let widths = &c.layout.input_widths;
    let mut results = Vec::with_capacity(cases.len());
    for batch in cases.chunks(64) {
        let mut lanes = Vec::with_capacity(c.layout.num_input_wires() as usize);
        for (i, &w) in widths.iter().enumerate() {
            for bit in 0..w {
                let mut word = 0u64;
                for (k, case) in batch.iter().enumerate() {
                    word |= (((case[i] >> bit) & 1) as u64) << k;
                }
                lanes.push(word);
            }
        }
        let out = eval_bitsliced(c, &lanes);
        for k in 0..batch.len() {
            let mut values = Vec::new();
            let mut pos = 0;
            for &w in &c.layout.output_widths {
                let mut v = 0u128;
                for bit in 0..w as usize {
                    v |= (((out[pos + bit] >> k) & 1) as u128) << bit;
                }
                values.push(v);
                pos += w as usize;
            }
            results.push(values);
        }
    }
    results
}

/// Checks `c` on every case against `reference`.
pub fn check(
    what: &str,
    c: &Circuit,
    cases: &[Vec<u128>],
    reference: impl Fn(&[u128]) -> Vec<u128>,
) {
    let got = eval_cases(c, cases);
    for (case, out) in cases.iter().zip(&got) {
        let want = reference(case);
        assert_eq!(out, &want, "{what}: inputs {case:x?}");
    }
}

/// All pairs of `n`-bit values.
pub fn all_pairs(n: u32) -> Vec<Vec<u128>> {
    let m = 1u128 << n;
    (0..m)
        .flat_map(|a| (0..m).map(move |b| vec![a, b]))
        .collect()
}

/// Random pairs of `n`-bit values, with edge values mixed in.
pub fn random_pairs(n: u32, count: usize, seed: u64) -> Vec<Vec<u128>> {
    let mut rng = SplitMix64::new(seed);
    let m = mask(n);
    let edges = [0, 1, 2, 3, m, m - 1, m >> 1, (m >> 1) + 1, 10, 7];
    let mut cases = Vec::with_capacity(count + edges.len() * edges.len());
    for &a in &edges {
        for &b in &edges {
            cases.push(vec![a & m, b & m]);
        }
    }
    for _ in 0..count {
        let (mut a, mut b) = (rng.next_u64() as u128 & m, rng.next_u64() as u128 & m);
        // Small divisors and shift amounts are the interesting ones too.
        match rng.below(4) {
            0 => b >>= rng.below(n),
            1 => a >>= rng.below(n),
            _ => {}
        }
        cases.push(vec![a, b]);
    }
    cases
}

/// (ANDs, AND depth) of a circuit.
pub fn cost(c: &Circuit) -> (u64, u64) {
    let s = stats(c);
    (s.and_gates, s.and_depth)
}
