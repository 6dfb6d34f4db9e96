//! Float blocks against what nobody here wrote: the x86-64 SSE2 instructions themselves
//! (through `asm!`, so operand order is exactly the hardware's) and gcc -O2 compiled C for
//! C's conversion rules. Special values (signed zeros, subnormal and normal extremes,
//! infinities, quiet and signalling NaNs with payloads, halfway and boundary cases) and
//! seeded random bit patterns and values, both formats, both optimization modes.

#![cfg(target_arch = "x86_64")]

mod blocks_util;

use std::io::Write;
use std::process::{Command, Stdio};

use blocks_util::*;
use pgc_circuit::blocks::float::{self, Format};
use pgc_circuit::generate::SplitMix64;
use pgc_circuit::netlist::{Lit, NetBuilder};

const F32: Format = Format::BINARY32;
const F64: Format = Format::BINARY64;
const FORMATS: [Format; 2] = [F32, F64];

/// The instructions gcc emits for float operations, run on this machine at the default
/// MXCSR (round to nearest even, no flush-to-zero, no denormals-are-zero).
mod hw {
    use std::arch::asm;

    macro_rules! binary {
        ($name:ident, $insn:literal, $mov:literal, $ty:ty, $reg:ident) => {
            pub fn $name(a: u64, b: u64) -> u64 {
                let (a, b) = (a as $ty, b as $ty);
                let out: $ty;
                // SAFETY: moves between general and xmm registers and one scalar SSE
                // instruction on registers only; no memory, stack or flags are touched.
                unsafe {
                    asm!(
                        concat!($mov, " {x}, {a:", stringify!($reg), "}"),
                        concat!($mov, " {y}, {b:", stringify!($reg), "}"),
                        concat!($insn, " {x}, {y}"),
                        concat!($mov, " {o:", stringify!($reg), "}, {x}"),
                        a = in(reg) a,
                        b = in(reg) b,
                        o = out(reg) out,
                        x = out(xmm_reg) _,
                        y = out(xmm_reg) _,
                        options(pure, nomem, nostack),
                    );
                }
                out as u64
            }
        };
    }

    binary!(addsd, "addsd", "movq", u64, r);
    binary!(subsd, "subsd", "movq", u64, r);
    binary!(mulsd, "mulsd", "movq", u64, r);
    binary!(divsd, "divsd", "movq", u64, r);
    binary!(addss, "addss", "movd", u32, e);
    binary!(subss, "subss", "movd", u32, e);
    binary!(mulss, "mulss", "movd", u32, e);
    binary!(divss, "divss", "movd", u32, e);

    /// `sqrtsd`/`sqrtss` (the result register's upper bits are irrelevant here).
    pub fn sqrtsd(a: u64) -> u64 {
        let out: u64;
        // SAFETY: register-only moves and one square root instruction.
        unsafe {
            asm!("movq {x}, {a}", "sqrtsd {x}, {x}", "movq {o}, {x}",
                a = in(reg) a, o = out(reg) out, x = out(xmm_reg) _,
                options(pure, nomem, nostack));
        }
        out
    }

    pub fn sqrtss(a: u64) -> u64 {
        let out: u32;
        // SAFETY: register-only moves and one square root instruction.
        unsafe {
            asm!("movd {x}, {a:e}", "sqrtss {x}, {x}", "movd {o:e}, {x}",
                a = in(reg) a as u32, o = out(reg) out, x = out(xmm_reg) _,
                options(pure, nomem, nostack));
        }
        out as u64
    }

    /// `(float)d`.
    pub fn cvtsd2ss(a: u64) -> u64 {
        let out: u32;
        // SAFETY: register-only moves and one conversion instruction.
        unsafe {
            asm!("movq {x}, {a}", "cvtsd2ss {x}, {x}", "movd {o:e}, {x}",
                a = in(reg) a, o = out(reg) out, x = out(xmm_reg) _,
                options(pure, nomem, nostack));
        }
        out as u64
    }

    /// `(double)f`.
    pub fn cvtss2sd(a: u64) -> u64 {
        let out: u64;
        // SAFETY: register-only moves and one conversion instruction.
        unsafe {
            asm!("movd {x}, {a:e}", "cvtss2sd {x}, {x}", "movq {o}, {x}",
                a = in(reg) a as u32, o = out(reg) out, x = out(xmm_reg) _,
                options(pure, nomem, nostack));
        }
        out
    }

    /// `cvtsi2sd`/`cvtsi2ss` from a signed 64-bit integer.
    pub fn cvtsi2sd(a: i64) -> u64 {
        let out: u64;
        // SAFETY: register-only conversion and move.
        unsafe {
            asm!("cvtsi2sd {x}, {a}", "movq {o}, {x}",
                a = in(reg) a, o = out(reg) out, x = out(xmm_reg) _,
                options(pure, nomem, nostack));
        }
        out
    }

    pub fn cvtsi2ss(a: i64) -> u64 {
        let out: u32;
        // SAFETY: register-only conversion and move.
        unsafe {
            asm!("cvtsi2ss {x}, {a}", "movd {o:e}, {x}",
                a = in(reg) a, o = out(reg) out, x = out(xmm_reg) _,
                options(pure, nomem, nostack));
        }
        out as u64
    }

    /// `roundsd`/`roundss` with an immediate mode (9 floor, 10 ceil, 11 trunc, 12 the
    /// MXCSR mode, nearest even; bit 3 suppresses the inexact exception).
    macro_rules! round {
        ($name:ident, $insn:literal, $mov:literal, $ty:ty, $reg:ident, $imm:literal) => {
            pub fn $name(a: u64) -> u64 {
                let out: $ty;
                // SAFETY: register-only moves and one SSE4.1 rounding instruction (the test
                // checks for SSE4.1 first).
                unsafe {
                    asm!(
                        concat!($mov, " {x}, {a:", stringify!($reg), "}"),
                        concat!($insn, " {x}, {x}, ", $imm),
                        concat!($mov, " {o:", stringify!($reg), "}, {x}"),
                        a = in(reg) a as $ty,
                        o = out(reg) out,
                        x = out(xmm_reg) _,
                        options(pure, nomem, nostack),
                    );
                }
                out as u64
            }
        };
    }
    round!(floorsd, "roundsd", "movq", u64, r, "9");
    round!(ceilsd, "roundsd", "movq", u64, r, "10");
    round!(truncsd, "roundsd", "movq", u64, r, "11");
    round!(nearbysd, "roundsd", "movq", u64, r, "12");
    round!(floorss, "roundss", "movd", u32, e, "9");
    round!(ceilss, "roundss", "movd", u32, e, "10");
    round!(truncss, "roundss", "movd", u32, e, "11");
    round!(nearbyss, "roundss", "movd", u32, e, "12");
}

// ---- Values ----

fn field_mask(bits: usize) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

fn make(f: Format, sign: bool, exp: u64, frac: u64) -> u64 {
    ((sign as u64) << (f.width() - 1))
        | ((exp & field_mask(f.exponent_bits)) << f.fraction_bits)
        | (frac & field_mask(f.fraction_bits))
}

fn bias(f: Format) -> u64 {
    (1 << (f.exponent_bits - 1)) - 1
}

fn max_exp(f: Format) -> u64 {
    field_mask(f.exponent_bits)
}

fn is_nan(f: Format, x: u64) -> bool {
    (x >> f.fraction_bits) & max_exp(f) == max_exp(f) && x & field_mask(f.fraction_bits) != 0
}

/// Positive special values: zeros, subnormal and normal extremes, infinity, NaNs with and
/// without payloads, small integers and halves, conversion boundaries (2^31, 2^32, 2^63,
/// 2^64 and their neighbours), overflow and underflow boundaries.
fn special_magnitudes(f: Format) -> Vec<u64> {
    let fb = f.fraction_bits;
    let (b, m) = (bias(f), max_exp(f));
    let frac_ones = field_mask(fb);
    let quiet = 1u64 << (fb - 1);
    let mut v = vec![
        0,
        1,
        2,
        3,
        frac_ones,
        frac_ones - 1,
        quiet,
        make(f, false, 1, 0),
        make(f, false, 1, 1),
        make(f, false, 2, 0),
        make(f, false, m - 1, frac_ones),
        make(f, false, m - 1, 0),
        make(f, false, m - 2, frac_ones),
        make(f, false, m, 0),
        make(f, false, m, quiet),
        make(f, false, m, quiet | 0x1234),
        make(f, false, m, 1),
        make(f, false, m, quiet >> 1 | 0xbeef),
        make(f, false, m, frac_ones),
    ];
    // 2^k for integer and rounding boundaries, with their neighbours below and above, and
    // the halves around them.
    for k in [
        -2i64, -1, 0, 1, 2, 7, 8, 15, 16, 23, 24, 31, 32, 52, 53, 62, 63, 64, 65,
    ] {
        let e = b as i64 + k;
        if e <= 0 || e >= m as i64 {
            continue;
        }
        let x = make(f, false, e as u64, 0);
        v.extend([x, x - 1, x + 1, make(f, false, e as u64, quiet)]);
        v.push(make(f, false, e as u64, quiet | 1));
        v.push(make(f, false, e as u64, quiet - 1));
    }
    // Values around the subnormal boundary of the other format and the halving thresholds.
    let b = b as i64;
    for e in [
        1,
        2,
        3,
        b - 126,
        b - 127,
        b - 149,
        b - 150,
        b - 151,
        b + 127,
        b + 128,
    ] {
        if e > 0 && e < m as i64 {
            let e = e as u64;
            v.extend([
                make(f, false, e, 0),
                make(f, false, e, 1),
                make(f, false, e, frac_ones),
            ]);
            v.push(make(f, false, e, quiet | (1 << (fb.saturating_sub(24)))));
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

fn specials(f: Format) -> Vec<u64> {
    let mut v = special_magnitudes(f);
    let neg: Vec<u64> = v.iter().map(|&x| x | 1 << (f.width() - 1)).collect();
    v.extend(neg);
    v
}

/// Random values: raw bit patterns, values near 1 and near the integers' ranges, tiny and
/// huge exponents.
fn random_values(f: Format, count: usize, rng: &mut SplitMix64) -> Vec<u64> {
    let (b, m) = (bias(f), max_exp(f));
    (0..count)
        .map(|i| {
            let sign = rng.next_bool();
            let frac = rng.next_u64();
            let frac = match rng.below(4) {
                0 => frac & !field_mask(rng.below(f.fraction_bits as u32) as usize),
                _ => frac,
            };
            let exp = match i % 6 {
                0 => return rng.next_u64() & field_mask(f.width()),
                1 => b - 4 + rng.below(9) as u64,
                2 => b + rng.below(66) as u64,
                3 => rng.below(4) as u64,
                4 => m - 1 - rng.below(3) as u64,
                _ => 1 + rng.below(m as u32 - 1) as u64,
            };
            make(f, sign, exp, frac)
        })
        .collect()
}

fn sample(f: Format, count: usize, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed);
    let mut v = specials(f);
    v.extend(random_values(f, count, &mut rng));
    v
}

/// The specials every binary operation sees in every combination: signed zeros,
/// infinities, NaNs (quiet and signalling, with payloads, both signs), one, the subnormal
/// and normal extremes.
fn core_specials(f: Format) -> Vec<u64> {
    let fb = f.fraction_bits;
    let (b, m) = (bias(f), max_exp(f));
    let quiet = 1u64 << (fb - 1);
    let frac_ones = field_mask(fb);
    let mut v = Vec::new();
    for sign in [false, true] {
        v.extend([
            make(f, sign, 0, 0),
            make(f, sign, 0, 1),
            make(f, sign, 0, frac_ones),
            make(f, sign, 1, 0),
            make(f, sign, b, 0),
            make(f, sign, b, 1),
            make(f, sign, m - 1, frac_ones),
            make(f, sign, m, 0),
        ]);
    }
    v.extend([
        make(f, false, m, quiet),
        make(f, true, m, quiet | 0x5a5),
        make(f, false, m, 0x3c3),
        make(f, true, m, quiet >> 1),
    ]);
    v
}

/// Pairs: every pair of the core specials, a subset of all pairs of the specials, each
/// special with random values, and random pairs whose exponents are close (cancellation,
/// alignment by a few bits) or far.
fn sample_pairs(f: Format, count: usize, seed: u64) -> Vec<(u64, u64)> {
    let mut rng = SplitMix64::new(seed);
    let sp = specials(f);
    let core = core_specials(f);
    let mut v: Vec<(u64, u64)> = core
        .iter()
        .flat_map(|&a| core.iter().map(move |&b| (a, b)))
        .collect();
    for (i, &a) in sp.iter().enumerate() {
        for (j, &b) in sp.iter().enumerate() {
            if (i * 7 + j * 3) % 5 == 0 {
                v.push((a, b));
            }
        }
    }
    let randoms = random_values(f, count, &mut rng);
    for (i, &a) in randoms.iter().enumerate() {
        let b = match i % 4 {
            0 => sp[rng.below(sp.len() as u32) as usize],
            1 => {
                // Close exponent: a few units apart, random fraction.
                let shift = rng.below(4) as u64;
                let x = (a & !field_mask(f.fraction_bits))
                    ^ (rng.next_u64() & field_mask(f.fraction_bits));
                let x = x.wrapping_sub(shift << f.fraction_bits) & field_mask(f.width());
                x ^ ((rng.next_bool() as u64) << (f.width() - 1))
            }
            2 => a ^ (1u64 << (f.width() - 1)) ^ (rng.below(4) as u64),
            _ => random_values(f, 1, &mut rng)[0],
        };
        if rng.next_bool() {
            v.push((a, b));
        } else {
            v.push((b, a));
        }
    }
    v
}

// ---- Checking ----

fn hex(f: Format, x: u64) -> String {
    format!("{x:0w$x}", w = f.width() / 4)
}

/// Builds `op` for one format and mode and compares every case with `reference`.
fn check_unary(
    what: &str,
    f: Format,
    out_width: u32,
    op: impl Fn(&mut NetBuilder, &[Lit]) -> Vec<Lit>,
    values: &[u64],
    reference: impl Fn(u64) -> u64,
) {
    let expected: Vec<u64> = values.iter().map(|&x| reference(x)).collect();
    check_unary_expected(what, f, out_width, op, values, &expected);
}

fn check_unary_expected(
    what: &str,
    f: Format,
    out_width: u32,
    op: impl Fn(&mut NetBuilder, &[Lit]) -> Vec<Lit>,
    values: &[u64],
    expected: &[u64],
) {
    for mode in MODES {
        let c = build(mode, &[f.width() as u32], |g, i| vec![op(g, &i[0])]);
        let cases: Vec<Vec<u128>> = values.iter().map(|&x| vec![x as u128]).collect();
        let got = eval_cases(&c, &cases);
        for ((&x, out), &want) in values.iter().zip(&got).zip(expected) {
            let want = want & field_mask(out_width as usize);
            assert_eq!(
                out[0] as u64,
                want,
                "{what} {f:?} {mode:?}: input {} gave {:x}, hardware {want:x}",
                hex(f, x),
                out[0]
            );
        }
    }
}

fn check_binary(
    what: &str,
    f: Format,
    out_width: u32,
    op: impl Fn(&mut NetBuilder, &[Lit], &[Lit]) -> Vec<Lit>,
    pairs: &[(u64, u64)],
    reference: impl Fn(u64, u64) -> u64,
) {
    for mode in MODES {
        let w = f.width() as u32;
        let c = build(mode, &[w, w], |g, i| vec![op(g, &i[0], &i[1])]);
        let cases: Vec<Vec<u128>> = pairs
            .iter()
            .map(|&(a, b)| vec![a as u128, b as u128])
            .collect();
        let got = eval_cases(&c, &cases);
        for (&(a, b), out) in pairs.iter().zip(&got) {
            let want = reference(a, b) & field_mask(out_width as usize);
            assert_eq!(
                out[0] as u64,
                want,
                "{what} {f:?} {mode:?}: inputs {} {} gave {:x}, hardware {want:x}",
                hex(f, a),
                hex(f, b),
                out[0]
            );
        }
    }
}

fn as_f64(f: Format, x: u64) -> f64 {
    if f == F32 {
        f32::from_bits(x as u32) as f64
    } else {
        f64::from_bits(x)
    }
}

// ---- Free operations and comparisons ----

#[test]
fn neg_and_abs_flip_or_clear_the_sign() {
    for f in FORMATS {
        let values = sample(f, 200, 1);
        let sign = 1u64 << (f.width() - 1);
        check_unary(
            "neg",
            f,
            f.width() as u32,
            |_, a| float::neg(f, a),
            &values,
            |x| x ^ sign,
        );
        check_unary(
            "abs",
            f,
            f.width() as u32,
            |_, a| float::abs(f, a),
            &values,
            |x| x & !sign,
        );
    }
}

#[test]
fn comparisons_match_ucomisd() {
    for f in FORMATS {
        let pairs = sample_pairs(f, 1500, 2);
        // Rust's float comparisons compile to ucomisd/ucomiss, as gcc's do.
        check_binary(
            "lt",
            f,
            1,
            |g, a, b| vec![float::lt(g, f, a, b)],
            &pairs,
            |a, b| (as_f64(f, a) < as_f64(f, b)) as u64,
        );
        check_binary(
            "le",
            f,
            1,
            |g, a, b| vec![float::le(g, f, a, b)],
            &pairs,
            |a, b| (as_f64(f, a) <= as_f64(f, b)) as u64,
        );
        check_binary(
            "eq",
            f,
            1,
            |g, a, b| vec![float::eq(g, f, a, b)],
            &pairs,
            |a, b| (as_f64(f, a) == as_f64(f, b)) as u64,
        );
        check_binary(
            "unordered",
            f,
            1,
            |g, a, b| vec![float::unordered(g, f, a, b)],
            &pairs,
            |a, b| (is_nan(f, a) || is_nan(f, b)) as u64,
        );
    }
}

// ---- Arithmetic ----

/// A binary hardware operation on bit patterns.
type Hw2 = fn(u64, u64) -> u64;

#[test]
fn add_and_sub_match_addsd_and_subsd() {
    for f in FORMATS {
        let pairs = sample_pairs(f, 3000, 10);
        let (add, sub): (Hw2, Hw2) = if f == F32 {
            (hw::addss, hw::subss)
        } else {
            (hw::addsd, hw::subsd)
        };
        let w = f.width() as u32;
        check_binary("add", f, w, |g, a, b| float::add(g, f, a, b), &pairs, add);
        check_binary("sub", f, w, |g, a, b| float::sub(g, f, a, b), &pairs, sub);
    }
}

#[test]
fn mul_matches_mulsd() {
    for f in FORMATS {
        let mut pairs = sample_pairs(f, 3000, 11);
        // Products near the overflow and underflow thresholds: exponents summing to about
        // the largest or smallest.
        let mut rng = SplitMix64::new(12);
        let (b, m) = (bias(f), max_exp(f));
        for _ in 0..1500 {
            let ea = rng.below(m as u32) as u64;
            let target = if rng.next_bool() {
                b + m - 1
            } else {
                b.saturating_sub(f.fraction_bits as u64 + 2)
            };
            let eb =
                (target as i64 - ea as i64 + rng.below(7) as i64 - 3).clamp(0, m as i64) as u64;
            let x = make(f, rng.next_bool(), ea, rng.next_u64());
            let y = make(f, rng.next_bool(), eb, rng.next_u64() >> rng.below(8));
            pairs.push((x, y));
        }
        let mul: Hw2 = if f == F32 { hw::mulss } else { hw::mulsd };
        let w = f.width() as u32;
        check_binary("mul", f, w, |g, a, b| float::mul(g, f, a, b), &pairs, mul);
    }
}

#[test]
fn div_matches_divsd() {
    for f in FORMATS {
        let mut pairs = sample_pairs(f, 3000, 13);
        // Quotients near the overflow and underflow thresholds, and exact quotients
        // (products divided by a factor).
        let mut rng = SplitMix64::new(14);
        let (b, m) = (bias(f), max_exp(f));
        let mul: Hw2 = if f == F32 { hw::mulss } else { hw::mulsd };
        for i in 0..1500 {
            let ea = rng.below(m as u32) as u64;
            let x = make(f, rng.next_bool(), ea, rng.next_u64());
            if i % 2 == 0 {
                let target = if rng.next_bool() {
                    b + m - 1
                } else {
                    b.saturating_sub(f.fraction_bits as u64 + 2)
                };
                let eb = (ea as i64 - target as i64 + b as i64 + rng.below(7) as i64 - 3)
                    .clamp(0, m as i64) as u64;
                pairs.push((
                    x,
                    make(f, rng.next_bool(), eb, rng.next_u64() >> rng.below(8)),
                ));
            } else {
                let small = make(
                    f,
                    false,
                    b + rng.below(8) as u64,
                    rng.next_u64() & !field_mask(f.fraction_bits - 4),
                );
                pairs.push((mul(x, small), small));
            }
        }
        // Exact quotients with subnormal results, ties included: k * 2^-1074 / 2^j.
        for k in 1..40u64 {
            for j in 0..4u64 {
                let sign = k % 3 == 0;
                pairs.push((make(f, sign, 0, k), make(f, false, b + j, 0)));
                pairs.push((make(f, sign, 1, k << 3), make(f, j % 2 == 1, b + j + 1, 0)));
            }
        }
        let div: Hw2 = if f == F32 { hw::divss } else { hw::divsd };
        let w = f.width() as u32;
        check_binary("div", f, w, |g, a, b| float::div(g, f, a, b), &pairs, div);
    }
}

#[test]
fn sqrt_matches_sqrtsd() {
    for f in FORMATS {
        let mut values = sample(f, 3000, 15);
        // Exact squares and their neighbours.
        let mul: Hw2 = if f == F32 { hw::mulss } else { hw::mulsd };
        let mut rng = SplitMix64::new(16);
        for _ in 0..500 {
            let x = make(
                f,
                false,
                rng.below(max_exp(f) as u32) as u64,
                rng.next_u64() & !field_mask(f.fraction_bits / 2 + 1),
            );
            let sq = mul(x, x);
            values.extend([sq, sq + 1, sq.wrapping_sub(1)]);
        }
        let sqrt: fn(u64) -> u64 = if f == F32 { hw::sqrtss } else { hw::sqrtsd };
        check_unary(
            "sqrt",
            f,
            f.width() as u32,
            |g, a| float::sqrt(g, f, a),
            &values,
            sqrt,
        );
    }
}

#[test]
fn floor_ceil_trunc_nearbyint_match_roundsd() {
    assert!(
        is_x86_feature_detected!("sse4.1"),
        "the oracle needs roundsd (SSE4.1)"
    );
    type Block = fn(&mut NetBuilder, Format, &[Lit]) -> Vec<Lit>;
    type Hw1 = fn(u64) -> u64;
    let ops: [(&str, Block, Hw1, Hw1); 4] = [
        ("floor", float::floor, hw::floorss, hw::floorsd),
        ("ceil", float::ceil, hw::ceilss, hw::ceilsd),
        ("trunc", float::trunc, hw::truncss, hw::truncsd),
        ("nearbyint", float::nearbyint, hw::nearbyss, hw::nearbysd),
    ];
    for f in FORMATS {
        let mut values = sample(f, 2000, 17);
        // Halves and near-halves at every binade where the point falls inside the word.
        let mut rng = SplitMix64::new(18);
        for e in bias(f) - 2..bias(f) + f.fraction_bits as u64 + 2 {
            let t = e as i64 - bias(f) as i64;
            let half_bit = f.fraction_bits as i64 - t - 1;
            for _ in 0..6 {
                let mut frac = rng.next_u64();
                if (0..f.fraction_bits as i64).contains(&half_bit) {
                    frac &= !field_mask(half_bit as usize + 1);
                    frac |= 1 << half_bit;
                    frac |= rng.below(2) as u64;
                }
                values.push(make(f, rng.next_bool(), e, frac));
            }
        }
        for (name, block, single, double) in ops {
            let oracle = if f == F32 { single } else { double };
            check_unary(
                name,
                f,
                f.width() as u32,
                |g, a| block(g, f, a),
                &values,
                oracle,
            );
            // Rust's f64::floor etc. agree on everything but NaN payloads.
            for &x in &values {
                if !is_nan(f, x) && f == F64 {
                    let y = f64::from_bits(x);
                    let r = match name {
                        "floor" => y.floor(),
                        "ceil" => y.ceil(),
                        "trunc" => y.trunc(),
                        _ => y.round_ties_even(),
                    };
                    assert_eq!(r.to_bits(), oracle(x), "{name}({y:e})");
                }
            }
        }
    }
}

// ---- Conversions ----

#[test]
fn convert_matches_cvtss2sd_and_cvtsd2ss() {
    let singles = sample(F32, 3000, 3);
    check_unary(
        "float->double",
        F32,
        64,
        |g, a| float::convert(g, F32, F64, a),
        &singles,
        hw::cvtss2sd,
    );
    let mut doubles = sample(F64, 3000, 4);
    // Doubles near float's range and precision: every float widened, and its neighbours
    // (halfway cases and overflow/underflow boundaries of the narrowing).
    for &s in &singles {
        let d = hw::cvtss2sd(s);
        doubles.extend([
            d,
            d.wrapping_add(1),
            d.wrapping_sub(1),
            d + (1 << 28),
            d.wrapping_sub(1 << 28),
        ]);
    }
    check_unary(
        "double->float",
        F64,
        32,
        |g, a| float::convert(g, F64, F32, a),
        &doubles,
        hw::cvtsd2ss,
    );
    let same = float::convert(
        &mut NetBuilder::new(Default::default()),
        F64,
        F64,
        &[Lit::TRUE; 64],
    );
    assert_eq!(same, vec![Lit::TRUE; 64]);
}

/// Random integers of `n` bits: uniform, small magnitudes, and around powers of two (the
/// rounding boundaries).
fn int_sample(n: usize, count: usize, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed);
    let mask = field_mask(n);
    let mut v: Vec<u64> = vec![0, 1, mask, mask >> 1, (mask >> 1) + 1, mask - 1];
    for _ in 0..count {
        let x = match rng.below(4) {
            0 => rng.next_u64(),
            1 => rng.next_u64() >> rng.below(64),
            2 => {
                let k = rng.below(n as u32);
                (1u64 << k)
                    .wrapping_add(rng.below(5) as u64)
                    .wrapping_sub(2)
            }
            _ => {
                // Halfway cases above 2^53 / 2^24: ...x100..0 patterns.
                let k = rng.below(n as u32);
                (rng.next_u64() << k) | (1u64 << k.saturating_sub(1))
            }
        };
        v.push(x & mask);
    }
    v
}

fn sext64(x: u64, n: usize) -> i64 {
    ((x << (64 - n)) as i64) >> (64 - n)
}

/// The hardware's conversion of an `n`-bit integer; unsigned 64-bit through gcc's halving
/// sequence.
fn int_to_float(f: Format, x: u64, n: usize, signed: bool) -> u64 {
    let cvt = |v: i64| {
        if f == F32 {
            hw::cvtsi2ss(v)
        } else {
            hw::cvtsi2sd(v)
        }
    };
    if signed {
        cvt(sext64(x, n))
    } else if x >> 63 == 0 {
        cvt(x as i64)
    } else {
        let half = cvt(((x >> 1) | (x & 1)) as i64);
        if f == F32 {
            hw::addss(half, half)
        } else {
            hw::addsd(half, half)
        }
    }
}

#[test]
fn from_int_matches_cvtsi2sd() {
    for f in FORMATS {
        for n in [
            1usize, 2, 3, 5, 8, 11, 16, 24, 25, 31, 32, 33, 53, 54, 63, 64,
        ] {
            for signed in [false, true] {
                let values = int_sample(n, 300, n as u64);
                for mode in MODES {
                    let c = build(mode, &[n as u32], |g, i| {
                        vec![float::from_int(g, f, &i[0], signed)]
                    });
                    let cases: Vec<Vec<u128>> = values.iter().map(|&x| vec![x as u128]).collect();
                    for (&x, out) in values.iter().zip(eval_cases(&c, &cases)) {
                        let want = int_to_float(f, x, n, signed);
                        assert_eq!(
                            out[0] as u64, want,
                            "from_int {f:?} {mode:?} {n} bits signed={signed}: {x:#x}"
                        );
                    }
                }
            }
        }
    }
}

// ---- gcc as the oracle for C's conversions ----

/// C integer types in the order the oracle program prints them: (name, bits, signed).
const C_INTS: [(&str, usize, bool); 8] = [
    ("signed char", 8, true),
    ("unsigned char", 8, false),
    ("short", 16, true),
    ("unsigned short", 16, false),
    ("int", 32, true),
    ("unsigned", 32, false),
    ("long", 64, true),
    ("unsigned long", 64, false),
];

/// Compiles and runs a C program with gcc -O2: for each input bit pattern `x` it prints
/// the casts of `x` as a double and (low 32 bits) as a float to every C integer type, then
/// the low bits of `x` as each integer type converted to double and to float.
fn gcc_conversions(inputs: &[u64]) -> Vec<Vec<u64>> {
    let dir = std::env::temp_dir().join(format!("pgc-float-oracle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let src = dir.join("conv.c");
    let exe = dir.join("conv");
    let mut c = String::from(
        "#include <stdio.h>\n#include <string.h>\n#include <stdint.h>\n\
         #define P(v) printf(\" %llx\", (unsigned long long)(v))\n",
    );
    for (name, _, _) in C_INTS {
        let id = name.replace(' ', "_");
        c += &format!(
            "__attribute__((noinline)) {name} d_{id}(double x) {{ return ({name})x; }}\n\
             __attribute__((noinline)) {name} f_{id}(float x) {{ return ({name})x; }}\n\
             __attribute__((noinline)) double i_{id}_d({name} x) {{ return (double)x; }}\n\
             __attribute__((noinline)) float i_{id}_f({name} x) {{ return (float)x; }}\n"
        );
    }
    c += "int main(void) {\n unsigned long long bits;\n while (scanf(\"%llx\", &bits) == 1) {\n\
          double d; memcpy(&d, &bits, 8);\n uint32_t b32 = (uint32_t)bits; float f;\n\
          memcpy(&f, &b32, 4);\n double rd; float rf; uint64_t o64; uint32_t o32;\n";
    for (name, bits, _) in C_INTS {
        let id = name.replace(' ', "_");
        let mask = field_mask(bits);
        c += &format!(" P((uint64_t)d_{id}(d) & {mask}ULL); P((uint64_t)f_{id}(f) & {mask}ULL);\n");
        c += &format!(
            " rd = i_{id}_d(({name})bits); memcpy(&o64, &rd, 8); P(o64);\n\
             rf = i_{id}_f(({name})bits); memcpy(&o32, &rf, 4); P(o32);\n"
        );
    }
    c += " printf(\"\\n\");\n }\n return 0;\n}\n";
    std::fs::write(&src, c).expect("write C source");
    let status = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("gcc is needed for the conversion oracle");
    assert!(status.success(), "gcc failed");
    let mut child = Command::new(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run oracle");
    let text: String = inputs.iter().map(|x| format!("{x:x}\n")).collect();
    // Written from another thread: the program's output would fill its pipe otherwise.
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = child.wait_with_output().expect("oracle output");
    writer.join().unwrap().expect("oracle input");
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            l.split_whitespace()
                .map(|w| u64::from_str_radix(w, 16).unwrap())
                .collect()
        })
        .collect()
}

#[test]
fn to_int_and_from_int_match_gcc() {
    let mut inputs = sample(F64, 1500, 5);
    // Floats in the low 32 bits, widened doubles of them, and integers of every width.
    let singles = sample(F32, 1500, 6);
    inputs.extend(singles.iter().copied());
    inputs.extend(singles.iter().map(|&s| hw::cvtss2sd(s)));
    inputs.extend(int_sample(64, 500, 7));
    let outputs = gcc_conversions(&inputs);
    assert_eq!(
        outputs.len(),
        inputs.len(),
        "oracle printed a line per input"
    );
    for (t, &(name, bits, signed)) in C_INTS.iter().enumerate() {
        for (fi, f) in [F64, F32].into_iter().enumerate() {
            let values: Vec<u64> = inputs.iter().map(|&x| x & field_mask(f.width())).collect();
            let column = 4 * t + fi;
            let expected: Vec<u64> = outputs.iter().map(|line| line[column]).collect();
            check_unary_expected(
                &format!("({name}) from"),
                f,
                bits as u32,
                |g, a| float::to_int(g, f, a, bits, signed),
                &values,
                &expected,
            );
            // (double)/(float) of the integer type.
            for mode in MODES {
                let c = build(mode, &[bits as u32], |g, i| {
                    vec![float::from_int(g, f, &i[0], signed)]
                });
                let cases: Vec<Vec<u128>> = inputs
                    .iter()
                    .map(|&x| vec![(x & field_mask(bits)) as u128])
                    .collect();
                for ((&x, out), line) in inputs.iter().zip(eval_cases(&c, &cases)).zip(&outputs) {
                    assert_eq!(
                        out[0] as u64,
                        line[4 * t + 2 + fi],
                        "({f:?})({name}) {mode:?}: {:#x}",
                        x & field_mask(bits)
                    );
                }
            }
        }
    }
}

// ---- Circuit sizes ----

/// Size-mode AND counts of the binary64 blocks that have a Bristol Fashion counterpart
/// (`shared/circuits/bristol_fashion/FP-*.txt`, counted here): ours are below Bristol's and
/// do not grow past today's counts.
#[test]
fn binary64_and_counts_stay_below_the_bristol_circuits() {
    use pgc_circuit::bristol::{Format as FileFormat, read_circuit_file};
    use pgc_circuit::testdata::shared_circuits_dir;
    type Block = fn(&mut NetBuilder, &[Vec<Lit>]) -> Vec<Lit>;
    let cases: [(&str, u32, Block, u64); 8] = [
        ("add", 2, |g, i| float::add(g, F64, &i[0], &i[1]), 1479),
        ("mul", 2, |g, i| float::mul(g, F64, &i[0], &i[1]), 5349),
        ("lt", 2, |g, i| vec![float::lt(g, F64, &i[0], &i[1])], 214),
        ("eq", 2, |g, i| vec![float::eq(g, F64, &i[0], &i[1])], 138),
        ("floor", 1, |g, i| float::floor(g, F64, &i[0]), 381),
        ("ceil", 1, |g, i| float::ceil(g, F64, &i[0]), 381),
        (
            "f2i",
            1,
            |g, i| {
                let r = float::nearbyint(g, F64, &i[0]);
                float::to_int(g, F64, &r, 64, true)
            },
            825,
        ),
        ("i2f", 1, |g, i| float::from_int(g, F64, &i[0], true), 590),
    ];
    let dir = shared_circuits_dir().join("bristol_fashion");
    for (name, operands, block, recorded) in cases {
        let file = dir.join(format!("FP-{name}.txt"));
        let bristol = read_circuit_file(&file, Some(FileFormat::BristolFashion))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let (bristol_ands, _) = cost(&bristol);
        let c = build(
            pgc_circuit::netlist::OptimizeFor::Size,
            &vec![64; operands as usize],
            |g, i| vec![block(g, i)],
        );
        let (ands, _) = cost(&c);
        assert!(
            ands <= recorded,
            "{name}: {ands} ANDs, more than the {recorded} recorded"
        );
        assert!(
            ands < bristol_ands,
            "{name}: {ands} ANDs, Bristol's FP-{name} {bristol_ands}"
        );
    }
}

// ---- A larger sweep ----

/// Every operation on many more seeded random cases (about a million per operation and
/// format; half a minute in release builds):
/// `cargo test --release -p pgc-circuit --test blocks_float -- --ignored`.
#[test]
#[ignore = "slow sweep; the sampled tests above run by default"]
fn sweep_every_operation() {
    type Hw1 = fn(u64) -> u64;
    type Block2 = fn(&mut NetBuilder, Format, &[Lit], &[Lit]) -> Vec<Lit>;
    type Block1 = fn(&mut NetBuilder, Format, &[Lit]) -> Vec<Lit>;
    for f in FORMATS {
        let single = f == F32;
        let binary: [(&str, Block2, Hw2); 4] = [
            (
                "add",
                float::add,
                if single { hw::addss } else { hw::addsd },
            ),
            (
                "sub",
                float::sub,
                if single { hw::subss } else { hw::subsd },
            ),
            (
                "mul",
                float::mul,
                if single { hw::mulss } else { hw::mulsd },
            ),
            (
                "div",
                float::div,
                if single { hw::divss } else { hw::divsd },
            ),
        ];
        for (k, (name, block, oracle)) in binary.into_iter().enumerate() {
            let pairs = sample_pairs(f, 1_000_000, 100 + k as u64);
            let w = f.width() as u32;
            check_binary(name, f, w, |g, a, b| block(g, f, a, b), &pairs, oracle);
        }
        let unary: [(&str, Block1, Hw1); 5] = [
            (
                "sqrt",
                float::sqrt,
                if single { hw::sqrtss } else { hw::sqrtsd },
            ),
            (
                "floor",
                float::floor,
                if single { hw::floorss } else { hw::floorsd },
            ),
            (
                "ceil",
                float::ceil,
                if single { hw::ceilss } else { hw::ceilsd },
            ),
            (
                "trunc",
                float::trunc,
                if single { hw::truncss } else { hw::truncsd },
            ),
            (
                "nearbyint",
                float::nearbyint,
                if single { hw::nearbyss } else { hw::nearbysd },
            ),
        ];
        for (k, (name, block, oracle)) in unary.into_iter().enumerate() {
            let values = sample(f, 1_000_000, 200 + k as u64);
            check_unary(
                name,
                f,
                f.width() as u32,
                |g, a| block(g, f, a),
                &values,
                oracle,
            );
        }
        let values = sample(f, 1_000_000, 300);
        let (to, widen): (Format, Hw1) = if single {
            (F64, hw::cvtss2sd)
        } else {
            (F32, hw::cvtsd2ss)
        };
        let w = to.width() as u32;
        check_unary(
            "convert",
            f,
            w,
            |g, a| float::convert(g, f, to, a),
            &values,
            widen,
        );
    }
}
