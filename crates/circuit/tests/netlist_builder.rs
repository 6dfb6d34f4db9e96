//! NetBuilder: folding rules, structural hashing, dead-gate elimination, numbering, and the
//! spill path giving the same circuit as the in-memory one.

use pgc_circuit::analysis::{validate, validate_ssa};
use pgc_circuit::eval::{eval_bits, eval_bitsliced};
use pgc_circuit::generate::SplitMix64;
use pgc_circuit::ir::{Circuit, Op};
use pgc_circuit::netlist::{BuildStats, Gates, Lit, NetBuilder, OptimizeFor};

fn finish(b: NetBuilder) -> (Circuit, BuildStats) {
    let (c, s) = b.finish();
    validate_ssa(&c).expect("NetBuilder output must be valid SSA");
    (c, s)
}

#[test]
fn constant_folding_rules() {
    let mut b = NetBuilder::new(OptimizeFor::Size);
    let x = b.input(1)[0];
    assert_eq!(b.and(x, Lit::FALSE), Lit::FALSE);
    assert_eq!(b.and(Lit::FALSE, x), Lit::FALSE);
    assert_eq!(b.and(x, Lit::TRUE), x);
    assert_eq!(b.and(Lit::TRUE, !x), !x);
    assert_eq!(b.xor(x, Lit::FALSE), x);
    assert_eq!(b.xor(Lit::TRUE, x), !x);
    assert_eq!(b.xor(Lit::TRUE, Lit::TRUE), Lit::FALSE);
    assert_eq!(b.and(Lit::TRUE, Lit::TRUE), Lit::TRUE);
    assert_eq!(b.gates_emitted(), 0);
    assert_eq!(b.stats().constant_folded, 8);
}

#[test]
fn algebraic_rules() {
    let mut b = NetBuilder::new(OptimizeFor::Size);
    let x = b.input(1)[0];
    assert_eq!(b.xor(x, x), Lit::FALSE);
    assert_eq!(b.xor(!x, !x), Lit::FALSE);
    assert_eq!(b.xor(x, !x), Lit::TRUE);
    assert_eq!(b.and(x, x), x);
    assert_eq!(b.and(!x, !x), !x);
    assert_eq!(b.and(x, !x), Lit::FALSE);
    assert_eq!(b.or(x, !x), Lit::TRUE);
    assert_eq!(b.gates_emitted(), 0);
    assert_eq!(b.stats().algebraic, 7);
}

#[test]
fn structural_hashing_reuses_gates_in_every_polarity() {
    let mut b = NetBuilder::new(OptimizeFor::Size);
    let v = b.input(2);
    let (x, y) = (v[0], v[1]);
    let a1 = b.and(x, y);
    let a2 = b.and(y, x);
    assert_eq!(a1, a2);
    let a3 = b.and(!x, y);
    assert_ne!(
        a1.positive(),
        a3.positive(),
        "complement flags are part of the AND key"
    );
    let x1 = b.xor(x, y);
    assert_eq!(b.xor(y, x), x1);
    assert_eq!(b.xor(!x, y), !x1);
    assert_eq!(b.xor(x, !y), !x1);
    assert_eq!(b.xor(!y, !x), x1);
    assert_eq!(b.gates_emitted(), 3);
    assert_eq!(b.stats().structural_hashing, 5);
    b.output(&[a1, a3, !x1]);
    let (c, s) = finish(b);
    assert_eq!(s.gates_emitted, 3);
    for bits in 0..4u32 {
        let (xv, yv) = (bits & 1 == 1, bits & 2 == 2);
        let out = eval_bits(&c, &[xv, yv]);
        assert_eq!(out, vec![xv & yv, !xv & yv, !(xv ^ yv)]);
    }
}

#[test]
fn bounded_strash_still_correct() {
    // A tiny table forgets gates, so duplicates appear, but the function stays right.
    let mut small = NetBuilder::new(OptimizeFor::Size);
    small.set_strash_limit(2);
    let mut big = NetBuilder::new(OptimizeFor::Size);
    for b in [&mut small, &mut big] {
        let v = b.input(4);
        let mut acc = Vec::new();
        for _ in 0..3 {
            for i in 0..4 {
                let t = b.and(v[i], v[(i + 1) % 4]);
                acc.push(b.xor(t, v[(i + 2) % 4]));
            }
        }
        b.output(&acc);
    }
    assert!(small.gates_emitted() > big.gates_emitted());
    let (cs, _) = finish(small);
    let (cb, _) = finish(big);
    for x in 0..16u32 {
        let bits: Vec<bool> = (0..4).map(|i| x >> i & 1 == 1).collect();
        assert_eq!(eval_bits(&cs, &bits), eval_bits(&cb, &bits));
    }
}

#[test]
fn dead_gates_are_removed() {
    let mut b = NetBuilder::new(OptimizeFor::Size);
    let v = b.input(3);
    let dead_and = b.and(v[0], v[1]);
    let _dead_xor = b.xor(dead_and, v[2]);
    let live = b.and(v[1], v[2]);
    b.output(&[live]);
    let (c, s) = finish(b);
    assert_eq!(s.gates_emitted, 3);
    assert_eq!(s.dead_removed, 2);
    assert_eq!(s.and_dead_removed, 1);
    assert_eq!(s.gates_final, 1);
    assert_eq!(s.and_final, 1);
    assert_eq!(c.gates.len(), 1);
    assert_eq!(c.layout.num_wires, 4);
}

#[test]
fn inputs_declared_after_gates_keep_order_and_come_first() {
    let mut b = NetBuilder::new(OptimizeFor::Size);
    let a = b.input(2);
    let t = b.and(a[0], a[1]);
    let late = b.input(3);
    let u = b.xor(t, late[2]);
    let w = b.and(u, !late[0]);
    let last = b.input(1);
    b.output(&[w, last[0]]);
    b.output(&[!late[1]]);
    let (c, _) = finish(b);
    assert_eq!(c.layout.input_widths, vec![2, 3, 1]);
    assert_eq!(c.layout.num_input_wires(), 6);
    // The second output bit is the last input directly.
    assert_eq!(c.layout.output_wires[1], 5);
    for x in 0..64u32 {
        let bits: Vec<bool> = (0..6).map(|i| x >> i & 1 == 1).collect();
        let want_w = ((bits[0] & bits[1]) ^ bits[4]) & !bits[2];
        assert_eq!(
            eval_bits(&c, &bits),
            vec![want_w, bits[5], !bits[3]],
            "x={x}"
        );
    }
}

#[test]
fn constant_complemented_and_repeated_outputs() {
    let mut b = NetBuilder::new(OptimizeFor::Size);
    let v = b.input(2);
    let t = b.and(v[0], v[1]);
    b.output(&[Lit::TRUE, Lit::FALSE, !t, t, !t, v[0], !v[0], Lit::TRUE]);
    b.output(&[]);
    let (c, s) = finish(b);
    assert_eq!(c.layout.output_widths, vec![8, 0]);
    let consts = c.gates.iter().filter(|g| g.op == Op::Const).count();
    let invs = c.gates.iter().filter(|g| g.op == Op::Inv).count();
    assert_eq!(consts, 2, "one constant gate per value");
    assert_eq!(invs, 2, "one INV per complemented wire");
    assert_eq!(s.gates_final, c.gates.len() as u64);
    for x in 0..4u32 {
        let (p, q) = (x & 1 == 1, x & 2 == 2);
        assert_eq!(
            eval_bits(&c, &[p, q]),
            vec![true, false, !(p & q), p & q, !(p & q), p, !p, true]
        );
    }
}

#[test]
fn complemented_and_operands_get_one_shared_inv() {
    let mut b = NetBuilder::new(OptimizeFor::Size);
    let v = b.input(3);
    let t = b.xor(v[0], v[1]);
    let p = b.and(!t, v[2]);
    let q = b.and(!t, !v[2]);
    let r = b.or(p, q); // !(!p & !q)
    b.output(&[r]);
    let (c, _) = finish(b);
    // INVs: !t once, !v2 once, !p, !q; r's complement for the output.
    let invs = c.gates.iter().filter(|g| g.op == Op::Inv).count();
    assert_eq!(invs, 5);
    for x in 0..8u32 {
        let bits: Vec<bool> = (0..3).map(|i| x >> i & 1 == 1).collect();
        assert_eq!(eval_bits(&c, &bits), vec![!(bits[0] ^ bits[1])]);
    }
}

#[test]
fn empty_and_input_only_circuits() {
    let (c, s) = finish(NetBuilder::new(OptimizeFor::Depth));
    assert_eq!(c.layout.num_wires, 0);
    assert!(c.gates.is_empty());
    assert_eq!(s, BuildStats::default());
    let mut b = NetBuilder::new(OptimizeFor::Size);
    let v = b.input(0);
    assert!(v.is_empty());
    let w = b.input(2);
    b.output(&[w[1], w[0]]);
    let (c, _) = finish(b);
    assert_eq!(c.layout.input_widths, vec![0, 2]);
    assert_eq!(c.layout.output_wires, vec![1, 0]);
    assert!(c.gates.is_empty());
}

/// A random gate soup over interleaved inputs, with random outputs. Returns random input
/// lanes (one word per input wire) and the output lanes a direct simulation of the calls
/// gives for them.
fn random_netlist(b: &mut NetBuilder, seed: u64, steps: usize) -> (Vec<u64>, Vec<u64>) {
    let mut rng = SplitMix64::new(seed);
    // Each pool entry: the literal and its simulated value on 64 lanes.
    let mut pool: Vec<(Lit, u64)> = vec![(Lit::TRUE, !0), (Lit::FALSE, 0)];
    let (mut input_lanes, mut output_lanes) = (Vec::new(), Vec::new());
    for step in 0..steps {
        if step % 97 == 0 {
            let w = 1 + rng.below(4);
            for l in b.input(w) {
                let v = rng.next_u64();
                input_lanes.push(v);
                pool.push((l, v));
            }
        }
        let pick = |rng: &mut SplitMix64, pool: &[(Lit, u64)]| {
            let (l, v) = pool[rng.below(pool.len() as u32) as usize];
            if rng.next_bool() { (!l, !v) } else { (l, v) }
        };
        let ((x, xv), (y, yv)) = (pick(&mut rng, &pool), pick(&mut rng, &pool));
        let r = match rng.below(4) {
            0 => (b.and(x, y), xv & yv),
            1 => (b.xor(x, y), xv ^ yv),
            2 => (b.or(x, y), xv | yv),
            _ => {
                let (s, sv) = pick(&mut rng, &pool);
                (b.mux(s, x, y), (sv & xv) | (!sv & yv))
            }
        };
        pool.push(r);
        if rng.below(50) == 0 {
            let outs: Vec<(Lit, u64)> = (0..1 + rng.below(5))
                .map(|_| pick(&mut rng, &pool))
                .collect();
            b.output(&outs.iter().map(|o| o.0).collect::<Vec<_>>());
            output_lanes.extend(outs.iter().map(|o| o.1));
        }
    }
    (input_lanes, output_lanes)
}

#[test]
fn random_netlists_are_valid_and_deterministic() {
    for seed in 0..20 {
        let mut b1 = NetBuilder::new(OptimizeFor::Size);
        let (inputs, want) = random_netlist(&mut b1, seed, 2000);
        let mut b2 = NetBuilder::new(OptimizeFor::Size);
        random_netlist(&mut b2, seed, 2000);
        let (c1, s1) = finish(b1);
        let (c2, s2) = finish(b2);
        validate(&c1).unwrap();
        assert_eq!(eval_bitsliced(&c1, &inputs), want, "seed {seed}");
        assert_eq!(c1, c2);
        assert_eq!(s1, s2);
        assert_eq!(s1.gates_final, c1.gates.len() as u64);
        assert_eq!(s1.and_final, c1.and_count());
        assert_eq!(
            s1.gates_emitted - s1.dead_removed,
            c1.gates
                .iter()
                .filter(|g| matches!(g.op, Op::And | Op::Xor))
                .count() as u64
        );
    }
}

#[test]
fn spill_gives_the_same_circuit() {
    let dir = std::env::temp_dir();
    for seed in 0..6 {
        let mut mem = NetBuilder::new(OptimizeFor::Size);
        let mut spill = NetBuilder::with_spill(OptimizeFor::Size, &dir).unwrap();
        // Enough nodes for several spill chunks.
        let (inputs, want) = random_netlist(&mut mem, seed, 150_000);
        random_netlist(&mut spill, seed, 150_000);
        let (cm, sm) = finish(mem);
        let (cs, ss) = finish(spill);
        assert_eq!(eval_bitsliced(&cm, &inputs), want, "seed {seed}");
        assert_eq!(cm, cs, "seed {seed}");
        assert_eq!(sm, ss, "seed {seed}");
    }
}

#[test]
fn prepared_netlist_streams_chunks() {
    let mut b = NetBuilder::new(OptimizeFor::Size);
    random_netlist(&mut b, 99, 200_000);
    let mut b2 = NetBuilder::new(OptimizeFor::Size);
    random_netlist(&mut b2, 99, 200_000);
    let (whole, _) = finish(b2);
    let prepared = b.prepare().unwrap();
    assert_eq!(prepared.layout(), &whole.layout);
    assert_eq!(prepared.gate_count(), whole.gates.len() as u64);
    assert_eq!(prepared.and_count(), whole.and_count());
    let mut streamed = Vec::new();
    let mut chunks = 0;
    prepared
        .for_each_chunk(|chunk| {
            chunks += 1;
            streamed.extend_from_slice(chunk);
            Ok::<(), pgc_circuit::netlist::NetlistError>(())
        })
        .unwrap();
    assert!(chunks > 1);
    assert_eq!(streamed, whole.gates);
}

#[test]
fn spill_file_is_removed() {
    let dir = std::env::temp_dir().join(format!("pgc-netlist-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut b = NetBuilder::with_spill(OptimizeFor::Size, &dir).unwrap();
    let v = b.input(2);
    let t = b.and(v[0], v[1]);
    b.output(&[t]);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    let (c, _) = finish(b);
    assert_eq!(c.and_count(), 1);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir(&dir).unwrap();
    assert!(NetBuilder::with_spill(OptimizeFor::Size, &dir).is_err());
}

#[test]
#[should_panic(expected = "never made")]
fn foreign_literals_are_refused() {
    let mut other = NetBuilder::new(OptimizeFor::Size);
    let far = other.input(10)[9];
    let mut b = NetBuilder::new(OptimizeFor::Size);
    let x = b.input(1)[0];
    b.and(x, far);
}

#[test]
fn two_level_rules() {
    let mut b = NetBuilder::new(OptimizeFor::Size);
    let v = b.input(3);
    let (x, y, z) = (v[0], v[1], v[2]);
    let xy = b.and(x, y);
    assert_eq!(b.and(x, xy), xy);
    assert_eq!(b.and(xy, y), xy);
    assert_eq!(b.and(!x, xy), Lit::FALSE);
    let nxz = b.and(!x, z);
    assert_eq!(b.and(x, !nxz), x);
    assert_eq!(b.and(xy, nxz), Lit::FALSE);
    let t = b.xor(x, y);
    assert_eq!(b.xor(x, t), y);
    assert_eq!(b.xor(!t, y), !x);
    assert_eq!(b.xor(!x, !t), y);
    assert_eq!(b.gates_emitted(), 3);
    assert_eq!(b.stats().algebraic, 8);
}

#[test]
fn two_level_rules_only_look_at_recent_gates() {
    // Beyond the window of recent nodes a gate is opaque, in RAM and spill mode alike.
    let mut b = NetBuilder::new(OptimizeFor::Size);
    let v = b.input(2);
    let t = b.xor(v[0], v[1]);
    let mut acc = v[0];
    for _ in 0..70_000 {
        acc = b.xor(acc, v[1]);
        acc = b.and(acc, t);
        acc = !acc;
    }
    let far = b.xor(v[0], t);
    assert_ne!(far, v[1]);
    let near = b.xor(acc, v[0]);
    assert_eq!(b.xor(near, v[0]), acc);
}

// ---- template calls (compact circuits) ----

use pgc_circuit::compact::{Call, Item};

/// Builds `out = f(x & y, !x, 1)` where f is template 0 with 3 inputs and 2 outputs, plus a
/// dead call, and returns the items.
fn build_with_calls(b: &mut NetBuilder) {
    let x = b.input(1)[0];
    let y = b.input(1)[0];
    let xy = b.and(x, y);
    let outs = b.call(0, &[xy, !x, Lit::TRUE], 2);
    let _dead = b.call(0, &[x, y, x], 2);
    let r = b.xor(outs[0], y);
    b.output(&[r, !outs[1]]);
}

#[test]
fn calls_become_items_with_fresh_outputs() {
    for spill in [false, true] {
        let dir = std::env::temp_dir();
        let mut b = if spill {
            NetBuilder::with_spill(OptimizeFor::Size, &dir).unwrap()
        } else {
            NetBuilder::new(OptimizeFor::Size)
        };
        build_with_calls(&mut b);
        let prepared = b.prepare().unwrap();
        assert!(prepared.has_calls());
        let (layout, items, stats) = prepared.into_items().unwrap();
        assert_eq!(stats.calls_final, 1, "the unused call is removed");
        assert_eq!(stats.calls_dead_removed, 1);
        let calls: Vec<&Call> = items
            .iter()
            .filter_map(|i| match i {
                Item::Call(c) => Some(&**c),
                _ => None,
            })
            .collect();
        assert_eq!(calls.len(), 1);
        let call = calls[0];
        assert_eq!(call.template, 0);
        assert_eq!(call.inputs.len(), 3);
        assert_eq!(call.outputs.len(), 2);
        // Input 1 is !x: an INV of input wire 0; input 2 the constant-1 wire.
        let defining = |w: u32| {
            items.iter().find_map(|i| match i {
                Item::Gate(g) if g.out == w => Some(*g),
                _ => None,
            })
        };
        let inv = defining(call.inputs[1]).expect("an INV defines !x");
        assert_eq!((inv.op, inv.a), (Op::Inv, 0));
        let one = defining(call.inputs[2]).expect("a constant gate defines 1");
        assert_eq!((one.op, one.a), (Op::Const, 1));
        // Output 1 is read complemented: an INV follows the call.
        let inv_out = defining(layout.output_wires[1]).expect("INV of output 1");
        assert_eq!((inv_out.op, inv_out.a), (Op::Inv, call.outputs[1]));
        // Single assignment over the whole body, everything below num_wires.
        let mut seen = std::collections::HashSet::new();
        for item in &items {
            let outs: Vec<u32> = match item {
                Item::Gate(g) => vec![g.out],
                Item::Call(c) => c.outputs.clone(),
            };
            for w in outs {
                assert!(w < layout.num_wires && w >= 2 && seen.insert(w));
            }
        }
    }
}

#[test]
fn flat_finishing_refuses_calls() {
    let mut b = NetBuilder::new(OptimizeFor::Size);
    build_with_calls(&mut b);
    let e = b.try_finish().unwrap_err();
    assert!(e.to_string().contains("compact templates"), "{e}");
}

/// Gates and calls of random arity (outputs read plain or complemented, some calls dead),
/// enough of both for several node chunks and several call chunks.
fn random_netlist_with_calls(b: &mut NetBuilder, seed: u64, steps: usize) {
    let mut rng = SplitMix64::new(seed);
    let mut pool: Vec<Lit> = b.input(8);
    pool.push(Lit::TRUE);
    for _ in 0..steps {
        let pick = |rng: &mut SplitMix64, pool: &[Lit]| {
            // Mostly recent values, as a program's would be.
            let back = 1 + rng.below(pool.len().min(300) as u32) as usize;
            let l = pool[pool.len() - back];
            if rng.next_bool() { !l } else { l }
        };
        match rng.below(3) {
            0 => {
                let inputs: Vec<Lit> = (0..1 + rng.below(8))
                    .map(|_| pick(&mut rng, &pool))
                    .collect();
                let outs = b.call(rng.below(5), &inputs, 1 + rng.below(20));
                pool.extend(outs);
            }
            k => {
                let (x, y) = (pick(&mut rng, &pool), pick(&mut rng, &pool));
                let r = if k == 1 { b.and(x, y) } else { b.xor(x, y) };
                pool.push(r);
            }
        }
        if rng.below(200) == 0 {
            let o = pick(&mut rng, &pool);
            b.output(&[o]);
        }
    }
    let last = pool[pool.len() - 1];
    b.output(&[!last]);
}

/// Items forward, and the chunks of the backward walk (last chunk first).
fn items_both_ways(b: NetBuilder) -> (Vec<Item>, Vec<Vec<Item>>, BuildStats) {
    let mut prepared = b.prepare().unwrap();
    let mut backward: Vec<Vec<Item>> = Vec::new();
    prepared
        .for_each_item_backward(|chunk| {
            backward.push(chunk.to_vec());
            Ok::<(), pgc_circuit::netlist::NetlistError>(())
        })
        .unwrap();
    let mut forward = Vec::new();
    let stats = prepared
        .for_each_item(|chunk| {
            forward.extend_from_slice(chunk);
            Ok::<(), pgc_circuit::netlist::NetlistError>(())
        })
        .unwrap();
    (forward, backward, stats)
}

/// The backward walk gives the forward items reversed, and the spill file (call outputs
/// stored as runs) gives the items the in-memory store does, across node chunks and call
/// chunks.
#[test]
fn items_backward_are_the_forward_items_reversed() {
    let dir = std::env::temp_dir();
    for seed in 1..3 {
        let mut mem = NetBuilder::new(OptimizeFor::Size);
        random_netlist_with_calls(&mut mem, seed, 60_000);
        let mut spill = NetBuilder::with_spill(OptimizeFor::Size, &dir).unwrap();
        random_netlist_with_calls(&mut spill, seed, 60_000);
        let (forward, backward, stats) = items_both_ways(mem);
        let (spill_forward, spill_backward, spill_stats) = items_both_ways(spill);
        assert!(backward.len() > 4, "several node chunks (seed {seed})");
        assert!(
            stats.calls_final > 15_000,
            "several call chunks (seed {seed})"
        );
        assert!(stats.calls_dead_removed > 0, "seed {seed}");
        assert_eq!(stats, spill_stats, "seed {seed}");
        assert!(spill_forward == forward, "seed {seed}");
        assert!(spill_backward == backward, "seed {seed}");
        let reversed: Vec<Item> = backward.into_iter().rev().flatten().collect();
        assert_eq!(reversed.len(), forward.len(), "seed {seed}");
        assert!(reversed == forward, "seed {seed}");
    }
}
