//! Gate emission for compilers: literals (constants or possibly-complemented wires) and the
//! [`Gates`] trait that word-level building blocks are written against.
//!
//! A [`Lit`] never costs a gate to negate: complement is a flag, materialized as an INV gate
//! only when a gate output must carry it. Constants are literals too, so constant operands
//! fold away before any gate is emitted.

use crate::ir::WireId;

/// What the building blocks minimize: AND gates (the cost in Yao) or AND depth (rounds in GMW).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum OptimizeFor {
    #[default]
    Size,
    Depth,
}

/// A Boolean signal: constant false, constant true, or wire `w` possibly complemented.
/// Encoding: 0 = false, 1 = true, `2 * (w + 1) + negated` for wires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lit(u64);

impl Lit {
    pub const FALSE: Lit = Lit(0);
    pub const TRUE: Lit = Lit(1);

    pub const fn constant(value: bool) -> Lit {
        Lit(value as u64)
    }
    pub const fn wire(w: WireId) -> Lit {
        Lit(2 * (w as u64 + 1))
    }
    /// `Some(value)` for constants.
    pub const fn as_const(self) -> Option<bool> {
        if self.0 < 2 { Some(self.0 == 1) } else { None }
    }
    /// The wire of a non-constant literal (ignoring its complement flag).
    pub const fn wire_id(self) -> Option<WireId> {
        if self.0 < 2 {
            None
        } else {
            Some((self.0 / 2 - 1) as WireId)
        }
    }
    pub const fn is_negated(self) -> bool {
        self.0 >= 2 && self.0 & 1 == 1
    }
    /// The complement (free).
    #[allow(clippy::should_implement_trait)]
    pub const fn not(self) -> Lit {
        Lit(self.0 ^ 1)
    }
    /// The literal without its complement flag (constants unchanged).
    pub const fn positive(self) -> Lit {
        if self.0 < 2 { self } else { Lit(self.0 & !1) }
    }
    /// Raw encoding, e.g. for hashing tables.
    pub const fn raw(self) -> u64 {
        self.0
    }
}

impl std::ops::Not for Lit {
    type Output = Lit;
    fn not(self) -> Lit {
        Lit(self.0 ^ 1)
    }
}

/// Anything that emits gates for the building blocks. Implementations fold constants and may
/// deduplicate; callers never assume that a call emits a gate.
pub trait Gates {
    fn xor(&mut self, a: Lit, b: Lit) -> Lit;
    fn and(&mut self, a: Lit, b: Lit) -> Lit;
    fn or(&mut self, a: Lit, b: Lit) -> Lit {
        !self.and(!a, !b)
    }
    /// `if sel { t } else { f }` with one AND.
    fn mux(&mut self, sel: Lit, t: Lit, f: Lit) -> Lit {
        let d = self.xor(t, f);
        let m = self.and(sel, d);
        self.xor(f, m)
    }
    /// Which variant of each block to build.
    fn optimize_for(&self) -> OptimizeFor {
        OptimizeFor::Size
    }
}
