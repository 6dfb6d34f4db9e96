//! Core data types: gates, layouts, circuits, and the streaming [`GateSource`] interface
//! that the garbler, evaluator and protocol consume.

use std::ops::Range;

use crate::ports::ValueFormat;

/// Index of a wire (or of a reusable wire slot). `u32` keeps a gate record at 16 bytes.
pub type WireId = u32;

/// Gate operation. AND is the only non-free gate in garbling (free-XOR, free INV).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Op {
    /// `out = a ^ b`
    Xor = 0,
    /// `out = a & b`
    And = 1,
    /// `out = !a` (`b` unused, 0)
    Inv = 2,
    /// `out = a` (Bristol `EQW`; `b` unused, 0)
    Copy = 3,
    /// `out = constant` where the constant is the field `a` (0 or 1; Bristol `EQ`; `b` unused, 0)
    Const = 4,
}

impl Op {
    /// Canonical Bristol name.
    pub fn name(self) -> &'static str {
        match self {
            Op::Xor => "XOR",
            Op::And => "AND",
            Op::Inv => "INV",
            Op::Copy => "EQW",
            Op::Const => "EQ",
        }
    }
}

/// One gate: 16 bytes. For `Const`, `a` holds the constant bit, not a wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct Gate {
    pub op: Op,
    pub a: WireId,
    pub b: WireId,
    pub out: WireId,
}

impl Gate {
    pub const fn and(a: WireId, b: WireId, out: WireId) -> Gate {
        Gate {
            op: Op::And,
            a,
            b,
            out,
        }
    }
    pub const fn xor(a: WireId, b: WireId, out: WireId) -> Gate {
        Gate {
            op: Op::Xor,
            a,
            b,
            out,
        }
    }
    pub const fn inv(a: WireId, out: WireId) -> Gate {
        Gate {
            op: Op::Inv,
            a,
            b: 0,
            out,
        }
    }
    pub const fn copy(a: WireId, out: WireId) -> Gate {
        Gate {
            op: Op::Copy,
            a,
            b: 0,
            out,
        }
    }
    pub const fn constant(value: bool, out: WireId) -> Gate {
        Gate {
            op: Op::Const,
            a: value as WireId,
            b: 0,
            out,
        }
    }

    /// The wires this gate reads (none for constants, one for INV/copy, two otherwise).
    pub fn inputs(&self) -> &[WireId] {
        match self.op {
            Op::And | Op::Xor => self.two_inputs(),
            Op::Inv | Op::Copy => std::slice::from_ref(&self.a),
            Op::Const => &[],
        }
    }

    fn two_inputs(&self) -> &[WireId] {
        // SAFETY: `Gate` is `repr(C)` with `a: u32` immediately followed by `b: u32` (both
        // 4-byte aligned, no padding between them), so the two fields form a `[u32; 2]`
        // that lives as long as `self`.
        unsafe { std::slice::from_raw_parts(&self.a as *const WireId, 2) }
    }

    /// Canonical 13-byte encoding (op, a, b, out little-endian), used for fingerprints and
    /// pgc's binary format so that padding never leaks into either.
    pub fn to_bytes(&self) -> [u8; 13] {
        let mut out = [0u8; 13];
        out[0] = self.op as u8;
        out[1..5].copy_from_slice(&self.a.to_le_bytes());
        out[5..9].copy_from_slice(&self.b.to_le_bytes());
        out[9..13].copy_from_slice(&self.out.to_le_bytes());
        out
    }
}

/// Everything about a circuit except its gates: wire count, input and output values.
///
/// Input value `i` occupies wires `input_range(i)` (consecutive, starting at wire 0).
/// Output value `j` is the wires `output_wires_of(j)`, in the value's bit order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Layout {
    /// Number of wire ids (or slots) in use: every gate's wires are `< num_wires`.
    pub num_wires: u32,
    /// Width in bits of each input value.
    pub input_widths: Vec<u32>,
    /// Width in bits of each output value.
    pub output_widths: Vec<u32>,
    /// The wires holding the outputs, `sum(output_widths)` of them, value by value.
    pub output_wires: Vec<WireId>,
}

impl Layout {
    /// The input wires: the sum of the input widths. Saturates at `u32::MAX` for a layout
    /// whose widths add up to more (every reader refuses such a layout: its inputs would
    /// not fit in `num_wires`).
    pub fn num_input_wires(&self) -> u32 {
        saturating_sum(&self.input_widths)
    }
    /// The output wires: the sum of the output widths (saturating as
    /// [`num_input_wires`](Layout::num_input_wires)).
    pub fn num_output_wires(&self) -> u32 {
        saturating_sum(&self.output_widths)
    }
    /// Wires of input value `i`.
    pub fn input_range(&self, i: usize) -> Range<WireId> {
        let start = saturating_sum(&self.input_widths[..i]);
        start..start.saturating_add(self.input_widths[i])
    }
    /// Wires of output value `j`.
    ///
    /// # Panics
    /// If the layout lists fewer output wires than its widths add up to (readers and
    /// builders never produce such a layout).
    pub fn output_wires_of(&self, j: usize) -> &[WireId] {
        let start = saturating_sum(&self.output_widths[..j]) as usize;
        &self.output_wires[start..start + self.output_widths[j] as usize]
    }
    /// Canonical bytes for fingerprints.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        let mut put = |x: u32| v.extend_from_slice(&x.to_le_bytes());
        put(self.num_wires);
        put(self.input_widths.len() as u32);
        self.input_widths.iter().for_each(|&w| put(w));
        put(self.output_widths.len() as u32);
        self.output_widths.iter().for_each(|&w| put(w));
        self.output_wires.iter().for_each(|&w| put(w));
        v
    }
}

/// The sum of `widths`, at most `u32::MAX`.
fn saturating_sum(widths: &[u32]) -> u32 {
    let sum: u64 = widths.iter().map(|&w| w as u64).sum();
    u32::try_from(sum).unwrap_or(u32::MAX)
}

/// A circuit held in memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Circuit {
    pub layout: Layout,
    pub gates: Vec<Gate>,
}

/// How many gates [`Circuit`]'s [`GateSource`] implementation hands out per chunk.
pub const CHUNK_GATES: usize = 1 << 14;

/// A stream of gates with a fixed layout, consumed chunk by chunk so that a circuit never
/// has to be held whole (files, generators and compact circuits all implement it).
///
/// Both parties of a protocol build the same source and must see the same gate sequence;
/// the [`fingerprint`](GateSource::fingerprint) lets them check that at the handshake.
pub trait GateSource: Sync {
    fn layout(&self) -> &Layout;
    fn gate_count(&self) -> u64;
    fn and_count(&self) -> u64;
    /// 32-byte digest identifying layout and gate sequence.
    fn fingerprint(&self) -> [u8; 32];
    /// Calls `f` on consecutive chunks of gates, in order, until the stream ends or `f`
    /// fails. Chunk boundaries carry no meaning.
    fn for_each_chunk<E>(&self, f: &mut dyn FnMut(&[Gate]) -> Result<(), E>) -> Result<(), E>;
    /// Whether the last [`for_each_chunk`](GateSource::for_each_chunk) pass handed out the
    /// whole, unaltered gate sequence as far as the source itself can tell. Sources held in
    /// memory or generated are always complete; a file-backed source whose re-read failed,
    /// stopped early or found the file changed returns the cause. The protocols call it after
    /// the last garbled table and before any output is revealed (and also compare the gate
    /// and AND counts actually processed with [`gate_count`](GateSource::gate_count) and
    /// [`and_count`](GateSource::and_count)).
    fn check_complete(&self) -> Result<(), String> {
        Ok(())
    }
    /// How values of this circuit are read and printed, which both parties must agree on
    /// besides the gates (compared at the protocols' handshake). Plain circuits leave it to
    /// the caller ([`ValueFormat::Bits`]); wrap a source in [`WithValueFormat`] to state it.
    fn value_format(&self) -> ValueFormat {
        ValueFormat::Bits
    }
    /// A compact circuit's templates and main body as items, for garbling its calls on
    /// several threads (`pgc_garble::compact`); `None` for every other source. The items
    /// expand to exactly the gates [`for_each_chunk`](GateSource::for_each_chunk) hands out.
    fn compact_parts(&self) -> Option<crate::compact::CompactParts<'_>> {
        None
    }
    /// How this source holds the circuit. The same program in two forms has two
    /// fingerprints, so the handshake states the form too and a mismatch can name its cause
    /// (one side `--parallel cgp`, the other `none`; `--stream` on one side only).
    fn form(&self) -> CircuitForm {
        CircuitForm::Gates
    }
}

/// How a [`GateSource`] holds its circuit (see [`GateSource::form`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CircuitForm {
    /// A gate list in memory, in the order the sequential protocol runs it.
    Gates = 0,
    /// An unrolled `.pgc` file read gate by gate from disk (`--stream`).
    Streamed = 1,
    /// Templates and calls expanded while running (a compact `.pgc` or compilation).
    Compact = 2,
    /// Phases and regions for a parallel mode (`--parallel cgp`, `fgp` or `ipp`).
    Parallel = 3,
    /// A circuit generated from its parameters (`builtin:random:…`).
    Generated = 4,
}

impl CircuitForm {
    pub fn from_byte(b: u8) -> Option<CircuitForm> {
        Some(match b {
            0 => CircuitForm::Gates,
            1 => CircuitForm::Streamed,
            2 => CircuitForm::Compact,
            3 => CircuitForm::Parallel,
            4 => CircuitForm::Generated,
            _ => return None,
        })
    }

    /// Says what the form is and which options lead to it, for a mismatch error.
    pub fn describe(self) -> &'static str {
        match self {
            CircuitForm::Gates => "a gate list for the sequential protocol (--parallel none)",
            CircuitForm::Streamed => "an unrolled .pgc file streamed from disk (--stream)",
            CircuitForm::Compact => "a compact circuit (templates and calls)",
            CircuitForm::Parallel => "phases and regions for --parallel cgp, fgp or ipp",
            CircuitForm::Generated => "a generated circuit (builtin:random)",
        }
    }
}

/// A gate source with its [`ValueFormat`] stated; everything else is the inner source's.
pub struct WithValueFormat<'a, S: GateSource + ?Sized> {
    pub inner: &'a S,
    pub format: ValueFormat,
}

impl<'a, S: GateSource + ?Sized> WithValueFormat<'a, S> {
    pub fn new(inner: &'a S, format: ValueFormat) -> Self {
        WithValueFormat { inner, format }
    }
}

impl<S: GateSource + ?Sized> GateSource for WithValueFormat<'_, S> {
    fn layout(&self) -> &Layout {
        self.inner.layout()
    }
    fn gate_count(&self) -> u64 {
        self.inner.gate_count()
    }
    fn and_count(&self) -> u64 {
        self.inner.and_count()
    }
    fn fingerprint(&self) -> [u8; 32] {
        self.inner.fingerprint()
    }
    fn for_each_chunk<E>(&self, f: &mut dyn FnMut(&[Gate]) -> Result<(), E>) -> Result<(), E> {
        self.inner.for_each_chunk(f)
    }
    fn check_complete(&self) -> Result<(), String> {
        self.inner.check_complete()
    }
    fn value_format(&self) -> ValueFormat {
        self.format.clone()
    }
    fn compact_parts(&self) -> Option<crate::compact::CompactParts<'_>> {
        self.inner.compact_parts()
    }
    fn form(&self) -> CircuitForm {
        self.inner.form()
    }
}

/// Feeds gates to a fingerprint hasher as their 13-byte encodings, exactly as one
/// `update(&g.to_bytes())` per gate would (BLAKE3's digest does not depend on how its
/// input is split), but in 64 KiB pieces: one small update per gate made hashing a 25 M-gate
/// circuit take ≈ 0.3 s, most of a run's start.
pub fn hash_gates(h: &mut blake3::Hasher, gates: &[Gate]) {
    const PER_PIECE: usize = 5041; // 5041 × 13 bytes ≈ 64 KiB
    let mut buf = Vec::with_capacity(PER_PIECE * 13);
    for piece in gates.chunks(PER_PIECE) {
        buf.clear();
        for g in piece {
            buf.extend_from_slice(&g.to_bytes());
        }
        h.update(&buf);
    }
}

impl Circuit {
    pub fn and_count(&self) -> u64 {
        self.gates.iter().filter(|g| g.op == Op::And).count() as u64
    }
}

impl GateSource for Circuit {
    fn layout(&self) -> &Layout {
        &self.layout
    }
    fn gate_count(&self) -> u64 {
        self.gates.len() as u64
    }
    fn and_count(&self) -> u64 {
        Circuit::and_count(self)
    }
    fn fingerprint(&self) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(b"pgc circuit v1\0");
        h.update(&self.layout.to_bytes());
        h.update(&(self.gates.len() as u64).to_le_bytes());
        hash_gates(&mut h, &self.gates);
        *h.finalize().as_bytes()
    }
    fn for_each_chunk<E>(&self, f: &mut dyn FnMut(&[Gate]) -> Result<(), E>) -> Result<(), E> {
        self.gates.chunks(CHUNK_GATES).try_for_each(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffered_gate_hash_equals_one_update_per_gate() {
        // More gates than one piece, and a partial last piece.
        let gates: Vec<Gate> = (0..12_000u32)
            .map(|i| match i % 3 {
                0 => Gate::and(i, i + 1, i + 2),
                1 => Gate::xor(i / 2, i, i + 2),
                _ => Gate::inv(i, i + 2),
            })
            .collect();
        let mut one_by_one = blake3::Hasher::new();
        for g in &gates {
            one_by_one.update(&g.to_bytes());
        }
        let mut buffered = blake3::Hasher::new();
        hash_gates(&mut buffered, &gates);
        assert_eq!(buffered.finalize(), one_by_one.finalize());
    }

    #[test]
    fn gate_is_16_bytes() {
        assert_eq!(std::mem::size_of::<Gate>(), 16);
    }

    #[test]
    fn gate_inputs() {
        assert_eq!(Gate::and(3, 4, 5).inputs(), &[3, 4]);
        assert_eq!(Gate::xor(1, 2, 5).inputs(), &[1, 2]);
        assert_eq!(Gate::inv(7, 8).inputs(), &[7]);
        assert!(Gate::constant(true, 8).inputs().is_empty());
    }
}
