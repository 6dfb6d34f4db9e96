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

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use lang_c::ast::{FunctionDefinition, Identifier};
use lang_c::span::{Node, Span};
use lang_c::visit::Visit;
use pgc_circuit::Lit;
use pgc_circuit::compact::{Item, Template};
use pgc_circuit::netlist::NetBuilder;

use crate::decl::Param;
use crate::lower::{Binding, Lowerer, Ptr, Val};
use crate::types::Ty;

type R<T> = Result<T, crate::CompileError>;

/// Different shapes of one function compiled as templates before calls of further shapes
/// use one generic template that takes every argument bit as a wire (constants included):
/// a function called with a different constant each time (a loop counter, or values whose
/// known-zero high bits grow with the iteration) would otherwise make one template per call.
const MAX_SHAPES_PER_FUNCTION: usize = 16;

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
    memo: HashMap<(String, Vec<u8>), MemoEntry, BuildHasherDefault<ShapeHasher>>,
    shapes: HashMap<String, usize>,
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
        let mut shape = Vec::new();
        for a in &prepared {
            if let Some(p) = &a.ptr {
                shape.extend_from_slice(format!("*{}x{:?};", p.count, p.elem).as_bytes());
            }
            shape.extend(a.bits.iter().map(|l| match l.as_const() {
                Some(v) => v as u8,
                None => 2,
            }));
            shape.push(b';');
        }
        let mut key = (name.to_string(), shape);
        let mut generic = false;
        let entry = match self.compact.memo.get(&key) {
            Some(e) => {
                self.compact.calls_reused += 1;
                e.clone()
            }
            None => {
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
                match self.compact.memo.get(&key) {
                    Some(e) => {
                        self.compact.calls_reused += 1;
                        e.clone()
                    }
                    None => {
                        *self.compact.shapes.entry(name.to_string()).or_default() += 1;
                        match self.build_template(name, f, params, &prepared, ret_ty, generic) {
                            Ok(e) => {
                                self.compact.memo.insert(key, e.clone());
                                e
                            }
                            Err(_) => {
                                // Something only the template form refuses (e.g. a pointer
                                // moved before its argument's start): inline this function
                                // from now on, which also reports any real error in place.
                                self.compact.qualifies.insert(name.to_string(), false);
                                return Ok(None);
                            }
                        }
                    }
                }
            }
        };
        // The call: the argument bits that are template inputs, in order.
        let inputs: Vec<Lit> = prepared
            .iter()
            .flat_map(|a| a.bits.iter().copied())
            .filter(|l| generic || l.as_const().is_none())
            .collect();
        let all = self.call_memo(&entry, &inputs);
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

    /// Compiles `name`'s body for the shape of `args` in a builder of its own.
    fn build_template(
        &mut self,
        name: &str,
        f: &'a Node<FunctionDefinition>,
        params: &[Param],
        args: &[Arg],
        ret_ty: &Ty,
        generic: bool,
    ) -> R<MemoEntry> {
        let outer = std::mem::replace(&mut self.g, NetBuilder::new(self.opts.optimize));
        // Intervals are facts about one builder's literals.
        let outer_ranges = self.ranges.enter_builder();
        let saved_paths = self.take_path_state();
        self.compact.building += 1;
        let result = self.template_body(name, f, params, args, ret_ty, generic);
        self.compact.building -= 1;
        let inner = std::mem::replace(&mut self.g, outer);
        self.ranges.leave_builder(outer_ranges);
        self.restore_path_state(saved_paths);
        let (result_lits, num_inputs) = result?;
        self.finish_template(name, f.span, inner, &result_lits, num_inputs)
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

    /// Runs the body with the non-constant argument bits as the builder's inputs; returns
    /// the result bits (return value, then each pointer region) and the input count.
    fn template_body(
        &mut self,
        name: &str,
        f: &'a Node<FunctionDefinition>,
        params: &[Param],
        args: &[Arg],
        ret_ty: &Ty,
        generic: bool,
    ) -> R<(Vec<Lit>, u32)> {
        let num_inputs = args
            .iter()
            .flat_map(|a| &a.bits)
            .filter(|l| is_template_input(l, generic))
            .count();
        let mut fresh = self.g.input(num_inputs as u32).into_iter();
        let mut region_vars = Vec::new();
        let mut param_vars = Vec::new();
        for a in args {
            let bits = as_template_inputs(&a.bits, generic, &mut fresh);
            let var = match &a.ptr {
                Some(p) => {
                    let ty = Ty::Array(Box::new(p.elem.clone()), p.count);
                    let target = self.new_var(ty, bits);
                    region_vars.push(target);
                    let v = self.new_var(a.ty.clone(), vec![]);
                    self.vars[v].ptr = Some(Ptr {
                        var: target,
                        off: 0,
                        elem: p.elem.clone(),
                        count: p.count,
                    });
                    v
                }
                None => self.new_var(a.ty.clone(), bits),
            };
            param_vars.push(var);
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
        for v in region_vars {
            results.extend_from_slice(&self.var_bits(v));
        }
        Ok((results, num_inputs as u32))
    }
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
