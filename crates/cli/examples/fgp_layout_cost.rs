//! What `--parallel fgp` costs before any splitting: the engine's offline garbling of
//! examples/mvmul.c under plans that differ only in mode, thread count and τ (best of 5).
//!
//!     cargo run --release -p pgc-cli --example fgp_layout_cost [path/to/program.c]

use pgc_garble::parallel::{Mode, Plan, garble_offline};

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/mvmul.c").into());
    let src = std::fs::read_to_string(&path).expect("readable C program");
    let compiled = pgc_compiler::compile_source(&src, &path, &Default::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let pc = compiled.parallel_circuit().expect("regions split");
    for (mode, threads, tau) in [
        (Mode::None, 1, 128),
        (Mode::Fgp, 2, 1 << 30),
        (Mode::Fgp, 2, 128),
        (Mode::Cgp, 2, 128),
    ] {
        let plan = Plan::new(&pc, threads, mode, tau);
        let best = (0..5)
            .map(|_| garble_offline(&plan, &pc).seconds)
            .fold(f64::MAX, f64::min);
        let s = plan.stats();
        println!(
            "{mode:?}, {threads} threads, tau {tau}: {best:.4} s ({} steps, {} split levels)",
            s.steps, s.split_levels
        );
    }
}
