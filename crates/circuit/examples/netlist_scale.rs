//! Builds a large circuit through NetBuilder and reports time and peak memory, in RAM or
//! with the spill file:
//! `cargo run -p pgc-circuit --release --example netlist_scale -- [memory|spill] [rounds]
//! [strash-limit]`.
//! Each round is a 64-bit multiply-add, a comparison and a select (about 4,200 ANDs), so
//! the circuit grows like an unrolled loop.

use std::time::Instant;

use pgc_circuit::blocks;
use pgc_circuit::netlist::{Lit, NetBuilder, OptimizeFor};

/// Peak resident memory of this process in MiB (Linux), if known.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let spill = args.get(1).is_some_and(|a| a == "spill");
    let rounds: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let start = Instant::now();
    let mut g = if spill {
        NetBuilder::with_spill(OptimizeFor::Size, &std::env::temp_dir()).expect("spill file")
    } else {
        NetBuilder::new(OptimizeFor::Size)
    };
    if let Some(limit) = args.get(3).and_then(|a| a.parse().ok()) {
        g.set_strash_limit(limit);
    }
    let x = g.input(64);
    let y = g.input(64);
    let mut acc: Vec<Lit> = x.clone();
    for _ in 0..rounds {
        let p = blocks::mul(&mut g, &acc, &y);
        let s = blocks::add(&mut g, &p, &x);
        let bigger = blocks::lt_unsigned(&mut g, &acc, &s);
        acc = blocks::mux_word(&mut g, bigger, &s, &p);
    }
    g.output(&acc);
    let emitted = g.gates_emitted();
    let reused = g.stats().structural_hashing;
    let built = start.elapsed();
    let prepared = g.prepare().expect("prepare");
    let mut gates = 0u64;
    let mut ands = 0u64;
    let stats = prepared
        .for_each_chunk(|chunk| {
            gates += chunk.len() as u64;
            ands += chunk
                .iter()
                .filter(|g| g.op == pgc_circuit::ir::Op::And)
                .count() as u64;
            Ok::<(), pgc_circuit::netlist::NetlistError>(())
        })
        .expect("stream gates");
    let total = start.elapsed();
    println!(
        "{}: {rounds} rounds, {reused} gates reused, {emitted} gates emitted in {:.2} s ({:.1} M gates/s), \
         {gates} final gates ({ands} AND, {} dead removed), finished in {:.2} s total, \
         peak RSS {:.1} MiB",
        if spill { "spill" } else { "memory" },
        built.as_secs_f64(),
        emitted as f64 / built.as_secs_f64() / 1e6,
        stats.dead_removed,
        total.as_secs_f64(),
        peak_rss_mib().unwrap_or(f64::NAN),
    );
}
