//! Structure of a program's parallel circuit, as CGP sees it: global wires, each template's
//! gates, ANDs and wires, the phases, and CGP's plans for 2, 8 and 16 threads with the
//! scratch blocks a thread needs (the templates' live values, not their wires).
//!
//!     cargo run --release -p pgc-cli --example cgp_anatomy examples/mvmul.c
use pgc_circuit::Phase;
use pgc_garble::parallel::{Mode, Plan};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let src = std::fs::read_to_string(&path).unwrap();
    let compiled = pgc_compiler::compile_source(&src, &path, &Default::default()).unwrap();
    let pc = compiled.parallel_circuit().unwrap();
    println!(
        "global wires {} inputs {}",
        pc.layout.num_wires,
        pc.layout.num_input_wires()
    );
    for (i, t) in pc.templates.iter().enumerate() {
        println!(
            "template {i}: gates {} ands {} wires {} inputs {} outputs {}",
            t.gates.len(),
            t.and_count(),
            t.num_wires(),
            t.num_inputs,
            t.outputs.len()
        );
    }
    for (p, ph) in pc.phases.iter().enumerate() {
        match ph {
            Phase::Sequential(g) => println!(
                "phase {p}: sequential {} gates {} ands",
                g.len(),
                g.iter().filter(|g| g.op == pgc_circuit::Op::And).count()
            ),
            Phase::Region(r) => println!(
                "phase {p}: region {} instances, templates {:?}",
                r.instances.len(),
                r.instances
                    .iter()
                    .map(|i| i.template)
                    .collect::<std::collections::BTreeSet<_>>()
            ),
        }
    }
    for t in [2, 8, 16] {
        let t0 = std::time::Instant::now();
        let plan = Plan::new(&pc, t, Mode::Cgp, 128);
        println!(
            "cgp {t}: Plan::new {:.2} ms",
            t0.elapsed().as_secs_f64() * 1e3
        );
        println!(
            "cgp {t}: {:?} scratch blocks {}",
            plan.stats(),
            plan.scratch_blocks()
        );
    }
}
