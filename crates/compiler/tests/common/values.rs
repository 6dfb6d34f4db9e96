//! Port values as lists of scalar leaves, their circuit bit encoding, and random inputs.
//!
//! A port's value is the list of its scalar leaves (arrays row-major, element 0 first; struct
//! fields in order), each a `u64` holding the leaf's bits (two's complement, masked to the
//! leaf's width; a `float`/`double` its IEEE-754 bit pattern). This is exactly the order of
//! the port's bits (see `pgc_circuit::ports`).

use pgc_circuit::{CType, Interface};

use super::Rng;

/// One scalar inside a port: how to reach it from the variable (`[2][1]`, `.field`), its width
/// and signedness (`_Bool` is 1 bit, unsigned).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    pub path: String,
    pub bits: u32,
    pub signed: bool,
    /// A `float` or `double`: the value is its bit pattern.
    pub float: bool,
}

/// The scalar leaves of a port type, in bit order.
pub fn leaves(t: &CType) -> Vec<Leaf> {
    let mut out = Vec::new();
    push_leaves(t, String::new(), &mut out);
    out
}

fn push_leaves(t: &CType, path: String, out: &mut Vec<Leaf>) {
    match t {
        CType::Bool => out.push(Leaf {
            path,
            bits: 1,
            signed: false,
            float: false,
        }),
        CType::Int { bits, signed, .. } => out.push(Leaf {
            path,
            bits: *bits,
            signed: *signed,
            float: false,
        }),
        CType::Float { bits } => out.push(Leaf {
            path,
            bits: *bits,
            signed: false,
            float: true,
        }),
        CType::Array { elem, len } => {
            for i in 0..*len {
                push_leaves(elem, format!("{path}[{i}]"), out);
            }
        }
        CType::Struct { fields, .. } => {
            for (name, ft) in fields {
                push_leaves(ft, format!("{path}.{name}"), out);
            }
        }
    }
}

/// The values of all ports of one side (inputs or outputs): `[port][leaf]`.
pub type Values = Vec<Vec<u64>>;

pub fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// The leaf's value as C would print it (signed types sign-extended).
pub fn as_i128(leaf: &Leaf, v: u64) -> i128 {
    let v = v & mask(leaf.bits);
    if leaf.signed && leaf.bits > 0 && (v >> (leaf.bits - 1)) & 1 == 1 {
        v as i128 - (1i128 << leaf.bits)
    } else {
        v as i128
    }
}

/// A leaf's value as pgc prints it: a signed or unsigned integer, or a float in pgc's
/// shortest round-trip notation (NaNs with a payload as their bit pattern).
pub fn leaf_text(leaf: &Leaf, v: u64) -> String {
    if leaf.float {
        pgc_circuit::float_text::format_float(v & mask(leaf.bits), leaf.bits)
    } else {
        as_i128(leaf, v).to_string()
    }
}

/// A port's value for messages: `5`, `[1, -2, 3]` (flattened, long lists cut short).
pub fn show_value(t: &CType, vals: &[u64]) -> String {
    let ls = leaves(t);
    let shown: Vec<String> = ls
        .iter()
        .zip(vals)
        .take(48)
        .map(|(l, &v)| leaf_text(l, v))
        .collect();
    match t {
        CType::Bool | CType::Int { .. } | CType::Float { .. } => shown.join(""),
        _ => {
            let more = if ls.len() > 48 {
                format!(", … ({} values)", ls.len())
            } else {
                String::new()
            };
            format!("[{}{more}]", shown.join(", "))
        }
    }
}

/// The same value in the form `pgc --a NAME=VALUE` takes (nested lists for arrays), for
/// reproducing a failure by hand. Structs are shown flattened.
pub fn cli_value(t: &CType, vals: &[u64]) -> String {
    fn go(t: &CType, vals: &mut std::slice::Iter<'_, u64>, out: &mut String) {
        match t {
            CType::Bool | CType::Int { .. } | CType::Float { .. } => {
                let l = &leaves(t)[0];
                let v = *vals.next().unwrap_or(&0);
                out.push_str(&leaf_text(l, v));
            }
            CType::Array { elem, len } => {
                out.push('[');
                for i in 0..*len {
                    if i > 0 {
                        out.push(',');
                    }
                    go(elem, vals, out);
                }
                out.push(']');
            }
            CType::Struct { fields, .. } => {
                out.push('{');
                for (i, (name, ft)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(name);
                    out.push(':');
                    go(ft, vals, out);
                }
                out.push('}');
            }
        }
    }
    let mut out = String::new();
    go(t, &mut vals.iter(), &mut out);
    out
}

/// The circuit's input bits for one input set: ports in order, leaves in order, LSB first.
pub fn encode(types: &[&CType], vals: &Values) -> Vec<bool> {
    assert_eq!(types.len(), vals.len(), "one value per port");
    let mut bits = Vec::new();
    for (t, v) in types.iter().zip(vals) {
        bits.extend(encode_port(t, v));
    }
    bits
}

/// One port's bits.
pub fn encode_port(t: &CType, vals: &[u64]) -> Vec<bool> {
    let ls = leaves(t);
    assert_eq!(ls.len(), vals.len(), "one value per leaf");
    let mut bits = Vec::with_capacity(t.bit_width() as usize);
    for (l, &v) in ls.iter().zip(vals) {
        for i in 0..l.bits {
            bits.push(i < 64 && (v >> i) & 1 == 1);
        }
    }
    bits
}

/// Splits output bits (all ports concatenated) into port values.
pub fn decode(types: &[&CType], bits: &[bool]) -> Values {
    let total: u64 = types.iter().map(|t| t.bit_width()).sum();
    assert_eq!(
        total,
        bits.len() as u64,
        "the circuit has {} output bits but the interface's output ports need {total}",
        bits.len()
    );
    let mut pos = 0usize;
    let mut out = Vec::with_capacity(types.len());
    for t in types {
        let w = t.bit_width() as usize;
        out.push(decode_port(t, &bits[pos..pos + w]));
        pos += w;
    }
    out
}

/// One port's value from its bits.
pub fn decode_port(t: &CType, bits: &[bool]) -> Vec<u64> {
    let mut pos = 0usize;
    leaves(t)
        .iter()
        .map(|l| {
            let mut v = 0u64;
            for i in 0..l.bits as usize {
                if bits[pos + i] && i < 64 {
                    v |= 1 << i;
                }
            }
            pos += l.bits as usize;
            v
        })
        .collect()
}

/// A random value for a leaf, biased towards the values that find bugs: 0, ±1, small numbers,
/// the type's extremes, and values shared with other leaves of the same input set (`pool`),
/// so that equality and ordering between inputs are exercised.
pub fn random_leaf(rng: &mut Rng, leaf: &Leaf, pool: &mut Vec<u64>) -> u64 {
    if leaf.float {
        return random_float(rng, leaf.bits, pool);
    }
    let m = mask(leaf.bits);
    let v = match rng.below(20) {
        0..=3 => rng.below(5),
        4 => 0u64.wrapping_sub(1 + rng.below(4)), // -1 .. -4
        5 => {
            // The extremes: 0, all ones, and the sign boundary.
            let top = 1u64 << (leaf.bits.max(1) - 1);
            match rng.below(4) {
                0 => top,
                1 => top.wrapping_sub(1),
                2 => top.wrapping_add(1),
                _ => u64::MAX,
            }
        }
        6 => 1u64 << rng.below(leaf.bits.max(1) as u64),
        7..=9 if !pool.is_empty() => {
            let p = pool[rng.below(pool.len() as u64) as usize];
            p.wrapping_add(rng.below(3)).wrapping_sub(1)
        }
        10..=11 => rng.below(256),
        _ => rng.next_u64(),
    } & m;
    if pool.len() < 16 {
        pool.push(v);
    }
    v
}

/// A random `float` (`width` 32) or `double` (64) bit pattern, biased towards the values
/// where floating point is hard: signed zeros, subnormals, the smallest and largest normal
/// numbers, infinities, quiet and signaling NaNs with payloads, halfway cases for rounding
/// to an integer, values around the integer types' limits, numbers with few significant
/// bits (so sums and products land exactly on rounding ties), and values shared with or one
/// unit in the last place from other inputs of the set (`pool`).
pub fn random_float(rng: &mut Rng, width: u32, pool: &mut Vec<u64>) -> u64 {
    let (e_bits, f_bits) = pgc_circuit::float_text::layout(width).expect("32 or 64 bits");
    let sign = 1u64 << (width - 1);
    let exp_mask = ((1u64 << e_bits) - 1) << f_bits;
    let frac_mask = (1u64 << f_bits) - 1;
    let quiet = 1u64 << (f_bits - 1);
    let bias = (1u64 << (e_bits - 1)) - 1;
    let from_f64 = |v: f64| -> u64 {
        if width == 32 {
            (v as f32).to_bits() as u64
        } else {
            v.to_bits()
        }
    };
    let random_sign = |rng: &mut Rng| if rng.below(2) == 0 { 0 } else { sign };
    let v = match rng.below(40) {
        0 => random_sign(rng),                    // ±0
        1 => random_sign(rng) | exp_mask,         // ±inf
        2 => random_sign(rng) | exp_mask | quiet, // the default quiet NaNs
        3 => {
            // A quiet NaN with a payload, or a signaling one (quiet bit clear, payload ≠ 0).
            let payload = (rng.next_u64() & frac_mask) >> rng.below(f_bits as u64);
            let nan = if rng.below(2) == 0 {
                exp_mask | quiet | payload
            } else {
                exp_mask | (payload & (quiet - 1)).max(1)
            };
            random_sign(rng) | nan
        }
        4 => random_sign(rng) | (rng.next_u64() & frac_mask).max(1), // subnormal
        5 => {
            let edge = [
                1,
                frac_mask,
                1 << f_bits,
                exp_mask - 1,
                (1 << f_bits) | frac_mask,
            ];
            random_sign(rng) | *rng.pick(&edge)
        }
        6..=8 => {
            // Small integers and halfway cases k + 0.5, k + 0.25, k + 0.75.
            let k = rng.below(20) as f64 - 10.0;
            let frac = [0.0, 0.5, 0.25, 0.75, 0.5];
            from_f64(k + frac[rng.below(5) as usize])
        }
        9..=10 => {
            // Around the integer types' limits and the floats' integer precision.
            let p = *rng.pick(&[7u32, 8, 15, 16, 24, 31, 32, 53, 63, 64]);
            let base = 2f64.powi(p as i32);
            let near = from_f64(base);
            let step = rng.below(5) as i64 - 2; // a few ulps either way
            random_sign(rng) | (near as i64 + step) as u64 & !sign
        }
        11..=14 if !pool.is_empty() => {
            let p = pool[rng.below(pool.len() as u64) as usize] & mask(width);
            match rng.below(4) {
                0 => p,
                1 => p ^ sign,
                _ => p.wrapping_add(rng.below(3)).wrapping_sub(1) & mask(width),
            }
        }
        15..=20 => {
            // Few significant bits: exact ties in sums and products.
            let bits = rng.below(6) + 1;
            let frac = (rng.next_u64() >> (64 - bits)) << (f_bits as u64 - bits);
            let e = bias + rng.below(12) - 6;
            random_sign(rng) | e << f_bits | frac
        }
        21..=30 => {
            // Moderate magnitudes, full precision.
            let e = bias + rng.below(40) - 20;
            random_sign(rng) | e << f_bits | (rng.next_u64() & frac_mask)
        }
        _ => rng.next_u64() & mask(width), // any pattern (every exponent)
    };
    if pool.len() < 16 {
        pool.push(v);
    }
    v
}

/// Random values for every input port of `iface`.
pub fn random_inputs(iface: &Interface, rng: &mut Rng) -> Values {
    let mut pool = Vec::new();
    iface
        .inputs
        .iter()
        .map(|p| {
            leaves(&p.ctype)
                .iter()
                .map(|l| random_leaf(rng, l, &mut pool))
                .collect()
        })
        .collect()
}

/// Builds a port value from signed numbers, for hand-written expectations.
pub fn from_i64(t: &CType, nums: &[i64]) -> Vec<u64> {
    let ls = leaves(t);
    assert_eq!(
        ls.len(),
        nums.len(),
        "{} values for a {}",
        nums.len(),
        t.c_name()
    );
    ls.iter()
        .zip(nums)
        .map(|(l, &n)| (n as u64) & mask(l.bits))
        .collect()
}
