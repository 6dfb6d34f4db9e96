//! OT benchmarks: `cargo bench -p pgc-ot --bench ot`.
//!
//! - `transpose/<kernel>`: one 128 × 65,536 bit matrix (the IKNP batch shape, padded rows).
//! - `base_ot/128`: the 128 Chou–Orlandi base OTs of an IKNP setup, both parties.
//! - `iknp_correlated/{memory,tcp}` and `iknp_random/memory`: 2^20 OTs per iteration, end
//!   to end: the receiver runs on a second thread and the time covers both parties.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pgc_crypto::{Block, Prg};
use pgc_net::{Channel, MemoryChannel, TcpChannel};
use pgc_ot::transpose::{TransposeKernel, padded_stride, transpose_128_strided_with};
use pgc_ot::{IknpReceiver, IknpSender, base};
use std::hint::black_box;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

const OTS_PER_ITER: usize = 1 << 20;

fn transpose(c: &mut Criterion) {
    let width = 512;
    let stride = padded_stride(width);
    let mut rows = vec![Block::ZERO; 128 * stride];
    Prg::from_seed(Block(1)).fill_blocks(&mut rows);
    let mut out = vec![Block::ZERO; 128 * width];
    let mut group = c.benchmark_group("transpose");
    group.throughput(Throughput::Elements(out.len() as u64));
    for kernel in TransposeKernel::all_supported() {
        group.bench_function(format!("{kernel:?}"), |b| {
            b.iter(|| transpose_128_strided_with(kernel, black_box(&rows), stride, &mut out))
        });
    }
    group.finish();
}

fn base_ot(c: &mut Criterion) {
    let mut group = c.benchmark_group("base_ot");
    group.throughput(Throughput::Elements(128));
    group.bench_function("128", |b| {
        let choices: Vec<bool> = (0..128).map(|i| i % 3 == 0).collect();
        b.iter(|| {
            let (mut s, mut r) = MemoryChannel::pair();
            thread::scope(|scope| {
                let peer = scope.spawn(|| {
                    base::receive_random(&mut r, &choices, &mut Prg::from_os_entropy()).unwrap()
                });
                base::send_random(&mut s, 128, &mut Prg::from_os_entropy()).unwrap();
                peer.join().unwrap();
            });
        })
    });
    group.finish();
}

/// What the benchmark thread asks the receiver thread to do.
#[derive(Clone, Copy)]
enum Kind {
    Correlated,
    Random,
}

/// An IKNP pair whose receiver lives on its own thread and runs `iters` calls on request.
struct Pair<C: Channel> {
    sender: IknpSender,
    channel: C,
    requests: mpsc::Sender<(Kind, u64)>,
    done: mpsc::Receiver<()>,
}

impl<C: Channel + 'static> Pair<C> {
    fn new(mut sender_ch: C, mut receiver_ch: C) -> Pair<C> {
        let (requests, request_rx) = mpsc::channel::<(Kind, u64)>();
        let (done_tx, done) = mpsc::channel();
        thread::spawn(move || {
            let mut prg = Prg::from_os_entropy();
            let mut ot = IknpReceiver::setup(&mut receiver_ch, &mut prg).unwrap();
            let choices: Vec<bool> = (0..OTS_PER_ITER).map(|_| prg.random_bool()).collect();
            let mut out = vec![Block::ZERO; OTS_PER_ITER];
            for (kind, iters) in request_rx {
                for _ in 0..iters {
                    match kind {
                        Kind::Correlated => ot
                            .receive_correlated_into(&mut receiver_ch, &choices, &mut out)
                            .unwrap(),
                        Kind::Random => {
                            black_box(ot.receive_random(&mut receiver_ch, &choices).unwrap());
                        }
                    }
                }
                done_tx.send(()).unwrap();
            }
        });
        let delta = Block(Prg::from_os_entropy().random_block().0 | 1);
        let sender = IknpSender::setup(&mut sender_ch, delta, &mut Prg::from_os_entropy()).unwrap();
        Pair {
            sender,
            channel: sender_ch,
            requests,
            done,
        }
    }

    /// Time for `iters` calls of `kind`, both parties finished.
    fn run(&mut self, kind: Kind, iters: u64, out: &mut [Block]) -> Duration {
        let start = Instant::now();
        self.requests.send((kind, iters)).unwrap();
        for _ in 0..iters {
            match kind {
                Kind::Correlated => self
                    .sender
                    .send_correlated_into(&mut self.channel, out)
                    .unwrap(),
                Kind::Random => {
                    black_box(
                        self.sender
                            .send_random(&mut self.channel, out.len())
                            .unwrap(),
                    );
                }
            }
        }
        self.done.recv().unwrap();
        start.elapsed()
    }
}

fn tcp_channels() -> (TcpChannel, TcpChannel) {
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().to_string();
    let client =
        thread::spawn(move || TcpChannel::connect(&addr, Duration::from_secs(10)).unwrap());
    let server = listener.accept(Duration::from_secs(10)).unwrap();
    (server, client.join().unwrap())
}

fn iknp(c: &mut Criterion) {
    let mut out = vec![Block::ZERO; OTS_PER_ITER];
    let mut group = c.benchmark_group("iknp_correlated");
    group.throughput(Throughput::Elements(OTS_PER_ITER as u64));
    let (a, b) = MemoryChannel::pair();
    let mut memory = Pair::new(a, b);
    group.bench_function("memory", |bench| {
        bench.iter_custom(|iters| memory.run(Kind::Correlated, iters, &mut out))
    });
    let (a, b) = tcp_channels();
    let mut tcp = Pair::new(a, b);
    group.bench_function("tcp", |bench| {
        bench.iter_custom(|iters| tcp.run(Kind::Correlated, iters, &mut out))
    });
    group.finish();

    let mut group = c.benchmark_group("iknp_random");
    group.throughput(Throughput::Elements(OTS_PER_ITER as u64));
    group.bench_function("memory", |bench| {
        bench.iter_custom(|iters| memory.run(Kind::Random, iters, &mut out))
    });
    group.finish();
}

fn config() -> Criterion {
    // Short runs: the machine is small and shared.
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = transpose, base_ot, iknp
}
criterion_main!(benches);
