//! Garbling and evaluation speed on a wide circuit of 10,010,624 ANDs (layers of 4096 ANDs
//! interleaved with 4096 XORs, wires a ring of two layers of slots), one thread. Each
//! period of two layers is garbled, then evaluated from the tables just produced (as a
//! protocol would, receiving them chunk by chunk); garbling and evaluation are timed
//! separately.
//!
//! `cargo bench -p pgc-garble --bench garble`; for a quicker figure,
//! `cargo run --release -p pgc-garble --example garble_speed`.

mod common;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let period = common::period_gates();
    let mut group = c.benchmark_group("half_gates");
    group.throughput(Throughput::Elements(common::and_gates_per_run()));
    for (name, pick_evaluation) in [("garble/10M_and", false), ("evaluate/10M_and", true)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let (mut garbler, mut evaluator) = common::fresh_parties(1);
                    let (garbling, evaluating) = common::run(&mut garbler, &mut evaluator, &period);
                    total += if pick_evaluation {
                        evaluating
                    } else {
                        garbling
                    };
                }
                total
            })
        });
    }
    group.finish();
}

fn short() -> Criterion {
    // Each iteration is 10M ANDs (tens of ms): ten samples are plenty on a shared machine.
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(10)
}

criterion_group! { name = benches; config = short(); targets = bench }
criterion_main!(benches);
