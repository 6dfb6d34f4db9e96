//! Symbolic execution of the C program into gates.
//!
//! Every variable holds the literals of its bits. Control flow never branches at compile time
//! on secret values: statements run under the *path condition* `cur` (a literal that is true
//! exactly on the executions reaching this point), and each write becomes
//! `new = cur ? value : old`. `break`, `continue` and `return` move their paths' condition
//! into the enclosing construct's accumulator and clear it from `cur`; since the accumulated
//! conditions are disjoint, merging them back is a free XOR. Loops are unrolled until their
//! condition is constantly false on every live path.
//!
//! To keep loop counters constant after a secret `break`, a variable also remembers the value
//! it was last given together with the path condition of that write ("active value"); a read
//! whose path condition implies that condition (it is on the stack of conditions implied by
//! `cur`) uses it instead of the merged multiplexer.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use lang_c::ast::*;
use lang_c::span::{Node, Span};
use pgc_circuit::netlist::NetBuilder;
use pgc_circuit::{Gates, InputPort, Lit, OutputPort, Owner, Visibility, blocks};

use crate::bits::Bits;
use crate::parallel::{OmpPragma, RedOp, ReductionUse, find_reductions};
use crate::source::LineMap;
use crate::types::{FloatTy, IntTy, StructDef, Ty};
use crate::{CompileError, Options};

pub type R<T> = Result<T, CompileError>;
pub type VarId = usize;

/// The largest input or output, in bits.
const PORT_MAX_BITS: u64 = 1 << 27;

/// Variables larger than this keep no active value (copying them per write would be costly).
const ACTIVE_VALUE_MAX_BITS: usize = 1 << 12;

/// A compile-time pointer: `count` elements of type `elem` start at bit `off` of `var`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ptr {
    pub var: VarId,
    pub off: u64,
    pub elem: Ty,
    pub count: u64,
}

/// An rvalue.
#[derive(Clone, Debug)]
pub enum Val {
    Int(IntTy, Vec<Lit>),
    /// A `float` or `double`: its IEEE-754 bits, LSB first.
    Float(FloatTy, Vec<Lit>),
    Agg(Ty, Vec<Lit>),
    Ptr(Ptr),
    Void,
}

impl Val {
    /// The value of an object of type `ty` (not void or a pointer) holding `bits`.
    pub fn of(ty: Ty, bits: Vec<Lit>) -> Val {
        match ty {
            Ty::Int(t) => Val::Int(t, bits),
            Ty::Float(f) => Val::Float(f, bits),
            t => Val::Agg(t, bits),
        }
    }
}

/// A secret index term of a place: `index * stride` bits, `index < count` in bounds.
#[derive(Clone, Debug)]
pub struct DynIdx {
    pub index: Vec<Lit>,
    pub stride: u64,
    pub count: u64,
}

/// An lvalue: bits `off + Σ index·stride ..` of variable `var`.
#[derive(Clone, Debug)]
pub struct Place {
    pub var: VarId,
    pub off: u64,
    pub dyns: Vec<DynIdx>,
    pub ty: Ty,
    /// Objects of type `ty` from here to the end of the array this one lies in (1 outside
    /// arrays): how far a pointer to it may move.
    pub run: u64,
}

impl Place {
    /// The whole of variable `var`, of type `ty`.
    pub fn whole(var: VarId, ty: Ty) -> Place {
        Place {
            var,
            off: 0,
            dyns: vec![],
            ty,
            run: 1,
        }
    }

    /// The object of type `ty` at bit `off` inside this one (a member or an element).
    pub fn inner(&self, off: u64, ty: Ty) -> Place {
        Place {
            var: self.var,
            off: self.off + off,
            dyns: self.dyns.clone(),
            ty,
            run: 1,
        }
    }
}

pub struct Var {
    pub ty: Ty,
    /// Its bits (stored compactly when large, see [`crate::bits`]).
    pub bits: Bits,
    pub ptr: Option<Ptr>,
    pub active: Option<(Lit, Vec<Lit>)>,
}

/// Names visible in one block (looked up at every identifier: a fast hasher).
pub type Scope =
    HashMap<String, Binding, std::hash::BuildHasherDefault<crate::compact::ShapeHasher>>;

#[derive(Clone, Debug)]
pub enum Binding {
    Var(VarId),
    Const(IntTy, i128),
    Typedef(Result<Ty, String>),
}

/// Constructs that `break`/`continue`/`return` leave. `own` counts the exits that target the
/// construct itself: when every exit inside a construct is its own, all paths that entered it
/// leave it normally, so the path condition after it is exactly the one before it.
pub enum Ctl {
    /// `conts` counts the `continue`s among `own`.
    Loop {
        brk: Lit,
        cont: Lit,
        own: u64,
        conts: u64,
    },
    Switch {
        brk: Lit,
        own: u64,
    },
    Func {
        ret_var: Option<VarId>,
    },
}

pub struct PendingOutput {
    pub name: String,
    pub var: VarId,
    pub visibility: Visibility,
    pub ty: Ty,
}

pub struct Lowerer<'a> {
    pub g: NetBuilder,
    pub opts: &'a Options,
    pub map: &'a LineMap,
    pub functions: HashMap<String, &'a Node<FunctionDefinition>>,
    pub globals: Scope,
    /// Global variable declarations not yet materialized (created on first use).
    pub pending_globals: HashMap<String, (&'a Node<Declaration>, &'a Node<InitDeclarator>)>,
    /// Per inlined function: its block scopes, innermost last.
    pub frames: Vec<Vec<Scope>>,
    /// Changes whenever a name is bound or a scope or frame starts or ends, so that a
    /// lookup remembered at one epoch holds while it stays the same.
    pub(crate) scope_epoch: u64,
    pub struct_tags: HashMap<String, Result<std::rc::Rc<StructDef>, String>>,
    /// Enum tags and whether the type is signed (some constant is negative).
    pub enum_tags: HashMap<String, bool>,
    pub vars: Vec<Var>,
    pub cur: Lit,
    implied: Vec<Lit>,
    implied_count: HashMap<Lit, u32>,
    pub ctl: Vec<Ctl>,
    pub call_stack: Vec<String>,
    /// Loop iterations and calls run so far, against [`Options::step_limit`].
    pub steps: u64,
    pub inputs: Vec<InputPort>,
    pub outputs: Vec<PendingOutput>,
    /// Declarations of ports already executed (a port declared in a loop is an error).
    pub port_decls: HashSet<usize>,
    /// Input parameters of the entry declared as arrays (`int INPUT_A_x[4]`), held as the
    /// array itself, which C adjusts to a pointer: `sizeof` gives a pointer's size.
    pub array_params: HashSet<VarId>,
    /// `break`/`continue`/`return` statements executed whose construct has not ended yet
    /// (a construct subtracts its own exits when it ends; so a construct inside which this
    /// count did not change lets every path that entered it out normally).
    pub exit_events: u64,
    /// Static locals, by declaration position.
    pub statics: HashMap<usize, VarId>,
    /// The preprocessed source (to compare expressions when finding reductions).
    pub text: &'a str,
    /// `#pragma omp parallel for` lines, in order.
    pub pragmas: Vec<OmpPragma>,
    /// Min/max reduction statements being run as reductions: `if` statement address →
    /// the compared expression and the variable, whose types must agree, and the loop.
    minmax_checks: HashMap<usize, (&'a Node<Expression>, VarId, RedOp, RegionLoop)>,
    /// The reduction variables of the region loop being run, and the loop.
    reduction_loops: HashMap<VarId, RegionLoop>,
    /// `for` loops (by offset) that region detection skips: their reductions turned out
    /// not to be combinable (see [`NotARegion`]); they run in order.
    pub sequential_loops: HashSet<usize>,
    /// Set with the error that stops a pass when a loop found on its own turns out not to
    /// be a region: the caller compiles again with the loop in `sequential_loops`.
    pub not_a_region: Option<NotARegion>,
    /// Templates and the memo of compact compilation ([`Options::compact`]).
    pub compact: crate::compact::CompactState<'a>,
    /// Variables whose scope ended, for reuse by new ones (compact mode only, where
    /// unrolled loops would otherwise grow the table by every iteration's locals).
    free_vars: Vec<VarId>,
    /// Variables ever given packed storage (large ones, see [`crate::bits`]): their pools
    /// are bounded together.
    packed_vars: Vec<VarId>,
    /// Variables that outlive their scope: ports and static locals.
    pinned_vars: HashSet<VarId>,
    /// The variables holding the program's string literals ([`crate::strings`]).
    pub string_literals: crate::strings::StringLiterals,
    /// Associative chains kept for balanced evaluation (`--optimize depth`).
    pub deferred: crate::deferred::Deferred,
    /// Intervals of integer values (see [`crate::range`]).
    pub ranges: crate::range::Ranges,
}

/// Conditions state saved while a template is compiled in a builder of its own.
pub struct PathState {
    cur: Lit,
    implied: Vec<Lit>,
    implied_count: HashMap<Lit, u32>,
}

/// A `for` loop being compiled as a parallel region (see [`crate::parallel`]).
pub struct RegionPlan<'a> {
    pub line: u32,
    /// Whether `#pragma omp parallel for` asked for it (then a dependence is an error).
    pub pragma: bool,
    /// The loop's offset in the preprocessed text.
    pub at: usize,
    pub reductions: Vec<(VarId, RedOp, IntTy)>,
    minmax: Vec<(usize, &'a Node<Expression>, VarId, RedOp)>,
}

/// The loop a reduction belongs to: its offset, and whether a pragma asked for the region.
#[derive(Clone, Copy, Debug)]
pub struct RegionLoop {
    at: usize,
    pragma: bool,
}

/// A loop that region detection chose on its own, whose reduction turned out (as its
/// statements ran) to compute something that partial results combined in any order do
/// not: its offset in the preprocessed text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotARegion(pub usize);

/// Per reduction variable while the loop runs: its value before the loop and each
/// iteration's partial result.
struct ReductionState {
    var: VarId,
    op: RedOp,
    ty: IntTy,
    init: Vec<Lit>,
    partials: Vec<Vec<Lit>>,
    /// Whether an iteration ran (and reset the variable to the identity).
    started: bool,
}

impl<'a> Lowerer<'a> {
    pub fn new(opts: &'a Options, map: &'a LineMap, g: NetBuilder) -> Lowerer<'a> {
        Lowerer {
            g,
            opts,
            map,
            functions: HashMap::new(),
            globals: Scope::default(),
            pending_globals: HashMap::new(),
            frames: Vec::new(),
            scope_epoch: 0,
            struct_tags: HashMap::new(),
            enum_tags: HashMap::new(),
            vars: Vec::new(),
            cur: Lit::TRUE,
            implied: vec![Lit::TRUE],
            implied_count: HashMap::from([(Lit::TRUE, 1)]),
            ctl: Vec::new(),
            call_stack: Vec::new(),
            steps: 0,
            inputs: Vec::new(),
            outputs: Vec::new(),
            port_decls: HashSet::new(),
            array_params: HashSet::new(),
            exit_events: 0,
            statics: HashMap::new(),
            text: "",
            pragmas: Vec::new(),
            minmax_checks: HashMap::new(),
            reduction_loops: HashMap::new(),
            sequential_loops: HashSet::new(),
            not_a_region: None,
            compact: Default::default(),
            free_vars: Vec::new(),
            packed_vars: Vec::new(),
            pinned_vars: HashSet::new(),
            string_literals: Default::default(),
            deferred: Default::default(),
            ranges: Default::default(),
        }
    }

    /// Takes the path conditions (literals of the current builder) and starts afresh.
    pub fn take_path_state(&mut self) -> PathState {
        PathState {
            cur: std::mem::replace(&mut self.cur, Lit::TRUE),
            implied: std::mem::replace(&mut self.implied, vec![Lit::TRUE]),
            implied_count: std::mem::replace(
                &mut self.implied_count,
                HashMap::from([(Lit::TRUE, 1)]),
            ),
        }
    }

    pub fn restore_path_state(&mut self, s: PathState) {
        self.cur = s.cur;
        self.implied = s.implied;
        self.implied_count = s.implied_count;
    }

    /// Keeps `var` alive beyond its scope (ports, static locals).
    pub fn pin_var(&mut self, var: VarId) {
        self.pinned_vars.insert(var);
    }

    /// Makes the variables of a scope that ended reusable (compact mode).
    fn release_scope(&mut self, scope: Scope) {
        if !self.opts.compact {
            return;
        }
        for b in scope.into_values() {
            if let Binding::Var(v) = b
                && !self.pinned_vars.contains(&v)
            {
                self.vars[v].bits = Bits::default();
                self.vars[v].ptr = None;
                self.vars[v].active = None;
                self.free_vars.push(v);
            }
        }
    }

    pub fn err<T>(&self, span: Span, msg: impl Into<String>) -> R<T> {
        Err(self.error(span, msg))
    }

    pub fn error(&self, span: Span, msg: impl Into<String>) -> CompileError {
        CompileError::Source {
            pos: Some(self.map.pos(span.start)),
            message: msg.into(),
        }
    }

    // ---- path conditions -------------------------------------------------------------

    /// The current depth of the implied-conditions stack, to merge back to later.
    pub fn mark(&self) -> usize {
        self.implied.len()
    }

    fn push_implied(&mut self, c: Lit) {
        if self.implied.last() != Some(&c) {
            self.implied.push(c);
            *self.implied_count.entry(c).or_insert(0) += 1;
        }
    }

    fn truncate_implied(&mut self, mark: usize) {
        while self.implied.len() > mark {
            let c = self.implied.pop().expect("non-empty");
            if let Some(n) = self.implied_count.get_mut(&c) {
                *n -= 1;
                if *n == 0 {
                    self.implied_count.remove(&c);
                }
            }
        }
    }

    fn is_implied(&self, c: Lit) -> bool {
        c == Lit::TRUE || self.implied_count.contains_key(&c)
    }

    /// `cur = cur ∧ c`.
    pub fn strengthen(&mut self, c: Lit) {
        let n = self.g.and(self.cur, c);
        // `if (x < m) m = x;` under an enclosing condition writes on `cur ∧ (x < m)`.
        self.note_implied_order(n, c);
        self.cur = n;
        self.push_implied(n);
    }

    /// Sets `cur` to a condition implied by the condition that was current at `mark`.
    pub fn merge_to(&mut self, mark: usize, c: Lit) {
        self.truncate_implied(mark);
        self.cur = c;
        self.push_implied(c);
    }

    /// Replaces `cur` with `c` while running a sub-computation (`&&`, `?:` operands, branches);
    /// restore with [`Self::restore`].
    pub fn enter(&mut self, c: Lit) -> (usize, Lit) {
        let saved = (self.mark(), self.cur);
        self.cur = c;
        self.push_implied(c);
        saved
    }

    pub fn restore(&mut self, saved: (usize, Lit)) {
        self.truncate_implied(saved.0);
        self.cur = saved.1;
    }

    // ---- variables --------------------------------------------------------------------

    pub fn new_var(&mut self, ty: Ty, bits: Vec<Lit>) -> VarId {
        self.new_var_from(ty, Bits::from_vec(bits))
    }

    fn new_var_from(&mut self, ty: Ty, bits: Bits) -> VarId {
        debug_assert_eq!(bits.len() as u64, ty.bits());
        let packed = matches!(bits, Bits::Packed(_));
        let v = self.new_var_unnoted(ty, bits);
        if packed && !self.packed_vars.contains(&v) {
            self.packed_vars.push(v);
        }
        self.note_stored(v, 0, self.vars[v].bits.len());
        v
    }

    fn new_var_unnoted(&mut self, ty: Ty, bits: Bits) -> VarId {
        if let Some(v) = self.free_vars.pop() {
            self.vars[v] = Var {
                ty,
                bits,
                ptr: None,
                active: None,
            };
            return v;
        }
        self.vars.push(Var {
            ty,
            bits,
            ptr: None,
            active: None,
        });
        self.vars.len() - 1
    }

    pub fn zero_var(&mut self, ty: Ty) -> VarId {
        let n = ty.bits() as usize;
        self.new_var_from(ty, Bits::zeros(n))
    }

    /// The packed variable with the largest pool, if the pools together hold more than
    /// [`crate::bits::POOL_MAX_LITS`] literals.
    fn pool_overflow(&self) -> Option<VarId> {
        let pooled = |v: &VarId| self.vars[*v].bits.pooled_lits();
        let total: usize = self.packed_vars.iter().map(pooled).sum();
        if total <= crate::bits::POOL_MAX_LITS {
            return None;
        }
        self.packed_vars.iter().copied().max_by_key(pooled)
    }

    /// The bits of `var` as seen on the current paths.
    pub(crate) fn var_bits(&self, var: VarId) -> Cow<'_, [Lit]> {
        let v = &self.vars[var];
        match &v.active {
            Some((g, bits)) if self.is_implied(*g) => Cow::Borrowed(bits),
            _ => v.bits.all(),
        }
    }

    /// Bits `r` of `var` as seen on the current paths (decoding only those of a large
    /// variable).
    pub(crate) fn var_slice(&self, var: VarId, r: std::ops::Range<usize>) -> Cow<'_, [Lit]> {
        let v = &self.vars[var];
        match &v.active {
            Some((g, bits)) if self.is_implied(*g) => Cow::Borrowed(&bits[r]),
            _ => v.bits.slice(r),
        }
    }

    /// [`Self::var_slice`] appended to `out` (no allocation of its own for a large
    /// variable).
    pub(crate) fn extend_var_slice(
        &self,
        var: VarId,
        r: std::ops::Range<usize>,
        out: &mut Vec<Lit>,
    ) {
        let v = &self.vars[var];
        match &v.active {
            Some((g, bits)) if self.is_implied(*g) => out.extend_from_slice(&bits[r]),
            _ => v.bits.extend_into(r, out),
        }
    }

    /// Writes `value` to bits `off..` of `var` on the paths where `guard` holds (`guard`
    /// implies `cur`).
    pub(crate) fn write_bits(&mut self, var: VarId, off: u64, value: &[Lit], guard: Lit) {
        if guard == Lit::FALSE || value.is_empty() {
            return;
        }
        let off = off as usize;
        let seen: Option<Vec<Lit>> = if guard == self.cur
            && guard != Lit::TRUE
            && self.vars[var].bits.len() <= ACTIVE_VALUE_MAX_BITS
        {
            let mut s = self.var_bits(var).to_vec();
            s[off..off + value.len()].copy_from_slice(value);
            Some(s)
        } else {
            None
        };
        if guard == Lit::TRUE {
            self.vars[var].bits.write(off, value);
        } else if let Some(merged) = self.deferred_write(var, off, value, guard) {
            self.vars[var].bits.write(off, &merged);
        } else {
            let old = self.vars[var]
                .bits
                .slice(off..off + value.len())
                .into_owned();
            let merged = self.mux_ranged(guard, value, &old);
            self.vars[var].bits.write(off, &merged);
        }
        self.vars[var].active = seen.map(|s| (guard, s));
        self.note_stored(var, off, value.len());
    }

    /// Reads a place (secret indices select with multiplexer trees).
    pub fn read_place(&mut self, p: &Place) -> Vec<Lit> {
        let w = p.ty.bits();
        self.read_region(p.var, p.off, &p.dyns, w)
    }

    fn read_region(&mut self, var: VarId, off: u64, dyns: &[DynIdx], w: u64) -> Vec<Lit> {
        match dyns.split_first() {
            None => {
                // A deferred value read whole stays deferred (the reader settles it); one
                // inside the bits read (a member of a struct read whole) is materialized.
                if self.deferring() {
                    self.settle_locations(var, off as usize, w as usize, true);
                }
                self.var_slice(var, off as usize..(off + w) as usize)
                    .into_owned()
            }
            Some((d, rest)) => {
                if self.deferring() {
                    // Multiplexers choose among materialized elements.
                    self.settle_locations(var, 0, usize::MAX, false);
                }
                let elems: Vec<Vec<Lit>> = (0..d.count)
                    .map(|k| self.read_region(var, off + k * d.stride, rest, w))
                    .collect();
                // A table of constants (an S-box) is read by a decoder of the low index bits
                // and free XORs (8-bit to 8-bit: 104 ANDs against 285 for the tree).
                let constants: Option<Vec<Vec<bool>>> = elems
                    .iter()
                    .map(|e| e.iter().map(|l| l.as_const()).collect())
                    .collect();
                let out = match constants {
                    Some(table) if elems.len() > 2 => {
                        blocks::table_lookup(&mut self.g, &d.index, &table, w as usize)
                    }
                    _ => blocks::mux_tree(&mut self.g, &d.index, &elems),
                };
                // An index out of range reads zero (`&[]`).
                let mut choices: Vec<&[Lit]> = elems.iter().map(Vec::as_slice).collect();
                choices.push(&[]);
                self.note_mux(out, &choices)
            }
        }
    }

    /// Writes `value` to a place on the current paths.
    pub fn write_place(&mut self, p: &Place, value: &[Lit]) {
        let guard = self.cur;
        self.write_region(p.var, p.off, &p.dyns, value, guard);
    }

    fn write_region(&mut self, var: VarId, off: u64, dyns: &[DynIdx], value: &[Lit], guard: Lit) {
        match dyns.split_first() {
            None => self.write_bits(var, off, value, guard),
            Some((d, rest)) => {
                let sel = blocks::decoder(&mut self.g, &d.index, d.count as usize);
                for (k, s) in sel.into_iter().enumerate() {
                    if self.pool_overflow().is_some() {
                        break; // reported by the next check of the budget
                    }
                    let gk = self.g.and(guard, s);
                    self.write_region(var, off + k as u64 * d.stride, rest, value, gk);
                }
                // The active value no longer describes the variable exactly.
                self.vars[var].active = None;
            }
        }
    }

    /// Sets a pointer variable (pointers are compile-time: a secret choice between two
    /// different pointers cannot be represented).
    pub fn write_ptr(&mut self, var: VarId, ptr: Ptr, span: Span) -> R<()> {
        if self.cur == Lit::FALSE {
            return Ok(());
        }
        let old = self.vars[var].ptr.clone();
        if self.cur != Lit::TRUE && old.is_some() && old.as_ref() != Some(&ptr) {
            return self.err(
                span,
                "a pointer assigned under a secret condition: pgc resolves pointers at compile time, \
                 so a pointer may not depend on secret data (use an index instead)",
            );
        }
        self.vars[var].ptr = Some(ptr);
        Ok(())
    }

    // ---- scopes -------------------------------------------------------------------------

    /// Starts a function's frame (its first scope holding `first`).
    fn push_frame(&mut self, first: Scope) {
        self.scope_epoch += 1;
        self.frames.push(vec![first]);
    }

    /// Ends the innermost function's frame, returning its scopes.
    fn pop_frame(&mut self) -> Option<Vec<Scope>> {
        self.scope_epoch += 1;
        self.frames.pop()
    }

    pub fn push_scope(&mut self) {
        self.scope_epoch += 1;
        self.frames
            .last_mut()
            .expect("inside a function")
            .push(Scope::default());
    }

    pub fn pop_scope(&mut self) {
        self.scope_epoch += 1;
        let scope = self.frames.last_mut().expect("inside a function").pop();
        if let Some(scope) = scope {
            self.release_scope(scope);
        }
    }

    pub fn bind(&mut self, name: String, b: Binding) {
        self.scope_epoch += 1;
        match self.frames.last_mut().and_then(|f| f.last_mut()) {
            Some(scope) => {
                scope.insert(name, b);
            }
            None => {
                self.globals.insert(name, b);
            }
        }
    }

    pub fn lookup(&mut self, name: &str, span: Span) -> R<Binding> {
        if let Some(frame) = self.frames.last() {
            for scope in frame.iter().rev() {
                if let Some(b) = scope.get(name) {
                    return Ok(b.clone());
                }
            }
        }
        if let Some(b) = self.globals.get(name) {
            return Ok(b.clone());
        }
        if let Some((decl, init)) = self.pending_globals.remove(name) {
            self.define_global(decl, init)?;
            if let Some(b) = self.globals.get(name) {
                return Ok(b.clone());
            }
        }
        if self.functions.contains_key(name) {
            return self.err(
                span,
                format!("function `{name}` used as a value (function pointers are not supported)"),
            );
        }
        self.err(span, format!("`{name}` is not declared"))
    }

    /// Creates a global variable on first use, running its initializer at top level.
    fn define_global(
        &mut self,
        decl: &'a Node<Declaration>,
        init: &'a Node<InitDeclarator>,
    ) -> R<()> {
        let frames = std::mem::take(&mut self.frames);
        let saved = self.enter(Lit::TRUE);
        let r = self.declare_one(decl, init, true);
        self.restore(saved);
        self.frames = frames;
        self.scope_epoch += 1;
        r
    }

    // ---- the program ----------------------------------------------------------------------

    /// Runs the entry function: its parameters and `INPUT_`/`OUTPUT_` locals become ports.
    pub fn run_entry(&mut self, f: &'a Node<FunctionDefinition>) -> R<(String, Vec<String>)> {
        let (name, ret_ty, params) = self.function_signature(f)?;
        let span = f.span;
        self.push_frame(Scope::default());
        self.call_stack.push(name.clone());
        let mut param_names = Vec::new();
        for (pname, pty, pspan) in params {
            let Some(pname) = pname else {
                return self.err(pspan, "parameters of the entry function need names");
            };
            param_names.push(pname.clone());
            self.declare_port_param(&pname, pty, pspan)?;
        }
        let ret_var = match &ret_ty {
            Ty::Void => None,
            t => {
                if t.ctype().is_none() {
                    return self.err(
                        span,
                        "the entry function may return only integers, floats, arrays or structs",
                    );
                }
                let v = self.zero_var(t.clone());
                self.pin_var(v);
                self.outputs.push(PendingOutput {
                    name: "OUTPUT_return".into(),
                    var: v,
                    visibility: Visibility::Both,
                    ty: t.clone(),
                });
                Some(v)
            }
        };
        self.ctl.push(Ctl::Func { ret_var });
        let saved = (self.mark(), self.cur);
        let exits_before = self.exit_events;
        self.exec_stmt(&f.node.statement)?;
        self.ctl.pop();
        self.exit_events = exits_before;
        // Every path leaves a function (by `return` or its end).
        self.restore(saved);
        self.call_stack.pop();
        self.pop_frame();
        Ok((name, param_names))
    }

    /// Declares a parameter of the entry function as an input or output port.
    fn declare_port_param(&mut self, name: &str, ty: Ty, span: Span) -> R<()> {
        if let Some(owner) = input_owner(name) {
            let ty = match ty {
                Ty::Pointer(_) => {
                    return self.err(
                        span,
                        format!("input `{name}` is a pointer: declare input arrays with their size, e.g. `int {name}[16]`"),
                    );
                }
                t => t,
            };
            let array = matches!(ty, Ty::Array(..));
            let v = self.new_input(name, owner, ty, span)?;
            if array {
                self.array_params.insert(v);
            }
            self.bind(name.to_string(), Binding::Var(v));
            return Ok(());
        }
        if let Some(vis) = output_visibility(name) {
            let pointee = match &ty {
                Ty::Pointer(inner) => (**inner).clone(),
                t => t.clone(),
            };
            self.check_port_bits(name, &pointee, span)?;
            // `T *OUTPUT_x` and `T OUTPUT_x[n]` (which C adjusts to a pointer): the pointee.
            let (target, ptr_var) = match ty {
                Ty::Pointer(inner) => {
                    let t = *inner;
                    let target = self.zero_var(t.clone());
                    let pv = self.new_var(Ty::Pointer(Box::new(t.clone())), vec![]);
                    self.vars[pv].ptr = Some(Ptr {
                        var: target,
                        off: 0,
                        elem: t,
                        count: 1,
                    });
                    (target, Some(pv))
                }
                Ty::Array(e, n) => {
                    let t = Ty::Array(e.clone(), n);
                    let target = self.zero_var(t.clone());
                    let pv = self.new_var(Ty::Pointer(e.clone()), vec![]);
                    self.vars[pv].ptr = Some(Ptr {
                        var: target,
                        off: 0,
                        elem: *e,
                        count: n,
                    });
                    (target, Some(pv))
                }
                t => {
                    return self.err(
                        span,
                        format!(
                            "output parameter `{name}` of type {} is passed by value, so the caller \
                             could never see it: declare it as a pointer (`{} *{name}`) or array",
                            t.name(),
                            t.name()
                        ),
                    );
                }
            };
            let ty = self.vars[target].ty.clone();
            if ty.ctype().is_none() {
                return self.err(
                    span,
                    format!("output `{name}` has a type a port cannot have"),
                );
            }
            self.pin_var(target);
            self.outputs.push(PendingOutput {
                name: name.to_string(),
                var: target,
                visibility: vis,
                ty,
            });
            self.bind(name.to_string(), Binding::Var(ptr_var.expect("pointer")));
            return Ok(());
        }
        self.err(
            span,
            format!(
                "parameter `{name}` of the entry function is neither an input (INPUT_A_…, INPUT_B_…) nor an output (OUTPUT_…)"
            ),
        )
    }

    /// Ports are held literal by literal (an input's bits are its wires, an output's are
    /// read whole at the end), so they keep the limit of flat storage.
    pub(crate) fn check_port_bits(&self, name: &str, ty: &Ty, span: Span) -> R<()> {
        if ty.bits() > PORT_MAX_BITS {
            return self.err(
                span,
                format!(
                    "port `{name}` of {} bits is too large: inputs and outputs are up to 2^27 bits",
                    ty.bits()
                ),
            );
        }
        Ok(())
    }

    pub fn new_input(&mut self, name: &str, owner: Owner, ty: Ty, span: Span) -> R<VarId> {
        let Some(ctype) = ty.ctype() else {
            return self.err(
                span,
                format!(
                    "input `{name}` has type {}, which a port cannot have",
                    ty.name()
                ),
            );
        };
        if self.inputs.iter().any(|p| p.name == name) {
            return self.err(span, format!("input `{name}` is declared twice"));
        }
        self.check_port_bits(name, &ty, span)?;
        let w = u32::try_from(ty.bits())
            .map_err(|_| self.error(span, format!("input `{name}` is too large")))?;
        let bits = self.g.input(w);
        self.inputs.push(InputPort {
            name: name.to_string(),
            owner,
            ctype,
        });
        let v = self.new_var(ty, bits);
        self.pin_var(v);
        Ok(v)
    }

    /// Emits the outputs (their values at the end of the entry function).
    pub fn finish_outputs(&mut self) -> Vec<OutputPort> {
        let outs = std::mem::take(&mut self.outputs);
        let mut ports = Vec::with_capacity(outs.len());
        for o in outs {
            if self.deferring() {
                self.settle_locations(o.var, 0, usize::MAX, false);
            }
            let bits = self.vars[o.var].bits.to_vec();
            self.g.output(&bits);
            ports.push(OutputPort {
                name: o.name,
                visibility: o.visibility,
                ctype: o.ty.ctype().expect("checked at declaration"),
            });
        }
        ports
    }

    // ---- statements -----------------------------------------------------------------------

    /// Reports progress and stops a compilation over its gate budget (not while a template
    /// is built: its gates count at each call).
    pub(crate) fn check_budget(&self) -> R<()> {
        self.check_storage()?;
        if !self.compact.is_building() {
            let made = self.compact.expanded_so_far(self.g.gates_emitted());
            if let Some(p) = &self.opts.progress {
                p.gates.store(made, std::sync::atomic::Ordering::Relaxed);
            }
            if let Some(budget) = self.opts.gate_budget
                && made > budget
            {
                return Err(CompileError::OverBudget { budget });
            }
        }
        Ok(())
    }

    /// Counts one loop iteration or call against [`Options::step_limit`]: nested loops
    /// multiply their counts, and calls in loops (or calls of functions that call others
    /// twice) run exponentially often, so a short program whose loops make no gates (all
    /// constant) could otherwise keep the compiler busy for hours. `span` is the loop or
    /// call that went past the limit.
    pub(crate) fn count_step(&mut self, span: Span) -> R<()> {
        self.steps += 1;
        if self.steps.is_multiple_of(4096)
            && let Some(p) = &self.opts.progress
        {
            p.steps
                .store(self.steps, std::sync::atomic::Ordering::Relaxed);
        }
        if self.steps > self.opts.step_limit {
            return self.err(
                span,
                format!(
                    "the program runs more than {} loop iterations and calls in all (nested \
                     loops multiply their counts); this one is past the limit (raise it with \
                     --step-limit N)",
                    self.opts.step_limit
                ),
            );
        }
        Ok(())
    }

    /// Fails when the large variables' storage is full (see [`crate::bits`]).
    pub(crate) fn check_storage(&self) -> R<()> {
        if let Some(v) = self.pool_overflow() {
            return Err(CompileError::Source {
                pos: None,
                message: format!(
                    "a variable of type {} ({} bits) holds too many bits that are neither \
                     constants nor consecutive wires: pgc stores large variables compactly, \
                     with at most {} such bits in all",
                    self.vars[v].ty.name(),
                    self.vars[v].bits.len(),
                    crate::bits::POOL_MAX_LITS
                ),
            });
        }
        Ok(())
    }

    pub fn exec_stmt(&mut self, s: &'a Node<Statement>) -> R<()> {
        self.check_budget()?;
        if self.cur == Lit::FALSE {
            return Ok(());
        }
        match &s.node {
            Statement::Compound(items) => {
                self.push_scope();
                let r = self.exec_items(items);
                self.pop_scope();
                r
            }
            Statement::Expression(e) => {
                if let Some(e) = e {
                    self.eval_deferred(e)?;
                }
                Ok(())
            }
            Statement::If(i) => self.exec_if(&i.node),
            Statement::While(w) => self.exec_loop(
                Some(&w.node.expression),
                None,
                &w.node.statement,
                false,
                s.span,
            ),
            Statement::DoWhile(w) => self.exec_loop(
                Some(&w.node.expression),
                None,
                &w.node.statement,
                true,
                s.span,
            ),
            Statement::For(f) => {
                self.push_scope();
                let r = (|| {
                    match &f.node.initializer.node {
                        ForInitializer::Empty | ForInitializer::StaticAssert(_) => {}
                        ForInitializer::Expression(e) => {
                            self.eval_deferred(e)?;
                        }
                        ForInitializer::Declaration(d) => self.declare(d, false)?,
                    }
                    let plan = self.plan_region(&f.node, s.span)?;
                    self.exec_loop_with(
                        f.node.condition.as_deref(),
                        f.node.step.as_deref(),
                        &f.node.statement,
                        false,
                        s.span,
                        plan,
                    )
                })();
                self.pop_scope();
                r
            }
            Statement::Switch(sw) => self.exec_switch(&sw.node, s.span),
            Statement::Break => {
                let cur = self.cur;
                let Some(Ctl::Loop { brk: slot, .. } | Ctl::Switch { brk: slot, .. }) =
                    self.ctl.last()
                else {
                    return self.err(s.span, "`break` outside a loop or switch");
                };
                let acc = *slot;
                let n = self.g.xor(acc, cur);
                self.set_innermost_break(n);
                self.exit_events += 1;
                self.strengthen(Lit::FALSE);
                Ok(())
            }
            Statement::Continue => {
                let cur = self.cur;
                let idx = self
                    .ctl
                    .iter()
                    .rposition(|c| matches!(c, Ctl::Loop { .. } | Ctl::Func { .. }));
                match idx.map(|i| &self.ctl[i]) {
                    Some(Ctl::Loop { cont, .. }) => {
                        let n = self.g.xor(*cont, cur);
                        if let Some(Ctl::Loop {
                            cont, own, conts, ..
                        }) = self.ctl.get_mut(idx.unwrap())
                        {
                            *cont = n;
                            *own += 1;
                            *conts += 1;
                        }
                    }
                    _ => return self.err(s.span, "`continue` outside a loop"),
                }
                self.exit_events += 1;
                self.strengthen(Lit::FALSE);
                Ok(())
            }
            Statement::Return(e) => self.exec_return(e.as_deref(), s.span),
            Statement::Labeled(l) => match &l.node.label.node {
                Label::Identifier(_) => {
                    self.err(l.node.label.span, "labels and `goto` are not supported")
                }
                _ => self.err(
                    l.node.label.span,
                    "`case`/`default` label outside the top level of a switch body",
                ),
            },
            Statement::Goto(_) => self.err(
                s.span,
                "`goto` is not supported (use loops, `break` and `continue`)",
            ),
            Statement::Asm(_) => {
                self.err(s.span, "inline assembly cannot be compiled to a circuit")
            }
        }
    }

    /// The innermost construct is the one `break` leaves (a function boundary stops it).
    fn set_innermost_break(&mut self, n: Lit) {
        if let Some(Ctl::Loop { brk, own, .. } | Ctl::Switch { brk, own }) = self.ctl.last_mut() {
            *brk = n;
            *own += 1;
        }
    }

    pub fn exec_items(&mut self, items: &'a [Node<BlockItem>]) -> R<()> {
        for item in items {
            if self.cur == Lit::FALSE {
                break;
            }
            match &item.node {
                BlockItem::Statement(s) => self.exec_stmt(s)?,
                BlockItem::Declaration(d) => self.declare(d, false)?,
                BlockItem::StaticAssert(a) => self.static_assert(a)?,
            }
        }
        Ok(())
    }

    fn exec_if(&mut self, i: &'a IfStatement) -> R<()> {
        if let Some(&(value, var, op, region)) =
            self.minmax_checks.get(&(i as *const IfStatement as usize))
        {
            // A min/max reduction combines partial results in the order of the variable's
            // type, which is only the same as running the statements in order if the
            // comparison orders the compared values as that type does: the value has the
            // type, or converts into it keeping every value, or the comparison converts
            // both sides to it (`unsigned m` against an `int`). Not when the value is
            // truncated into the variable (a 64-bit value) or the comparison happens in
            // another type (an `unsigned` value against an `int` variable).
            let v = self.eval_rvalue(value)?;
            let Ty::Int(vt) = self.vars[var].ty.clone() else {
                unreachable!("reductions are integers")
            };
            let orders_alike = |t: IntTy| {
                let same = |a: IntTy| a.bits == vt.bits && a.signed == vt.signed;
                let keeps_values = t.is_bool
                    || (t.signed == vt.signed && t.bits <= vt.bits)
                    || (!t.signed && vt.signed && t.bits < vt.bits);
                same(t) || keeps_values || same(IntTy::common(t, vt))
            };
            if !matches!(v, Val::Int(t, _) if orders_alike(t)) {
                return self.not_a_region(
                    region,
                    value.span,
                    "this min/max reduction compares a value of another type than the variable it \
                     updates; cast it to the variable's type (then pgc can combine the iterations in \
                     any order), or remove the pragma (then the loop runs in order)",
                );
            }
            // While the variable still holds the identity (the first update of an
            // iteration), min(e, identity) = e: assign without comparing.
            if *self.var_bits(var) == *identity(op, vt).as_slice() {
                return self.exec_stmt(&i.then_statement);
            }
        }
        if self.deferring() && self.exec_minmax_if(i, i.condition.span)? {
            return Ok(());
        }
        let c = self.eval_cond(&i.condition)?;
        if let Some(k) = c.as_const() {
            if k {
                return self.exec_stmt(&i.then_statement);
            }
            if let Some(e) = &i.else_statement {
                return self.exec_stmt(e);
            }
            return Ok(());
        }
        let (mark, c0) = (self.mark(), self.cur);
        let exits_before = self.exit_events;
        self.strengthen(c);
        self.exec_stmt(&i.then_statement)?;
        let t_end = self.cur;
        self.truncate_implied(mark);
        self.cur = c0;
        self.strengthen(!c);
        if let Some(e) = &i.else_statement {
            self.exec_stmt(e)?;
        }
        let e_end = self.cur;
        if self.exit_events == exits_before {
            self.restore((mark, c0));
        } else {
            let joined = self.g.xor(t_end, e_end);
            self.merge_to(mark, joined);
        }
        Ok(())
    }

    fn exec_loop(
        &mut self,
        cond: Option<&'a Node<Expression>>,
        step: Option<&'a Node<Expression>>,
        body: &'a Node<Statement>,
        body_first: bool,
        span: Span,
    ) -> R<()> {
        self.exec_loop_with(cond, step, body, body_first, span, None)
    }

    /// A loop; with a plan, each iteration is recorded as an instance of a parallel region
    /// and the plan's reduction variables start every iteration from their operator's
    /// identity, the partial results being combined after the loop.
    fn exec_loop_with(
        &mut self,
        cond: Option<&'a Node<Expression>>,
        step: Option<&'a Node<Expression>>,
        body: &'a Node<Statement>,
        body_first: bool,
        span: Span,
        plan: Option<RegionPlan<'a>>,
    ) -> R<()> {
        let mut region_open = false;
        let mut reductions: Vec<ReductionState> = Vec::new();
        if let Some(p) = &plan
            && self.deferring()
        {
            let reduced: Vec<VarId> = p.reductions.iter().map(|r| r.0).collect();
            self.plan_region_deferral(body, cond, step, &reduced);
        }
        if let Some(p) = &plan {
            for &(var, op, ty) in &p.reductions {
                reductions.push(ReductionState {
                    var,
                    op,
                    ty,
                    // The merged value (valid on every path), not the active value seen on
                    // the current one: the combined result replaces it on all paths.
                    init: self.vars[var].bits.to_vec(),
                    partials: Vec::new(),
                    started: false,
                });
            }
            let region = RegionLoop {
                at: p.at,
                pragma: p.pragma,
            };
            for &(key, value, var, op) in &p.minmax {
                self.minmax_checks.insert(key, (value, var, op, region));
            }
            for &(var, _, _) in &p.reductions {
                self.reduction_loops.insert(var, region);
            }
        }
        let r = self.exec_loop_inner(
            cond,
            step,
            body,
            body_first,
            span,
            plan.as_ref(),
            &mut region_open,
            &mut reductions,
        );
        if let Some(p) = &plan {
            for &(key, _, _, _) in &p.minmax {
                self.minmax_checks.remove(&key);
            }
            for &(var, _, _) in &p.reductions {
                self.reduction_loops.remove(&var);
            }
        }
        r?;
        if let Some(p) = plan {
            if region_open && self.deferring() {
                self.settle_for_instance(false);
            }
            let independent = region_open && self.g.end_region();
            if p.pragma && region_open && !independent {
                return self.err(
                    span,
                    "`#pragma omp parallel for`, but this loop is not parallel: an iteration uses a value \
                     that an earlier iteration computed (a loop-carried dependence); if it is a reduction, \
                     name it in reduction(op: variable), otherwise remove the pragma",
                );
            }
            for red in reductions {
                self.finish_reduction(red);
            }
        }
        Ok(())
    }

    /// Called at the start of each iteration of a region loop: closes the previous
    /// instance, records the reductions' partial results and resets them to the identity.
    fn start_instance(
        &mut self,
        plan: &RegionPlan<'a>,
        region_open: &mut bool,
        reductions: &mut [ReductionState],
        first: bool,
    ) {
        if self.deferring() {
            self.settle_for_instance(first);
        }
        if first {
            *region_open = self.g.begin_region(plan.line);
        } else {
            if *region_open {
                self.g.next_instance();
            }
            for red in reductions.iter_mut() {
                red.partials.push(self.vars[red.var].bits.to_vec());
            }
        }
        for red in reductions.iter_mut() {
            red.started = true;
            let id = identity(red.op, red.ty);
            let v = &mut self.vars[red.var];
            v.bits = Bits::from_vec(id);
            v.active = None;
        }
    }

    /// A reduction of a region loop cannot be combined from partial results: refused with
    /// `advice` if a pragma asked for the region, otherwise this pass stops so that the
    /// program is compiled again with the loop run in order (see [`NotARegion`]).
    fn not_a_region<T>(&mut self, region: RegionLoop, span: Span, advice: &str) -> R<T> {
        if !region.pragma {
            self.not_a_region = Some(NotARegion(region.at));
        }
        self.err(span, advice)
    }

    /// Checks a value about to be stored into a variable: a reduction variable of the
    /// region loop being run must get integer arithmetic (wrapping, so the steps and their
    /// partial results agree). `s += 0.5` computes in `double` and truncates every step,
    /// which no sum of truncated partial results reproduces.
    pub(crate) fn check_reduction_store(&mut self, var: VarId, v: &Val, span: Span) -> R<()> {
        if !self.reduction_loops.is_empty()
            && matches!(v, Val::Float(..))
            && let Some(&region) = self.reduction_loops.get(&var)
        {
            return self.not_a_region(
                region,
                span,
                "this reduction computes in floating point and converts each step's result back \
                 into the variable's integer type, which partial results combined in any order do \
                 not reproduce; remove the pragma (then the loop runs in order), or accumulate in \
                 integers",
            );
        }
        Ok(())
    }

    /// Combines a reduction's partial results (a balanced tree, so the depth grows with
    /// the logarithm of the iteration count) with its value before the loop.
    fn finish_reduction(&mut self, mut red: ReductionState) {
        if !red.started {
            return;
        }
        red.partials.push(self.vars[red.var].bits.to_vec());
        let mut level = red.partials;
        while level.len() > 1 {
            let mut next = Vec::with_capacity(level.len().div_ceil(2));
            let mut it = level.into_iter();
            while let Some(a) = it.next() {
                match it.next() {
                    Some(b) => next.push(self.combine(red.op, red.ty, &a, &b)),
                    None => next.push(a),
                }
            }
            level = next;
        }
        let total = level.pop().expect("at least one partial");
        let value = if self.deferring() && red.init == identity(red.op, red.ty) {
            // A min from the largest value (and the like) needs no last comparison.
            total
        } else {
            self.combine(red.op, red.ty, &red.init, &total)
        };
        let n = value.len();
        let v = &mut self.vars[red.var];
        v.bits = Bits::from_vec(value);
        v.active = None;
        self.note_stored(red.var, 0, n);
    }

    fn combine(&mut self, op: RedOp, ty: IntTy, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
        use pgc_circuit::blocks;
        let (a, b) = if self.deferring() {
            if op == RedOp::Add {
                // Partial sums stay deferred: all their addends in one carry-save tree.
                return self.defer_binary(crate::deferred::Op::Sum, a, b, false);
            }
            (self.settle_bits(a.to_vec()), self.settle_bits(b.to_vec()))
        } else {
            (a.to_vec(), b.to_vec())
        };
        let (a, b) = (a.as_slice(), b.as_slice());
        if matches!(op, RedOp::Min | RedOp::Max) && !self.deferring() {
            // b wins where it is smaller (min) or larger (max); the comparison and the
            // choice narrowed as the program's own would be (a minimum of bounded partial
            // results is bounded by the smaller bound).
            let (x, y) = if op == RedOp::Min { (b, a) } else { (a, b) };
            let b_wins = match self.ranged_arith(&BinaryOperator::Less, ty, x, y) {
                Some(Val::Int(_, bits)) => bits[0],
                _ if ty.signed => blocks::lt_signed(&mut self.g, x, y),
                _ => {
                    let lt = blocks::lt_unsigned(&mut self.g, x, y);
                    self.note_order(lt, x, y);
                    lt
                }
            };
            return self.mux_ranged(b_wins, b, a);
        }
        let g = &mut self.g;
        match op {
            RedOp::Add => blocks::add(g, a, b),
            RedOp::Mul => blocks::mul(g, a, b),
            RedOp::And => blocks::and_word(g, a, b),
            RedOp::Or => blocks::or_word(g, a, b),
            RedOp::Xor => blocks::xor_word(g, a, b),
            RedOp::Min | RedOp::Max => {
                // b wins where it is smaller (min) or larger (max).
                let b_wins = match (op, ty.signed) {
                    (RedOp::Min, true) => blocks::lt_signed(g, b, a),
                    (RedOp::Min, false) => blocks::lt_unsigned(g, b, a),
                    (_, true) => blocks::lt_signed(g, a, b),
                    (_, false) => blocks::lt_unsigned(g, a, b),
                };
                blocks::mux_word(g, b_wins, b, a)
            }
        }
    }

    /// Whether a `for` loop should be recorded as a parallel region, and its reductions.
    fn plan_region(&mut self, f: &'a ForStatement, span: Span) -> R<Option<RegionPlan<'a>>> {
        let pragma = self.pragma_before(span.start);
        // Compact circuits run sequentially (their calls are not plain gates to split).
        if self.opts.compact || (!self.opts.regions && pragma.is_none()) {
            return Ok(None);
        }
        if self.g.region_open() {
            // Inside a region already: the outer loop is the unit of parallelism.
            return Ok(None);
        }
        if pragma.is_none() && self.sequential_loops.contains(&span.start) {
            return Ok(None);
        }
        let header: Vec<&'a Node<Expression>> = f
            .condition
            .iter()
            .chain(f.step.iter())
            .map(|e| &**e)
            .collect();
        let found = find_reductions(self.text, &f.statement, &header);
        let mut reductions = Vec::new();
        let mut minmax = Vec::new();
        let mut accept = |low: &mut Self, name: &str, op: RedOp, uses: &[ReductionUse<'a>]| {
            let Some(var) = low.local_scalar(name) else {
                return false;
            };
            let Ty::Int(ty) = low.vars[var].ty.clone() else {
                return false;
            };
            if ty.is_bool {
                // Each `b op= e` converts its result to 0 or 1 (`b ^= 2` sets `b`, `b += -1`
                // may clear it): no combination of partial results started from the
                // operator's identity computes that.
                return false;
            }
            reductions.push((var, op, ty));
            for u in uses {
                if let Some((key, value)) = u.minmax {
                    minmax.push((key, value, var, op));
                }
            }
            true
        };
        match &pragma {
            Some(p) => {
                for (op, name) in p.reductions.clone() {
                    let hit = found.iter().find(|(n, _, _)| *n == name);
                    let ok = match hit {
                        Some((_, found_op, uses)) if *found_op == op => {
                            accept(self, &name, op, uses)
                        }
                        _ => false,
                    };
                    if !ok {
                        return self.err(
                            span,
                            format!(
                                "`#pragma omp parallel for reduction({}: {name})`, but `{name}` is not a local integer \
                                 variable (other than `_Bool`) that the loop only updates with {} (as `{name} {}= …`{})",
                                op.name(),
                                op.name(),
                                if matches!(op, RedOp::Min | RedOp::Max) { "" } else { op.name() },
                                if matches!(op, RedOp::Min | RedOp::Max) {
                                    format!(", or `if (x < {name}) {name} = x;`")
                                } else {
                                    String::new()
                                }
                            ),
                        );
                    }
                }
            }
            None => {
                for (name, op, uses) in &found {
                    accept(self, name, *op, uses);
                }
            }
        }
        Ok(Some(RegionPlan {
            line: self.map.pos(span.start).line,
            pragma: pragma.is_some(),
            at: span.start,
            reductions,
            minmax,
        }))
    }

    /// The `#pragma omp parallel for` right before offset `at` (only blanks or line markers
    /// in between).
    fn pragma_before(&self, at: usize) -> Option<OmpPragma> {
        let p = self.pragmas.iter().rev().find(|p| p.end <= at)?;
        let between = self.text.get(p.end..at)?;
        between
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
            .then(|| p.clone())
    }

    /// A scalar local variable of the current function no pointer refers to (a reduction
    /// may only be privatized if nothing else can see it).
    fn local_scalar(&self, name: &str) -> Option<VarId> {
        let frame = self.frames.last()?;
        let b = frame.iter().rev().find_map(|scope| scope.get(name))?;
        let Binding::Var(id) = b else {
            return None;
        };
        let id = *id;
        if !matches!(self.vars[id].ty, Ty::Int(_)) {
            return None;
        }
        let pointed_to = self
            .vars
            .iter()
            .any(|v| v.ptr.as_ref().is_some_and(|p| p.var == id));
        (!pointed_to).then_some(id)
    }

    #[allow(clippy::too_many_arguments)]
    fn exec_loop_inner(
        &mut self,
        cond: Option<&'a Node<Expression>>,
        step: Option<&'a Node<Expression>>,
        body: &'a Node<Statement>,
        body_first: bool,
        span: Span,
        plan: Option<&RegionPlan<'a>>,
        region_open: &mut bool,
        reductions: &mut [ReductionState],
    ) -> R<()> {
        let (mark0, c0) = (self.mark(), self.cur);
        let exits_before = self.exit_events;
        let mut own_exits = 0;
        let mut total_conts = 0;
        let mut exited = Lit::FALSE;
        let mut broke = Lit::FALSE;
        let mut iterations: u64 = 0;
        let mut secret_iterations: u64 = 0;
        let mut first = true;
        loop {
            if self.cur == Lit::FALSE {
                break;
            }
            // The implied stack keeps the conditions of earlier iterations: a counter stepped
            // under one of them stays known on the (smaller) paths still looping.
            if !(body_first && first)
                && let Some(cond) = cond
            {
                let k = match self.const_loop_cond(cond) {
                    Some(b) => Lit::constant(b),
                    None => self.eval_cond(cond)?,
                };
                if self.lifted_decides_loop(k) {
                    return self.err(span, "a lifted constant decides this loop's condition");
                }
                let leaving = self.g.and(self.cur, !k);
                exited = self.g.xor(exited, leaving);
                self.strengthen(k);
                if self.cur == Lit::FALSE {
                    break;
                }
            }
            if let Some(p) = plan {
                self.start_instance(p, region_open, reductions, first);
            }
            first = false;
            iterations += 1;
            self.count_step(span)?;
            if self.cur != Lit::TRUE {
                secret_iterations += 1;
            }
            // A loop still running on secret paths only builds ever larger multiplexers; give
            // up on it sooner (1/16 of the limit) so a secret-bounded loop fails fast.
            let secret_limit = (self.opts.unroll_limit / 16).max(1);
            if iterations > self.opts.unroll_limit || secret_iterations > secret_limit {
                let message = if secret_iterations > secret_limit {
                    format!(
                        "loop still runs after {secret_limit} iterations on paths that depend on secret inputs, \
                         so pgc cannot tell when it ends; loops need a bound known at compile time \
                         (a loop may run 1/16 of --unroll-limit iterations, now {}, under a secret condition)",
                        self.opts.unroll_limit
                    )
                } else {
                    format!(
                        "loop does not end within {} iterations; loops must have a bound known at compile \
                         time (raise it with --unroll-limit N)",
                        self.opts.unroll_limit
                    )
                };
                return self.err(span, message);
            }
            self.ctl.push(Ctl::Loop {
                brk: Lit::FALSE,
                cont: Lit::FALSE,
                own: 0,
                conts: 0,
            });
            let (mark_i, cur_i) = (self.mark(), self.cur);
            let exits_before_body = self.exit_events;
            let r = self.exec_loop_body(body, plan.is_some());
            let Some(Ctl::Loop {
                brk,
                cont,
                own,
                conts,
            }) = self.ctl.pop()
            else {
                unreachable!("control stack")
            };
            r?;
            own_exits += own;
            total_conts += conts;
            broke = self.g.xor(broke, brk);
            self.exit_events -= conts;
            if self.exit_events == exits_before_body {
                // Only `continue`s left the body: every path that entered it goes on.
                self.restore((mark_i, cur_i));
            } else {
                let next = self.g.xor(self.cur, cont);
                self.merge_to(mark_i, next);
            }
            if let Some(step) = step
                && self.cur != Lit::FALSE
                && !self.const_loop_step(step)
            {
                self.eval_deferred(step)?;
            }
        }
        self.exit_events -= own_exits - total_conts;
        if self.exit_events == exits_before {
            self.restore((mark0, c0));
        } else {
            let after = self.g.xor(exited, broke);
            self.merge_to(mark0, after);
        }
        Ok(())
    }

    fn exec_switch(&mut self, sw: &'a SwitchStatement, span: Span) -> R<()> {
        let x = self.eval_rvalue(&sw.expression)?;
        let Val::Int(xt, xbits) = x else {
            return self.err(
                sw.expression.span,
                "switch on a value that is not an integer",
            );
        };
        let pt = xt.promoted();
        let xbits = self.convert_bits(xt, &xbits, pt);
        let Statement::Compound(items) = &sw.statement.node else {
            return self.err(sw.statement.span, "a switch body must be a block `{ … }`");
        };
        // Case values first: `default` is taken when none matches.
        let mut values: Vec<i128> = Vec::new();
        for item in items {
            if let BlockItem::Statement(s) = &item.node {
                let mut s = s;
                while let Statement::Labeled(l) = &s.node {
                    if let Label::Case(e) = &l.node.label.node {
                        let v = self.const_int(e)?;
                        if values.contains(&v) {
                            return self.err(e.span, format!("duplicate case value {v}"));
                        }
                        values.push(v);
                    }
                    s = &l.node.statement;
                }
            }
        }
        let entry = self.cur;
        let mark = self.mark();
        let exits_before = self.exit_events;
        let mut has_default = false;
        self.ctl.push(Ctl::Switch {
            brk: Lit::FALSE,
            own: 0,
        });
        self.push_scope();
        self.merge_to(mark, Lit::FALSE);
        let r = (|| {
            for item in items {
                match &item.node {
                    BlockItem::Statement(s) => {
                        let mut s = s;
                        while let Statement::Labeled(l) = &s.node {
                            let hit = match &l.node.label.node {
                                Label::Case(e) => {
                                    let v = self.const_int(e)?;
                                    let k = self.const_bits(v, pt.bits);
                                    blocks::eq(&mut self.g, &xbits, &k)
                                }
                                Label::Default => {
                                    has_default = true;
                                    let mut any = Lit::FALSE;
                                    for &v in &values {
                                        let k = self.const_bits(v, pt.bits);
                                        let e = blocks::eq(&mut self.g, &xbits, &k);
                                        any = self.g.xor(any, e);
                                    }
                                    !any
                                }
                                Label::CaseRange(_) => {
                                    return self
                                        .err(l.node.label.span, "case ranges are not supported");
                                }
                                Label::Identifier(_) => {
                                    return self.err(
                                        l.node.label.span,
                                        "labels and `goto` are not supported",
                                    );
                                }
                            };
                            let enter = self.g.and(entry, hit);
                            let c = self.g.xor(self.cur, enter);
                            self.merge_to(mark, c);
                            s = &l.node.statement;
                        }
                        self.exec_stmt(s)?;
                    }
                    BlockItem::Declaration(d) => {
                        if self.cur != Lit::FALSE {
                            self.declare(d, false)?
                        }
                    }
                    BlockItem::StaticAssert(a) => self.static_assert(a)?,
                }
            }
            Ok(())
        })();
        self.pop_scope();
        let Some(Ctl::Switch { brk, own }) = self.ctl.pop() else {
            unreachable!("control stack")
        };
        r?;
        let _ = span;
        self.exit_events -= own;
        if self.exit_events == exits_before {
            self.restore((mark, entry));
            return Ok(());
        }
        let mut after = self.g.xor(self.cur, brk);
        if !has_default {
            // Paths matching no case skip the body.
            let mut any = Lit::FALSE;
            for &v in &values {
                let k = self.const_bits(v, pt.bits);
                let e = blocks::eq(&mut self.g, &xbits, &k);
                any = self.g.xor(any, e);
            }
            let skipped = self.g.and(entry, !any);
            after = self.g.xor(after, skipped);
        }
        self.merge_to(mark, after);
        Ok(())
    }

    fn exec_return(&mut self, e: Option<&'a Node<Expression>>, span: Span) -> R<()> {
        let idx = self
            .ctl
            .iter()
            .rposition(|c| matches!(c, Ctl::Func { .. }))
            .expect("inside a function");
        let Ctl::Func { ret_var, .. } = &self.ctl[idx] else {
            unreachable!()
        };
        let ret_var = *ret_var;
        match (e, ret_var) {
            (Some(e), Some(rv)) => {
                let v = self.eval_deferred(e)?;
                let ty = self.vars[rv].ty.clone();
                let bits = self.convert_val(v, &ty, e.span)?;
                let place = Place::whole(rv, ty);
                self.write_place(&place, &bits);
            }
            (Some(e), None) => {
                self.eval_deferred(e)?;
            }
            (None, Some(_)) => {
                return self.err(
                    span,
                    "`return` without a value in a function returning a value",
                );
            }
            (None, None) => {}
        }
        self.exit_events += 1;
        self.strengthen(Lit::FALSE);
        Ok(())
    }

    pub fn static_assert(&mut self, a: &'a Node<StaticAssert>) -> R<()> {
        let v = self.const_int(&a.node.expression)?;
        if v == 0 {
            let msg = a.node.message.node.join("");
            return self.err(a.span, format!("static assertion failed: {msg}"));
        }
        Ok(())
    }

    /// Inlines a call of `f` with already evaluated arguments.
    pub fn call(&mut self, name: &str, args: Vec<(Val, Span)>, span: Span) -> R<Val> {
        let Some(&f) = self.functions.get(name) else {
            return self.err(
                span,
                format!(
                    "call to `{name}`, which is not defined in the program (library functions and I/O cannot run inside a circuit)"
                ),
            );
        };
        if self.call_stack.iter().any(|n| n == name) {
            return self.err(
                span,
                format!("recursive call to `{name}`: recursion is not supported (rewrite it as a bounded loop)"),
            );
        }
        if self.call_stack.len() > 256 {
            return self.err(span, "calls nested deeper than 256 levels");
        }
        self.count_step(span)?;
        let (ret_ty, params) = if self.opts.compact {
            // Calls are many and cheap in compact mode: parse each signature once.
            match self.compact.signatures.get(name) {
                Some(sig) => (sig.0.clone(), sig.1.clone()),
                None => {
                    let (_, ret_ty, params) = self.function_signature(f)?;
                    self.compact
                        .signatures
                        .insert(name.to_string(), (ret_ty.clone(), params.clone()));
                    (ret_ty, params)
                }
            }
        } else {
            let (_, ret_ty, params) = self.function_signature(f)?;
            (ret_ty, params)
        };
        if params.len() != args.len() {
            return self.err(
                span,
                format!(
                    "`{name}` takes {} argument(s) but {} were given",
                    params.len(),
                    args.len()
                ),
            );
        }
        if self.opts.compact
            && let Some(v) = self.call_compact(name, f, &params, &args, &ret_ty)?
        {
            return Ok(v);
        }
        // Bind parameters in a fresh frame: the callee cannot see the caller's locals.
        let mut bindings = Vec::new();
        for ((pname, pty, _pspan), (arg, aspan)) in params.into_iter().zip(args) {
            let pty = Self::adjust_param(pty);
            let var = match &pty {
                Ty::Pointer(_) => {
                    let Val::Ptr(p) = arg else {
                        return self.err(aspan, format!("argument for a pointer parameter of `{name}` is not a pointer or array"));
                    };
                    if let Ty::Pointer(want) = &pty
                        && **want != p.elem
                        && p.elem.bits() != want.bits()
                    {
                        return self.err(
                            aspan,
                            format!(
                                "argument points to {} but `{name}` expects a pointer to {}",
                                p.elem.name(),
                                want.name()
                            ),
                        );
                    }
                    let v = self.new_var(pty.clone(), vec![]);
                    self.vars[v].ptr = Some(p);
                    v
                }
                _ => {
                    let bits = self.convert_val(arg, &pty, aspan)?;
                    self.new_var(pty.clone(), bits)
                }
            };
            if let Some(n) = pname {
                bindings.push((n, var));
            }
        }
        self.run_body(name, f, &ret_ty, bindings)
    }

    /// Runs function `f`'s body with its parameters bound to `bindings` and returns its
    /// result (every path leaves a function, so the path condition after it is the one
    /// before).
    pub fn run_body(
        &mut self,
        name: &str,
        f: &'a Node<FunctionDefinition>,
        ret_ty: &Ty,
        bindings: Vec<(String, VarId)>,
    ) -> R<Val> {
        let ret_var = match ret_ty {
            Ty::Void => None,
            Ty::Pointer(_) => {
                return self.err(f.span, "functions returning pointers are not supported");
            }
            t => Some(self.zero_var(t.clone())),
        };
        self.push_frame(
            bindings
                .into_iter()
                .map(|(n, v)| (n, Binding::Var(v)))
                .collect(),
        );
        self.call_stack.push(name.to_string());
        self.ctl.push(Ctl::Func { ret_var });
        let saved = (self.mark(), self.cur);
        let exits_before = self.exit_events;
        let r = self.exec_stmt(&f.node.statement);
        self.ctl.pop();
        self.exit_events = exits_before;
        self.call_stack.pop();
        let frame = self.pop_frame();
        for scope in frame.into_iter().flatten() {
            self.release_scope(scope);
        }
        r?;
        // Every path leaves a function (by `return` or its end).
        self.restore(saved);
        Ok(match ret_var {
            None => Val::Void,
            Some(v) => {
                let ty = self.vars[v].ty.clone();
                let bits = self.var_bits(v).to_vec();
                if self.opts.compact {
                    self.free_vars.push(v);
                }
                Val::of(ty, bits)
            }
        })
    }

    pub fn const_bits(&self, v: i128, bits: u32) -> Vec<Lit> {
        (0..bits)
            .map(|i| Lit::constant(i < 128 && (v >> i) & 1 == 1))
            .collect()
    }
}

/// The identity of a reduction operator at a type.
fn identity(op: RedOp, ty: IntTy) -> Vec<Lit> {
    let n = ty.bits as usize;
    let bits = |f: &dyn Fn(usize) -> bool| (0..n).map(|i| Lit::constant(f(i))).collect();
    match op {
        RedOp::Add | RedOp::Or | RedOp::Xor => bits(&|_| false),
        RedOp::Mul => bits(&|i| i == 0),
        RedOp::And => bits(&|_| true),
        // min starts at the largest value, max at the smallest.
        RedOp::Min => bits(&|i| !(ty.signed && i == n - 1)),
        RedOp::Max => bits(&|i| ty.signed && i == n - 1),
    }
}

pub fn input_owner(name: &str) -> Option<Owner> {
    if name.starts_with("INPUT_A_") {
        Some(Owner::A)
    } else if name.starts_with("INPUT_B_") {
        Some(Owner::B)
    } else {
        None
    }
}

pub fn output_visibility(name: &str) -> Option<Visibility> {
    if name.starts_with("OUTPUT_A_") {
        Some(Visibility::A)
    } else if name.starts_with("OUTPUT_B_") {
        Some(Visibility::B)
    } else if name.starts_with("OUTPUT_") {
        Some(Visibility::Both)
    } else {
        None
    }
}
