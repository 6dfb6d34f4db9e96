//! Compact compilation: a function called again with arguments of the same *shape* reuses
//! the body compiled at its first such call, as a template of the compact circuit
//! ([`pgc_circuit::compact`]), instead of being inlined again.
//!
//! The shape of a call is which argument bits are compile-time constants (and their
//! values), plus the size and element type of every array passed by pointer: with the
//! same shape, the body folds the same constants and so builds the same gates, whatever
//! wires carry the other bits. So the first call of each shape compiles the body once,
//! with those bits as fresh template inputs, and every later call costs a table lookup
//! and a call item: compile time follows the program, not the number of calls.
//!
//! A function qualifies when its body (and every function it calls) reads and writes only
//! its parameters and locals: no global variable, no `static` local, no port. Pointer
//! arguments must point into disjoint objects (the template copies them in and writes
//! them back). A call under a secret condition writes its pointer results back under that
//! condition, which is what inlining would have done. Results that are constants or
//! unchanged inputs come back as such (no wires), so read-only array arguments cost
//! nothing at the call.
//!
//! Value ranges ([`crate::range`]) pass through calls: the shape also holds the upper bound of
//! each integer a call passes ([`FnUse`]), the template assumes those bounds of its inputs and
//! records its *bound program* ([`crate::replay`]), and each call replays it from its own
//! exact intervals to bound its results. A function whose exact shapes are not reused (a row
//! of a table, bounds growing row by row) is keyed by rounded bounds ([`FnTier::Rounded`]), as
//! a nest of loops is ([`crate::loops`]). A scalar's lower bound is part of the shape too,
//! rounded down to a power of two ([`key_lower_bound`]), and scalar results get their lower
//! bounds replayed: a DP cell at least `|i − j|` is as narrow as inlined near the table's
//! edges, while the cells' shapes still repeat.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use lang_c::ast::{FunctionDefinition, Identifier};
use lang_c::span::{Node, Span};
use lang_c::visit::Visit;
use pgc_circuit::Lit;
use pgc_circuit::compact::{Item, Template};
use pgc_circuit::netlist::NetBuilder;

use crate::decl::Param;
use crate::lower::{Binding, Lowerer, Ptr, Val, VarId};
use crate::replay::{Interval, NO_REG, Op};
use crate::types::Ty;

type R<T> = Result<T, crate::CompileError>;

/// Different shapes of one function compiled as templates before calls of further shapes
/// use one generic template that takes every argument bit as a wire (constants included):
/// a function called with a different constant each time (a loop counter, or values whose
/// known-zero high bits grow with the iteration) would otherwise make one template per call.
const MAX_SHAPES_PER_FUNCTION: usize = 16;

/// Shapes of one function keyed by the upper bounds of its integers (exact, then rounded)
/// compiled as templates before its calls are keyed by constant bits only.
const MAX_RANGED_SHAPES_PER_FUNCTION: usize = 1 << 15;

/// An integer that a call passes or gets back: a scalar integer argument, an integer
/// element of an array passed by pointer (which the call also gives back), or the return
/// value (given back only). Its interval is an input of the template's bound program, its
/// result's interval an output ([`crate::replay`]).
#[derive(Clone, Copy, Debug)]
struct FnUse {
    /// The argument it lies in (`None`: the return value).
    arg: Option<usize>,
    /// Its first bit in the argument's bits (or the return value's).
    off: u32,
    len: u32,
    /// A scalar argument or the return value (not an element of an array).
    scalar: bool,
}

/// How much of a call a function's shape fixes, besides its constant bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FnTier {
    /// The exact upper bounds of its integers.
    Exact,
    /// Their upper bounds rounded up ([`crate::loops::round_key_bound`]), the constant bits
    /// of an integer below its rounded bound's width made wires: calls whose bounds grow
    /// call by call (a row of a table) share a template per band of bounds. Scalars keep
    /// their lower bounds' tiers ([`key_lower_bound`]).
    Rounded,
    /// As `Rounded`, without lower bounds: where the rounded shapes with lower bounds were
    /// not reused (a short table, whose cells have too few calls per class).
    RoundedUpper,
    /// No bounds (and after [`MAX_SHAPES_PER_FUNCTION`] shapes no constants either).
    Constants,
}

/// Per function, how its shapes keyed by bounds were reused.
#[derive(Default)]
struct FnRanged {
    exact_shapes: usize,
    exact_reuses: u64,
    /// Its exact shapes were not reused: keyed by rounded bounds from now on.
    rounded: bool,
    rounded_shapes: usize,
    rounded_reuses: u64,
    /// Its rounded shapes with lower bounds were not reused: keyed without them.
    upper_only: bool,
    upper_shapes: usize,
    upper_reuses: u64,
    /// Its rounded shapes were not reused either (or a build failed): keyed by constants.
    unranged: bool,
}

/// Whether a function has made at least `MAX_SHAPES_PER_FUNCTION` shapes and fewer reuses
/// than shapes (or the most ranged shapes): its next keys should be coarser.
fn shapes_not_reused(shapes: usize, reuses: u64) -> bool {
    shapes >= MAX_RANGED_SHAPES_PER_FUNCTION
        || (shapes >= MAX_SHAPES_PER_FUNCTION && reuses < shapes as u64)
}

/// A compiled shape of a function: its call, and what its results' intervals are.
pub struct FnEntry {
    call: MemoEntry,
    /// Per use ([`FnUse`]), the interval the build found for its result (`None`: no result,
    /// or nothing known); empty when the shape has no bounds.
    out_ranges: Vec<Option<Interval>>,
    /// The template's bound program ([`crate::loops::LoopState::programs`]), where one was
    /// recorded.
    prog: Option<u32>,
}

/// Where one result bit of a memoized call comes from.
#[derive(Clone, Copy, Debug)]
enum ResultBit {
    Const(bool),
    /// The call's input bit `k`, complemented if the flag is set.
    Input(u32, bool),
    /// The template's output `j`, complemented if the flag is set.
    Output(u32, bool),
}

/// A compiled shape of a function (or of a loop body).
#[derive(Clone, Debug)]
pub struct MemoEntry {
    /// `None` when every result bit is a constant or an input (no template needed).
    template: Option<u32>,
    num_outputs: u32,
    /// Result bits: the return value's, then each pointer argument's region in order.
    results: Vec<ResultBit>,
}

/// A fast hasher for shape keys (looked up at every call; our own data, no DoS concern).
#[derive(Default)]
pub struct ShapeHasher(u64);

impl Hasher for ShapeHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        for &b in chunks.remainder() {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(26) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Compact-compilation state of a [`Lowerer`].
#[derive(Default)]
pub struct CompactState<'a> {
    /// Loop bodies stored once ([`crate::loops`]).
    pub loops: crate::loops::LoopState<'a>,
    pub templates: Vec<Template>,
    /// Shared: every call of a shape takes its entry (a clone would copy its vectors).
    memo: HashMap<(String, Vec<u8>), Rc<FnEntry>, BuildHasherDefault<ShapeHasher>>,
    shapes: HashMap<String, usize>,
    /// Per function, its shapes keyed by bounds.
    ranged: HashMap<String, FnRanged>,
    qualifies: HashMap<String, bool>,
    /// Calls answered from a template (for statistics).
    pub calls_reused: u64,
    /// Expanded gates of each template (its gates plus those of the calls it makes).
    pub template_gates: Vec<u64>,
    /// Expanded gates of the calls made by the main body so far.
    pub main_call_gates: u64,
    /// Templates being compiled right now (nested when a body calls another function).
    pub(crate) building: u32,
    /// Parsed signatures by function name.
    pub signatures: HashMap<String, (Ty, Vec<Param>), BuildHasherDefault<ShapeHasher>>,
}

impl CompactState<'_> {
    /// Whether a template body is being compiled (the builder is then the template's).
    pub fn is_building(&self) -> bool {
        self.building > 0
    }

    /// Gates made so far by a compilation whose main builder emitted `main_gates`.
    pub fn expanded_so_far(&self, main_gates: u64) -> u64 {
        self.main_call_gates + main_gates
    }
}

/// One argument, ready to pass: its bits, and for pointers the object they point into.
struct Arg {
    bits: Vec<Lit>,
    ptr: Option<Ptr>,
    ty: Ty,
}

struct Idents<'a>(Vec<&'a str>);

impl<'a> Visit<'a> for Idents<'a> {
    fn visit_identifier(&mut self, id: &'a Identifier, _span: &'a Span) {
        self.0.push(&id.name);
    }
}

impl<'a> Lowerer<'a> {
    /// Whether `name` may be compiled once per shape (see the module docs).
    fn qualifies(&mut self, name: &str, f: &'a Node<FunctionDefinition>) -> bool {
        if let Some(&q) = self.compact.qualifies.get(name) {
            return q;
        }
        // Assume yes while looking (recursion is an error elsewhere anyway).
        self.compact.qualifies.insert(name.to_string(), true);
        // The body only: the definition's own specifiers may say `static`.
        let span = f.node.statement.span;
        let body = &self.text[span.start.min(self.text.len())..span.end.min(self.text.len())];
        let mut ok = !["static", "INPUT_", "OUTPUT_"]
            .iter()
            .any(|w| body.contains(w));
        if ok {
            let mut ids = Idents(Vec::new());
            ids.visit_function_definition(&f.node, &f.span);
            for id in ids.0 {
                if matches!(self.globals.get(id), Some(Binding::Var(_)))
                    || self.pending_globals.contains_key(id)
                {
                    ok = false;
                    break;
                }
                if id != name
                    && let Some(&g) = self.functions.get(id)
                    && !self.qualifies(id, g)
                {
                    ok = false;
                    break;
                }
            }
        }
        self.compact.qualifies.insert(name.to_string(), ok);
        ok
    }

    /// Calls `name` through a template if it qualifies; `None` means: inline it.
    pub fn call_compact(
        &mut self,
        name: &str,
        f: &'a Node<FunctionDefinition>,
        params: &[Param],
        args: &[(Val, Span)],
        ret_ty: &Ty,
    ) -> R<Option<Val>> {
        if !self.qualifies(name, f) || matches!(ret_ty, Ty::Pointer(_)) {
            return Ok(None);
        }
        let mut prepared = Vec::with_capacity(args.len());
        for ((_, pty, _), (arg, aspan)) in params.iter().zip(args) {
            let pty = Self::adjust_param(pty.clone());
            if let Ty::Pointer(_) = &pty {
                let Val::Ptr(p) = arg else {
                    return Ok(None); // the inlined call reports the error
                };
                if self.string_literals.is_literal(p.var) {
                    // Inlined, a write through it is refused (a template would write into
                    // its copy of the bytes, and the call's results back into the literal).
                    return Ok(None);
                }
                let start = p.off as usize;
                let len = (p.count * p.elem.bits()) as usize;
                if len > crate::bits::ARG_MAX_BITS {
                    // Held literal by literal as an argument: inline the call instead.
                    return Ok(None);
                }
                let bits = self.vars[p.var].bits.get(start..start + len);
                let Some(bits) = bits.map(std::borrow::Cow::into_owned) else {
                    return Ok(None);
                };
                if self.vars[p.var].active.is_some() {
                    // The variable's value differs by path; inlining handles that.
                    return Ok(None);
                }
                prepared.push(Arg {
                    bits,
                    ptr: Some(p.clone()),
                    ty: pty,
                });
            } else {
                let bits = self.convert_val(arg.clone(), &pty, *aspan)?;
                prepared.push(Arg {
                    bits,
                    ptr: None,
                    ty: pty,
                });
            }
        }
        // Pointer arguments must not overlap: the template treats them as separate copies.
        let ptrs: Vec<&Ptr> = prepared.iter().filter_map(|a| a.ptr.as_ref()).collect();
        for (i, p) in ptrs.iter().enumerate() {
            for q in &ptrs[..i] {
                let (a0, a1) = (p.off, p.off + p.count * p.elem.bits());
                let (b0, b1) = (q.off, q.off + q.count * q.elem.bits());
                if p.var == q.var && a0 < b1 && b0 < a1 {
                    return Ok(None);
                }
            }
        }
        // The integers passed and given back, and the exact intervals of those passed.
        let flat: Vec<Lit> = prepared
            .iter()
            .flat_map(|a| a.bits.iter().copied())
            .collect();
        let mut arg_starts = Vec::with_capacity(prepared.len());
        let mut at = 0;
        for a in &prepared {
            arg_starts.push(at);
            at += a.bits.len();
        }
        let uses = if self.opts.value_ranges && self.opts.bound_replay {
            fn_uses(&prepared, ret_ty)
        } else {
            Vec::new()
        };
        let ivs: Vec<Option<Interval>> = uses
            .iter()
            .map(|u| {
                let a = u.arg?;
                let at = arg_starts[a] + u.off as usize;
                self.range_of(&flat[at..at + u.len as usize])
            })
            .collect();
        let mut tier = match self.compact.ranged.get(name) {
            _ if !ivs.iter().any(Option::is_some) => FnTier::Constants,
            Some(r) if r.unranged => FnTier::Constants,
            Some(r) if r.upper_only => FnTier::RoundedUpper,
            Some(r) if r.rounded => FnTier::Rounded,
            _ => FnTier::Exact,
        };
        let (entry, generic, lifted) = loop {
            let (lifted, his) = match tier {
                FnTier::Exact => (
                    Vec::new(),
                    ivs.iter()
                        .map(|iv| iv.map(|(lo, hi)| (key_lower_bound(lo), hi)))
                        .collect(),
                ),
                FnTier::Rounded => rounded_key(&uses, &ivs, &arg_starts, &flat, true),
                FnTier::RoundedUpper => rounded_key(&uses, &ivs, &arg_starts, &flat, false),
                FnTier::Constants => (Vec::new(), Vec::new()),
            };
            let mut key = (name.to_string(), call_shape(&prepared, &lifted, tier, &his));
            let mut generic = false;
            if let Some(e) = self.compact.memo.get(&key) {
                self.compact.calls_reused += 1;
                let st = self.compact.ranged.entry(name.to_string()).or_default();
                match tier {
                    FnTier::Exact => st.exact_reuses += 1,
                    FnTier::Rounded => st.rounded_reuses += 1,
                    FnTier::RoundedUpper => st.upper_reuses += 1,
                    FnTier::Constants => {}
                }
                break (Rc::clone(e), generic, lifted);
            }
            if tier != FnTier::Constants {
                let st = self.compact.ranged.entry(name.to_string()).or_default();
                if tier == FnTier::Exact && shapes_not_reused(st.exact_shapes, st.exact_reuses) {
                    // Calls whose bounds differ call by call: rounded bounds may repeat.
                    st.rounded = true;
                    tier = FnTier::Rounded;
                    continue;
                }
                if tier == FnTier::Rounded
                    && shapes_not_reused(st.rounded_shapes, st.rounded_reuses)
                {
                    st.upper_only = true;
                    tier = FnTier::RoundedUpper;
                    continue;
                }
                if tier == FnTier::RoundedUpper
                    && shapes_not_reused(st.upper_shapes, st.upper_reuses)
                {
                    st.unranged = true;
                    tier = FnTier::Constants;
                    continue;
                }
            } else {
                let shapes = self.compact.shapes.entry(name.to_string()).or_default();
                if *shapes >= MAX_SHAPES_PER_FUNCTION {
                    // The generic shape: every bit a wire.
                    generic = true;
                    for b in key.1.iter_mut() {
                        if *b < 2 {
                            *b = 2;
                        }
                    }
                    key.0.push_str("\0generic");
                }
                if let Some(e) = self.compact.memo.get(&key) {
                    self.compact.calls_reused += 1;
                    break (Rc::clone(e), generic, lifted);
                }
            }
            let his = if his.is_empty() {
                vec![None; uses.len()]
            } else {
                his
            };
            let inputs = TemplateArgs {
                args: &prepared,
                generic,
                lifted: &lifted,
                uses: &uses,
                his: &his,
            };
            match self.build_template(name, f, params, inputs, ret_ty) {
                Ok(e) => {
                    match tier {
                        FnTier::Exact | FnTier::Rounded | FnTier::RoundedUpper => {
                            let st = self.compact.ranged.entry(name.to_string()).or_default();
                            match tier {
                                FnTier::Exact => st.exact_shapes += 1,
                                FnTier::Rounded => st.rounded_shapes += 1,
                                _ => st.upper_shapes += 1,
                            }
                        }
                        FnTier::Constants => {
                            *self.compact.shapes.entry(name.to_string()).or_default() += 1;
                        }
                    }
                    let e = Rc::new(e);
                    self.compact.memo.insert(key, Rc::clone(&e));
                    break (e, generic, lifted);
                }
                Err(_) if tier != FnTier::Constants => {
                    // Perhaps a wire made of a constant (a loop's bound): keyed by
                    // constants from now on, which also reports any real error.
                    let st = self.compact.ranged.entry(name.to_string()).or_default();
                    st.unranged = true;
                    tier = FnTier::Constants;
                }
                Err(_) => {
                    // Something only the template form refuses (e.g. a pointer moved before
                    // its argument's start): inline this function from now on, which also
                    // reports any real error in place.
                    self.compact.qualifies.insert(name.to_string(), false);
                    return Ok(None);
                }
            }
        };
        // The call: the argument bits that are template inputs, in order.
        let inputs: Vec<Lit> = flat
            .iter()
            .enumerate()
            .filter(|&(k, l)| is_template_input(l, generic) || lifted.get(k) == Some(&true))
            .map(|(_, l)| *l)
            .collect();
        let mut all = self.call_memo(&entry.call, &inputs);
        if !entry.out_ranges.is_empty() {
            let ret_len = ret_ty.bits() as usize;
            let mut result_starts = vec![None; prepared.len()];
            let mut at = ret_len;
            for (k, a) in prepared.iter().enumerate() {
                if a.ptr.is_some() {
                    result_starts[k] = Some(at);
                    at += a.bits.len();
                }
            }
            let call = FnCall {
                uses: &uses,
                ivs: &ivs,
                flat: &flat,
                arg_starts: &arg_starts,
                result_starts: &result_starts,
            };
            self.note_call_results(&entry, call, &mut all);
        }
        let mut results = all.into_iter();
        let ret_bits: Vec<Lit> = results.by_ref().take(ret_ty.bits() as usize).collect();
        for a in &prepared {
            if let Some(p) = &a.ptr {
                let bits: Vec<Lit> = results.by_ref().take(a.bits.len()).collect();
                let guard = self.cur;
                self.write_bits(p.var, p.off, &bits, guard);
            }
        }
        Ok(Some(match ret_ty {
            Ty::Void => Val::Void,
            t => Val::of(t.clone(), ret_bits),
        }))
    }

    /// Notes the intervals of a call's results (`all`, return value then pointer regions):
    /// those the template's bound program gives from the call's exact intervals, within what
    /// its build found (lower bounds the build's: a replayed one would fix a result's common
    /// high bits as constants, which are part of the next call's shape). Inside a template
    /// whose bound program is recorded, the call is a step of it.
    fn note_call_results(&mut self, entry: &FnEntry, call: FnCall, all: &mut [Lit]) {
        let FnCall {
            uses,
            ivs,
            flat,
            arg_starts,
            result_starts,
        } = call;
        let mut out_ranges = self.replayed_ranges(entry.prog, ivs, &entry.out_ranges, true);
        // An array's elements keep the build's lower bounds: replayed ones would fix some of
        // their high bits as constants (a row of a table), which the next call passes as
        // lifted inputs among wires, and a call's inputs are stored compactly only as runs
        // of wires (EDT-1023 as rows: a 15 MB file became 58 MB).
        for ((u, r), b) in uses.iter().zip(&mut out_ranges).zip(&entry.out_ranges) {
            if let (false, Some(r), Some(b)) = (u.scalar, r.as_mut(), b) {
                r.0 = b.0;
            }
        }
        let mut result_regs: Vec<u32> = Vec::new();
        if let Some(p) = entry.prog
            && self.ranges.recording().is_some()
        {
            let in_regs: Vec<u32> = uses
                .iter()
                .zip(ivs)
                .map(|(u, iv)| match (u.arg, iv) {
                    (Some(a), Some(_)) => {
                        let at = arg_starts[a] + u.off as usize;
                        self.bound_reg(&flat[at..at + u.len as usize])
                    }
                    _ => NO_REG,
                })
                .collect();
            result_regs = self.record_call_step(p, &in_regs, &out_ranges);
        }
        for (k, (u, r)) in uses.iter().zip(&out_ranges).enumerate() {
            let Some((lo, hi)) = *r else { continue };
            let at = match u.arg {
                None => 0,
                Some(a) => match result_starts[a] {
                    Some(s) => s,
                    None => continue,
                },
            } + u.off as usize;
            let slice = &mut all[at..at + u.len as usize];
            let noted = self.note_range(slice.to_vec(), lo, hi);
            slice.copy_from_slice(&noted);
            if let Some(&r) = result_regs.get(k) {
                self.bind_reg(&noted, r);
            }
        }
    }

    /// Compiles `name`'s body for the shape of `inputs.args` in a builder of its own,
    /// recording its bound program where the shape has bounds.
    fn build_template(
        &mut self,
        name: &str,
        f: &'a Node<FunctionDefinition>,
        params: &[Param],
        inputs: TemplateArgs,
        ret_ty: &Ty,
    ) -> R<FnEntry> {
        let outer = std::mem::replace(&mut self.g, NetBuilder::new(self.opts.optimize));
        // Intervals are facts about one builder's literals.
        let outer_ranges = self.ranges.enter_builder();
        let record = inputs.his.iter().any(Option::is_some);
        if record {
            self.ranges.start_recording();
        }
        let saved_paths = self.take_path_state();
        self.compact.building += 1;
        let result = self.template_body(name, f, params, &inputs, ret_ty);
        self.compact.building -= 1;
        let recording = self.ranges.take_recording();
        let inner = std::mem::replace(&mut self.g, outer);
        self.ranges.leave_builder(outer_ranges);
        self.restore_path_state(saved_paths);
        let body = result?;
        let call = self.finish_template(name, f.span, inner, &body.results, body.num_inputs)?;
        let prog = recording.map(|rec| {
            let programs = &mut self.compact.loops.programs;
            programs.push(rec.rec.finish(body.out_regs));
            programs.len() as u32 - 1
        });
        Ok(FnEntry {
            call,
            out_ranges: if record { body.out_ranges } else { Vec::new() },
            prog,
        })
    }

    /// Turns a builder that compiled a body with `num_inputs` fresh inputs into a stored
    /// template whose outputs are `result_lits` (sorted into constants, inputs passed
    /// through and template outputs; no template at all when nothing is computed).
    pub(crate) fn finish_template(
        &mut self,
        name: &str,
        span: Span,
        mut inner: NetBuilder,
        result_lits: &[Lit],
        num_inputs: u32,
    ) -> R<MemoEntry> {
        let mut outputs: Vec<Lit> = Vec::new();
        let mut index_of: HashMap<Lit, u32> = HashMap::new();
        let results = result_lits
            .iter()
            .map(|&l| {
                if let Some(v) = l.as_const() {
                    return ResultBit::Const(v);
                }
                let w = l.wire_id().expect("non-constant");
                if (w as u64) < num_inputs as u64 {
                    return ResultBit::Input(w, l.is_negated());
                }
                let j = *index_of.entry(l.positive()).or_insert_with(|| {
                    outputs.push(l.positive());
                    outputs.len() as u32 - 1
                });
                ResultBit::Output(j, l.is_negated())
            })
            .collect();
        if outputs.is_empty() {
            return Ok(MemoEntry {
                template: None,
                num_outputs: 0,
                results,
            });
        }
        inner.output(&outputs);
        let fail = |e: String| crate::CompileError::Source {
            pos: Some(self.map.pos(span.start)),
            message: format!("compiling `{name}` as a template: {e}"),
        };
        let (layout, items, _) = inner
            .prepare()
            .and_then(|p| p.into_items())
            .map_err(|e| fail(e.to_string()))?;
        let template = Template::from_ssa(
            name.to_string(),
            num_inputs,
            layout.num_wires,
            items,
            &layout.output_wires,
        )
        .map_err(|e| fail(e.to_string()))?;
        let gates = template
            .items
            .iter()
            .map(|item| match item {
                Item::Gate(_) => 1,
                Item::Call(c) => self.compact.template_gates[c.template as usize],
            })
            .sum();
        self.compact.template_gates.push(gates);
        // Kept until the file is written: thousands of them where a loop has many shapes.
        let mut template = template;
        template.items.shrink_to_fit();
        self.compact.templates.push(template);
        Ok(MemoEntry {
            template: Some(self.compact.templates.len() as u32 - 1),
            num_outputs: outputs.len() as u32,
            results,
        })
    }

    /// The gates a call of `entry` stands for (its template's, calls expanded).
    pub(crate) fn memo_gates(&self, entry: &MemoEntry) -> u64 {
        entry
            .template
            .map_or(0, |t| self.compact.template_gates[t as usize])
    }

    /// Emits a call of a memoized body with `inputs` (the template's input bits, in order)
    /// and returns the result bits it stands for.
    pub(crate) fn call_memo(&mut self, entry: &MemoEntry, inputs: &[Lit]) -> Vec<Lit> {
        let outs = match entry.template {
            Some(t) => {
                if self.compact.building == 0 {
                    self.compact.main_call_gates += self.compact.template_gates[t as usize];
                }
                self.g.call(t, inputs, entry.num_outputs)
            }
            None => Vec::new(),
        };
        entry
            .results
            .iter()
            .map(|r| match *r {
                ResultBit::Const(v) => Lit::constant(v),
                ResultBit::Input(k, neg) => lit_xor(inputs[k as usize], neg),
                ResultBit::Output(j, neg) => lit_xor(outs[j as usize], neg),
            })
            .collect()
    }

    /// Runs the body with the argument bits that are template inputs as the builder's
    /// inputs, each integer use ([`FnUse`]) noted to lie below its bound in the shape (an
    /// input of the bound program being recorded, if one is); returns the result bits
    /// (return value, then each pointer region), the input count and the results' intervals.
    fn template_body(
        &mut self,
        name: &str,
        f: &'a Node<FunctionDefinition>,
        params: &[Param],
        inputs: &TemplateArgs,
        ret_ty: &Ty,
    ) -> R<TemplateBody> {
        let TemplateArgs {
            args,
            generic,
            lifted,
            uses,
            his,
        } = *inputs;
        let is_input =
            |k: usize, l: &Lit| is_template_input(l, generic) || lifted.get(k) == Some(&true);
        let num_inputs = args
            .iter()
            .flat_map(|a| &a.bits)
            .enumerate()
            .filter(|&(k, l)| is_input(k, l))
            .count();
        let mut fresh = self.g.input(num_inputs as u32).into_iter();
        let mut region_vars = Vec::new();
        let mut param_vars = Vec::new();
        // Per argument, the variable holding its bits.
        let mut arg_vars: Vec<VarId> = Vec::with_capacity(args.len());
        let mut at = 0;
        for a in args {
            let bits: Vec<Lit> = a
                .bits
                .iter()
                .enumerate()
                .map(|(k, l)| {
                    if is_input(at + k, l) {
                        fresh.next().expect("one input per input bit")
                    } else {
                        *l
                    }
                })
                .collect();
            at += a.bits.len();
            let var = match &a.ptr {
                Some(p) => {
                    let ty = Ty::Array(Box::new(p.elem.clone()), p.count);
                    let target = self.new_var(ty, bits);
                    region_vars.push(target);
                    arg_vars.push(target);
                    let v = self.new_var(a.ty.clone(), vec![]);
                    self.vars[v].ptr = Some(Ptr {
                        var: target,
                        off: 0,
                        elem: p.elem.clone(),
                        count: p.count,
                    });
                    v
                }
                None => {
                    let v = self.new_var(a.ty.clone(), bits);
                    arg_vars.push(v);
                    v
                }
            };
            param_vars.push(var);
        }
        // The bounds the shape fixes, as facts about the template's inputs.
        for (k, (u, bound)) in uses.iter().zip(his).enumerate() {
            let (Some(a), Some((lo, hi))) = (u.arg, *bound) else {
                continue;
            };
            let v = arg_vars[a];
            let range = u.off as usize..(u.off + u.len) as usize;
            let bits = self.vars[v].bits.slice(range.clone()).into_owned();
            let noted = self.note_range(bits, lo, hi);
            if let Some(iv) = self.range_of(&noted) {
                self.record_op(&noted, Op::Input(k as u32), iv);
            }
            self.vars[v].bits.write(range.start, &noted);
        }
        let bindings = params
            .iter()
            .zip(param_vars)
            .filter_map(|((n, _, _), v)| n.clone().map(|n| (n, v)))
            .collect();
        let ret = self.run_body(name, f, ret_ty, bindings)?;
        let mut results = match ret {
            Val::Int(_, bits) | Val::Float(_, bits) | Val::Agg(_, bits) => bits,
            _ => Vec::new(),
        };
        let ret_len = results.len();
        let mut region_starts = vec![None; args.len()];
        let mut regions = region_vars.into_iter();
        for (k, a) in args.iter().enumerate() {
            if a.ptr.is_some() {
                region_starts[k] = Some(results.len());
                let v = regions.next().expect("one region per pointer");
                results.extend_from_slice(&self.var_bits(v));
            }
        }
        let mut out_ranges = Vec::with_capacity(uses.len());
        let mut out_regs = Vec::with_capacity(uses.len());
        for u in uses {
            let at = match u.arg {
                None if ret_len > 0 => Some(0),
                None => None,
                Some(a) => region_starts[a],
            };
            let (r, reg) = match at {
                Some(s) => {
                    let bits = &results[s + u.off as usize..s + (u.off + u.len) as usize];
                    (self.range_of(bits), self.bound_reg(bits))
                }
                None => (None, NO_REG),
            };
            out_ranges.push(r);
            out_regs.push(reg);
        }
        Ok(TemplateBody {
            results,
            num_inputs: num_inputs as u32,
            out_ranges,
            out_regs,
        })
    }
}

/// What a template of a function is built from: the call's arguments, which of their bits
/// are inputs (all where `generic`, else those that are not constants and those `lifted`,
/// per bit of the arguments one after another; empty when none), and per integer use its
/// bound in the shape (`None`: none).
#[derive(Clone, Copy)]
struct TemplateArgs<'x> {
    args: &'x [Arg],
    generic: bool,
    lifted: &'x [bool],
    uses: &'x [FnUse],
    his: &'x [Option<Interval>],
}

/// A function's body built as a template.
struct TemplateBody {
    results: Vec<Lit>,
    num_inputs: u32,
    /// Per use, its result's interval and its register in the bound program recorded.
    out_ranges: Vec<Option<Interval>>,
    out_regs: Vec<u32>,
}

/// One call, for noting its results' intervals: its integer uses and their exact intervals,
/// its argument bits one after another (`arg_starts`: where each argument begins), and
/// where each pointer argument's region begins in the call's results.
#[derive(Clone, Copy)]
struct FnCall<'x> {
    uses: &'x [FnUse],
    ivs: &'x [Option<Interval>],
    flat: &'x [Lit],
    arg_starts: &'x [usize],
    result_starts: &'x [Option<usize>],
}

/// The integers of a call ([`FnUse`]): an integer return value, each scalar integer
/// argument, each element of an array of integers passed by pointer.
fn fn_uses(args: &[Arg], ret_ty: &Ty) -> Vec<FnUse> {
    let mut uses = Vec::new();
    if let Ty::Int(t) = ret_ty {
        uses.push(FnUse {
            arg: None,
            off: 0,
            len: t.bits,
            scalar: true,
        });
    }
    for (k, a) in args.iter().enumerate() {
        match (&a.ptr, &a.ty) {
            (Some(p), _) => {
                if let Ty::Int(t) = &p.elem {
                    for e in 0..p.count as u32 {
                        uses.push(FnUse {
                            arg: Some(k),
                            off: e * t.bits,
                            len: t.bits,
                            scalar: false,
                        });
                    }
                }
            }
            (None, Ty::Int(t)) => uses.push(FnUse {
                arg: Some(k),
                off: 0,
                len: t.bits,
                scalar: true,
            }),
            _ => {}
        }
    }
    uses
}

/// A call's key bounds when keyed by rounded bounds ([`FnTier::Rounded`]), and the bits it
/// lifts: per use with an interval its upper bound rounded up, and the constant bits below
/// that bound's width made wires (per bit of the arguments; empty when none), so calls whose
/// integers hold different constants or bounds of one band share a shape.
fn rounded_key(
    uses: &[FnUse],
    ivs: &[Option<Interval>],
    arg_starts: &[usize],
    flat: &[Lit],
    with_lower: bool,
) -> (Vec<bool>, Vec<Option<Interval>>) {
    let mut lifted = Vec::new();
    let mut his = Vec::with_capacity(uses.len());
    for (u, iv) in uses.iter().zip(ivs) {
        let (Some(a), Some(iv)) = (u.arg, iv) else {
            his.push(None);
            continue;
        };
        let hi = crate::loops::round_key_bound(iv.1);
        // An array's elements keep lower bounds of 0: a row of a table has a different
        // lower bound per element in each row (`|i - j|`), and its rounded shapes would
        // no longer repeat.
        let lo = if with_lower && u.scalar {
            key_lower_bound(iv.0).min(hi)
        } else {
            0
        };
        his.push(Some((lo, hi)));
        let at = arg_starts[a] + u.off as usize;
        let width = (64 - hi.leading_zeros() as usize).min(u.len as usize);
        for k in at..at + width {
            if flat[k].as_const().is_some() {
                if lifted.is_empty() {
                    lifted = vec![false; flat.len()];
                }
                lifted[k] = true;
            }
        }
    }
    (lifted, his)
}

/// The shape of a call as bytes: per argument, a pointer's element count and type, then
/// per bit 0 or 1 (that constant) or 2 (a wire, or a lifted constant); with bounds, then the
/// tier and each use's bound (LEB128).
/// The lower bound a call's key holds for an integer of at least `lo`: `lo` rounded down to
/// a power of two (`0` stays `0`). Exact lower bounds would make nearly every cell of a
/// table its own shape (a cell `(i, j)` of an edit distance is at least `|i - j|`), and the
/// function would fall back to coarser keys; powers of two keep what a lower bound does for
/// a value near its bound (fixes its top bit, decides comparisons with smaller values).
fn key_lower_bound(lo: u64) -> u64 {
    if lo == 0 {
        0
    } else {
        1 << (63 - lo.leading_zeros())
    }
}

fn call_shape(args: &[Arg], lifted: &[bool], tier: FnTier, his: &[Option<Interval>]) -> Vec<u8> {
    let mut shape = Vec::new();
    let mut at = 0;
    for a in args {
        if let Some(p) = &a.ptr {
            shape.extend_from_slice(format!("*{}x{:?};", p.count, p.elem).as_bytes());
        }
        shape.extend(a.bits.iter().enumerate().map(|(k, l)| match l.as_const() {
            Some(_) if lifted.get(at + k) == Some(&true) => 2,
            Some(v) => v as u8,
            None => 2,
        }));
        at += a.bits.len();
        shape.push(b';');
    }
    if tier != FnTier::Constants {
        shape.push(0xff);
        shape.push(tier as u8);
        for bound in his {
            match *bound {
                None => shape.push(0),
                Some((lo, hi)) => {
                    shape.push(1);
                    for mut h in [hi, lo] {
                        while h >= 0x80 {
                            shape.push(h as u8 | 0x80);
                            h >>= 7;
                        }
                        shape.push(h as u8);
                    }
                }
            }
        }
    }
    shape
}

fn lit_xor(l: Lit, neg: bool) -> Lit {
    if neg { !l } else { l }
}

/// Whether a bit given to a template becomes one of its inputs: every bit of a generic
/// template, else every bit that is not a constant (constants are folded into the body).
pub(crate) fn is_template_input(l: &Lit, generic: bool) -> bool {
    generic || l.as_const().is_none()
}

/// `bits` as the template body sees them: each input bit (see [`is_template_input`]) the
/// next of the template's `fresh` input wires, constants as they are.
pub(crate) fn as_template_inputs(
    bits: &[Lit],
    generic: bool,
    fresh: &mut impl Iterator<Item = Lit>,
) -> Vec<Lit> {
    bits.iter()
        .map(|l| {
            if is_template_input(l, generic) {
                fresh.next().expect("one input per input bit")
            } else {
                *l
            }
        })
        .collect()
}
