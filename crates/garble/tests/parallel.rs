//! Parallel garbling and evaluation (`pgc_garble::parallel`) agree with the cleartext
//! circuit and with the sequential garbler, table for table, for every mode and thread
//! count; bad streams are errors, not hangs or panics; τ keeps narrow levels serial.

use std::convert::Infallible;

use pgc_circuit::generate::{SplitMix64, random_circuit};
use pgc_circuit::{
    Circuit, Gate, GateSource, Layout, Op, ParallelCircuit, Phase, RegionSpan, WireId, eval_bits,
};
use pgc_crypto::{Block, Prg, TccrHash};
use pgc_garble::parallel::{
    self, EvalError, Mode, Plan, SliceSource, StreamEnded, TableSink, TableSource,
};
use pgc_garble::{Garbler, random_delta};

const MODES: [Mode; 4] = [Mode::None, Mode::Fgp, Mode::Cgp, Mode::Auto];
const THREADS: [usize; 4] = [1, 2, 3, 8];

/// A random single-assignment circuit with `regions.len()` regions: a random prefix, then
/// for each region its instances (each reading only wires set before the region, the
/// instances of one region sharing a structure when `same_template`), then a random
/// suffix reading everything. Returns the flat circuit and its spans.
fn region_circuit(
    seed: u64,
    num_inputs: u32,
    regions: &[(usize, usize, bool)],
    linear_gates: usize,
) -> (Circuit, Vec<RegionSpan>) {
    let mut rng = SplitMix64::new(seed);
    let mut gates: Vec<Gate> = Vec::new();
    let mut next: WireId = num_inputs;
    let push = |gates: &mut Vec<Gate>, g: Gate, next: &mut WireId| {
        gates.push(g);
        *next += 1;
    };
    let random_gate =
        |rng: &mut SplitMix64, pick: &mut dyn FnMut(&mut SplitMix64) -> WireId, out| {
            let (a, b) = (pick(rng), pick(rng));
            match rng.below(10) {
                0..=3 => Gate::and(a, b, out),
                4..=7 => Gate::xor(a, b, out),
                8 => Gate::inv(a, out),
                _ => Gate::copy(a, out),
            }
        };
    // Prefix.
    for _ in 0..linear_gates {
        let g = random_gate(&mut rng, &mut |r: &mut SplitMix64| r.below(next), next);
        push(&mut gates, g, &mut next);
    }
    let mut spans = Vec::new();
    for (line, &(instances, per_instance, same_template)) in regions.iter().enumerate() {
        let before = next;
        let mut bounds = vec![gates.len()];
        // A shared structure: for each gate, op and which earlier local it reads.
        let shape_seed = rng.next_u64();
        for _ in 0..instances {
            let mut shape = SplitMix64::new(if same_template {
                shape_seed
            } else {
                rng.next_u64()
            });
            // The instance's inputs: 4 wires set before the region (may repeat).
            let inputs: Vec<WireId> = (0..4).map(|_| rng.below(before)).collect();
            let mut locals: Vec<WireId> = inputs.clone();
            for _ in 0..per_instance {
                let out = next;
                let g = random_gate(
                    &mut shape,
                    &mut |r: &mut SplitMix64| locals[r.below(locals.len() as u32) as usize],
                    out,
                );
                push(&mut gates, g, &mut next);
                locals.push(out);
            }
            bounds.push(gates.len());
        }
        spans.push(RegionSpan {
            line: line as u32 + 1,
            bounds,
        });
        // Linear glue between regions reads everything so far.
        for _ in 0..linear_gates / 2 {
            let g = random_gate(&mut rng, &mut |r: &mut SplitMix64| r.below(next), next);
            push(&mut gates, g, &mut next);
        }
    }
    // Suffix: reads recent wires, so instance outputs escape.
    for _ in 0..linear_gates {
        let g = random_gate(
            &mut rng,
            &mut |r: &mut SplitMix64| next - 1 - r.below(next.min(64)),
            next,
        );
        push(&mut gates, g, &mut next);
    }
    let output_wires: Vec<WireId> = (0..12)
        .map(|_| next - 1 - rng.below(next.min(200)))
        .collect();
    let layout = Layout {
        num_wires: next,
        input_widths: vec![num_inputs / 2, num_inputs - num_inputs / 2],
        output_widths: vec![output_wires.len() as u32],
        output_wires,
    };
    (Circuit { layout, gates }, spans)
}

/// One region of `instances` long instances, each a chain of `per_instance` gates reading
/// only the last `window` values (its 6 inputs among them at first), then a suffix reading
/// the last wires: most values die within a few gates, so the plan's renamed templates
/// reuse slots heavily, and instance outputs sit anywhere in the chain.
fn chain_region_circuit(
    seed: u64,
    instances: usize,
    per_instance: usize,
    window: u32,
) -> (Circuit, Vec<RegionSpan>) {
    let mut rng = SplitMix64::new(seed);
    let num_inputs = 10;
    let mut gates = Vec::new();
    let mut next: WireId = num_inputs;
    let mut bounds = vec![0];
    for _ in 0..instances {
        let mut locals: Vec<WireId> = (0..6).map(|_| rng.below(num_inputs)).collect();
        for _ in 0..per_instance {
            let n = locals.len() as u32;
            let pick = |r: &mut SplitMix64| locals[(n - 1 - r.below(n.min(window))) as usize];
            let (a, b) = (pick(&mut rng), pick(&mut rng));
            gates.push(match rng.below(8) {
                0..=3 => Gate::and(a, b, next),
                4..=6 => Gate::xor(a, b, next),
                _ => Gate::inv(a, next),
            });
            locals.push(next);
            next += 1;
        }
        bounds.push(gates.len());
    }
    let region_end = next;
    for _ in 0..40 {
        let (a, b) = (
            region_end - 1 - rng.below(region_end.min(30)),
            next - 1 - rng.below(8),
        );
        gates.push(Gate::xor(a, b, next));
        next += 1;
    }
    let output_wires: Vec<WireId> = (0..16)
        .map(|_| next - 1 - rng.below(next.min(60)))
        .collect();
    let layout = Layout {
        num_wires: next,
        input_widths: vec![num_inputs / 2, num_inputs - num_inputs / 2],
        output_widths: vec![output_wires.len() as u32],
        output_wires,
    };
    (
        Circuit { layout, gates },
        vec![RegionSpan { line: 1, bounds }],
    )
}

/// A layered circuit of only ANDs in single-assignment form: `depth` layers of `width`
/// ANDs, each reading two random wires of the layer before.
fn layered_ands(width: u32, depth: u32, seed: u64) -> Circuit {
    let mut rng = SplitMix64::new(seed);
    let mut gates = Vec::new();
    let (mut prev_start, mut prev_len) = (0u32, 2 * width);
    let mut next = 2 * width;
    for _ in 0..depth {
        let start = next;
        for _ in 0..width {
            let a = prev_start + rng.below(prev_len);
            let b = prev_start + rng.below(prev_len);
            gates.push(Gate::and(a, b, next));
            next += 1;
        }
        (prev_start, prev_len) = (start, width);
    }
    Circuit {
        layout: Layout {
            num_wires: next,
            input_widths: vec![width, width],
            output_widths: vec![width.min(16)],
            output_wires: (next - width.min(16)..next).collect(),
        },
        gates,
    }
}

fn test_circuits() -> Vec<(String, ParallelCircuit)> {
    let mut out = Vec::new();
    for seed in 0..4u64 {
        let c = random_circuit(seed, 12 + seed as u32, 300 + 200 * seed as usize);
        out.push((
            format!("random {seed}"),
            ParallelCircuit::sequential(&c).expect("random circuits are SSA"),
        ));
    }
    let (c, spans) = region_circuit(7, 16, &[(6, 40, true), (5, 25, false)], 80);
    out.push((
        "regions".into(),
        ParallelCircuit::from_flat(&c, &spans).unwrap(),
    ));
    let (c, spans) = region_circuit(8, 10, &[(17, 12, true), (2, 300, true), (9, 1, false)], 30);
    out.push((
        "many regions".into(),
        ParallelCircuit::from_flat(&c, &spans).unwrap(),
    ));
    let c = layered_ands(100, 8, 3);
    out.push(("layered".into(), ParallelCircuit::sequential(&c).unwrap()));
    let (c, spans) = chain_region_circuit(9, 7, 400, 6);
    out.push((
        "chained instances".into(),
        ParallelCircuit::from_flat(&c, &spans).unwrap(),
    ));
    out
}

struct Fixture {
    delta: Block,
    key: Block,
    zero: Vec<Block>,
    bits: Vec<bool>,
}

impl Fixture {
    fn new(seed: u128, inputs: usize) -> Fixture {
        let mut prg = Prg::from_seed(Block(seed));
        let delta = random_delta(&mut prg);
        let key = prg.random_block();
        let zero = (0..inputs).map(|_| prg.random_block()).collect();
        let bits = (0..inputs).map(|_| prg.random_bool()).collect();
        Fixture {
            delta,
            key,
            zero,
            bits,
        }
    }

    fn active(&self) -> Vec<Block> {
        self.zero
            .iter()
            .zip(&self.bits)
            .map(|(&z, &b)| z ^ self.delta.select(b))
            .collect()
    }
}

/// The sequential garbler's tables and output zero-labels on the flattened circuit.
fn sequential_reference(flat: &Circuit, f: &Fixture) -> (Vec<Block>, Vec<Block>) {
    let mut garbler = Garbler::new(flat.layout.num_wires as usize, f.delta, f.key);
    for (w, &z) in f.zero.iter().enumerate() {
        garbler.set_zero_label(w as WireId, z);
    }
    let mut tables = Vec::new();
    garbler.garble(&flat.gates, &mut tables);
    let outputs = flat
        .layout
        .output_wires
        .iter()
        .map(|&w| garbler.zero_label(w))
        .collect();
    (tables, outputs)
}

fn garble_to_vecs(plan: &Plan, pc: &ParallelCircuit, f: &Fixture) -> (Vec<Vec<Block>>, Vec<Block>) {
    let mut sinks: Vec<Vec<Block>> = vec![Vec::new(); plan.threads()];
    let out = parallel::garble(plan, pc, f.delta, f.key, &f.zero, &mut sinks).unwrap();
    let total: u64 = out.blocks_per_stream.iter().sum();
    assert_eq!(total, 2 * pc.and_count());
    (sinks, out.output_zero_labels)
}

#[test]
fn every_mode_and_thread_count_matches_cleartext_and_the_sequential_garbler() {
    for (name, pc) in test_circuits() {
        let flat = pc.flatten();
        let f = Fixture::new(
            0x1234 + pc.and_count() as u128,
            pc.layout.num_input_wires() as usize,
        );
        let expected = eval_bits(&flat, &f.bits);
        let (seq_tables, seq_outputs) = sequential_reference(&flat, &f);
        for mode in MODES {
            for threads in THREADS {
                for tau in [1, 4, parallel::DEFAULT_TAU] {
                    let what = format!("{name}, {mode:?}, {threads} threads, tau {tau}");
                    let plan = Plan::new(&pc, threads, mode, tau);
                    if tau == 1 && threads > 1 && matches!(mode, Mode::Fgp | Mode::Auto) {
                        assert!(plan.stats().split_levels > 0, "{what}: {:?}", plan.stats());
                    }
                    if mode == Mode::Cgp && threads > 1 && tau == 1 && pc.regions().count() > 0 {
                        assert!(plan.stats().parallel_steps > 0, "{what}");
                    }
                    let (streams, out_zero) = garble_to_vecs(&plan, &pc, &f);
                    assert_eq!(out_zero, seq_outputs, "{what}: output zero-labels");
                    // Table for table, each stream's pairs are the sequential garbler's
                    // pairs of the ANDs the plan lists for it, and every AND is in one.
                    let mut seen = vec![false; pc.and_count() as usize];
                    for (t, stream) in streams.iter().enumerate() {
                        let order = plan.stream_and_indices(&pc, t);
                        assert_eq!(stream.len(), 2 * order.len(), "{what}: stream {t}");
                        for (k, &j) in order.iter().enumerate() {
                            let j = j as usize;
                            assert!(!seen[j], "{what}: AND {j} twice");
                            seen[j] = true;
                            assert_eq!(
                                stream[2 * k..2 * k + 2],
                                seq_tables[2 * j..2 * j + 2],
                                "{what}: stream {t}, pair {k} (AND {j})"
                            );
                        }
                    }
                    assert!(seen.iter().all(|&s| s), "{what}: every AND garbled");
                    if mode == Mode::None {
                        assert!(streams[1..].iter().all(Vec::is_empty), "{what}");
                        assert_eq!(streams[0], seq_tables, "{what}: the sequential stream");
                    }
                    // Evaluate with a plan built independently, as the evaluator would.
                    let eval_plan = Plan::new(&pc, threads, mode, tau);
                    let mut sources: Vec<SliceSource> =
                        streams.iter().map(|s| SliceSource::new(s)).collect();
                    let labels =
                        parallel::evaluate(&eval_plan, &pc, f.key, &f.active(), &mut sources)
                            .unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(
                        sources.iter().all(|s| s.remaining() == 0),
                        "{what}: all read"
                    );
                    let bits: Vec<bool> = labels
                        .iter()
                        .zip(&out_zero)
                        .map(|(l, z)| l.lsb() ^ z.lsb())
                        .collect();
                    assert_eq!(bits, expected, "{what}: outputs");
                    // The active label is the zero-label or the zero-label ⊕ Δ.
                    for ((l, z), b) in labels.iter().zip(&out_zero).zip(&bits) {
                        assert_eq!(*l, *z ^ f.delta.select(*b), "{what}: output label");
                    }
                }
            }
        }
    }
}

#[test]
fn instances_run_in_few_slots() {
    // 400-gate chains reading the last 6 values: each thread's scratch holds the live
    // values (inputs, a window, outputs kept to the end), not the template's ~400 wires.
    let (c, spans) = chain_region_circuit(9, 7, 400, 6);
    let pc = ParallelCircuit::from_flat(&c, &spans).unwrap();
    let wires = pc.templates.iter().map(|t| t.num_wires()).max().unwrap() as usize;
    let outputs = pc.templates.iter().map(|t| t.outputs.len()).max().unwrap();
    assert!(wires > 300, "{wires}");
    for threads in [1, 3] {
        let plan = Plan::new(&pc, threads, Mode::Cgp, 1);
        let slots = plan.scratch_blocks();
        assert!(
            slots <= 6 + 8 + outputs,
            "{slots} slots for {wires} wires, {outputs} outputs"
        );
    }
}

#[test]
fn plans_split_work_where_it_pays() {
    let wide = ParallelCircuit::sequential(&layered_ands(64, 20, 1)).unwrap();
    // 64 ANDs per level: 4 threads with τ 8 split every level, τ 100 none, τ 20 over 3.
    let plan = Plan::new(&wide, 4, Mode::Fgp, 8);
    let stats = plan.stats();
    assert_eq!(stats.split_levels, 20);
    assert_eq!(stats.parallel_steps, 20);
    assert_eq!(stats.serial_ands, 0);
    assert_eq!(stats.active_threads, 4);
    let counts: Vec<usize> = (0..4)
        .map(|t| plan.stream_and_indices(&wide, t).len())
        .collect();
    assert_eq!(counts, vec![320; 4], "ANDs balanced");
    let plan = Plan::new(&wide, 4, Mode::Fgp, 100);
    assert_eq!(plan.stats().parallel_steps, 0);
    assert_eq!(
        plan.stats().steps,
        1,
        "narrow levels merge into one serial step"
    );
    assert_eq!(plan.stats().active_threads, 1);
    let plan = Plan::new(&wide, 4, Mode::Fgp, 20);
    assert_eq!(plan.stats().active_threads, 3);
    // Auto splits sequential phases the same way; CGP leaves them serial.
    assert_eq!(
        Plan::new(&wide, 4, Mode::Auto, 8).stats().parallel_steps,
        20
    );
    assert_eq!(Plan::new(&wide, 4, Mode::Cgp, 8).stats().parallel_steps, 0);

    // A chain (every level one AND) stays serial whatever τ.
    let chain = layered_ands(1, 200, 2);
    let chain = ParallelCircuit::sequential(&chain).unwrap();
    let plan = Plan::new(&chain, 8, Mode::Fgp, 1);
    assert_eq!((plan.stats().steps, plan.stats().parallel_steps), (1, 0));

    // Narrow and wide levels alternate: the narrow runs between wide levels merge.
    let (c, spans) = region_circuit(5, 16, &[(8, 30, true)], 60);
    let pc = ParallelCircuit::from_flat(&c, &spans).unwrap();
    let plan = Plan::new(&pc, 4, Mode::Cgp, 4);
    let stats = plan.stats();
    assert_eq!(stats.parallel_steps, 1);
    assert!(stats.steps <= 3, "{stats:?}");
    // Equal instances: 2 per thread.
    let ands = pc.regions().next().unwrap().instances.len();
    assert_eq!(ands, 8);
    let per_thread: Vec<usize> = (0..4)
        .map(|t| plan.stream_and_indices(&pc, t).len())
        .collect();
    assert!(
        per_thread[1..].iter().all(|&n| n == per_thread[1]),
        "{per_thread:?}"
    );
    // τ above the region's weight keeps it serial.
    assert_eq!(
        Plan::new(&pc, 4, Mode::Cgp, 1_000_000)
            .stats()
            .parallel_steps,
        0
    );
    // Plans are deterministic.
    let a = Plan::new(&pc, 3, Mode::Auto, 2);
    let b = Plan::new(&pc, 3, Mode::Auto, 2);
    for t in 0..3 {
        assert_eq!(a.stream_and_indices(&pc, t), b.stream_and_indices(&pc, t));
    }
}

/// A source that hands out its stream but fails (or lies about the count) at some take.
struct BadSource {
    blocks: Vec<Block>,
    position: usize,
    takes: usize,
    fail_at: Option<usize>,
    short_at: Option<usize>,
}

impl TableSource for BadSource {
    type Error = StreamEnded;
    fn take(&mut self, n: usize) -> Result<&[Block], StreamEnded> {
        let take = self.takes;
        self.takes += 1;
        if self.fail_at == Some(take) {
            return Err(StreamEnded { wanted: n, left: 0 });
        }
        let n = if self.short_at == Some(take) {
            n - 1
        } else {
            n
        };
        let left = self.blocks.len() - self.position;
        if n > left {
            return Err(StreamEnded { wanted: n, left });
        }
        self.position += n;
        Ok(&self.blocks[self.position - n..self.position])
    }
}

#[test]
fn bad_streams_are_errors_not_hangs() {
    let (c, spans) = region_circuit(11, 16, &[(12, 30, true), (6, 20, false)], 200);
    let pc = ParallelCircuit::from_flat(&c, &spans).unwrap();
    let f = Fixture::new(99, pc.layout.num_input_wires() as usize);
    for mode in MODES {
        for threads in [2, 3, 8] {
            let plan = Plan::new(&pc, threads, mode, 1);
            let (streams, _) = garble_to_vecs(&plan, &pc, &f);
            for t in 0..threads {
                if streams[t].is_empty() {
                    continue;
                }
                let what = format!("{mode:?}, {threads} threads, stream {t}");
                // Truncated: the last block of stream t is missing.
                let mut sources: Vec<SliceSource> = streams
                    .iter()
                    .enumerate()
                    .map(|(u, s)| SliceSource::new(if u == t { &s[..s.len() - 1] } else { s }))
                    .collect();
                let r = parallel::evaluate(&plan, &pc, f.key, &f.active(), &mut sources);
                match r {
                    Err(EvalError::Source { thread, .. }) => assert_eq!(thread, t, "{what}"),
                    other => panic!("{what}: {other:?}"),
                }
                // A source failing at its first take, and one returning too few blocks.
                for (fail_at, short_at) in [(Some(0), None), (None, Some(0))] {
                    let mut sources: Vec<BadSource> = streams
                        .iter()
                        .enumerate()
                        .map(|(u, s)| BadSource {
                            blocks: s.clone(),
                            position: 0,
                            takes: 0,
                            fail_at: if u == t { fail_at } else { None },
                            short_at: if u == t { short_at } else { None },
                        })
                        .collect();
                    let r = parallel::evaluate(&plan, &pc, f.key, &f.active(), &mut sources);
                    match (r, short_at) {
                        (Err(EvalError::Source { thread, .. }), None) => assert_eq!(thread, t),
                        (
                            Err(EvalError::ShortRead {
                                thread,
                                expected,
                                got,
                            }),
                            Some(_),
                        ) => {
                            assert_eq!((thread, got + 1), (t, expected), "{what}")
                        }
                        (other, _) => panic!("{what}: {other:?}"),
                    }
                }
            }
            // Garbage tables evaluate (semi-honest) to wrong labels, not to a panic.
            let garbage: Vec<Vec<Block>> = streams
                .iter()
                .map(|s| s.iter().map(|b| Block(b.0.rotate_left(7))).collect())
                .collect();
            let mut sources: Vec<SliceSource> =
                garbage.iter().map(|s| SliceSource::new(s)).collect();
            let labels = parallel::evaluate(&plan, &pc, f.key, &f.active(), &mut sources).unwrap();
            assert_eq!(labels.len(), pc.layout.output_wires.len());
        }
    }
    // Wrong input count.
    let plan = Plan::new(&pc, 2, Mode::Auto, 1);
    let mut sources = vec![SliceSource::new(&[]), SliceSource::new(&[])];
    let r = parallel::evaluate(&plan, &pc, f.key, &f.active()[1..], &mut sources);
    assert!(matches!(r, Err(EvalError::InputCount { .. })));
}

/// A sink that fails on its n-th put.
struct FailingSink {
    puts: usize,
    fail_at: usize,
}

#[derive(Debug, PartialEq)]
struct SinkFailed(usize);

impl TableSink for FailingSink {
    type Error = SinkFailed;
    fn put(&mut self, _tables: &[Block]) -> Result<(), SinkFailed> {
        self.puts += 1;
        if self.puts > self.fail_at {
            return Err(SinkFailed(self.fail_at));
        }
        Ok(())
    }
}

#[test]
fn a_failing_sink_stops_all_threads() {
    let pc = ParallelCircuit::sequential(&layered_ands(256, 30, 4)).unwrap();
    let f = Fixture::new(5, pc.layout.num_input_wires() as usize);
    for mode in [Mode::Fgp, Mode::Auto] {
        for threads in [2, 3, 8] {
            let plan = Plan::new(&pc, threads, mode, 4);
            for failing in [0, threads - 1] {
                let mut sinks: Vec<FailingSink> = (0..threads)
                    .map(|t| FailingSink {
                        puts: 0,
                        fail_at: if t == failing { 3 } else { usize::MAX },
                    })
                    .collect();
                let r = parallel::garble(&plan, &pc, f.delta, f.key, &f.zero, &mut sinks);
                assert_eq!(r.unwrap_err(), SinkFailed(3), "{mode:?}, {threads} threads");
                // The others stopped at the same step: far fewer puts than steps.
                let steps = plan.stats().steps;
                assert!(sinks.iter().all(|s| s.puts <= 5), "{mode:?}: {steps} steps");
            }
        }
    }
}

#[test]
fn instances_garble_alone_with_their_flat_and_base() {
    let (c, spans) = region_circuit(21, 16, &[(5, 40, true), (4, 30, false)], 50);
    let pc = ParallelCircuit::from_flat(&c, &spans).unwrap();
    let flat = pc.flatten();
    let f = Fixture::new(77, pc.layout.num_input_wires() as usize);
    // All zero-labels of the flattened circuit from the sequential garbler.
    let mut garbler = Garbler::new(flat.layout.num_wires as usize, f.delta, f.key);
    for (w, &z) in f.zero.iter().enumerate() {
        garbler.set_zero_label(w as WireId, z);
    }
    let mut seq_tables = Vec::new();
    garbler.garble(&flat.gates, &mut seq_tables);
    let plan = Plan::new(&pc, 1, Mode::None, 1);
    let hash = TccrHash::new(f.key);
    let (mut scratch, mut tables, mut out_zero) = (Vec::new(), Vec::new(), Vec::new());
    let mut eval_out = Vec::new();
    let mut checked = 0;
    for (p, phase) in pc.phases.iter().enumerate() {
        let Phase::Region(region) = phase else {
            continue;
        };
        for (i, inst) in region.instances.iter().enumerate() {
            let template = &pc.templates[inst.template as usize];
            let base = plan.instance_and_base(p, i).unwrap();
            let inputs: Vec<Block> = inst.inputs.iter().map(|&w| garbler.zero_label(w)).collect();
            tables.clear();
            parallel::garble_instance(
                template,
                base,
                f.delta,
                &hash,
                &inputs,
                &mut scratch,
                &mut tables,
                &mut out_zero,
            );
            let n = 2 * template.and_count() as usize;
            let b = 2 * base as usize;
            assert_eq!(tables, seq_tables[b..b + n], "phase {p}, instance {i}");
            let expected: Vec<Block> = inst
                .outputs
                .iter()
                .map(|&w| garbler.zero_label(w))
                .collect();
            assert_eq!(out_zero, expected);
            // Evaluated on zero-labels (inputs 0), each output holds the label of its
            // cleartext value.
            let mut clear = vec![false; template.num_wires() as usize];
            for g in &template.gates {
                clear[g.out as usize] = match g.op {
                    Op::And => clear[g.a as usize] & clear[g.b as usize],
                    Op::Xor => clear[g.a as usize] ^ clear[g.b as usize],
                    Op::Inv => !clear[g.a as usize],
                    Op::Copy => clear[g.a as usize],
                    Op::Const => g.a != 0,
                };
            }
            let expected: Vec<Block> = template
                .outputs
                .iter()
                .zip(&expected)
                .map(|(&w, &z)| z ^ f.delta.select(clear[w as usize]))
                .collect();
            parallel::evaluate_instance(
                template,
                base,
                &hash,
                &inputs,
                &tables,
                &mut scratch,
                &mut eval_out,
            )
            .unwrap();
            assert_eq!(eval_out, expected);
            if n > 0 {
                let r = parallel::evaluate_instance(
                    template,
                    base,
                    &hash,
                    &inputs,
                    &tables[1..],
                    &mut scratch,
                    &mut eval_out,
                );
                assert!(r.is_err());
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 9);
    assert_eq!(plan.instance_and_base(0, 0), None, "phase 0 is sequential");
}

#[test]
fn offline_garbling_reports_its_ands() {
    let pc = ParallelCircuit::sequential(&layered_ands(32, 10, 9)).unwrap();
    for threads in [1, 3] {
        let plan = Plan::new(&pc, threads, Mode::Fgp, 2);
        let stats = parallel::garble_offline(&plan, &pc);
        assert_eq!(stats.and_gates, 320);
        assert!(stats.seconds > 0.0 && stats.and_per_sec > 0.0);
    }
}

#[test]
fn vec_sinks_collect_and_are_infallible() {
    let mut sink: Vec<Block> = Vec::new();
    let r: Result<(), Infallible> = sink.put(&[Block(1), Block(2)]);
    assert!(r.is_ok());
    assert_eq!(sink, vec![Block(1), Block(2)]);
}

/// A sink that panics on its first put.
struct PanickingSink(bool);

impl TableSink for PanickingSink {
    type Error = Infallible;
    fn put(&mut self, _tables: &[Block]) -> Result<(), Infallible> {
        assert!(!self.0, "sink told to panic");
        Ok(())
    }
}

#[test]
fn a_panicking_sink_is_resumed_not_a_hang() {
    let pc = ParallelCircuit::sequential(&layered_ands(64, 10, 6)).unwrap();
    let f = Fixture::new(6, pc.layout.num_input_wires() as usize);
    let plan = Plan::new(&pc, 3, Mode::Fgp, 4);
    let mut sinks = vec![
        PanickingSink(false),
        PanickingSink(false),
        PanickingSink(true),
    ];
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parallel::garble(&plan, &pc, f.delta, f.key, &f.zero, &mut sinks)
    }));
    assert!(r.is_err());
}

#[test]
fn a_large_label_array_zeroed_by_the_threads_holds_the_inputs() {
    // Over 2^16 wires, so the label array is filled by the plan's threads together
    // (`initial_labels`), with the inputs in its first chunk.
    let (c, spans) = region_circuit(21, 70_000, &[(9, 30, true)], 200);
    let pc = ParallelCircuit::from_flat(&c, &spans).unwrap();
    assert!(pc.layout.num_wires > 1 << 16);
    let flat = pc.flatten();
    let f = Fixture::new(77, pc.layout.num_input_wires() as usize);
    let expected = eval_bits(&flat, &f.bits);
    let (seq_tables, seq_outputs) = sequential_reference(&flat, &f);
    for threads in [2, 3, 8] {
        let plan = Plan::new(&pc, threads, Mode::Cgp, 1);
        assert!(plan.stats().active_threads > 1, "{threads} threads");
        let (streams, out_zero) = garble_to_vecs(&plan, &pc, &f);
        assert_eq!(
            out_zero, seq_outputs,
            "{threads} threads: output zero-labels"
        );
        let mut all: Vec<Block> = streams.concat();
        let mut seq = seq_tables.clone();
        all.sort_by_key(|b| b.0);
        seq.sort_by_key(|b| b.0);
        assert_eq!(all, seq, "{threads} threads: the same tables");
        let mut sources: Vec<SliceSource> = streams.iter().map(|s| SliceSource::new(s)).collect();
        let labels = parallel::evaluate(&plan, &pc, f.key, &f.active(), &mut sources).unwrap();
        let bits: Vec<bool> = labels
            .iter()
            .zip(&out_zero)
            .map(|(l, z)| l.lsb() ^ z.lsb())
            .collect();
        assert_eq!(bits, expected, "{threads} threads: outputs");
    }
}

/// A chunk header of a claimed step, as the streams carry it: "pgc-chnk" (big-endian) in
/// the high 64 bits, the chunk number (or all ones: the end block) in the low 64.
fn chunk_block(chunk: u64) -> Block {
    Block(((u64::from_be_bytes(*b"pgc-chnk") as u128) << 64) | chunk as u128)
}

fn is_chunk_block(b: &Block) -> bool {
    (b.0 >> 64) as u64 == u64::from_be_bytes(*b"pgc-chnk")
}

/// Garbles with a claimed plan into vectors: the streams, with their header blocks.
fn garble_claimed(plan: &Plan, pc: &ParallelCircuit, f: &Fixture) -> (Vec<Vec<Block>>, Vec<Block>) {
    let mut sinks: Vec<Vec<Block>> = vec![Vec::new(); plan.threads()];
    let out = parallel::garble(plan, pc, f.delta, f.key, &f.zero, &mut sinks).unwrap();
    let total: u64 = out.blocks_per_stream.iter().sum();
    assert_eq!(total, 2 * pc.and_count() + plan.header_blocks());
    (sinks, out.output_zero_labels)
}

fn decoded(labels: &[Block], out_zero: &[Block]) -> Vec<bool> {
    labels
        .iter()
        .zip(out_zero)
        .map(|(l, z)| l.lsb() ^ z.lsb())
        .collect()
}

#[test]
fn claimed_plans_carry_the_sequential_tables_and_evaluate_to_cleartext() {
    for (name, pc) in test_circuits() {
        let flat = pc.flatten();
        let f = Fixture::new(
            0x5678 + pc.and_count() as u128,
            flat.layout.num_input_wires() as usize,
        );
        let expected = eval_bits(&flat, &f.bits);
        let (seq_tables, seq_outputs) = sequential_reference(&flat, &f);
        let mut sorted_seq = seq_tables.clone();
        sorted_seq.sort_by_key(|b| b.0);
        for mode in MODES {
            for threads in THREADS {
                for tau in [1, 4, parallel::DEFAULT_TAU] {
                    let what = format!("{name}, {mode:?}, {threads} threads, tau {tau}");
                    let plan = Plan::claimed(&pc, threads, mode, tau);
                    let fixed = Plan::new(&pc, threads, mode, tau);
                    // The same steps and figures as the fixed split; claims where it splits
                    // a region.
                    assert_eq!(plan.stats(), fixed.stats(), "{what}");
                    if mode == Mode::Cgp && fixed.stats().parallel_steps > 0 {
                        assert!(plan.is_claimed(), "{what}");
                    }
                    if !plan.is_claimed() {
                        assert_eq!(plan.header_blocks(), 0, "{what}");
                    }
                    let (streams, out_zero) = garble_claimed(&plan, &pc, &f);
                    assert_eq!(out_zero, seq_outputs, "{what}: output zero-labels");
                    // Besides the headers, the streams hold exactly the sequential tables.
                    let headers = streams
                        .iter()
                        .flatten()
                        .filter(|b| is_chunk_block(b))
                        .count();
                    assert_eq!(headers as u64, plan.header_blocks(), "{what}: headers");
                    let mut tables: Vec<Block> = streams
                        .iter()
                        .flatten()
                        .filter(|b| !is_chunk_block(b))
                        .copied()
                        .collect();
                    tables.sort_by_key(|b| b.0);
                    assert_eq!(tables, sorted_seq, "{what}: the tables");
                    let eval_plan = Plan::claimed(&pc, threads, mode, tau);
                    let mut sources: Vec<SliceSource> =
                        streams.iter().map(|s| SliceSource::new(s)).collect();
                    let labels =
                        parallel::evaluate(&eval_plan, &pc, f.key, &f.active(), &mut sources)
                            .unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(
                        sources.iter().all(|s| s.remaining() == 0),
                        "{what}: all read"
                    );
                    assert_eq!(decoded(&labels, &out_zero), expected, "{what}: outputs");
                }
            }
        }
    }
}

/// Only regions of equal instances, no tables outside them (linear glue only), so every
/// claimed chunk is one instance of the same size.
fn only_regions() -> ParallelCircuit {
    let (c, spans) = region_circuit(21, 16, &[(12, 30, true), (9, 30, true)], 0);
    let pc = ParallelCircuit::from_flat(&c, &spans).unwrap();
    assert_eq!(pc.flatten().gates.len(), c.gates.len());
    pc
}

#[test]
fn any_evaluator_thread_may_evaluate_any_chunk() {
    // Claims are the garbler's; the evaluator follows the headers. With all tables in
    // claimed steps of 3 threads, the streams evaluate in any order.
    let pc = only_regions();
    let f = Fixture::new(77, pc.layout.num_input_wires() as usize);
    let expected = eval_bits(&pc.flatten(), &f.bits);
    let plan = Plan::claimed(&pc, 3, Mode::Cgp, 1);
    assert!(plan.is_claimed());
    for round in 0..5 {
        let (mut streams, out_zero) = garble_claimed(&plan, &pc, &f);
        streams.rotate_left(1 + round % 2);
        let mut sources: Vec<SliceSource> = streams.iter().map(|s| SliceSource::new(s)).collect();
        let labels = parallel::evaluate(&plan, &pc, f.key, &f.active(), &mut sources)
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(decoded(&labels, &out_zero), expected, "round {round}");
    }
}

/// The chunks of claimed streams with no tables outside claimed steps, dealt out again
/// round-robin over `threads` streams (chunk c of each region to stream c mod `threads`):
/// the claims a garbler could have made, fixed so that a test does not depend on timing.
fn deal_chunks(streams: &[Vec<Block>], regions: usize, threads: usize) -> Vec<Vec<Block>> {
    // Per region, chunk number → its header and tables.
    let mut chunks: Vec<std::collections::BTreeMap<u64, Vec<Block>>> =
        vec![Default::default(); regions];
    for stream in streams {
        let mut region = 0;
        let mut at = 0;
        while at < stream.len() {
            assert!(is_chunk_block(&stream[at]));
            let c = stream[at].0 as u64;
            if c == u64::MAX {
                region += 1;
                at += 1;
                continue;
            }
            let end = at + 1 + stream[at + 1..].iter().position(is_chunk_block).unwrap();
            chunks[region].insert(c, stream[at..end].to_vec());
            at = end;
        }
    }
    let mut out = vec![Vec::new(); threads];
    for region in chunks {
        for (c, blocks) in region {
            out[c as usize % threads].extend(blocks);
        }
        for stream in &mut out {
            stream.push(chunk_block(u64::MAX));
        }
    }
    out
}

#[test]
fn claimed_streams_that_do_not_match_the_plan_are_refused() {
    use parallel::ClaimProblem;
    let pc = only_regions();
    let f = Fixture::new(78, pc.layout.num_input_wires() as usize);
    let plan = Plan::claimed(&pc, 2, Mode::Cgp, 1);
    let (garbled, _) = garble_claimed(&plan, &pc, &f);
    // Each chunk is one instance, all of one size: 12 chunks in the first region, 9 in
    // the second; stream 0 holds the even ones, stream 1 the odd ones.
    let streams = deal_chunks(&garbled, 2, 2);
    let evaluate = |streams: &[Vec<Block>]| {
        let mut sources: Vec<SliceSource> = streams.iter().map(|s| SliceSource::new(s)).collect();
        parallel::evaluate(&plan, &pc, f.key, &f.active(), &mut sources)
    };
    let problem = |r: Result<Vec<Block>, EvalError<StreamEnded>>| match r {
        Err(EvalError::Claim { problem, .. }) => problem,
        other => panic!("{other:?}"),
    };
    assert_eq!(streams[0][0], chunk_block(0));
    // Stream 0 names chunk 1 (stream 1's first) instead of chunk 0.
    let mut twice = streams.clone();
    twice[0][0] = chunk_block(1);
    assert_eq!(problem(evaluate(&twice)), ClaimProblem::Twice { chunk: 1 });
    // A chunk beyond the region.
    let mut beyond = streams.clone();
    beyond[0][0] = chunk_block(12);
    assert_eq!(
        problem(evaluate(&beyond)),
        ClaimProblem::OutOfRange {
            chunk: 12,
            chunks: 12
        }
    );
    // Not a header.
    let mut garbage = streams.clone();
    garbage[0][0] = Block(garbage[0][0].0 ^ (1 << 100));
    assert_eq!(problem(evaluate(&garbage)), ClaimProblem::NotAHeader);
    // A chunk left out: stream 0 without chunk 0 (header and tables).
    let next = 1 + streams[0][1..].iter().position(is_chunk_block).unwrap();
    let mut missing = streams.clone();
    missing[0].drain(..next);
    assert_eq!(
        problem(evaluate(&missing)),
        ClaimProblem::Missing {
            got: 11,
            chunks: 12
        }
    );
    // The error names the thread and the region.
    let e = evaluate(&missing).unwrap_err().to_string();
    assert!(
        e.contains("the streams named 11 of the region's 12 chunks"),
        "{e}"
    );
    // As dealt, and as the garbler claimed them, the streams evaluate.
    evaluate(&streams).unwrap();
    evaluate(&garbled).unwrap();
}

#[test]
#[should_panic(expected = "written by another instance")]
fn a_plan_refuses_instances_run_in_parallel_that_write_one_wire() {
    let (c, spans) = region_circuit(31, 16, &[(8, 20, true)], 20);
    let mut pc = ParallelCircuit::from_flat(&c, &spans).unwrap();
    let region = pc
        .phases
        .iter_mut()
        .find_map(|p| match p {
            Phase::Region(r) => Some(r),
            Phase::Sequential(_) => None,
        })
        .unwrap();
    let shared = region.instances[0].outputs[0];
    region.instances[5].outputs[0] = shared;
    let _ = Plan::claimed(&pc, 2, Mode::Cgp, 1);
}

#[test]
fn runs_use_the_wires_the_plan_checked_whatever_the_circuit_says_later() {
    // The plan copies the wires of the regions it runs in parallel when it is made; a run
    // reads and writes those, so two instances made to write one wire afterwards cannot
    // race (the circuit's instance lists are public fields).
    let (c, spans) = region_circuit(32, 16, &[(8, 20, true)], 20);
    let pc = ParallelCircuit::from_flat(&c, &spans).unwrap();
    let f = Fixture::new(5, pc.layout.num_input_wires() as usize);
    for plan in [
        Plan::new(&pc, 3, Mode::Cgp, 1),
        Plan::claimed(&pc, 3, Mode::Cgp, 1),
    ] {
        assert!(plan.stats().parallel_steps > 0);
        let mut sinks: Vec<Vec<Block>> = vec![Vec::new(); 3];
        let before = parallel::garble(&plan, &pc, f.delta, f.key, &f.zero, &mut sinks).unwrap();
        let mut changed = pc.clone();
        for p in &mut changed.phases {
            if let Phase::Region(r) = p {
                let shared = r.instances[0].outputs[0];
                r.instances[5].outputs[0] = shared;
            }
        }
        let mut sinks: Vec<Vec<Block>> = vec![Vec::new(); 3];
        let after = parallel::garble(&plan, &changed, f.delta, f.key, &f.zero, &mut sinks).unwrap();
        assert_eq!(after.output_zero_labels, before.output_zero_labels);
    }
}
