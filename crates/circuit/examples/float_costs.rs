//! Prints the AND count and AND depth of every float block (`blocks::float`), binary32 and
//! binary64, in both optimization modes, next to the Bristol Fashion binary64 circuits
//! (`shared/circuits/bristol_fashion/FP-*.txt`, counted here when found there or under
//! `$PGC_SHARED_CIRCUITS`):
//! `cargo run -p pgc-circuit --release --example float_costs`.

use std::path::PathBuf;

use pgc_circuit::analysis::stats;
use pgc_circuit::blocks::float::{self, Format};
use pgc_circuit::bristol::{Format as FileFormat, read_circuit_file};
use pgc_circuit::netlist::{Lit, NetBuilder, OptimizeFor};

/// Builds a block from its inputs (one or two float words, or one integer word).
type Block = fn(&mut NetBuilder, Format, &[Vec<Lit>]) -> Vec<Lit>;

struct Row {
    name: &'static str,
    /// Input widths given the format's width.
    inputs: fn(usize) -> Vec<usize>,
    block: Block,
    /// The Bristol Fashion binary64 circuit computing the same function, if any.
    bristol: Option<&'static str>,
}

fn one(w: usize) -> Vec<usize> {
    vec![w]
}
fn two(w: usize) -> Vec<usize> {
    vec![w, w]
}
fn int64(_: usize) -> Vec<usize> {
    vec![64]
}
fn int32(_: usize) -> Vec<usize> {
    vec![32]
}

fn measure(row: &Row, f: Format, mode: OptimizeFor) -> (u64, u64) {
    let mut g = NetBuilder::new(mode);
    let inputs: Vec<Vec<Lit>> = (row.inputs)(f.width())
        .into_iter()
        .map(|w| g.input(w as u32))
        .collect();
    let out = (row.block)(&mut g, f, &inputs);
    g.output(&out);
    let s = stats(&g.finish().0);
    (s.and_gates, s.and_depth)
}

/// (ANDs, AND depth) of a shared Bristol Fashion circuit, if the directory is there.
fn bristol_cost(name: &str) -> Option<(u64, u64)> {
    let dir = match std::env::var_os("PGC_SHARED_CIRCUITS") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/circuits"),
    };
    let path = dir.join("bristol_fashion").join(name);
    let c = read_circuit_file(&path, Some(FileFormat::BristolFashion)).ok()?;
    let s = stats(&c);
    Some((s.and_gates, s.and_depth))
}

fn main() {
    let rows = [
        Row {
            name: "neg, abs",
            inputs: one,
            block: |_, f, i| float::neg(f, &i[0]),
            bristol: None,
        },
        Row {
            name: "add",
            inputs: two,
            block: |g, f, i| float::add(g, f, &i[0], &i[1]),
            bristol: Some("FP-add.txt"),
        },
        Row {
            name: "sub",
            inputs: two,
            block: |g, f, i| float::sub(g, f, &i[0], &i[1]),
            bristol: None,
        },
        Row {
            name: "mul",
            inputs: two,
            block: |g, f, i| float::mul(g, f, &i[0], &i[1]),
            bristol: Some("FP-mul.txt"),
        },
        Row {
            name: "div",
            inputs: two,
            block: |g, f, i| float::div(g, f, &i[0], &i[1]),
            bristol: None,
        },
        Row {
            name: "sqrt",
            inputs: one,
            block: |g, f, i| float::sqrt(g, f, &i[0]),
            bristol: None,
        },
        Row {
            name: "lt",
            inputs: two,
            block: |g, f, i| vec![float::lt(g, f, &i[0], &i[1])],
            bristol: Some("FP-lt.txt"),
        },
        Row {
            name: "le",
            inputs: two,
            block: |g, f, i| vec![float::le(g, f, &i[0], &i[1])],
            bristol: None,
        },
        Row {
            name: "eq",
            inputs: two,
            block: |g, f, i| vec![float::eq(g, f, &i[0], &i[1])],
            bristol: Some("FP-eq.txt"),
        },
        Row {
            name: "unordered",
            inputs: two,
            block: |g, f, i| vec![float::unordered(g, f, &i[0], &i[1])],
            bristol: None,
        },
        Row {
            name: "from_int (long)",
            inputs: int64,
            block: |g, f, i| float::from_int(g, f, &i[0], true),
            bristol: Some("FP-i2f.txt"),
        },
        Row {
            name: "from_int (unsigned long)",
            inputs: int64,
            block: |g, f, i| float::from_int(g, f, &i[0], false),
            bristol: None,
        },
        Row {
            name: "from_int (int)",
            inputs: int32,
            block: |g, f, i| float::from_int(g, f, &i[0], true),
            bristol: None,
        },
        Row {
            name: "to_int (long)",
            inputs: one,
            block: |g, f, i| float::to_int(g, f, &i[0], 64, true),
            bristol: None,
        },
        Row {
            name: "to_int (unsigned long)",
            inputs: one,
            block: |g, f, i| float::to_int(g, f, &i[0], 64, false),
            bristol: None,
        },
        Row {
            name: "to_int (int)",
            inputs: one,
            block: |g, f, i| float::to_int(g, f, &i[0], 32, true),
            bristol: None,
        },
        Row {
            name: "to_int (unsigned)",
            inputs: one,
            block: |g, f, i| float::to_int(g, f, &i[0], 32, false),
            bristol: None,
        },
        Row {
            name: "(long)nearbyint",
            inputs: one,
            block: |g, f, i| {
                let r = float::nearbyint(g, f, &i[0]);
                float::to_int(g, f, &r, 64, true)
            },
            bristol: Some("FP-f2i.txt"),
        },
        Row {
            name: "floor",
            inputs: one,
            block: |g, f, i| float::floor(g, f, &i[0]),
            bristol: Some("FP-floor.txt"),
        },
        Row {
            name: "ceil",
            inputs: one,
            block: |g, f, i| float::ceil(g, f, &i[0]),
            bristol: Some("FP-ceil.txt"),
        },
        Row {
            name: "trunc",
            inputs: one,
            block: |g, f, i| float::trunc(g, f, &i[0]),
            bristol: None,
        },
        Row {
            name: "nearbyint",
            inputs: one,
            block: |g, f, i| float::nearbyint(g, f, &i[0]),
            bristol: None,
        },
        Row {
            name: "convert to other format",
            inputs: one,
            block: |g, f, i| {
                let to = if f == Format::BINARY32 {
                    Format::BINARY64
                } else {
                    Format::BINARY32
                };
                float::convert(g, f, to, &i[0])
            },
            bristol: None,
        },
    ];
    println!(
        "{:<26} {:>13} {:>13} {:>13} {:>13} {:>14}",
        "block (ANDs / AND depth)", "32 Size", "32 Depth", "64 Size", "64 Depth", "Bristol 64"
    );
    for row in &rows {
        let mut line = format!("{:<26}", row.name);
        for f in [Format::BINARY32, Format::BINARY64] {
            for mode in [OptimizeFor::Size, OptimizeFor::Depth] {
                let (ands, depth) = measure(row, f, mode);
                line += &format!(" {:>13}", format!("{ands} / {depth}"));
            }
        }
        let bristol = match row.bristol.map(|n| (n, bristol_cost(n))) {
            Some((_, Some((ands, depth)))) => format!("{ands} / {depth}"),
            Some((n, None)) => format!("({n}?)"),
            None => "-".to_string(),
        };
        line += &format!(" {bristol:>14}");
        println!("{line}");
    }
    println!(
        "convert: binary32 column is (double)f, binary64 column is (float)d. Bristol FP-i2f \
         converts a signed int64."
    );
}
