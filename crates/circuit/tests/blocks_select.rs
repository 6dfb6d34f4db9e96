//! Secret-index reads (mux_tree) and one-hot decoders.

mod blocks_util;

use blocks_util::*;
use pgc_circuit::blocks;
use pgc_circuit::generate::SplitMix64;
use pgc_circuit::netlist::Lit;

#[test]
fn mux_tree_reads_every_index_and_zeroes_out_of_range() {
    let w = 5u32;
    for mode in MODES {
        for len in 1..=9usize {
            for index_bits in 0..=5u32 {
                let mut widths = vec![index_bits];
                widths.extend(std::iter::repeat_n(w, len));
                let c = build(mode, &widths, |g, i| {
                    vec![blocks::mux_tree(g, &i[0], &i[1..])]
                });
                let mut rng = SplitMix64::new(len as u64 * 7 + index_bits as u64);
                let cases: Vec<Vec<u128>> = (0..1u128 << index_bits)
                    .flat_map(|idx| {
                        (0..3)
                            .map(|_| {
                                let mut case = vec![idx];
                                case.extend((0..len).map(|_| rng.below(32) as u128));
                                case
                            })
                            .collect::<Vec<_>>()
                    })
                    .collect();
                check(
                    &format!("mux_tree len={len} index_bits={index_bits} {mode:?}"),
                    &c,
                    &cases,
                    |v| {
                        let idx = v[0] as usize;
                        vec![if idx < len { v[1 + idx] } else { 0 }]
                    },
                );
                // A power-of-two table with an exact-width index needs no range check.
                if len.is_power_of_two() && 1 << index_bits == len {
                    assert_eq!(cost(&c).0, (len as u64 - 1) * w as u64);
                }
            }
        }
    }
}

#[test]
fn mux_tree_over_constant_table() {
    // An S-box style lookup of constants: correct and cheaper than a secret table.
    let table: Vec<u128> = (0..16u128).map(|i| (i * 7 + 3) % 16).collect();
    for mode in MODES {
        let c = build(mode, &[4], |_, _| Vec::new());
        drop(c);
        let c = build(mode, &[4], |g, i| {
            let elems: Vec<Vec<Lit>> = table.iter().map(|&v| blocks::constant_word(v, 4)).collect();
            vec![blocks::mux_tree(g, &i[0], &elems)]
        });
        let cases: Vec<Vec<u128>> = (0..16u128).map(|x| vec![x]).collect();
        check("constant table", &c, &cases, |v| vec![table[v[0] as usize]]);
        assert!(cost(&c).0 < 15 * 4);
    }
}

#[test]
fn mux_tree_with_wide_index() {
    for mode in MODES {
        let c = build(mode, &[32, 8, 8, 8], |g, i| {
            vec![blocks::mux_tree(g, &i[0], &i[1..])]
        });
        let cases: Vec<Vec<u128>> = [0u128, 1, 2, 3, 4, 1 << 31, (1 << 32) - 1, 258, 1 << 8]
            .iter()
            .map(|&idx| vec![idx, 0x11, 0x22, 0x33])
            .collect();
        check("wide index", &c, &cases, |v| {
            vec![match v[0] {
                0 => 0x11,
                1 => 0x22,
                2 => 0x33,
                _ => 0,
            }]
        });
    }
    let c = build(pgc_circuit::OptimizeFor::Size, &[0], |g, i| {
        vec![blocks::mux_tree(g, &i[0], &[])]
    });
    assert_eq!(c.layout.output_widths, vec![0]);
}

#[test]
fn decoder_is_one_hot_and_empty_out_of_range() {
    for mode in MODES {
        for n in 0..=13usize {
            for index_bits in 0..=5u32 {
                let c = build(mode, &[index_bits], |g, i| {
                    vec![blocks::decoder(g, &i[0], n)]
                });
                let cases: Vec<Vec<u128>> = (0..1u128 << index_bits).map(|x| vec![x]).collect();
                check(
                    &format!("decoder n={n} index_bits={index_bits} {mode:?}"),
                    &c,
                    &cases,
                    |v| vec![if (v[0] as usize) < n { 1 << v[0] } else { 0 }],
                );
            }
        }
        // Wide index, many outputs.
        let c = build(mode, &[32], |g, i| vec![blocks::decoder(g, &i[0], 40)]);
        let cases: Vec<Vec<u128>> = [0u128, 5, 39, 40, 41, 64, 1 << 20, (1 << 32) - 1]
            .iter()
            .map(|&x| vec![x])
            .collect();
        check("decoder 40 of 32-bit index", &c, &cases, |v| {
            vec![if v[0] < 40 { 1 << v[0] } else { 0 }]
        });
        // 32 outputs of an exact 5-bit index: n + O(sqrt n) ANDs.
        let c = build(mode, &[5], |g, i| vec![blocks::decoder(g, &i[0], 32)]);
        assert!(cost(&c).0 <= 48);
    }
}
