//! Constant-table lookups (`table_lookup`) and multi-operand sums (`sum_of_products`).

mod blocks_util;

use blocks_util::*;
use pgc_circuit::blocks::{self, Addend};
use pgc_circuit::generate::SplitMix64;
use pgc_circuit::netlist::{Lit, OptimizeFor};

fn random_table(rng: &mut SplitMix64, len: usize, width: u32) -> Vec<u128> {
    (0..len)
        .map(|_| rng.next_u64() as u128 & mask(width))
        .collect()
}

fn as_bits(table: &[u128], width: u32) -> Vec<Vec<bool>> {
    table
        .iter()
        .map(|&v| (0..width).map(|j| (v >> j) & 1 == 1).collect())
        .collect()
}

#[test]
fn table_lookup_reads_every_index_and_zeroes_out_of_range() {
    let mut rng = SplitMix64::new(7);
    for mode in MODES {
        for len in [1usize, 2, 3, 5, 8, 13, 16, 31, 64, 100] {
            for index_bits in [0u32, 1, 3, 5, 7, 8] {
                let width = 1 + rng.below(9);
                let table = random_table(&mut rng, len, width);
                let bits = as_bits(&table, width);
                let c = build(mode, &[index_bits], |g, i| {
                    vec![blocks::table_lookup(g, &i[0], &bits, width as usize)]
                });
                let cases: Vec<Vec<u128>> = (0..1u128 << index_bits).map(|x| vec![x]).collect();
                check(
                    &format!("table_lookup len={len} index_bits={index_bits} {mode:?}"),
                    &c,
                    &cases,
                    |v| vec![table.get(v[0] as usize).copied().unwrap_or(0)],
                );
            }
        }
    }
}

#[test]
fn table_lookup_costs_of_a_byte_table() {
    // Any 8-bit to 8-bit table: a 5-bit decoder (48 ANDs) and a 7-multiplexer tree per
    // output bit (56), or in depth mode two 4-bit decoders and a selection, depth 3.
    let mut rng = SplitMix64::new(11);
    let table = random_table(&mut rng, 256, 8);
    let bits = as_bits(&table, 8);
    let cases: Vec<Vec<u128>> = (0..256u128).map(|x| vec![x]).collect();
    let size = build(OptimizeFor::Size, &[8], |g, i| {
        vec![blocks::table_lookup(g, &i[0], &bits, 8)]
    });
    check("byte table", &size, &cases, |v| vec![table[v[0] as usize]]);
    let (ands, _) = cost(&size);
    assert!(ands <= 104, "byte table: {ands} ANDs");
    let depth = build(OptimizeFor::Depth, &[8], |g, i| {
        vec![blocks::table_lookup(g, &i[0], &bits, 8)]
    });
    check("byte table (depth)", &depth, &cases, |v| {
        vec![table[v[0] as usize]]
    });
    let (ands, d) = cost(&depth);
    assert_eq!(d, 3);
    assert!(ands <= 176, "byte table (depth): {ands} ANDs");
}

/// Random sums of up to 6 terms (words and products, some subtracted) of assorted
/// widths, zero- or sign-extended narrower values among them, against 128-bit arithmetic.
#[test]
fn sum_of_products_matches_arithmetic() {
    let mut rng = SplitMix64::new(3);
    for mode in MODES {
        for round in 0..60 {
            let width = 1 + rng.below(24);
            let n_terms = 1 + rng.below(6) as usize;
            // (is product, subtract, [operand widths], [operand signed])
            let mut shapes = Vec::new();
            let mut widths = Vec::new();
            for _ in 0..n_terms {
                let product = rng.below(3) == 0;
                let subtract = rng.below(3) == 0;
                let ops = if product { 2 } else { 1 };
                let mut spec = Vec::new();
                for _ in 0..ops {
                    let w = 1 + rng.below(width);
                    let signed = rng.next_bool();
                    spec.push((widths.len(), w, signed));
                    widths.push(w);
                }
                shapes.push((product, subtract, spec));
            }
            let ext = |x: &[Lit], w: u32, signed: bool| {
                if signed {
                    blocks::sign_extend(x, width as usize)
                } else {
                    let _ = w;
                    blocks::zero_extend(x, width as usize)
                }
            };
            let c = build(mode, &widths, |g, inputs| {
                let addends: Vec<(Addend, bool)> = shapes
                    .iter()
                    .map(|(product, subtract, spec)| {
                        let ops: Vec<Vec<Lit>> = spec
                            .iter()
                            .map(|&(i, w, s)| ext(&inputs[i], w, s))
                            .collect();
                        let a = if *product {
                            Addend::Product(ops[0].clone(), ops[1].clone())
                        } else {
                            Addend::Word(ops[0].clone())
                        };
                        (a, *subtract)
                    })
                    .collect();
                vec![blocks::sum_of_products(g, &addends, width as usize)]
            });
            let cases: Vec<Vec<u128>> = (0..200)
                .map(|_| {
                    widths
                        .iter()
                        .map(|&w| match rng.below(4) {
                            0 => mask(w),
                            1 => 1u128 << (w - 1),
                            _ => rng.next_u64() as u128 & mask(w),
                        })
                        .collect()
                })
                .collect();
            check(
                &format!("sum_of_products round {round} {mode:?}: {shapes:?}"),
                &c,
                &cases,
                |v| {
                    let value = |i: usize, w: u32, s: bool| {
                        if s { sext(v[i], w) } else { v[i] as i128 }
                    };
                    let mut sum = 0i128;
                    for (product, subtract, spec) in &shapes {
                        let ops: Vec<i128> = spec.iter().map(|&(i, w, s)| value(i, w, s)).collect();
                        let t = if *product {
                            ops[0].wrapping_mul(ops[1])
                        } else {
                            ops[0]
                        };
                        sum = if *subtract {
                            sum.wrapping_sub(t)
                        } else {
                            sum.wrapping_add(t)
                        };
                    }
                    vec![sum as u128 & mask(width)]
                },
            );
        }
    }
}

#[test]
fn sum_of_one_bit_words_costs_a_population_count() {
    for mode in MODES {
        let c = build(mode, &[32], |g, i| {
            let addends: Vec<(Addend, bool)> = i[0]
                .iter()
                .map(|&b| (Addend::Word(blocks::zero_extend(&[b], 8)), false))
                .collect();
            vec![blocks::sum_of_products(g, &addends, 8)]
        });
        let cases: Vec<Vec<u128>> = [0u128, 1, 0xffff_ffff, 0x8000_0001, 0x1234_5678]
            .iter()
            .map(|&x| vec![x])
            .collect();
        check("32-bit popcount as a sum", &c, &cases, |v| {
            vec![v[0].count_ones() as u128]
        });
        let popcount = build(mode, &[32], |g, i| vec![blocks::popcount(g, &i[0])]);
        let (sum_ands, sum_depth) = cost(&c);
        let (pop_ands, pop_depth) = cost(&popcount);
        match mode {
            OptimizeFor::Size => assert!(
                sum_ands <= pop_ands,
                "sum of bits {sum_ands} ANDs, popcount {pop_ands}"
            ),
            // A Dadda tree and a prefix adder: for one-bit terms a few more ANDs and one
            // more level than popcount's adder tree (41 ANDs, depth 6 against 31, 5).
            OptimizeFor::Depth => assert!(
                sum_depth <= pop_depth + 1 && sum_ands <= pop_ands * 3 / 2,
                "sum of bits {sum_ands} ANDs depth {sum_depth}, popcount {pop_ands} depth {pop_depth}"
            ),
        }
    }
}
