//! Quick garbling/evaluation throughput on the benchmark circuit (10M ANDs, see
//! `benches/garble.rs`), best of a few runs, with a check that the evaluator ends on the
//! right labels; also the best single period, the figure least disturbed by other
//! processes on a shared machine.
//!
//! `cargo run --release -p pgc-garble --example garble_speed [runs]`

#[path = "../benches/common/mod.rs"]
mod common;

use pgc_circuit::WireId;
use std::time::Instant;

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let period = common::period_gates();
    let ands = common::and_gates_per_run() as f64;
    println!("AES kernel: {:?}", pgc_crypto::AesKernel::detect());

    let (mut best_garble, mut best_eval) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..runs {
        let (mut garbler, mut evaluator) = common::fresh_parties(1);
        let (garbling, evaluating) = common::run(&mut garbler, &mut evaluator, &period);
        best_garble = best_garble.min(garbling.as_secs_f64());
        best_eval = best_eval.min(evaluating.as_secs_f64());
        // All inputs were 0, so every wire carries 0: labels equal zero-labels.
        for w in 0..common::NUM_WIRES as WireId {
            assert_eq!(evaluator.label(w), garbler.zero_label(w), "wire {w}");
        }
    }

    let (mut garbler, mut evaluator) = common::fresh_parties(1);
    let mut tables = Vec::with_capacity(period.len());
    let (mut period_garble, mut period_eval) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..200 {
        tables.clear();
        let start = Instant::now();
        garbler.garble(&period, &mut tables);
        let mid = Instant::now();
        evaluator.evaluate(&period, &tables).expect("tables match");
        period_eval = period_eval.min(mid.elapsed().as_secs_f64());
        period_garble = period_garble.min((mid - start).as_secs_f64());
    }
    let period_ands = (common::RING_LAYERS * common::WIDTH) as f64;
    println!(
        "{} ANDs: garble {:.1} M AND/s ({:.1} ms), evaluate {:.1} M AND/s ({:.1} ms)",
        ands as u64,
        ands / best_garble / 1e6,
        best_garble * 1e3,
        ands / best_eval / 1e6,
        best_eval * 1e3
    );
    println!(
        "best single period of {} ANDs: garble {:.1} M AND/s, evaluate {:.1} M AND/s",
        period_ands as u64,
        period_ands / period_garble / 1e6,
        period_ands / period_eval / 1e6
    );
}
