//! Throughput of compact-circuit expansion and of the streaming main-body slotter:
//! `cargo run -p pgc-circuit --release --example compact_expand -- [calls] [slot-items]`.
//!
//! 1. A ~200-gate template called `calls` times (default 1,000,000) from main, expanded
//!    into chunks that a trivial consumer reads.
//! 2. The same number of gates through a two-level template (a template of 10 calls of a
//!    20-gate template), to show the cost of nested calls.
//! 3. The two-pass streaming slotter ([`LastUses`] + [`MainSlotter`]) on a random SSA main
//!    body of `slot-items` gates (default 5,000,000).

use std::time::Instant;

use pgc_circuit::compact::{Call, CompactError, Expander, Item, LastUses, MainSlotter, Template};
use pgc_circuit::generate::SplitMix64;
use pgc_circuit::ir::{Gate, Layout, WireId};

/// A random SSA body of `gates` XOR/AND/INV gates over `inputs` inputs, outputs the last
/// `outputs` wires.
fn random_template(name: &str, inputs: u32, gates: u32, outputs: u32, seed: u64) -> Template {
    let mut rng = SplitMix64::new(seed);
    let items: Vec<Item> = (0..gates)
        .map(|k| {
            let out = inputs + k;
            // Read mostly recent wires, like compiled code.
            let pick = |rng: &mut SplitMix64| out - 1 - rng.below(out.min(12));
            let (a, b) = (pick(&mut rng), pick(&mut rng));
            Item::Gate(match rng.below(5) {
                0 | 1 => Gate::xor(a, b, out),
                2 | 3 => Gate::and(a, b, out),
                _ => Gate::inv(a, out),
            })
        })
        .collect();
    let outs: Vec<WireId> = (inputs + gates - outputs..inputs + gates).collect();
    Template::from_ssa(name.into(), inputs, inputs + gates, items, &outs).expect("valid SSA")
}

/// Expands `rounds` × `main` and returns (gates, seconds).
fn time_expansion(
    templates: &[Template],
    main: &[Item],
    main_wires: u32,
    rounds: u32,
) -> (u64, f64) {
    let mut expander = Expander::new(templates, main_wires).expect("valid templates");
    let mut gates = 0u64;
    let mut checksum = 0u32;
    let mut sink = |chunk: &[Gate]| -> Result<(), CompactError> {
        gates += chunk.len() as u64;
        checksum = checksum.wrapping_add(chunk[chunk.len() - 1].out);
        Ok(())
    };
    let start = Instant::now();
    for _ in 0..rounds {
        expander.expand(main, &mut sink).expect("valid main");
    }
    expander.finish(&mut sink).expect("sink");
    let secs = start.elapsed().as_secs_f64();
    std::hint::black_box(checksum);
    (gates, secs)
}

fn calls_from_main(template: u32, inputs: u32, outputs: u32, n: u32) -> Vec<Item> {
    // Same inputs each time; outputs land in two alternating slot groups.
    (0..n)
        .map(|k| {
            let base = inputs + (k % 2) * outputs;
            Item::Call(Box::new(Call {
                template,
                inputs: (0..inputs).collect(),
                outputs: (base..base + outputs).collect(),
            }))
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let calls: u32 = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let slot_items: u32 = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5_000_000);
    const PER_ROUND: u32 = 10_000;
    let rounds = calls.div_ceil(PER_ROUND);

    // 1. Flat template.
    let t = random_template("t200", 16, 200, 8, 1);
    println!(
        "template: {} items, {} wires ({} scratch)",
        t.items.len(),
        t.num_wires,
        t.num_wires - 16 - 8
    );
    let main = calls_from_main(0, 16, 8, PER_ROUND);
    let (gates, secs) = time_expansion(&[t], &main, 32, rounds);
    println!(
        "flat:   {} calls, {gates} gates in {secs:.3} s = {:.0} M gates/s",
        rounds * PER_ROUND,
        gates as f64 / secs / 1e6
    );

    // 2. Nested: outer = 10 chained calls of a 20-gate inner template.
    let inner = random_template("t20", 16, 20, 16, 2);
    let mut items = Vec::new();
    let mut current: Vec<WireId> = (0..16).collect();
    for k in 0..10u32 {
        let outs: Vec<WireId> = (16 + k * 16..32 + k * 16).collect();
        items.push(Item::Call(Box::new(Call {
            template: 0,
            inputs: current.clone(),
            outputs: outs.clone(),
        })));
        current = outs;
    }
    let outer =
        Template::from_ssa("outer".into(), 16, 16 + 160, items, &current[..8]).expect("valid SSA");
    let main = calls_from_main(1, 16, 8, PER_ROUND);
    let (gates, secs) = time_expansion(&[inner, outer], &main, 32, rounds);
    println!(
        "nested: {} calls, {gates} gates in {secs:.3} s = {:.0} M gates/s",
        rounds * PER_ROUND,
        gates as f64 / secs / 1e6
    );

    // 3. Streaming slotter on a random gate-only SSA main body, in 64k-item chunks.
    let n_in = 64u32;
    let mut rng = SplitMix64::new(3);
    let body: Vec<Item> = (0..slot_items)
        .map(|k| {
            let out = n_in + k;
            let a = out - 1 - rng.below(out.min(64));
            let b = out - 1 - rng.below(out.min(64));
            Item::Gate(if k % 2 == 0 {
                Gate::xor(a, b, out)
            } else {
                Gate::and(a, b, out)
            })
        })
        .collect();
    let layout = Layout {
        num_wires: n_in + slot_items,
        input_widths: vec![n_in],
        output_widths: vec![1],
        output_wires: vec![n_in + slot_items - 1],
    };
    let start = Instant::now();
    let mut last = LastUses::new(&layout, layout.num_wires as u64).expect("layout");
    for chunk in body.chunks(1 << 16).rev() {
        last.feed_backward(chunk);
    }
    let backward = start.elapsed().as_secs_f64();
    let mut slotter = MainSlotter::new(last);
    let mut buf = Vec::with_capacity(1 << 16);
    for chunk in body.chunks(1 << 16) {
        buf.clear();
        buf.extend_from_slice(chunk);
        slotter.rename_forward(&mut buf).expect("valid SSA");
    }
    let slotted = slotter.finish().expect("valid SSA");
    let total = start.elapsed().as_secs_f64();
    println!(
        "slotter: {slot_items} items -> {} slots; backward {:.0} M items/s, forward {:.0} M \
         items/s",
        slotted.num_wires,
        slot_items as f64 / backward / 1e6,
        slot_items as f64 / (total - backward) / 1e6
    );
}
