//! IEEE-754 binary floating point (binary32 `float`, binary64 `double`) over any [`Gates`],
//! bit-exact with what gcc's x86-64 code computes with SSE2 at the default MXCSR: round to
//! nearest, ties to even; subnormal inputs and results (no flush-to-zero,
//! no denormals-are-zero); signed zeros; infinities.
//!
//! Words are LSB first, `f.width()` bits: fraction, then exponent, then the sign on top.
//! Follows IEEE 754-2019 sections 5.3.1 (roundToIntegral: [`floor`], [`ceil`], [`trunc`],
//! [`nearbyint`]), 5.4 (arithmetic, [`sqrt`], conversions), 5.11 (comparisons) and 6.2
//! (NaNs); the NaN rules and the out-of-range integer results are those of the Intel SDM
//! (vol. 1, 4.8.3.5 and table 4-7; vol. 2, CVTTSD2SI/CVTTSS2SI), as gcc -O2 uses them:
//! - a NaN result of `a op b` is `a` quieted (quiet bit set, sign and payload kept) if `a` is
//!   a NaN, else `b` quieted (for `a - b` too: the sign of a NaN `b` is not flipped); an
//!   invalid operation (`inf - inf`, `0 * inf`, `0 / 0`, `inf / inf`, `sqrt` of a number
//!   below zero) gives the default NaN: sign 1, quiet bit 1, zero payload. `sqrt(-0) = -0`;
//! - [`convert`] quiets NaNs and keeps sign and the top payload bits, as
//!   `cvtss2sd`/`cvtsd2ss`; [`floor`], [`ceil`], [`trunc`], [`nearbyint`] return a NaN
//!   quieted (as `roundsd` and glibc's `floor` etc. do) and keep the sign of zero results
//!   (`ceil(-0.5) == -0`, `nearbyint(-0.5) == -0`);
//! - [`to_int`] truncates toward zero as C casts do. Out of range and NaN, gcc's code gives:
//!   `(long)x`: `cvttsd2si` with a 64-bit destination, the "integer indefinite"
//!   `0x8000000000000000`; `(int)x`, `(short)x`, `(signed char)x`, `(unsigned short)x`,
//!   `(unsigned char)x`: the 32-bit `cvttsd2si` (`0x80000000` when out of 32-bit range), then
//!   the low bits; `(unsigned)x`: the 64-bit `cvttsd2si`, then the low 32 bits (so
//!   `(unsigned)-1.0 == 0xffffffff` and NaN gives 0); `(unsigned long)x`: gcc's two-way
//!   sequence `x < 0x1p63 ? cvttsd2si(x) : cvttsd2si(x - 0x1p63) ^ (1 << 63)`, so NaN and
//!   `x <= -0x1p63` give `0x8000000000000000`, `x >= 0x1p64` gives 0, and negative `x` above
//!   `-0x1p63` give the two's complement of the truncation. (Checked against gcc 12 -O2 code;
//!   [`from_int`] of an unsigned 64-bit value rounds once, like gcc's halving sequence.)
//!
//! Circuits are built for few ANDs (XOR and NOT are free):
//! - every rounded result passes through one rounding step that packs exponent and fraction
//!   into one word and increments it, so the carry of rounding up moves into the exponent
//!   (and reaches infinity) without extra logic; subnormal results come from one right
//!   shift by `1 - e` that collects a sticky bit;
//! - [`add`]/[`sub`] order the operands by magnitude (a NaN `a` first), align the smaller
//!   with one right shifter keeping guard, round and sticky bits, add once, and normalize
//!   with one left shifter whose count is capped by the exponent, so subnormal results
//!   need no second shifter;
//! - [`mul`] normalizes only the operand with the smaller exponent (the other is normal,
//!   or the product is far below the smallest subnormal and only its sticky bit matters),
//!   forms the full 2p-bit product (Karatsuba in size mode, a Dadda tree in depth mode),
//!   and keeps the low half only as a sticky bit;
//! - [`div`] is non-restoring division in size mode (one p-bit add or subtract per quotient
//!   bit, the quotient bits being the signs of the partial remainders) and radix-2 SRT
//!   division with a carry-save residual in depth mode (constant depth per digit);
//!   [`sqrt`] is non-restoring square root, two radicand bits per step (Li and Chu, ICCD
//!   1996); both take the final remainder as the sticky bit;
//! - [`floor`]/[`ceil`]/[`trunc`]/[`nearbyint`] clear the fraction bits below the binary
//!   point after adding, below the point, a thermometer mask that carries into the integer
//!   part exactly when rounding away from zero;
//! - comparisons compare sign-adjusted keys with one comparator.
//!
//! With [`OptimizeFor::Depth`] the adders, comparators,
//! multipliers and zero tests inside are the low-depth variants of [`crate::blocks`].
//! Counts next to the Bristol Fashion FP circuits: `cargo run -p pgc-circuit --release
//! --example float_costs`.

use crate::blocks;
use crate::netlist::{Gates, Lit, OptimizeFor};

/// An IEEE-754 binary interchange format: `exponent_bits` and `fraction_bits` (the stored
/// significand bits, without the implicit leading one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Format {
    pub exponent_bits: usize,
    pub fraction_bits: usize,
}

impl Format {
    /// C's `float`.
    pub const BINARY32: Format = Format {
        exponent_bits: 8,
        fraction_bits: 23,
    };
    /// C's `double`.
    pub const BINARY64: Format = Format {
        exponent_bits: 11,
        fraction_bits: 52,
    };

    /// Bits of a value: sign, exponent and fraction.
    pub fn width(self) -> usize {
        1 + self.exponent_bits + self.fraction_bits
    }

    /// The exponent bias, `2^(exponent_bits - 1) - 1`.
    fn bias(self) -> u64 {
        (1u64 << (self.exponent_bits - 1)) - 1
    }

    /// The all-ones exponent field (infinities and NaNs).
    fn max_field(self) -> u64 {
        (1u64 << self.exponent_bits) - 1
    }

    /// Significand bits including the implicit one.
    fn precision(self) -> usize {
        self.fraction_bits + 1
    }

    /// The blocks are written for any width but checked against the hardware only for
    /// binary32 and binary64, so only those are accepted.
    fn check_format(self, op: &str) {
        assert!(
            self == Format::BINARY32 || self == Format::BINARY64,
            "float::{op}: unsupported format {self:?} (binary32 or binary64)"
        );
    }

    fn check(self, op: &str, a: &[Lit]) {
        self.check_format(op);
        assert_eq!(
            a.len(),
            self.width(),
            "float::{op}: a {}-bit operand for a {}-bit format",
            a.len(),
            self.width()
        );
    }
}

// ---- Fields and classification ----

/// A value taken apart: fraction (LSB first), exponent field, sign.
#[derive(Clone)]
struct Parts {
    frac: Vec<Lit>,
    exp: Vec<Lit>,
    sign: Lit,
}

fn parts(f: Format, a: &[Lit]) -> Parts {
    let fb = f.fraction_bits;
    Parts {
        frac: a[..fb].to_vec(),
        exp: a[fb..fb + f.exponent_bits].to_vec(),
        sign: a[fb + f.exponent_bits],
    }
}

fn pack(frac: &[Lit], exp: &[Lit], sign: Lit) -> Vec<Lit> {
    let mut v = Vec::with_capacity(frac.len() + exp.len() + 1);
    v.extend_from_slice(frac);
    v.extend_from_slice(exp);
    v.push(sign);
    v
}

/// Which class a value is in, from three shared zero/one tests.
#[derive(Clone, Copy)]
struct Class {
    exp_ones: Lit,
    exp_zero: Lit,
    frac_zero: Lit,
}

impl Class {
    fn of<G: Gates + ?Sized>(g: &mut G, p: &Parts) -> Class {
        Class {
            exp_ones: blocks::and_reduce(g, &p.exp),
            exp_zero: !blocks::or_reduce(g, &p.exp),
            frac_zero: !blocks::or_reduce(g, &p.frac),
        }
    }
    fn nan<G: Gates + ?Sized>(self, g: &mut G) -> Lit {
        g.and(self.exp_ones, !self.frac_zero)
    }
    fn zero<G: Gates + ?Sized>(self, g: &mut G) -> Lit {
        g.and(self.exp_zero, self.frac_zero)
    }
}

// ---- Sign operations (free) ----

/// `-a`: flips the sign, NaNs included (C's unary minus, `xorpd`). No gates.
pub fn neg(f: Format, a: &[Lit]) -> Vec<Lit> {
    f.check("neg", a);
    let mut v = a.to_vec();
    let s = f.width() - 1;
    v[s] = !v[s];
    v
}

/// `fabs(a)`: clears the sign, NaNs included (`andpd`). No gates.
pub fn abs(f: Format, a: &[Lit]) -> Vec<Lit> {
    f.check("abs", a);
    let mut v = a.to_vec();
    let s = f.width() - 1;
    v[s] = Lit::FALSE;
    v
}

// ---- Comparisons ----

/// Maps a value onto an unsigned key whose order is the numeric order (NaNs aside), with
/// `-0` one below `+0`: negative values get their magnitude complemented, positive ones
/// the top bit set. Free.
fn order_key<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit]) -> Vec<Lit> {
    let s = a[f.width() - 1];
    let mut key: Vec<Lit> = a[..f.width() - 1].iter().map(|&x| g.xor(x, s)).collect();
    key.push(!s);
    key
}

/// Whether `a` or `b` is a NaN (`isunordered`).
pub fn unordered<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit], b: &[Lit]) -> Lit {
    f.check("unordered", a);
    f.check("unordered", b);
    let ca = Class::of(g, &parts(f, a));
    let cb = Class::of(g, &parts(f, b));
    let na = ca.nan(g);
    let nb = cb.nan(g);
    g.or(na, nb)
}

/// (unordered, both zero) for the ordered comparisons.
fn order_facts<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit], b: &[Lit]) -> (Lit, Lit) {
    let ca = Class::of(g, &parts(f, a));
    let cb = Class::of(g, &parts(f, b));
    let (na, nb) = (ca.nan(g), cb.nan(g));
    let unordered = g.or(na, nb);
    let (za, zb) = (ca.zero(g), cb.zero(g));
    (unordered, g.and(za, zb))
}

/// C's `a < b`: false if either is a NaN; `-0 < +0` is false.
pub fn lt<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit], b: &[Lit]) -> Lit {
    f.check("lt", a);
    f.check("lt", b);
    let (unordered, both_zero) = order_facts(g, f, a, b);
    let (ka, kb) = (order_key(g, f, a), order_key(g, f, b));
    let less = blocks::lt_unsigned(g, &ka, &kb);
    let excluded = g.or(unordered, both_zero);
    g.and(less, !excluded)
}

/// C's `a <= b`: false if either is a NaN; `-0 <= +0` and `+0 <= -0` are true.
pub fn le<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit], b: &[Lit]) -> Lit {
    f.check("le", a);
    f.check("le", b);
    let (unordered, both_zero) = order_facts(g, f, a, b);
    let (ka, kb) = (order_key(g, f, a), order_key(g, f, b));
    let less_eq = blocks::le_unsigned(g, &ka, &kb);
    let ordered_le = g.or(less_eq, both_zero);
    g.and(ordered_le, !unordered)
}

/// C's `a == b`: `+0 == -0`, a NaN equals nothing (itself included).
pub fn eq<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit], b: &[Lit]) -> Lit {
    f.check("eq", a);
    f.check("eq", b);
    let n = f.width() - 1;
    // Equal magnitudes make `a` and `b` the same class, so only `a` is classified.
    let magnitudes_equal = blocks::eq(g, &a[..n], &b[..n]);
    let ca = Class::of(g, &parts(f, a));
    let a_zero = ca.zero(g);
    let a_nan = ca.nan(g);
    let signs_equal = !g.xor(a[n], b[n]);
    let sign_ok = g.or(signs_equal, a_zero);
    // The shallow terms first: sign_ok is the deepest.
    let t = g.and(magnitudes_equal, !a_nan);
    g.and(t, sign_ok)
}

// ---- Shifting and normalization ----

/// Bits needed to count up to `n`: the smallest `s` with `2^s > n`.
fn bits_for(n: usize) -> usize {
    (usize::BITS - n.leading_zeros()) as usize
}

/// Shifts `x` left until its top bit is 1 (or by `2^s - 1 >= len - 1` if `x` is zero):
/// returns the shifted word and the shift (leading-zero count), LSB first. One stage per
/// power of two, largest first: test the top `2^i` bits for zero, shift if so.
fn normalize<G: Gates + ?Sized>(g: &mut G, x: &[Lit]) -> (Vec<Lit>, Vec<Lit>) {
    let n = x.len();
    let stages = bits_for(n.saturating_sub(1));
    let mut word = x.to_vec();
    let mut count = vec![Lit::FALSE; stages];
    for s in (0..stages).rev() {
        let k = 1usize << s;
        let top_zero = !blocks::or_reduce(g, &word[n.saturating_sub(k)..]);
        count[s] = top_zero;
        word = shift_up_if(g, top_zero, &word, k);
    }
    (word, count)
}

/// One stage of a normalization shifter: `word << k` where `take`, else `word`.
fn shift_up_if<G: Gates + ?Sized>(g: &mut G, take: Lit, word: &[Lit], k: usize) -> Vec<Lit> {
    (0..word.len())
        .map(|i| {
            let moved = if i >= k { word[i - k] } else { Lit::FALSE };
            g.mux(take, moved, word[i])
        })
        .collect()
}

/// `x >> amount` (logical, amount LSB first, no reduction modulo the width): shifted-out
/// bits are ORed into `sticky`. Returns (shifted, sticky).
fn shift_right_sticky<G: Gates + ?Sized>(
    g: &mut G,
    x: &[Lit],
    amount: &[Lit],
    sticky: Lit,
) -> (Vec<Lit>, Lit) {
    let n = x.len();
    let mut word = x.to_vec();
    let mut sticky = sticky;
    for (s, &sel) in amount.iter().enumerate() {
        let k = 1usize.checked_shl(s as u32).unwrap_or(usize::MAX);
        let lost = blocks::or_reduce(g, &word[..k.min(n)]);
        let lost = g.and(sel, lost);
        sticky = g.or(sticky, lost);
        word = (0..n)
            .map(|i| {
                let moved = if k < n && i + k < n {
                    word[i + k]
                } else {
                    Lit::FALSE
                };
                g.mux(sel, moved, word[i])
            })
            .collect();
    }
    (word, sticky)
}

/// `x >> amount` (logical, no modulo), dropping shifted-out bits.
fn shift_right<G: Gates + ?Sized>(g: &mut G, x: &[Lit], amount: &[Lit]) -> Vec<Lit> {
    let n = x.len();
    let mut word = x.to_vec();
    for (s, &sel) in amount.iter().enumerate() {
        let k = 1usize.checked_shl(s as u32).unwrap_or(usize::MAX);
        word = (0..n)
            .map(|i| {
                let moved = if k < n && i + k < n {
                    word[i + k]
                } else {
                    Lit::FALSE
                };
                g.mux(sel, moved, word[i])
            })
            .collect();
    }
    word
}

/// `x + 1` if `up` (carry out dropped): one AND per bit (a prefix tree in depth mode).
fn increment<G: Gates + ?Sized>(g: &mut G, x: &[Lit], up: Lit) -> Vec<Lit> {
    let zero = vec![Lit::FALSE; x.len()];
    blocks::add_with_carry(g, x, &zero, up).0
}

/// Signed `a - b` over `width` bits (both sign- or zero-extended by the caller).
fn sub_words<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    blocks::sub(g, a, b)
}

// ---- Rounding ----

/// Rounds to nearest even and packs. The exact value is
/// `(-1)^sign * 2^(e - bias) * sig / 2^(k-1) (+ a tail < one unit of sig's last bit, nonzero
/// iff sticky)`, with `e` a two's-complement biased exponent and `sig` (`k >= p + 1` bits)
/// having its top bit set unless the value is zero. `may_underflow`: `e` can be `<= 0`
/// (the result is then subnormal or zero: `sig` is shifted right by `1 - e` first);
/// `may_overflow`: `e` can be `>= 2^exponent_bits - 1` (the result is then infinite).
#[allow(clippy::too_many_arguments)]
fn round_pack<G: Gates + ?Sized>(
    g: &mut G,
    f: Format,
    sign: Lit,
    e: &[Lit],
    sig: &[Lit],
    sticky: Lit,
    may_underflow: bool,
    may_overflow: bool,
) -> Vec<Lit> {
    let (eb, fb, p) = (f.exponent_bits, f.fraction_bits, f.precision());
    let k = sig.len();
    let we = e.len();
    assert!(
        k > p && we > eb,
        "float::round_pack: {k}-bit significand, {we}-bit exponent"
    );
    let mut sig = sig.to_vec();
    let mut sticky = sticky;
    if may_underflow {
        // Shift right by u = 1 - e when positive, clamped to all ones (past the word).
        let u = sub_words(g, &blocks::constant_word(1, we), e);
        let u_negative = u[we - 1];
        let stages = bits_for(k).min(we - 1);
        let beyond = blocks::or_reduce(g, &u[stages..we - 1]);
        let amount: Vec<Lit> = u[..stages]
            .iter()
            .map(|&bit| {
                let clamped = g.or(bit, beyond);
                g.and(clamped, !u_negative)
            })
            .collect();
        (sig, sticky) = shift_right_sticky(g, &sig, &amount, sticky);
    }
    let round_at = k - 1 - p;
    let round = sig[round_at];
    let tail = blocks::or_reduce(g, &sig[..round_at]);
    let sticky = g.or(sticky, tail);
    let lsb = sig[round_at + 1];
    let odd_or_above = g.or(sticky, lsb);
    let up = g.and(round, odd_or_above);
    // The exponent field is e for a normal value and 0 when the implicit bit is clear
    // (subnormal or zero; then e <= 1 or the value is zero).
    let implicit = sig[k - 1];
    let field: Vec<Lit> = e[..eb].iter().map(|&x| g.and(x, implicit)).collect();
    let mut word: Vec<Lit> = sig[round_at + 1..k - 1].to_vec();
    word.extend_from_slice(&field);
    let word = increment(g, &word, up);
    let (mut frac, mut exp) = (word[..fb].to_vec(), word[fb..].to_vec());
    if may_overflow {
        // e >= 2^eb - 1 and not negative.
        let high = blocks::or_reduce(g, &e[eb..we - 1]);
        let ones = blocks::and_reduce(g, &e[..eb]);
        let big = g.or(high, ones);
        let overflow = g.and(big, !e[we - 1]);
        frac = frac.iter().map(|&x| g.and(x, !overflow)).collect();
        exp = exp.iter().map(|&x| g.or(x, overflow)).collect();
    }
    pack(&frac, &exp, sign)
}

// ---- Addition ----

/// Shifts `x` left by `min(leading zeros, cap)` (`cap` unsigned, LSB first): one stage per
/// power of two, largest first, shifting when the top bits are zero and the shift so far
/// stays within `cap`. Returns the shifted word and the shift.
fn normalize_capped<G: Gates + ?Sized>(g: &mut G, x: &[Lit], cap: &[Lit]) -> (Vec<Lit>, Vec<Lit>) {
    let n = x.len();
    let stages = bits_for(n.saturating_sub(1));
    let mut word = x.to_vec();
    let mut count = vec![Lit::FALSE; stages];
    // Whether the shift chosen so far is below cap's bits above the current stage.
    let mut below_cap = blocks::or_reduce(g, cap.get(stages..).unwrap_or(&[]));
    for s in (0..stages).rev() {
        let k = 1usize << s;
        let cap_bit = cap.get(s).copied().unwrap_or(Lit::FALSE);
        let top_zero = !blocks::or_reduce(g, &word[n.saturating_sub(k)..]);
        let allowed = g.or(below_cap, cap_bit);
        let take = g.and(top_zero, allowed);
        let skipped = g.and(cap_bit, !take);
        below_cap = g.or(below_cap, skipped);
        count[s] = take;
        word = shift_up_if(g, take, &word, k);
    }
    (word, count)
}

/// `a + b` (`negate_b`: `a - b`), rounded to nearest even. See the module documentation.
fn add_or_sub<G: Gates + ?Sized>(
    g: &mut G,
    f: Format,
    a: &[Lit],
    b: &[Lit],
    negate_b: bool,
) -> Vec<Lit> {
    let (eb, fb, p) = (f.exponent_bits, f.fraction_bits, f.precision());
    let n = f.width() - 1;
    let (pa, pb) = (parts(f, a), parts(f, b));
    let (ca, cb) = (Class::of(g, &pa), Class::of(g, &pb));
    let (a_nan, b_nan) = (ca.nan(g), cb.nan(g));
    let sa = pa.sign;
    let sb = if negate_b { !pb.sign } else { pb.sign };
    let subtracting = g.xor(sa, sb);
    // x is the operand of larger magnitude, and a when a is a NaN: if a NaN is involved, x
    // is the one to return.
    let a_smaller = blocks::lt_unsigned(g, &a[..n], &b[..n]);
    let swap = g.and(a_smaller, !a_nan);
    let (x, y): (Vec<Lit>, Vec<Lit>) = (0..n)
        .map(|i| {
            let d = g.xor(a[i], b[i]);
            let d = g.and(d, swap);
            (g.xor(a[i], d), g.xor(b[i], d))
        })
        .unzip();
    let sign_differs = g.and(subtracting, swap);
    let sx = g.xor(sa, sign_differs);
    let pick = |g: &mut G, from_b: Lit, from_a: Lit| g.mux(swap, from_b, from_a);
    let x_exp_zero = pick(g, cb.exp_zero, ca.exp_zero);
    let y_exp_zero = pick(g, ca.exp_zero, cb.exp_zero);
    let x_exp_ones = pick(g, cb.exp_ones, ca.exp_ones);
    let x_nan = pick(g, b_nan, a_nan);
    let (fx, ex) = (&x[..fb], &x[fb..n]);
    let (fy, ey) = (&y[..fb], &y[fb..n]);
    // Effective exponents max(e, 1): subnormals share the smallest normal exponent.
    let mut ex_eff = ex.to_vec();
    ex_eff[0] = g.or(ex_eff[0], x_exp_zero);
    let mut ey_eff = ey.to_vec();
    ey_eff[0] = g.or(ey_eff[0], y_exp_zero);
    let distance = blocks::sub(g, &ex_eff, &ey_eff);
    // Significands with three low bits: guard, round, and (for y) the sticky bit.
    let mut mx = vec![Lit::FALSE; 3];
    mx.extend_from_slice(fx);
    mx.push(!x_exp_zero);
    let mut my = vec![Lit::FALSE; 2];
    my.extend_from_slice(fy);
    my.push(!y_exp_zero);
    // Align y: distances of p + 3 or more leave only the sticky bit.
    let stages = bits_for(p + 2);
    let beyond = blocks::or_reduce(g, distance.get(stages..).unwrap_or(&[]));
    let amount: Vec<Lit> = distance[..stages.min(eb)]
        .iter()
        .map(|&bit| g.or(bit, beyond))
        .collect();
    let (shifted, sticky) = shift_right_sticky(g, &my, &amount, Lit::FALSE);
    let mut y_aligned = vec![sticky];
    y_aligned.extend(shifted);
    // x + y or x - y (= x + !y + 1); |x| >= |y| keeps the difference non-negative, so the
    // carry out is the sum's top bit for additions and always 1 for subtractions.
    let y_operand: Vec<Lit> = y_aligned
        .iter()
        .map(|&bit| g.xor(bit, subtracting))
        .collect();
    let (mut sum, carry) = blocks::add_with_carry(g, &mx, &y_operand, subtracting);
    sum.push(g.xor(carry, subtracting));
    // The leading one belongs at the top (the carry position), as far as the exponent
    // allows: the biased exponent of the result's leading bit is ex_eff + 1 - shift >= 1.
    let (norm, shift) = normalize_capped(g, &sum, &ex_eff);
    let we = eb + 1;
    let e = blocks::add(
        g,
        &blocks::zero_extend(&ex_eff, we),
        &blocks::constant_word(1, we),
    );
    let e = sub_words(g, &e, &blocks::zero_extend(&shift, we));
    // An exact zero difference is +0; a sum of two zeros keeps their sign.
    let magnitudes_equal = blocks::eq(g, &a[..n], &b[..n]);
    let cancels = g.and(subtracting, magnitudes_equal);
    let sign = g.and(sx, !cancels);
    let finite = round_pack(g, f, sign, &e, &norm, Lit::FALSE, false, true);
    // x infinite or NaN: x itself, quieted; inf - inf: the default NaN (x = inf with the
    // sign and quiet bits set). A NaN keeps its own sign (b's, not flipped, for a - b).
    let a_inf = g.and(ca.exp_ones, ca.frac_zero);
    let b_inf = g.and(cb.exp_ones, cb.frac_zero);
    let both_inf = g.and(a_inf, b_inf);
    let invalid = g.and(both_inf, subtracting);
    let mut special = x.clone();
    special[fb - 1] = g.or(special[fb - 1], x_nan);
    special[fb - 1] = g.or(special[fb - 1], invalid);
    let mut special_sign = sx;
    if negate_b {
        // x = b came with its sign flipped.
        let t = g.and(swap, x_nan);
        special_sign = g.xor(special_sign, t);
    }
    special_sign = g.or(special_sign, invalid);
    special.push(special_sign);
    (0..f.width())
        .map(|i| g.mux(x_exp_ones, special[i], finite[i]))
        .collect()
}

/// `a + b` (`addsd`/`addss`).
pub fn add<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    f.check("add", a);
    f.check("add", b);
    add_or_sub(g, f, a, b, false)
}

/// `a - b` (`subsd`/`subss`).
pub fn sub<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    f.check("sub", a);
    f.check("sub", b);
    add_or_sub(g, f, a, b, true)
}

// ---- Multiplication ----

/// Below this width a schoolbook product has fewer ANDs than splitting it again.
const KARATSUBA_MIN_WIDTH: usize = 16;

/// The full `2n`-bit product of unsigned `a` and `b`. Size mode: Karatsuba (Knuth, TAOCP
/// vol. 2, 4.3.3) down to [`KARATSUBA_MIN_WIDTH`], where three half-width products and a few
/// additions have fewer ANDs than one schoolbook product (3969 against 5565 ANDs for
/// 53 bits); depth mode: the Dadda tree of [`blocks::mul_wide_unsigned`].
fn wide_product<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    let n = a.len();
    if n < KARATSUBA_MIN_WIDTH || g.optimize_for() == OptimizeFor::Depth {
        return blocks::mul_wide_unsigned(g, a, b);
    }
    // a = a1 2^lo + a0, b likewise; a b = z2 2^2lo + (z1 - z2 - z0) 2^lo + z0 with
    // z1 = (a0 + a1)(b0 + b1).
    let lo = n.div_ceil(2);
    let (a0, a1) = (&a[..lo], &a[lo..]);
    let (b0, b1) = (&b[..lo], &b[lo..]);
    let z0 = wide_product(g, a0, b0);
    let z2 = wide_product(g, a1, b1);
    let sum = |g: &mut G, x0: &[Lit], x1: &[Lit]| {
        let (mut s, carry) =
            blocks::add_with_carry(g, x0, &blocks::zero_extend(x1, lo), Lit::FALSE);
        s.push(carry);
        s
    };
    let (sa, sb) = (sum(g, a0, a1), sum(g, b0, b1));
    let z1 = wide_product(g, &sa, &sb);
    let w = z1.len();
    let middle = blocks::sub(g, &z1, &blocks::zero_extend(&z0, w));
    let middle = blocks::sub(g, &middle, &blocks::zero_extend(&z2, w));
    // z0 and z2 do not overlap: place them side by side, then add the middle term.
    let mut out = z0;
    out.extend(z2);
    let upper = blocks::add(g, &out[lo..], &blocks::zero_extend(&middle, 2 * n - lo));
    out.truncate(lo);
    out.extend(upper);
    out
}

/// The two operands as (x, y) with x's exponent field at least y's, so that y is the only
/// one that can be subnormal unless the product underflows to zero anyway; x is `b` when
/// `b` is a NaN and `a` is not (so a NaN x is the one to return). Returns (x, y, swapped).
fn order_by_exponent<G: Gates + ?Sized>(
    g: &mut G,
    f: Format,
    a: &[Lit],
    b: &[Lit],
    a_nan: Lit,
    b_nan: Lit,
) -> (Vec<Lit>, Vec<Lit>, Lit) {
    let fb = f.fraction_bits;
    let n = f.width() - 1;
    let a_smaller = blocks::lt_unsigned(g, &a[fb..n], &b[fb..n]);
    let only_b_nan = g.and(b_nan, !a_nan);
    let swap = g.or(a_smaller, only_b_nan);
    let (x, y) = (0..f.width())
        .map(|i| {
            let d = g.xor(a[i], b[i]);
            let d = g.and(d, swap);
            (g.xor(a[i], d), g.xor(b[i], d))
        })
        .unzip();
    (x, y, swap)
}

/// The final selection: `finite` unless `special`, where `x` is the value to return
/// (infinite, or a NaN returned quieted with its own sign) or, if `invalid`, the default
/// NaN; `x`'s fraction must then be zero. An infinite result takes `sign`.
#[allow(clippy::too_many_arguments)]
fn select_special<G: Gates + ?Sized>(
    g: &mut G,
    f: Format,
    finite: &[Lit],
    special: Lit,
    x: &[Lit],
    x_nan: Lit,
    invalid: Lit,
    sign: Lit,
) -> Vec<Lit> {
    let fb = f.fraction_bits;
    let w = f.width();
    let mut out: Vec<Lit> = Vec::with_capacity(w);
    for i in 0..fb {
        let mut bit = x[i];
        if i == fb - 1 {
            let q = g.or(x_nan, invalid);
            bit = g.or(bit, q);
        }
        out.push(g.mux(special, bit, finite[i]));
    }
    for &e in &finite[fb..w - 1] {
        out.push(g.or(e, special));
    }
    let s = g.mux(x_nan, x[w - 1], sign);
    let s = g.or(s, invalid);
    out.push(g.mux(special, s, finite[w - 1]));
    out
}

/// `a * b` (`mulsd`/`mulss`): see the module documentation.
pub fn mul<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    f.check("mul", a);
    f.check("mul", b);
    let (eb, p) = (f.exponent_bits, f.precision());
    let (pa, pb) = (parts(f, a), parts(f, b));
    let (ca, cb) = (Class::of(g, &pa), Class::of(g, &pb));
    let (a_nan, b_nan) = (ca.nan(g), cb.nan(g));
    let sign = g.xor(pa.sign, pb.sign);
    let (x, y, swap) = order_by_exponent(g, f, a, b, a_nan, b_nan);
    let (px, py) = (parts(f, &x), parts(f, &y));
    let x_exp_zero = g.mux(swap, cb.exp_zero, ca.exp_zero);
    let y_exp_zero = g.mux(swap, ca.exp_zero, cb.exp_zero);
    let mut mx = px.frac.clone();
    mx.push(!x_exp_zero);
    let mut my = py.frac.clone();
    my.push(!y_exp_zero);
    // A subnormal y is normalized; x is normal, or the product is far below the
    // smallest subnormal (then only the sticky bit survives and the result is zero).
    let (my, lz) = normalize(g, &my);
    let product = wide_product(g, &mx, &my);
    // The leading one is at 2p - 1 or 2p - 2: keep p + 1 bits below it (the last one the
    // round bit), the rest as sticky.
    let high = product[2 * p - 1];
    let sig: Vec<Lit> = (0..=p)
        .map(|i| g.mux(high, product[p - 1 + i], product[p - 2 + i]))
        .collect();
    let tail = blocks::or_reduce(g, &product[..p - 2]);
    let last = g.and(high, product[p - 2]);
    let sticky = g.or(tail, last);
    // Biased exponent of the leading bit: max(ex,1) + max(ey,1) - lz - bias + high.
    let we = eb + 2;
    let mut ex_eff = blocks::zero_extend(&px.exp, we);
    ex_eff[0] = g.or(ex_eff[0], x_exp_zero);
    let mut ey_eff = blocks::zero_extend(&py.exp, we);
    ey_eff[0] = g.or(ey_eff[0], y_exp_zero);
    let (sum, _) = blocks::add_with_carry(g, &ex_eff, &ey_eff, high);
    let offset = blocks::add(
        g,
        &blocks::zero_extend(&lz, we),
        &blocks::constant_word(f.bias() as u128, we),
    );
    let e = sub_words(g, &sum, &offset);
    let finite = round_pack(g, f, sign, &e, &sig, sticky, true, true);
    // Infinities and NaNs have the largest exponent, so x is one if either operand is.
    let special = g.mux(swap, cb.exp_ones, ca.exp_ones);
    let x_nan = g.mux(swap, b_nan, a_nan);
    let (a_inf, b_inf) = (
        g.and(ca.exp_ones, ca.frac_zero),
        g.and(cb.exp_ones, cb.frac_zero),
    );
    let (a_zero, b_zero) = (ca.zero(g), cb.zero(g));
    let inf_times_zero = g.and(a_inf, b_zero);
    let zero_times_inf = g.and(a_zero, b_inf);
    let invalid = g.or(inf_times_zero, zero_times_inf);
    select_special(g, f, &finite, special, &x, x_nan, invalid, sign)
}

// ---- Division and square root ----

/// Whether `x + y` is 0 modulo 2^n, without the carry chain: the sum is zero iff every bit
/// `x_i ^ y_i` equals the carry into it, which is then `x_(i-1) | y_(i-1)`.
fn sum_is_zero<G: Gates + ?Sized>(g: &mut G, x: &[Lit], y: &[Lit]) -> Lit {
    let mut mismatch = Vec::with_capacity(x.len());
    let mut carry = Lit::FALSE;
    for (&xi, &yi) in x.iter().zip(y) {
        let s = g.xor(xi, yi);
        mismatch.push(g.xor(s, carry));
        carry = g.or(xi, yi);
    }
    !blocks::or_reduce(g, &mismatch)
}

/// One non-restoring step: `r + d` if `r` is negative (its top bit set), else `r - d`,
/// modulo 2^n.
fn add_or_subtract<G: Gates + ?Sized>(g: &mut G, r: &[Lit], d: &[Lit], negative: Lit) -> Vec<Lit> {
    let operand: Vec<Lit> = d.iter().map(|&bit| g.xor(bit, !negative)).collect();
    blocks::add_with_carry(g, r, &operand, !negative).0
}

/// The quotient bits of `ma / d` (both `p`-bit, in `[2^(p-1), 2^p)`) of weights
/// `2^0 .. 2^-(p+1)`, MSB first, and whether the division is exact. Non-restoring: the
/// remainders stay in `[-d, d)` and fit `p + 1` bits, and quotient bit `i` is whether
/// remainder `i` is non-negative, which gives the restoring quotient bits directly; one
/// `p`-AND adder per bit.
fn divide_non_restoring<G: Gates + ?Sized>(g: &mut G, ma: &[Lit], d: &[Lit]) -> (Vec<Lit>, Lit) {
    let p = ma.len();
    let w = p + 1;
    let d = blocks::zero_extend(d, w);
    let mut r = blocks::sub(g, &blocks::zero_extend(ma, w), &d);
    let mut q = Vec::with_capacity(p + 2);
    q.push(!r[w - 1]);
    for _ in 0..=p {
        let mut doubled = vec![Lit::FALSE];
        doubled.extend_from_slice(&r[..w - 1]);
        r = add_or_subtract(g, &doubled, &d, r[w - 1]);
        q.push(!r[w - 1]);
    }
    // The true remainder is r, or r + d if r is negative: zero iff r is 0 or -d.
    let r_zero = !blocks::or_reduce(g, &r);
    let r_minus_d = sum_is_zero(g, &r, &d);
    (q, g.or(r_zero, r_minus_d))
}

/// The carry of `x + y + z`: one AND.
fn majority<G: Gates + ?Sized>(g: &mut G, x: Lit, y: Lit, z: Lit) -> Lit {
    let xz = g.xor(x, z);
    let yz = g.xor(y, z);
    let t = g.and(xz, yz);
    g.xor(z, t)
}

/// As [`divide_non_restoring`], with constant AND depth per quotient digit: radix-2 SRT
/// division with a carry-save residual (Ercegovac and Lang, Digital Arithmetic, 2004,
/// 5.2). With `D = d / 2^p` and the residual `w_0 = ma / 2^(p+1)` (in `[-D, D)`), each step
/// picks a digit in {-1, 0, 1} from a 4-bit estimate of `2w` (`q = 1` if it is at least
/// 0, `q = 0` if it is -1/2, else `q = -1`) and forms `2w - qD` with one row of full adders;
/// residuals are kept modulo 4 with `p + 1` fraction bits. Afterwards one carry-propagate
/// addition gives the residual's sign and one subtraction turns the digits into bits.
fn divide_carry_save<G: Gates + ?Sized>(g: &mut G, ma: &[Lit], d: &[Lit]) -> (Vec<Lit>, Lit) {
    let p = ma.len();
    let w = p + 3;
    let steps = p + 2;
    // D at p + 1 fraction bits, zero-extended to the doubled residual's w + 1 bits.
    let mut divisor = vec![Lit::FALSE];
    divisor.extend_from_slice(d);
    let divisor = blocks::zero_extend(&divisor, w + 1);
    let mut sum = blocks::zero_extend(ma, w);
    let mut carry = vec![Lit::FALSE; w];
    let (mut plus, mut minus) = (Vec::with_capacity(steps), Vec::with_capacity(steps));
    for _ in 0..steps {
        // 2w modulo 8, as two words of w + 1 bits.
        let mut s2 = vec![Lit::FALSE];
        s2.extend_from_slice(&sum);
        let mut c2 = vec![Lit::FALSE];
        c2.extend_from_slice(&carry);
        // The estimate: the top four bits (weights 2^-1 .. 2^2) of each word, added.
        let (x, y) = (&s2[w - 3..=w], &c2[w - 3..=w]);
        let generate: Vec<Lit> = x.iter().zip(y).map(|(&a, &b)| g.and(a, b)).collect();
        let prop: Vec<Lit> = x.iter().zip(y).map(|(&a, &b)| g.xor(a, b)).collect();
        // Carry into the top bit, looking ahead (generate and propagate exclude each
        // other, so the ORs are XORs).
        let p2g1 = g.and(prop[2], generate[1]);
        let p2p1 = g.and(prop[2], prop[1]);
        let p2p1g0 = g.and(p2p1, generate[0]);
        let c3 = g.xor(generate[2], p2g1);
        let c3 = g.xor(c3, p2p1g0);
        let estimate_negative = g.xor(prop[3], c3);
        // The estimate is -1/2 exactly when the words add without carries to all ones.
        let is_minus_half = blocks::and_reduce(g, &prop);
        let q_plus = !estimate_negative;
        let q_minus = g.and(estimate_negative, !is_minus_half);
        // -qD: !D (plus one, in the free low carry bit) for q = 1, D for q = -1.
        let addend: Vec<Lit> = divisor
            .iter()
            .map(|&bit| match bit.as_const() {
                Some(false) => q_plus,
                _ => {
                    let t = g.xor(bit, q_plus);
                    g.and(t, !is_minus_half)
                }
            })
            .collect();
        let mut next_sum = Vec::with_capacity(w);
        let mut next_carry = vec![q_plus];
        for i in 0..w {
            let t = g.xor(s2[i], c2[i]);
            next_sum.push(g.xor(t, addend[i]));
            if i + 1 < w {
                next_carry.push(majority(g, s2[i], c2[i], addend[i]));
            }
        }
        sum = next_sum;
        carry = next_carry;
        plus.push(q_plus);
        minus.push(q_minus);
    }
    let residual = blocks::add(g, &sum, &carry);
    let negative = residual[w - 1];
    // Quotient digits (MSB first) to bits: P - N, minus one unit if the residual is
    // negative (then the true remainder is residual + D).
    let p_word: Vec<Lit> = plus.iter().rev().copied().collect();
    let n_word: Vec<Lit> = minus.iter().rev().map(|&x| !x).collect();
    let (quotient, _) = blocks::add_with_carry(g, &p_word, &n_word, !negative);
    let q: Vec<Lit> = quotient.iter().rev().copied().collect();
    let r_zero = !blocks::or_reduce(g, &residual);
    let r_minus_d = sum_is_zero(g, &residual, &divisor[..w]);
    (q, g.or(r_zero, r_minus_d))
}

/// `a / b` (`divsd`/`divss`): see the module documentation.
pub fn div<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    f.check("div", a);
    f.check("div", b);
    let (eb, fb, p) = (f.exponent_bits, f.fraction_bits, f.precision());
    let (pa, pb) = (parts(f, a), parts(f, b));
    let (ca, cb) = (Class::of(g, &pa), Class::of(g, &pb));
    let (a_nan, b_nan) = (ca.nan(g), cb.nan(g));
    let sign = g.xor(pa.sign, pb.sign);
    let mut ma = pa.frac.clone();
    ma.push(!ca.exp_zero);
    let mut mb = pb.frac.clone();
    mb.push(!cb.exp_zero);
    let (ma, lz_a) = normalize(g, &ma);
    let (d, lz_b) = normalize(g, &mb);
    let (q, exact) = if g.optimize_for() == OptimizeFor::Depth {
        divide_carry_save(g, &ma, &d)
    } else {
        divide_non_restoring(g, &ma, &d)
    };
    // The quotient (MSB first in q) is in [1, 2) if its first bit is set, else in [1/2, 1).
    let whole = q[0];
    let sig: Vec<Lit> = (0..=p)
        .map(|i| g.mux(whole, q[p - i], q[p + 1 - i]))
        .collect();
    // An exact quotient has at most p significant bits, so a set bit below the round bit
    // (q[p + 1] when whole) implies a nonzero remainder: !exact is the whole sticky bit.
    let sticky = !exact;
    // Biased exponent: (max(ea,1) - lz_a) - (max(eb,1) - lz_b) + bias - !whole.
    let we = eb + 2;
    let mut ea_eff = blocks::zero_extend(&pa.exp, we);
    ea_eff[0] = g.or(ea_eff[0], ca.exp_zero);
    let mut eb_eff = blocks::zero_extend(&pb.exp, we);
    eb_eff[0] = g.or(eb_eff[0], cb.exp_zero);
    let ea_norm = sub_words(g, &ea_eff, &blocks::zero_extend(&lz_a, we));
    let eb_norm = sub_words(g, &eb_eff, &blocks::zero_extend(&lz_b, we));
    let biased = blocks::add(g, &ea_norm, &blocks::constant_word(f.bias() as u128, we));
    // ea_norm + bias + !eb_norm + whole = ea_norm + bias - eb_norm - 1 + whole.
    let (e, _) = blocks::add_with_carry(g, &biased, &blocks::not_word(&eb_norm), whole);
    let finite = round_pack(g, f, sign, &e, &sig, sticky, true, true);
    // Specials: a NaN operand (a first), quieted; 0/0 and inf/inf the default NaN; x/0
    // and inf/y infinity; y/inf zero.
    let (a_inf, b_inf) = (
        g.and(ca.exp_ones, ca.frac_zero),
        g.and(cb.exp_ones, cb.frac_zero),
    );
    let (a_zero, b_zero) = (ca.zero(g), cb.zero(g));
    let any_nan = g.or(a_nan, b_nan);
    let zeros = g.and(a_zero, b_zero);
    let infs = g.and(a_inf, b_inf);
    let invalid = g.or(zeros, infs);
    let nan_out = g.or(any_nan, invalid);
    let inf_in = g.or(a_inf, b_zero);
    let inf_out = g.and(inf_in, !nan_out);
    let zero_out = g.and(b_inf, !nan_out);
    let nonzero_special = g.or(nan_out, inf_out);
    let special = g.or(nonzero_special, zero_out);
    let mut out = Vec::with_capacity(f.width());
    for (i, &finite_bit) in finite[..fb].iter().enumerate() {
        // a's payload if a is a NaN, else b's if b is one, else zero.
        let b_pay = g.and(pb.frac[i], b_nan);
        let mut pay = g.mux(a_nan, pa.frac[i], b_pay);
        if i == fb - 1 {
            pay = g.or(pay, nan_out);
        }
        out.push(g.mux(special, pay, finite_bit));
    }
    for &e in &finite[fb..fb + eb] {
        let kept = g.and(e, !zero_out);
        out.push(g.or(kept, nonzero_special));
    }
    let nan_sign = g.mux(a_nan, pa.sign, pb.sign);
    let nan_sign = g.mux(any_nan, nan_sign, Lit::TRUE);
    let s = g.mux(nan_out, nan_sign, sign);
    out.push(s);
    out
}

/// `sqrt(a)` (`sqrtsd`/`sqrtss`): `sqrt(-0) = -0`, a negative operand gives the default
/// NaN. See the module documentation.
pub fn sqrt<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit]) -> Vec<Lit> {
    f.check("sqrt", a);
    let (eb, fb, p) = (f.exponent_bits, f.fraction_bits, f.precision());
    let pa = parts(f, a);
    let ca = Class::of(g, &pa);
    let a_nan = ca.nan(g);
    let mut m = pa.frac.clone();
    m.push(!ca.exp_zero);
    let (m, lz) = normalize(g, &m);
    // t = max(e,1) - lz + bias: the result's biased exponent is t / 2, and an odd t
    // doubles the radicand.
    let we = eb + 1;
    let mut e_eff = blocks::zero_extend(&pa.exp, we);
    e_eff[0] = g.or(e_eff[0], ca.exp_zero);
    let t = blocks::add(g, &e_eff, &blocks::constant_word(f.bias() as u128, we));
    let t = sub_words(g, &t, &blocks::zero_extend(&lz, we));
    let odd = t[0];
    let e_root = blocks::zero_extend(&t[1..], we);
    // Integer square root of N = m << (p + 1 + odd) (2p + 2 bits), two bits per step,
    // non-restoring (Li and Chu): the root has p + 1 bits, the last one the round bit.
    let n_bits = 2 * p + 2;
    let radicand: Vec<Lit> = (0..n_bits)
        .map(|i| {
            let even = if i > p && i - (p + 1) < p {
                m[i - (p + 1)]
            } else {
                Lit::FALSE
            };
            let odd_bit = if i >= p + 2 && i - (p + 2) < p {
                m[i - (p + 2)]
            } else {
                Lit::FALSE
            };
            g.mux(odd, odd_bit, even)
        })
        .collect();
    let mut root: Vec<Lit> = Vec::new(); // MSB first
    let mut rem: Vec<Lit> = Vec::new(); // LSB first, two's complement
    let mut negative = Lit::FALSE;
    for step in 0..=p {
        // After this step the root has step + 1 bits and the remainder r is either the
        // restoring one, 0 <= r <= 2 root < 2^(step + 2), or that minus 4 root' + 1 for the
        // previous root' < 2^step: step + 3 bits hold it.
        let width = step + 3;
        let pair = [
            radicand[n_bits - 2 - 2 * step],
            radicand[n_bits - 1 - 2 * step],
        ];
        let mut shifted = pair.to_vec();
        shifted.extend_from_slice(&rem);
        shifted.resize(width, negative);
        shifted.truncate(width);
        // Subtract 4 root + 1 when non-negative, add 4 root + 3 when negative: as
        // shifted + (negative ? 4 root + 3 : !(4 root + 1)) + !negative.
        let mut operand = vec![negative, Lit::TRUE];
        operand.extend(root.iter().rev().map(|&bit| g.xor(bit, !negative)));
        operand.resize(width, !negative);
        rem = blocks::add_with_carry(g, &shifted, &operand, !negative).0;
        negative = rem[width - 1];
        root.push(!negative);
    }
    // The sticky bit matters only when the round bit (the last root bit) is set, and then
    // the remainder is non-negative and true: no correction for negative remainders.
    let exact = !blocks::or_reduce(g, &rem);
    let sig: Vec<Lit> = root.iter().rev().copied().collect();
    let finite = round_pack(g, f, pa.sign, &e_root, &sig, !exact, false, false);
    // Specials: NaN quieted, +inf itself, -0 itself (the finite path gives it), any
    // other negative the default NaN.
    let a_zero = ca.zero(g);
    let negative_nonzero = g.and(pa.sign, !a_zero);
    let invalid = g.and(negative_nonzero, !a_nan);
    let special = g.or(ca.exp_ones, invalid);
    let mut out = Vec::with_capacity(f.width());
    for (i, &finite_bit) in finite[..fb].iter().enumerate() {
        let mut bit = g.and(pa.frac[i], !invalid);
        if i == fb - 1 {
            let q = g.or(a_nan, invalid);
            bit = g.or(bit, q);
        }
        out.push(g.mux(special, bit, finite_bit));
    }
    for &e in &finite[fb..fb + eb] {
        out.push(g.or(e, special));
    }
    out.push(pa.sign);
    out
}

// ---- Rounding to integral values ----

/// `[v > 0, v > 1, .., v > n - 1]` for an unsigned `v` (LSB first): about `2n` ANDs, by
/// splitting off the top bit.
fn thermometer<G: Gates + ?Sized>(g: &mut G, v: &[Lit], n: usize) -> Vec<Lit> {
    let Some((&top, low)) = v.split_last() else {
        return vec![Lit::FALSE; n];
    };
    let half = 1usize.checked_shl(low.len() as u32).unwrap_or(usize::MAX);
    let below = thermometer(g, low, half.min(n));
    (0..n)
        .map(|i| {
            if i < half {
                g.or(top, below[i])
            } else if i - half < half {
                g.and(top, below[i - half])
            } else {
                Lit::FALSE
            }
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Rounding {
    Floor,
    Ceil,
    Trunc,
    Nearest,
}

/// IEEE roundToIntegral in direction `mode`, as C's `floor`, `ceil`, `trunc` and
/// `nearbyint` (in the default rounding mode): the sign is kept (`ceil(-0.5) == -0`),
/// NaNs are quieted. The `k` fraction bits below the binary point are cleared after
/// adding, below them, all ones where rounding away from zero must carry into the integer
/// part: the fraction mask (floor of negatives, ceil of positives: carries iff the
/// fraction is nonzero), or half a unit minus one plus the integer's last bit (nearest
/// even: carries iff the fraction exceeds a half, or equals it and the integer is odd).
fn round_integral<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit], mode: Rounding) -> Vec<Lit> {
    let (eb, fb) = (f.exponent_bits, f.fraction_bits);
    let pa = parts(f, a);
    // k = bias + fb - E fraction bits to clear: all of them (and more) when |a| < 1, none
    // when k <= 0 (integral, infinite or NaN). Clamped to [0, 2^stages - 1].
    let we = eb + 2;
    let k = sub_words(
        g,
        &blocks::constant_word((f.bias() + fb as u64) as u128, we),
        &blocks::zero_extend(&pa.exp, we),
    );
    let negative = k[we - 1];
    let stages = bits_for(fb + 2);
    let beyond = blocks::or_reduce(g, &k[stages..we - 1]);
    let clamped: Vec<Lit> = k[..stages]
        .iter()
        .map(|&bit| {
            let bit = g.or(bit, beyond);
            g.and(bit, !negative)
        })
        .collect();
    // mask[i] = i < k: bit i of the fraction lies below the binary point.
    let mask = thermometer(g, &clamped, fb + 2);
    let small = mask[fb];
    let sign = pa.sign;
    let (addend, carry_in): (Vec<Lit>, Lit) = match mode {
        Rounding::Trunc => (vec![Lit::FALSE; fb], Lit::FALSE),
        Rounding::Floor => (
            mask[..fb].iter().map(|&m| g.and(m, sign)).collect(),
            Lit::FALSE,
        ),
        Rounding::Ceil => (
            mask[..fb].iter().map(|&m| g.and(m, !sign)).collect(),
            Lit::FALSE,
        ),
        Rounding::Nearest => {
            // The integer's last bit, bit k (the implicit one when k = fb; nothing when
            // k = 0): mask[i - 1] ^ mask[i] is one-hot at i = k.
            let mut last = g.xor(mask[fb - 1], mask[fb]);
            for i in 1..fb {
                let at_k = g.xor(mask[i - 1], mask[i]);
                let bit = g.and(pa.frac[i], at_k);
                last = g.xor(last, bit);
            }
            (mask[1..=fb].to_vec(), last)
        }
    };
    let (sum, carry) = blocks::add_with_carry(g, &pa.frac, &addend, carry_in);
    let exp = increment(g, &pa.exp, carry);
    let mut frac: Vec<Lit> = sum.iter().zip(&mask).map(|(&x, &m)| g.and(x, !m)).collect();
    // |a| < 1: the fraction is all below the point (so the carry says whether it is
    // nonzero, or above a half for nearest); the result is 0 or 1.
    let exp_nonzero = blocks::or_reduce(g, &pa.exp);
    let to_one = match mode {
        Rounding::Trunc => Lit::FALSE,
        Rounding::Floor => {
            let t = g.and(sign, exp_nonzero);
            g.or(t, carry)
        }
        Rounding::Ceil => {
            let t = g.and(!sign, exp_nonzero);
            g.or(t, carry)
        }
        Rounding::Nearest => {
            // Only for 1/2 <= |a| < 1 (k = fb + 1).
            let at_half = g.and(mask[fb], !mask[fb + 1]);
            g.and(at_half, carry)
        }
    };
    let one = f.bias();
    let exp: Vec<Lit> = exp
        .iter()
        .enumerate()
        .map(|(i, &e)| {
            if (one >> i) & 1 == 1 {
                g.mux(small, to_one, e)
            } else {
                g.and(e, !small)
            }
        })
        .collect();
    let is_nan = Class::of(g, &pa).nan(g);
    frac[fb - 1] = g.or(frac[fb - 1], is_nan);
    pack(&frac, &exp, sign)
}

/// C's `floor(a)` (largest integral value not above `a`; `floor(-0.5) == -1`,
/// `floor(-0) == -0`).
pub fn floor<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit]) -> Vec<Lit> {
    f.check("floor", a);
    round_integral(g, f, a, Rounding::Floor)
}

/// C's `ceil(a)` (smallest integral value not below `a`; `ceil(-0.5) == -0`).
pub fn ceil<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit]) -> Vec<Lit> {
    f.check("ceil", a);
    round_integral(g, f, a, Rounding::Ceil)
}

/// C's `trunc(a)` (toward zero, sign kept).
pub fn trunc<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit]) -> Vec<Lit> {
    f.check("trunc", a);
    round_integral(g, f, a, Rounding::Trunc)
}

/// C's `nearbyint(a)` in the default rounding mode: nearest, ties to even, sign kept
/// (`nearbyint(-0.5) == -0`, `nearbyint(2.5) == 2`).
pub fn nearbyint<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit]) -> Vec<Lit> {
    f.check("nearbyint", a);
    round_integral(g, f, a, Rounding::Nearest)
}

// ---- Conversions ----

/// The integer `a` (`signed`: two's complement; any width >= 1) as the nearest value of
/// format `f`, ties to even (`cvtsi2sd`; gcc's sequence for unsigned 64-bit sources rounds
/// the same way). Zero gives `+0`.
pub fn from_int<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit], signed: bool) -> Vec<Lit> {
    f.check_format("from_int");
    let n = a.len();
    assert!(n >= 1, "float::from_int: empty integer");
    let sign = if signed { a[n - 1] } else { Lit::FALSE };
    let magnitude = if signed {
        blocks::negate_if(g, sign, a)
    } else {
        a.to_vec()
    };
    let (norm, lz) = normalize(g, &magnitude);
    // The leading one of the magnitude has weight 2^(n - 1 - lz).
    let top = f.bias() + n as u64 - 1;
    let we = bits_for(top as usize).max(f.exponent_bits) + 1;
    let e = sub_words(
        g,
        &blocks::constant_word(top as u128, we),
        &blocks::zero_extend(&lz, we),
    );
    let mut sig = vec![Lit::FALSE; (f.precision() + 1).saturating_sub(n)];
    sig.extend_from_slice(&norm);
    let may_overflow = top + 1 >= f.max_field();
    round_pack(g, f, sign, &e, &sig, Lit::FALSE, false, may_overflow)
}

/// `tmax + bias - E`: how far right the significand, its leading bit placed at `tmax`,
/// moves to leave the integer part; a signed word, negative when `|a| >= 2^(tmax + 1)`.
fn truncation_shift<G: Gates + ?Sized>(g: &mut G, f: Format, exp: &[Lit], tmax: usize) -> Vec<Lit> {
    let top = tmax + f.bias() as usize;
    let we = (f.exponent_bits + 1).max(bits_for(top)) + 1;
    sub_words(
        g,
        &blocks::constant_word(top as u128, we),
        &blocks::zero_extend(exp, we),
    )
}

/// `|trunc(a)|` as `tmax + 1` bits, given `shift` from [`truncation_shift`]: zero when
/// `|a| < 1`, when `|a| >= 2^(tmax + 1)` (`shift` negative) and when `clear`.
fn truncate_magnitude<G: Gates + ?Sized>(
    g: &mut G,
    f: Format,
    a: &Parts,
    tmax: usize,
    shift: &[Lit],
    clear: Lit,
) -> Vec<Lit> {
    let fb = f.fraction_bits;
    let we = shift.len();
    let stages = bits_for(tmax);
    let too_big = shift[we - 1];
    let beyond = blocks::or_reduce(g, &shift[stages..we - 1]);
    let out = g.or(too_big, beyond);
    let out = g.or(out, clear);
    let mut implicit = blocks::or_reduce(g, &a.exp);
    if (1usize << stages) - 1 <= tmax {
        // The largest shift keeps the leading bit: clear it instead.
        implicit = g.and(implicit, !out);
    }
    let mut m = a.frac.clone();
    m.push(implicit);
    let word: Vec<Lit> = if tmax >= fb {
        let mut w = vec![Lit::FALSE; tmax - fb];
        w.extend_from_slice(&m);
        w
    } else {
        m[fb - tmax..].to_vec()
    };
    let amount: Vec<Lit> = shift[..stages].iter().map(|&b| g.or(b, out)).collect();
    shift_right(g, &word, &amount)
}

/// `cvttsd2si`/`cvttss2si` with a `k`-bit destination: truncation toward zero, and
/// `1 << (k - 1)` for NaNs and values out of range.
fn convert_truncating<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit], k: usize) -> Vec<Lit> {
    let p = parts(f, a);
    // |trunc(a)| < 2^(k-1) needs t <= k - 2 (t the unbiased exponent).
    let shift = truncation_shift(g, f, &p.exp, k - 2);
    let too_big = shift[shift.len() - 1];
    let mut magnitude = truncate_magnitude(g, f, &p, k - 2, &shift, Lit::FALSE);
    magnitude.push(Lit::FALSE);
    let mut r = blocks::negate_if(g, p.sign, &magnitude);
    // Too big (NaN included): the integer indefinite 0x80..0; exactly -2^(k-1) is the same.
    r[k - 1] = g.or(r[k - 1], too_big);
    r
}

/// gcc's `(unsigned long)x`: see the module documentation.
fn convert_to_u64<G: Gates + ?Sized>(g: &mut G, f: Format, a: &[Lit]) -> Vec<Lit> {
    let p = parts(f, a);
    let is_nan = Class::of(g, &p).nan(g);
    // t <= 63 fits in 64 bits.
    let shift = truncation_shift(g, f, &p.exp, 63);
    let too_big = shift[shift.len() - 1];
    let t_is_63 = !blocks::or_reduce(g, &shift);
    // Negative with t >= 63, positive with t >= 64, or NaN: fixed results, 0x80..0 for
    // negatives and NaNs, 0 for positives.
    let negative_big = g.and(p.sign, t_is_63);
    let fixed = g.or(too_big, negative_big);
    let magnitude = truncate_magnitude(g, f, &p, 63, &shift, fixed);
    let mut r = blocks::negate_if(g, p.sign, &magnitude);
    let top = g.or(p.sign, is_nan);
    let top = g.and(top, fixed);
    r[63] = g.or(r[63], top);
    r
}

/// C's cast of `a` to an integer of `width` bits (8, 16, 32 or 64), truncating toward zero;
/// out-of-range values and NaNs give what gcc -O2 x86-64 code gives (module documentation).
pub fn to_int<G: Gates + ?Sized>(
    g: &mut G,
    f: Format,
    a: &[Lit],
    width: usize,
    signed: bool,
) -> Vec<Lit> {
    f.check("to_int", a);
    assert!(
        matches!(width, 8 | 16 | 32 | 64),
        "float::to_int: width {width} (8, 16, 32 or 64)"
    );
    let mut r = match (width, signed) {
        (64, true) => convert_truncating(g, f, a, 64),
        (64, false) => convert_to_u64(g, f, a),
        (32, false) => convert_truncating(g, f, a, 64),
        _ => convert_truncating(g, f, a, 32),
    };
    r.truncate(width);
    r
}

/// Conversion between formats: exact when `to` is wider (`(double)f`), rounded to nearest
/// even when narrower (`(float)d`, with subnormal results and overflow to infinity). NaNs
/// are quieted, keeping sign and the top payload bits (`cvtss2sd`/`cvtsd2ss`).
pub fn convert<G: Gates + ?Sized>(g: &mut G, from: Format, to: Format, a: &[Lit]) -> Vec<Lit> {
    from.check("convert", a);
    to.check_format("convert");
    if from == to {
        // As the hardware has no same-format conversion, C's cast is the identity.
        return a.to_vec();
    }
    let widening = to.exponent_bits >= from.exponent_bits && to.fraction_bits >= from.fraction_bits;
    let narrowing =
        to.exponent_bits <= from.exponent_bits && to.fraction_bits <= from.fraction_bits;
    assert!(
        widening || narrowing,
        "float::convert: {from:?} to {to:?} neither widens nor narrows"
    );
    let p = parts(from, a);
    let class = Class::of(g, &p);
    if widening {
        widen(g, from, to, &p, class)
    } else {
        narrow(g, from, to, &p, class)
    }
}

fn widen<G: Gates + ?Sized>(
    g: &mut G,
    from: Format,
    to: Format,
    p: &Parts,
    class: Class,
) -> Vec<Lit> {
    let implicit = !class.exp_zero;
    let mut m = p.frac.clone();
    m.push(implicit);
    // Subnormal inputs are normal in the wider format: normalize them.
    let (norm, lz) = normalize(g, &m);
    let we = to.exponent_bits + 1;
    // E = max(e, 1) + (bias_to - bias_from) - lz.
    let mut e_eff = blocks::zero_extend(&p.exp, we);
    e_eff[0] = g.or(e_eff[0], class.exp_zero);
    let rebias = blocks::constant_word((to.bias() - from.bias()) as u128, we);
    let e = blocks::add(g, &e_eff, &rebias);
    let e = sub_words(g, &e, &blocks::zero_extend(&lz, we));
    let nonzero = norm[from.fraction_bits];
    let is_nan = class.nan(g);
    let exp: Vec<Lit> = e[..to.exponent_bits]
        .iter()
        .map(|&x| {
            let x = g.and(x, nonzero);
            g.or(x, class.exp_ones)
        })
        .collect();
    let shift = to.fraction_bits - from.fraction_bits;
    let mut frac = vec![Lit::FALSE; shift];
    frac.extend_from_slice(&norm[..from.fraction_bits]);
    let q = to.fraction_bits - 1;
    frac[q] = g.or(frac[q], is_nan);
    pack(&frac, &exp, p.sign)
}

fn narrow<G: Gates + ?Sized>(
    g: &mut G,
    from: Format,
    to: Format,
    p: &Parts,
    class: Class,
) -> Vec<Lit> {
    let drop = from.fraction_bits - to.fraction_bits;
    // Keep p + 1 significand bits (the last one is the round bit); the rest is sticky. The
    // NaN test shares the OR over the dropped bits.
    let kept_from = drop - 1;
    let tail = blocks::or_reduce(g, &p.frac[..kept_from]);
    let kept_nonzero = blocks::or_reduce(g, &p.frac[kept_from..]);
    let frac_nonzero = g.or(tail, kept_nonzero);
    let is_nan = g.and(class.exp_ones, frac_nonzero);
    let mut sig = p.frac[kept_from..].to_vec();
    sig.push(!class.exp_zero);
    let we = from.exponent_bits + 1;
    let rebias = (from.bias() - to.bias()) as u128;
    let e = sub_words(
        g,
        &blocks::zero_extend(&p.exp, we),
        &blocks::constant_word(rebias, we),
    );
    let rounded = round_pack(g, to, p.sign, &e, &sig, tail, true, true);
    // Infinities and NaNs: all-ones exponent, the top payload bits, quieted.
    let mut special_frac = p.frac[drop..].to_vec();
    let q = to.fraction_bits - 1;
    special_frac[q] = g.or(special_frac[q], is_nan);
    let tf = to.fraction_bits;
    let mut out: Vec<Lit> = (0..tf)
        .map(|i| g.mux(class.exp_ones, special_frac[i], rounded[i]))
        .collect();
    out.extend(
        rounded[tf..tf + to.exponent_bits]
            .iter()
            .map(|&x| g.or(x, class.exp_ones)),
    );
    out.push(p.sign);
    out
}
