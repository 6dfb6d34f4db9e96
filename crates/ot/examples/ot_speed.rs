//! Quick throughput figures without criterion's statistics:
//! `cargo run --release -p pgc-ot --example ot_speed [-- OTS_PER_CALL CALLS]`.
//!
//! Prints the transpose speed of every kernel and end-to-end correlated-OT rates (sender and
//! receiver as two threads of this process) over a memory channel and over loopback TCP.

use pgc_crypto::{Block, Prg};
use pgc_net::{Channel, MemoryChannel, TcpChannel};
use pgc_ot::transpose::{TransposeKernel, padded_stride, transpose_128_strided_with};
use pgc_ot::{IknpReceiver, IknpSender};
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let per_call: usize = args
        .next()
        .map_or(1 << 20, |a| a.parse().expect("OTs per call"));
    let calls: usize = args
        .next()
        .map_or(20, |a| a.parse().expect("number of calls"));

    // The IKNP batch shape: 128 rows of 65,536 bits, contiguous and with padded rows.
    let width = 512;
    for stride in [width, padded_stride(width)] {
        let mut rows = vec![Block::ZERO; 128 * stride];
        Prg::from_seed(Block(1)).fill_blocks(&mut rows);
        let mut out = vec![Block::ZERO; 128 * width];
        for kernel in TransposeKernel::all_supported() {
            let reps = 100;
            transpose_128_strided_with(kernel, &rows, stride, &mut out);
            let start = Instant::now();
            for _ in 0..reps {
                transpose_128_strided_with(kernel, &rows, stride, &mut out);
            }
            let per_sec = (reps * out.len()) as f64 / start.elapsed().as_secs_f64();
            println!(
                "transpose {kernel:?}, row stride {stride} blocks: {:.0} M rows/s ({:.2} GB/s)",
                per_sec / 1e6,
                per_sec * 16.0 / 1e9
            );
        }
    }

    let (a, b) = MemoryChannel::pair();
    report("memory", run(a, b, per_call, calls));
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().to_string();
    let client = std::thread::spawn(move || TcpChannel::connect(&addr, Duration::from_secs(10)));
    let server = listener.accept(Duration::from_secs(10)).unwrap();
    report(
        "tcp",
        run(server, client.join().unwrap().unwrap(), per_call, calls),
    );
}

fn report(name: &str, (secs, total): (f64, usize)) {
    println!(
        "correlated OT over {name}: {:.1} M OT/s ({total} OTs in {secs:.3} s)",
        total as f64 / secs / 1e6
    );
}

/// Times `calls` correlated-OT calls of `per_call` OTs each, after setup and one warm-up
/// call; returns (seconds, OTs).
fn run<C: Channel + 'static>(
    mut sender_ch: C,
    mut receiver_ch: C,
    per_call: usize,
    calls: usize,
) -> (f64, usize) {
    let delta = Block(Prg::from_os_entropy().random_block().0 | 1);
    let receiver = std::thread::spawn(move || {
        let mut prg = Prg::from_os_entropy();
        let mut ot = IknpReceiver::setup(&mut receiver_ch, &mut prg).unwrap();
        let choices: Vec<bool> = (0..per_call).map(|_| prg.random_bool()).collect();
        let mut out = vec![Block::ZERO; per_call];
        for _ in 0..calls + 1 {
            ot.receive_correlated_into(&mut receiver_ch, &choices, &mut out)
                .unwrap();
        }
        out[0]
    });
    let mut ot = IknpSender::setup(&mut sender_ch, delta, &mut Prg::from_os_entropy()).unwrap();
    let mut out = vec![Block::ZERO; per_call];
    ot.send_correlated_into(&mut sender_ch, &mut out).unwrap();
    let start = Instant::now();
    for _ in 0..calls {
        ot.send_correlated_into(&mut sender_ch, &mut out).unwrap();
    }
    receiver.join().unwrap();
    (start.elapsed().as_secs_f64(), per_call * calls)
}
