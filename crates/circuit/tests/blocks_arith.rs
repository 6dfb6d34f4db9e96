//! Word-level blocks against Rust integer arithmetic: exhaustive at 4 to 8 bits, random at
//! 32 and 64 bits, in both optimization modes.

mod blocks_util;

use blocks_util::*;
use pgc_circuit::blocks;
use pgc_circuit::netlist::{Gates, Lit, NetBuilder};

type Build = fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Vec<Lit>>;
type Reference = fn(u32, u128, u128) -> Vec<u128>;

fn bit(b: bool) -> u128 {
    b as u128
}

fn udiv_ref(n: u32, a: u128, b: u128) -> Vec<u128> {
    vec![
        a.checked_div(b).unwrap_or(mask(n)),
        a.checked_rem(b).unwrap_or(a),
    ]
}

fn sdiv_ref(n: u32, a: u128, b: u128) -> Vec<u128> {
    let (x, y) = (sext(a, n), sext(b, n));
    if y == 0 {
        vec![mask(n), a]
    } else {
        // i128 holds every n <= 64 quotient; truncation toward zero as in C.
        vec![(x / y) as u128 & mask(n), (x % y) as u128 & mask(n)]
    }
}

/// Shift amount semantics: modulo n.
fn amount(n: u32, b: u128) -> u32 {
    (b % n as u128) as u32
}

fn ops() -> Vec<(&'static str, Build, Reference)> {
    vec![
        (
            "add",
            |g, a, b| vec![blocks::add(g, a, b)],
            |n, a, b| vec![(a + b) & mask(n)],
        ),
        (
            "add_with_carry",
            |g, a, b| {
                let cin = a[0];
                let (s, c) = blocks::add_with_carry(g, a, b, cin);
                vec![s, vec![c]]
            },
            |n, a, b| {
                let t = a + b + (a & 1);
                vec![t & mask(n), t >> n]
            },
        ),
        (
            "sub",
            |g, a, b| vec![blocks::sub(g, a, b)],
            |n, a, b| vec![a.wrapping_sub(b) & mask(n)],
        ),
        (
            "sub_with_borrow",
            |g, a, b| {
                let (d, nb) = blocks::sub_with_borrow(g, a, b);
                vec![d, vec![nb]]
            },
            |n, a, b| vec![a.wrapping_sub(b) & mask(n), bit(a >= b)],
        ),
        (
            "neg",
            |g, a, _| vec![blocks::neg(g, a)],
            |n, a, _| vec![a.wrapping_neg() & mask(n)],
        ),
        (
            "abs",
            |g, a, _| vec![blocks::abs(g, a)],
            |n, a, _| vec![sext(a, n).unsigned_abs() & mask(n)],
        ),
        (
            "negate_if",
            |g, a, b| vec![blocks::negate_if(g, b[0], a)],
            |n, a, b| {
                vec![if b & 1 == 1 {
                    a.wrapping_neg() & mask(n)
                } else {
                    a
                }]
            },
        ),
        (
            "mul",
            |g, a, b| vec![blocks::mul(g, a, b)],
            |n, a, b| vec![(a * b) & mask(n)],
        ),
        (
            "mul_wide_unsigned",
            |g, a, b| vec![blocks::mul_wide_unsigned(g, a, b)],
            |_, a, b| vec![a * b],
        ),
        (
            "mul_wide_signed",
            |g, a, b| vec![blocks::mul_wide_signed(g, a, b)],
            |n, a, b| vec![(sext(a, n) * sext(b, n)) as u128 & mask(2 * n)],
        ),
        (
            "udivrem",
            |g, a, b| {
                let (q, r) = blocks::udivrem(g, a, b);
                vec![q, r]
            },
            udiv_ref,
        ),
        (
            "sdivrem",
            |g, a, b| {
                let (q, r) = blocks::sdivrem(g, a, b);
                vec![q, r]
            },
            sdiv_ref,
        ),
        (
            "shl",
            |g, a, b| vec![blocks::shl(g, a, b)],
            |n, a, b| vec![(a << amount(n, b)) & mask(n)],
        ),
        (
            "lshr",
            |g, a, b| vec![blocks::lshr(g, a, b)],
            |n, a, b| vec![a >> amount(n, b)],
        ),
        (
            "ashr",
            |g, a, b| vec![blocks::ashr(g, a, b)],
            |n, a, b| vec![(sext(a, n) >> amount(n, b)) as u128 & mask(n)],
        ),
        (
            "compare",
            |g, a, b| {
                vec![vec![
                    blocks::lt_unsigned(g, a, b),
                    blocks::le_unsigned(g, a, b),
                    blocks::gt_unsigned(g, a, b),
                    blocks::ge_unsigned(g, a, b),
                    blocks::lt_signed(g, a, b),
                    blocks::le_signed(g, a, b),
                    blocks::gt_signed(g, a, b),
                    blocks::ge_signed(g, a, b),
                    blocks::eq(g, a, b),
                    blocks::ne(g, a, b),
                ]]
            },
            |n, a, b| {
                let (x, y) = (sext(a, n), sext(b, n));
                let bits = [
                    a < b,
                    a <= b,
                    a > b,
                    a >= b,
                    x < y,
                    x <= y,
                    x > y,
                    x >= y,
                    a == b,
                    a != b,
                ];
                vec![bits.iter().enumerate().map(|(i, &v)| bit(v) << i).sum()]
            },
        ),
        (
            "mux_word",
            |g, a, b| {
                let sel = g.xor(a[0], b[0]);
                vec![blocks::mux_word(g, sel, a, b)]
            },
            |_, a, b| vec![if (a ^ b) & 1 == 1 { a } else { b }],
        ),
        (
            "bitwise",
            |g, a, b| {
                vec![
                    blocks::and_word(g, a, b),
                    blocks::or_word(g, a, b),
                    blocks::xor_word(g, a, b),
                    blocks::not_word(a),
                ]
            },
            |n, a, b| vec![a & b, a | b, a ^ b, !a & mask(n)],
        ),
        (
            "reduce",
            |g, a, _| {
                vec![vec![
                    blocks::or_reduce(g, a),
                    blocks::and_reduce(g, a),
                    blocks::xor_reduce(g, a),
                ]]
            },
            |n, a, _| {
                vec![bit(a != 0) | bit(a == mask(n)) << 1 | bit(a.count_ones() % 2 == 1) << 2]
            },
        ),
        (
            "columns: a*b + a + b, and compressed first to each Dadda height",
            |g, a, b| {
                let n = a.len();
                let mut cols = blocks::product_columns(g, a, b, n);
                for (c, col) in cols.iter_mut().enumerate() {
                    col.extend([a[c], b[c]]);
                }
                let mut out = vec![blocks::sum_columns(g, cols.clone())];
                for d in blocks::dadda_heights(n + 2) {
                    let compressed = blocks::compress_columns(g, cols.clone(), d);
                    out.push(blocks::sum_columns(g, compressed));
                }
                out
            },
            |n, a, b| {
                let v = (a * b + a + b) & mask(n);
                vec![v; 1 + blocks::dadda_heights(n as usize + 2).len()]
            },
        ),
        (
            "popcount",
            |g, a, _| vec![blocks::popcount(g, a)],
            |_, a, _| vec![a.count_ones() as u128],
        ),
        (
            "extend",
            |g, a, _| {
                let n = a.len();
                vec![
                    blocks::zero_extend(a, n + 3),
                    blocks::sign_extend(a, n + 3),
                    blocks::sign_extend(a, n - 1),
                ]
                .into_iter()
                .map(|w| {
                    // Route through a gate so constants and inputs both appear as outputs.
                    w.iter().map(|&l| g.xor(l, Lit::FALSE)).collect()
                })
                .collect()
            },
            |n, a, _| vec![a, sext(a, n) as u128 & mask(n + 3), a & mask(n - 1)],
        ),
    ]
}

#[test]
fn exhaustive_small_widths() {
    for n in 1..=8 {
        // 8 bits: every pair for the cheap ops, every pair for division too (65536 cases).
        let cases = all_pairs(n);
        for mode in MODES {
            for (name, build, reference) in ops() {
                let c = blocks_util::build(mode, &[n, n], |g, inp| build(g, &inp[0], &inp[1]));
                check(&format!("{name} n={n} {mode:?}"), &c, &cases, |v| {
                    reference(n, v[0], v[1])
                });
            }
        }
    }
}

#[test]
fn random_32_and_64_bits() {
    for n in [32u32, 64] {
        let cases = random_pairs(n, 600, 0x5eed + n as u64);
        for mode in MODES {
            for (name, build, reference) in ops() {
                let c = blocks_util::build(mode, &[n, n], |g, inp| build(g, &inp[0], &inp[1]));
                check(&format!("{name} n={n} {mode:?}"), &c, &cases, |v| {
                    reference(n, v[0], v[1])
                });
            }
        }
    }
}

#[test]
fn division_edge_cases_are_defined() {
    for mode in MODES {
        for n in [8u32, 32, 64] {
            let m = mask(n);
            let int_min = 1u128 << (n - 1);
            let c = blocks_util::build(mode, &[n, n], |g, i| {
                let (q, r) = blocks::sdivrem(g, &i[0], &i[1]);
                let (uq, ur) = blocks::udivrem(g, &i[0], &i[1]);
                vec![q, r, uq, ur]
            });
            let cases = vec![
                vec![5, 0],
                vec![m, 0], // -1 / 0
                vec![int_min, 0],
                vec![0, 0],
                vec![int_min, m], // INT_MIN / -1
                vec![int_min, 1],
                vec![m - 6, 2], // -7 / 2 = -3 rem -1
                vec![7, m - 1], // 7 / -2 = -3 rem 1
            ];
            let got = eval_cases(&c, &cases);
            // x / 0: signed -1 and unsigned all ones, remainder x.
            assert_eq!(got[0], vec![m, 5, m, 5], "{mode:?} n={n}");
            assert_eq!(got[1], vec![m, m, m, m]);
            assert_eq!(got[2], vec![m, int_min, m, int_min]);
            assert_eq!(got[3], vec![m, 0, m, 0]);
            // INT_MIN / -1 wraps to INT_MIN, remainder 0.
            assert_eq!(got[4][..2], [int_min, 0]);
            assert_eq!(got[5][..2], [int_min, 0]);
            assert_eq!(got[6][..2], [m - 2, m]);
            assert_eq!(got[7][..2], [m - 2, 1]);
        }
    }
}

#[test]
fn shift_amounts_wrap_modulo_width_for_odd_widths() {
    // Widths that are not powers of two reduce the amount with a constant division.
    for n in [5u32, 12, 24] {
        for mode in MODES {
            let c = blocks_util::build(mode, &[n, 8], |g, i| {
                vec![
                    blocks::shl(g, &i[0], &i[1]),
                    blocks::lshr(g, &i[0], &i[1]),
                    blocks::ashr(g, &i[0], &i[1]),
                ]
            });
            let cases: Vec<Vec<u128>> = (0..256u128)
                .map(|s| vec![(0xA5C3_96F1u128 * (s + 1)) & mask(n), s])
                .collect();
            check(&format!("shifts n={n}"), &c, &cases, |v| {
                let k = (v[1] % n as u128) as u32;
                vec![
                    (v[0] << k) & mask(n),
                    v[0] >> k,
                    (sext(v[0], n) >> k) as u128 & mask(n),
                ]
            });
        }
    }
}

/// `x * x` shares its doubled cross products: correct, and about half the ANDs of `x * y`.
#[test]
fn squares_are_correct_and_cheaper() {
    use pgc_circuit::OptimizeFor;
    for mode in [OptimizeFor::Size, OptimizeFor::Depth] {
        for n in [1u32, 5, 8] {
            let c = build(mode, &[n], |g, i| vec![blocks::mul(g, &i[0], &i[0])]);
            let cases: Vec<Vec<u128>> = (0..1u128 << n).map(|x| vec![x]).collect();
            check("square", &c, &cases, |v| vec![(v[0] * v[0]) & mask(n)]);
        }
        let square = build(mode, &[64], |g, i| vec![blocks::mul(g, &i[0], &i[0])]);
        let product = build(mode, &[64, 64], |g, i| vec![blocks::mul(g, &i[0], &i[1])]);
        let (sq, pr) = (cost(&square).0, cost(&product).0);
        assert!(
            sq * 10 < pr * 6,
            "{mode:?}: square {sq} ANDs vs product {pr}"
        );
        let cases = blocks_util::random_pairs(64, 200, 7)
            .into_iter()
            .map(|v| vec![v[0]])
            .collect::<Vec<_>>();
        check("square64", &square, &cases, |v| {
            vec![v[0].wrapping_mul(v[0]) & mask(64)]
        });
    }
}

/// A product's columns compressed to a Dadda height reuse the stages its multiplier made
/// (structural hashing finds every gate), so a carry-save sum of products compresses each
/// product once.
#[test]
fn compressed_product_columns_share_the_multipliers_gates() {
    use pgc_circuit::netlist::OptimizeFor;
    for n in [8u32, 32, 64] {
        let mut g = NetBuilder::new(OptimizeFor::Depth);
        let (a, b) = (g.input(n), g.input(n));
        let product = blocks::mul(&mut g, &a, &b);
        g.output(&product);
        let before = g.gates_emitted();
        let cols = blocks::product_columns(&mut g, &a, &b, n as usize);
        let tallest = cols.iter().map(Vec::len).max().unwrap_or(0);
        for d in blocks::dadda_heights(tallest) {
            let compressed = blocks::compress_columns(&mut g, cols.clone(), d);
            assert!(
                compressed[..n as usize - 1].iter().all(|c| c.len() <= d),
                "n={n}: a column above height {d}"
            );
        }
        assert_eq!(
            g.gates_emitted(),
            before,
            "n={n}: compressing made new gates"
        );
    }
}
