//! Input and output values: parsing numbers given as text into wire bits and back.
//!
//! A value of width `w` is a non-negative integer `X < 2^w`. Its bit order says which wire
//! carries which bit: with [`BitOrder::Lsb0`] wire `offset + j` carries bit `j` of `X`, with
//! [`BitOrder::Msb0`] it carries bit `w - 1 - j`. All functions here take and return bits in
//! *wire order* (index `j` = wire `offset + j`).

use std::fmt;
use std::str::FromStr;

use crate::ir::Layout;

/// How the bits of a value map onto its consecutive wires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum BitOrder {
    /// Wire `offset + j` carries bit `j` (the least significant bit comes first).
    #[default]
    Lsb0,
    /// Wire `offset + j` carries bit `width - 1 - j` (the most significant bit comes first).
    Msb0,
}

impl BitOrder {
    /// The name accepted by [`FromStr`]: `"lsb0"` or `"msb0"`.
    pub fn name(self) -> &'static str {
        match self {
            BitOrder::Lsb0 => "lsb0",
            BitOrder::Msb0 => "msb0",
        }
    }
}

impl fmt::Display for BitOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The bit-order name was neither `lsb0` nor `msb0`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown bit order '{0}' (expected 'lsb0' or 'msb0')")]
pub struct UnknownBitOrder(pub String);

impl FromStr for BitOrder {
    type Err = UnknownBitOrder;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "lsb0" => Ok(BitOrder::Lsb0),
            "msb0" => Ok(BitOrder::Msb0),
            _ => Err(UnknownBitOrder(s.to_string())),
        }
    }
}

/// Why a value could not be parsed or does not match a layout.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// The text is not a number in a supported notation. The value is not shown (inputs are
    /// secret, and errors end up in logs); the 1-based character position says where.
    #[error("the value given (not shown) is not a decimal or 0x-hex number (at character {at})")]
    Malformed { at: usize },
    /// The number needs more bits than the value has (the value is not shown).
    #[error("the value given (not shown) does not fit in {width} bits")]
    TooWide { width: u32 },
    /// [`encode_inputs`] got the wrong number of values.
    #[error("expected {expected} input values, got {got}")]
    ValueCount { expected: usize, got: usize },
    /// [`encode_inputs`] got a value of the wrong width.
    #[error("input value {index} has {got} bits, expected {expected}")]
    ValueWidth {
        index: usize,
        expected: u32,
        got: usize,
    },
}

/// Parses `text` as a value of `width` bits and returns its bits in wire order.
///
/// Accepted notations (surrounding whitespace ignored, `_` allowed between digits):
/// - decimal of any size, e.g. `340282366920938463463374607431768211456`;
/// - hexadecimal with a `0x`/`0X` prefix, digits in any case, e.g. `0xDead_beef`;
/// - a leading `-` on either, meaning the two's complement in `width` bits; it must lie in
///   `-2^(width-1) ..= -1` (or be zero).
///
/// Leading zeros never count against the width: `0x00ff` fits in 8 bits.
pub fn parse_value(text: &str, width: u32, order: BitOrder) -> Result<Vec<bool>, ValueError> {
    let malformed = |at: usize| ValueError::Malformed { at: at + 1 };
    let trimmed = text.trim();
    let (negative, unsigned) = match trimmed.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, trimmed),
    };
    // Characters before the digits, for the position in errors.
    let leading_space = text.chars().take_while(|c| c.is_whitespace()).count();
    // Little-endian 32-bit limbs of the magnitude.
    let mut limbs: Vec<u32> = Vec::new();
    let (digits, radix) = match unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))
    {
        Some(hex) => (hex, 16u32),
        None => (unsigned, 10u32),
    };
    let digits_at = leading_space + negative as usize + if radix == 16 { 2 } else { 0 };
    let mut any_digit = false;
    let mut previous_underscore = true; // forbids a leading '_'
    let mut count = 0;
    for (k, c) in digits.chars().enumerate() {
        count = k + 1;
        if c == '_' {
            if previous_underscore {
                return Err(malformed(digits_at + k));
            }
            previous_underscore = true;
            continue;
        }
        let d = c.to_digit(radix).ok_or(malformed(digits_at + k))?;
        any_digit = true;
        previous_underscore = false;
        mul_add(&mut limbs, radix, d);
    }
    if !any_digit || previous_underscore {
        return Err(malformed(
            digits_at + count.saturating_sub(previous_underscore as usize),
        ));
    }
    while limbs.last() == Some(&0) {
        limbs.pop();
    }
    let bit_len = limbs.last().map_or(0, |&top| {
        32 * (limbs.len() as u64 - 1) + (32 - top.leading_zeros()) as u64
    });
    let magnitude_bit = |i: u64| -> bool {
        let limb = (i / 32) as usize;
        limb < limbs.len() && (limbs[limb] >> (i % 32)) & 1 == 1
    };
    let too_wide = || ValueError::TooWide { width };
    let width64 = width as u64;
    let lsb_first: Vec<bool> = if negative && bit_len > 0 {
        // -m fits iff m <= 2^(width-1): either m has fewer than `width` bits, or it is exactly
        // 2^(width-1).
        let is_power_of_two = (0..bit_len - 1).all(|i| !magnitude_bit(i));
        if width == 0 || bit_len > width64 || (bit_len == width64 && !is_power_of_two) {
            return Err(too_wide());
        }
        // Two's complement: invert and add one, i.e. keep bits up to and including the
        // lowest set bit, invert the ones above it.
        let lowest_set = (0..bit_len).find(|&i| magnitude_bit(i)).unwrap_or(0);
        (0..width64)
            .map(|i| {
                let bit = magnitude_bit(i);
                if i <= lowest_set { bit } else { !bit }
            })
            .collect()
    } else {
        if bit_len > width64 {
            return Err(too_wide());
        }
        (0..width64).map(magnitude_bit).collect()
    };
    Ok(match order {
        BitOrder::Lsb0 => lsb_first,
        BitOrder::Msb0 => lsb_first.into_iter().rev().collect(),
    })
}

/// `limbs = limbs * radix + digit` on little-endian 32-bit limbs.
fn mul_add(limbs: &mut Vec<u32>, radix: u32, digit: u32) {
    let mut carry = digit as u64;
    for limb in limbs.iter_mut() {
        let v = *limb as u64 * radix as u64 + carry;
        *limb = v as u32;
        carry = v >> 32;
    }
    if carry != 0 {
        limbs.push(carry as u32);
    }
}

/// Formats a value's bits (in wire order) as `0x` followed by lower-case hex, zero-padded to
/// `ceil(width / 4)` digits, the notation of `vectors.json`. A zero-width value is `"0x0"`.
pub fn format_value(bits: &[bool], order: BitOrder) -> String {
    if bits.is_empty() {
        return "0x0".to_string();
    }
    let bit_lsb = |i: usize| -> bool {
        match order {
            BitOrder::Lsb0 => bits[i],
            BitOrder::Msb0 => bits[bits.len() - 1 - i],
        }
    };
    let digits = bits.len().div_ceil(4);
    let mut s = String::with_capacity(2 + digits);
    s.push_str("0x");
    for d in (0..digits).rev() {
        let mut nibble = 0u32;
        for k in 0..4 {
            let i = 4 * d + k;
            if i < bits.len() && bit_lsb(i) {
                nibble |= 1 << k;
            }
        }
        s.push(char::from_digit(nibble, 16).expect("nibble < 16"));
    }
    s
}

/// Concatenates input values (each in wire order) into the bits of the circuit's input
/// wires, checking that there is one value per input and that each has the right width.
pub fn encode_inputs(layout: &Layout, values: &[Vec<bool>]) -> Result<Vec<bool>, ValueError> {
    if values.len() != layout.input_widths.len() {
        return Err(ValueError::ValueCount {
            expected: layout.input_widths.len(),
            got: values.len(),
        });
    }
    let mut bits = Vec::with_capacity(layout.num_input_wires() as usize);
    for (index, (value, &width)) in values.iter().zip(&layout.input_widths).enumerate() {
        if value.len() != width as usize {
            return Err(ValueError::ValueWidth {
                index,
                expected: width,
                got: value.len(),
            });
        }
        bits.extend_from_slice(value);
    }
    Ok(bits)
}

/// Splits the bits of the output wires (in `layout.output_wires` order) into output values.
///
/// # Panics
/// If `output_bits.len()` differs from `layout.num_output_wires()` (a caller bug: the
/// evaluators always return exactly that many).
pub fn decode_outputs(layout: &Layout, output_bits: &[bool]) -> Vec<Vec<bool>> {
    assert_eq!(
        output_bits.len(),
        layout.num_output_wires() as usize,
        "decode_outputs: wrong number of output bits"
    );
    let mut rest = output_bits;
    layout
        .output_widths
        .iter()
        .map(|&w| {
            let (value, tail) = rest.split_at(w as usize);
            rest = tail;
            value.to_vec()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lsb_u128(bits: &[bool]) -> u128 {
        bits.iter()
            .enumerate()
            .map(|(i, &b)| (b as u128) << i)
            .sum()
    }

    #[test]
    fn decimal_and_hex() {
        let v = parse_value("300", 16, BitOrder::Lsb0).unwrap();
        assert_eq!(v.len(), 16);
        assert_eq!(lsb_u128(&v), 300);
        let v = parse_value("0xDead_Beef", 32, BitOrder::Lsb0).unwrap();
        assert_eq!(lsb_u128(&v), 0xdead_beef);
        let v = parse_value("  0X00ff ", 8, BitOrder::Lsb0).unwrap();
        assert_eq!(lsb_u128(&v), 0xff);
        let v = parse_value("1_000", 10, BitOrder::Lsb0).unwrap();
        assert_eq!(lsb_u128(&v), 1000);
    }

    #[test]
    fn msb0_reverses() {
        let v = parse_value("0x80", 8, BitOrder::Msb0).unwrap();
        assert_eq!(v, [true, false, false, false, false, false, false, false]);
        let v = parse_value("1", 3, BitOrder::Msb0).unwrap();
        assert_eq!(v, [false, false, true]);
        assert_eq!(format_value(&v, BitOrder::Msb0), "0x1");
    }

    #[test]
    fn big_decimal_beyond_u128() {
        // 2^200 + 12345
        let text = "1606938044258990275541962092341162602522202993782792835313721";
        let v = parse_value(text, 201, BitOrder::Lsb0).unwrap();
        assert!(v[200]);
        assert_eq!(lsb_u128(&v[..128]), 12345);
        assert!(v[128..200].iter().all(|&b| !b));
        assert!(matches!(
            parse_value(text, 200, BitOrder::Lsb0),
            Err(ValueError::TooWide { width: 200, .. })
        ));
        // Round trip of a 1408-bit hex value.
        let hex = format!("0x{}", "a5".repeat(176));
        let v = parse_value(&hex, 1408, BitOrder::Msb0).unwrap();
        assert_eq!(format_value(&v, BitOrder::Msb0), hex);
    }

    #[test]
    fn negative_twos_complement() {
        assert_eq!(
            lsb_u128(&parse_value("-1", 8, BitOrder::Lsb0).unwrap()),
            0xff
        );
        assert_eq!(
            lsb_u128(&parse_value("-128", 8, BitOrder::Lsb0).unwrap()),
            0x80
        );
        assert_eq!(
            lsb_u128(&parse_value("-100", 64, BitOrder::Lsb0).unwrap()),
            (-100i64) as u64 as u128
        );
        assert_eq!(
            lsb_u128(&parse_value("-0x10", 8, BitOrder::Lsb0).unwrap()),
            0xf0
        );
        assert_eq!(lsb_u128(&parse_value("-0", 8, BitOrder::Lsb0).unwrap()), 0);
        let err = parse_value("-129", 8, BitOrder::Lsb0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the value given (not shown) does not fit in 8 bits"
        );
        assert!(parse_value("-1", 0, BitOrder::Lsb0).is_err());
        assert_eq!(lsb_u128(&parse_value("-1", 1, BitOrder::Lsb0).unwrap()), 1);
        assert!(parse_value("-2", 1, BitOrder::Lsb0).is_err());
    }

    #[test]
    fn errors_name_width_and_position_but_not_the_value() {
        // Values are the parties' secrets: errors say what is wrong and where, not what.
        let err = parse_value("300", 8, BitOrder::Lsb0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the value given (not shown) does not fit in 8 bits"
        );
        let err = parse_value("12z", 8, BitOrder::Lsb0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the value given (not shown) is not a decimal or 0x-hex number (at character 3)"
        );
        for (bad, at) in [
            (" -0x1g", 6),
            ("1__0", 3),
            ("_1", 1),
            ("1_", 2),
            ("", 1),
            ("-", 2),
        ] {
            assert_eq!(
                parse_value(bad, 64, BitOrder::Lsb0),
                Err(ValueError::Malformed { at }),
                "{bad:?}"
            );
        }
        for bad in [
            "", "0x", "-", "1__0", "_1", "1_", "0xg", "--1", "+1", "1 2", "0b101", "１",
        ] {
            assert!(
                matches!(
                    parse_value(bad, 64, BitOrder::Lsb0),
                    Err(ValueError::Malformed { .. })
                ),
                "{bad:?} should be malformed"
            );
        }
        let long = "9".repeat(500);
        let msg = parse_value(&long, 8, BitOrder::Lsb0)
            .unwrap_err()
            .to_string();
        assert!(!msg.contains("999"), "{msg}");
    }

    #[test]
    fn zero_width() {
        assert_eq!(
            parse_value("0", 0, BitOrder::Lsb0).unwrap(),
            Vec::<bool>::new()
        );
        assert!(parse_value("1", 0, BitOrder::Lsb0).is_err());
        assert_eq!(format_value(&[], BitOrder::Lsb0), "0x0");
        assert_eq!(
            parse_value("0x0", 0, BitOrder::Lsb0).unwrap(),
            Vec::<bool>::new()
        );
    }

    #[test]
    fn format_pads_to_width() {
        let v = parse_value("5", 9, BitOrder::Lsb0).unwrap();
        assert_eq!(format_value(&v, BitOrder::Lsb0), "0x005");
        let v = parse_value("0x1ff", 9, BitOrder::Lsb0).unwrap();
        assert_eq!(format_value(&v, BitOrder::Lsb0), "0x1ff");
        let v = parse_value("1", 1, BitOrder::Lsb0).unwrap();
        assert_eq!(format_value(&v, BitOrder::Lsb0), "0x1");
    }

    #[test]
    fn bit_order_from_str() {
        assert_eq!("lsb0".parse::<BitOrder>().unwrap(), BitOrder::Lsb0);
        assert_eq!("MSB0".parse::<BitOrder>().unwrap(), BitOrder::Msb0);
        assert!("lsb".parse::<BitOrder>().is_err());
    }

    #[test]
    fn encode_and_decode() {
        let layout = Layout {
            num_wires: 10,
            input_widths: vec![3, 2],
            output_widths: vec![1, 2],
            output_wires: vec![7, 8, 9],
        };
        let a = parse_value("5", 3, BitOrder::Lsb0).unwrap();
        let b = parse_value("2", 2, BitOrder::Lsb0).unwrap();
        let bits = encode_inputs(&layout, &[a, b.clone()]).unwrap();
        assert_eq!(bits, [true, false, true, false, true]);
        assert_eq!(
            encode_inputs(&layout, std::slice::from_ref(&b))
                .unwrap_err()
                .to_string(),
            "expected 2 input values, got 1"
        );
        assert_eq!(
            encode_inputs(&layout, &[b.clone(), b])
                .unwrap_err()
                .to_string(),
            "input value 0 has 2 bits, expected 3"
        );
        let outs = decode_outputs(&layout, &[true, false, true]);
        assert_eq!(outs, vec![vec![true], vec![false, true]]);
    }
}
