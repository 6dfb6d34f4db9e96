//! Floating-point expressions: `float`/`double` literals, C's usual arithmetic conversions
//! between integers and floats, the operators on floats, and the `<math.h>` functions pgc
//! builds in.
//!
//! Follows C11 6.3.1.4-6.3.1.8 (conversions), 6.4.4.2 (floating constants), 6.5 (operators)
//! and 7.12 (`sqrt`, `fabs`, `floor`, `ceil`, `trunc`, `nearbyint`), with gcc's x86-64
//! choices (SSE2, no excess precision, round to nearest even). The gates come from
//! [`pgc_circuit::blocks::float`]; a float expression on constants is folded by running
//! those same blocks on constant bits, so a constant gives exactly what the circuit would
//! compute at run time (NaN signs and payloads included).

use lang_c::ast::{BinaryOperator, Float, FloatBase, FloatFormat};
use lang_c::span::Span;
use pgc_circuit::blocks::float as fp;
use pgc_circuit::float_text::{parse_decimal_float, parse_hex_float};
use pgc_circuit::{Lit, blocks};

use crate::lower::{Lowerer, R, Val};
use crate::types::{Arith, FloatTy, IntTy};

/// The `<math.h>` functions pgc computes itself, by their double names (the `f` forms take
/// and return `float`); `__builtin_` spellings are accepted too.
pub const MATH_BUILTINS: [&str; 6] = ["sqrt", "fabs", "floor", "ceil", "trunc", "nearbyint"];

/// Other `<math.h>` functions, named in the error for a call of one.
const OTHER_MATH: [&str; 40] = [
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "pow",
    "cbrt",
    "hypot",
    "fmod",
    "remainder",
    "round",
    "lround",
    "llround",
    "rint",
    "lrint",
    "llrint",
    "fmin",
    "fmax",
    "fdim",
    "fma",
    "copysign",
    "frexp",
    "ldexp",
    "modf",
    "erf",
    "tgamma",
    "lgamma",
    "nan",
];

/// `sqrtf` → (`sqrt`, float); `__builtin_floor` → (`floor`, double); `None` if `name` is
/// not one of [`MATH_BUILTINS`].
pub fn math_builtin(name: &str) -> Option<(&'static str, FloatTy)> {
    let base = name.strip_prefix("__builtin_").unwrap_or(name);
    for b in MATH_BUILTINS {
        if base == b {
            return Some((b, FloatTy::Double));
        }
        if base.strip_suffix('f') == Some(b) {
            return Some((b, FloatTy::Float));
        }
    }
    None
}

/// A note for the error on a call of a `<math.h>` function pgc does not have.
pub fn missing_math_note(name: &str) -> Option<String> {
    let base = name.strip_prefix("__builtin_").unwrap_or(name);
    let base = base
        .strip_suffix('f')
        .filter(|b| OTHER_MATH.contains(b))
        .unwrap_or(base);
    OTHER_MATH.contains(&base).then(|| {
        format!(
            "; of <math.h>, pgc builds in only {} (and their `f` forms for float)",
            MATH_BUILTINS.join(", ")
        )
    })
}

/// The spelling of a binary operator in messages.
fn op_text(op: &BinaryOperator) -> &'static str {
    use BinaryOperator as B;
    match op {
        B::Plus => "+",
        B::Minus => "-",
        B::Multiply => "*",
        B::Divide => "/",
        B::Modulo => "%",
        B::ShiftLeft => "<<",
        B::ShiftRight => ">>",
        B::BitwiseAnd => "&",
        B::BitwiseOr => "|",
        B::BitwiseXor => "^",
        B::Less => "<",
        B::Greater => ">",
        B::LessOrEqual => "<=",
        B::GreaterOrEqual => ">=",
        B::Equals => "==",
        B::NotEquals => "!=",
        _ => "this operator",
    }
}

impl<'a> Lowerer<'a> {
    /// An arithmetic operand's type and bits; an error for pointers, aggregates and void.
    pub fn arith_of(&self, v: Val, span: Span) -> R<(Arith, Vec<Lit>)> {
        match v {
            Val::Int(t, b) => Ok((Arith::Int(t), b)),
            Val::Float(f, b) => Ok((Arith::Float(f), b)),
            Val::Ptr(_) => self.err(
                span,
                "pointer arithmetic and comparisons other than `+`/`-` with an integer are not supported",
            ),
            Val::Agg(t, _) => self.err(
                span,
                format!(
                    "an operand of type {} where a number is expected",
                    t.name()
                ),
            ),
            Val::Void => self.err(span, "a void value cannot be used"),
        }
    }

    /// Converts a number between arithmetic types as C does (C11 6.3.1.2-6.3.1.5): integers
    /// truncate or extend, an integer becomes the nearest float (ties to even), a float
    /// becomes an integer by truncation toward zero (out of range and NaN as gcc's x86-64
    /// code gives them), a float to `_Bool` compares with zero (a NaN is true), and floats
    /// widen exactly or narrow to nearest even.
    pub fn convert_arith(&mut self, from: Arith, bits: &[Lit], to: Arith) -> Vec<Lit> {
        match (from, to) {
            (Arith::Int(a), Arith::Int(b)) => self.convert_bits(a, bits, b),
            (Arith::Int(a), Arith::Float(f)) => {
                fp::from_int(&mut self.g, f.format(), bits, a.signed && !a.is_bool)
            }
            (Arith::Float(_), Arith::Int(t)) if t.is_bool => vec![self.float_truth(bits)],
            (Arith::Float(f), Arith::Int(t)) => {
                fp::to_int(&mut self.g, f.format(), bits, t.bits as usize, t.signed)
            }
            (Arith::Float(a), Arith::Float(b)) => {
                fp::convert(&mut self.g, a.format(), b.format(), bits)
            }
        }
    }

    /// `x != 0` for a float: any bit but the sign (zeros of both signs are false, NaNs true).
    pub fn float_truth(&mut self, bits: &[Lit]) -> Lit {
        let magnitude = &bits[..bits.len() - 1];
        blocks::or_reduce(&mut self.g, magnitude)
    }

    /// A binary operator with a floating operand: the usual arithmetic conversions, then
    /// the operator in the common floating type. `%`, shifts and bitwise operators are
    /// errors, as in C.
    pub fn float_arith(&mut self, op: BinaryOperator, l: Val, r: Val, span: Span) -> R<Val> {
        use BinaryOperator as B;
        let (la, lb) = self.arith_of(l, span)?;
        let (ra, rb) = self.arith_of(r, span)?;
        if matches!(
            op,
            B::Modulo | B::ShiftLeft | B::ShiftRight | B::BitwiseAnd | B::BitwiseOr | B::BitwiseXor
        ) {
            return self.err(
                span,
                format!(
                    "invalid operands to binary `{}` (have {} and {}): it needs integers",
                    op_text(&op),
                    la.name(),
                    ra.name()
                ),
            );
        }
        let common = Arith::common(la, ra);
        let Arith::Float(ct) = common else {
            unreachable!("a floating operand makes the common type floating")
        };
        let a = self.convert_arith(la, &lb, common);
        let b = self.convert_arith(ra, &rb, common);
        if matches!(op, B::Equals | B::NotEquals) {
            // `x == 0` is "no bit but the sign set" (NaNs are not): cheaper than the general
            // comparison with the constant folded in.
            let zero = |v: &[Lit]| v[..v.len() - 1].iter().all(|&l| l == Lit::FALSE);
            let other = if zero(&b) {
                Some(&a)
            } else if zero(&a) {
                Some(&b)
            } else {
                None
            };
            if let Some(x) = other {
                let nonzero = self.float_truth(x);
                let eq = if op == B::Equals { !nonzero } else { nonzero };
                let mut bits = vec![Lit::FALSE; 32];
                bits[0] = eq;
                return Ok(Val::Int(IntTy::INT, bits));
            }
        }
        let f = ct.format();
        let g = &mut self.g;
        let truth = match op {
            B::Plus => return Ok(Val::Float(ct, fp::add(g, f, &a, &b))),
            B::Minus => return Ok(Val::Float(ct, fp::sub(g, f, &a, &b))),
            B::Multiply => return Ok(Val::Float(ct, fp::mul(g, f, &a, &b))),
            B::Divide => return Ok(Val::Float(ct, fp::div(g, f, &a, &b))),
            // `a > b` is `b < a` also for NaNs: both false.
            B::Less => fp::lt(g, f, &a, &b),
            B::Greater => fp::lt(g, f, &b, &a),
            B::LessOrEqual => fp::le(g, f, &a, &b),
            B::GreaterOrEqual => fp::le(g, f, &b, &a),
            B::Equals => fp::eq(g, f, &a, &b),
            B::NotEquals => !fp::eq(g, f, &a, &b),
            _ => return self.err(span, "unsupported operator"),
        };
        let mut bits = vec![Lit::FALSE; 32];
        bits[0] = truth;
        Ok(Val::Int(IntTy::INT, bits))
    }

    /// A floating constant (C11 6.4.4.2): `1.5`, `1e-3`, `.5f`, `0x1.8p3`, rounded correctly
    /// to its type (`double`, or `float` with an `f`/`F` suffix).
    pub fn float_constant(&mut self, c: &Float, span: Span) -> R<Val> {
        if c.suffix.imaginary {
            return self.err(span, "imaginary constants are not supported");
        }
        let ty = match &c.suffix.format {
            FloatFormat::Float => FloatTy::Float,
            FloatFormat::Double => FloatTy::Double,
            FloatFormat::LongDouble => {
                return self.err(
                    span,
                    "a long double constant (suffix `l`/`L`) is not supported: long double is the \
                     x87 80-bit extended format, which pgc does not implement (drop the suffix for \
                     a double)",
                );
            }
            FloatFormat::TS18661Format(_) => {
                return self.err(
                    span,
                    "constants of the _FloatN/_DecimalN types are not supported",
                );
            }
        };
        let width = ty.bits();
        let bits = match c.base {
            FloatBase::Decimal => parse_decimal_float(&c.number, width),
            FloatBase::Hexadecimal => parse_hex_float(&c.number, width),
        };
        let Some(bits) = bits else {
            return self.err(
                span,
                format!("cannot read the floating constant `{}`", c.number),
            );
        };
        Ok(Val::Float(ty, self.const_bits(bits as i128, width)))
    }

    /// A call of a built-in `<math.h>` function, unless the program defines one of that
    /// name itself. The argument converts to the parameter type as with the prototype.
    pub fn call_math(&mut self, name: &str, args: &[(Val, Span)], span: Span) -> R<Option<Val>> {
        let Some((base, ty)) = math_builtin(name) else {
            return Ok(None);
        };
        if self.functions.contains_key(name) {
            return Ok(None);
        }
        let [(v, aspan)] = args else {
            return self.err(
                span,
                format!("`{name}` takes one argument, not {}", args.len()),
            );
        };
        let (from, bits) = self.arith_of(v.clone(), *aspan)?;
        let x = self.convert_arith(from, &bits, Arith::Float(ty));
        let f = ty.format();
        let g = &mut self.g;
        let out = match base {
            "sqrt" => fp::sqrt(g, f, &x),
            "fabs" => fp::abs(f, &x),
            "floor" => fp::floor(g, f, &x),
            "ceil" => fp::ceil(g, f, &x),
            "trunc" => fp::trunc(g, f, &x),
            _ => fp::nearbyint(g, f, &x),
        };
        Ok(Some(Val::Float(ty, out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_names() {
        assert_eq!(math_builtin("sqrtf"), Some(("sqrt", FloatTy::Float)));
        assert_eq!(math_builtin("fabs"), Some(("fabs", FloatTy::Double)));
        assert_eq!(math_builtin("fabsf"), Some(("fabs", FloatTy::Float)));
        assert_eq!(
            math_builtin("__builtin_floor"),
            Some(("floor", FloatTy::Double))
        );
        assert_eq!(
            math_builtin("nearbyintf"),
            Some(("nearbyint", FloatTy::Float))
        );
        assert_eq!(math_builtin("sin"), None);
        assert_eq!(math_builtin("f"), None);
        assert!(missing_math_note("sinf").is_some());
        assert!(missing_math_note("pow").is_some());
        assert!(missing_math_note("printf").is_none());
    }
}
