//! Compact circuits: slotting SSA bodies, streaming main slotting, expansion, validation.
//!
//! Random programs with nested templates are checked three ways against a direct
//! recursive SSA interpreter (which never uses slots): the flattened expansion evaluated by
//! `eval_bitsliced`, the `CompactSource` gate stream, and a checking evaluator that knows,
//! for every slot, which SSA value it should hold, and poisons a slot as soon as its value
//! dies.

use pgc_circuit::analysis::{assign_slots, validate};
use pgc_circuit::compact::{
    Call, CompactCircuit, CompactError, CompactSource, Expander, Item, LastUses, MainSlotter,
    Template, compact_stats, fingerprint_parts, hash_items,
};
use pgc_circuit::eval::eval_bitsliced;
use pgc_circuit::generate::SplitMix64;
use pgc_circuit::ir::{CHUNK_GATES, Circuit, Gate, GateSource, Layout, Op, WireId};

// ---------------------------------------------------------------------------------------
// Random SSA programs
// ---------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct SsaTemplate {
    name: String,
    num_inputs: u32,
    num_ssa: u32,
    items: Vec<Item>,
    outputs: Vec<WireId>,
}

#[derive(Clone, Debug)]
struct SsaProgram {
    templates: Vec<SsaTemplate>,
    /// SSA layout: `num_wires` is the SSA wire count.
    layout: Layout,
    main: Vec<Item>,
}

/// A random SSA body over `num_inputs` inputs that may call `callees`. Returns the items,
/// the SSA wire count and the wires defined (inputs first).
fn random_body(
    rng: &mut SplitMix64,
    num_inputs: u32,
    num_items: u32,
    callees: &[SsaTemplate],
    call_percent: u32,
) -> (Vec<Item>, u32, Vec<WireId>) {
    let mut defined: Vec<WireId> = (0..num_inputs).collect();
    let mut next = num_inputs;
    let mut items = Vec::new();
    // Mostly recent wires (chains), sometimes any (long live ranges).
    let pick = |rng: &mut SplitMix64, defined: &[WireId]| -> WireId {
        let n = defined.len() as u32;
        if rng.next_bool() {
            defined[(n - 1 - rng.below(n.min(6))) as usize]
        } else {
            defined[rng.below(n) as usize]
        }
    };
    for _ in 0..num_items {
        if !callees.is_empty() && rng.below(100) < call_percent {
            let u = rng.below(callees.len() as u32);
            let callee = &callees[u as usize];
            if callee.num_inputs > 0 && defined.is_empty() {
                continue;
            }
            let inputs = (0..callee.num_inputs)
                .map(|_| pick(rng, &defined))
                .collect();
            let outputs: Vec<WireId> = (next..next + callee.outputs.len() as u32).collect();
            next += outputs.len() as u32;
            defined.extend_from_slice(&outputs);
            items.push(Item::Call(Box::new(Call {
                template: u,
                inputs,
                outputs,
            })));
            continue;
        }
        let out = next;
        next += 1;
        let g = if defined.is_empty() || rng.below(12) == 0 {
            Gate::constant(rng.next_bool(), out)
        } else {
            let a = pick(rng, &defined);
            let b = pick(rng, &defined);
            match rng.below(8) {
                0..=2 => Gate::xor(a, b, out),
                3..=5 => Gate::and(a, b, out),
                6 => Gate::inv(a, out),
                _ => Gate::copy(a, out),
            }
        };
        defined.push(out);
        items.push(Item::Gate(g));
    }
    (items, next, defined)
}

fn random_program(seed: u64) -> SsaProgram {
    let mut rng = SplitMix64::new(seed);
    let num_templates = rng.below(7);
    let mut templates: Vec<SsaTemplate> = Vec::new();
    for t in 0..num_templates {
        let num_inputs = rng.below(6);
        let num_items = rng.below(25);
        let (items, num_ssa, defined) =
            random_body(&mut rng, num_inputs, num_items, &templates, 25);
        let num_outputs = if defined.is_empty() { 0 } else { rng.below(5) };
        let outputs = (0..num_outputs)
            .map(|_| defined[rng.below(defined.len() as u32) as usize])
            .collect();
        templates.push(SsaTemplate {
            name: format!("f{t}"),
            num_inputs,
            num_ssa,
            items,
            outputs,
        });
    }
    let input_widths: Vec<u32> = (0..1 + rng.below(3)).map(|_| 1 + rng.below(4)).collect();
    let n_in: u32 = input_widths.iter().sum();
    let num_items = rng.below(60);
    let (main, num_ssa, defined) = random_body(&mut rng, n_in, num_items, &templates, 30);
    let output_widths: Vec<u32> = (0..1 + rng.below(3)).map(|_| 1 + rng.below(4)).collect();
    let output_wires = (0..output_widths.iter().sum::<u32>())
        .map(|_| defined[rng.below(defined.len() as u32) as usize])
        .collect();
    SsaProgram {
        templates,
        layout: Layout {
            num_wires: num_ssa,
            input_widths,
            output_widths,
            output_wires,
        },
        main,
    }
}

fn slot_templates(p: &SsaProgram) -> Vec<Template> {
    p.templates
        .iter()
        .map(|t| {
            Template::from_ssa(
                t.name.clone(),
                t.num_inputs,
                t.num_ssa,
                t.items.clone(),
                &t.outputs,
            )
            .unwrap_or_else(|e| panic!("{}: {e}", t.name))
        })
        .collect()
}

fn compile(p: &SsaProgram) -> CompactCircuit {
    CompactCircuit::from_ssa(p.layout.clone(), slot_templates(p), p.main.clone()).unwrap()
}

// ---------------------------------------------------------------------------------------
// The direct SSA interpreter (no slots)
// ---------------------------------------------------------------------------------------

fn gate_value(g: &Gate, v: &[u64]) -> u64 {
    match g.op {
        Op::Xor => v[g.a as usize] ^ v[g.b as usize],
        Op::And => v[g.a as usize] & v[g.b as usize],
        Op::Inv => !v[g.a as usize],
        Op::Copy => v[g.a as usize],
        Op::Const => 0u64.wrapping_sub(g.a as u64),
    }
}

fn run_ssa(p: &SsaProgram, items: &[Item], values: &mut [u64]) {
    for item in items {
        match item {
            Item::Gate(g) => values[g.out as usize] = gate_value(g, values),
            Item::Call(c) => {
                let inputs: Vec<u64> = c.inputs.iter().map(|&w| values[w as usize]).collect();
                let outputs = call_ssa(p, c.template, &inputs);
                for (&w, v) in c.outputs.iter().zip(outputs) {
                    values[w as usize] = v;
                }
            }
        }
    }
}

fn call_ssa(p: &SsaProgram, t: u32, inputs: &[u64]) -> Vec<u64> {
    let t = &p.templates[t as usize];
    let mut values = vec![0u64; t.num_ssa as usize];
    values[..inputs.len()].copy_from_slice(inputs);
    run_ssa(p, &t.items, &mut values);
    t.outputs.iter().map(|&w| values[w as usize]).collect()
}

fn eval_ssa(p: &SsaProgram, inputs: &[u64]) -> Vec<u64> {
    let mut values = vec![0u64; p.layout.num_wires as usize];
    values[..inputs.len()].copy_from_slice(inputs);
    run_ssa(p, &p.main, &mut values);
    p.layout
        .output_wires
        .iter()
        .map(|&w| values[w as usize])
        .collect()
}

// ---------------------------------------------------------------------------------------
// The checking evaluator
// ---------------------------------------------------------------------------------------

/// A gate of the inlined SSA program over global value ids (for `Const`, `a` is the bit).
#[derive(Clone, Copy, Debug)]
struct ValueGate {
    op: Op,
    a: u64,
    b: u64,
    out: u64,
}

/// Inlines every call of the SSA program, in the order the expansion emits gates: main
/// values keep their SSA ids, template values get fresh ids, except that a template value
/// which is output `j` (first occurrence, not an input) *is* the caller's output value;
/// the remaining outputs get a copy at the end of the call, in output order. This is the
/// documented shape of `Template::from_ssa`, so the result aligns gate by gate with the
/// expansion.
struct Inliner<'p> {
    program: &'p SsaProgram,
    next_id: u64,
    gates: Vec<ValueGate>,
}

impl Inliner<'_> {
    fn push_gate(&mut self, g: &Gate, a: u64, b: u64, out: u64) {
        let (a, b) = match g.op {
            Op::Const => (g.a as u64, 0),
            Op::Inv | Op::Copy => (a, 0),
            _ => (a, b),
        };
        self.gates.push(ValueGate {
            op: g.op,
            a,
            b,
            out,
        });
    }

    fn call(&mut self, t: u32, inputs: &[u64], outputs: &[u64]) {
        let t = &self.program.templates[t as usize];
        let n = t.num_ssa as usize;
        let mut value = vec![u64::MAX; n];
        value[..inputs.len()].copy_from_slice(inputs);
        let mut home: Vec<Option<u64>> = vec![None; n];
        let mut copies = Vec::new();
        for (j, &w) in t.outputs.iter().enumerate() {
            if w >= t.num_inputs && home[w as usize].is_none() {
                home[w as usize] = Some(outputs[j]);
            } else {
                copies.push((w, j));
            }
        }
        for item in &t.items {
            match item {
                Item::Gate(g) => {
                    let id = home[g.out as usize].unwrap_or_else(|| {
                        self.next_id += 1;
                        self.next_id - 1
                    });
                    let a = value.get(g.a as usize).copied().unwrap_or(0);
                    let b = value.get(g.b as usize).copied().unwrap_or(0);
                    self.push_gate(g, a, b, id);
                    value[g.out as usize] = id;
                }
                Item::Call(c) => {
                    let ins: Vec<u64> = c.inputs.iter().map(|&w| value[w as usize]).collect();
                    let outs: Vec<u64> = c
                        .outputs
                        .iter()
                        .map(|&w| {
                            let id = home[w as usize].unwrap_or_else(|| {
                                self.next_id += 1;
                                self.next_id - 1
                            });
                            value[w as usize] = id;
                            id
                        })
                        .collect();
                    self.call(c.template, &ins, &outs);
                }
            }
        }
        for (w, j) in copies {
            self.gates.push(ValueGate {
                op: Op::Copy,
                a: value[w as usize],
                b: 0,
                out: outputs[j],
            });
        }
    }

    fn inline(program: &SsaProgram) -> (Vec<ValueGate>, u64) {
        let mut inl = Inliner {
            program,
            next_id: program.layout.num_wires as u64,
            gates: Vec::new(),
        };
        for item in &program.main {
            match item {
                Item::Gate(g) => inl.push_gate(g, g.a as u64, g.b as u64, g.out as u64),
                Item::Call(c) => {
                    let ins: Vec<u64> = c.inputs.iter().map(|&w| w as u64).collect();
                    let outs: Vec<u64> = c.outputs.iter().map(|&w| w as u64).collect();
                    inl.call(c.template, &ins, &outs);
                }
            }
        }
        (inl.gates, inl.next_id)
    }
}

const POISON: u64 = u64::MAX;
const NOT_READ: usize = usize::MAX;
const TO_END: usize = usize::MAX - 1;

/// Runs the expanded gate stream with every slot tagged by the SSA value it holds. Each
/// read must find the value the inlined SSA program reads; a write must not hit a slot
/// whose value is still to be read; a slot's bits are randomized the moment its value
/// dies. Returns the output words.
fn eval_checked(
    program: &SsaProgram,
    compact: &CompactCircuit,
    flat: &Circuit,
    inputs: &[u64],
    rng: &mut SplitMix64,
    what: &str,
) -> Vec<u64> {
    let (reference, num_ids) = Inliner::inline(program);
    assert_eq!(
        flat.gates.len(),
        reference.len(),
        "{what}: expansion length"
    );
    let mut last_read = vec![NOT_READ; num_ids as usize];
    for (i, g) in reference.iter().enumerate() {
        match g.op {
            Op::Xor | Op::And => {
                last_read[g.a as usize] = i;
                last_read[g.b as usize] = i;
            }
            Op::Inv | Op::Copy => last_read[g.a as usize] = i,
            Op::Const => {}
        }
    }
    for &w in &program.layout.output_wires {
        last_read[w as usize] = TO_END;
    }
    let mut slots: Vec<(u64, u64)> = (0..flat.layout.num_wires)
        .map(|_| (rng.next_u64(), POISON))
        .collect();
    for (i, &x) in inputs.iter().enumerate() {
        slots[i] = if last_read[i] == NOT_READ {
            (rng.next_u64(), POISON)
        } else {
            (x, i as u64)
        };
    }
    for (i, (e, r)) in flat.gates.iter().zip(&reference).enumerate() {
        assert_eq!(e.op, r.op, "{what}: gate {i} op");
        let reads: Vec<(WireId, u64)> = match e.op {
            Op::Xor | Op::And => vec![(e.a, r.a), (e.b, r.b)],
            Op::Inv | Op::Copy => vec![(e.a, r.a)],
            Op::Const => {
                assert_eq!(e.a as u64, r.a, "{what}: gate {i} constant");
                Vec::new()
            }
        };
        for &(slot, id) in &reads {
            assert_eq!(
                slots[slot as usize].1, id,
                "{what}: gate {i} reads slot {slot}, which does not hold value {id}"
            );
        }
        let bit = |w: WireId| slots[w as usize].0;
        let v = match e.op {
            Op::Xor => bit(e.a) ^ bit(e.b),
            Op::And => bit(e.a) & bit(e.b),
            Op::Inv => !bit(e.a),
            Op::Copy => bit(e.a),
            Op::Const => 0u64.wrapping_sub(e.a as u64),
        };
        for &(slot, id) in &reads {
            if last_read[id as usize] == i {
                slots[slot as usize] = (rng.next_u64(), POISON);
            }
        }
        assert_eq!(
            slots[e.out as usize].1, POISON,
            "{what}: gate {i} overwrites slot {} holding live value {}",
            e.out, slots[e.out as usize].1
        );
        slots[e.out as usize] = if last_read[r.out as usize] == NOT_READ {
            (rng.next_u64(), POISON)
        } else {
            (v, r.out)
        };
    }
    compact
        .layout
        .output_wires
        .iter()
        .zip(&program.layout.output_wires)
        .map(|(&slot, &id)| {
            assert_eq!(
                slots[slot as usize].1, id as u64,
                "{what}: output slot {slot}"
            );
            slots[slot as usize].0
        })
        .collect()
}

fn random_lanes(rng: &mut SplitMix64, n: u32) -> Vec<u64> {
    (0..n).map(|_| rng.next_u64()).collect()
}

// ---------------------------------------------------------------------------------------
// Random-program tests
// ---------------------------------------------------------------------------------------

#[test]
fn random_programs_match_the_ssa_interpreter() {
    let mut rng = SplitMix64::new(0xC0FFEE);
    for seed in 0..400u64 {
        let p = random_program(seed);
        let c = compact(&p, seed);
        c.validate().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let flat = c.flatten().unwrap();
        validate(&flat).unwrap_or_else(|e| panic!("seed {seed}: flattened: {e}"));
        let source = CompactSource::new(c.clone()).unwrap();
        assert_eq!(source.layout(), &flat.layout);
        assert_eq!(source.gate_count(), flat.gates.len() as u64, "seed {seed}");
        assert_eq!(source.and_count(), flat.and_count(), "seed {seed}");
        let stats = compact_stats(&c).unwrap();
        assert_eq!(stats.peak_live_wires, flat.layout.num_wires as u64);
        assert_eq!(stats.gates, flat.gates.len() as u64);
        for round in 0..3 {
            let inputs = random_lanes(&mut rng, p.layout.num_input_wires());
            let want = eval_ssa(&p, &inputs);
            let what = format!("seed {seed} round {round}");
            assert_eq!(eval_bitsliced(&flat, &inputs), want, "{what}: flatten");
            assert_eq!(eval_bitsliced(&source, &inputs), want, "{what}: source");
            assert_eq!(
                eval_checked(&p, &c, &flat, &inputs, &mut rng, &what),
                want,
                "{what}: checked"
            );
        }
    }
}

fn compact(p: &SsaProgram, seed: u64) -> CompactCircuit {
    let c = compile(p);
    // The slotted templates are themselves correct: each one alone against the
    // interpreter is covered by the whole-program checks; here check their shape.
    for (t, tmpl) in c.templates.iter().enumerate() {
        let ssa = &p.templates[t];
        assert_eq!(tmpl.num_inputs, ssa.num_inputs, "seed {seed} template {t}");
        assert_eq!(tmpl.num_outputs as usize, ssa.outputs.len());
        assert!(tmpl.num_wires <= ssa.num_ssa + tmpl.num_outputs);
    }
    assert!(c.layout.num_wires <= p.layout.num_wires.max(1));
    c
}

/// Slots the main body with the two streaming passes, in chunks of `chunk` items.
fn stream_slot(p: &SsaProgram, chunk: usize) -> Result<(Layout, Vec<Item>), CompactError> {
    let mut last = LastUses::new(&p.layout, p.layout.num_wires as u64)?;
    for piece in p.main.chunks(chunk).rev() {
        last.feed_backward(piece);
    }
    let mut slotter = MainSlotter::new(last);
    let mut main = Vec::new();
    for piece in p.main.chunks(chunk) {
        let mut piece = piece.to_vec();
        slotter.rename_forward(&mut piece)?;
        main.extend(piece);
    }
    Ok((slotter.finish()?, main))
}

#[test]
fn streaming_slotter_equals_in_memory_slotter() {
    for seed in 0..400u64 {
        let p = random_program(seed);
        let c = compile(&p);
        for chunk in [1, 2, 5, 17, usize::MAX] {
            let (layout, main) = stream_slot(&p, chunk).unwrap();
            assert_eq!(layout, c.layout, "seed {seed} chunk {chunk}");
            assert_eq!(main, c.main, "seed {seed} chunk {chunk}");
        }
    }
}

#[test]
fn gate_only_main_slots_like_assign_slots() {
    for seed in 0..200u64 {
        let mut rng = SplitMix64::new(seed);
        let n_in = 1 + rng.below(8);
        let num_items = rng.below(120);
        let (main, num_ssa, defined) = random_body(&mut rng, n_in, num_items, &[], 0);
        let layout = Layout {
            num_wires: num_ssa,
            input_widths: vec![n_in],
            output_widths: vec![3],
            output_wires: (0..3)
                .map(|_| defined[rng.below(defined.len() as u32) as usize])
                .collect(),
        };
        let gates: Vec<Gate> = main
            .iter()
            .map(|i| match i {
                Item::Gate(g) => *g,
                Item::Call(_) => unreachable!(),
            })
            .collect();
        let want = assign_slots(&Circuit {
            layout: layout.clone(),
            gates,
        });
        let c = CompactCircuit::from_ssa(layout, Vec::new(), main).unwrap();
        assert_eq!(c.layout, want.layout, "seed {seed}");
        let got: Vec<Item> = want.gates.into_iter().map(Item::Gate).collect();
        assert_eq!(c.main, got, "seed {seed}");
    }
}

#[test]
fn fingerprint_is_stable_under_chunking_and_sees_changes() {
    let p = random_program(11);
    let c = compile(&p);
    let whole = c.fingerprint();
    let mut h = fingerprint_parts(&c.layout, &c.templates);
    for piece in c.main.chunks(3) {
        hash_items(&mut h, piece);
    }
    assert_eq!(*h.finalize().as_bytes(), whole);
    assert_eq!(CompactSource::new(c.clone()).unwrap().fingerprint(), whole);
    // Renaming a template does not change the computation or the digest.
    let mut renamed = c.clone();
    if let Some(t) = renamed.templates.first_mut() {
        t.name.push_str("_renamed");
    }
    assert_eq!(renamed.fingerprint(), whole);
    // Changing one gate does.
    let mut changed = c.clone();
    let pos = changed
        .main
        .iter()
        .position(|i| matches!(i, Item::Gate(g) if g.op == Op::Xor));
    if let Some(pos) = pos {
        if let Item::Gate(g) = &mut changed.main[pos] {
            g.op = Op::And;
        }
        assert_ne!(changed.fingerprint(), whole);
    }
}

#[test]
fn expansion_chunks_are_bounded_and_complete() {
    // A template of 1000 gates called 40 times: 40 000 gates in chunks of <= CHUNK_GATES.
    let body: Vec<Item> = (0..1000u32)
        .map(|k| Item::Gate(Gate::xor(k, k + 1, k + 2)))
        .collect();
    let t = Template::from_ssa("chain".into(), 2, 1002, body, &[1001]).unwrap();
    let main: Vec<Item> = (0..40u32)
        .map(|k| {
            Item::Call(Box::new(Call {
                template: 0,
                inputs: vec![0, 1],
                outputs: vec![2 + k],
            }))
        })
        .collect();
    let layout = Layout {
        num_wires: 42,
        input_widths: vec![2],
        output_widths: vec![1],
        output_wires: vec![41],
    };
    let c = CompactCircuit::from_ssa(layout, vec![t], main).unwrap();
    let mut expander = Expander::new(&c.templates, c.layout.num_wires).unwrap();
    let mut sizes = Vec::new();
    let mut sink = |chunk: &[Gate]| -> Result<(), CompactError> {
        sizes.push(chunk.len());
        Ok(())
    };
    expander.expand(&c.main[..15], &mut sink).unwrap();
    expander.expand(&c.main[15..], &mut sink).unwrap();
    expander.finish(&mut sink).unwrap();
    assert!(sizes.iter().all(|&n| n > 0 && n <= CHUNK_GATES));
    assert_eq!(sizes.iter().sum::<usize>(), 40_000);
    assert_eq!(expander.template_counts(0), Some((1000, 0)));
    // x ^ y chained 1000 times with alternating inputs ends in a known value.
    let flat = c.flatten().unwrap();
    let out = eval_bitsliced(&flat, &[0b1100, 0b1010]);
    let mut w = vec![0b1100u64, 0b1010];
    for k in 0..1000 {
        w.push(w[k] ^ w[k + 1]);
    }
    assert_eq!(out, vec![w[1001]]);
}

// ---------------------------------------------------------------------------------------
// Hand-computed peaks
// ---------------------------------------------------------------------------------------

/// f(x, y) = (x & y) ^ x. SSA: w2 = x & y; w3 = w2 ^ x; output w3.
fn template_f() -> Template {
    Template::from_ssa(
        "f".into(),
        2,
        4,
        vec![
            Item::Gate(Gate::and(0, 1, 2)),
            Item::Gate(Gate::xor(2, 0, 3)),
        ],
        &[3],
    )
    .unwrap()
}

fn call(template: u32, inputs: &[WireId], outputs: &[WireId]) -> Item {
    Item::Call(Box::new(Call {
        template,
        inputs: inputs.to_vec(),
        outputs: outputs.to_vec(),
    }))
}

fn main_layout(num_ssa: u32, n_in: u32, outputs: &[WireId]) -> Layout {
    Layout {
        num_wires: num_ssa,
        input_widths: vec![n_in],
        output_widths: vec![outputs.len() as u32],
        output_wires: outputs.to_vec(),
    }
}

#[test]
fn peak_single_call() {
    // Template f: inputs 0, 1; output region {2}; w2 is scratch -> wire 3 (first scratch);
    // w3 is output 0 -> wire 2. w2 dies at the XOR, so one scratch wire: num_wires 4.
    let f = template_f();
    assert_eq!(f.num_wires, 4);
    assert_eq!(
        f.items,
        vec![
            Item::Gate(Gate::and(0, 1, 3)),
            Item::Gate(Gate::xor(3, 0, 2))
        ]
    );
    // Main: o = f(a, b). a and b die at the call, but a call's outputs are allocated
    // before its inputs are freed, so o takes a fresh slot: main slots {a, b, o} = 3.
    // Expansion: 3 main slots + f's scratch depth 1 = 4 wires, 64 label bytes.
    let c = CompactCircuit::from_ssa(
        main_layout(3, 2, &[2]),
        vec![f],
        vec![call(0, &[0, 1], &[2])],
    )
    .unwrap();
    let s = compact_stats(&c).unwrap();
    assert_eq!(
        (s.main_slots, s.scratch_slots, s.peak_live_wires),
        (3, 1, 4)
    );
    assert_eq!(s.label_bytes_per_party, 64);
    assert_eq!((s.gates, s.and_gates, s.calls), (2, 1, 1));
}

#[test]
fn peak_chained_calls_reuse_a_dead_input() {
    // Main: c = f(a, b); d = f(c, a); output d.
    // Call 1: c gets fresh slot 2 (free list empty); b dies (slot 1 freed), a lives on.
    // Call 2: d takes slot 1 (b's); then c (slot 2) and a (slot 0) die.
    // Main slots 3, scratch 1 -> 4 wires. d ends in slot 1.
    let c = CompactCircuit::from_ssa(
        main_layout(4, 2, &[3]),
        vec![template_f()],
        vec![call(0, &[0, 1], &[2]), call(0, &[2, 0], &[3])],
    )
    .unwrap();
    assert_eq!(c.main, vec![call(0, &[0, 1], &[2]), call(0, &[2, 0], &[1])]);
    assert_eq!(c.layout.output_wires, vec![1]);
    let s = compact_stats(&c).unwrap();
    assert_eq!(
        (s.main_slots, s.scratch_slots, s.peak_live_wires),
        (3, 1, 4)
    );
    let flat = c.flatten().unwrap();
    for x in 0..4u64 {
        let (a, b) = (0u64.wrapping_sub(x & 1), 0u64.wrapping_sub(x >> 1));
        let f = |x: u64, y: u64| (x & y) ^ x;
        assert_eq!(eval_bitsliced(&flat, &[a, b]), vec![f(f(a, b), a)]);
    }
}

#[test]
fn peak_nested_templates_stack_scratch() {
    // g(x, y) = f(f(x, y), y): SSA w2 = f(0, 1); w3 = f(2, 1); output w3.
    // In g: output region {2}; w2 is scratch -> wire 3; w3 -> wire 2. num_wires 4, own
    // scratch 1. Scratch depth of g = 1 + depth(f) = 1 + 1 = 2 (f's scratch stacks above
    // g's). Main o = g(a, b): 3 main slots + 2 = 5 wires.
    let g = Template::from_ssa(
        "g".into(),
        2,
        4,
        vec![call(0, &[0, 1], &[2]), call(0, &[2, 1], &[3])],
        &[3],
    )
    .unwrap();
    assert_eq!(g.num_wires, 4);
    assert_eq!(
        g.items,
        vec![call(0, &[0, 1], &[3]), call(0, &[3, 1], &[2])]
    );
    let c = CompactCircuit::from_ssa(
        main_layout(3, 2, &[2]),
        vec![template_f(), g],
        vec![call(1, &[0, 1], &[2])],
    )
    .unwrap();
    let s = compact_stats(&c).unwrap();
    assert_eq!(
        (s.main_slots, s.scratch_slots, s.peak_live_wires),
        (3, 2, 5)
    );
    assert_eq!((s.gates, s.and_gates), (4, 2));
    let ex = Expander::with_main_callees(&c.templates, 3, [1, 1]).unwrap();
    assert_eq!((ex.num_wires(), ex.scratch_wires()), (5, 2));
    assert_eq!(
        (
            ex.scratch_depth(0),
            ex.scratch_depth(1),
            ex.scratch_depth(2)
        ),
        (Some(1), Some(2), None)
    );
    assert_eq!(ex.template_counts(1), Some((4, 2)));
    assert_eq!(ex.count_items(&c.main, 0), Ok((4, 2)));
    assert!(matches!(
        ex.count_items(&[call(7, &[], &[])], 10),
        Err(CompactError::NoSuchTemplate { callee: 7, .. })
    ));
    // Only f called from main: one scratch wire suffices.
    assert_eq!(
        Expander::with_main_callees(&c.templates, 3, [0])
            .unwrap()
            .num_wires(),
        4
    );
    // Expansion: main slots 0..3, g's scratch at 3, f's scratch at 4.
    let flat = c.flatten().unwrap();
    assert_eq!(
        flat.gates,
        vec![
            Gate::and(0, 1, 4), // f(a, b): its scratch at 4, its output in g's wire 3 -> 3
            Gate::xor(4, 0, 3),
            Gate::and(3, 1, 4), // f(w, b): output region = g's output = main slot 2
            Gate::xor(4, 3, 2),
        ]
    );
}

#[test]
fn peak_outputs_that_are_inputs_or_repeats_get_copies() {
    // h(x) = [x, !x, !x]: SSA w1 = !x; outputs [0, 1, 1]. Output region {1, 2, 3}.
    // w1 is output 1 -> wire 2 directly; output 0 is input x -> copy 0 -> 1; output 2
    // repeats w1 -> copy 2 -> 3. No scratch: num_wires 4.
    let h = Template::from_ssa(
        "h".into(),
        1,
        2,
        vec![Item::Gate(Gate::inv(0, 1))],
        &[0, 1, 1],
    )
    .unwrap();
    assert_eq!(h.num_wires, 4);
    assert_eq!(
        h.items,
        vec![
            Item::Gate(Gate::inv(0, 2)),
            Item::Gate(Gate::copy(0, 1)),
            Item::Gate(Gate::copy(2, 3)),
        ]
    );
    // Main: [p, q, r] = h(a); out = p ^ r (SSA wire 4 unused).
    // Call: p, q, r take fresh slots 1, 2, 3 (a dies only after they are allocated), so
    // a, p, q, r are live at once: 4 main slots. Then a's slot 0 is freed, then q's slot 2
    // (never read). The XOR frees p (1) and r (3) and takes the last freed, 3.
    let c = CompactCircuit::from_ssa(
        main_layout(6, 1, &[5]),
        vec![h],
        vec![call(0, &[0], &[1, 2, 3]), Item::Gate(Gate::xor(1, 3, 5))],
    )
    .unwrap();
    assert_eq!(
        c.main,
        vec![call(0, &[0], &[1, 2, 3]), Item::Gate(Gate::xor(1, 3, 3))]
    );
    let s = compact_stats(&c).unwrap();
    assert_eq!(
        (s.main_slots, s.scratch_slots, s.peak_live_wires),
        (4, 0, 4)
    );
    // p ^ r = x ^ !x = all ones for every input.
    assert_eq!(
        eval_bitsliced(&c.flatten().unwrap(), &[0xF0F0]),
        vec![u64::MAX]
    );
}

#[test]
fn deep_nesting_expands_without_recursion() {
    // t_0(x) = !x; t_k(x) = t_{k-1}(x): 200 000 levels of calls, one gate.
    let mut templates = vec![Template {
        name: "t0".into(),
        num_inputs: 1,
        num_outputs: 1,
        num_wires: 2,
        items: vec![Item::Gate(Gate::inv(0, 1))],
    }];
    for k in 1..200_000u32 {
        templates.push(Template {
            name: format!("t{k}"),
            num_inputs: 1,
            num_outputs: 1,
            num_wires: 2,
            items: vec![call(k - 1, &[0], &[1])],
        });
    }
    let c = CompactCircuit {
        layout: main_layout(2, 1, &[1]),
        templates,
        main: vec![call(199_999, &[0], &[1])],
    };
    let flat = c.flatten().unwrap();
    assert_eq!(flat.gates, vec![Gate::inv(0, 1)]);
}

// ---------------------------------------------------------------------------------------
// Hostile inputs
// ---------------------------------------------------------------------------------------

fn err_of(c: &CompactCircuit) -> String {
    c.validate().unwrap_err().to_string()
}

#[test]
fn template_errors_name_template_item_and_wire() {
    let f = template_f();
    let base = CompactCircuit {
        layout: main_layout(3, 2, &[2]),
        templates: vec![f.clone()],
        main: vec![call(0, &[0, 1], &[2])],
    };
    base.validate().unwrap();

    // Recursion: a template calling itself.
    let mut c = base.clone();
    c.templates[0].items.push(call(0, &[0, 1], &[2]));
    assert_eq!(
        err_of(&c),
        "template 0 'f' item 2: calls template 0, which is not an earlier template \
         (templates may only call smaller indices, so recursion is impossible)"
    );
    assert!(Expander::new(&c.templates, 3).is_err());

    // Arity mismatch inside a template.
    let mut c = base.clone();
    c.templates.push(Template {
        name: "g".into(),
        num_inputs: 1,
        num_outputs: 1,
        num_wires: 2,
        items: vec![call(0, &[0], &[1])],
    });
    assert_eq!(
        err_of(&c),
        "template 1 'g' item 0: call of template 0 'f' passes 1 inputs, but the template has 2"
    );

    // A call whose output aliases its input.
    let mut c = base.clone();
    c.templates.push(Template {
        name: "g".into(),
        num_inputs: 2,
        num_outputs: 1,
        num_wires: 4,
        items: vec![
            call(0, &[0, 1], &[3]),
            call(0, &[3, 1], &[3]),
            Item::Gate(Gate::copy(3, 2)),
        ],
    });
    assert_eq!(
        err_of(&c),
        "template 1 'g' item 1: call output wire 3 is also an input or another output of the \
         same call"
    );

    // Writing an input, reading an unset scratch wire, an unset output, bad shapes.
    let mut c = base.clone();
    c.templates[0].items[1] = Item::Gate(Gate::xor(3, 0, 1));
    assert_eq!(
        err_of(&c),
        "template 0 'f' item 1: writes wire 1, which is an input"
    );
    let mut c = base.clone();
    c.templates[0].items[0] = Item::Gate(Gate::and(0, 3, 3));
    assert_eq!(
        err_of(&c),
        "template 0 'f' item 0: reads wire 3 before it is set"
    );
    let mut c = base.clone();
    c.templates[0].items[1] = Item::Gate(Gate::xor(3, 0, 3));
    c.templates[0].items.push(Item::Gate(Gate::inv(3, 3)));
    assert_eq!(err_of(&c), "template 0 'f': output 0 (wire 2) is never set");
    let mut c = base.clone();
    c.templates[0].num_outputs = 3;
    assert!(matches!(
        c.validate(),
        Err(CompactError::TemplateShape { .. })
    ));
    let mut c = base.clone();
    c.templates[0].num_wires = 9;
    assert!(matches!(
        c.validate(),
        Err(CompactError::UnwrittenWires { .. })
    ));
    let mut c = base.clone();
    c.templates[0].items[0] = Item::Gate(Gate::and(0, 7, 3));
    assert_eq!(
        err_of(&c),
        "template 0 'f' item 0: wire 7 is out of range (4 wires)"
    );
}

#[test]
fn main_errors_in_validate_and_expand() {
    let base = CompactCircuit {
        layout: main_layout(5, 2, &[4]),
        templates: vec![template_f()],
        main: vec![call(0, &[0, 1], &[2]), Item::Gate(Gate::xor(2, 0, 4))],
    };
    base.validate().unwrap();
    let expand_err = |c: &CompactCircuit| -> String {
        let mut ex = Expander::new(&c.templates, c.layout.num_wires).unwrap();
        let mut sink = |_: &[Gate]| -> Result<(), CompactError> { Ok(()) };
        ex.expand(&c.main, &mut sink).unwrap_err().to_string()
    };
    let cases: Vec<(CompactCircuit, &str)> = vec![
        (
            {
                let mut c = base.clone();
                c.main[1] = Item::Gate(Gate::xor(2, 99, 4));
                c
            },
            "main item 1: wire 99 is out of range (5 wires)",
        ),
        (
            {
                let mut c = base.clone();
                c.main[0] = call(3, &[0, 1], &[2]);
                c
            },
            "main item 0: calls template 3, but there are only 1 templates",
        ),
        (
            {
                let mut c = base.clone();
                c.main[0] = call(0, &[0, 1, 1], &[2]);
                c
            },
            "main item 0: call of template 0 'f' passes 3 inputs, but the template has 2",
        ),
        (
            {
                let mut c = base.clone();
                c.main[0] = call(0, &[0, 1], &[1]);
                c
            },
            "main item 0: call output wire 1 is also an input or another output of the same call",
        ),
        (
            {
                let mut c = base.clone();
                c.main[0] = call(0, &[0, 1], &[7]);
                c
            },
            "main item 0: wire 7 is out of range (5 wires)",
        ),
    ];
    for (c, want) in cases {
        assert_eq!(err_of(&c), want);
        assert_eq!(expand_err(&c), want);
        assert!(CompactSource::new(c.clone()).is_err());
        assert!(c.flatten().is_err());
    }
    // Only validate sees reads of unset wires and unset outputs.
    let mut c = base.clone();
    c.main[1] = Item::Gate(Gate::xor(3, 0, 4));
    assert_eq!(err_of(&c), "main item 1: reads wire 3 before it is set");
    let mut c = base.clone();
    c.layout.output_wires = vec![3];
    assert_eq!(err_of(&c), "main output 0: wire 3 is never set");
    // An expander sized for no calls refuses a call that needs scratch.
    let mut ex = Expander::with_main_callees(&base.templates, 5, []).unwrap();
    let mut sink = |_: &[Gate]| -> Result<(), CompactError> { Ok(()) };
    assert!(matches!(
        ex.expand(&base.main, &mut sink),
        Err(CompactError::ScratchNotReserved {
            needed: 1,
            reserved: 0,
            ..
        })
    ));
}

#[test]
fn ssa_errors() {
    let ok = vec![
        Item::Gate(Gate::and(0, 1, 2)),
        Item::Gate(Gate::xor(2, 0, 3)),
    ];
    let slot = |items: Vec<Item>, outputs: &[WireId]| {
        Template::from_ssa("f".into(), 2, 4, items, outputs)
            .unwrap_err()
            .to_string()
    };
    let mut twice = ok.clone();
    twice.push(Item::Gate(Gate::inv(0, 3)));
    assert_eq!(
        slot(twice, &[3]),
        "template 'f' item 2: writes wire 3 a second time (single-assignment form expected)"
    );
    assert_eq!(
        slot(vec![Item::Gate(Gate::and(0, 3, 2))], &[2]),
        "template 'f' item 0: reads wire 3 before it is set"
    );
    assert_eq!(
        slot(vec![Item::Gate(Gate::inv(0, 1))], &[1]),
        "template 'f' item 0: writes wire 1, which is an input"
    );
    assert_eq!(
        slot(ok.clone(), &[9]),
        "template 'f': output 0 (wire 9) is out of range (4 wires)"
    );
    assert_eq!(
        slot(ok.clone(), &[2, 5]),
        "template 'f': output 1 (wire 5) is out of range (4 wires)"
    );
    assert_eq!(
        slot(vec![Item::Gate(Gate::and(0, 1, 2))], &[3]),
        "template 'f': output 0 (wire 3) is never set"
    );
    // Main: a call output repeated, an unknown template, a wrong arity.
    let f = template_f();
    let main_err = |main: Vec<Item>| {
        CompactCircuit::from_ssa(main_layout(5, 2, &[2]), vec![f.clone()], main)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        main_err(vec![call(0, &[0, 1], &[2]), call(0, &[0, 1], &[2])]),
        "main item 1: writes wire 2 a second time (single-assignment form expected)"
    );
    assert_eq!(
        main_err(vec![call(1, &[0, 1], &[2])]),
        "main item 0: calls template 1, but there are only 1 templates"
    );
    assert_eq!(
        main_err(vec![call(0, &[0], &[2])]),
        "main item 0: call of template 0 'f' passes 1 inputs, but the template has 2"
    );
}

#[test]
fn counts_and_wires_overflow_are_errors() {
    // f has 2 gates; double_k calls its predecessor twice: 2^(k+1) gates, so double63
    // (2^64) overflows 64 bits.
    let mut templates = vec![template_f()];
    for k in 1..70u32 {
        templates.push(Template {
            name: format!("double{k}"),
            num_inputs: 2,
            num_outputs: 1,
            num_wires: 4,
            items: vec![call(k - 1, &[0, 1], &[3]), call(k - 1, &[3, 1], &[2])],
        });
    }
    let err = Expander::new(&templates, 3).err().unwrap();
    assert_eq!(
        err.to_string(),
        "template 63 'double63': the expanded gate count overflows 64 bits"
    );
    // Main slots plus scratch beyond 32-bit wire ids.
    assert!(matches!(
        Expander::new(&[template_f()], u32::MAX),
        Err(CompactError::TooManyWires { .. })
    ));
    assert_eq!(
        Expander::new(&[template_f()], u32::MAX - 1)
            .unwrap()
            .num_wires(),
        u32::MAX
    );
}

#[test]
fn streaming_slotter_rejects_bad_streams() {
    // The passes fed different bodies: errors, never a panic.
    let layout = main_layout(4, 2, &[3]);
    let body = vec![Item::Gate(Gate::and(0, 1, 2)), Item::Gate(Gate::inv(2, 3))];
    let mut last = LastUses::new(&layout, 4).unwrap();
    last.feed_backward(&body[1..]);
    let mut slotter = MainSlotter::new(last);
    let mut main = body.clone();
    // Inputs 0 and 1 look unread to the backward pass, so the forward pass finds them
    // dead already.
    assert_eq!(
        slotter.rename_forward(&mut main).unwrap_err().to_string(),
        "main item 0: reads wire 0 before it is set"
    );
    let mut slotter = MainSlotter::new(LastUses::new(&layout, 4).unwrap());
    let mut main = vec![Item::Gate(Gate::constant(true, 2))];
    assert_eq!(
        slotter.rename_forward(&mut main).unwrap_err(),
        CompactError::StreamMismatch("the forward pass was fed more than the backward pass")
    );
    let mut last = LastUses::new(&layout, 4).unwrap();
    last.feed_backward(&body);
    let mut slotter = MainSlotter::new(last);
    let mut main = body[..1].to_vec();
    slotter.rename_forward(&mut main).unwrap();
    assert_eq!(
        slotter.finish().unwrap_err(),
        CompactError::StreamMismatch("the forward pass was fed less than the backward pass")
    );
    // Out-of-range and non-SSA bodies are reported with their item.
    let bad = [
        (
            vec![Item::Gate(Gate::and(0, 9, 2)), Item::Gate(Gate::inv(2, 3))],
            "main item 0: wire 9 is out of range (4 wires)",
        ),
        (
            vec![Item::Gate(Gate::and(0, 1, 2)), Item::Gate(Gate::inv(2, 2))],
            "main item 1: writes wire 2 a second time (single-assignment form expected)",
        ),
        (
            vec![Item::Gate(Gate::and(0, 3, 2)), Item::Gate(Gate::inv(2, 3))],
            "main item 0: reads wire 3 before it is set",
        ),
        (
            vec![Item::Gate(Gate::and(0, 1, 2))],
            "main output 0: wire 3 is never set",
        ),
    ];
    for (items, want) in bad {
        let p = SsaProgram {
            templates: Vec::new(),
            layout: layout.clone(),
            main: items,
        };
        assert_eq!(stream_slot(&p, 1).unwrap_err().to_string(), want);
        assert_eq!(
            CompactCircuit::from_ssa(p.layout.clone(), Vec::new(), p.main.clone())
                .unwrap_err()
                .to_string(),
            want
        );
    }
    assert!(LastUses::new(&main_layout(4, 2, &[4]), 4).is_err());
    assert!(LastUses::new(&main_layout(4, 5, &[0]), 4).is_err());
}

/// Mutates one random field of a valid compact circuit.
fn mutate(c: &mut CompactCircuit, rng: &mut SplitMix64) {
    let wild = |rng: &mut SplitMix64, around: u32| -> u32 {
        match rng.below(4) {
            0 => u32::MAX - rng.below(3),
            _ => rng.below(around.saturating_add(3).max(1)),
        }
    };
    let nt = c.templates.len() as u32;
    let in_template = nt > 0 && rng.next_bool();
    let (items, num_wires): (&mut Vec<Item>, u32) = if in_template {
        let t = &mut c.templates[rng.below(nt) as usize];
        match rng.below(6) {
            0 => {
                t.num_wires = wild(rng, t.num_wires);
                return;
            }
            1 => {
                t.num_inputs = wild(rng, t.num_inputs);
                return;
            }
            2 => {
                t.num_outputs = wild(rng, t.num_outputs);
                return;
            }
            _ => (&mut t.items, t.num_wires),
        }
    } else {
        (&mut c.main, c.layout.num_wires)
    };
    if items.is_empty() {
        c.layout.num_wires = wild(rng, c.layout.num_wires);
        return;
    }
    let k = rng.below(items.len() as u32) as usize;
    match &mut items[k] {
        Item::Gate(g) => match rng.below(5) {
            0 => g.a = wild(rng, num_wires),
            1 => g.b = wild(rng, num_wires),
            2 => g.out = wild(rng, num_wires),
            3 => g.op = Op::Const,
            _ => g.op = Op::And,
        },
        Item::Call(call) => match rng.below(5) {
            0 => call.template = wild(rng, nt),
            1 => call.inputs.push(wild(rng, num_wires)),
            2 => {
                call.outputs.pop();
            }
            3 => {
                if let Some(w) = call.outputs.first_mut() {
                    *w = wild(rng, num_wires);
                }
            }
            _ => {
                if let Some(w) = call.inputs.first_mut() {
                    *w = wild(rng, num_wires);
                }
            }
        },
    }
}

#[test]
fn mutated_circuits_never_panic() {
    let mut rng = SplitMix64::new(99);
    let mut accepted = 0;
    for seed in 0..300u64 {
        let c0 = compile(&random_program(seed));
        for _ in 0..4 {
            let mut c = c0.clone();
            for _ in 0..1 + rng.below(3) {
                mutate(&mut c, &mut rng);
            }
            let valid = c.validate();
            let flat = c.flatten();
            assert_eq!(valid.is_ok(), flat.is_ok(), "seed {seed}");
            let _ = compact_stats(&c);
            // Expansion alone range-checks without panicking.
            if let Ok(mut ex) = Expander::new(&c.templates, c.layout.num_wires) {
                let mut sink = |_: &[Gate]| -> Result<(), CompactError> { Ok(()) };
                let _ = ex.expand(&c.main, &mut sink);
                let _ = ex.finish(&mut sink);
            }
            // (Mutated wire counts can be huge; evaluating would need 8 bytes per wire.)
            if let Ok(flat) = flat {
                if flat.layout.num_wires >= 1 << 16 {
                    continue;
                }
                // A valid compact circuit flattens to a valid circuit.
                validate(&flat).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                let source = CompactSource::new(c.clone()).unwrap();
                let lanes = vec![0x5555u64; flat.layout.num_input_wires() as usize];
                assert_eq!(
                    eval_bitsliced(&source, &lanes),
                    eval_bitsliced(&flat, &lanes)
                );
                accepted += 1;
            }
        }
    }
    // Some mutations keep the circuit valid (e.g. an op change), most do not.
    assert!(accepted > 0 && accepted < 1200, "accepted {accepted}");
}
