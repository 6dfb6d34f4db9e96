//! Compiles a C file and prints gate counts, compile time and peak memory (for BENCHMARKS.md).
//! `cargo run --release -p pgc-compiler --example compile_stats -- FILE.c [-DNAME=V …]`

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: compile_stats FILE.c [-DNAME=VALUE …] [--depth]");
        std::process::exit(2);
    };
    let mut opts = pgc_compiler::Options::default();
    for a in args {
        if let Some(d) = a.strip_prefix("-D") {
            opts.defines.push(d.to_string());
        } else if a == "--depth" {
            opts.optimize = pgc_circuit::OptimizeFor::Depth;
        }
    }
    match pgc_compiler::compile_file(std::path::Path::new(&path), &opts) {
        Ok(c) => {
            let s = pgc_circuit::stats(&c.circuit);
            println!(
                "{path}: {} gates, {} AND, {} XOR, AND depth {}, compiled in {:.2} s, peak RSS {} MiB",
                c.circuit.gates.len(),
                s.and_gates,
                s.xor_gates,
                s.and_depth,
                c.stats.elapsed.as_secs_f64(),
                peak_rss_mib()
            );
            for p in &c.stats.passes {
                println!("  {:<26} {:>12} gates removed", p.name, p.gates_removed);
            }
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}

fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}
