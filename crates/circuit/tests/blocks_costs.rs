//! AND counts and depths of the blocks, and constant operands folding to what they need.

mod blocks_util;

use blocks_util::*;
use pgc_circuit::blocks;
use pgc_circuit::generate::SplitMix64;
use pgc_circuit::netlist::{Lit, NetBuilder, OptimizeFor};

fn binary_cost(
    n: u32,
    mode: OptimizeFor,
    f: impl FnOnce(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit>,
) -> (u64, u64) {
    cost(&build(mode, &[n, n], |g, i| vec![f(g, &i[0], &i[1])]))
}

fn ceil_log2(n: u32) -> u64 {
    (u32::BITS - (n - 1).leading_zeros()) as u64
}

#[test]
fn size_mode_and_counts() {
    let s = OptimizeFor::Size;
    assert_eq!(binary_cost(32, s, blocks::add).0, 31);
    assert_eq!(binary_cost(32, s, blocks::sub).0, 31);
    assert_eq!(binary_cost(32, s, |g, a, _| blocks::neg(g, a)).0, 30);
    assert_eq!(
        binary_cost(32, s, |g, a, b| vec![blocks::lt_unsigned(g, a, b)]).0,
        32
    );
    assert_eq!(
        binary_cost(32, s, |g, a, b| vec![blocks::lt_signed(g, a, b)]).0,
        32
    );
    assert_eq!(
        binary_cost(32, s, |g, a, b| vec![blocks::eq(g, a, b)]).0,
        31
    );
    assert_eq!(
        binary_cost(32, s, |g, a, b| blocks::mux_word(g, a[0], a, b)).0,
        32
    );
    assert_eq!(binary_cost(32, s, blocks::mul).0, 993);
    assert_eq!(binary_cost(64, s, blocks::mul).0, 4033);
    let udiv_q = binary_cost(64, s, |g, a, b| blocks::udivrem(g, a, b).0).0;
    assert!(udiv_q <= 4285, "64-bit unsigned quotient: {udiv_q} ANDs");
    let udivrem = binary_cost(64, s, |g, a, b| {
        let (q, r) = blocks::udivrem(g, a, b);
        [q, r].concat()
    })
    .0;
    assert!(udivrem <= 4285, "64-bit udivrem: {udivrem} ANDs");
    let sdiv_q = binary_cost(64, s, |g, a, b| blocks::sdivrem(g, a, b).0).0;
    assert!(sdiv_q <= 4664, "64-bit signed quotient: {sdiv_q} ANDs");
    let sdivrem = binary_cost(64, s, |g, a, b| {
        let (q, r) = blocks::sdivrem(g, a, b);
        [q, r].concat()
    })
    .0;
    assert!(sdivrem <= 4664, "64-bit sdivrem: {sdivrem} ANDs");
    assert_eq!(binary_cost(32, s, |g, a, _| blocks::popcount(g, a)).0, 31);
    assert_eq!(binary_cost(32, s, blocks::shl).0, 32 * 5);
}

#[test]
fn depth_mode_is_logarithmic() {
    let d = OptimizeFor::Depth;
    for n in [32u32, 64] {
        let lg = ceil_log2(n);
        let (_, add_depth) = binary_cost(n, d, blocks::add);
        assert!(add_depth <= lg + 1, "add n={n}: depth {add_depth}");
        let (_, sub_depth) = binary_cost(n, d, blocks::sub);
        assert!(sub_depth <= lg + 1, "sub n={n}: depth {sub_depth}");
        let (_, lt_depth) = binary_cost(n, d, |g, a, b| vec![blocks::lt_signed(g, a, b)]);
        assert!(lt_depth <= lg + 1, "lt n={n}: depth {lt_depth}");
        let (eq_ands, eq_depth) = binary_cost(n, d, |g, a, b| vec![blocks::eq(g, a, b)]);
        assert_eq!((eq_ands, eq_depth), (n as u64 - 1, lg));
        let (_, mul_depth) = binary_cost(n, d, blocks::mul);
        // Partial products, about log_1.5(n) Dadda stages, then a prefix adder.
        assert!(mul_depth <= 3 * lg, "mul n={n}: depth {mul_depth}");
        let (_, shl_depth) = binary_cost(n, d, blocks::shl);
        assert_eq!(shl_depth, lg);
        // Depth mode never loses depth against size mode.
        let (_, size_mul_depth) = binary_cost(n, OptimizeFor::Size, blocks::mul);
        assert!(mul_depth < size_mul_depth);
    }
}

/// ANDs of `op(x, constant)` for a secret 32-bit x.
fn with_constant(
    mode: OptimizeFor,
    n: u32,
    k: u128,
    op: fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit>,
) -> u64 {
    cost(&build(mode, &[n], |g, i| {
        vec![op(g, &i[0], &blocks::constant_word(k, n as usize))]
    }))
    .0
}

#[test]
fn constant_operands_fold() {
    let mul: fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit> = blocks::mul;
    let div: fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit> = |g, a, b| blocks::udivrem(g, a, b).0;
    let rem: fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit> = |g, a, b| blocks::udivrem(g, a, b).1;
    let sdiv: fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit> =
        |g, a, b| blocks::sdivrem(g, a, b).0;
    let shl: fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit> = blocks::shl;
    let add: fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit> = blocks::add;
    for mode in MODES {
        for k in [0u128, 1, 2, 8, 1 << 31] {
            assert_eq!(with_constant(mode, 32, k, mul), 0, "x * {k}");
            assert_eq!(with_constant(mode, 32, k, shl), 0, "x << {k}");
        }
        for k in [1u128, 2, 16, 1 << 31] {
            assert_eq!(with_constant(mode, 32, k, div), 0, "x / {k} {mode:?}");
            assert_eq!(with_constant(mode, 32, k, rem), 0, "x % {k} {mode:?}");
        }
        assert_eq!(with_constant(mode, 32, 0, div), 0, "x / 0");
        assert_eq!(with_constant(mode, 32, 0, add), 0, "x + 0");
    }
    let s = OptimizeFor::Size;
    // x * -1 = -x: the signed-digit form makes it one negation.
    assert_eq!(with_constant(s, 32, 0xFFFF_FFFF, mul), 30);
    // x * 3 = x + 2x.
    assert_eq!(with_constant(s, 32, 3, mul), 30);
    // x * 7 = 8x - x.
    assert!(with_constant(s, 32, 7, mul) <= 62);
    // x + 1: an increment, like negation.
    assert_eq!(with_constant(s, 32, 1, add), 30);
    // Division by a small constant only works on remainders below it.
    let by_ten = with_constant(s, 32, 10, div);
    assert!(by_ten < 200, "x / 10: {by_ten} ANDs");
    assert!(with_constant(s, 32, 10, sdiv) < by_ten + 4 * 32);
    // Any constant costs at most its nonzero digits' rows.
    let mut rng = SplitMix64::new(3);
    for _ in 0..20 {
        let k = rng.next_u64() as u128 & mask(32);
        let ands = with_constant(s, 32, k, mul);
        assert!(ands <= k.count_ones() as u64 * 32, "x * {k:#x}: {ands}");
    }
}

#[test]
fn constant_operands_compute_correctly() {
    // Every 6-bit constant, every 6-bit x.
    let n = 6u32;
    let xs: Vec<Vec<u128>> = (0..1u128 << n).map(|x| vec![x]).collect();
    for mode in MODES {
        for k in 0..1u128 << n {
            let c = build(mode, &[n], |g, i| {
                let kw = blocks::constant_word(k, n as usize);
                let (q, r) = blocks::udivrem(g, &i[0], &kw);
                let (sq, sr) = blocks::sdivrem(g, &i[0], &kw);
                vec![
                    blocks::mul(g, &i[0], &kw),
                    q,
                    r,
                    sq,
                    sr,
                    blocks::mul(g, &kw, &i[0]),
                ]
            });
            check(&format!("constant {k} {mode:?}"), &c, &xs, |v| {
                let x = v[0];
                let (sx, sk) = (sext(x, n), sext(k, n));
                let (q, r) = x
                    .checked_div(k)
                    .zip(x.checked_rem(k))
                    .unwrap_or((mask(n), x));
                let (sq, sr) = if sk == 0 {
                    (mask(n), x)
                } else {
                    ((sx / sk) as u128 & mask(n), (sx % sk) as u128 & mask(n))
                };
                let p = (x * k) & mask(n);
                vec![p, q, r, sq, sr, p]
            });
        }
    }
    // Random 32- and 64-bit constants.
    let mut rng = SplitMix64::new(11);
    for n in [32u32, 64] {
        let xs: Vec<Vec<u128>> = random_pairs(n, 200, 5)
            .into_iter()
            .map(|p| vec![p[0]])
            .collect();
        for mode in MODES {
            for round in 0..6 {
                let k = match round {
                    0 => mask(n),
                    1 => 10,
                    2 => 0x8000_0001,
                    _ => rng.next_u64() as u128 & mask(n) >> rng.below(n),
                };
                let c = build(mode, &[n], |g, i| {
                    let kw = blocks::constant_word(k, n as usize);
                    let (q, r) = blocks::udivrem(g, &i[0], &kw);
                    vec![blocks::mul(g, &i[0], &kw), q, r]
                });
                check(&format!("constant {k:#x} n={n} {mode:?}"), &c, &xs, |v| {
                    let x = v[0];
                    vec![(x * k) & mask(n), x / k, x % k]
                });
            }
        }
    }
}

#[test]
fn partly_constant_divisor_keeps_x_mod_zero_defined() {
    // A divisor with known-zero high bits but a secret low bit: remainders are kept narrow,
    // yet x % 0 must still be x.
    for mode in MODES {
        let n = 8u32;
        let c = build(mode, &[n, 2], |g, i| {
            let mut b = i[1].clone();
            b.resize(n as usize, Lit::FALSE);
            let (q, r) = blocks::udivrem(g, &i[0], &b);
            vec![q, r]
        });
        let cases: Vec<Vec<u128>> = (0..256u128)
            .flat_map(|x| (0..4u128).map(move |b| vec![x, b]))
            .collect();
        check("narrow divisor", &c, &cases, |v| {
            let q = v[0].checked_div(v[1]).unwrap_or(mask(n));
            let r = v[0].checked_rem(v[1]).unwrap_or(v[0]);
            vec![q, r]
        });
    }
}

/// A 64-bit word made from a secret 32-bit input by sign or zero extension.
fn extend(a: &[Lit], signed: bool) -> Vec<Lit> {
    if signed {
        blocks::sign_extend(a, 64)
    } else {
        blocks::zero_extend(a, 64)
    }
}

#[test]
fn promoted_operands_cost_like_narrow_ones() {
    // C promotes `int` to `long` before arithmetic; the blocks must not pay for 64 bits.
    let cases: Vec<Vec<u128>> = random_pairs(32, 300, 77);
    for mode in MODES {
        for (sa, sb) in [(true, true), (false, false), (true, false), (false, true)] {
            let c = build(mode, &[32, 32], |g, i| {
                let (a, b) = (extend(&i[0], sa), extend(&i[1], sb));
                let (q, r) = blocks::sdivrem(g, &a, &b);
                let (uq, ur) = blocks::udivrem(g, &a, &b);
                vec![blocks::mul(g, &a, &b), q, r, uq, ur]
            });
            check(&format!("promoted {sa} {sb} {mode:?}"), &c, &cases, |v| {
                let ext = |x: u128, s: bool| if s { sext(x, 32) as u128 & mask(64) } else { x };
                let (a, b) = (ext(v[0], sa), ext(v[1], sb));
                let (x, y) = (sext(a, 64), sext(b, 64));
                let (q, r) = if y == 0 {
                    (mask(64), a)
                } else {
                    ((x / y) as u128 & mask(64), (x % y) as u128 & mask(64))
                };
                let uq = a.checked_div(b).unwrap_or(mask(64));
                let ur = a.checked_rem(b).unwrap_or(a);
                vec![(a * b) & mask(64), q, r, uq, ur]
            });
        }
    }
    let s = OptimizeFor::Size;
    let cost_of = |f: fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit>, sa: bool, sb: bool| {
        cost(&build(s, &[32, 32], |g, i| {
            vec![f(g, &extend(&i[0], sa), &extend(&i[1], sb))]
        }))
        .0
    };
    let mul: fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit> = blocks::mul;
    let sdiv: fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit> =
        |g, a, b| blocks::sdivrem(g, a, b).0;
    let udiv: fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit> =
        |g, a, b| blocks::udivrem(g, a, b).0;
    // A 32 x 32 -> 64 product: 2016 ANDs unsigned; signed adds two correction rows.
    assert_eq!(cost_of(mul, false, false), 2016);
    let signed_mul = cost_of(mul, true, true);
    assert!(
        signed_mul <= 2016 + 4 * 32 + 8,
        "signed 32x32->64: {signed_mul}"
    );
    // 64-bit divisions of 32-bit values cost about a 33-bit division plus the negations.
    let narrow_udiv = binary_cost(32, s, |g, a, b| blocks::udivrem(g, a, b).0).0;
    assert!(cost_of(udiv, false, false) <= narrow_udiv + 2 * 32);
    let wide_sdiv = cost_of(sdiv, true, true);
    assert!(
        wide_sdiv < narrow_udiv + 100 + 4 * 64,
        "64-bit sdiv of ints: {wide_sdiv}"
    );
}
