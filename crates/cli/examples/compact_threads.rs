//! Offline garbling of a compact circuit file (`pgc compile … --compact always -o F.pgc`):
//! the sequential garbler over the expanded gate stream, then `garble::compact` on 1, 2, …
//! threads (one process, no network; tables checked equal by an order-sensitive checksum,
//! cheap enough not to dominate; the unit tests compare them in full).
//!
//!     cargo run --release -p pgc-cli --example compact_threads F.pgc [THREADS...]

use std::time::Instant;

use pgc_circuit::GateSource;
use pgc_circuit::pgcfile::CompactFile;
use pgc_crypto::{Block, Prg};
use pgc_garble::Garbler;
use pgc_garble::compact::CompactGarbler;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("a compact .pgc file");
    let threads: Vec<usize> = args.map(|a| a.parse().expect("a thread count")).collect();
    let (file, _) = CompactFile::open(&path).unwrap_or_else(|e| panic!("{e}"));
    let parts = file.compact_parts().expect("a compact circuit");
    let mut prg = Prg::from_seed(Block(5));
    let delta = pgc_garble::random_delta(&mut prg);
    let key = prg.random_block();
    let n_in = file.layout().num_input_wires();
    let zero: Vec<Block> = (0..n_in).map(|_| prg.random_block()).collect();
    let ands = file.and_count();
    // Order-sensitive checksum: (xor of rotated blocks, blocks seen).
    let digest = |h: &mut (u128, u64), t: &[Block]| {
        for b in t {
            h.0 ^= b.0.rotate_left((h.1 % 127) as u32);
            h.1 += 1;
        }
    };

    let start = Instant::now();
    let mut g = Garbler::new(file.layout().num_wires as usize, delta, key);
    for (w, &z) in zero.iter().enumerate() {
        g.set_zero_label(w as u32, z);
    }
    let mut h = (0u128, 0u64);
    let mut tables = Vec::new();
    file.for_each_chunk::<()>(&mut |gates| {
        tables.clear();
        g.garble(gates, &mut tables);
        digest(&mut h, &tables);
        Ok(())
    })
    .unwrap();
    let t = start.elapsed().as_secs_f64();
    let want = h;
    println!(
        "sequential garbler: {t:.3} s, {:.1} M AND/s",
        ands as f64 / t / 1e6
    );
    for &th in &threads {
        let start = Instant::now();
        let mut cg = CompactGarbler::new(parts.templates, parts.main_num_wires, th, delta, key)
            .unwrap_or_else(|e| panic!("{e}"));
        for (w, &z) in zero.iter().enumerate() {
            cg.set_zero_label(w as u32, z);
        }
        let mut h = (0u128, 0u64);
        let mut emit = |t: &[Block]| -> Result<(), ()> {
            digest(&mut h, t);
            Ok(())
        };
        parts
            .main
            .for_each_items(&mut |items| cg.push(items, &mut emit).map_err(|e| panic!("{e:?}")))
            .unwrap();
        cg.finish(&mut emit).unwrap();
        let t = start.elapsed().as_secs_f64();
        assert_eq!(h, want, "tables differ at {th} threads");
        println!(
            "garble::compact, {th} thread(s): {t:.3} s, {:.1} M AND/s (same tables)",
            ands as f64 / t / 1e6
        );
    }
}
