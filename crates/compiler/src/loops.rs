//! Loop bodies stored once (compact compilation): an iteration of a loop written inline is
//! compiled like a call of an implicit function whose parameters are the variables and
//! array elements the body uses, and whose results are the same places after the body.
//!
//! This is the "loops as repeated structure" idea of PCF (Kreuter, Mood, shelat, Butler,
//! USENIX Security 2013), carried into the call mechanism of [`crate::compact`]: the body of
//! a loop runs at compile time once per iteration anyway (loops are unrolled), but when an
//! iteration has the same *shape* as an earlier one, the gates that earlier iteration built
//! are reused as a template, and the iteration costs a call item.
//!
//! Which bodies qualify is decided on the syntax once per body ([`BodyScan`]): no `break`,
//! `continue`, `return` or `goto`, no calls, no `&` or `*` or `->`, no `static` or pointer
//! declarations, and every array it names is indexed down to an element (`d[i - 1][j]`,
//! not `d[i]`) with subscripts that the body does not change. Then, per iteration, the
//! subscripts are evaluated *before* the body runs; they must be compile-time constants in
//! bounds. The body's *places* are the elements these subscripts select and the outer
//! scalars (and structs) it names; they are disjoint bit ranges of the program's variables.
//! The shape of an iteration is the layout of its places (which use of the body lands
//! where), the length of each place and which of its bits are constants and their values,
//! exactly the shape of a function call. With the same shape, running the body builds the
//! same gates whatever wires carry the other bits: the body sees only its places (the
//! subscripts select them, and the variables in subscripts are not written by the body), the
//! constant bits, and the locals it declares, which start afresh.
//!
//! To build a template, the non-constant bits of the places are replaced, inside the
//! variables themselves, by the fresh inputs of a builder of its own; the body runs there;
//! the places' bits after it are the template's results, and the variables get back their
//! own bits before the results are written to them (under the current path condition, as
//! an assignment in the body would). Nothing else of a variable is read while the template
//! is built, so no literal of the outer builder reaches the template.
//!
//! A loop variable used as a *value* in the body (`x[j] = j`) is a constant place, so every
//! iteration has its own shape: after [`MAX_SHAPES_PER_BODY`] shapes a body uses a generic
//! template that takes every bit of its places as a wire. Bodies that do not qualify, or
//! iterations whose subscripts are not constants, are run inline as before.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::rc::Rc;

use lang_c::ast::*;
use lang_c::span::{Node, Span};
use lang_c::visit::{self, Visit};
use pgc_circuit::Lit;
use pgc_circuit::netlist::NetBuilder;

use crate::bits::Bits;
use crate::compact::{MemoEntry, ShapeHasher, as_template_inputs, is_template_input};
use crate::expr::{const_value, integer_constant};
use crate::lower::{Binding, Lowerer, R, Val, VarId};
use crate::types::Ty;

/// Shapes of one loop body with the bounds of its integers compiled as templates before
/// further shapes leave the bounds out (an edit-distance table makes about two per column).
const MAX_RANGED_SHAPES_PER_BODY: usize = 1 << 14;

/// Shapes without bounds compiled after those before further shapes use one generic
/// template (every bit of every place a wire).
const MAX_SHAPES_PER_BODY: usize = 32;

/// The element type `depth` subscripts into `ty` (`ty` itself for 0), if `ty` has that many
/// array dimensions.
fn element_type(ty: &Ty, depth: usize) -> Option<&Ty> {
    let mut ty = ty;
    for _ in 0..depth {
        let Ty::Array(elem, _) = ty else {
            return None;
        };
        ty = elem;
    }
    Some(ty)
}

/// What the syntax of a loop body says about outlining it.
#[derive(Debug, Default)]
pub struct BodyScan<'a> {
    ok: bool,
    /// Names used as values outside subscripts (deduplicated, in order).
    names: Vec<&'a str>,
    /// Names used inside subscripts.
    index_names: Vec<&'a str>,
    /// Names assigned, incremented or decremented (the variable an lvalue lies in).
    written: HashSet<&'a str>,
    /// Names the body declares.
    declared: HashSet<&'a str>,
    /// Uses of arrays: the array's name and its subscripts, outermost dimension first.
    sites: Vec<(&'a str, Vec<&'a Node<Expression>>)>,
    /// How deep inside subscripts the visitor is.
    in_index: u32,
    /// Some name in a subscript is written or declared by the body (never outlined).
    index_changes: bool,
}

impl<'a> BodyScan<'a> {
    pub fn of(body: &'a Node<Statement>) -> BodyScan<'a> {
        let mut s = BodyScan {
            ok: true,
            ..Default::default()
        };
        s.visit_statement(&body.node, &body.span);
        let mut seen = HashSet::new();
        s.names.retain(|n| seen.insert(*n));
        let mut seen = HashSet::new();
        s.index_names.retain(|n| seen.insert(*n));
        // Decided here once rather than per iteration: names the body declares are its own
        // locals, not places.
        s.index_changes = s
            .index_names
            .iter()
            .any(|n| s.written.contains(n) || s.declared.contains(n));
        let declared = &s.declared;
        s.names.retain(|n| !declared.contains(n));
        s.sites.retain(|(n, _)| !declared.contains(n));
        s
    }

    fn note_written(&mut self, e: &'a Expression) {
        match root_name(e) {
            Some(n) => {
                self.written.insert(n);
            }
            None => self.ok = false,
        }
    }
}

/// The variable an lvalue expression lies in (`d[i][j].x` → `d`), if it is that simple.
fn root_name(e: &Expression) -> Option<&str> {
    match e {
        Expression::Identifier(id) => Some(&id.node.name),
        Expression::BinaryOperator(b) if b.node.operator.node == BinaryOperator::Index => {
            root_name(&b.node.lhs.node)
        }
        Expression::Member(m) if m.node.operator.node == MemberOperator::Direct => {
            root_name(&m.node.expression.node)
        }
        _ => None,
    }
}

impl<'a> Visit<'a> for BodyScan<'a> {
    fn visit_statement(&mut self, s: &'a Statement, span: &'a Span) {
        match s {
            Statement::Break
            | Statement::Continue
            | Statement::Return(_)
            | Statement::Goto(_)
            | Statement::Labeled(_)
            | Statement::Asm(_) => self.ok = false,
            _ => visit::visit_statement(self, s, span),
        }
    }

    fn visit_call_expression(&mut self, _: &'a CallExpression, _: &'a Span) {
        self.ok = false;
    }

    fn visit_unary_operator_expression(&mut self, u: &'a UnaryOperatorExpression, span: &'a Span) {
        use UnaryOperator as U;
        match u.operator.node {
            U::Address | U::Indirection => self.ok = false,
            U::PreIncrement | U::PreDecrement | U::PostIncrement | U::PostDecrement => {
                self.note_written(&u.operand.node)
            }
            _ => {}
        }
        visit::visit_unary_operator_expression(self, u, span);
    }

    fn visit_binary_operator_expression(
        &mut self,
        b: &'a BinaryOperatorExpression,
        span: &'a Span,
    ) {
        use BinaryOperator as B;
        match b.operator.node {
            B::Index => {
                // A maximal chain `a[e1]…[ek]`: its subscripts, innermost (last) first.
                let mut subs = vec![&*b.rhs];
                let mut base = &*b.lhs;
                while let Expression::BinaryOperator(inner) = &base.node
                    && inner.node.operator.node == B::Index
                {
                    subs.push(&*inner.node.rhs);
                    base = &*inner.node.lhs;
                }
                let Expression::Identifier(id) = &base.node else {
                    self.ok = false;
                    return;
                };
                subs.reverse();
                self.in_index += 1;
                for e in &subs {
                    self.visit_expression(&e.node, &e.span);
                }
                self.in_index -= 1;
                if self.in_index > 0 {
                    // An array read inside a subscript: evaluated before the body, so the
                    // body must not write it either.
                    self.index_names.push(&id.node.name);
                } else {
                    self.sites.push((&id.node.name, subs));
                }
                return;
            }
            B::Assign
            | B::AssignMultiply
            | B::AssignDivide
            | B::AssignModulo
            | B::AssignPlus
            | B::AssignMinus
            | B::AssignShiftLeft
            | B::AssignShiftRight
            | B::AssignBitwiseAnd
            | B::AssignBitwiseXor
            | B::AssignBitwiseOr => self.note_written(&b.lhs.node),
            _ => {}
        }
        visit::visit_binary_operator_expression(self, b, span);
    }

    fn visit_member_expression(&mut self, m: &'a MemberExpression, _: &'a Span) {
        if m.operator.node == MemberOperator::Indirect {
            self.ok = false;
        }
        // The member's name is not a variable.
        self.visit_expression(&m.expression.node, &m.expression.span);
    }

    fn visit_storage_class_specifier(&mut self, s: &'a StorageClassSpecifier, _: &'a Span) {
        // Only automatic locals: a `static` or `extern` one outlives the iteration, a
        // `typedef` would need its own scoping here.
        if !matches!(
            s,
            StorageClassSpecifier::Auto | StorageClassSpecifier::Register
        ) {
            self.ok = false;
        }
    }

    fn visit_declarator(&mut self, d: &'a Declarator, span: &'a Span) {
        match &d.kind.node {
            DeclaratorKind::Identifier(id) => {
                self.declared.insert(&id.node.name);
            }
            DeclaratorKind::Declarator(inner) => self.visit_declarator(&inner.node, &inner.span),
            DeclaratorKind::Abstract => {}
        }
        for dd in &d.derived {
            if !matches!(dd.node, DerivedDeclarator::Array(_)) {
                // Pointers (and function declarators) could reach outside the places.
                self.ok = false;
            }
            self.visit_derived_declarator(&dd.node, &dd.span);
        }
        let _ = span;
    }

    fn visit_identifier(&mut self, id: &'a Identifier, _: &'a Span) {
        if self.in_index > 0 {
            self.index_names.push(&id.name);
        } else {
            self.names.push(&id.name);
        }
    }
}

/// A variable's own bits and active value, while a template sees others.
type SavedVar = (VarId, Bits, Option<(Lit, Vec<Lit>)>);

/// One place of an iteration: bits `off..off + len` of `var`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    var: VarId,
    off: u64,
    len: u64,
}

/// One use of a place by the body (a name used as a value, or an array element).
#[derive(Clone, Copy, Debug)]
struct Use {
    place: usize,
    /// Bits `off..off + len` of the place.
    off: u64,
    len: u64,
    /// An integer: its interval is part of the shape (see [`Lowerer::try_outline`]).
    int: bool,
}

/// A compiled shape of a loop body: the call, and the interval of each integer use after
/// the body (a fact for every iteration of the shape, whose inputs satisfy the shape's
/// bounds).
#[derive(Clone, Debug)]
struct LoopEntry {
    call: MemoEntry,
    out_ranges: Vec<Option<(u64, u64)>>,
}

/// How much of an iteration its shape fixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tier {
    /// Constant bits and the upper bounds of the integers used.
    Ranged,
    /// Constant bits only.
    Constants,
    /// Nothing: every bit of every place is a wire.
    Generic,
}

/// What the names of a body's scan are bound to, looked up once while the scopes stay as
/// they are (every iteration of a loop stored once finds the same bindings: its body runs
/// as a call, declaring nothing in the outer scopes).
struct Resolved {
    /// [`Lowerer::scope_epoch`] when looked up.
    epoch: u64,
    /// Some name the body declares also names an outer variable.
    shadows: bool,
    /// Per name of [`BodyScan::index_names`], [`BodyScan::names`], [`BodyScan::sites`].
    index: Vec<Option<Binding>>,
    names: Vec<Option<Binding>>,
    sites: Vec<Option<Binding>>,
}

/// Compact-compilation state of loop bodies.
#[derive(Default)]
pub struct LoopState<'a> {
    /// Shared so that an iteration can hold its body's scan while it changes `self`.
    scans: HashMap<usize, Rc<BodyScan<'a>>, BuildHasherDefault<ShapeHasher>>,
    /// Per body, the bindings of its names (valid at their epoch).
    resolved: HashMap<usize, Rc<Resolved>, BuildHasherDefault<ShapeHasher>>,
    /// Shared: every iteration of a shape takes its entry (a clone would copy its vectors).
    memo: HashMap<(usize, Vec<u8>), Rc<LoopEntry>, BuildHasherDefault<ShapeHasher>>,
    shapes: HashMap<usize, usize, BuildHasherDefault<ShapeHasher>>,
    /// Bodies whose template could not be built (run inline from then on).
    refused: HashSet<usize, BuildHasherDefault<ShapeHasher>>,
    /// Bodies with at least one iteration run as a call.
    outlined: HashSet<usize, BuildHasherDefault<ShapeHasher>>,
    /// Iterations run as calls.
    pub iterations: u64,
}

impl LoopState<'_> {
    /// Loop bodies (loops) with at least one iteration run as a template call.
    pub fn loops_outlined(&self) -> u64 {
        self.outlined.len() as u64
    }
}

impl<'a> Lowerer<'a> {
    /// Runs one iteration's body: as a call of a template when it qualifies (see the module
    /// docs), else inline.
    pub(crate) fn exec_loop_body(&mut self, body: &'a Node<Statement>, region: bool) -> R<()> {
        if !self.opts.compact || region || self.deferring() || self.cur == Lit::FALSE {
            return self.exec_stmt(body);
        }
        if self.try_outline(body)? {
            Ok(())
        } else {
            self.exec_stmt(body)
        }
    }

    /// `Ok(false)`: run the body inline (nothing was changed).
    fn try_outline(&mut self, body: &'a Node<Statement>) -> R<bool> {
        let key_body = body as *const Node<Statement> as usize;
        if self.compact.loops.refused.contains(&key_body) {
            return Ok(false);
        }
        let scan = Rc::clone(
            self.compact
                .loops
                .scans
                .entry(key_body)
                .or_insert_with(|| Rc::new(BodyScan::of(body))),
        );
        if !scan.ok {
            return Ok(false);
        }
        let r = self.places_of(&scan, key_body);
        let Some((places, uses, index_vars)) = r else {
            return Ok(false);
        };
        self.check_budget()?;
        // The places' literals, one after another (one allocation per iteration, decoded
        // straight from the variables' storage).
        let mut starts: Vec<usize> = Vec::with_capacity(places.len() + 1);
        let mut flat: Vec<Lit> = Vec::with_capacity(places.iter().map(|p| p.len as usize).sum());
        for p in &places {
            starts.push(flat.len());
            self.extend_var_slice(p.var, p.off as usize..(p.off + p.len) as usize, &mut flat);
        }
        starts.push(flat.len());
        let values: Vec<&[Lit]> = starts.windows(2).map(|w| &flat[w[0]..w[1]]).collect();
        // The upper bounds of the integers used, which the template assumes of its inputs
        // (lower bounds would make nearly every iteration of a table its own shape).
        // A use of the same bits as an earlier one (`d[i][j - 1]` read twice) has its bound
        // (looking it up again would find the same interval).
        let mut his: Vec<Option<u64>> = Vec::with_capacity(uses.len());
        for (k, u) in uses.iter().enumerate() {
            let same = |w: &Use| (w.place, w.off, w.len, w.int) == (u.place, u.off, u.len, u.int);
            let hi = if !u.int || !self.opts.value_ranges {
                None
            } else if let Some(j) = uses[..k].iter().position(same) {
                his[j]
            } else {
                let bits = &values[u.place][u.off as usize..(u.off + u.len) as usize];
                self.range_of(bits).map(|(_, hi)| hi)
            };
            his.push(hi);
        }
        let shapes = self
            .compact
            .loops
            .shapes
            .get(&key_body)
            .copied()
            .unwrap_or(0);
        // Past the first shapes, intervals are dropped from the shape, then constants too.
        let tier = if shapes < MAX_RANGED_SHAPES_PER_BODY {
            Tier::Ranged
        } else if shapes < MAX_RANGED_SHAPES_PER_BODY + MAX_SHAPES_PER_BODY {
            Tier::Constants
        } else {
            Tier::Generic
        };
        let key = self.loop_shape(&places, &uses, &values, &his, tier);
        let (generic, ranged) = (tier == Tier::Generic, tier == Tier::Ranged);
        let memo_key = (key_body, key);
        let entry = match self.compact.loops.memo.get(&memo_key).cloned() {
            Some(e) => {
                self.compact.calls_reused += 1;
                e
            }
            None => {
                *self.compact.loops.shapes.entry(key_body).or_default() += 1;
                let his = if ranged { his } else { vec![None; uses.len()] };
                match self.build_loop_template(
                    body,
                    &places,
                    &uses,
                    &values,
                    &his,
                    &index_vars,
                    generic,
                ) {
                    Ok(e) => {
                        let e = Rc::new(e);
                        self.compact.loops.memo.insert(memo_key, Rc::clone(&e));
                        e
                    }
                    Err(_) => {
                        // Inline it from now on; that also reports a real error where it is.
                        self.compact.loops.refused.insert(key_body);
                        return Ok(false);
                    }
                }
            }
        };
        let inputs: Vec<Lit> = flat
            .iter()
            .copied()
            .filter(|l| generic || l.as_const().is_none())
            .collect();
        let mut results = self.call_memo(&entry.call, &inputs);
        for (k, (u, r)) in uses.iter().zip(&entry.out_ranges).enumerate() {
            // A use of the same bits as an earlier one with the same interval (`d[i][j - 1]`
            // read twice) was noted already.
            let noted_before = || {
                uses[..k]
                    .iter()
                    .zip(&entry.out_ranges)
                    .any(|(w, rw)| (w.place, w.off, w.len) == (u.place, u.off, u.len) && rw == r)
            };
            if let Some((lo, hi)) = *r
                && !noted_before()
            {
                let at = starts[u.place] + u.off as usize;
                let slice = &mut results[at..at + u.len as usize];
                let noted = self.note_range(slice.to_vec(), lo, hi);
                slice.copy_from_slice(&noted);
            }
        }
        // The variables hold what they held before the call (the template was built with
        // their own bits put back), so the places' literals are still `flat`.
        let guard = self.cur;
        for (k, p) in places.iter().enumerate() {
            let bits = &results[starts[k]..starts[k + 1]];
            if *bits != flat[starts[k]..starts[k + 1]] {
                self.write_bits(p.var, p.off, bits, guard);
            }
        }
        self.compact.loops.outlined.insert(key_body);
        self.compact.loops.iterations += 1;
        Ok(true)
    }

    /// The places of this iteration (sorted, disjoint) and, per use of the body (each name
    /// used as a value, then each array element site), its place and offset in it; `None`
    /// when the iteration cannot be outlined.
    fn places_of(
        &mut self,
        scan: &BodyScan<'a>,
        key_body: usize,
    ) -> Option<(Vec<Place>, Vec<Use>, Vec<VarId>)> {
        let res = self.resolved(scan, key_body);
        // A name the body declares must not also name an outer variable: uses before the
        // declaration would be the outer one's, which the scan does not tell apart.
        if res.shadows || scan.index_changes {
            return None;
        }
        let mut index_vars = Vec::new();
        for b in &res.index {
            // Read before the body runs and while its template is built: only constants,
            // so no wire of the outer builder can reach the template.
            match *b.as_ref()? {
                Binding::Var(v) => {
                    let var = &self.vars[v];
                    if var.ptr.is_some()
                        || matches!(var.ty, Ty::Array(..) | Ty::Pointer(_))
                        || self.var_bits(v).iter().any(|l| l.as_const().is_none())
                    {
                        return None;
                    }
                    index_vars.push(v);
                }
                Binding::Const(..) | Binding::Typedef(_) => {}
            }
        }
        let mut raw: Vec<Place> = Vec::with_capacity(scan.names.len() + scan.sites.len());
        let mut is_int: Vec<bool> = Vec::with_capacity(raw.capacity());
        for b in &res.names {
            match *b.as_ref()? {
                Binding::Var(v) => {
                    let var = &self.vars[v];
                    if var.ptr.is_some() || matches!(var.ty, Ty::Array(..) | Ty::Pointer(_)) {
                        return None;
                    }
                    is_int.push(matches!(var.ty, Ty::Int(_)));
                    raw.push(Place {
                        var: v,
                        off: 0,
                        len: var.bits.len() as u64,
                    });
                }
                Binding::Const(..) | Binding::Typedef(_) => {}
            }
        }
        // The integer variables named in subscripts, looked up once per iteration (the
        // subscripts do not change them).
        let mut known: Vec<(&'a str, Option<i128>)> = Vec::new();
        let index_bindings = (&scan.index_names[..], &res.index[..]);
        for ((_, subs), b) in scan.sites.iter().zip(&res.sites) {
            let Binding::Var(v) = *b.as_ref()? else {
                return None;
            };
            if self.vars[v].ptr.is_some() {
                return None;
            }
            // Types looked at by reference: cloning one per site allocated its boxes.
            let mut off = 0u64;
            for (depth, e) in subs.iter().enumerate() {
                let Ty::Array(elem, n) = element_type(&self.vars[v].ty, depth)? else {
                    return None;
                };
                let (n, elem_bits) = (*n, elem.bits());
                let k = match self
                    .const_subscript(e, &mut known, index_bindings)
                    .filter(|k| (0..n as i128).contains(k))
                {
                    Some(k) => k,
                    None => match self.eval_rvalue(e) {
                        Ok(Val::Int(t, bits)) => const_value(t, &bits)?,
                        _ => return None,
                    },
                };
                if k < 0 || k >= n as i128 {
                    return None;
                }
                off += k as u64 * elem_bits;
            }
            let ty = element_type(&self.vars[v].ty, subs.len())?;
            if matches!(ty, Ty::Array(..)) {
                return None;
            }
            is_int.push(matches!(ty, Ty::Int(_)));
            raw.push(Place {
                var: v,
                off,
                len: ty.bits(),
            });
        }
        // Merge overlapping places of one variable.
        let mut sorted = raw.clone();
        sorted.sort_unstable();
        let mut places: Vec<Place> = Vec::with_capacity(sorted.len());
        for p in sorted {
            match places.last_mut() {
                Some(q) if q.var == p.var && p.off < q.off + q.len => {
                    q.len = q.len.max(p.off + p.len - q.off);
                }
                _ => places.push(p),
            }
        }
        places.retain(|p| p.len > 0);
        let uses = raw
            .iter()
            .zip(is_int)
            .filter(|(r, _)| r.len > 0)
            .map(|(r, int)| {
                let i = places
                    .partition_point(|p| (p.var, p.off + p.len) <= (r.var, r.off))
                    .min(places.len() - 1);
                Use {
                    place: i,
                    off: r.off - places[i].off,
                    len: r.len,
                    int,
                }
            })
            .collect();
        Some((places, uses, index_vars))
    }

    /// A subscript's value found without building anything, when it is made of integer
    /// constants, variables whose bits are all constants, and `+`, `-`, `*` (a loop
    /// counter's `i - 1`): the exact value, or `None` for anything else (or an overflow of
    /// i128). Runs once per array use per iteration, so it must not go through the general
    /// evaluator, which makes literals and range records for every intermediate value.
    /// The caller takes it only when it is in bounds: C's result differs from the exact
    /// one by a multiple of 2^32 or 2^64 (arithmetic happens after promotion to `int` or
    /// wider), which no in-bounds index can; anything else is evaluated the general way.
    ///
    /// `known` caches the values of the names met so far in this iteration's subscripts.
    /// `bindings` are the names of the body's subscripts and what they are bound to.
    fn const_subscript(
        &self,
        e: &'a Node<Expression>,
        known: &mut Vec<(&'a str, Option<i128>)>,
        bindings: (&[&'a str], &[Option<Binding>]),
    ) -> Option<i128> {
        match &e.node {
            Expression::Constant(c) => match &c.node {
                Constant::Integer(i) => integer_constant(i).map(i128::from),
                _ => None,
            },
            Expression::Identifier(id) => {
                let name = id.node.name.as_str();
                if let Some(&(_, k)) = known.iter().find(|(n, _)| *n == name) {
                    return k;
                }
                let k = match bindings.0.iter().position(|n| *n == name) {
                    Some(at) => bindings.1[at].as_ref().and_then(|b| self.binding_value(b)),
                    None => self.name_value(name),
                };
                known.push((name, k));
                k
            }
            Expression::BinaryOperator(b) => {
                let op = match b.node.operator.node {
                    BinaryOperator::Plus => i128::checked_add,
                    BinaryOperator::Minus => i128::checked_sub,
                    BinaryOperator::Multiply => i128::checked_mul,
                    _ => return None,
                };
                op(
                    self.const_subscript(&b.node.lhs, known, bindings)?,
                    self.const_subscript(&b.node.rhs, known, bindings)?,
                )
            }
            _ => None,
        }
    }

    /// The value of a name whose bits are all constants (see [`Self::const_subscript`]).
    fn name_value(&self, name: &str) -> Option<i128> {
        self.binding_value(&self.peek(name)?)
    }

    /// The value of a binding whose bits are all constants.
    fn binding_value(&self, b: &Binding) -> Option<i128> {
        match *b {
            Binding::Var(v) => match &self.vars[v].ty {
                Ty::Int(t) if self.vars[v].ptr.is_none() && !self.deferring() => {
                    const_value(*t, &self.var_bits(v))
                }
                _ => None,
            },
            Binding::Const(_, k) => Some(k),
            Binding::Typedef(_) => None,
        }
    }

    /// The bindings of `scan`'s names, looked up again only when a scope changed since.
    fn resolved(&mut self, scan: &BodyScan<'a>, key_body: usize) -> Rc<Resolved> {
        if let Some(r) = self.compact.loops.resolved.get(&key_body)
            && r.epoch == self.scope_epoch
        {
            return Rc::clone(r);
        }
        let r = Rc::new(Resolved {
            epoch: self.scope_epoch,
            shadows: scan.declared.iter().any(|d| self.peek(d).is_some()),
            index: scan.index_names.iter().map(|n| self.peek(n)).collect(),
            names: scan.names.iter().map(|n| self.peek(n)).collect(),
            sites: scan.sites.iter().map(|(n, _)| self.peek(n)).collect(),
        });
        self.compact.loops.resolved.insert(key_body, Rc::clone(&r));
        r
    }

    /// A loop condition `x < n` (any comparison) whose operands are integer constants or
    /// names holding constants, decided without building anything: the condition of every
    /// iteration of a counted loop comes here, and the general evaluator would make and fold
    /// literals for both operands and the comparison. `None` where the general path is
    /// needed. Both values must be non-negative: the usual arithmetic conversions then keep
    /// them (converting a negative one to an unsigned type would not), so comparing the exact
    /// values is C's comparison. Constant operands make no gates and no range records on
    /// the general path either (`arith` folds them), so the circuit is the same.
    pub(crate) fn const_loop_cond(&self, cond: &'a Node<Expression>) -> Option<bool> {
        use BinaryOperator as B;
        if self.deferring() {
            return None;
        }
        let Expression::BinaryOperator(b) = &cond.node else {
            return None;
        };
        let operand = |e: &Node<Expression>| match &e.node {
            Expression::Constant(c) => match &c.node {
                Constant::Integer(i) => integer_constant(i).map(i128::from),
                _ => None,
            },
            Expression::Identifier(id) => self.name_value(&id.node.name),
            _ => None,
        };
        let op = &b.node.operator.node;
        if !matches!(
            op,
            B::Less | B::LessOrEqual | B::Greater | B::GreaterOrEqual | B::Equals | B::NotEquals
        ) {
            return None;
        }
        let (x, y) = (operand(&b.node.lhs)?, operand(&b.node.rhs)?);
        if x < 0 || y < 0 {
            return None;
        }
        Some(match op {
            B::Less => x < y,
            B::LessOrEqual => x <= y,
            B::Greater => x > y,
            B::GreaterOrEqual => x >= y,
            B::Equals => x == y,
            _ => x != y,
        })
    }

    /// A loop step `k++`, `++k`, `k--` or `--k` on an integer variable holding a constant,
    /// done without the general evaluator when the new value fits the variable's type (no
    /// wrap-around to think about): it writes the same constant bits, on the same paths, as
    /// the assignment `k = k + 1` would. Returns false (nothing done) otherwise.
    pub(crate) fn const_loop_step(&mut self, step: &'a Node<Expression>) -> bool {
        use UnaryOperator as U;
        if self.deferring() {
            return false;
        }
        let Expression::UnaryOperator(u) = &step.node else {
            return false;
        };
        let delta = match u.node.operator.node {
            U::PreIncrement | U::PostIncrement => 1,
            U::PreDecrement | U::PostDecrement => -1,
            _ => return false,
        };
        let Expression::Identifier(id) = &u.node.operand.node else {
            return false;
        };
        let Some(Binding::Var(v)) = self.peek(&id.node.name) else {
            return false;
        };
        let var = &self.vars[v];
        let Ty::Int(t) = var.ty else {
            return false;
        };
        if t.is_bool || var.ptr.is_some() || !(1..=64).contains(&t.bits) {
            return false;
        }
        let Some(k) = const_value(t, &self.var_bits(v)) else {
            return false;
        };
        let new = k + delta;
        let (min, max) = if t.signed {
            (-(1i128 << (t.bits - 1)), (1i128 << (t.bits - 1)) - 1)
        } else {
            (0, (1i128 << t.bits) - 1)
        };
        if !(min..=max).contains(&new) {
            return false;
        }
        let bits = self.const_bits(new, t.bits);
        let guard = self.cur;
        self.write_bits(v, 0, &bits, guard);
        true
    }

    /// The shape of an iteration (see the module docs) as bytes: where each use lands and
    /// its bound, each place's length (and its variable's) and constant bits. Numbers are
    /// LEB128 varints and literals two bits each (0, 1: that constant; 2: a wire), every
    /// list preceded by its length, so that different shapes give different keys; the key
    /// is hashed and compared once per iteration, so it is kept short.
    fn loop_shape(
        &self,
        places: &[Place],
        uses: &[Use],
        values: &[&[Lit]],
        his: &[Option<u64>],
        tier: Tier,
    ) -> Vec<u8> {
        fn varint(key: &mut Vec<u8>, mut x: u64) {
            while x >= 0x80 {
                key.push(x as u8 | 0x80);
                x >>= 7;
            }
            key.push(x as u8);
        }
        let bits_total: usize = values.iter().map(|v| v.len()).sum();
        let mut key = Vec::with_capacity(8 + uses.len() * 8 + places.len() * 8 + bits_total / 4);
        key.push(tier as u8);
        varint(&mut key, uses.len() as u64);
        for (u, hi) in uses.iter().zip(his) {
            varint(&mut key, u.place as u64);
            varint(&mut key, u.off);
            match hi {
                Some(h) if tier == Tier::Ranged => {
                    key.push(1);
                    varint(&mut key, *h);
                }
                _ => key.push(0),
            }
        }
        varint(&mut key, places.len() as u64);
        for (p, bits) in places.iter().zip(values) {
            varint(&mut key, self.vars[p.var].bits.len() as u64);
            varint(&mut key, p.len);
            for four in bits.chunks(4) {
                let mut byte = 0u8;
                for (t, l) in four.iter().enumerate() {
                    let code = match l.as_const() {
                        Some(v) if tier != Tier::Generic => v as u8,
                        _ => 2,
                    };
                    byte |= code << (2 * t);
                }
                key.push(byte);
            }
        }
        key
    }

    /// A binding without side effects (a pending global counts as none: the body's names
    /// are then not all variables yet, and the iteration runs inline).
    fn peek(&self, name: &str) -> Option<Binding> {
        if let Some(frame) = self.frames.last() {
            for scope in frame.iter().rev() {
                if let Some(b) = scope.get(name) {
                    return Some(b.clone());
                }
            }
        }
        self.globals.get(name).cloned()
    }

    /// Compiles the body for the shape of `places` (holding `values`) in a builder of its
    /// own.
    #[allow(clippy::too_many_arguments)]
    fn build_loop_template(
        &mut self,
        body: &'a Node<Statement>,
        places: &[Place],
        uses: &[Use],
        values: &[&[Lit]],
        his: &[Option<u64>],
        index_vars: &[VarId],
        generic: bool,
    ) -> R<LoopEntry> {
        let num_inputs = values
            .iter()
            .flat_map(|v| v.iter())
            .filter(|l| is_template_input(l, generic))
            .count() as u32;
        // Variables in subscripts hold constants on the current paths (checked), but their
        // merged bits may be multiplexers of the outer builder (a counter stepped under a
        // secret condition): the template sees the constants.
        let saved_index: Vec<SavedVar> = index_vars
            .iter()
            .map(|&v| {
                let seen = Bits::from_vec(self.var_bits(v).to_vec());
                let var = &mut self.vars[v];
                let active = var.active.take();
                (v, std::mem::replace(&mut var.bits, seen), active)
            })
            .collect();
        let outer = std::mem::replace(&mut self.g, NetBuilder::new(self.opts.optimize));
        let outer_ranges = self.ranges.enter_builder();
        let saved_paths = self.take_path_state();
        // Swap the places' bits for the template's inputs, inside the variables.
        let mut fresh = self.g.input(num_inputs).into_iter();
        let mut saved_bits: Vec<Vec<Lit>> = Vec::with_capacity(places.len());
        let mut saved_active = Vec::new();
        for (p, bits) in places.iter().zip(values) {
            let var = &mut self.vars[p.var];
            if let Some(a) = var.active.take() {
                saved_active.push((p.var, a));
            }
            let range = p.off as usize..(p.off + p.len) as usize;
            saved_bits.push(var.bits.slice(range.clone()).into_owned());
            let swapped = as_template_inputs(bits, generic, &mut fresh);
            var.bits.write(range.start, &swapped);
        }
        // The bounds the shape fixes, as facts about the template's inputs.
        for (u, hi) in uses.iter().zip(his) {
            if let Some(hi) = *hi {
                let p = places[u.place];
                let at = (p.off + u.off) as usize..(p.off + u.off + u.len) as usize;
                let bits = self.vars[p.var].bits.slice(at.clone()).into_owned();
                let noted = self.note_range(bits, 0, hi);
                self.vars[p.var].bits.write(at.start, &noted);
            }
        }
        self.compact.building += 1;
        let r = self.exec_stmt(body);
        self.compact.building -= 1;
        let mut results: Vec<Lit> = Vec::new();
        let mut out_ranges = Vec::with_capacity(uses.len());
        if r.is_ok() {
            for p in places {
                results.extend_from_slice(
                    &self.var_slice(p.var, p.off as usize..(p.off + p.len) as usize),
                );
            }
            for u in uses {
                let p = places[u.place];
                let at = (p.off + u.off) as usize..(p.off + u.off + u.len) as usize;
                let r = if u.int && self.opts.value_ranges {
                    let bits = self.var_slice(p.var, at).into_owned();
                    self.range_of(&bits)
                } else {
                    None
                };
                out_ranges.push(r);
            }
        }
        // The variables get their own bits back, whatever happened.
        for (p, bits) in places.iter().zip(saved_bits) {
            let var = &mut self.vars[p.var];
            var.active = None;
            var.bits.write(p.off as usize, &bits);
        }
        for (v, a) in saved_active {
            self.vars[v].active = Some(a);
        }
        for (v, bits, active) in saved_index.into_iter().rev() {
            self.vars[v].bits = bits;
            self.vars[v].active = active;
        }
        let inner = std::mem::replace(&mut self.g, outer);
        self.ranges.leave_builder(outer_ranges);
        self.restore_path_state(saved_paths);
        r?;
        let call = self.finish_template("loop body", body.span, inner, &results, num_inputs)?;
        Ok(LoopEntry { call, out_ranges })
    }
}
