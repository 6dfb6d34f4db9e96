//! IEEE-754 binary32/binary64 values as text: exactly rounded parsing of decimal and C
//! hexadecimal literals, and printing that reads back to the same bits.
//!
//! Follows IEEE 754-2008 §5.12 (conversions between binary floating point and character
//! sequences: correctly rounded to nearest, ties to even; enough digits to recover the bits)
//! and C11 §6.4.4.2 / §7.22.1.3 for the literal syntax (`1.5e3`, `.5`, `5.`, `0x1.8p3`).
//! Decimal text uses Rust's correctly rounded parsers; hexadecimal text is rounded here
//! ([`round_to_format`]), straight to the target width (no double rounding).
//!
//! Printing ([`format_float`]): finite values and infinities in Rust's shortest round-trip
//! form (`1.5`, `-0.0`, `1e300`, `3.4028235e38`, `inf`, `-inf`); a NaN whose payload is only
//! the quiet bit as `nan` or `-nan` (x86's default NaN, produced by invalid operations, is
//! `-nan`, as glibc's `printf` shows it); every other NaN as its bit pattern in hexadecimal
//! (`0x7fc00001`), which [`crate::typed`] reads back as that pattern.

/// Bits a binary32 or binary64 value has: `(exponent bits, fraction bits)`, `None` for other
/// widths.
pub fn layout(width: u32) -> Option<(u32, u32)> {
    match width {
        32 => Some((8, 23)),
        64 => Some((11, 52)),
        _ => None,
    }
}

fn check_width(width: u32) -> (u32, u32) {
    layout(width).unwrap_or_else(|| panic!("floats are 32 or 64 bits wide, not {width}"))
}

/// The bit pattern of `(-1)^negative · (mantissa + δ) · 2^exponent` rounded to nearest, ties
/// to even, in the `width`-bit format (32 or 64), where `0 < δ < 1` if `sticky` (bits below
/// the mantissa's last one were dropped) and `δ = 0` otherwise. Overflow gives infinity,
/// underflow a subnormal or zero, as IEEE 754 §4.3.1 rounds. A zero mantissa without
/// `sticky` gives a signed zero.
///
/// # Panics
/// If `width` is not 32 or 64.
pub fn round_to_format(
    negative: bool,
    mantissa: u128,
    exponent: i64,
    sticky: bool,
    width: u32,
) -> u64 {
    let (e_bits, f_bits) = check_width(width);
    let sign = (negative as u64) << (width - 1);
    if mantissa == 0 {
        // Only δ: below any mantissa bit we have, so far below the smallest subnormal when
        // callers keep at least a few significant bits (they do); it rounds to zero.
        return sign;
    }
    let bias = (1i64 << (e_bits - 1)) - 1;
    let emin = 1 - bias;
    let f = f_bits as i64;
    let top = 127 - mantissa.leading_zeros() as i64; // position of the leading one
    let unbiased = top + exponent;
    // The weight of the last fraction bit kept: a normal number keeps f bits after its
    // leading one, a subnormal stops at 2^(emin - f).
    let lsb_exp = (unbiased - f).max(emin - f);
    let shift = lsb_exp - exponent;
    let (mut q, round, rest) = if shift <= 0 {
        (mantissa << (-shift) as u32, false, sticky)
    } else if shift > 128 {
        (0u128, false, true)
    } else {
        let s = shift as u32;
        let kept = if s == 128 { 0 } else { mantissa >> s };
        let round = (mantissa >> (s - 1)) & 1 == 1;
        let below = if s == 1 {
            0
        } else {
            mantissa & (u128::MAX >> (129 - s))
        };
        (kept, round, below != 0 || sticky)
    };
    let mut lsb_exp = lsb_exp;
    if round && (rest || q & 1 == 1) {
        q += 1;
        if q >> (f + 1) != 0 {
            q >>= 1;
            lsb_exp += 1;
        }
    }
    let max_biased = (1i64 << e_bits) - 1;
    let (biased, fraction) = if q >> f != 0 {
        (lsb_exp + f + bias, q - (1u128 << f))
    } else {
        (0, q)
    };
    if biased >= max_biased {
        return sign | ((max_biased as u64) << f_bits);
    }
    sign | ((biased as u64) << f_bits) | fraction as u64
}

/// Parses the digits of a C hexadecimal floating constant after its `0x` (`1.8p3`, `.8p-1`,
/// `1p10`; the binary exponent is required) and rounds it to the `width`-bit format. `None`
/// if the text is not of that form.
pub fn parse_hex_float(digits: &str, width: u32) -> Option<u64> {
    let (mant_text, exp_text) = digits.split_once(['p', 'P'])?;
    let (int_part, frac_part) = match mant_text.split_once('.') {
        Some((i, f)) => (i, f),
        None => (mant_text, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let exp_digits = exp_text.strip_prefix(['+', '-']).unwrap_or(exp_text);
    if exp_digits.is_empty() || !exp_digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Far beyond any format's range; saturating keeps the arithmetic in i64.
    let mut exp: i64 = 0;
    for b in exp_digits.bytes() {
        exp = (exp * 10 + (b - b'0') as i64).min(1 << 40);
    }
    if exp_text.starts_with('-') {
        exp = -exp;
    }
    let mut mantissa: u128 = 0;
    let mut sticky = false;
    for (k, c) in int_part.chars().chain(frac_part.chars()).enumerate() {
        let d = c.to_digit(16)? as u128;
        if k >= int_part.len() {
            exp -= 4;
        }
        if mantissa >> 120 != 0 {
            // 120 significant bits are far more than rounding needs: the rest is sticky,
            // and the digit's weight moves into the exponent.
            sticky |= d != 0;
            exp += 4;
        } else {
            mantissa = mantissa << 4 | d;
        }
    }
    Some(round_to_format(false, mantissa, exp, sticky, width))
}

/// Parses a decimal floating constant (`1.5`, `.5`, `5.`, `1e-3`, `2E+10`; no sign) and
/// rounds it correctly to the `width`-bit format. `None` if the text is not of that form.
pub fn parse_decimal_float(text: &str, width: u32) -> Option<u64> {
    check_width(width);
    // Rust's parsers also take `inf`, `nan` and signs; a C literal has none of them.
    let ok = !text.is_empty()
        && text.bytes().any(|b| b.is_ascii_digit())
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && !text.starts_with(['+', '-']);
    if !ok {
        return None;
    }
    match width {
        32 => text.parse::<f32>().ok().map(|v| v.to_bits() as u64),
        _ => text.parse::<f64>().ok().map(f64::to_bits),
    }
}

/// Parses a float as users type it: an optional sign, then a decimal number (`1.5`, `-0.0`,
/// `1e-3`, `7`), a C hexadecimal floating constant (`0x1.8p3`), `inf`/`infinity` or `nan`
/// (any case). `nan` is the quiet NaN with no payload; `-nan` has its sign bit set. `None` if
/// the text is none of these. (Raw bit patterns are [`crate::typed`]'s business.)
pub fn parse_float(text: &str, width: u32) -> Option<u64> {
    let (e_bits, f_bits) = check_width(width);
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let sign = (negative as u64) << (width - 1);
    let exp_ones = ((1u64 << e_bits) - 1) << f_bits;
    let lower = body.to_ascii_lowercase();
    let magnitude = match lower.as_str() {
        "inf" | "infinity" => exp_ones,
        "nan" => exp_ones | 1 << (f_bits - 1),
        _ => match lower.strip_prefix("0x") {
            Some(hex) => parse_hex_float(hex, width)?,
            None => parse_decimal_float(body, width)?,
        },
    };
    Some(sign | magnitude)
}

/// Whether a `width`-bit pattern is a NaN.
pub fn is_nan(bits: u64, width: u32) -> bool {
    let (e_bits, f_bits) = check_width(width);
    let exp = (bits >> f_bits) & ((1 << e_bits) - 1);
    exp == (1 << e_bits) - 1 && bits & ((1 << f_bits) - 1) != 0
}

/// The value of a `width`-bit pattern as text that [`parse_float`] (or, for NaNs with a
/// payload, [`crate::typed`]'s bit-pattern notation) reads back to the same bits; see the
/// module docs.
pub fn format_float(bits: u64, width: u32) -> String {
    let (_, f_bits) = check_width(width);
    if is_nan(bits, width) {
        let sign_bit = 1u64 << (width - 1);
        let quiet_only = 1u64 << (f_bits - 1);
        let payload = bits & ((1 << f_bits) - 1);
        return if payload == quiet_only {
            if bits & sign_bit != 0 { "-nan" } else { "nan" }.to_string()
        } else {
            format!("{bits:#x}")
        };
    }
    match width {
        32 => format!("{:?}", f32::from_bits(bits as u32)),
        _ => format!("{:?}", f64::from_bits(bits)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64_of(text: &str) -> f64 {
        f64::from_bits(parse_float(text, 64).unwrap_or_else(|| panic!("{text}")))
    }
    fn f32_of(text: &str) -> f32 {
        f32::from_bits(parse_float(text, 32).unwrap_or_else(|| panic!("{text}")) as u32)
    }

    #[test]
    fn decimal_forms() {
        assert_eq!(f64_of("1.5"), 1.5);
        assert_eq!(f64_of(".5"), 0.5);
        assert_eq!(f64_of("5."), 5.0);
        assert_eq!(f64_of("1e-3"), 1e-3);
        assert_eq!(f64_of("2E+10"), 2e10);
        assert_eq!(f64_of("-0.0").to_bits(), (-0.0f64).to_bits());
        assert_eq!(f32_of("0.1"), 0.1f32);
        assert_eq!(f32_of("1e39"), f32::INFINITY);
        assert_eq!(f64_of("4.9e-324").to_bits(), 1);
        assert_eq!(f64_of("2e-324").to_bits(), 0);
        // Rounded straight to binary32, not through binary64 (where it would become the tie
        // 1 + 2^-24 and round to 1): 1 + 2^-24 + 1.05e-16 is above the midpoint between 1
        // and 1 + 2^-23.
        assert_eq!(
            f32_of("1.0000000596046448802981052283750550875751867704093456268310546875"),
            1.0 + f32::EPSILON
        );
        for bad in [
            "", "e5", ".", "1.5.2", "1e", "+-1", "1x", "0x", "0x1.8", "in",
        ] {
            assert!(parse_float(bad, 64).is_none(), "{bad:?}");
        }
        assert!(parse_decimal_float("inf", 64).is_none());
        assert!(parse_decimal_float("-1", 64).is_none());
    }

    #[test]
    fn hex_floats_round_to_nearest_even() {
        assert_eq!(f64_of("0x1.8p3"), 12.0);
        assert_eq!(f64_of("0x.8p-1"), 0.25);
        assert_eq!(f64_of("0X1P10"), 1024.0);
        assert_eq!(
            f64_of("-0x1p-1074").to_bits(),
            (-f64::from_bits(1)).to_bits()
        );
        assert_eq!(
            f64_of("0x1p-1075").to_bits(),
            0,
            "a tie rounds to even (zero)"
        );
        assert_eq!(f64_of("0x1.0000000000001p-1075").to_bits(), 1);
        assert_eq!(f64_of("0x1.fffffffffffff8p1023"), f64::INFINITY);
        assert_eq!(f64_of("0x1.fffffffffffff7ffp1023"), f64::MAX);
        // 1 + 2^-24 is a tie between 1 and 1 + 2^-23: even is 1; any more goes up.
        assert_eq!(f32_of("0x1.000001p0"), 1.0);
        assert_eq!(f32_of("0x1.000003p0"), 1.0 + 2.0 * f32::EPSILON);
        assert_eq!(
            f32_of("0x1.0000010000000000000000000000000001p0"),
            1.0 + f32::EPSILON
        );
        assert_eq!(f32_of("0x1p-149").to_bits(), 1);
        assert_eq!(f32_of("0x1.fffffep127"), f32::MAX);
        assert_eq!(f32_of("0x1p128"), f32::INFINITY);
        assert_eq!(f32_of("0x0p0").to_bits(), 0);
        assert_eq!(f64_of("0x1p99999999999999999999"), f64::INFINITY);
        assert_eq!(f64_of("0x1p-99999999999999999999").to_bits(), 0);
    }

    #[test]
    fn rounding_agrees_with_the_hardware_on_random_values() {
        // u64 -> f32/f64 conversions on x86-64 (cvtsi2ss/sd) round to nearest even: the same
        // rule applied to mantissa · 2^e for random mantissas and exponents.
        let mut x = 0x1234_5678_9abc_def0u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let m = x >> (x % 61);
            let e = (x >> 56) as i64 % 40 - 20;
            let want64 = m as f64 * 2f64.powi(e as i32);
            let want32 = (m as f32) * 2f32.powi(e as i32);
            assert_eq!(
                round_to_format(false, m as u128, e, false, 64),
                want64.to_bits()
            );
            if (m as f32).is_finite() && want32.is_normal() {
                assert_eq!(
                    round_to_format(false, m as u128, e, false, 32),
                    want32.to_bits() as u64,
                    "{m} * 2^{e}"
                );
            }
        }
    }

    #[test]
    fn printing_reads_back_exactly() {
        for v in [
            0.0f64,
            -0.0,
            1.5,
            0.1,
            1e300,
            -2.5e-308,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            let s = format_float(v.to_bits(), 64);
            assert_eq!(parse_float(&s, 64), Some(v.to_bits()), "{s}");
        }
        for v in [0.1f32, -0.0, f32::MAX, f32::from_bits(1), 3.0e-39] {
            let s = format_float(v.to_bits() as u64, 32);
            assert_eq!(parse_float(&s, 32), Some(v.to_bits() as u64), "{s}");
        }
        assert_eq!(format_float(0.1f32.to_bits() as u64, 32), "0.1");
        assert_eq!(format_float(1e300f64.to_bits(), 64), "1e300");
        assert_eq!(format_float(0x7ff8_0000_0000_0000, 64), "nan");
        assert_eq!(format_float(0xfff8_0000_0000_0000, 64), "-nan");
        assert_eq!(format_float(0xffc0_0000, 32), "-nan");
        assert_eq!(format_float(0x7fc0_0001, 32), "0x7fc00001");
        assert_eq!(format_float(0x7f80_0001, 32), "0x7f800001");
        assert_eq!(parse_float("-nan", 32), Some(0xffc0_0000));
        assert_eq!(parse_float("NaN", 64), Some(0x7ff8_0000_0000_0000));
        assert!(is_nan(0x7f80_0001, 32) && !is_nan(0x7f80_0000, 32));
    }
}
