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
            // The value of a bit-field: an integer of its width.
            w => {
                let sign = if self.signed { "" } else { "unsigned " };
                return format!("{sign}int : {w}");
            }
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

/// A struct or a union.
///
/// In the circuit a struct's members lie one after the other without padding (`fields`' bit
/// offsets), a bit-field in exactly its width; `image_offsets` says where gcc puts each
/// member in memory (padding, storage units of bit-fields), for `sizeof` and for unions.
/// A union's members all lie at offset 0 of its `c_size * 8` bits, which are its bytes as
/// gcc stores them: every member's circuit layout is its memory image (see
/// [`Ty::image_exact`]), so reading a member reinterprets the bits another wrote, as gcc does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructDef {
    pub name: String,
    pub is_union: bool,
    /// (field name, type, bit offset within the struct's bits); a bit-field has an integer
    /// type of its width.
    pub fields: Vec<(String, Ty, u64)>,
    /// Per field: its bit offset in gcc's memory layout.
    pub image_offsets: Vec<u64>,
    /// Per field: whether it is a bit-field (its address cannot be taken, nor its size).
    pub bit_field: Vec<bool>,
    pub bits: u64,
    /// `sizeof` and `_Alignof` as gcc computes them (with padding).
    pub c_size: u64,
    pub c_align: u64,
}

impl StructDef {
    /// `struct` or `union`.
    pub fn keyword(&self) -> &'static str {
        if self.is_union { "union" } else { "struct" }
    }

    pub fn has_bit_fields(&self) -> bool {
        self.bit_field.iter().any(|&b| b)
    }
}

/// A member as declared: `name` (none for an unnamed bit-field), type, and the width of a
/// bit-field (`Some(0)` for `int : 0`).
pub struct FieldDecl {
    pub name: Option<String>,
    pub ty: Ty,
    pub width: Option<u32>,
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
            // The value of a bit-field wider than `int` (`s.x - 1` for `unsigned long x :
            // 40`) has a type of its width, whose size is that of the declared type.
            Ty::Int(t) => (t.bits as u64).div_ceil(8).next_power_of_two(),
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

    /// Whether the circuit holds this type's bits where gcc's memory holds them (bit `k` of
    /// the circuit value is bit `k` of its bytes, little-endian), up to the end of the
    /// circuit value (padding after it is fine): what a union member needs for reading it
    /// after another member was written to give gcc's bits. `_Bool` (one bit in the
    /// circuit, a byte in memory) and padding between members are not.
    pub fn image_exact(&self) -> bool {
        match self {
            Ty::Int(t) => !t.is_bool,
            Ty::Float(_) => true,
            Ty::Array(e, n) => e.image_exact() && (*n <= 1 || e.bits() == e.c_size() * 8),
            // A bit-field, `_Bool b : 1` too, is its bits wherever it lies.
            Ty::Struct(s) => s.fields.iter().zip(&s.image_offsets).zip(&s.bit_field).all(
                |(((_, t, off), image), &bit_field)| off == image && (bit_field || t.image_exact()),
            ),
            Ty::Void | Ty::Pointer(_) => false,
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
            // A union is its bytes (the port says nothing of which member was written).
            Ty::Struct(s) if s.is_union => CType::Array {
                elem: Box::new(CType::int(8, false)),
                len: u32::try_from(s.c_size).ok()?,
            },
            // A bit-field has no port type of its width.
            Ty::Struct(s) if s.has_bit_fields() => return None,
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
            Ty::Struct(s) => format!("{} {}", s.keyword(), s.name),
            Ty::Pointer(t) => format!("{} *", t.name()),
        }
    }
}

/// Lays out a struct's fields: bit offsets for the circuit, byte size/alignment for `sizeof`
/// (no bit-fields).
#[cfg(test)]
pub fn make_struct(name: String, fields: Vec<(String, Ty)>) -> StructDef {
    let fields = fields
        .into_iter()
        .map(|(n, ty)| FieldDecl {
            name: Some(n),
            ty,
            width: None,
        })
        .collect();
    layout_record(name, false, fields)
}

/// Lays out a struct's or union's members as gcc does on x86-64 (the System V ABI): a member
/// at the next multiple of its alignment; a bit-field in the next bits unless they would
/// cross a boundary of its declared type's size (then from that boundary), `T : 0` moving on
/// to the next such boundary; a named bit-field aligns the whole as its declared type does,
/// an unnamed one does not. Union members all start at 0. Unnamed bit-fields take space but
/// are no members.
pub fn layout_record(name: String, is_union: bool, decls: Vec<FieldDecl>) -> StructDef {
    let mut bits = 0;
    let mut image_end = 0u64; // in bits, the end of the last member in memory
    let mut align = 1u64;
    let mut fields = Vec::with_capacity(decls.len());
    let mut image_offsets = Vec::with_capacity(decls.len());
    let mut bit_field = Vec::with_capacity(decls.len());
    for FieldDecl { name, ty, width } in decls {
        let at = if is_union { 0 } else { image_end };
        let (image, end) = match width {
            Some(w) => {
                let unit = ty.c_size() * 8;
                let w = w as u64;
                let start = if w == 0 {
                    at.div_ceil(unit) * unit
                } else if at / unit != (at + w - 1) / unit {
                    (at / unit + 1) * unit
                } else {
                    at
                };
                if name.is_some() {
                    align = align.max(ty.c_align());
                }
                (start, start + w)
            }
            None => {
                let a = ty.c_align();
                align = align.max(a);
                let start = at.div_ceil(a * 8) * a * 8;
                (start, start + ty.c_size() * 8)
            }
        };
        image_end = if is_union { image_end.max(end) } else { end };
        let Some(name) = name else { continue };
        let ty = match (width, ty) {
            (Some(w), Ty::Int(t)) if !t.is_bool => Ty::Int(IntTy::new(w, t.signed)),
            (_, ty) => ty,
        };
        fields.push((name, ty.clone(), if is_union { 0 } else { bits }));
        image_offsets.push(image);
        bit_field.push(width.is_some());
        bits = if is_union {
            bits.max(ty.bits())
        } else {
            bits + ty.bits()
        };
    }
    let c_size = image_end.div_ceil(8).div_ceil(align) * align;
    StructDef {
        name,
        is_union,
        fields,
        image_offsets,
        bit_field,
        // A union is its bytes.
        bits: if is_union { c_size * 8 } else { bits },
        c_size,
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

    fn bit_field(name: Option<&str>, bits: u32, signed: bool, width: u32) -> FieldDecl {
        FieldDecl {
            name: name.map(str::to_string),
            ty: Ty::Int(IntTy::new(bits, signed)),
            width: Some(width),
        }
    }

    /// Sizes and offsets as gcc 12 prints them on x86-64 for the same declarations.
    #[test]
    fn bit_fields_are_laid_out_as_gcc_does() {
        // struct { unsigned a:3; int b:5; unsigned char c; int :0; short d:4; }: 8 bytes.
        let s = layout_record(
            "s".into(),
            false,
            vec![
                bit_field(Some("a"), 32, false, 3),
                bit_field(Some("b"), 32, true, 5),
                FieldDecl {
                    name: Some("c".into()),
                    ty: Ty::Int(IntTy::new(8, false)),
                    width: None,
                },
                bit_field(None, 32, true, 0),
                bit_field(Some("d"), 16, true, 4),
            ],
        );
        assert_eq!((s.c_size, s.c_align), (8, 4));
        assert_eq!(s.image_offsets, vec![0, 3, 8, 32]);
        assert_eq!(s.bits, 3 + 5 + 8 + 4);
        // struct { char a; long b:4; }: 8 bytes, aligned 8; struct { char a; int :4; }: 2
        // bytes, aligned 1 (an unnamed bit-field does not align the struct).
        let char_field = || FieldDecl {
            name: Some("a".into()),
            ty: Ty::Int(IntTy::CHAR),
            width: None,
        };
        let v = layout_record(
            "v".into(),
            false,
            vec![char_field(), bit_field(Some("b"), 64, true, 4)],
        );
        assert_eq!((v.c_size, v.c_align, v.image_offsets[1]), (8, 8, 8));
        let u = layout_record(
            "u".into(),
            false,
            vec![char_field(), bit_field(None, 32, true, 4)],
        );
        assert_eq!((u.c_size, u.c_align), (2, 1));
        // A bit-field that would cross its type's boundary starts at the next one.
        let x = layout_record(
            "x".into(),
            false,
            vec![
                bit_field(Some("a"), 16, false, 10),
                bit_field(Some("b"), 16, false, 10),
            ],
        );
        assert_eq!((x.c_size, x.image_offsets[1]), (4, 16));
        // union { char c[5]; int i; }: 8 bytes, all of them in the circuit.
        let w = layout_record(
            "w".into(),
            true,
            vec![
                FieldDecl {
                    name: Some("c".into()),
                    ty: Ty::Array(Box::new(Ty::Int(IntTy::CHAR)), 5),
                    width: None,
                },
                FieldDecl {
                    name: Some("i".into()),
                    ty: Ty::Int(IntTy::INT),
                    width: None,
                },
            ],
        );
        assert_eq!((w.c_size, w.c_align, w.bits), (8, 4, 64));
    }
}
