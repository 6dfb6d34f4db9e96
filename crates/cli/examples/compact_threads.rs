//! Offline garbling and evaluation of a compact circuit file (`pgc compile … --compact
//! always -o F.pgc`): the sequential garbler over the expanded gate stream, then
//! `garble::compact` on 1, 2, … threads (one process, no network; tables checked equal by
//! an order-sensitive checksum, cheap enough not to dominate; the unit tests compare them
//! in full); then the same for the evaluator, on a stream of tables repeating a fixed
//! random buffer (the work of a real run; the output labels checked equal to the
//! sequential evaluator's). Each line also gives the process's CPU seconds for that run.
//!
//!     cargo run --release -p pgc-cli --example compact_threads F.pgc [THREADS...]
//!
//! `PGC_GROUP_ITEMS=N` caps the items garbled together by one thread (default
//! `pgc_garble::compact::GROUP_ITEMS`); `PGC_WINDOW_ITEMS=N` caps the main items of one
//! window (default `pgc_garble::compact::WINDOW_MAX_ITEMS`); `PGC_OPEN_CALL_ANDS=N` sets the size from which
//! calls of templates that call templates are opened (default
//! `pgc_garble::compact::OPEN_CALL_ANDS`; `18446744073709551615` opens none). On several
//! threads the garbler's line also gives the parallelism: ANDs divided by the ANDs on the
//! longest chain of dependent items (summed over windows), the most any thread count
//! could gain. `PGC_COMPACT_ONLY=1` skips the sequential garbler and evaluator (for
//! profiling the compact runs alone): the first thread count's tables and labels are then
//! the ones the others must match. `PGC_PUSH=1` feeds the compact runs piece by piece
//! (`push`, then `finish`: each window read and planned, then run, then sent) instead of
//! `garble_main` / `evaluate_main` (the next window read and planned while this one runs).

use std::time::Instant;

use pgc_circuit::GateSource;
use pgc_circuit::pgcfile::CompactFile;
use pgc_crypto::{Block, Prg};
use pgc_garble::compact::{CompactEvaluator, CompactGarbler};
use pgc_garble::{Evaluator, Garbler};

/// CPU seconds of this process so far (user + system, all threads).
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes the struct it is given, zeroed here first.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("a compact .pgc file");
    let threads: Vec<usize> = args.map(|a| a.parse().expect("a thread count")).collect();
    let group: Option<usize> = std::env::var("PGC_GROUP_ITEMS")
        .ok()
        .map(|v| v.parse().expect("PGC_GROUP_ITEMS: a number"));
    let window_items: Option<usize> = std::env::var("PGC_WINDOW_ITEMS")
        .ok()
        .map(|v| v.parse().expect("PGC_WINDOW_ITEMS: a number"));
    let open_ands: Option<u64> = std::env::var("PGC_OPEN_CALL_ANDS")
        .ok()
        .map(|v| v.parse().expect("PGC_OPEN_CALL_ANDS: a number"));
    let compact_only = std::env::var("PGC_COMPACT_ONLY").is_ok_and(|v| v == "1");
    let by_push = std::env::var("PGC_PUSH").is_ok_and(|v| v == "1");
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

    let mut want = None;
    if !compact_only {
        let (start, cpu) = (Instant::now(), cpu_seconds());
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
        let c = cpu_seconds() - cpu;
        want = Some(h);
        println!(
            "sequential garbler: {t:.3} s ({c:.3} s CPU), {:.1} M AND/s",
            ands as f64 / t / 1e6
        );
    }
    for &th in &threads {
        let (start, cpu) = (Instant::now(), cpu_seconds());
        let mut cg = CompactGarbler::new(parts.templates, parts.main_num_wires, th, delta, key)
            .unwrap_or_else(|e| panic!("{e}"));
        if let Some(n) = group {
            cg.set_group_items(n);
        }
        if let Some(n) = open_ands {
            cg.set_open_call_ands(n);
        }
        if let Some(n) = window_items {
            cg.set_window_items(n);
        }
        for (w, &z) in zero.iter().enumerate() {
            cg.set_zero_label(w as u32, z);
        }
        let mut h = (0u128, 0u64);
        let mut emit = |t: &[Block]| -> Result<(), ()> {
            digest(&mut h, t);
            Ok(())
        };
        if by_push {
            parts
                .main
                .for_each_items(&mut |items| cg.push(items, &mut emit).map_err(|e| panic!("{e:?}")))
                .unwrap();
            cg.finish(&mut emit).unwrap();
        } else {
            cg.garble_main(parts.main, &mut emit, &mut |_| ())
                .unwrap_or_else(|e| panic!("{e:?}"));
        }
        let t = start.elapsed().as_secs_f64();
        let c = cpu_seconds() - cpu;
        assert_eq!(h, *want.get_or_insert(h), "tables differ at {th} threads");
        let parallelism = match cg.span_and_gates() {
            0 => String::new(),
            span => format!(
                ", parallelism {:.1} (longest chains {span} ANDs)",
                ands as f64 / span as f64
            ),
        };
        println!(
            "garble::compact, {th} thread(s): {t:.3} s ({c:.3} s CPU), {:.1} M AND/s (same tables){parallelism}",
            ands as f64 / t / 1e6
        );
    }

    // Evaluation: the stream's block at position p is noise[p % len].
    let mut noise = vec![Block::ZERO; 1 << 16];
    prg.fill_blocks(&mut noise);
    let fill = |at: &mut usize, buf: &mut [Block]| {
        for b in buf {
            *b = noise[*at % noise.len()];
            *at += 1;
        }
    };
    let labels: Vec<Block> = (0..n_in).map(|_| prg.random_block()).collect();
    let outputs = &file.layout().output_wires;
    let mut want = None;
    if !compact_only {
        let (start, cpu) = (Instant::now(), cpu_seconds());
        let mut e = Evaluator::new(file.layout().num_wires as usize, key);
        for (w, &l) in labels.iter().enumerate() {
            e.set_label(w as u32, l);
        }
        let mut at = 0;
        let mut buf = Vec::new();
        file.for_each_chunk::<()>(&mut |gates| {
            buf.resize(2 * pgc_garble::and_count(gates), Block::ZERO);
            fill(&mut at, &mut buf);
            e.evaluate(gates, &buf).expect("evaluates");
            Ok(())
        })
        .unwrap();
        let t = start.elapsed().as_secs_f64();
        let c = cpu_seconds() - cpu;
        want = Some(outputs.iter().map(|&w| e.label(w)).collect::<Vec<Block>>());
        println!(
            "sequential evaluator: {t:.3} s ({c:.3} s CPU), {:.1} M AND/s",
            ands as f64 / t / 1e6
        );
    }
    for &th in &threads {
        let (start, cpu) = (Instant::now(), cpu_seconds());
        let mut ce = CompactEvaluator::new(parts.templates, parts.main_num_wires, th, key)
            .unwrap_or_else(|e| panic!("{e}"));
        if let Some(n) = group {
            ce.set_group_items(n);
        }
        if let Some(n) = open_ands {
            ce.set_open_call_ands(n);
        }
        if let Some(n) = window_items {
            ce.set_window_items(n);
        }
        for (w, &l) in labels.iter().enumerate() {
            ce.set_label(w as u32, l);
        }
        let mut at = 0;
        let mut read = |buf: &mut [Block]| -> Result<(), ()> {
            fill(&mut at, buf);
            Ok(())
        };
        if by_push {
            parts
                .main
                .for_each_items(&mut |items| ce.push(items, &mut read).map_err(|e| panic!("{e:?}")))
                .unwrap();
            ce.finish(&mut read).unwrap();
        } else {
            ce.evaluate_main(parts.main, &mut read, &mut |_| ())
                .unwrap_or_else(|e| panic!("{e:?}"));
        }
        let t = start.elapsed().as_secs_f64();
        let c = cpu_seconds() - cpu;
        let got: Vec<Block> = outputs.iter().map(|&w| ce.label(w)).collect();
        assert_eq!(
            &got,
            want.get_or_insert_with(|| got.clone()),
            "output labels differ at {th} threads"
        );
        println!(
            "evaluate::compact, {th} thread(s): {t:.3} s ({c:.3} s CPU), {:.1} M AND/s (same labels)",
            ands as f64 / t / 1e6
        );
    }
}
