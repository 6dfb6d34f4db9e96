//! How long opening the protocol's per-thread streams takes: n extra connections to the
//! peer over loopback, TLS (as `pgc bench apps` and `pgc run` use) or plaintext, both sides
//! in this process; median of `runs`.
//!
//!     cargo run --release -p pgc-cli --example stream_open [n] [runs] [tls|plain]
use std::time::{Duration, Instant};

use pgc_net::ChannelSecurity;
use pgc_net::connect::{accept_peer_streams, connect_peer_streams, no_notes};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(16);
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let tls = args.next().as_deref() != Some("plain");
    let (sa, sb) = if tls {
        ChannelSecurity::loopback_pair().unwrap()
    } else {
        (ChannelSecurity::Plaintext, ChannelSecurity::Plaintext)
    };
    let listener = pgc_net::TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().to_string();
    let timeout = Duration::from_secs(30);
    let mut times = Vec::new();
    for run in 0..runs {
        let token = [run as u8; 16];
        let t0 = Instant::now();
        std::thread::scope(|s| {
            let addr = &addr;
            let sb = &sb;
            let c = s.spawn(move || connect_peer_streams(addr, sb, n, token, timeout).unwrap());
            let a = accept_peer_streams(&listener, &sa, n, token, timeout, &no_notes()).unwrap();
            let b = c.join().unwrap();
            assert_eq!((a.len(), b.len()), (n, n));
        });
        times.push(t0.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{} streams, {}: median {:.2} ms (min {:.2}, max {:.2})",
        n,
        if tls { "TLS" } else { "plaintext" },
        times[times.len() / 2] * 1e3,
        times[0] * 1e3,
        times[times.len() - 1] * 1e3
    );
}
