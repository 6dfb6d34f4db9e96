//! Named, typed inputs and outputs of a compiled circuit (what `pgc compile` records so that
//! `run`/`local`/`eval` take `name=value` inputs and print typed outputs).
//!
//! Port `i` of [`Interface::inputs`] is input value `i` of the circuit's [`Layout`]
//! (`layout.input_widths[i] == inputs[i].ctype.bit_width()`), and likewise for outputs.
//! Bits of a port: scalars least significant bit first (a `float`/`double` is its IEEE-754
//! encoding, so the sign is the last bit); arrays element 0 first (row-major for more
//! dimensions); struct fields in declaration order; `_Bool` one bit.
//!
//! [`Layout`]: crate::ir::Layout

use serde::{Deserialize, Serialize};

use crate::value::BitOrder;

/// A C type as far as ports need it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CType {
    /// `_Bool`/`bool`: one bit, value 0 or 1.
    Bool,
    /// Integer types, named by their `stdint.h` names (`int` is `int32_t`, `unsigned char`
    /// `uint8_t`). Plain `char` is `Int { bits: 8, signed: true, char: true }` (signed, as on
    /// x86-64): the same bits as `int8_t`, but C's character type, so it is named `char` and
    /// its values print as characters and text. (`signed char` and `unsigned char` are what
    /// `int8_t` and `uint8_t` are in every C library: small integers, shown as such.)
    Int {
        bits: u32,
        signed: bool,
        /// Plain `char`. Left out of the JSON form when false, so that interfaces without
        /// a `char` are written as before and files from before `char` existed read as
        /// they always did; a reader that predates it ignores it (and shows `int8_t`).
        #[serde(default, skip_serializing_if = "is_false")]
        char: bool,
    },
    /// IEEE-754 binary floating point: `float` (32 bits, binary32) or `double` (64 bits,
    /// binary64), the bits of the value's encoding (sign at the top).
    Float {
        bits: u32,
    },
    Array {
        elem: Box<CType>,
        len: u32,
    },
    Struct {
        name: String,
        fields: Vec<(String, CType)>,
    },
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl CType {
    /// Plain `char`.
    pub const CHAR: CType = CType::Int {
        bits: 8,
        signed: true,
        char: true,
    };

    /// The integer type of `bits` bits (not `char`).
    pub const fn int(bits: u32, signed: bool) -> CType {
        CType::Int {
            bits,
            signed,
            char: false,
        }
    }

    /// Whether this is plain `char` (a `char` flag on any other integer, which only a
    /// crafted file can hold, is ignored here and refused by the interface check).
    pub fn is_char(&self) -> bool {
        matches!(
            self,
            CType::Int {
                bits: 8,
                signed: true,
                char: true
            }
        )
    }

    /// Bits this type occupies in a port; `u64::MAX` for a (crafted) type wider than that,
    /// which no circuit layout matches (see [`checked_bit_width`](CType::checked_bit_width)).
    pub fn bit_width(&self) -> u64 {
        self.checked_bit_width().unwrap_or(u64::MAX)
    }

    /// Bits this type occupies in a port, or `None` if the count does not fit in a `u64`
    /// (array lengths multiply: three nested `[4294967295]` dimensions already overflow).
    pub fn checked_bit_width(&self) -> Option<u64> {
        match self {
            CType::Bool => Some(1),
            CType::Int { bits, .. } | CType::Float { bits } => Some(*bits as u64),
            CType::Array { elem, len } => elem.checked_bit_width()?.checked_mul(*len as u64),
            CType::Struct { fields, .. } => fields
                .iter()
                .try_fold(0u64, |sum, (_, t)| sum.checked_add(t.checked_bit_width()?)),
        }
    }

    /// The widest integer inside this type (0 if it has none), for the check that every
    /// integer can be parsed and printed.
    pub fn widest_int(&self) -> u32 {
        match self {
            CType::Bool | CType::Float { .. } => 0,
            CType::Int { bits, .. } => *bits,
            CType::Array { elem, .. } => elem.widest_int(),
            CType::Struct { fields, .. } => fields
                .iter()
                .map(|(_, t)| t.widest_int())
                .max()
                .unwrap_or(0),
        }
    }

    /// The type as C would spell it (`int32_t`-style names for integers, `char` for plain
    /// `char`, `float`/`double`, `T[n]` for arrays).
    pub fn c_name(&self) -> String {
        match self {
            CType::Bool => "_Bool".into(),
            t if t.is_char() => "char".into(),
            CType::Int { bits, signed, .. } => {
                format!("{}int{bits}_t", if *signed { "" } else { "u" })
            }
            CType::Float { bits: 32 } => "float".into(),
            CType::Float { bits: 64 } => "double".into(),
            CType::Float { bits } => format!("float{bits}_t"),
            CType::Array { elem, len } => {
                let mut dims = vec![*len];
                let mut base = elem.as_ref();
                while let CType::Array { elem, len } = base {
                    dims.push(*len);
                    base = elem;
                }
                let dims: String = dims.iter().map(|d| format!("[{d}]")).collect();
                format!("{}{dims}", base.c_name())
            }
            CType::Struct { name, .. } => format!("struct {name}"),
        }
    }
}

/// Who provides an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Owner {
    A,
    B,
}

/// Who learns an output: `OUTPUT_` both, `OUTPUT_A_` only A, `OUTPUT_B_` only B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Visibility {
    Both,
    A,
    B,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InputPort {
    /// The variable's name as written, e.g. `INPUT_A_income`.
    pub name: String,
    pub owner: Owner,
    pub ctype: CType,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OutputPort {
    /// The variable's name as written, e.g. `OUTPUT_result`.
    pub name: String,
    pub visibility: Visibility,
    pub ctype: CType,
}

/// The typed interface of a compiled circuit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Interface {
    pub inputs: Vec<InputPort>,
    pub outputs: Vec<OutputPort>,
}

/// How the parties read input values and print output values: what both must agree on
/// besides the gates. Two parties running the same gates but reading a value's bits in
/// another order, or as another C type, compute the same bits and print different values;
/// the protocols' handshake compares this (see `GateSource::value_format`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum ValueFormat {
    /// Not stated: the caller handles the bits itself.
    #[default]
    Bits,
    /// Untyped values (Bristol and built-in circuits), read and printed as numbers in this
    /// bit order.
    Untyped(BitOrder),
    /// A compiled program's typed values: every port's name and C type spelled in full
    /// (struct fields included), inputs then outputs.
    Typed(Vec<(String, String)>),
}

impl ValueFormat {
    /// The typed format of a program's interface.
    pub fn typed(iface: &Interface) -> ValueFormat {
        let inputs = iface.inputs.iter().map(|p| (&p.name, &p.ctype));
        let outputs = iface.outputs.iter().map(|p| (&p.name, &p.ctype));
        ValueFormat::Typed(
            inputs
                .chain(outputs)
                .map(|(name, t)| (name.clone(), t.full_name()))
                .collect(),
        )
    }
}

impl CType {
    /// The type in full: as [`c_name`](CType::c_name), with a struct's fields spelled out
    /// (`struct point { int32_t x; int32_t y; }`), so that two different types never share
    /// a name.
    pub fn full_name(&self) -> String {
        let (base, dims) = self.base_and_dims();
        format!("{base}{dims}")
    }

    /// The element type in full and the array dimensions (`[3][4]`, empty for scalars).
    fn base_and_dims(&self) -> (String, String) {
        let mut dims = String::new();
        let mut base = self;
        while let CType::Array { elem, len } = base {
            dims.push_str(&format!("[{len}]"));
            base = elem;
        }
        let base = match base {
            CType::Struct { name, fields } => {
                let fields: String = fields
                    .iter()
                    .map(|(f, t)| {
                        // Arrays put their dimensions after the field name, as C does.
                        let (base, dims) = t.base_and_dims();
                        format!(" {base} {f}{dims};")
                    })
                    .collect();
                format!("struct {name} {{{fields} }}")
            }
            other => other.c_name(),
        };
        (base, dims)
    }
}

impl InputPort {
    /// The name without its `INPUT_A_`/`INPUT_B_` prefix (what users type).
    pub fn short_name(&self) -> &str {
        self.name
            .strip_prefix("INPUT_A_")
            .or_else(|| self.name.strip_prefix("INPUT_B_"))
            .unwrap_or(&self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_names_tell_every_type_apart() {
        let i32t = CType::int(32, true);
        let u8t = CType::int(8, false);
        let point = |y: CType| CType::Struct {
            name: "point".into(),
            fields: vec![
                ("x".into(), i32t.clone()),
                (
                    "y".into(),
                    CType::Array {
                        elem: Box::new(y),
                        len: 4,
                    },
                ),
            ],
        };
        assert_eq!(
            point(u8t.clone()).full_name(),
            "struct point { int32_t x; uint8_t y[4]; }"
        );
        // Same C name, other fields: other full names.
        assert_eq!(point(u8t.clone()).c_name(), point(i32t.clone()).c_name());
        assert_ne!(
            point(u8t.clone()).full_name(),
            point(i32t.clone()).full_name()
        );
        let grid = CType::Array {
            elem: Box::new(CType::Array {
                elem: Box::new(point(u8t.clone())),
                len: 3,
            }),
            len: 2,
        };
        assert_eq!(
            grid.full_name(),
            "struct point { int32_t x; uint8_t y[4]; }[2][3]"
        );
        // Plain `char` is named apart from `int8_t`, which has the same bits.
        let person = CType::Struct {
            name: "person".into(),
            fields: vec![
                (
                    "name".into(),
                    CType::Array {
                        elem: Box::new(CType::CHAR),
                        len: 8,
                    },
                ),
                ("grade".into(), CType::CHAR),
                ("age".into(), CType::int(8, true)),
            ],
        };
        assert_eq!(
            person.full_name(),
            "struct person { char name[8]; char grade; int8_t age; }"
        );
        assert_eq!(CType::CHAR.bit_width(), 8);
        assert_ne!(CType::CHAR.full_name(), CType::int(8, true).full_name());
        let iface = Interface {
            inputs: vec![InputPort {
                name: "INPUT_B_x".into(),
                owner: Owner::B,
                ctype: i32t.clone(),
            }],
            outputs: vec![OutputPort {
                name: "OUTPUT_y".into(),
                visibility: Visibility::Both,
                ctype: CType::Bool,
            }],
        };
        assert_eq!(
            ValueFormat::typed(&iface),
            ValueFormat::Typed(vec![
                ("INPUT_B_x".into(), "int32_t".into()),
                ("OUTPUT_y".into(), "_Bool".into()),
            ])
        );
    }
}
