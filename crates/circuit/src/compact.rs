//! Compact circuits: repeated structure stored once and expanded while garbling.
//!
//! A [`CompactCircuit`] is a main body of [`Item`]s over the circuit's wires plus a list of
//! [`Template`]s (sub-circuits that compiled C functions became). An item is a plain gate or
//! a [`Call`] of a template: the template's gates run with its input wires read from the
//! caller's `inputs` and its output values written to the caller's `outputs`. Templates may
//! call templates with a smaller index (never themselves), so expansion always ends.
//!
//! The expanded gate stream (what the garbler sees, through [`GateSource`]) is the main body
//! with every call replaced by the callee's gates, renamed to the caller's wires plus a
//! scratch area for the callee's own values. Compiling, storing and shipping a compact
//! circuit takes space in proportion to the program, not to the expanded gate count.
//!
//! # Wire conventions (fixed; every module relies on them)
//!
//! - Bodies use *slot semantics* (see [`crate::analysis`]): a gate reads its inputs before
//!   it writes its output, and a wire id may be written again once its value is dead.
//! - Main body: wires follow `layout` (input value `i` at `layout.input_range(i)`, outputs
//!   at `layout.output_wires`); every wire id is `< layout.num_wires`.
//! - Template: wires `0..num_inputs` are its inputs, `num_inputs..num_inputs + num_outputs`
//!   hold its outputs (output `j` is in wire `num_inputs + j` when the template ends), and
//!   wires from `num_inputs + num_outputs` up to `num_wires` are its scratch. A template
//!   never writes an input wire (they belong to the caller).
//! - A call's `outputs` are distinct from each other and from its `inputs`: the callee may
//!   write an output before it has read its last input.
//!
//! # What this module provides
//!
//! - **Slotting single-assignment bodies.** Compilers emit bodies in SSA form (each wire
//!   written once). [`Template::from_ssa`] turns a function body into a slotted template
//!   (inputs pinned, outputs in their region, scratch wires reused after their last read);
//!   [`CompactCircuit::from_ssa`] slots the main body in memory, and [`LastUses`] +
//!   [`MainSlotter`] do the same in two streaming passes (backward, then forward) for main
//!   bodies too large for memory, with exactly the same result.
//! - **Expansion.** [`Expander`] replays a main body with every call replaced by the
//!   callee's gates. A call of template `t` maps the callee's wires through one table per
//!   template: `[0, 1, caller input slots.., caller output slots.., scratch base + i..]`.
//!   Template gates are stored with their operands pre-translated to table positions
//!   (constants' bits point at the entries 0 and 1, unused operands at entry 0), so
//!   renaming a gate is three table loads and no branches. The callee's scratch lives in a
//!   scratch area above the main slots; nested calls stack above their caller's scratch.
//!   Since a template only calls smaller indices, no template is active twice at once, so
//!   one table per template suffices, and its scratch part is refilled only when the call
//!   depth (its base) changes. The expansion uses an explicit stack (hostile nesting cannot
//!   overflow the thread's stack).
//! - **Sizes.** The *scratch depth* of a template is its own scratch wires plus the largest
//!   scratch depth among its callees; the expansion needs `main slots + largest scratch
//!   depth of a template called from main` wires, which is also the label memory per party
//!   (× 16 bytes). [`compact_stats`] reports it.
//! - **Garbling.** [`CompactSource`] validates a circuit once and implements
//!   [`GateSource`] by expansion; its fingerprint ([`fingerprint_parts`] + [`hash_items`])
//!   covers the compact form, so a file-backed source can compute it while streaming.
//!
//! # Slot assignment rule (shared by every slotting function here)
//!
//! A free list (a stack: the most recently freed slot is reused first) and a counter for
//! fresh slots. Per item, in order: a gate frees the slots of its inputs whose last read it
//! is, then takes a slot for its output (so it may reuse its own inputs' slots); a call
//! first takes slots for its outputs (in order), then frees its dying inputs, then frees
//! outputs that are never read. A value read twice by one item dies at its first
//! occurrence. Values never read and not outputs are freed right after they are written.
//! In the main body, input wires keep ids `0..n_in`, and inputs never read are free from
//! the start (lowest reused first). In a template, input wires are never freed and a value
//! that is output `j` is written straight into wire `num_inputs + j`.
//!
//! # Validation
//!
//! [`Expander::new`] and [`CompactCircuit::validate`] accept a template when every wire is
//! `< num_wires`, inputs are never written, every read wire is an input or was written
//! earlier in the body, every output wire is written, calls name an earlier template with
//! the right arity and outputs distinct from each other and from the call's inputs, and the
//! non-input wires are no more than the writes of its body (so checking a template never
//! allocates more than its size). All errors name the template (index and name), the item
//! and the wire; nothing here panics on malformed data.

use crate::ir::{Gate, Layout, WireId};

/// A call of template `template`: its input `k` is the caller's wire `inputs[k]`, its output
/// `j` lands in the caller's wire `outputs[j]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Call {
    pub template: u32,
    pub inputs: Vec<WireId>,
    pub outputs: Vec<WireId>,
}

/// One step of a body. A call is boxed so that an item is as small as a gate (16 bytes):
/// bodies are mostly gates, and compilers hold thousands of template bodies in memory.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Item {
    Gate(Gate),
    Call(Box<Call>),
}

const _: () = assert!(std::mem::size_of::<Item>() == std::mem::size_of::<Gate>());

/// A sub-circuit stored once and called many times (see the module docs for its wires).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    /// What it was made from (a C function's name), for reports and errors only.
    pub name: String,
    pub num_inputs: u32,
    pub num_outputs: u32,
    /// Inputs, outputs and scratch wires together.
    pub num_wires: u32,
    pub items: Vec<Item>,
}

/// A circuit whose repeated parts are [`Template`]s (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactCircuit {
    pub layout: Layout,
    pub templates: Vec<Template>,
    pub main: Vec<Item>,
}

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use crate::ir::{CHUNK_GATES, Circuit, GateSource, Op};

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

/// Names a template in error messages: its index (unknown while a body is being slotted
/// by [`Template::from_ssa`]) and its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateId {
    pub index: Option<u32>,
    pub name: String,
}

impl fmt::Display for TemplateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "template {i} '{}'", self.name),
            None => write!(f, "template '{}'", self.name),
        }
    }
}

/// Where an item is: in the main body or in a template's body (item indices from 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    Main { item: u64 },
    Template { template: TemplateId, item: u64 },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Main { item } => write!(f, "main item {item}"),
            Location::Template { template, item } => write!(f, "{template} item {item}"),
        }
    }
}

/// A malformed compact circuit, template or SSA body, or a misuse of the streaming slotter.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompactError {
    #[error("{at}: wire {wire} is out of range ({num_wires} wires)")]
    WireOutOfRange {
        at: Location,
        wire: WireId,
        num_wires: u64,
    },
    #[error("{at}: reads wire {wire} before it is set")]
    UnsetRead { at: Location, wire: WireId },
    #[error("{at}: writes wire {wire}, which is an input")]
    WritesInput { at: Location, wire: WireId },
    #[error("{at}: writes wire {wire} a second time (single-assignment form expected)")]
    WrittenTwice { at: Location, wire: WireId },
    #[error("{at}: constant gate with value {value}, not 0 or 1")]
    ConstNotBit { at: Location, value: u32 },
    #[error("{at}: calls template {callee}, but there are only {count} templates")]
    NoSuchTemplate {
        at: Location,
        callee: u32,
        count: usize,
    },
    #[error(
        "{at}: calls template {callee}, which is not an earlier template (templates may only \
         call smaller indices, so recursion is impossible)"
    )]
    NotEarlier { at: Location, callee: u32 },
    #[error(
        "{at}: call of template {callee} '{callee_name}' passes {given} {what}, but the \
         template has {expected}"
    )]
    Arity {
        at: Location,
        callee: u32,
        callee_name: String,
        what: &'static str,
        given: usize,
        expected: u32,
    },
    #[error("{at}: call output wire {wire} is also an input or another output of the same call")]
    CallAliasing { at: Location, wire: WireId },
    #[error(
        "{template}: {num_inputs} inputs and {num_outputs} outputs do not fit in its \
         {num_wires} wires"
    )]
    TemplateShape {
        template: TemplateId,
        num_inputs: u64,
        num_outputs: u64,
        num_wires: u64,
    },
    #[error("{template}: {num_wires} wires, more than the {max} a template may have")]
    TemplateTooLarge {
        template: TemplateId,
        num_wires: u64,
        max: u64,
    },
    #[error(
        "{template}: its {non_input} non-input wires exceed the {writes} wire writes of its \
         body (every output and scratch wire must be written)"
    )]
    UnwrittenWires {
        template: TemplateId,
        non_input: u64,
        writes: u64,
    },
    #[error("{template}: output {index} (wire {wire}) is out of range ({num_wires} wires)")]
    TemplateOutputOutOfRange {
        template: TemplateId,
        index: u64,
        wire: WireId,
        num_wires: u64,
    },
    #[error("{template}: output {index} (wire {wire}) is never set")]
    TemplateOutputUnset {
        template: TemplateId,
        index: u64,
        wire: WireId,
    },
    #[error("main: the {inputs} input wires exceed the {num_wires} wires")]
    InputsExceedWires { inputs: u64, num_wires: u64 },
    #[error(
        "main: the layout lists {listed} output wires but its output widths add up to {declared}"
    )]
    OutputCount { listed: usize, declared: u64 },
    #[error("main output {index}: wire {wire} is out of range ({num_wires} wires)")]
    OutputOutOfRange {
        index: u64,
        wire: WireId,
        num_wires: u64,
    },
    #[error("main output {index}: wire {wire} is never set")]
    OutputUnset { index: u64, wire: WireId },
    #[error(
        "{at}: calls template {callee} '{callee_name}', whose scratch depth {needed} exceeds \
         the {reserved} scratch wires this expander reserved for calls from main"
    )]
    ScratchNotReserved {
        at: Location,
        callee: u32,
        callee_name: String,
        needed: u64,
        reserved: u32,
    },
    #[error(
        "template {callee} was named as a callee of main, but there are only {count} templates"
    )]
    UnknownCallee { callee: u32, count: usize },
    #[error("{what} needs {needed} wires, more than the {max} that 32-bit wire ids allow")]
    TooManyWires {
        what: &'static str,
        needed: u64,
        max: u64,
    },
    #[error("{what}: the expanded gate count overflows 64 bits")]
    CountOverflow { what: String },
    #[error("streaming slotter: {0}")]
    StreamMismatch(&'static str),
}

// ---------------------------------------------------------------------------------------
// Small helpers: bit sets, a bit stack, a fast hasher for wire ids
// ---------------------------------------------------------------------------------------

/// A fixed-length set of bits.
#[derive(Clone, Debug, Default)]
struct BitSet {
    words: Vec<u64>,
    len: u64,
}

impl BitSet {
    fn new(len: u64) -> Self {
        let mut s = BitSet::default();
        s.reset(len);
        s
    }
    /// Clears the set and makes it `len` bits long.
    fn reset(&mut self, len: u64) {
        self.words.clear();
        self.words.resize(len.div_ceil(64) as usize, 0);
        self.len = len;
    }
    #[inline]
    fn get(&self, i: u64) -> bool {
        (self.words[(i >> 6) as usize] >> (i & 63)) & 1 == 1
    }
    #[inline]
    fn set(&mut self, i: u64) {
        self.words[(i >> 6) as usize] |= 1 << (i & 63);
    }
    /// Sets bits `0..n`.
    fn set_prefix(&mut self, n: u64) {
        let full = (n / 64) as usize;
        self.words[..full].fill(u64::MAX);
        if !n.is_multiple_of(64) {
            self.words[full] |= (1u64 << (n % 64)) - 1;
        }
    }
}

/// Bits pushed in one pass and popped in the reverse order in the next.
#[derive(Clone, Debug, Default)]
struct BitStack {
    words: Vec<u64>,
    len: u64,
}

impl BitStack {
    #[inline]
    fn push(&mut self, bit: bool) {
        let pos = self.len % 64;
        if pos == 0 {
            self.words.push(0);
        }
        if let Some(w) = self.words.last_mut() {
            *w = (*w & !(1 << pos)) | ((bit as u64) << pos);
        }
        self.len += 1;
    }
    #[inline]
    fn pop(&mut self) -> Option<bool> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        let pos = self.len % 64;
        let bit = self.words.last().is_some_and(|w| (w >> pos) & 1 == 1);
        if pos == 0 {
            self.words.pop();
        }
        Some(bit)
    }
}

/// Multiplicative hasher for `u32` wire ids (SipHash is several times slower and its
/// flooding resistance buys nothing here: keys are wire ids of the caller's own circuit).
#[derive(Clone, Copy, Default)]
struct WireHasher(u64);

impl Hasher for WireHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0xF135_7AEA_2E62_A9C5);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // The multiply mixes upwards; rotating brings the mixed bits to the bucket index.
        self.0.rotate_left(26)
    }
}

type WireMap = HashMap<WireId, WireId, BuildHasherDefault<WireHasher>>;

/// The first output wire of `c` that repeats another output or is one of its inputs.
fn call_alias(c: &Call, sorted: &mut Vec<WireId>) -> Option<WireId> {
    if c.outputs.len() <= 8 && c.inputs.len() <= 16 {
        // Small calls (the usual case): compare directly, no allocation.
        return c
            .outputs
            .iter()
            .enumerate()
            .find(|&(j, o)| c.outputs[..j].contains(o) || c.inputs.contains(o))
            .map(|(_, &o)| o);
    }
    sorted.clear();
    sorted.extend_from_slice(&c.outputs);
    sorted.sort_unstable();
    if let Some(pair) = sorted.windows(2).find(|p| p[0] == p[1]) {
        return Some(pair[0]);
    }
    c.inputs
        .iter()
        .copied()
        .find(|i| sorted.binary_search(i).is_ok())
}

/// Layout checks shared by the main-body functions: inputs fit, output list matches the
/// widths, output wires are in range.
fn check_layout(layout: &Layout, num_wires: u64) -> Result<u64, CompactError> {
    let inputs: u64 = layout.input_widths.iter().map(|&w| w as u64).sum();
    if inputs > num_wires {
        return Err(CompactError::InputsExceedWires { inputs, num_wires });
    }
    let declared: u64 = layout.output_widths.iter().map(|&w| w as u64).sum();
    if layout.output_wires.len() as u64 != declared {
        return Err(CompactError::OutputCount {
            listed: layout.output_wires.len(),
            declared,
        });
    }
    for (index, &wire) in layout.output_wires.iter().enumerate() {
        if wire as u64 >= num_wires {
            return Err(CompactError::OutputOutOfRange {
                index: index as u64,
                wire,
                num_wires,
            });
        }
    }
    Ok(inputs)
}

// ---------------------------------------------------------------------------------------
// Template validation and sizes
// ---------------------------------------------------------------------------------------

/// Largest `num_wires` of a template: table positions `wire + 2` must fit in 32 bits.
const MAX_TEMPLATE_WIRES: u64 = u32::MAX as u64 - 2;

/// What expansion needs to know about a validated template.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TemplateInfo {
    /// Gates of one call, expanded.
    gates: u64,
    ands: u64,
    /// Own scratch wires plus the largest scratch depth among its callees.
    depth: u64,
}

fn template_id(templates: &[Template], t: usize) -> TemplateId {
    TemplateId {
        index: Some(t as u32),
        name: templates[t].name.clone(),
    }
}

/// Checks every template (see the module docs) and computes their sizes, in index order
/// (callees come first, so their sizes are known).
pub(crate) fn check_templates(templates: &[Template]) -> Result<Vec<TemplateInfo>, CompactError> {
    let mut infos = Vec::with_capacity(templates.len());
    let mut set = BitSet::default();
    let mut sorted = Vec::new();
    for t in 0..templates.len() {
        let info = check_template(templates, &infos, t, &mut set, &mut sorted)?;
        infos.push(info);
    }
    Ok(infos)
}

fn check_template(
    templates: &[Template],
    infos: &[TemplateInfo],
    t: usize,
    set: &mut BitSet,
    sorted: &mut Vec<WireId>,
) -> Result<TemplateInfo, CompactError> {
    let tmpl = &templates[t];
    let id = || template_id(templates, t);
    let ni = tmpl.num_inputs as u64;
    let no = tmpl.num_outputs as u64;
    let nw = tmpl.num_wires as u64;
    if ni + no > nw {
        return Err(CompactError::TemplateShape {
            template: id(),
            num_inputs: ni,
            num_outputs: no,
            num_wires: nw,
        });
    }
    if nw > MAX_TEMPLATE_WIRES {
        return Err(CompactError::TemplateTooLarge {
            template: id(),
            num_wires: nw,
            max: MAX_TEMPLATE_WIRES,
        });
    }
    let writes: u64 = tmpl
        .items
        .iter()
        .map(|item| match item {
            Item::Gate(_) => 1,
            Item::Call(c) => c.outputs.len() as u64,
        })
        .sum();
    if nw - ni > writes {
        return Err(CompactError::UnwrittenWires {
            template: id(),
            non_input: nw - ni,
            writes,
        });
    }
    // Bits for the non-input wires only: inputs are always set. Bounded by `writes`.
    set.reset(nw - ni);
    let mut info = TemplateInfo::default();
    let mut callee_depth = 0u64;
    let overflow = || CompactError::CountOverflow {
        what: id().to_string(),
    };
    for (k, item) in tmpl.items.iter().enumerate() {
        let at = || Location::Template {
            template: id(),
            item: k as u64,
        };
        let read = |set: &BitSet, wire: WireId| -> Result<(), CompactError> {
            let w = wire as u64;
            if w >= nw {
                return Err(CompactError::WireOutOfRange {
                    at: at(),
                    wire,
                    num_wires: nw,
                });
            }
            if w >= ni && !set.get(w - ni) {
                return Err(CompactError::UnsetRead { at: at(), wire });
            }
            Ok(())
        };
        let write = |set: &mut BitSet, wire: WireId| -> Result<(), CompactError> {
            let w = wire as u64;
            if w >= nw {
                return Err(CompactError::WireOutOfRange {
                    at: at(),
                    wire,
                    num_wires: nw,
                });
            }
            if w < ni {
                return Err(CompactError::WritesInput { at: at(), wire });
            }
            set.set(w - ni);
            Ok(())
        };
        match item {
            Item::Gate(g) => {
                if g.op == Op::Const && g.a > 1 {
                    return Err(CompactError::ConstNotBit {
                        at: at(),
                        value: g.a,
                    });
                }
                for &w in g.inputs() {
                    read(set, w)?;
                }
                write(set, g.out)?;
                info.gates = info.gates.checked_add(1).ok_or_else(overflow)?;
                info.ands += u64::from(g.op == Op::And);
            }
            Item::Call(c) => {
                let u = c.template as usize;
                if u >= templates.len() {
                    return Err(CompactError::NoSuchTemplate {
                        at: at(),
                        callee: c.template,
                        count: templates.len(),
                    });
                }
                if u >= t {
                    return Err(CompactError::NotEarlier {
                        at: at(),
                        callee: c.template,
                    });
                }
                check_arity(&templates[u], c, at)?;
                for &w in &c.inputs {
                    read(set, w)?;
                }
                if let Some(wire) = call_alias(c, sorted) {
                    return Err(CompactError::CallAliasing { at: at(), wire });
                }
                for &w in &c.outputs {
                    write(set, w)?;
                }
                let callee = infos[u];
                info.gates = info.gates.checked_add(callee.gates).ok_or_else(overflow)?;
                info.ands = info.ands.checked_add(callee.ands).ok_or_else(overflow)?;
                callee_depth = callee_depth.max(callee.depth);
            }
        }
    }
    for j in 0..no {
        if !set.get(j) {
            return Err(CompactError::TemplateOutputUnset {
                template: id(),
                index: j,
                wire: (ni + j) as WireId,
            });
        }
    }
    info.depth = (nw - ni - no) + callee_depth;
    Ok(info)
}

fn check_arity(callee: &Template, c: &Call, at: impl Fn() -> Location) -> Result<(), CompactError> {
    for (what, given, expected) in [
        ("inputs", c.inputs.len(), callee.num_inputs),
        ("outputs", c.outputs.len(), callee.num_outputs),
    ] {
        if given != expected as usize {
            return Err(CompactError::Arity {
                at: at(),
                callee: c.template,
                callee_name: callee.name.clone(),
                what,
                given,
                expected,
            });
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Slotting SSA bodies in memory
// ---------------------------------------------------------------------------------------

/// `last_use` marker: never read and not an output.
const NEVER: u64 = u64::MAX;
/// `last_use` marker: an output, live to the end.
const TO_END: u64 = u64::MAX - 1;
/// `last_use` marker: already freed by an earlier operand of the same item.
const FREED: u64 = u64::MAX - 2;
/// `home` marker: not a template output.
const NO_HOME: WireId = WireId::MAX;

/// Which kind of body [`slot_ssa`] slots.
enum Body<'a> {
    /// A template body (called from [`Template::from_ssa`]): inputs pinned, outputs in
    /// their region.
    Template { name: &'a str },
    /// The main body: inputs reusable once dead; calls checked against `templates`.
    Main { templates: &'a [Template] },
}

impl Body<'_> {
    fn at(&self, item: usize) -> Location {
        match self {
            Body::Template { name } => Location::Template {
                template: TemplateId {
                    index: None,
                    name: name.to_string(),
                },
                item: item as u64,
            },
            Body::Main { .. } => Location::Main { item: item as u64 },
        }
    }
    fn output_error(&self, index: usize, wire: WireId, num_wires: u64) -> CompactError {
        let index = index as u64;
        match (self, (wire as u64) < num_wires) {
            (Body::Template { name }, in_range) => {
                let template = TemplateId {
                    index: None,
                    name: name.to_string(),
                };
                if in_range {
                    CompactError::TemplateOutputUnset {
                        template,
                        index,
                        wire,
                    }
                } else {
                    CompactError::TemplateOutputOutOfRange {
                        template,
                        index,
                        wire,
                        num_wires,
                    }
                }
            }
            (Body::Main { .. }, true) => CompactError::OutputUnset { index, wire },
            (Body::Main { .. }, false) => CompactError::OutputOutOfRange {
                index,
                wire,
                num_wires,
            },
        }
    }
}

/// Slots an SSA body in place by the rule in the module docs. Returns the slot count and
/// the slot holding each output at the end.
fn slot_ssa(
    body: Body<'_>,
    num_inputs: u32,
    num_ssa: u32,
    items: &mut [Item],
    outputs: &[WireId],
) -> Result<(u32, Vec<WireId>), CompactError> {
    let n = num_ssa as usize;
    let ni = num_inputs;
    let is_template = matches!(body, Body::Template { .. });
    // Pass 1: single-assignment checks and last reads.
    let mut last_use = vec![NEVER; n];
    let mut defined = BitSet::new(num_ssa as u64);
    defined.set_prefix(ni as u64);
    let mut sorted = Vec::new();
    for (k, item) in items.iter().enumerate() {
        let read = |last_use: &mut [u64], defined: &BitSet, wire: WireId| {
            if wire >= num_ssa {
                return Err(CompactError::WireOutOfRange {
                    at: body.at(k),
                    wire,
                    num_wires: num_ssa as u64,
                });
            }
            if !defined.get(wire as u64) {
                return Err(CompactError::UnsetRead {
                    at: body.at(k),
                    wire,
                });
            }
            last_use[wire as usize] = k as u64;
            Ok(())
        };
        let define = |defined: &mut BitSet, wire: WireId| {
            if wire >= num_ssa {
                return Err(CompactError::WireOutOfRange {
                    at: body.at(k),
                    wire,
                    num_wires: num_ssa as u64,
                });
            }
            if wire < ni {
                return Err(CompactError::WritesInput {
                    at: body.at(k),
                    wire,
                });
            }
            if defined.get(wire as u64) {
                return Err(CompactError::WrittenTwice {
                    at: body.at(k),
                    wire,
                });
            }
            defined.set(wire as u64);
            Ok(())
        };
        match item {
            Item::Gate(g) => {
                if g.op == Op::Const && g.a > 1 {
                    return Err(CompactError::ConstNotBit {
                        at: body.at(k),
                        value: g.a,
                    });
                }
                for &w in g.inputs() {
                    read(&mut last_use, &defined, w)?;
                }
                define(&mut defined, g.out)?;
            }
            Item::Call(c) => {
                if let Body::Main { templates } = body {
                    let callee = templates.get(c.template as usize).ok_or_else(|| {
                        CompactError::NoSuchTemplate {
                            at: body.at(k),
                            callee: c.template,
                            count: templates.len(),
                        }
                    })?;
                    check_arity(callee, c, || body.at(k))?;
                }
                for &w in &c.inputs {
                    read(&mut last_use, &defined, w)?;
                }
                if let Some(wire) = call_alias(c, &mut sorted) {
                    return Err(CompactError::CallAliasing {
                        at: body.at(k),
                        wire,
                    });
                }
                for &w in &c.outputs {
                    define(&mut defined, w)?;
                }
            }
        }
    }
    for (j, &w) in outputs.iter().enumerate() {
        if w >= num_ssa || !defined.get(w as u64) {
            return Err(body.output_error(j, w, num_ssa as u64));
        }
        last_use[w as usize] = TO_END;
    }
    drop(defined);

    // Template outputs are written straight into their region (first occurrence of a
    // non-input value); the caller adds copies for the rest.
    let num_outputs = outputs.len() as u64;
    let mut home: Vec<WireId> = Vec::new();
    let first_free: u64 = if is_template {
        home = vec![NO_HOME; n];
        for (j, &w) in outputs.iter().enumerate() {
            if w >= ni && home[w as usize] == NO_HOME {
                home[w as usize] = ni + j as WireId;
            }
        }
        ni as u64 + num_outputs
    } else {
        ni as u64
    };
    let too_many = |needed: u64| CompactError::TooManyWires {
        what: if is_template {
            "the slotted template"
        } else {
            "the slotted main body"
        },
        needed,
        max: u32::MAX as u64,
    };
    if first_free > u32::MAX as u64 {
        return Err(too_many(first_free));
    }

    // Pass 2: assign slots.
    let mut slot_of: Vec<WireId> = vec![0; n];
    for (i, s) in slot_of.iter_mut().enumerate().take(ni as usize) {
        *s = i as WireId;
    }
    let mut free: Vec<WireId> = Vec::new();
    if !is_template {
        free.extend((0..ni).rev().filter(|&i| last_use[i as usize] == NEVER));
    }
    let mut next = first_free;
    let mut alloc = |free: &mut Vec<WireId>| -> Result<WireId, CompactError> {
        if let Some(s) = free.pop() {
            return Ok(s);
        }
        if next >= u32::MAX as u64 {
            return Err(too_many(next + 1));
        }
        next += 1;
        Ok((next - 1) as WireId)
    };
    let pinned = |w: WireId| is_template && w < ni;
    let mut dying: Vec<WireId> = Vec::new();
    let mut dead_outputs: Vec<WireId> = Vec::new();
    for (k, item) in items.iter_mut().enumerate() {
        let k = k as u64;
        // Renames a read; records its slot in `dying` when this is its last read.
        let take_read = |last_use: &mut [u64], dying: &mut Vec<WireId>, w: &mut WireId| {
            let slot = slot_of[*w as usize];
            if last_use[*w as usize] == k {
                last_use[*w as usize] = FREED;
                if !pinned(*w) {
                    dying.push(slot);
                }
            }
            *w = slot;
        };
        dying.clear();
        match item {
            Item::Gate(g) => {
                match g.op {
                    Op::Xor | Op::And => {
                        take_read(&mut last_use, &mut dying, &mut g.a);
                        take_read(&mut last_use, &mut dying, &mut g.b);
                    }
                    Op::Inv | Op::Copy => {
                        take_read(&mut last_use, &mut dying, &mut g.a);
                        g.b = 0;
                    }
                    Op::Const => g.b = 0,
                }
                free.append(&mut dying);
                let v = g.out as usize;
                let slot = if is_template && home[v] != NO_HOME {
                    home[v]
                } else {
                    alloc(&mut free)?
                };
                slot_of[v] = slot;
                g.out = slot;
                if last_use[v] == NEVER {
                    free.push(slot);
                }
            }
            Item::Call(c) => {
                for w in c.inputs.iter_mut() {
                    take_read(&mut last_use, &mut dying, w);
                }
                dead_outputs.clear();
                for w in c.outputs.iter_mut() {
                    let v = *w as usize;
                    let slot = if is_template && home[v] != NO_HOME {
                        home[v]
                    } else {
                        alloc(&mut free)?
                    };
                    slot_of[v] = slot;
                    *w = slot;
                    if last_use[v] == NEVER {
                        dead_outputs.push(slot);
                    }
                }
                free.append(&mut dying);
                free.append(&mut dead_outputs);
            }
        }
    }
    Ok((
        next as u32,
        outputs.iter().map(|&w| slot_of[w as usize]).collect(),
    ))
}

impl Template {
    /// Slots a function body given in single-assignment form.
    ///
    /// Input: wires `0..num_inputs` are the inputs; every gate output and call output is a
    /// wire `< num_ssa_wires` written exactly once, before any read of it, never an input.
    /// `outputs` (any wires that are set, inputs and repeats allowed) become the template's
    /// outputs. Call arity is not checked here (the callees are not known); see
    /// [`Expander::new`].
    ///
    /// Output: the template of the module docs, items in the same order, with copies
    /// appended for outputs that are inputs or repeat an earlier output (in output order).
    /// `num_wires` = inputs + outputs + the peak number of scratch values live at once.
    pub fn from_ssa(
        name: String,
        num_inputs: u32,
        num_ssa_wires: u32,
        mut items: Vec<Item>,
        outputs: &[WireId],
    ) -> Result<Template, CompactError> {
        let id = || TemplateId {
            index: None,
            name: name.clone(),
        };
        let num_outputs = u32::try_from(outputs.len()).map_err(|_| CompactError::TooManyWires {
            what: "the template's outputs",
            needed: outputs.len() as u64,
            max: u32::MAX as u64,
        })?;
        if num_inputs > num_ssa_wires {
            return Err(CompactError::TemplateShape {
                template: id(),
                num_inputs: num_inputs as u64,
                num_outputs: num_outputs as u64,
                num_wires: num_ssa_wires as u64,
            });
        }
        let (num_wires, output_slots) = slot_ssa(
            Body::Template { name: &name },
            num_inputs,
            num_ssa_wires,
            &mut items,
            outputs,
        )?;
        for (j, &slot) in output_slots.iter().enumerate() {
            let target = num_inputs + j as WireId;
            if slot != target {
                items.push(Item::Gate(Gate::copy(slot, target)));
            }
        }
        if num_wires as u64 > MAX_TEMPLATE_WIRES {
            return Err(CompactError::TemplateTooLarge {
                template: id(),
                num_wires: num_wires as u64,
                max: MAX_TEMPLATE_WIRES,
            });
        }
        // Kept for the rest of a compilation, often thousands of them: no spare capacity.
        items.shrink_to_fit();
        Ok(Template {
            name,
            num_inputs,
            num_outputs,
            num_wires,
            items,
        })
    }
}

impl CompactCircuit {
    /// Slots a main body given in single-assignment form, in memory.
    ///
    /// `layout` describes the SSA body (`num_wires` = SSA wire count; inputs at
    /// `0..n_in`; outputs any set wires, repeats allowed). `templates` must already be
    /// slotted (e.g. by [`Template::from_ssa`]); they are validated and calls are checked
    /// against them. The result's `layout.num_wires` is the slot count and its
    /// `output_wires` name slots. Same result as [`LastUses`] + [`MainSlotter`].
    pub fn from_ssa(
        mut layout: Layout,
        templates: Vec<Template>,
        mut main: Vec<Item>,
    ) -> Result<CompactCircuit, CompactError> {
        check_templates(&templates)?;
        let n_in = check_layout(&layout, layout.num_wires as u64)?;
        let (num_slots, output_slots) = slot_ssa(
            Body::Main {
                templates: &templates,
            },
            n_in as u32,
            layout.num_wires,
            &mut main,
            &layout.output_wires,
        )?;
        layout.num_wires = num_slots;
        layout.output_wires = output_slots;
        Ok(CompactCircuit {
            layout,
            templates,
            main,
        })
    }
}

// ---------------------------------------------------------------------------------------
// Slotting the main body in two streaming passes
// ---------------------------------------------------------------------------------------

/// First pass of the streaming main-body slotter: feed the SSA main body backward (last
/// chunk first) to [`feed_backward`](LastUses::feed_backward), then hand this to
/// [`MainSlotter::new`].
///
/// It records, per operand, whether that read is the value's last (and per written wire,
/// whether it is never read), as one bit each, plus one bit per SSA wire while it runs.
/// Malformed data is not detected here (out-of-range wires get a 0 bit); the forward pass
/// reports it with the item's position.
#[derive(Clone, Debug)]
pub struct LastUses {
    layout: Layout,
    n_in: u32,
    num_ssa_wires: u64,
    /// Per SSA wire: read by an item after the current one, or an output.
    seen: BitSet,
    /// Per operand, in reverse consumption order (see [`MainSlotter`]).
    bits: BitStack,
    /// Per-call scratch for the read bits, in forward order.
    read_bits: Vec<bool>,
}

impl LastUses {
    /// `layout` describes the SSA main body (its `num_wires` is ignored in favour of
    /// `num_ssa_wires`, which may be up to 2^32): inputs at `0..n_in`, outputs any SSA
    /// wires (repeats allowed).
    pub fn new(layout: &Layout, num_ssa_wires: u64) -> Result<Self, CompactError> {
        if num_ssa_wires > 1 << 32 {
            return Err(CompactError::TooManyWires {
                what: "the SSA main body",
                needed: num_ssa_wires,
                max: 1 << 32,
            });
        }
        let n_in = check_layout(layout, num_ssa_wires)?;
        let n_in = u32::try_from(n_in).map_err(|_| CompactError::TooManyWires {
            what: "the main body's inputs",
            needed: n_in,
            max: u32::MAX as u64,
        })?;
        let mut seen = BitSet::new(num_ssa_wires);
        for &w in &layout.output_wires {
            seen.set(w as u64);
        }
        Ok(LastUses {
            layout: layout.clone(),
            n_in,
            num_ssa_wires,
            seen,
            bits: BitStack::default(),
            read_bits: Vec::new(),
        })
    }

    /// Marks `w` as read; returns whether no later item reads it (this read is its last).
    #[inline]
    fn last_read(&mut self, w: WireId) -> bool {
        let w = w as u64;
        if w >= self.num_ssa_wires || self.seen.get(w) {
            return false;
        }
        self.seen.set(w);
        true
    }

    #[inline]
    fn never_read(&self, w: WireId) -> bool {
        (w as u64) < self.num_ssa_wires && !self.seen.get(w as u64)
    }

    /// Processes the chunk's items from last to first. Chunks must come in reverse order
    /// of the body; any chunk sizes.
    pub fn feed_backward(&mut self, chunk: &[Item]) {
        for item in chunk.iter().rev() {
            // Consumption order in the forward pass: read bits in operand order, then
            // write bits in output order; pushed here in reverse.
            match item {
                Item::Gate(g) => {
                    let dead = self.never_read(g.out);
                    match g.op {
                        Op::Xor | Op::And => {
                            let da = self.last_read(g.a);
                            let db = self.last_read(g.b);
                            self.bits.push(dead);
                            self.bits.push(db);
                            self.bits.push(da);
                        }
                        Op::Inv | Op::Copy => {
                            let da = self.last_read(g.a);
                            self.bits.push(dead);
                            self.bits.push(da);
                        }
                        Op::Const => self.bits.push(dead),
                    }
                }
                Item::Call(c) => {
                    for &o in c.outputs.iter().rev() {
                        let dead = self.never_read(o);
                        self.bits.push(dead);
                    }
                    let mut read_bits = std::mem::take(&mut self.read_bits);
                    read_bits.clear();
                    read_bits.extend(c.inputs.iter().map(|&w| self.last_read(w)));
                    for &b in read_bits.iter().rev() {
                        self.bits.push(b);
                    }
                    self.read_bits = read_bits;
                }
            }
        }
    }
}

/// Second pass of the streaming main-body slotter: feed the same SSA body forward (first
/// chunk first) to [`rename_forward`](MainSlotter::rename_forward), which rewrites each
/// chunk into slots in place, then call [`finish`](MainSlotter::finish) for the slotted
/// layout. The result equals [`CompactCircuit::from_ssa`]'s.
///
/// Memory: one entry per live value (a hash map from SSA wire to slot), the free slots,
/// one bit per SSA wire (to reject a second write) and the bits of [`LastUses`] not yet
/// consumed. Checks single assignment and ranges, reporting the absolute item index;
/// call arity is left to [`Expander`] / [`CompactCircuit::validate`].
#[derive(Clone, Debug)]
pub struct MainSlotter {
    layout: Layout,
    num_ssa_wires: u64,
    n_in: u32,
    bits: BitStack,
    defined: BitSet,
    live: WireMap,
    free: Vec<WireId>,
    next: u64,
    item: u64,
    /// Per-call scratch: input SSA ids, dying input SSA ids, outputs' (wire, slot, never
    /// read).
    ids: Vec<WireId>,
    dying: Vec<WireId>,
    outs: Vec<(WireId, WireId, bool)>,
}

impl MainSlotter {
    pub fn new(last_uses: LastUses) -> Self {
        let LastUses {
            layout,
            n_in,
            num_ssa_wires,
            seen,
            bits,
            ..
        } = last_uses;
        let mut live = WireMap::default();
        let mut free = Vec::new();
        for i in (0..n_in).rev() {
            if seen.get(i as u64) {
                live.insert(i, i);
            } else {
                free.push(i);
            }
        }
        // Reuse the bits as "written" marks: inputs count as written.
        let mut defined = seen;
        defined.reset(num_ssa_wires);
        defined.set_prefix(n_in as u64);
        MainSlotter {
            layout,
            num_ssa_wires,
            n_in,
            bits,
            defined,
            live,
            free,
            next: n_in as u64,
            item: 0,
            ids: Vec::new(),
            dying: Vec::new(),
            outs: Vec::new(),
        }
    }

    fn at(&self) -> Location {
        Location::Main { item: self.item }
    }

    fn pop(&mut self) -> Result<bool, CompactError> {
        // A `match`, not `ok_or`: this runs per operand, and an eagerly built error costs
        // a drop per call.
        match self.bits.pop() {
            Some(bit) => Ok(bit),
            None => Err(CompactError::StreamMismatch(
                "the forward pass was fed more than the backward pass",
            )),
        }
    }

    fn read(&self, wire: WireId) -> Result<WireId, CompactError> {
        if wire as u64 >= self.num_ssa_wires {
            return Err(CompactError::WireOutOfRange {
                at: self.at(),
                wire,
                num_wires: self.num_ssa_wires,
            });
        }
        self.live
            .get(&wire)
            .copied()
            .ok_or_else(|| CompactError::UnsetRead {
                at: self.at(),
                wire,
            })
    }

    /// Frees `wire`'s slot (its last read was just consumed).
    fn kill(&mut self, wire: WireId) -> Result<(), CompactError> {
        let Some(slot) = self.live.remove(&wire) else {
            return Err(CompactError::StreamMismatch(
                "a value died twice; the passes were fed different bodies",
            ));
        };
        self.free.push(slot);
        Ok(())
    }

    /// Checks a write of `wire` and gives it a slot.
    fn define(&mut self, wire: WireId) -> Result<WireId, CompactError> {
        let w = wire as u64;
        if w >= self.num_ssa_wires {
            return Err(CompactError::WireOutOfRange {
                at: self.at(),
                wire,
                num_wires: self.num_ssa_wires,
            });
        }
        if wire < self.n_in {
            return Err(CompactError::WritesInput {
                at: self.at(),
                wire,
            });
        }
        if self.defined.get(w) {
            return Err(CompactError::WrittenTwice {
                at: self.at(),
                wire,
            });
        }
        self.defined.set(w);
        if let Some(s) = self.free.pop() {
            return Ok(s);
        }
        if self.next >= u32::MAX as u64 {
            return Err(CompactError::TooManyWires {
                what: "the slotted main body",
                needed: self.next + 1,
                max: u32::MAX as u64,
            });
        }
        self.next += 1;
        Ok((self.next - 1) as WireId)
    }

    /// Rewrites the chunk (the next items of the SSA body) into slots.
    pub fn rename_forward(&mut self, chunk: &mut [Item]) -> Result<(), CompactError> {
        for item in chunk.iter_mut() {
            match item {
                Item::Gate(g) => {
                    if g.op == Op::Const && g.a > 1 {
                        return Err(CompactError::ConstNotBit {
                            at: self.at(),
                            value: g.a,
                        });
                    }
                    let (a, b) = (g.a, g.b);
                    match g.op {
                        Op::Xor | Op::And => {
                            g.a = self.read(a)?;
                            g.b = self.read(b)?;
                            let (da, db) = (self.pop()?, self.pop()?);
                            if da {
                                self.kill(a)?;
                            }
                            if db {
                                self.kill(b)?;
                            }
                        }
                        Op::Inv | Op::Copy => {
                            g.a = self.read(a)?;
                            g.b = 0;
                            if self.pop()? {
                                self.kill(a)?;
                            }
                        }
                        Op::Const => g.b = 0,
                    }
                    let dead = self.pop()?;
                    let out = g.out;
                    let slot = self.define(out)?;
                    g.out = slot;
                    if dead {
                        self.free.push(slot);
                    } else {
                        self.live.insert(out, slot);
                    }
                }
                Item::Call(c) => {
                    let mut ids = std::mem::take(&mut self.ids);
                    ids.clear();
                    ids.extend_from_slice(&c.inputs);
                    for w in c.inputs.iter_mut() {
                        *w = self.read(*w)?;
                    }
                    self.dying.clear();
                    for &w in &ids {
                        if self.pop()? {
                            self.dying.push(w);
                        }
                    }
                    self.ids = ids;
                    self.outs.clear();
                    for &o in &c.outputs {
                        let dead = self.pop()?;
                        self.outs.push((o, 0, dead));
                    }
                    // Outputs take their slots before the dying inputs free theirs.
                    for j in 0..self.outs.len() {
                        self.outs[j].1 = self.define(self.outs[j].0)?;
                    }
                    for i in 0..self.dying.len() {
                        self.kill(self.dying[i])?;
                    }
                    for (j, &(o, slot, dead)) in self.outs.iter().enumerate() {
                        c.outputs[j] = slot;
                        if dead {
                            self.free.push(slot);
                        } else {
                            self.live.insert(o, slot);
                        }
                    }
                }
            }
            self.item += 1;
        }
        Ok(())
    }

    /// Ends the forward pass: the slotted layout (`num_wires` = slot count, outputs
    /// renamed to slots).
    pub fn finish(self) -> Result<Layout, CompactError> {
        if self.bits.len != 0 {
            return Err(CompactError::StreamMismatch(
                "the forward pass was fed less than the backward pass",
            ));
        }
        let mut layout = self.layout;
        for (index, w) in layout.output_wires.iter_mut().enumerate() {
            *w = *self.live.get(w).ok_or(CompactError::OutputUnset {
                index: index as u64,
                wire: *w,
            })?;
        }
        layout.num_wires = self.next as u32;
        Ok(layout)
    }
}

// ---------------------------------------------------------------------------------------
// Expansion
// ---------------------------------------------------------------------------------------

/// Table position of template wire `w`: entries 0 and 1 hold the constants 0 and 1.
const TABLE_OFFSET: u32 = 2;

/// One stretch of a compiled template body.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// `gates[start..end]` of the compiled template.
    Gates { start: usize, end: usize },
    /// A call; its argument table positions (inputs, then outputs) start at
    /// `args[args_start]`.
    Call { callee: u32, args_start: usize },
}

/// A validated template prepared for expansion.
#[derive(Clone, Debug)]
struct Compiled {
    num_inputs: u32,
    num_outputs: u32,
    num_wires: u32,
    own_scratch: u32,
    info: TemplateInfo,
    /// Gates with table positions as operands (see [`Expander`]).
    gates: Vec<Gate>,
    steps: Vec<Step>,
    args: Vec<u32>,
}

impl Compiled {
    fn new(t: &Template, info: TemplateInfo) -> Compiled {
        let mut gates = Vec::new();
        let mut steps = Vec::new();
        let mut args = Vec::new();
        let mut run_start = 0;
        for item in &t.items {
            match item {
                Item::Gate(g) => gates.push(match g.op {
                    Op::Xor | Op::And => Gate {
                        op: g.op,
                        a: g.a + TABLE_OFFSET,
                        b: g.b + TABLE_OFFSET,
                        out: g.out + TABLE_OFFSET,
                    },
                    Op::Inv | Op::Copy => Gate {
                        op: g.op,
                        a: g.a + TABLE_OFFSET,
                        b: 0,
                        out: g.out + TABLE_OFFSET,
                    },
                    // The bit selects table entry 0 or 1, which hold 0 and 1.
                    Op::Const => Gate {
                        op: g.op,
                        a: g.a,
                        b: 0,
                        out: g.out + TABLE_OFFSET,
                    },
                }),
                Item::Call(c) => {
                    if gates.len() > run_start {
                        steps.push(Step::Gates {
                            start: run_start,
                            end: gates.len(),
                        });
                    }
                    run_start = gates.len();
                    steps.push(Step::Call {
                        callee: c.template,
                        args_start: args.len(),
                    });
                    args.extend(c.inputs.iter().chain(&c.outputs).map(|&w| w + TABLE_OFFSET));
                }
            }
        }
        if gates.len() > run_start {
            steps.push(Step::Gates {
                start: run_start,
                end: gates.len(),
            });
        }
        Compiled {
            num_inputs: t.num_inputs,
            num_outputs: t.num_outputs,
            num_wires: t.num_wires,
            own_scratch: t.num_wires - t.num_inputs - t.num_outputs,
            info,
            gates,
            steps,
            args,
        }
    }

    fn num_args(&self) -> usize {
        self.num_inputs as usize + self.num_outputs as usize
    }
}

/// Validated templates' expanded sizes and scratch depths, without the copy of every body
/// that [`Expander::new`] prepares for expansion: what a writer needs to count a main body's
/// gates once the templates themselves are written out and dropped.
#[derive(Clone, Debug)]
pub struct TemplateSizes {
    infos: Vec<TemplateInfo>,
}

impl TemplateSizes {
    /// Checks `templates` as [`Expander::new`] does and keeps their sizes.
    pub fn new(templates: &[Template]) -> Result<Self, CompactError> {
        Ok(TemplateSizes {
            infos: check_templates(templates)?,
        })
    }

    /// Gates and AND gates of one call of template `t`, expanded (`None` if there is no
    /// template `t`); as [`Expander::template_counts`].
    pub fn counts(&self, t: u32) -> Option<(u64, u64)> {
        self.infos.get(t as usize).map(|i| (i.gates, i.ands))
    }

    /// The largest scratch depth of any template: the scratch wires [`Expander::new`]
    /// reserves above the main slots.
    pub fn max_depth(&self) -> u64 {
        self.infos.iter().map(|i| i.depth).max().unwrap_or(0)
    }
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    template: u32,
    step: usize,
    /// First scratch slot of this activation.
    base: WireId,
}

/// Why an expansion stopped: malformed data, or the consumer's error.
enum Fail<E> {
    Compact(CompactError),
    Sink(E),
}

impl<E> From<CompactError> for Fail<E> {
    fn from(e: CompactError) -> Self {
        Fail::Compact(e)
    }
}

/// Expands main-body items into the flat gate stream, in chunks of at most
/// [`CHUNK_GATES`] gates (see the module docs for the wire mapping and the cost model).
///
/// Usage: [`expand`](Expander::expand) the main body (in one or many pieces, in order),
/// then [`finish`](Expander::finish) to flush the last chunk; after `finish` the expander
/// can run another pass. Main items are range-checked (wires, template index, arity,
/// aliasing, scratch reserved) as they come; reads of unset wires are not (see
/// [`CompactCircuit::validate`]).
pub struct Expander<'a> {
    templates: &'a [Template],
    compiled: Vec<Compiled>,
    main_num_wires: u32,
    /// Scratch wires above the main slots.
    reserved: u32,
    /// One renaming table per template (allocated at its first call).
    tables: Vec<Vec<WireId>>,
    /// The scratch base each table's scratch part was filled for.
    table_base: Vec<Option<WireId>>,
    stack: Vec<Frame>,
    buf: Vec<Gate>,
    sorted: Vec<WireId>,
    items_done: u64,
}

impl<'a> Expander<'a> {
    /// Validates `templates` and reserves scratch for a call of any of them from main.
    pub fn new(templates: &'a [Template], main_num_wires: u32) -> Result<Self, CompactError> {
        let infos = check_templates(templates)?;
        let reserved = infos.iter().map(|i| i.depth).max().unwrap_or(0);
        Self::build(templates, infos, main_num_wires, reserved)
    }

    /// Like [`new`](Expander::new), but reserves scratch only for calls of `callees` from
    /// main (the templates the main body calls, in any order, repeats allowed), so
    /// [`num_wires`](Expander::num_wires) is the exact requirement of that main body. A
    /// main call of a template needing more scratch is an error at expansion.
    pub fn with_main_callees(
        templates: &'a [Template],
        main_num_wires: u32,
        callees: impl IntoIterator<Item = u32>,
    ) -> Result<Self, CompactError> {
        let infos = check_templates(templates)?;
        let mut reserved = 0;
        for callee in callees {
            let info = infos
                .get(callee as usize)
                .ok_or(CompactError::UnknownCallee {
                    callee,
                    count: templates.len(),
                })?;
            reserved = reserved.max(info.depth);
        }
        Self::build(templates, infos, main_num_wires, reserved)
    }

    /// Validates `templates` and reserves exactly `reserved` scratch wires.
    fn with_reserved(
        templates: &'a [Template],
        main_num_wires: u32,
        reserved: u64,
    ) -> Result<Self, CompactError> {
        let infos = check_templates(templates)?;
        Self::build(templates, infos, main_num_wires, reserved)
    }

    fn build(
        templates: &'a [Template],
        infos: Vec<TemplateInfo>,
        main_num_wires: u32,
        reserved: u64,
    ) -> Result<Self, CompactError> {
        let needed = main_num_wires as u64 + reserved;
        if needed > u32::MAX as u64 {
            return Err(CompactError::TooManyWires {
                what: "the expanded circuit",
                needed,
                max: u32::MAX as u64,
            });
        }
        let compiled = templates
            .iter()
            .zip(infos)
            .map(|(t, info)| Compiled::new(t, info))
            .collect();
        Ok(Expander {
            templates,
            compiled,
            main_num_wires,
            reserved: reserved as u32,
            tables: vec![Vec::new(); templates.len()],
            table_base: vec![None; templates.len()],
            stack: Vec::new(),
            buf: Vec::with_capacity(CHUNK_GATES),
            sorted: Vec::new(),
            items_done: 0,
        })
    }

    /// Wires of the expanded circuit: main slots plus the reserved scratch.
    pub fn num_wires(&self) -> u32 {
        self.main_num_wires + self.reserved
    }

    /// Scratch wires reserved above the main slots.
    pub fn scratch_wires(&self) -> u32 {
        self.reserved
    }

    /// Gates and AND gates of one call of template `t`, expanded (`None` if there is no
    /// template `t`).
    pub fn template_counts(&self, t: u32) -> Option<(u64, u64)> {
        self.compiled
            .get(t as usize)
            .map(|c| (c.info.gates, c.info.ands))
    }

    /// Scratch depth of template `t` (own scratch plus its deepest callee's).
    pub fn scratch_depth(&self, t: u32) -> Option<u64> {
        self.compiled.get(t as usize).map(|c| c.info.depth)
    }

    /// Expanded gate and AND counts of main items (calls must name existing templates;
    /// error locations count from `first_item`).
    pub fn count_items(&self, items: &[Item], first_item: u64) -> Result<(u64, u64), CompactError> {
        let (mut gates, mut ands) = (0u64, 0u64);
        let overflow = || CompactError::CountOverflow {
            what: "the main body".to_string(),
        };
        for (k, item) in items.iter().enumerate() {
            let (g, a) = match item {
                Item::Gate(g) => (1, u64::from(g.op == Op::And)),
                Item::Call(c) => self.template_counts(c.template).ok_or_else(|| {
                    CompactError::NoSuchTemplate {
                        at: Location::Main {
                            item: first_item + k as u64,
                        },
                        callee: c.template,
                        count: self.templates.len(),
                    }
                })?,
            };
            gates = gates.checked_add(g).ok_or_else(overflow)?;
            ands = ands.checked_add(a).ok_or_else(overflow)?;
        }
        Ok((gates, ands))
    }

    /// Expands the next main-body items (wires are main slots), calling `f` on each full
    /// chunk. Malformed items become `E` through `From<CompactError>`.
    pub fn expand<E: From<CompactError>>(
        &mut self,
        items: &[Item],
        f: &mut dyn FnMut(&[Gate]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.expand_inner(items, f).map_err(|e| match e {
            Fail::Compact(e) => E::from(e),
            Fail::Sink(e) => e,
        })
    }

    /// Flushes the last partial chunk and resets the item count for another pass.
    pub fn finish<E>(&mut self, f: &mut dyn FnMut(&[Gate]) -> Result<(), E>) -> Result<(), E> {
        self.items_done = 0;
        if self.buf.is_empty() {
            return Ok(());
        }
        let result = f(&self.buf);
        self.buf.clear();
        result
    }

    fn expand_inner<E>(
        &mut self,
        items: &[Item],
        f: &mut dyn FnMut(&[Gate]) -> Result<(), E>,
    ) -> Result<(), Fail<E>> {
        for item in items {
            let at = self.items_done;
            self.items_done += 1;
            match item {
                Item::Gate(g) => {
                    self.check_main_gate(g, at)?;
                    if self.buf.len() == CHUNK_GATES {
                        f(&self.buf).map_err(Fail::Sink)?;
                        self.buf.clear();
                    }
                    self.buf.push(*g);
                }
                Item::Call(c) => {
                    self.check_main_call(c, at)?;
                    let u = c.template as usize;
                    let base = self.main_num_wires;
                    let table = &mut self.tables[u];
                    prepare_table(table, &mut self.table_base[u], &self.compiled[u], base);
                    let n_in = c.inputs.len();
                    let start = TABLE_OFFSET as usize;
                    table[start..start + n_in].copy_from_slice(&c.inputs);
                    table[start + n_in..start + n_in + c.outputs.len()].copy_from_slice(&c.outputs);
                    self.run(c.template, base, f)?;
                }
            }
        }
        Ok(())
    }

    fn check_main_gate(&self, g: &Gate, item: u64) -> Result<(), CompactError> {
        let at = || Location::Main { item };
        if g.op == Op::Const && g.a > 1 {
            return Err(CompactError::ConstNotBit {
                at: at(),
                value: g.a,
            });
        }
        for &wire in g.inputs().iter().chain(std::iter::once(&g.out)) {
            if wire >= self.main_num_wires {
                return Err(CompactError::WireOutOfRange {
                    at: at(),
                    wire,
                    num_wires: self.main_num_wires as u64,
                });
            }
        }
        Ok(())
    }

    fn check_main_call(&mut self, c: &Call, item: u64) -> Result<(), CompactError> {
        let at = || Location::Main { item };
        let u = c.template as usize;
        let Some(comp) = self.compiled.get(u) else {
            return Err(CompactError::NoSuchTemplate {
                at: at(),
                callee: c.template,
                count: self.templates.len(),
            });
        };
        check_arity(&self.templates[u], c, at)?;
        if comp.info.depth > self.reserved as u64 {
            return Err(CompactError::ScratchNotReserved {
                at: at(),
                callee: c.template,
                callee_name: self.templates[u].name.clone(),
                needed: comp.info.depth,
                reserved: self.reserved,
            });
        }
        if let Some(&wire) = c
            .inputs
            .iter()
            .chain(&c.outputs)
            .find(|&&w| w >= self.main_num_wires)
        {
            return Err(CompactError::WireOutOfRange {
                at: at(),
                wire,
                num_wires: self.main_num_wires as u64,
            });
        }
        if let Some(wire) = call_alias(c, &mut self.sorted) {
            return Err(CompactError::CallAliasing { at: at(), wire });
        }
        Ok(())
    }

    /// Emits one call of `top` whose table already holds the caller's slots.
    fn run<E>(
        &mut self,
        top: u32,
        base: WireId,
        f: &mut dyn FnMut(&[Gate]) -> Result<(), E>,
    ) -> Result<(), Fail<E>> {
        let Expander {
            compiled,
            tables,
            table_base,
            stack,
            buf,
            ..
        } = self;
        stack.clear();
        stack.push(Frame {
            template: top,
            step: 0,
            base,
        });
        while let Some(&Frame {
            template,
            step,
            base,
        }) = stack.last()
        {
            let t = template as usize;
            let comp = &compiled[t];
            let Some(&s) = comp.steps.get(step) else {
                stack.pop();
                continue;
            };
            let top_index = stack.len() - 1;
            stack[top_index].step += 1;
            match s {
                Step::Gates { start, end } => {
                    emit(&comp.gates[start..end], &tables[t], buf, f).map_err(Fail::Sink)?
                }
                Step::Call { callee, args_start } => {
                    let u = callee as usize;
                    let callee_comp = &compiled[u];
                    let callee_base = base + comp.own_scratch;
                    // u < t (validated), so the two tables are distinct.
                    let (lower, upper) = tables.split_at_mut(t);
                    let caller_table = &upper[0];
                    let table = &mut lower[u];
                    prepare_table(table, &mut table_base[u], callee_comp, callee_base);
                    let n = callee_comp.num_args();
                    let start = TABLE_OFFSET as usize;
                    for (dst, &pos) in table[start..start + n]
                        .iter_mut()
                        .zip(&comp.args[args_start..args_start + n])
                    {
                        *dst = caller_table[pos as usize];
                    }
                    stack.push(Frame {
                        template: callee,
                        step: 0,
                        base: callee_base,
                    });
                }
            }
        }
        Ok(())
    }
}

/// Makes `table` ready for a call of `comp` whose scratch starts at `base`: allocated, the
/// constant entries set, and the scratch part mapped to `base..`.
fn prepare_table(
    table: &mut Vec<WireId>,
    cached: &mut Option<WireId>,
    comp: &Compiled,
    base: WireId,
) {
    if table.is_empty() {
        table.resize(TABLE_OFFSET as usize + comp.num_wires as usize, 0);
        table[1] = 1;
    }
    if *cached != Some(base) {
        let first = TABLE_OFFSET as usize + comp.num_args();
        for (i, slot) in table[first..].iter_mut().enumerate() {
            *slot = base + i as WireId;
        }
        *cached = Some(base);
    }
}

/// Appends `gates` renamed through `table` to `buf`, handing `f` every full chunk.
#[inline]
fn emit<E>(
    mut gates: &[Gate],
    table: &[WireId],
    buf: &mut Vec<Gate>,
    f: &mut dyn FnMut(&[Gate]) -> Result<(), E>,
) -> Result<(), E> {
    while !gates.is_empty() {
        let room = CHUNK_GATES - buf.len();
        if room == 0 {
            f(buf)?;
            buf.clear();
            continue;
        }
        let (now, rest) = gates.split_at(room.min(gates.len()));
        buf.extend(now.iter().map(|g| {
            debug_assert!((g.a.max(g.b).max(g.out) as usize) < table.len());
            // SAFETY: `gates` come from a `Compiled` built from a validated template, whose
            // operands are table positions `< 2 + num_wires` (wires `< num_wires`, constant
            // bits 0 or 1, unused operands 0), and `prepare_table` made `table` exactly
            // `2 + num_wires` long. Dropping the three bounds checks per gate removes about a
            // quarter of the instructions of expansion (measured with cachegrind).
            unsafe {
                Gate {
                    op: g.op,
                    a: *table.get_unchecked(g.a as usize),
                    b: *table.get_unchecked(g.b as usize),
                    out: *table.get_unchecked(g.out as usize),
                }
            }
        }));
        gates = rest;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Whole circuits: validation, flattening, fingerprints, garbling source, statistics
// ---------------------------------------------------------------------------------------

/// Sizes of a validated compact circuit.
struct Summary {
    /// Scratch depth needed by the main body's calls.
    reserved: u64,
    gates: u64,
    ands: u64,
    calls: u64,
}

impl CompactCircuit {
    /// Checks the whole circuit: the layout, every template (module docs), and the main
    /// body (wires in range, reads only of inputs or wires written earlier, constants 0 or
    /// 1, calls of existing templates with the right arity and non-aliasing outputs, all
    /// outputs set), and that the expansion's counts and wire count fit.
    pub fn validate(&self) -> Result<(), CompactError> {
        self.check().map(|_| ())
    }

    fn check(&self) -> Result<Summary, CompactError> {
        let infos = check_templates(&self.templates)?;
        let num_wires = self.layout.num_wires as u64;
        let n_in = check_layout(&self.layout, num_wires)?;
        let mut set = BitSet::new(num_wires);
        set.set_prefix(n_in);
        let mut sorted = Vec::new();
        let mut sum = Summary {
            reserved: 0,
            gates: 0,
            ands: 0,
            calls: 0,
        };
        let overflow = || CompactError::CountOverflow {
            what: "the main body".to_string(),
        };
        for (k, item) in self.main.iter().enumerate() {
            let at = || Location::Main { item: k as u64 };
            let in_range = |wire: WireId| {
                if wire as u64 >= num_wires {
                    Err(CompactError::WireOutOfRange {
                        at: at(),
                        wire,
                        num_wires,
                    })
                } else {
                    Ok(())
                }
            };
            let read = |set: &BitSet, wire: WireId| {
                in_range(wire)?;
                if set.get(wire as u64) {
                    Ok(())
                } else {
                    Err(CompactError::UnsetRead { at: at(), wire })
                }
            };
            match item {
                Item::Gate(g) => {
                    if g.op == Op::Const && g.a > 1 {
                        return Err(CompactError::ConstNotBit {
                            at: at(),
                            value: g.a,
                        });
                    }
                    for &w in g.inputs() {
                        read(&set, w)?;
                    }
                    in_range(g.out)?;
                    set.set(g.out as u64);
                    sum.gates = sum.gates.checked_add(1).ok_or_else(overflow)?;
                    sum.ands += u64::from(g.op == Op::And);
                }
                Item::Call(c) => {
                    let u = c.template as usize;
                    let info = infos.get(u).ok_or_else(|| CompactError::NoSuchTemplate {
                        at: at(),
                        callee: c.template,
                        count: self.templates.len(),
                    })?;
                    check_arity(&self.templates[u], c, at)?;
                    for &w in &c.inputs {
                        read(&set, w)?;
                    }
                    for &w in &c.outputs {
                        in_range(w)?;
                    }
                    if let Some(wire) = call_alias(c, &mut sorted) {
                        return Err(CompactError::CallAliasing { at: at(), wire });
                    }
                    for &w in &c.outputs {
                        set.set(w as u64);
                    }
                    sum.gates = sum.gates.checked_add(info.gates).ok_or_else(overflow)?;
                    sum.ands = sum.ands.checked_add(info.ands).ok_or_else(overflow)?;
                    sum.reserved = sum.reserved.max(info.depth);
                    sum.calls += 1;
                }
            }
        }
        for (index, &wire) in self.layout.output_wires.iter().enumerate() {
            if !set.get(wire as u64) {
                return Err(CompactError::OutputUnset {
                    index: index as u64,
                    wire,
                });
            }
        }
        let needed = num_wires + sum.reserved;
        if needed > u32::MAX as u64 {
            return Err(CompactError::TooManyWires {
                what: "the expanded circuit",
                needed,
                max: u32::MAX as u64,
            });
        }
        Ok(sum)
    }

    /// The expansion as one flat circuit (slot semantics; `num_wires` = main slots plus the
    /// scratch of the main body's calls). Holds every expanded gate in memory: for tests
    /// and small programs.
    pub fn flatten(&self) -> Result<Circuit, CompactError> {
        let sum = self.check()?;
        let mut expander =
            Expander::with_reserved(&self.templates, self.layout.num_wires, sum.reserved)?;
        let mut gates = Vec::with_capacity(sum.gates.min(1 << 24) as usize);
        let mut sink = |chunk: &[Gate]| -> Result<(), CompactError> {
            gates.extend_from_slice(chunk);
            Ok(())
        };
        expander.expand(&self.main, &mut sink)?;
        expander.finish(&mut sink)?;
        let mut layout = self.layout.clone();
        layout.num_wires = expander.num_wires();
        Ok(Circuit { layout, gates })
    }

    /// BLAKE3 digest of the compact form (see [`fingerprint_parts`]).
    pub fn fingerprint(&self) -> [u8; 32] {
        let mut h = fingerprint_parts(&self.layout, &self.templates);
        hash_items(&mut h, &self.main);
        *h.finalize().as_bytes()
    }
}

/// Domain separation for [`fingerprint_parts`].
const FINGERPRINT_DOMAIN: &[u8] = b"pgc compact circuit v1\0";

/// Starts the fingerprint of a compact circuit: the domain string, the (slotted main)
/// layout, and every template (wire counts and items; names are not included, as they do
/// not change the computation). Continue with [`hash_items`] over the main body, in any
/// chunking, then `finalize()`. Every part is self-delimiting, so the main body's length
/// need not be known in advance.
pub fn fingerprint_parts(layout: &Layout, templates: &[Template]) -> blake3::Hasher {
    let mut h = blake3::Hasher::new();
    h.update(FINGERPRINT_DOMAIN);
    let layout_bytes = layout.to_bytes();
    h.update(&(layout_bytes.len() as u64).to_le_bytes());
    h.update(&layout_bytes);
    h.update(&(templates.len() as u64).to_le_bytes());
    for t in templates {
        h.update(&t.num_inputs.to_le_bytes());
        h.update(&t.num_outputs.to_le_bytes());
        h.update(&t.num_wires.to_le_bytes());
        h.update(&(t.items.len() as u64).to_le_bytes());
        hash_items(&mut h, &t.items);
    }
    h
}

/// Feeds items to a fingerprint: a gate as tag 0 and its 13 canonical bytes; a call as
/// tag 1, the template index, the input count (u64) and inputs, the output count and
/// outputs (all little-endian).
pub fn hash_items(h: &mut blake3::Hasher, items: &[Item]) {
    // Encoding into a buffer first: BLAKE3 is far faster on large updates.
    const FLUSH: usize = 1 << 16;
    let mut buf: Vec<u8> = Vec::with_capacity(FLUSH + 64);
    for item in items {
        match item {
            Item::Gate(g) => {
                buf.push(0);
                buf.extend_from_slice(&g.to_bytes());
            }
            Item::Call(c) => {
                buf.push(1);
                buf.extend_from_slice(&c.template.to_le_bytes());
                for wires in [&c.inputs, &c.outputs] {
                    buf.extend_from_slice(&(wires.len() as u64).to_le_bytes());
                    for &w in wires {
                        buf.extend_from_slice(&w.to_le_bytes());
                    }
                }
            }
        }
        if buf.len() >= FLUSH {
            h.update(&buf);
            buf.clear();
        }
    }
    h.update(&buf);
}

/// A compact circuit's parts as [`GateSource::compact_parts`] gives them.
pub struct CompactParts<'a> {
    pub templates: &'a [Template],
    /// Wires of the main body (the expansion's scratch lies above them).
    pub main_num_wires: u32,
    pub main: &'a dyn MainItems,
}

/// Ends a pass over a main body early (the consumer keeps the reason itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopPass;

/// A compact circuit's main body, item by item.
pub trait MainItems: Sync {
    /// Calls `f` on the main body's items in consecutive pieces, in order; an `Err` from
    /// `f` ends the pass and is returned. A source read from a file that fails or changes
    /// during the pass stops early with `Ok(())` and reports it through
    /// [`GateSource::check_complete`], as its gate passes do.
    fn for_each_items(
        &self,
        f: &mut dyn FnMut(&[Item]) -> Result<(), StopPass>,
    ) -> Result<(), StopPass>;
}

impl MainItems for CompactSource {
    fn for_each_items(
        &self,
        f: &mut dyn FnMut(&[Item]) -> Result<(), StopPass>,
    ) -> Result<(), StopPass> {
        self.circuit.main.chunks(CHUNK_GATES).try_for_each(f)
    }
}

/// A validated [`CompactCircuit`] as a [`GateSource`]: the garbler sees the expansion;
/// `layout().num_wires` is the expansion's wire count (main slots plus scratch), so label
/// memory is that many labels per party.
#[derive(Clone, Debug)]
pub struct CompactSource {
    circuit: CompactCircuit,
    layout: Layout,
    gates: u64,
    ands: u64,
    fingerprint: [u8; 32],
    /// Scratch wires above the main slots.
    scratch: u32,
}

impl CompactSource {
    /// Validates the circuit ([`CompactCircuit::validate`]) and computes its counts and
    /// fingerprint.
    pub fn new(circuit: CompactCircuit) -> Result<Self, CompactError> {
        let sum = circuit.check()?;
        let mut layout = circuit.layout.clone();
        // `check` verified that this fits.
        layout.num_wires += sum.reserved as u32;
        Ok(CompactSource {
            fingerprint: circuit.fingerprint(),
            layout,
            gates: sum.gates,
            ands: sum.ands,
            scratch: sum.reserved as u32,
            circuit,
        })
    }

    pub fn circuit(&self) -> &CompactCircuit {
        &self.circuit
    }

    pub fn into_circuit(self) -> CompactCircuit {
        self.circuit
    }
}

impl GateSource for CompactSource {
    fn layout(&self) -> &Layout {
        &self.layout
    }
    fn gate_count(&self) -> u64 {
        self.gates
    }
    fn and_count(&self) -> u64 {
        self.ands
    }
    fn fingerprint(&self) -> [u8; 32] {
        self.fingerprint
    }
    fn for_each_chunk<E>(&self, f: &mut dyn FnMut(&[Gate]) -> Result<(), E>) -> Result<(), E> {
        let c = &self.circuit;
        // The circuit was validated in `new` and cannot have changed since (private
        // field), so neither building the expander nor expanding can fail on the data.
        let invariant = |e: CompactError| -> ! {
            panic!("CompactSource: validated circuit failed to expand: {e}")
        };
        let mut expander =
            Expander::with_reserved(&c.templates, c.layout.num_wires, self.scratch as u64)
                .unwrap_or_else(|e| invariant(e));
        match expander.expand_inner(&c.main, f) {
            Ok(()) => {}
            Err(Fail::Sink(e)) => return Err(e),
            Err(Fail::Compact(e)) => invariant(e),
        }
        expander.finish(f)
    }
    fn compact_parts(&self) -> Option<CompactParts<'_>> {
        Some(CompactParts {
            templates: &self.circuit.templates,
            main_num_wires: self.circuit.layout.num_wires,
            main: self,
        })
    }
    fn form(&self) -> crate::ir::CircuitForm {
        crate::ir::CircuitForm::Compact
    }
}

/// Size of a compact circuit and of its expansion.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CompactStats {
    pub templates: u64,
    /// Items of all template bodies (what is stored for them).
    pub template_items: u64,
    pub main_items: u64,
    /// Calls in the main body.
    pub calls: u64,
    /// Gates and AND gates of the expansion.
    pub gates: u64,
    pub and_gates: u64,
    /// Wires of the main body (`layout.num_wires`).
    pub main_slots: u64,
    /// Scratch wires above the main slots that the main body's calls need.
    pub scratch_slots: u64,
    /// Wires of the expansion, `main_slots + scratch_slots`: labels held per party.
    pub peak_live_wires: u64,
    /// `peak_live_wires` × 16 bytes.
    pub label_bytes_per_party: u64,
}

/// Validates `c` and computes its [`CompactStats`].
pub fn compact_stats(c: &CompactCircuit) -> Result<CompactStats, CompactError> {
    let sum = c.check()?;
    let main_slots = c.layout.num_wires as u64;
    let peak = main_slots + sum.reserved;
    Ok(CompactStats {
        templates: c.templates.len() as u64,
        template_items: c.templates.iter().map(|t| t.items.len() as u64).sum(),
        main_items: c.main.len() as u64,
        calls: sum.calls,
        gates: sum.gates,
        and_gates: sum.ands,
        main_slots,
        scratch_slots: sum.reserved,
        peak_live_wires: peak,
        label_bytes_per_party: peak * 16,
    })
}
