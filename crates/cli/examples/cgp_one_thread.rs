//! CGP on one thread against `none`, offline (the garbler alone, tables dropped): both
//! plans alternated run by run, with wall time, this process's CPU time and its minor page
//! faults per run (getrusage), and multi-threaded runs in between to see whether what they
//! leave behind slows the next one: `cgp T` with region instances claimed as the threads
//! go (what `pgc` runs), `cgp T fixed` with each thread's instances fixed by the plan.
//!
//!     cargo run --release -p pgc-cli --example cgp_one_thread [app.c] [runs] [threads]
//!
//! With `AFTER_FGP` set, an FGP plan for `threads` threads is made, garbled and dropped
//! before each round (what `pgc bench apps` did before measuring CGP).

use std::time::Instant;

use pgc_garble::parallel::{Mode, Plan, garble_offline};

// The allocator `pgc` itself uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// CPU seconds (user + system, all threads) and minor page faults of this process so far.
fn usage() -> (f64, i64) {
    // SAFETY: getrusage writes the struct it is given, zeroed here first.
    let r = unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut r);
        r
    };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    (t(r.ru_utime) + t(r.ru_stime), r.ru_minflt)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/biomatch.c").into()
    });
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(5);
    let threads: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2);
    let src = std::fs::read_to_string(&path).expect("readable C program");
    let compiled = pgc_compiler::compile_source(&src, &path, &Default::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let pc = compiled.parallel_circuit().expect("regions split");
    let plans = [
        ("none 1", Plan::new(&pc, 1, Mode::None, 128)),
        ("cgp 1", Plan::new(&pc, 1, Mode::Cgp, 128)),
        ("cgp T", Plan::claimed(&pc, threads, Mode::Cgp, 128)),
        ("cgp T fixed", Plan::new(&pc, threads, Mode::Cgp, 128)),
        ("none 1", Plan::new(&pc, 1, Mode::None, 128)),
        ("cgp 1", Plan::new(&pc, 1, Mode::Cgp, 128)),
    ];
    for (_, p) in &plans {
        garble_offline(p, &pc);
    }
    let mut sums = vec![(0.0, 0.0, 0i64); plans.len()];
    for _ in 0..runs {
        if std::env::var_os("AFTER_FGP").is_some() {
            // What `pgc bench apps` runs before CGP: FGP plans, made and dropped.
            let fgp = Plan::new(&pc, threads, Mode::Fgp, 128);
            garble_offline(&fgp, &pc);
        }
        for (k, (_, plan)) in plans.iter().enumerate() {
            let (c0, f0) = usage();
            let t0 = Instant::now();
            garble_offline(plan, &pc);
            let wall = t0.elapsed().as_secs_f64();
            let (c1, f1) = usage();
            sums[k].0 += wall;
            sums[k].1 += c1 - c0;
            sums[k].2 += f1 - f0;
        }
    }
    for ((name, _), (w, c, f)) in plans.iter().zip(&sums) {
        let n = runs as f64;
        println!(
            "{name:11} wall {:.4} s  cpu {:.4} s  minor faults {:.0}",
            w / n,
            c / n,
            *f as f64 / n
        );
    }
}
