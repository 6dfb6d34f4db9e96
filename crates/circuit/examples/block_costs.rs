//! Prints the AND count and AND depth of each word-level block at 32 and 64 bits, in both
//! optimization modes, then the blocks of Demmler et al. (CCS 2015) Table 1 and a Table 3
//! dot product at their widths: `cargo run -p pgc-circuit --release --example block_costs`.

use pgc_circuit::analysis::stats;
use pgc_circuit::blocks;
use pgc_circuit::netlist::{Lit, NetBuilder, OptimizeFor};

type Block = fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit>;

/// A block over any number of input words.
type Words = dyn Fn(&mut NetBuilder, &[Vec<Lit>]) -> Vec<Lit>;

/// Builds `f(a, b)` over two fresh `n`-bit inputs and returns (ANDs, AND depth).
fn measure(n: u32, mode: OptimizeFor, f: Block) -> (u64, u64) {
    let mut g = NetBuilder::new(mode);
    let a = g.input(n);
    let b = g.input(n);
    let out = f(&mut g, &a, &b);
    g.output(&out);
    let (c, _) = g.finish();
    let s = stats(&c);
    (s.and_gates, s.and_depth)
}

fn main() {
    let blocks: Vec<(&str, Block)> = vec![
        ("add", |g, a, b| blocks::add(g, a, b)),
        ("sub", |g, a, b| blocks::sub(g, a, b)),
        ("neg", |g, a, _| blocks::neg(g, a)),
        ("lt_unsigned", |g, a, b| vec![blocks::lt_unsigned(g, a, b)]),
        ("lt_signed", |g, a, b| vec![blocks::lt_signed(g, a, b)]),
        ("eq", |g, a, b| vec![blocks::eq(g, a, b)]),
        ("mux_word", |g, a, b| blocks::mux_word(g, a[0], a, b)),
        ("or_reduce", |g, a, _| vec![blocks::or_reduce(g, a)]),
        ("popcount", |g, a, _| blocks::popcount(g, a)),
        ("mul", |g, a, b| blocks::mul(g, a, b)),
        ("mul_wide_unsigned", |g, a, b| {
            blocks::mul_wide_unsigned(g, a, b)
        }),
        ("mul by 0x...5555", |g, a, _| {
            let k = blocks::constant_word(0x5555_5555_5555_5555, a.len());
            blocks::mul(g, a, &k)
        }),
        ("udiv (quotient)", |g, a, b| blocks::udivrem(g, a, b).0),
        ("urem", |g, a, b| blocks::udivrem(g, a, b).1),
        ("udivrem", |g, a, b| {
            let (q, r) = blocks::udivrem(g, a, b);
            [q, r].concat()
        }),
        ("sdiv (quotient)", |g, a, b| blocks::sdivrem(g, a, b).0),
        ("sdivrem", |g, a, b| {
            let (q, r) = blocks::sdivrem(g, a, b);
            [q, r].concat()
        }),
        ("udiv by 10", |g, a, _| {
            let k = blocks::constant_word(10, a.len());
            blocks::udivrem(g, a, &k).0
        }),
        ("shl", |g, a, b| blocks::shl(g, a, b)),
        ("lshr", |g, a, b| blocks::lshr(g, a, b)),
        ("ashr", |g, a, b| blocks::ashr(g, a, b)),
        ("decoder (n outputs)", |g, a, _| {
            let bits = (usize::BITS - a.len().leading_zeros() - 1) as usize;
            blocks::decoder(g, &a[..bits], a.len())
        }),
        ("decoder, wide index", |g, a, _| {
            blocks::decoder(g, a, a.len())
        }),
    ];
    println!(
        "{:<22} {:>16} {:>16} {:>16} {:>16}",
        "block", "32 Size and/dep", "32 Depth", "64 Size", "64 Depth"
    );
    for (name, f) in &blocks {
        let mut row = format!("{name:<22}");
        for n in [32, 64] {
            for mode in [OptimizeFor::Size, OptimizeFor::Depth] {
                let (ands, depth) = measure(n, mode, *f);
                row += &format!(" {:>16}", format!("{ands} / {depth}"));
            }
        }
        println!("{row}");
    }
    // 64-bit operations on `int`s promoted to `long` (sign- or zero-extended 32-bit inputs).
    let promoted: Vec<(&str, bool, Block)> = vec![
        ("mul, sign-extended", true, |g, a, b| blocks::mul(g, a, b)),
        ("mul, zero-extended", false, |g, a, b| blocks::mul(g, a, b)),
        ("sdiv, sign-extended", true, |g, a, b| {
            blocks::sdivrem(g, a, b).0
        }),
        ("udiv, zero-extended", false, |g, a, b| {
            blocks::udivrem(g, a, b).0
        }),
    ];
    for (name, signed, f) in &promoted {
        let mut row = format!("64-bit {name} 32-bit inputs:");
        for mode in [OptimizeFor::Size, OptimizeFor::Depth] {
            let mut g = NetBuilder::new(mode);
            let (a, b) = (g.input(32), g.input(32));
            let ext = |x: &[Lit]| {
                if *signed {
                    blocks::sign_extend(x, 64)
                } else {
                    blocks::zero_extend(x, 64)
                }
            };
            let out = f(&mut g, &ext(&a), &ext(&b));
            g.output(&out);
            let s = stats(&g.finish().0);
            row += &format!(" {mode:?} {} ANDs / depth {};", s.and_gates, s.and_depth);
        }
        println!("{row}");
    }
    // Secret-index array reads: 16 elements of n bits, index of 4 and of n bits.
    for n in [32u32, 64] {
        for mode in [OptimizeFor::Size, OptimizeFor::Depth] {
            for index_bits in [4u32, n] {
                let mut g = NetBuilder::new(mode);
                let idx = g.input(index_bits);
                let elems: Vec<Vec<Lit>> = (0..16).map(|_| g.input(n)).collect();
                let out = blocks::mux_tree(&mut g, &idx, &elems);
                g.output(&out);
                let s = stats(&g.finish().0);
                println!(
                    "mux_tree 16 x {n} bits, {index_bits}-bit index, {mode:?}: {} ANDs, depth {}",
                    s.and_gates, s.and_depth
                );
            }
        }
    }
    seed_tables();
}

/// Builds `f` over `k` fresh `n`-bit inputs and returns (ANDs, AND depth).
fn measure_inputs(n: u32, k: usize, mode: OptimizeFor, f: &Words) -> (u64, u64) {
    let mut g = NetBuilder::new(mode);
    let inputs: Vec<Vec<Lit>> = (0..k).map(|_| g.input(n)).collect();
    let out = f(&mut g, &inputs);
    g.output(&out);
    let s = stats(&g.finish().0);
    (s.and_gates, s.and_depth)
}

/// `|a - b|` of unsigned words, one bit wider than they are.
fn abs_diff(g: &mut NetBuilder, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    let w = a.len() + 1;
    let d = blocks::sub(g, &blocks::zero_extend(a, w), &blocks::zero_extend(b, w));
    let negative = d[w - 1];
    blocks::negate_if(g, negative, &d)[..w - 1].to_vec()
}

/// The seed's Table 1 blocks (ADD with its carry out, SUB, the Manhattan distance
/// `|x1 - x2| + |y1 - y2|`, the full product) and its Table 3 dot product (n full products of
/// ℓ-bit values summed in 2ℓ bits: one carry-save tree over all partial products).
fn seed_tables() {
    let add: &Words = &|g, i| {
        let (s, c) = blocks::add_with_carry(g, &i[0], &i[1], Lit::FALSE);
        [s, vec![c]].concat()
    };
    let sub: &Words = &|g, i| blocks::sub(g, &i[0], &i[1]);
    let manhattan: &Words = &|g, i| {
        let dx = abs_diff(g, &i[0], &i[1]);
        let dy = abs_diff(g, &i[2], &i[3]);
        let (s, c) = blocks::add_with_carry(g, &dx, &dy, Lit::FALSE);
        [s, vec![c]].concat()
    };
    let product: &Words = &|g, i| blocks::mul_wide_unsigned(g, &i[0], &i[1]);
    let rows: [(&str, &[u32], usize, &Words); 4] = [
        ("ADD", &[20, 30, 40], 2, add),
        ("SUB", &[16, 32, 64], 2, sub),
        ("DST_M", &[16, 32, 64], 4, manhattan),
        ("full product", &[32, 64], 2, product),
    ];
    println!("\nDemmler et al. CCS 2015 Table 1 blocks (ANDs / depth):");
    for (name, widths, k, f) in rows {
        for &l in widths {
            let size = measure_inputs(l, k, OptimizeFor::Size, f);
            let depth = measure_inputs(l, k, OptimizeFor::Depth, f);
            println!(
                "{name:<13} l = {l:<3} Size {:>12} Depth {:>12}",
                format!("{} / {}", size.0, size.1),
                format!("{} / {}", depth.0, depth.1)
            );
        }
    }
    println!("Table 3 dot products, n full products of l-bit values summed in 2l bits:");
    for (n, l) in [(16usize, 16u32), (32, 32)] {
        let dot = move |g: &mut NetBuilder, i: &[Vec<Lit>]| {
            let width = 2 * l as usize;
            let mut cols: Vec<Vec<Lit>> = vec![Vec::new(); width];
            for pair in i.chunks(2) {
                let pc = blocks::product_columns(g, &pair[0], &pair[1], width);
                for (c, col) in pc.into_iter().enumerate() {
                    cols[c].extend(col);
                }
            }
            blocks::sum_columns(g, cols)
        };
        let size = measure_inputs(l, 2 * n, OptimizeFor::Size, &dot);
        let depth = measure_inputs(l, 2 * n, OptimizeFor::Depth, &dot);
        println!(
            "dot product   {n} x {l}-bit Size {:>12} Depth {:>12}",
            format!("{} / {}", size.0, size.1),
            format!("{} / {}", depth.0, depth.1)
        );
    }
}
