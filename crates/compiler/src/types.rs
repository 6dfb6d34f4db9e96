//! C types as the compiler sees them, with gcc x86-64 sizes.

use std::rc::Rc;

use pgc_circuit::CType;
use pgc_circuit::blocks::float::Format;

/// An integer type. `_Bool` is one bit wide with `is_bool` set (its conversions differ).
///
/// Plain `char` has `is_char` set: it computes exactly as `signed char` (gcc's `char` is
/// signed on x86-64), so equality and hashing leave the flag out (a `char *` casts to
/// `signed char *`, `char` and `int8_t` mix freely, as before); it only names the port
/// type, `char` rather than `int8_t`, whose values print as characters.
#[derive(Clone, Copy, Debug)]
pub struct IntTy {
    pub bits: u32,
    pub signed: bool,
    pub is_bool: bool,
    pub is_char: bool,
}

impl PartialEq for IntTy {
    fn eq(&self, other: &IntTy) -> bool {
        (self.bits, self.signed, self.is_bool) == (other.bits, other.signed, other.is_bool)
    }
}

impl Eq for IntTy {}

impl std::hash::Hash for IntTy {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.bits, self.signed, self.is_bool).hash(state);
    }
}

impl IntTy {
    pub const INT: IntTy = IntTy {
        bits: 32,
        signed: true,
        is_bool: false,
        is_char: false,
    };
    pub const BOOL: IntTy = IntTy {
        bits: 1,
        signed: false,
        is_bool: true,
        is_char: false,
    };
    /// Plain `char`.
    pub const CHAR: IntTy = IntTy {
        bits: 8,
        signed: true,
        is_bool: false,
        is_char: true,
    };

    pub const fn new(bits: u32, signed: bool) -> IntTy {
        IntTy {
            bits,
            signed,
            is_bool: false,
            is_char: false,
        }
    }

    /// Integer promotion: everything narrower than `int` becomes `int`.
    pub fn promoted(self) -> IntTy {
        if self.bits < 32 {
            IntTy::INT
        } else {
            IntTy::new(self.bits, self.signed)
        }
    }

    /// The usual arithmetic conversions of two promoted operands (ranks follow widths, which
    /// gives gcc's results on x86-64 where `long` and `long long` are both 64 bits).
    pub fn common(a: IntTy, b: IntTy) -> IntTy {
        let (a, b) = (a.promoted(), b.promoted());
        if a.signed == b.signed {
            return IntTy::new(a.bits.max(b.bits), a.signed);
        }
        let (s, u) = if a.signed { (a, b) } else { (b, a) };
        if u.bits >= s.bits {
            IntTy::new(u.bits, false)
        } else {
            IntTy::new(s.bits, true)
        }
    }

    pub fn ctype(self) -> CType {
        if self.is_bool {
            CType::Bool
        } else if self.is_char {
            CType::CHAR
        } else {
            CType::int(self.bits, self.signed)
        }
    }

    pub fn name(self) -> String {
        if self.is_bool {
            return "_Bool".into();
        }
        let base = match self.bits {
            8 => "char",
            16 => "short",
            32 => "int",
            64 => "long",
            _ => "int",
        };
        if self.signed {
            base.into()
        } else {
            format!("unsigned {base}")
        }
    }
}

/// A floating-point type, as gcc has them on x86-64: `float` is IEEE-754 binary32, `double`
/// binary64, both evaluated in their own precision (SSE2, `FLT_EVAL_METHOD` 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatTy {
    Float,
    Double,
}

impl FloatTy {
    pub fn bits(self) -> u32 {
        match self {
            FloatTy::Float => 32,
            FloatTy::Double => 64,
        }
    }

    pub fn format(self) -> Format {
        match self {
            FloatTy::Float => Format::BINARY32,
            FloatTy::Double => Format::BINARY64,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FloatTy::Float => "float",
            FloatTy::Double => "double",
        }
    }

    pub fn ctype(self) -> CType {
        CType::Float { bits: self.bits() }
    }
}

/// The type of an arithmetic operand: an integer or a floating type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    Int(IntTy),
    Float(FloatTy),
}

impl Arith {
    /// The usual arithmetic conversions (C11 6.3.1.8): the wider floating type if either
    /// operand is floating, else the integers' common type.
    pub fn common(a: Arith, b: Arith) -> Arith {
        match (a, b) {
            (Arith::Float(FloatTy::Double), _) | (_, Arith::Float(FloatTy::Double)) => {
                Arith::Float(FloatTy::Double)
            }
            (Arith::Float(_), _) | (_, Arith::Float(_)) => Arith::Float(FloatTy::Float),
            (Arith::Int(x), Arith::Int(y)) => Arith::Int(IntTy::common(x, y)),
        }
    }

    pub fn name(self) -> String {
        match self {
            Arith::Int(t) => t.name(),
            Arith::Float(f) => f.name().into(),
        }
    }

    pub fn ty(self) -> Ty {
        match self {
            Arith::Int(t) => Ty::Int(t),
            Arith::Float(f) => Ty::Float(f),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructDef {
    pub name: String,
    /// (field name, type, bit offset within the struct's bits)
    pub fields: Vec<(String, Ty, u64)>,
    pub bits: u64,
    /// `sizeof` and `_Alignof` as gcc computes them (with padding).
    pub c_size: u64,
    pub c_align: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    Void,
    Int(IntTy),
    Float(FloatTy),
    Array(Box<Ty>, u64),
    Struct(Rc<StructDef>),
    /// Pointers exist only at compile time: they name a variable and a constant offset.
    Pointer(Box<Ty>),
}

impl Ty {
    /// Bits the value occupies in the circuit (pointers none: they are compile-time only).
    pub fn bits(&self) -> u64 {
        match self {
            Ty::Void | Ty::Pointer(_) => 0,
            Ty::Int(t) => t.bits as u64,
            Ty::Float(f) => f.bits() as u64,
            Ty::Array(e, n) => e.bits() * n,
            Ty::Struct(s) => s.bits,
        }
    }

    pub fn c_size(&self) -> u64 {
        match self {
            Ty::Void => 1,
            Ty::Int(t) => {
                if t.is_bool {
                    1
                } else {
                    t.bits as u64 / 8
                }
            }
            Ty::Float(f) => f.bits() as u64 / 8,
            Ty::Array(e, n) => e.c_size() * n,
            Ty::Struct(s) => s.c_size,
            Ty::Pointer(_) => 8,
        }
    }

    pub fn c_align(&self) -> u64 {
        match self {
            Ty::Array(e, _) => e.c_align(),
            Ty::Struct(s) => s.c_align,
            t => t.c_size().max(1),
        }
    }

    pub fn contains_pointer(&self) -> bool {
        match self {
            Ty::Pointer(_) => true,
            Ty::Array(e, _) => e.contains_pointer(),
            Ty::Struct(s) => s.fields.iter().any(|(_, t, _)| t.contains_pointer()),
            _ => false,
        }
    }

    /// The port type; `None` for types a port cannot have (pointers, void).
    pub fn ctype(&self) -> Option<CType> {
        Some(match self {
            Ty::Int(t) => t.ctype(),
            Ty::Float(f) => f.ctype(),
            Ty::Array(e, n) => CType::Array {
                elem: Box::new(e.ctype()?),
                len: u32::try_from(*n).ok()?,
            },
            Ty::Struct(s) => CType::Struct {
                name: s.name.clone(),
                fields: s
                    .fields
                    .iter()
                    .map(|(n, t, _)| Some((n.clone(), t.ctype()?)))
                    .collect::<Option<Vec<_>>>()?,
            },
            Ty::Void | Ty::Pointer(_) => return None,
        })
    }

    /// The arithmetic type of a scalar (`None` for aggregates, pointers, void).
    pub fn arith(&self) -> Option<Arith> {
        match self {
            Ty::Int(t) => Some(Arith::Int(*t)),
            Ty::Float(f) => Some(Arith::Float(*f)),
            _ => None,
        }
    }

    pub fn name(&self) -> String {
        match self {
            Ty::Void => "void".into(),
            Ty::Int(t) => t.name(),
            Ty::Float(f) => f.name().into(),
            Ty::Array(e, n) => format!("{}[{n}]", e.name()),
            Ty::Struct(s) => format!("struct {}", s.name),
            Ty::Pointer(t) => format!("{} *", t.name()),
        }
    }
}

/// Lays out a struct's fields: bit offsets for the circuit, byte size/alignment for `sizeof`.
pub fn make_struct(name: String, fields: Vec<(String, Ty)>) -> StructDef {
    let mut bits = 0;
    let mut size = 0u64;
    let mut align = 1u64;
    let mut out = Vec::with_capacity(fields.len());
    for (n, t) in fields {
        let a = t.c_align();
        align = align.max(a);
        size = size.div_ceil(a) * a + t.c_size();
        out.push((n, t.clone(), bits));
        bits += t.bits();
    }
    StructDef {
        name,
        fields: out,
        bits,
        c_size: size.div_ceil(align) * align,
        c_align: align,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usual_arithmetic_conversions_match_x86_64() {
        let u32_ = IntTy::new(32, false);
        let i64_ = IntTy::new(64, true);
        let u64_ = IntTy::new(64, false);
        let i8_ = IntTy::new(8, true);
        assert_eq!(IntTy::common(i8_, i8_), IntTy::INT);
        assert_eq!(IntTy::common(IntTy::INT, u32_), u32_);
        assert_eq!(IntTy::common(u32_, i64_), i64_);
        assert_eq!(IntTy::common(i64_, u64_), u64_);
        assert_eq!(IntTy::common(IntTy::BOOL, IntTy::BOOL), IntTy::INT);
        let (f, d) = (Arith::Float(FloatTy::Float), Arith::Float(FloatTy::Double));
        assert_eq!(Arith::common(Arith::Int(u64_), f), f);
        assert_eq!(Arith::common(f, d), d);
        assert_eq!(Arith::common(Arith::Int(i8_), d), d);
        assert_eq!(
            Arith::common(Arith::Int(i8_), Arith::Int(u32_)),
            Arith::Int(u32_)
        );
    }

    #[test]
    fn struct_sizes_include_padding() {
        let s = make_struct(
            "s".into(),
            vec![
                ("c".into(), Ty::Int(IntTy::new(8, true))),
                ("x".into(), Ty::Int(IntTy::new(64, true))),
            ],
        );
        assert_eq!((s.c_size, s.c_align, s.bits), (16, 8, 72));
    }
}
