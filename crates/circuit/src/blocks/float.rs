//! IEEE-754 binary floating point (binary32 `float`, binary64 `double`) over any [`Gates`],
//! bit-exact with what gcc's x86-64 code computes with SSE2 at the default MXCSR: round to
//! nearest, ties to even; subnormal inputs and results (no flush-to-zero,
//! no denormals-are-zero); signed zeros; infinities.
//!
//! Words are LSB first, `f.width()` bits: fraction, then exponent, then the sign on top.
//! Follows IEEE 754-2019 sections 5.4 (conversions), 5.11 (comparisons) and 6.2 (NaNs); the
//! NaN rules and the out-of-range integer results are those of the Intel SDM
//! (vol. 1, 4.8.3.5 and table 4-7; vol. 2, CVTTSD2SI/CVTTSS2SI), as gcc -O2 uses them:
//! - a NaN result of `a op b` is `a` quieted (quiet bit set, sign and payload kept) if `a` is
//!   a NaN, else `b` quieted (for `a - b` too: the sign of a NaN `b` is not flipped); an
//!   invalid operation (`inf - inf`, `0 * inf`, `0 / 0`, `inf / inf`, `sqrt` of a negative
//!   number) gives the default NaN: sign 1, quiet bit 1, zero payload;
//! - [`convert`] quiets NaNs and keeps sign and the top payload bits, as
//!   `cvtss2sd`/`cvtsd2ss`;
//! - [`to_int`] truncates toward zero as C casts do. Out of range and NaN, gcc's code gives:
//!   `(long)x`: `cvttsd2si` with a 64-bit destination, the "integer indefinite"
//!   `0x8000000000000000`; `(int)x`, `(short)x`, `(signed char)x`, `(unsigned short)x`,
//!   `(unsigned char)x`: the 32-bit `cvttsd2si` (`0x80000000` when out of 32-bit range), then
//!   the low bits; `(unsigned)x`: the 64-bit `cvttsd2si`, then the low 32 bits (so
//!   `(unsigned)-1.0 == 0xffffffff` and NaN gives 0); `(unsigned long)x`: gcc's two-way
//!   sequence `x < 0x1p63 ? cvttsd2si(x) : cvttsd2si(x - 0x1p63) ^ (1 << 63)`, so NaN and
//!   `x <= -0x1p63` give `0x8000000000000000`, `x >= 0x1p64` gives 0, and negative `x` above
//!   `-0x1p63` give the two's complement of the truncation. (Checked against gcc 12 -O2 code.)
//!
//! Circuits are built for few ANDs (XOR and NOT are free). Rounded results pass through one
//! rounding step that packs exponent and fraction into one word, so the carry of rounding
//! up moves into the exponent (and reaches infinity) without extra logic; subnormal results
//! come from one right shift by `1 - e` with a sticky bit. With
//! [`OptimizeFor::Depth`](crate::netlist::OptimizeFor::Depth) the
//! adders, comparators and zero tests inside are the low-depth variants of
//! [`crate::blocks`]. Costs: `cargo run -p pgc-circuit --release --example block_costs`.

use crate::blocks;
use crate::netlist::{Gates, Lit};

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

    fn check_format(self, op: &str) {
        assert!(
            (2..=15).contains(&self.exponent_bits) && (1..=112).contains(&self.fraction_bits),
            "float::{op}: unsupported format {self:?}"
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
    let t = g.and(magnitudes_equal, sign_ok);
    g.and(t, !a_nan)
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
        word = (0..n)
            .map(|i| {
                let moved = if i >= k { word[i - k] } else { Lit::FALSE };
                g.mux(top_zero, moved, word[i])
            })
            .collect();
    }
    (word, count)
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
        word = (0..n)
            .map(|i| {
                let moved = if i >= k { word[i - k] } else { Lit::FALSE };
                g.mux(take, moved, word[i])
            })
            .collect();
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
