//! Prints the AND count and AND depth of each word-level block at 32 and 64 bits, in both
//! optimization modes: `cargo run -p pgc-circuit --release --example block_costs`.

use pgc_circuit::analysis::stats;
use pgc_circuit::blocks;
use pgc_circuit::netlist::{Lit, NetBuilder, OptimizeFor};

type Block = fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit>;

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
}
