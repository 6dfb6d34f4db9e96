//! Named, typed inputs and outputs of a compiled circuit (what `pgc compile` records so that
//! `run`/`local`/`eval` take `name=value` inputs and print typed outputs).
//!
//! Port `i` of [`Interface::inputs`] is input value `i` of the circuit's [`Layout`]
//! (`layout.input_widths[i] == inputs[i].ctype.bit_width()`), and likewise for outputs.
//! Bits of a port: scalars least significant bit first; arrays element 0 first (row-major for
//! more dimensions); struct fields in declaration order; `_Bool` one bit.
//!
//! [`Layout`]: crate::ir::Layout

use serde::{Deserialize, Serialize};

/// A C type as far as ports need it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CType {
    /// `_Bool`/`bool`: one bit, value 0 or 1.
    Bool,
    /// Integer types: `char` is `Int { bits: 8, signed: true }` as on x86-64.
    Int {
        bits: u32,
        signed: bool,
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

impl CType {
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
            CType::Int { bits, .. } => Some(*bits as u64),
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
            CType::Bool => 0,
            CType::Int { bits, .. } => *bits,
            CType::Array { elem, .. } => elem.widest_int(),
            CType::Struct { fields, .. } => fields
                .iter()
                .map(|(_, t)| t.widest_int())
                .max()
                .unwrap_or(0),
        }
    }

    /// The type as C would spell it (`int32_t`-style names for integers, `T[n]` for arrays).
    pub fn c_name(&self) -> String {
        match self {
            CType::Bool => "_Bool".into(),
            CType::Int { bits, signed } => format!("{}int{bits}_t", if *signed { "" } else { "u" }),
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

impl InputPort {
    /// The name without its `INPUT_A_`/`INPUT_B_` prefix (what users type).
    pub fn short_name(&self) -> &str {
        self.name
            .strip_prefix("INPUT_A_")
            .or_else(|| self.name.strip_prefix("INPUT_B_"))
            .unwrap_or(&self.name)
    }
}
