//! Three-halves garbling then evaluating must agree with cleartext evaluation on every
//! wire, whatever the gate order, slot reuse and call boundaries; tables are 1.5κ + 5 bits
//! per AND on the wire.

use pgc_circuit::{Gate, Op, WireId};
use pgc_crypto::{Block, Prg};
use pgc_garble::three_halves::{Evaluator, Garbler, Tables, packed_bytes};
use pgc_garble::{GarbleError, and_count, random_delta};

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

struct Pair {
    garbler: Garbler,
    evaluator: Evaluator,
    delta: Block,
    values: Vec<bool>,
}

impl Pair {
    fn new(prg: &mut Prg, num_wires: usize) -> Pair {
        let delta = random_delta(prg);
        let hash_key = prg.random_block();
        let mut garbler = Garbler::new(
            num_wires,
            delta,
            hash_key,
            Prg::from_seed(prg.random_block()),
        );
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
            delta,
            values,
        }
    }

    /// Garbles, sends through the wire form, evaluates.
    fn run(&mut self, gates: &[Gate]) {
        let mut tables = Tables::default();
        self.garbler.garble(gates, &mut tables);
        let mut bytes = Vec::new();
        tables.pack(&mut bytes);
        assert_eq!(bytes.len(), packed_bytes(and_count(gates)));
        let mut received = Tables::default();
        assert_eq!(received.unpack_append(&bytes), Some(and_count(gates)));
        self.evaluator
            .evaluate(gates, (&received).into())
            .expect("tables fit the gates");
        eval_clear(&mut self.values, gates);
    }

    fn check_all_wires(&self, context: &str) {
        for (w, &v) in self.values.iter().enumerate() {
            let w = w as WireId;
            assert_eq!(
                self.evaluator.label(w),
                self.garbler.zero_label(w) ^ self.delta.select(v),
                "{context}: wire {w}"
            );
        }
        let wires: Vec<WireId> = (0..self.values.len() as WireId).collect();
        let bits = self.garbler.decoding_bits(&wires);
        assert_eq!(
            self.evaluator.decode(&wires, &bits),
            self.values,
            "{context}"
        );
    }
}

fn below(prg: &mut Prg, n: usize) -> usize {
    (prg.random_u64() % n as u64) as usize
}

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
    let mut prg = Prg::from_seed(Block(0x3_4a1f));
    for trial in 0..200 {
        let num_wires = 2 + below(&mut prg, 60);
        let count = below(&mut prg, 300);
        let gates = random_gates(&mut prg, num_wires, count);
        let mut pair = Pair::new(&mut prg, num_wires);
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
fn tables_are_one_and_a_half_kappa_plus_five_bits_per_and() {
    let mut prg = Prg::from_seed(Block(5));
    let gates: Vec<Gate> = (0..800)
        .map(|k| Gate::and(k % 7, (k + 3) % 7, 7 + k % 9))
        .collect();
    let mut pair = Pair::new(&mut prg, 16);
    let mut tables = Tables::default();
    pair.garbler.garble(&gates, &mut tables);
    assert_eq!(tables.halves.len(), 3 * 800);
    let mut bytes = Vec::new();
    tables.pack(&mut bytes);
    // 800 ANDs × (3·64 + 5) bits = 19 700 bytes, against 800 × 32 = 25 600 for half-gates.
    assert_eq!(bytes.len(), 800 * (3 * 64 + 5) / 8);
    assert_eq!(packed_bytes(1), 25);
    assert_eq!(packed_bytes(8), 197);
}

#[test]
fn wrong_table_count_and_bad_wires_are_errors() {
    let mut prg = Prg::from_seed(Block(9));
    let mut pair = Pair::new(&mut prg, 4);
    let gates = [Gate::and(0, 1, 2), Gate::and(2, 3, 1)];
    let mut tables = Tables::default();
    pair.garbler.garble(&gates[..1], &mut tables);
    let e = pair
        .evaluator
        .evaluate(&gates, (&tables).into())
        .unwrap_err();
    assert!(
        matches!(e, GarbleError::TableCountMismatch { and_gates: 2, .. }),
        "{e}"
    );
    let e = pair
        .evaluator
        .evaluate(&[Gate::xor(0, 9, 1)], (&Tables::default()).into())
        .unwrap_err();
    assert!(
        matches!(e, GarbleError::WireOutOfRange { wire: 9, .. }),
        "{e}"
    );
}

#[test]
fn same_seed_same_tables_other_seed_other_control_bits() {
    let gates: Vec<Gate> = (0..64)
        .map(|k| Gate::and(k % 5, (k + 1) % 5, 5 + k % 3))
        .collect();
    let garble = |seed: u128| {
        let mut g = Garbler::new(8, Block(0xabc | 1), Block(77), Prg::from_seed(Block(seed)));
        for w in 0..5 {
            g.set_zero_label(w, Block(0x1234_5678 * (w as u128 + 1)));
        }
        let mut t = Tables::default();
        g.garble(&gates, &mut t);
        t
    };
    assert_eq!(garble(1), garble(1));
    assert_ne!(garble(1).control, garble(2).control);
}

#[test]
fn tables_do_not_depend_on_call_boundaries() {
    // Consecutive independent ANDs are hashed in pairs within a call; split into one call
    // per gate, none are: the tables and labels must not change.
    let mut prg = Prg::from_seed(Block(0x5117));
    let gates = random_gates(&mut prg, 40, 2000);
    let garble = |split: bool| {
        let mut g = Garbler::new(40, Block(0xd17a | 1), Block(3), Prg::from_seed(Block(4)));
        for w in 0..40 {
            g.set_zero_label(w, Block(0x9e37_79b9_7f4a_7c15 * (w as u128 + 1)));
        }
        let mut t = Tables::default();
        if split {
            for gate in &gates {
                g.garble(std::slice::from_ref(gate), &mut t);
            }
        } else {
            g.garble(&gates, &mut t);
        }
        let labels: Vec<Block> = (0..40).map(|w| g.zero_label(w)).collect();
        (t, labels)
    };
    assert_eq!(garble(false), garble(true));
}
