//! Parallel regions: recording in the builder, splitting into templates, and flattening
//! back give the same function as the plain circuit.

use pgc_circuit::blocks::{add, lt_unsigned, mul, mux_word};
use pgc_circuit::generate::SplitMix64;
use pgc_circuit::{GateSource, Gates, NetBuilder, OptimizeFor, ParallelCircuit, Phase, eval_bits};

/// dot = Σ a[i]·b[i] with the products in a region, plus a min over a second region of
/// (a[i] + b[i]) whose reduction is sequential.
fn build(
    n: usize,
    w: u32,
    dependent_second: bool,
) -> (pgc_circuit::Circuit, Vec<pgc_circuit::RegionSpan>, bool) {
    let mut g = NetBuilder::new(OptimizeFor::Size);
    let a: Vec<_> = (0..n).map(|_| g.input(w)).collect();
    let b: Vec<_> = (0..n).map(|_| g.input(w)).collect();
    assert!(g.begin_region(10));
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
    assert!(g.begin_region(20));
    let mut running = a[0].clone();
    let mut sums = Vec::new();
    for i in 0..n {
        if i > 0 {
            g.next_instance();
        }
        let s = add(&mut g, &a[i], &b[i]);
        // A carried dependence: each instance adds the previous instance's sum.
        if dependent_second {
            running = add(&mut g, &running, &s);
        }
        sums.push(s);
    }
    let independent = g.end_region();
    let mut best = sums[0].clone();
    for s in &sums[1..] {
        let lt = lt_unsigned(&mut g, s, &best);
        best = mux_word(&mut g, lt, s, &best);
    }
    g.output(&best);
    g.output(&running);
    let prepared = g.prepare().unwrap();
    let spans = prepared.region_spans().to_vec();
    let (c, _) = prepared.into_circuit().unwrap();
    (c, spans, independent)
}

fn random_bits(rng: &mut SplitMix64, n: usize) -> Vec<bool> {
    (0..n).map(|_| rng.next_bool()).collect()
}

#[test]
fn regions_split_into_one_template_and_flatten_back() {
    let (c, spans, independent) = build(6, 8, false);
    assert!(independent);
    assert_eq!(spans.len(), 2);
    let pc = ParallelCircuit::from_flat(&c, &spans).unwrap();
    let info = pc.region_info();
    assert_eq!(info.len(), 2);
    assert_eq!(info[0].instances, 6);
    assert_eq!(
        info[0].templates, 1,
        "identical instances share one template"
    );
    assert_eq!(info[0].line, 10);
    // Instances differ only in which results the code after the region needs (and in
    // which polarity): they still share one template per region.
    assert!(info.iter().all(|r| r.templates == 1), "{info:?}");
    assert_eq!(pc.templates.len(), 2);
    assert_eq!(pc.and_count(), c.and_count());
    assert_eq!(pc.gate_count(), c.gates.len() as u64);
    let flat = pc.flatten();
    let mut rng = SplitMix64::new(7);
    for _ in 0..20 {
        let x = random_bits(&mut rng, c.layout.num_input_wires() as usize);
        assert_eq!(eval_bits(&c, &x), eval_bits(&flat, &x));
        assert_eq!(eval_bits(&c, &x), eval_bits(&pc, &x));
    }
    // The phases alternate as built: inputs' region, the sum, the second region, the min.
    assert!(matches!(pc.phases[0], Phase::Region(_)));
}

#[test]
fn a_carried_dependence_is_detected_and_stays_sequential() {
    let (c, spans, independent) = build(4, 6, true);
    assert!(!independent);
    assert_eq!(spans.len(), 1, "only the independent region is kept");
    let pc = ParallelCircuit::from_flat(&c, &spans).unwrap();
    let mut rng = SplitMix64::new(8);
    for _ in 0..10 {
        let x = random_bits(&mut rng, c.layout.num_input_wires() as usize);
        assert_eq!(eval_bits(&c, &x), eval_bits(&pc, &x));
    }
}

#[test]
fn from_flat_rejects_a_span_whose_instances_depend_on_each_other() {
    let (c, _, _) = build(4, 6, true);
    // Claim the whole circuit's gates are two instances: the second reads the first.
    let half = c.gates.len() / 2;
    let span = pgc_circuit::RegionSpan {
        line: 3,
        bounds: vec![0, half, c.gates.len()],
    };
    let err = ParallelCircuit::from_flat(&c, &[span]).unwrap_err();
    assert!(err.to_string().contains("line 3"), "{err}");
}

#[test]
fn gates_shared_by_strash_are_not_shared_across_instances() {
    let mut g = NetBuilder::new(OptimizeFor::Size);
    let x = g.input(1)[0];
    let y = g.input(1)[0];
    assert!(g.begin_region(1));
    let mut outs = Vec::new();
    for i in 0..3 {
        if i > 0 {
            g.next_instance();
        }
        // The same AND in every instance: strash would merge it into one gate.
        let t = g.and(x, y);
        outs.push(g.xor(t, x));
    }
    assert!(g.end_region());
    for o in &outs {
        g.output(&[*o]);
    }
    let prepared = g.prepare().unwrap();
    let spans = prepared.region_spans().to_vec();
    let (c, _) = prepared.into_circuit().unwrap();
    assert_eq!(c.and_count(), 3);
    let pc = ParallelCircuit::from_flat(&c, &spans).unwrap();
    assert_eq!(pc.region_info()[0].instances, 3);
}

/// The fingerprint as first defined: one hash update per field. Gathering the instance
/// wires into larger updates must not change it (both parties compare it at the handshake,
/// also across pgc versions of one protocol version).
fn fingerprint_field_by_field(pc: &ParallelCircuit) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"pgc parallel circuit v1\0");
    h.update(&pc.layout.to_bytes());
    h.update(&(pc.templates.len() as u64).to_le_bytes());
    for t in &pc.templates {
        h.update(&t.num_inputs.to_le_bytes());
        h.update(&(t.gates.len() as u64).to_le_bytes());
        pgc_circuit::ir::hash_gates(&mut h, &t.gates);
        h.update(&(t.outputs.len() as u64).to_le_bytes());
        for w in &t.outputs {
            h.update(&w.to_le_bytes());
        }
    }
    h.update(&(pc.phases.len() as u64).to_le_bytes());
    for p in &pc.phases {
        match p {
            Phase::Sequential(gates) => {
                h.update(&[0]);
                h.update(&(gates.len() as u64).to_le_bytes());
                pgc_circuit::ir::hash_gates(&mut h, gates);
            }
            Phase::Region(r) => {
                h.update(&[1]);
                h.update(&r.line.to_le_bytes());
                h.update(&(r.instances.len() as u64).to_le_bytes());
                for i in &r.instances {
                    h.update(&i.template.to_le_bytes());
                    for w in i.inputs.iter().chain(&i.outputs) {
                        h.update(&w.to_le_bytes());
                    }
                }
            }
        }
    }
    *h.finalize().as_bytes()
}

#[test]
fn the_fingerprint_is_the_field_by_field_hash() {
    // 400 instances of 32 input and 16 output wires (4 bytes each, 76.8 KB): more than
    // one 64 KiB gathering buffer.
    for n in [1, 6, 400] {
        let (c, spans, _) = build(n, 16, false);
        let pc = ParallelCircuit::from_flat(&c, &spans).unwrap();
        assert_eq!(
            pc.fingerprint(),
            fingerprint_field_by_field(&pc),
            "{n} instances"
        );
    }
}
