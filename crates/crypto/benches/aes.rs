//! AES kernels against the `aes` crate, the fused hash and the PRG.
//!
//! `cargo bench -p pgc-crypto --bench aes` (throughput is reported in blocks/s; one block
//! is 16 bytes).

use aes::cipher::{BlockCipherEncrypt, KeyInit};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pgc_crypto::{Aes128, AesKernel, Block, Prg, TccrHash};
use std::hint::black_box;
use std::time::Duration;

const SIZES: [usize; 3] = [64, 256, 4096];

fn bench_aes(c: &mut Criterion) {
    let key = Block(0x0123_4567_89ab_cdef);
    let ours = Aes128::new(key);
    let theirs = aes::Aes128::new(&key.to_bytes().into());
    let mut group = c.benchmark_group("aes128");
    for n in SIZES {
        group.throughput(Throughput::Elements(n as u64));
        let mut blocks = vec![Block(7); n];
        for kernel in AesKernel::available() {
            group.bench_function(format!("{kernel:?}/{n}"), |b| {
                b.iter(|| ours.encrypt_blocks_with(kernel, black_box(&mut blocks)))
            });
        }
        let mut aes_blocks = vec![aes::Block::default(); n];
        group.bench_function(format!("aes-crate/{n}"), |b| {
            b.iter(|| theirs.encrypt_blocks(black_box(&mut aes_blocks)))
        });
    }
    group.finish();
}

fn bench_hash_and_prg(c: &mut Criterion) {
    let hash = TccrHash::new(Block(5));
    let mut group = c.benchmark_group("tccr_batch");
    for n in SIZES {
        group.throughput(Throughput::Elements(n as u64));
        let xs: Vec<Block> = (0..n as u128).map(|i| Block(i * 0x9e37_79b9)).collect();
        let tweaks: Vec<u64> = (0..n as u64).collect();
        let mut out = vec![Block::ZERO; n];
        for kernel in AesKernel::available() {
            group.bench_function(format!("{kernel:?}/{n}"), |b| {
                b.iter(|| hash.tccr_batch_with(kernel, black_box(&xs), &tweaks, &mut out))
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("prg");
    let mut prg = Prg::from_seed(Block(1));
    let mut blocks = vec![Block::ZERO; 4096];
    group.throughput(Throughput::Elements(4096));
    group.bench_function("fill_blocks/4096", |b| {
        b.iter(|| prg.fill_blocks(black_box(&mut blocks)))
    });
    let mut bytes = vec![0u8; 4096 * 16 + 5];
    group.bench_function("fill_bytes/65541", |b| {
        b.iter(|| prg.fill_bytes(black_box(&mut bytes)))
    });
    group.finish();
}

fn short() -> Criterion {
    // The machine is shared: short runs, enough for stable per-block figures.
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20)
}

criterion_group! { name = benches; config = short(); targets = bench_aes, bench_hash_and_prg }
criterion_main!(benches);
