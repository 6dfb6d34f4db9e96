//! What the parallel-protocol tests and the cluster tests share: a circuit with two
//! parallel regions between sequential phases, and random inputs for it.

use pgc_circuit::blocks::{add, lt_unsigned, mul, mux_word};
use pgc_circuit::generate::SplitMix64;
use pgc_circuit::{NetBuilder, OptimizeFor, ParallelCircuit};

/// A's n values, B's n values: a region of products, their sum, a second region of sums
/// and the minimum: sequential → parallel → sequential, twice.
pub fn mixed_circuit(n: usize, w: u32) -> ParallelCircuit {
    let mut g = NetBuilder::new(OptimizeFor::Size);
    let a: Vec<_> = (0..n).map(|_| g.input(w)).collect();
    let b: Vec<_> = (0..n).map(|_| g.input(w)).collect();
    g.begin_region(1);
    let mut products = Vec::new();
    for i in 0..n {
        if i > 0 {
            g.next_instance();
        }
        products.push(mul(&mut g, &a[i], &b[i]));
    }
    assert!(g.end_region());
    let mut dot = products[0].clone();
    for p in &products[1..] {
        dot = add(&mut g, &dot, p);
    }
    g.output(&dot);
    g.begin_region(2);
    let mut sums = Vec::new();
    for i in 0..n {
        if i > 0 {
            g.next_instance();
        }
        let t = add(&mut g, &a[i], &dot);
        sums.push(mul(&mut g, &t, &b[i]));
    }
    assert!(g.end_region());
    let mut best = sums[0].clone();
    for s in &sums[1..] {
        let lt = lt_unsigned(&mut g, s, &best);
        best = mux_word(&mut g, lt, s, &best);
    }
    g.output(&best);
    let prepared = g.prepare().unwrap();
    let spans = prepared.region_spans().to_vec();
    let (c, _) = prepared.into_circuit().unwrap();
    ParallelCircuit::from_flat(&c, &spans).unwrap()
}

/// `n` random values of `w` bits.
pub fn random_inputs(rng: &mut SplitMix64, n: usize, w: u32) -> Vec<Vec<bool>> {
    (0..n)
        .map(|_| (0..w).map(|_| rng.next_bool()).collect())
        .collect()
}
