//! What the input phase of the parallel protocol costs, part by part: the circuit
//! fingerprint each party hashes for the handshake, and the IKNP set-up (128 base OTs)
//! between two threads over a memory channel.
//!
//!     cargo run --release -p pgc-cli --example input_phase [app.c] [runs] [threads]

use std::time::Instant;

use pgc_circuit::GateSource;
use pgc_crypto::{Block, Prg};
use pgc_net::MemoryChannel;
use pgc_ot::{IknpReceiver, IknpSender};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/mvmul.c").into());
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(5);
    let threads: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let src = std::fs::read_to_string(&path).expect("readable C program");
    let compiled = pgc_compiler::compile_source(&src, &path, &Default::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let pc = compiled.parallel_circuit().expect("regions split");
    for _ in 0..runs {
        let t0 = Instant::now();
        std::hint::black_box(pc.fingerprint());
        let fp = t0.elapsed().as_secs_f64();
        let (mut a, mut b) = MemoryChannel::pair();
        let t0 = Instant::now();
        let sender = std::thread::spawn(move || {
            let mut prg = Prg::from_os_entropy();
            let delta = Block(prg.random_block().0 | 1);
            IknpSender::setup_threads(&mut a, delta, &mut prg, threads).unwrap();
            t0.elapsed().as_secs_f64()
        });
        let mut prg = Prg::from_os_entropy();
        IknpReceiver::setup_threads(&mut b, &mut prg, threads).unwrap();
        let recv = t0.elapsed().as_secs_f64();
        let send = sender.join().unwrap();
        println!(
            "fingerprint {fp:.4} s; IKNP setup: sender done {send:.4} s, receiver done {recv:.4} s"
        );
    }
}
