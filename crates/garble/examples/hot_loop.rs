//! The garbling and evaluation hot loop alone, per second of this thread's CPU time (on a
//! shared core wall time also counts other processes' turns): the random layered circuit
//! of `pgc bench garble` (4,096 ANDs per level, 16 Ki-gate calls) and, given a Bristol
//! file, that circuit levelized and slot-assigned as `pgc` prepares it, one call per copy.
//! It builds in a fraction of `pgc`'s time, for trying changes to `wide.rs` quickly; the
//! figures to report come from `pgc bench garble` (`scripts/bench_garble_emp.sh`).
//!
//! `cargo run --release -p pgc-garble --example hot_loop [ROUNDS] [BRISTOL_FILE]`

use pgc_circuit::generate::RandomLayered;
use pgc_circuit::{Circuit, Gate, GateSource, WireId, assign_slots, levelize, parse_circuit};
use pgc_crypto::{Block, Prg};
use pgc_garble::{Evaluator, Garbler, random_delta};
use std::time::Duration;

/// `CLOCK_THREAD_CPUTIME_ID` of Linux.
const CLOCK_THREAD_CPUTIME_ID: i32 = 3;

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

unsafe extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

fn thread_cpu_time() -> Duration {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec (two 64-bit fields on x86-64 Linux).
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    Duration::new(ts.sec as u64, ts.nsec as u32)
}

/// Garbles then evaluates each chunk; returns (garble, evaluate) M AND/s per CPU second.
fn measure<S: GateSource>(source: &S, repeats: usize) -> (f64, f64) {
    let num_wires = source.layout().num_wires as usize;
    let mut prg = Prg::from_seed(Block(7));
    let delta = random_delta(&mut prg);
    let hash_key = prg.random_block();
    let mut garbler = Garbler::new(num_wires, delta, hash_key);
    let mut evaluator = Evaluator::new(num_wires, hash_key);
    for w in 0..num_wires as WireId {
        let label = prg.random_block();
        garbler.set_zero_label(w, label);
        evaluator.set_label(w, label);
    }
    let mut tables = Vec::new();
    let (mut g, mut e) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..repeats {
        let mut call = |gates: &[Gate]| -> Result<(), ()> {
            tables.clear();
            let t0 = thread_cpu_time();
            garbler.garble(gates, &mut tables);
            let t1 = thread_cpu_time();
            evaluator.evaluate(gates, &tables).expect("tables match");
            let t2 = thread_cpu_time();
            g += t1 - t0;
            e += t2 - t1;
            Ok(())
        };
        // Chunks are made right before their call, as in `pgc bench garble`.
        source.for_each_chunk(&mut call).unwrap();
    }
    // A smoke check (the tests check values): every label is one of its wire's two.
    for w in 0..num_wires as WireId {
        let (label, zero) = (evaluator.label(w), garbler.zero_label(w));
        assert!(label == zero || label == zero ^ delta, "wire {w}");
    }
    let n = (source.and_count() * repeats as u64) as f64 / 1e6;
    (n / g.as_secs_f64(), n / e.as_secs_f64())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    let bristol = args.next();

    let random = RandomLayered::new(4096, 5 * 256, 0x9e37_79b9).expect("width");

    let aes = bristol.map(|path| {
        let text = std::fs::read(&path).expect("read the Bristol file");
        let c: Circuit = parse_circuit(&text, None).expect("parse");
        assign_slots(&levelize(&c).expect("levelize"))
    });

    for _ in 0..rounds {
        let (g, e) = measure(&random, 4);
        print!("random {g:6.1} {e:6.1}");
        if let Some(c) = &aes {
            let (g, e) = measure(c, 4000);
            print!("   bristol {g:6.1} {e:6.1}");
        }
        println!();
    }
}
