//! The CPU reference of the GPU kernels (the kernels' per-gate C code, driven by the
//! scheduler's levels) against the CPU engine, table by table and label by label.

mod common;

use common::{cpu_run, random_case, windows};
use pgc_crypto::{Aes128, Block, Prg, TccrHash};
use pgc_gpu::Scheduler;
use pgc_gpu::reference::{self, AesMaterial};

#[test]
fn t_table_aes_and_tmmo_match_the_cpu_crypto() {
    let mut prg = Prg::from_seed(Block(7));
    for _ in 0..50 {
        let key = prg.random_block();
        let x = prg.random_block();
        let tweak = prg.random_block().0 as u64;
        let material = AesMaterial::new(key);
        assert_eq!(material.encrypt(x), Aes128::new(key).encrypt_block(x));
        assert_eq!(material.tmmo(x, tweak), TccrHash::new(key).tccr(x, tweak));
    }
}

#[test]
fn aes_matches_the_fips_197_vector() {
    // FIPS-197 Appendix C.1: key 000102…0f, plaintext 00112233…ff.
    let key = Block::from_bytes(core::array::from_fn(|i| i as u8));
    let pt = Block::from_bytes(core::array::from_fn(|i| (i as u8) * 0x11));
    let ct = AesMaterial::new(key).encrypt(pt).to_bytes();
    assert_eq!(
        ct,
        [
            0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4,
            0xc5, 0x5a
        ]
    );
}

fn check_case(seed: u64, num_wires: usize, inputs: usize, n: usize, sizes: &[usize]) {
    let case = random_case(seed, num_wires, inputs, n);
    let cpu = cpu_run(&case, seed);
    let aes = AesMaterial::new(cpu.hash_key);

    let mut zero = cpu.zero_start.clone();
    let mut active = cpu.active_start.clone();
    let mut g_sched = Scheduler::new(num_wires);
    let mut e_sched = Scheduler::new(num_wires);
    let mut tables = Vec::new();
    let mut and_base = 0u64;
    for range in windows(n, sizes) {
        let gates = &case.gates[range];
        let s = g_sched.schedule(gates).unwrap();
        let mut window_tables = vec![Block::ZERO; 2 * s.and_gates as usize];
        reference::garble_window(&aes, &s, &mut zero, cpu.delta, and_base, &mut window_tables);
        let s2 = e_sched.schedule(gates).unwrap();
        assert_eq!(s, s2, "scheduling is deterministic");
        reference::evaluate_window(&aes, &s2, &mut active, and_base, &window_tables);
        and_base += s.and_gates;
        tables.extend_from_slice(&window_tables);
    }
    assert_eq!(tables.len(), cpu.tables.len(), "seed {seed}: table count");
    for (j, (g, c)) in tables.iter().zip(&cpu.tables).enumerate() {
        assert_eq!(
            g, c,
            "seed {seed}: table block {j} differs from the CPU engine's"
        );
    }
    assert!(zero == cpu.zero_end, "seed {seed}: zero-labels differ");
    assert!(
        active == cpu.active_end,
        "seed {seed}: evaluated labels differ"
    );
}

#[test]
fn one_window_matches_the_cpu_engine() {
    for seed in 0..6 {
        check_case(seed, 64, 16, 3000, &[usize::MAX]);
    }
}

#[test]
fn many_windows_and_heavy_slot_reuse_match_the_cpu_engine() {
    // Few slots: almost every gate overwrites a slot that others read.
    for seed in 10..16 {
        check_case(seed, 9, 4, 2000, &[1, 7, 64, 3, 500]);
    }
    // Many slots, wide levels.
    check_case(99, 4096, 512, 20_000, &[5000, 1234]);
}

#[test]
fn independent_garbling_agrees_with_its_own_definition() {
    // The seed's scheme: every gate's correction moves its computed output onto the drawn
    // label. Evaluate in the sequential order with corrections and check the values.
    let case = random_case(3, 300, 300, 2000);
    // SSA: give every gate a fresh output wire, as the scheme needs.
    let mut gates = case.gates.clone();
    let mut next = 300u32;
    let mut latest: Vec<u32> = (0..300).collect();
    for g in &mut gates {
        g.a = if g.op == pgc_circuit::Op::Const {
            g.a
        } else {
            latest[g.a as usize % 300]
        };
        g.b = latest[g.b as usize % 300];
        latest[g.out as usize % 300] = next;
        g.out = next;
        next += 1;
    }
    let num_wires = next as usize;
    let mut prg = Prg::from_seed(Block(4));
    let delta = Block(prg.random_block().0 | 1);
    let (label_key, hash_key) = (prg.random_block(), prg.random_block());
    let label_aes = AesMaterial::new(label_key);
    let labels: Vec<Block> = (0..num_wires as u64)
        .map(|w| label_aes.encrypt(Block(w as u128)))
        .collect();
    let s = Scheduler::new(num_wires).schedule(&gates).unwrap();
    let mut tables = vec![Block::ZERO; 2 * s.and_gates as usize];
    let mut corrections = vec![Block::ZERO; s.records.len()];
    let aes = AesMaterial::new(hash_key);
    reference::garble_independent(&aes, &s, &labels, delta, 0, &mut tables, &mut corrections);
    // Evaluate with random inputs through the half-gates evaluator plus corrections.
    let bits: Vec<bool> = (0..num_wires).map(|_| prg.random_bool()).collect();
    let mut value = bits.clone();
    let mut active: Vec<Block> = (0..num_wires)
        .map(|w| labels[w] ^ delta.select(bits[w]))
        .collect();
    let hash = TccrHash::new(hash_key);
    let index_of: std::collections::HashMap<u32, usize> = s
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| (r[2], i))
        .collect();
    let mut j = 0u64;
    for g in &gates {
        let corr = corrections[index_of[&g.out]];
        let (a, b) = (g.a as usize, g.b as usize);
        let (label, v) = match g.op {
            pgc_circuit::Op::And => {
                let (la, lb) = (active[a], active[b]);
                let (tg, te) = (tables[2 * j as usize], tables[2 * j as usize + 1]);
                let c = hash.tccr(la, 2 * j)
                    ^ tg.select(la.lsb())
                    ^ hash.tccr(lb, 2 * j + 1)
                    ^ (te ^ la).select(lb.lsb());
                j += 1;
                (c, value[a] & value[b])
            }
            pgc_circuit::Op::Xor => (active[a] ^ active[b], value[a] ^ value[b]),
            pgc_circuit::Op::Inv => (active[a], !value[a]),
            pgc_circuit::Op::Copy => (active[a], value[a]),
            pgc_circuit::Op::Const => (Block::ZERO, g.a == 1),
        };
        let out = g.out as usize;
        active[out] = label ^ corr;
        value[out] = v;
        assert_eq!(
            active[out],
            labels[out] ^ delta.select(v),
            "gate output label"
        );
    }
}

#[test]
fn no_level_holds_two_gates_that_touch_the_same_slot_unsafely() {
    // Gates of one level run at once: none may write a slot another gate of the level
    // reads or writes.
    for seed in 20..26 {
        let case = random_case(seed, 17, 5, 3000);
        let mut sched = Scheduler::new(17);
        for range in windows(3000, &[700, 11]) {
            let s = sched.schedule(&case.gates[range]).unwrap();
            for l in 0..s.levels() {
                let level = s.level(l);
                let mut written = std::collections::HashSet::new();
                for r in level {
                    assert!(
                        written.insert(r[2]),
                        "seed {seed}: two writers of {} in a level",
                        r[2]
                    );
                }
                for (i, r) in level.iter().enumerate() {
                    let op = r[3] & 7;
                    let reads: &[u32] = match op {
                        0 | 1 => &r[0..2],
                        2 | 3 => &r[0..1],
                        _ => &[],
                    };
                    for &w in reads {
                        let clash = level
                            .iter()
                            .enumerate()
                            .any(|(k, other)| k != i && other[2] == w);
                        assert!(
                            !clash,
                            "seed {seed}: wire {w} read and written in one level"
                        );
                    }
                }
            }
        }
    }
}
