//! Garbling then evaluating must agree with cleartext evaluation on every wire, whatever
//! the gate order, slot reuse and call boundaries.

use pgc_circuit::{Gate, Op, WireId};
use pgc_crypto::{Block, Prg};
use pgc_garble::{Evaluator, GarbleError, Garbler, and_count, random_delta};

/// The cleartext semantics of a gate sequence (the reference for every test).
fn eval_clear(values: &mut [bool], gates: &[Gate]) {
    for g in gates {
        let v = match g.op {
            Op::And => values[g.a as usize] & values[g.b as usize],
            Op::Xor => values[g.a as usize] ^ values[g.b as usize],
            Op::Inv => !values[g.a as usize],
            Op::Copy => values[g.a as usize],
            Op::Const => g.a != 0,
        };
        values[g.out as usize] = v;
    }
}

/// A garbler and an evaluator over the same wires, every wire given a random zero-label
/// and a random value (the evaluator holding the matching label).
struct Pair {
    garbler: Garbler,
    evaluator: Evaluator,
    values: Vec<bool>,
}

impl Pair {
    fn new(prg: &mut Prg, num_wires: usize) -> Pair {
        let delta = random_delta(prg);
        let hash_key = prg.random_block();
        let mut garbler = Garbler::new(num_wires, delta, hash_key);
        let mut evaluator = Evaluator::new(num_wires, hash_key);
        let mut values = Vec::with_capacity(num_wires);
        for w in 0..num_wires as WireId {
            let zero = prg.random_block();
            let v = prg.random_bool();
            garbler.set_zero_label(w, zero);
            evaluator.set_label(w, zero ^ delta.select(v));
            values.push(v);
        }
        Pair {
            garbler,
            evaluator,
            values,
        }
    }

    /// Garbles and evaluates `gates` in one call each; returns the tables.
    fn run(&mut self, gates: &[Gate]) -> Vec<Block> {
        let mut tables = Vec::new();
        self.garbler.garble(gates, &mut tables);
        assert_eq!(tables.len(), 2 * and_count(gates));
        self.evaluator
            .evaluate(gates, &tables)
            .expect("tables fit the gates");
        eval_clear(&mut self.values, gates);
        tables
    }

    /// White-box: every evaluator label is zero-label ⊕ value·Δ, and decoding gives the
    /// cleartext values.
    fn check_all_wires(&self, context: &str) {
        let delta = self.garbler.delta();
        for (w, &v) in self.values.iter().enumerate() {
            let w = w as WireId;
            assert_eq!(
                self.evaluator.label(w),
                self.garbler.zero_label(w) ^ delta.select(v),
                "{context}: wire {w}"
            );
        }
        let wires: Vec<WireId> = (0..self.values.len() as WireId).collect();
        let bits = self.garbler.decoding_bits(&wires);
        assert_eq!(
            self.evaluator.decode(&wires, &bits),
            self.values,
            "{context}: decode"
        );
    }
}

fn below(prg: &mut Prg, n: usize) -> usize {
    (prg.random_u64() % n as u64) as usize
}

/// Random gates over `num_wires` slots: every op, inputs equal to each other or to the
/// output, and runs of ANDs that read the previous gate's output.
fn random_gates(prg: &mut Prg, num_wires: usize, count: usize) -> Vec<Gate> {
    let mut gates: Vec<Gate> = Vec::with_capacity(count);
    let wire = |prg: &mut Prg| below(prg, num_wires) as WireId;
    for _ in 0..count {
        let (a, b, out) = (wire(prg), wire(prg), wire(prg));
        let previous_out = gates.last().map_or(a, |g| g.out);
        let g = match below(prg, 20) {
            0..=5 => Gate::and(a, b, out),
            6..=7 => Gate::and(previous_out, b, out),
            8 => Gate::and(a, a, out),
            9 => Gate::and(a, b, a),
            10..=13 => Gate::xor(a, b, out),
            14 => Gate::xor(previous_out, a, out),
            15 => Gate::inv(a, out),
            16 => Gate::copy(a, out),
            17 => Gate::copy(previous_out, out),
            _ => Gate::constant(prg.random_bool(), out),
        };
        gates.push(g);
    }
    gates
}

#[test]
fn random_circuits_match_cleartext() {
    let mut prg = Prg::from_seed(Block(0x06a7_b1e5));
    for trial in 0..300 {
        let num_wires = 2 + below(&mut prg, 60);
        let count = below(&mut prg, 400);
        let gates = random_gates(&mut prg, num_wires, count);
        let mut pair = Pair::new(&mut prg, num_wires);
        // Split into calls at random points: state must carry over between calls.
        let mut rest = &gates[..];
        while !rest.is_empty() {
            let take = 1 + below(&mut prg, rest.len());
            let (now, later) = rest.split_at(take);
            pair.run(now);
            pair.check_all_wires(&format!("trial {trial}"));
            rest = later;
        }
        assert_eq!(pair.garbler.and_gates_done(), and_count(&gates) as u64);
        assert_eq!(pair.evaluator.and_gates_done(), and_count(&gates) as u64);
    }
}

#[test]
fn large_random_circuits_with_many_slots() {
    // Many slots: long runs of ANDs that do not read each other.
    let mut prg = Prg::from_seed(Block(0xb16));
    for trial in 0..4 {
        let num_wires = 20_000;
        let gates = random_gates(&mut prg, num_wires, 20_000);
        let mut pair = Pair::new(&mut prg, num_wires);
        pair.run(&gates);
        pair.check_all_wires(&format!("trial {trial}"));
    }
}

/// Layers of `width` ANDs and `width` other gates, interleaved, reading only the previous
/// layer and writing a ring of slots (what a levelized circuit looks like).
fn layered_gates(prg: &mut Prg, width: usize, layers: usize, ring_layers: usize) -> Vec<Gate> {
    let per_layer = 2 * width;
    let base = |layer: usize| ((layer % ring_layers) * per_layer) as WireId;
    let mut gates = Vec::new();
    for layer in 1..=layers {
        let (prev, cur) = (base(layer - 1), base(layer));
        let input = |prg: &mut Prg| prev + below(prg, per_layer) as WireId;
        for k in 0..width as WireId {
            let (a, b) = (input(prg), input(prg));
            gates.push(Gate::and(a, b, cur + 2 * k));
            let (c, d) = (input(prg), input(prg));
            gates.push(match below(prg, 8) {
                0 => Gate::inv(c, cur + 2 * k + 1),
                1 => Gate::copy(c, cur + 2 * k + 1),
                2 => Gate::constant(prg.random_bool(), cur + 2 * k + 1),
                _ => Gate::xor(c, d, cur + 2 * k + 1),
            });
        }
    }
    gates
}

#[test]
fn layered_circuits_match_cleartext() {
    let mut prg = Prg::from_seed(Block(0x1a7e));
    // Odd, so that layers and the calls below do not line up.
    let width = 771;
    let ring_layers = 3;
    let gates = layered_gates(&mut prg, width, 7, ring_layers);
    let mut pair = Pair::new(&mut prg, 2 * width * ring_layers);
    for chunk in gates.chunks(1000) {
        pair.run(chunk);
    }
    pair.check_all_wires("layered");
    assert_eq!(pair.garbler.and_gates_done(), (7 * width) as u64);
}

#[test]
fn tables_do_not_depend_on_call_boundaries() {
    // The AND counter carries across calls, so one call or many give the same tables.
    let mut prg = Prg::from_seed(Block(0xca11));
    let gates = random_gates(&mut prg, 300, 3000);
    let seed = prg.random_block();
    let mut whole = Pair::new(&mut Prg::from_seed(seed), 300);
    let mut split = Pair::new(&mut Prg::from_seed(seed), 300);
    let one_call = whole.run(&gates);
    let mut many_calls = Vec::new();
    for chunk in gates.chunks(7) {
        many_calls.extend(split.run(chunk));
    }
    assert_eq!(one_call, many_calls);
    split.check_all_wires("split");
}

#[test]
fn ordering_between_ands_and_other_gates() {
    let cases: Vec<(&str, Vec<Gate>)> = vec![
        (
            "AND reads the previous AND",
            vec![Gate::and(0, 1, 2), Gate::and(2, 1, 3), Gate::and(3, 2, 3)],
        ),
        (
            "XOR overwrites an AND's output",
            vec![Gate::and(0, 1, 2), Gate::xor(3, 4, 2), Gate::and(2, 0, 5)],
        ),
        (
            "two ANDs write one wire",
            vec![Gate::and(0, 1, 2), Gate::and(3, 4, 2), Gate::xor(2, 0, 6)],
        ),
        (
            "XOR overwrites an AND's input",
            vec![Gate::and(0, 1, 2), Gate::xor(3, 4, 0), Gate::and(0, 2, 7)],
        ),
        (
            "constant overwrites an AND's output",
            vec![
                Gate::and(0, 1, 2),
                Gate::constant(true, 2),
                Gate::and(2, 2, 3),
            ],
        ),
        (
            "INV and copy read an AND's output",
            vec![
                Gate::and(0, 1, 2),
                Gate::inv(2, 3),
                Gate::copy(2, 4),
                Gate::and(3, 4, 5),
            ],
        ),
        (
            "AND writes its own input",
            vec![Gate::and(0, 1, 0), Gate::and(0, 1, 1), Gate::xor(0, 1, 2)],
        ),
    ];
    let mut prg = Prg::from_seed(Block(0x4a2a4d));
    for (name, gates) in cases {
        for _ in 0..8 {
            let mut pair = Pair::new(&mut prg, 8);
            pair.run(&gates);
            pair.check_all_wires(name);
        }
    }
}

#[test]
fn constants_use_public_label_zero() {
    let mut prg = Prg::from_seed(Block(3));
    let mut pair = Pair::new(&mut prg, 4);
    pair.run(&[
        Gate::constant(false, 0),
        Gate::constant(true, 1),
        Gate::and(0, 1, 2),
        Gate::and(1, 1, 3),
    ]);
    let delta = pair.garbler.delta();
    assert_eq!(pair.evaluator.label(0), Block::ZERO);
    assert_eq!(pair.evaluator.label(1), Block::ZERO);
    assert_eq!(pair.garbler.zero_label(0), Block::ZERO);
    assert_eq!(pair.garbler.zero_label(1), delta);
    pair.check_all_wires("constants");
    assert_eq!(pair.values, vec![false, true, false, true]);
}

#[test]
fn wrong_table_count_is_an_error() {
    let gates = [Gate::and(0, 1, 2), Gate::xor(2, 0, 3), Gate::and(3, 1, 0)];
    let mut prg = Prg::from_seed(Block(11));
    let key = prg.random_block();
    let mut garbler = Garbler::new(4, random_delta(&mut prg), key);
    let mut tables = Vec::new();
    garbler.garble(&gates, &mut tables);
    assert_eq!(tables.len(), 4);
    for bad in [0usize, 1, 3, 5, 8] {
        let mut evaluator = Evaluator::new(4, key);
        let mut wrong = tables.clone();
        wrong.resize(bad, Block::ONES);
        let err = evaluator.evaluate(&gates, &wrong).unwrap_err();
        assert_eq!(
            err,
            GarbleError::TableCountMismatch {
                and_gates: 2,
                expected: 4,
                got: bad
            }
        );
        assert!(err.to_string().contains("need 4"), "{err}");
    }
    // No ANDs: tables must be empty.
    let mut evaluator = Evaluator::new(4, key);
    assert!(
        evaluator
            .evaluate(&[Gate::xor(0, 1, 2)], &[Block::ZERO])
            .is_err()
    );
    assert!(evaluator.evaluate(&[Gate::xor(0, 1, 2)], &[]).is_ok());
}

#[test]
fn out_of_range_wires_are_an_error_for_the_evaluator() {
    let mut evaluator = Evaluator::new(4, Block(5));
    let gates = [Gate::xor(0, 1, 2), Gate::inv(9, 3)];
    let err = evaluator.evaluate(&gates, &[]).unwrap_err();
    assert_eq!(
        err,
        GarbleError::WireOutOfRange {
            gate_index: 1,
            op: "INV",
            wire: 9,
            num_wires: 4
        }
    );
    // A constant's bit field is not a wire.
    assert!(evaluator.evaluate(&[Gate::constant(true, 3)], &[]).is_ok());
    assert!(evaluator.evaluate(&[Gate::constant(true, 4)], &[]).is_err());
}

#[test]
#[should_panic(expected = "out of bounds")]
fn out_of_range_wires_panic_in_the_garbler() {
    Garbler::new(2, Block(1), Block(5)).garble(&[Gate::and(0, 1, 2)], &mut Vec::new());
}

#[test]
#[should_panic(expected = "lsb 1")]
fn delta_with_lsb_zero_is_refused() {
    Garbler::new(2, Block(2), Block(5));
}

#[test]
fn decoding_bits_are_zero_label_lsbs() {
    let mut prg = Prg::from_seed(Block(21));
    let mut pair = Pair::new(&mut prg, 16);
    let gates = random_gates(&mut prg, 16, 200);
    pair.run(&gates);
    let wires: Vec<WireId> = vec![3, 0, 15, 3];
    let bits = pair.garbler.decoding_bits(&wires);
    for (&w, &bit) in wires.iter().zip(&bits) {
        assert_eq!(bit, pair.garbler.zero_label(w).lsb());
    }
    let expect: Vec<bool> = wires.iter().map(|&w| pair.values[w as usize]).collect();
    assert_eq!(pair.evaluator.decode(&wires, &bits), expect);
    // Flipped decoding bits flip the outputs.
    let flipped: Vec<bool> = bits.iter().map(|b| !b).collect();
    let inverted: Vec<bool> = expect.iter().map(|b| !b).collect();
    assert_eq!(pair.evaluator.decode(&wires, &flipped), inverted);
}

#[test]
fn tables_change_with_delta_and_never_contain_it() {
    let mut prg = Prg::from_seed(Block(0xde17a));
    let gates = layered_gates(&mut prg, 64, 6, 2);
    let num_wires = 2 * 64 * 2;
    let labels: Vec<Block> = (0..num_wires).map(|_| prg.random_block()).collect();
    let key = prg.random_block();
    let garble_with = |delta: Block| {
        let mut garbler = Garbler::new(num_wires, delta, key);
        for (w, &l) in labels.iter().enumerate() {
            garbler.set_zero_label(w as WireId, l);
        }
        let mut tables = Vec::new();
        garbler.garble(&gates, &mut tables);
        tables
    };
    let (d1, d2) = (random_delta(&mut prg), random_delta(&mut prg));
    assert!(d1.lsb() && d2.lsb());
    let (t1, t2) = (garble_with(d1), garble_with(d2));
    assert_eq!(t1.len(), t2.len());
    assert_ne!(t1, t2);
    // Not even one row may coincide by accident for honest random labels.
    assert!(t1.iter().zip(&t2).all(|(a, b)| a != b));
    assert!(!t1.contains(&d1) && !t2.contains(&d2));
}

#[test]
fn and_count_counts_ands_only() {
    let gates = [
        Gate::and(0, 1, 2),
        Gate::xor(0, 1, 2),
        Gate::inv(0, 1),
        Gate::copy(0, 1),
        Gate::constant(true, 1),
        Gate::and(2, 2, 2),
    ];
    assert_eq!(and_count(&gates), 2);
    assert_eq!(and_count(&[]), 0);
}

#[test]
fn evaluation_needs_the_garblers_hash_key() {
    let mut prg = Prg::from_seed(Block(0x4e7));
    let gates = random_gates(&mut prg, 50, 400);
    let mut pair = Pair::new(&mut prg, 50);
    // An evaluator holding the same labels, with another hash key.
    let mut stranger = Evaluator::new(50, prg.random_block());
    for w in 0..50 {
        stranger.set_label(w, pair.evaluator.label(w));
    }
    let tables = pair.run(&gates);
    pair.check_all_wires("right key");
    stranger.evaluate(&gates, &tables).expect("tables fit");
    let wrong = (0..50)
        .filter(|&w| stranger.label(w) != pair.evaluator.label(w))
        .count();
    assert!(wrong > 0, "a wrong key must change the AND outputs");
}
