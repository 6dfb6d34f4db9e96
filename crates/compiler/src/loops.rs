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
//! template that takes every bit of its places as a wire, unless that template costs more
//! gates than the body's shapes did (constants that changed every iteration, now wires)
//! while an inlined iteration would be small: then the body runs inline from there. Bodies that do not qualify, iterations whose
//! subscripts are not constants, and iterations whose places hold only constants (they
//! build no gates) are run inline as before.
//!
//! A *nest* is an outer loop's body holding counted loops ([`NestLoop`]) whose counters its
//! subscripts name. Its headers depend only on names that hold constants when the body
//! starts (and on the counters), so [`Lowerer::walk_nest_loop`] runs them at compile time and
//! lists the elements every subscript selects for every counter value: those are the
//! places, and the runs of the loops (first value, count) join the shape, so an iteration of
//! the same shape runs the same inner iterations on the same places. Building the template
//! runs the inner loop inside the outer template's builder, where its iterations become
//! calls of their own templates. Constants that change between iterations of a nest
//! (`d[i][0] = i`) become template inputs where that lets iterations share a template
//! ([`Lowerer::loop_variant_bits`]). A nest that keeps making new shapes (a table whose
//! bounds grow row by row) is then keyed by *rounded* bounds ([`round_key_bound`]), so the
//! rows of a band share a template; each call replays the template's bound program
//! ([`crate::replay`]) from the call's exact intervals, so its results' bounds are those of
//! the row, not of the band, and the next row rounds exact bounds again. A nest whose
//! rounded shapes do not repeat either runs inline.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault};
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
use crate::replay::{BoundProgram, Interval, NO_REG, Op};
use crate::types::{IntTy, Ty};

/// Shapes of one loop body with the bounds of its integers compiled as templates before
/// further shapes leave the bounds out (an edit-distance table makes about five per row or
/// column: its cells bounded by `max(i, j)` differ below, on and above the diagonal, and the
/// first row and column hold constants).
const MAX_RANGED_SHAPES_PER_BODY: usize = 1 << 15;

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
    /// The counted loops nested in the body whose counters may index its arrays (empty
    /// unless the body is a nest: see [`BodyScan::of`]).
    loops: Vec<NestLoop<'a>>,
    /// Per site of [`Self::sites`], the innermost of [`Self::loops`] around it.
    site_loop: Vec<Option<usize>>,
    /// Per loop of [`Self::loops`] and then the body itself (last): its sites and the loops
    /// directly inside it.
    loop_sites: Vec<Vec<usize>>,
    loop_children: Vec<Vec<usize>>,
    /// Recognize counted loops (the second scan of a body).
    nest_mode: bool,
    /// The loop of [`Self::loops`] the visitor is in.
    cur_loop: Option<usize>,
}

/// A counted loop `for (T k = init; k OP bound; k++)` (or `k--`, the comparison either way
/// round) nested in a body: its counter takes values decided at compile time from names
/// that hold constants when the body starts, so the elements its subscripts select can be
/// listed before the body runs.
#[derive(Debug)]
struct NestLoop<'a> {
    counter: &'a str,
    /// The counter's declaration (its type is looked up with the body's names).
    decl: &'a Node<Declaration>,
    init: &'a Node<Expression>,
    /// The condition as `counter op bound`.
    op: BinaryOperator,
    bound: &'a Node<Expression>,
    step: i128,
    parent: Option<usize>,
}

/// Whether `e` is made of integer constants, names and integer operators only (a subscript
/// or loop bound [`Lowerer::nest_value`] can decide).
fn nest_expr_ok(e: &Expression) -> bool {
    use BinaryOperator as B;
    match e {
        Expression::Constant(c) => matches!(c.node, Constant::Integer(_)),
        Expression::Identifier(_) => true,
        Expression::BinaryOperator(b) => {
            matches!(
                b.node.operator.node,
                B::Plus
                    | B::Minus
                    | B::Multiply
                    | B::Divide
                    | B::Modulo
                    | B::ShiftLeft
                    | B::ShiftRight
                    | B::BitwiseAnd
                    | B::BitwiseOr
                    | B::BitwiseXor
            ) && nest_expr_ok(&b.node.lhs.node)
                && nest_expr_ok(&b.node.rhs.node)
        }
        _ => false,
    }
}

/// `for (T k = init; k OP bound; k++)` as a [`NestLoop`] (parent not set), if it has that
/// form.
fn nest_loop(f: &ForStatement) -> Option<NestLoop<'_>> {
    use BinaryOperator as B;
    let ForInitializer::Declaration(decl) = &f.initializer.node else {
        return None;
    };
    let [d] = &decl.node.declarators[..] else {
        return None;
    };
    let DeclaratorKind::Identifier(id) = &d.node.declarator.node.kind.node else {
        return None;
    };
    if !d.node.declarator.node.derived.is_empty() {
        return None;
    }
    let counter: &str = &id.node.name;
    let Some(Node {
        node: Initializer::Expression(init),
        ..
    }) = &d.node.initializer
    else {
        return None;
    };
    let names_counter =
        |e: &Expression| matches!(e, Expression::Identifier(i) if i.node.name == counter);
    let Expression::BinaryOperator(c) = &f.condition.as_deref()?.node else {
        return None;
    };
    let (op, bound) = if names_counter(&c.node.lhs.node) {
        (c.node.operator.node.clone(), &*c.node.rhs)
    } else if names_counter(&c.node.rhs.node) {
        let flipped = match c.node.operator.node {
            B::Less => B::Greater,
            B::LessOrEqual => B::GreaterOrEqual,
            B::Greater => B::Less,
            B::GreaterOrEqual => B::LessOrEqual,
            ref other => other.clone(),
        };
        (flipped, &*c.node.lhs)
    } else {
        return None;
    };
    if !matches!(
        op,
        B::Less | B::LessOrEqual | B::Greater | B::GreaterOrEqual | B::Equals | B::NotEquals
    ) || !nest_expr_ok(&bound.node)
        || !nest_expr_ok(&init.node)
    {
        return None;
    }
    let Expression::UnaryOperator(u) = &f.step.as_deref()?.node else {
        return None;
    };
    if !names_counter(&u.node.operand.node) {
        return None;
    }
    let step = match u.node.operator.node {
        UnaryOperator::PreIncrement | UnaryOperator::PostIncrement => 1,
        UnaryOperator::PreDecrement | UnaryOperator::PostDecrement => -1,
        _ => return None,
    };
    Some(NestLoop {
        counter,
        decl,
        init,
        op,
        bound,
        step,
        parent: None,
    })
}

impl<'a> BodyScan<'a> {
    /// The scan of a body. A body whose subscripts name a variable it changes is scanned
    /// again as a possible nest: counted loops inside it ([`NestLoop`]) are recognized, their
    /// counters may index its arrays (written only by their own loop's header), and the
    /// names in their headers count as names in subscripts (constants when the body starts,
    /// not written by it).
    pub fn of(body: &'a Node<Statement>) -> BodyScan<'a> {
        let plain = Self::scan(body, false);
        if !plain.ok || !plain.index_changes {
            return plain;
        }
        let nest = Self::scan(body, true);
        if nest.ok && !nest.index_changes && !nest.loops.is_empty() {
            nest
        } else {
            plain
        }
    }

    fn scan(body: &'a Node<Statement>, nest_mode: bool) -> BodyScan<'a> {
        let mut s = BodyScan {
            ok: true,
            nest_mode,
            ..Default::default()
        };
        s.visit_statement(&body.node, &body.span);
        let mut seen = HashSet::new();
        s.names.retain(|n| seen.insert(*n));
        let mut seen = HashSet::new();
        s.index_names.retain(|n| seen.insert(*n));
        // Decided here once rather than per iteration: names the body declares are its own
        // locals, not places. Counters are declared by their loop headers (not noted in
        // `declared`) and written by their steps (not noted in `written`).
        s.index_changes = s
            .index_names
            .iter()
            .any(|n| s.written.contains(n) || s.declared.contains(n));
        let counters: HashSet<&str> = s.loops.iter().map(|l| l.counter).collect();
        s.index_names.retain(|n| !counters.contains(n));
        let declared = &s.declared;
        s.names
            .retain(|n| !declared.contains(n) && !counters.contains(n));
        let mut site_loop = std::mem::take(&mut s.site_loop).into_iter();
        let mut kept_loops = Vec::with_capacity(s.sites.len());
        s.sites.retain(|(n, _)| {
            let l = site_loop.next().expect("one loop per site");
            let keep = !declared.contains(n);
            if keep {
                kept_loops.push(l);
            }
            keep
        });
        s.site_loop = kept_loops;
        let top = s.loops.len();
        s.loop_sites = vec![Vec::new(); top + 1];
        s.loop_children = vec![Vec::new(); top + 1];
        for (k, l) in s.site_loop.iter().enumerate() {
            s.loop_sites[l.unwrap_or(top)].push(k);
        }
        for (k, l) in s.loops.iter().enumerate() {
            s.loop_children[l.parent.unwrap_or(top)].push(k);
        }
        s
    }

    /// Whether the body holds counted loops whose counters its subscripts may name.
    pub fn is_nest(&self) -> bool {
        !self.loops.is_empty()
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
            Statement::For(f) if self.nest_mode => match nest_loop(&f.node) {
                Some(mut l) => {
                    // The header's names are read before the body runs, as subscripts are;
                    // its declaration and step are the counter's only writes.
                    self.in_index += 1;
                    self.visit_expression(&l.init.node, &l.init.span);
                    self.visit_expression(&l.bound.node, &l.bound.span);
                    self.in_index -= 1;
                    self.index_names.push(l.counter);
                    l.parent = self.cur_loop;
                    let outer = self.cur_loop.replace(self.loops.len());
                    self.loops.push(l);
                    let body = &f.node.statement;
                    self.visit_statement(&body.node, &body.span);
                    self.cur_loop = outer;
                }
                None => visit::visit_statement(self, s, span),
            },
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
                    self.site_loop.push(self.cur_loop);
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

    fn visit_compound_literal(&mut self, _: &'a CompoundLiteral, _: &'a Span) {
        // An object of its own, made anew per iteration: not a place of the template.
        self.ok = false;
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

/// Sites (array uses) and nested iterations a nest's walk may list per iteration of its
/// body before the body runs inline instead.
const MAX_NEST_SITES: u64 = 1 << 20;

/// Shapes of a nest compiled before it must have reused templates at least as often as it
/// compiled them (else it runs inline from then on).
const NEST_SHAPES_BEFORE_REUSE: usize = 4;

/// The state of listing a nest's places ([`Lowerer::walk_nest_loop`]).
struct NestWalk<'a, 'w> {
    /// The values of the names in the body's subscripts and loop headers (and whether their
    /// types are unsigned), when they hold constants.
    outer: &'w [(&'a str, Option<(i128, bool)>)],
    /// The counters of the loops being walked, innermost last.
    env: Vec<(&'a str, i128)>,
    /// Per loop run, in the order of the walk: its first counter value and its iterations.
    trace: &'w mut Vec<i128>,
    sites: u64,
    iterations: u64,
}

impl NestWalk<'_, '_> {
    /// The value of a subscript or loop bound ([`nest_expr_ok`]) and whether an unsigned
    /// operand took part, when C computes it exactly: every value within `int` (so no
    /// operation wraps, whatever the types), the operands of `/`, `%`, shifts and bitwise
    /// operators and every value of an expression with an unsigned operand non-negative
    /// (the conversions to unsigned then keep them). `None` otherwise.
    fn value(&self, e: &Expression) -> Option<(i128, bool)> {
        use BinaryOperator as B;
        const INT: std::ops::Range<i128> = -(1 << 31)..(1 << 31);
        let (v, unsigned) = match e {
            Expression::Constant(c) => match &c.node {
                Constant::Integer(i) => (i128::from(integer_constant(i)?), i.suffix.unsigned),
                _ => return None,
            },
            Expression::Identifier(id) => {
                let name = id.node.name.as_str();
                match self.env.iter().rev().find(|(n, _)| *n == name) {
                    // A counter: its type's range was checked, its promoted type is at
                    // least as wide as `int`, and it is compared as itself.
                    Some(&(_, k)) => (k, false),
                    None => self.outer.iter().find(|(n, _)| *n == name)?.1?,
                }
            }
            Expression::BinaryOperator(b) => {
                let (x, ux) = self.value(&b.node.lhs.node)?;
                let (y, uy) = self.value(&b.node.rhs.node)?;
                let non_negative = x >= 0 && y >= 0;
                let v = match b.node.operator.node {
                    B::Plus => x + y,
                    B::Minus => x - y,
                    B::Multiply => x.checked_mul(y)?,
                    B::Divide if non_negative && y > 0 => x / y,
                    B::Modulo if non_negative && y > 0 => x % y,
                    B::ShiftLeft if non_negative && y < 31 => x << y,
                    B::ShiftRight if non_negative && y < 31 => x >> y,
                    B::BitwiseAnd if non_negative => x & y,
                    B::BitwiseOr if non_negative => x | y,
                    B::BitwiseXor if non_negative => x ^ y,
                    _ => return None,
                };
                (v, ux || uy)
            }
            _ => return None,
        };
        (INT.contains(&v) && (!unsigned || v >= 0)).then_some((v, unsigned))
    }
}

/// A use's bits (place, offset, length) and the interval noted for them.
type NotedUse = (usize, u64, u64, Option<(u64, u64)>);

/// A set hashed with [`ShapeHasher`].
type FastSet<T> = HashSet<T, BuildHasherDefault<ShapeHasher>>;

/// Iterations and nest iterations run as calls, calls reused, bodies and nests outlined.
type LoopCounts = (u64, u64, u64, FastSet<usize>, FastSet<usize>);

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
    /// The template's bound program ([`LoopState::programs`]), where one was recorded.
    prog: Option<u32>,
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
    /// Per loop of [`BodyScan::loops`], its counter's type (`None`: not an integer type the
    /// nest's counting handles, and the body runs inline).
    counter_types: Vec<Option<IntTy>>,
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
    /// Nests (bodies holding counted loops that index their arrays) with at least one
    /// iteration run as a call, and those iterations.
    nests_outlined: HashSet<usize, BuildHasherDefault<ShapeHasher>>,
    pub nest_iterations: u64,
    /// Per nest, the shapes of its iterations without their lifted constants.
    skeletons: HashSet<(usize, Vec<u8>), BuildHasherDefault<ShapeHasher>>,
    /// Per nest, its iterations that reused a template.
    nest_reuses: HashMap<usize, u64, BuildHasherDefault<ShapeHasher>>,
    /// Per nest, what its uses held at its last iteration ([`Lowerer::loop_variant_bits`]).
    variants: HashMap<usize, Variants, BuildHasherDefault<ShapeHasher>>,
    /// Nests whose constants are never lifted: a lifted one decided a loop's condition.
    no_lift: HashSet<usize, BuildHasherDefault<ShapeHasher>>,
    /// Nests whose first template with lifted constants was held against one without.
    lift_checked: HashSet<usize, BuildHasherDefault<ShapeHasher>>,
    /// Per body, the most gates of a template built for one of its shapes (not generic).
    shape_gates: HashMap<usize, u64, BuildHasherDefault<ShapeHasher>>,
    /// Bodies whose first generic template was held against [`Self::shape_gates`].
    generic_checked: HashSet<usize, BuildHasherDefault<ShapeHasher>>,
    /// The bound programs of loop templates ([`crate::replay`]).
    pub(crate) programs: Vec<BoundProgram>,
    /// Scratch registers of replays.
    pub(crate) replay_stack: Vec<Interval>,
    /// Nests keyed by rounded bounds (their first shapes were not reused).
    rounded: HashMap<usize, Rounded, BuildHasherDefault<ShapeHasher>>,
    /// Templates with lifted constants being built (one inside another counts twice):
    /// while any is, a loop whose condition is not a constant stops the build
    /// ([`Lowerer::lifted_decides_loop`]).
    lifting: u32,
}

/// A nest keyed by rounded bounds: its shape and reuse counts when it switched, the
/// (hashed) rounded shapes seen, and how many were seen once before being built.
#[derive(Default)]
struct Rounded {
    shapes: usize,
    reuses: u64,
    seen: HashSet<u64, BuildHasherDefault<ShapeHasher>>,
    first_sightings: u64,
}

/// Per use of a nest: the constant it held at the last iteration (if it held one), and
/// whether it has held different constants (it is a wire of the nest's templates from then
/// on).
#[derive(Default)]
struct Variants {
    last: Vec<Option<u64>>,
    lifted: Vec<bool>,
}

/// `hi` rounded up to `2^k - 1`: the bound a nest's template assumes for an integer of at
/// most `hi` (a larger bound is still a fact; see [`Lowerer::try_outline`]).
fn round_up_bound(hi: u64) -> u64 {
    if hi == 0 {
        0
    } else {
        u64::MAX >> hi.leading_zeros()
    }
}

/// Which bits of an iteration's places are a template's inputs: every bit of a generic
/// template, else those that are not constants and the lifted ones (per bit of the places
/// one after another, `starts` where each place begins; empty when none).
#[derive(Clone, Copy)]
struct TemplateInputs<'x> {
    generic: bool,
    lifted: &'x [bool],
    starts: &'x [usize],
}

impl LoopState<'_> {
    /// Loop bodies (loops) with at least one iteration run as a template call.
    pub fn loops_outlined(&self) -> u64 {
        self.outlined.len() as u64
    }

    /// Of those, the nests (an outer loop's body holding a loop stored once).
    pub fn nests_outlined(&self) -> u64 {
        self.nests_outlined.len() as u64
    }
}

/// The upper bounds of the integers used (`ivs`, from [`Lowerer::use_intervals`]), which the
/// template assumes of its inputs (lower bounds would make nearly every iteration of a table
/// its own shape). A lifted constant's bound is rounded up to 2^k - 1, so that iterations
/// holding different constants share shapes; with `round_all` (a nest whose rows make new
/// shapes) every bound is rounded ([`round_key_bound`]); other bounds stay exact. The
/// results' bounds are replayed per call from the exact ones ([`crate::replay`]), so rounding
/// the key does not make them grow.
fn key_bounds(
    ivs: &[Option<Interval>],
    uses: &[Use],
    starts: &[usize],
    lifted: &[bool],
    round_all: bool,
) -> Vec<Option<u64>> {
    ivs.iter()
        .zip(uses)
        .map(|(iv, u)| {
            let hi = iv.as_ref()?.1;
            Some(if round_all {
                round_key_bound(hi)
            } else if lifted.get(starts[u.place] + u.off as usize) == Some(&true) {
                round_up_bound(hi)
            } else {
                hi
            })
        })
        .collect()
}

/// In a nest keyed by rounded bounds, the constant bits of a use below the width of its
/// rounded bound become template inputs (`lifted`, per bit of the places; made as long as
/// them if empty): a row whose cells are at most 7 (3 wires) then has the shape of one whose
/// cells are at most 14 (4 wires), both in the class "at most 14", and bits that a cell's
/// lower bound fixes (in `[4, 7]` bit 2 is a constant 1) do not set rows apart either.
/// Uses whose bits are all constants, and variables that subscripts name, are left as they
/// are.
fn widen_to_rounded_bounds(
    lifted: &mut Vec<bool>,
    places: &[Place],
    uses: &[Use],
    starts: &[usize],
    flat: &[Lit],
    his: &[Option<u64>],
    index_vars: &[VarId],
) {
    for (u, hi) in uses.iter().zip(his) {
        let Some(hi) = *hi else { continue };
        if index_vars.contains(&places[u.place].var) {
            continue;
        }
        let at = starts[u.place] + u.off as usize;
        let bits = &flat[at..at + u.len as usize];
        if bits.iter().all(|l| l.as_const().is_some()) {
            continue;
        }
        let width = (64 - hi.leading_zeros() as usize).min(bits.len());
        for k in 0..width {
            if bits[k].as_const().is_some() {
                if lifted.is_empty() {
                    *lifted = vec![false; flat.len()];
                }
                lifted[at + k] = true;
            }
        }
    }
}

/// `hi` rounded up to `2^k - 2` (`0` stays `0`): the bound a row of a nest keyed by rounded
/// bounds assumes for an integer of at most `hi`. Not `2^k - 1`: a value of at most `2^k - 2`
/// plus one still fits in `k` bits, so a row's cells cost what they cost with exact bounds
/// one bit narrower (see docs/c-subset.md, "Nests").
pub(crate) fn round_key_bound(hi: u64) -> u64 {
    if hi == 0 || hi >= u64::MAX / 2 {
        hi
    } else {
        (u64::MAX >> (hi + 1).leading_zeros()) - 1
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

    /// The intervals of a template call's results (loop bodies and functions stored once
    /// alike): the upper bounds its bound program `prog` gives from the call's exact input
    /// intervals `ivs`, within what its build found (`built`); without a program, the
    /// build's. Lower bounds are replayed too where `replay_lower` is set (functions, whose
    /// keys hold lower bounds in tiers, [`crate::compact`]); else they stay the build's: a
    /// replayed one fixes the common high bits of a result as constants, and those are part
    /// of the next call's shape (a loop body keyed by upper bounds only would make more
    /// shapes than it saves gates: EDT-255 in the textbook form 829 → 2,498 templates for
    /// 0.9 % fewer ANDs, BENCHMARKS.md).
    pub(crate) fn replayed_ranges(
        &mut self,
        prog: Option<u32>,
        ivs: &[Option<Interval>],
        built: &[Option<Interval>],
        replay_lower: bool,
    ) -> Vec<Option<Interval>> {
        let Some(p) = prog else {
            return built.to_vec();
        };
        let loops = &mut self.compact.loops;
        let replayed = crate::replay::replay(&loops.programs, p, ivs, &mut loops.replay_stack);
        replayed
            .iter()
            .zip(built)
            .map(|(r, b)| match (*r, *b) {
                (Some(r), Some(b)) => {
                    let lo = if replay_lower { r.0.max(b.0) } else { b.0 };
                    Some((lo, r.1.min(b.1)))
                }
                (_, b) => b,
            })
            .collect()
    }

    /// Inside a template whose bound program is being recorded, a call of template
    /// program `p` is a step of it: records the step (its inputs in `in_regs`) and returns
    /// the registers of its results, one per entry of `out_ranges`.
    pub(crate) fn record_call_step(
        &mut self,
        p: u32,
        in_regs: &[u32],
        out_ranges: &[Option<Interval>],
    ) -> Vec<u32> {
        let build_ivs: Vec<Interval> = out_ranges
            .iter()
            .map(|r| r.unwrap_or((0, u64::MAX)))
            .collect();
        let programs = &self.compact.loops.programs;
        let rec = self.ranges.recording().expect("recording");
        let first = rec
            .rec
            .push_call(p, &programs[p as usize], in_regs, &build_ivs);
        (first..first + out_ranges.len() as u32).collect()
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
        let mut trace = Vec::new();
        let r = self.places_of(&scan, key_body, &mut trace);
        let Some((places, uses, index_vars)) = r else {
            return Ok(false);
        };
        let nest = scan.is_nest();
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
        // An iteration whose places hold only constants builds no gates inline: it is
        // compile-time work. Outlined, each iteration's constants would be a shape of its
        // own, and past the shape limit a generic template would make them wires (a
        // constant counter of a million steps became 60 M ANDs).
        if flat.iter().all(|l| l.as_const().is_some()) {
            return Ok(false);
        }
        let values: Vec<&[Lit]> = starts.windows(2).map(|w| &flat[w[0]..w[1]]).collect();
        // In a nest, uses holding constants that change between iterations are wires.
        let mut lifted = if nest {
            self.loop_variant_bits(key_body, &places, &uses, &starts, &flat, &index_vars)
        } else {
            Vec::new()
        };
        // The exact intervals of the uses (the key holds their upper bounds, rounded in a
        // nest keyed by rounded bounds; the call's results are replayed from them).
        let ivs = self.use_intervals(&uses, &starts, &flat);
        let round_all = nest && self.compact.loops.rounded.contains_key(&key_body);
        let mut his = key_bounds(&ivs, &uses, &starts, &lifted, round_all);
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
        // A generic template takes every bit of its places as a wire; a variable that is
        // both a place and in a subscript (`x[j] = j`) would then index with wires inside
        // the template, reaching elements that are not its places. Such iterations run
        // inline (each had a shape of its own anyway).
        if tier == Tier::Generic && places.iter().any(|p| index_vars.contains(&p.var)) {
            return Ok(false);
        }
        if !lifted.is_empty() && !round_all {
            // Constants are lifted only where the rest of the iteration's shape was seen
            // before (the rows differ in nothing else): elsewhere a template input and
            // its rounded bound would cost gates and gain no shared template. (Keyed by
            // rounded bounds, a shape is built only when it comes again anyway.)
            let mut skeleton_his = his.clone();
            for (h, u) in skeleton_his.iter_mut().zip(&uses) {
                if lifted.get(starts[u.place] + u.off as usize) == Some(&true) {
                    *h = None;
                }
            }
            let skeleton = self.loop_shape(
                &places,
                &uses,
                &values,
                &skeleton_his,
                &lifted,
                &trace,
                tier,
            );
            if self.compact.loops.skeletons.insert((key_body, skeleton)) {
                lifted = Vec::new();
                his = key_bounds(&ivs, &uses, &starts, &lifted, round_all);
            }
        }
        // Loop-variant constants lifted (their builds are checked as such, below).
        let lifting = !lifted.is_empty();
        if round_all && tier == Tier::Ranged {
            widen_to_rounded_bounds(
                &mut lifted,
                &places,
                &uses,
                &starts,
                &flat,
                &his,
                &index_vars,
            );
        }
        let key = self.loop_shape(&places, &uses, &values, &his, &lifted, &trace, tier);
        let (generic, ranged) = (tier == Tier::Generic, tier == Tier::Ranged);
        let memo_key = (key_body, key);
        let entry = match self.compact.loops.memo.get(&memo_key).cloned() {
            Some(e) => {
                self.compact.calls_reused += 1;
                if nest {
                    *self.compact.loops.nest_reuses.entry(key_body).or_default() += 1;
                }
                e
            }
            None => {
                let reuses = self
                    .compact
                    .loops
                    .nest_reuses
                    .get(&key_body)
                    .copied()
                    .unwrap_or(0);
                let (shapes_then, reuses_then) = self
                    .compact
                    .loops
                    .rounded
                    .get(&key_body)
                    .map_or((0, 0), |r| (r.shapes, r.reuses));
                let (new_shapes, new_reuses) = (shapes - shapes_then, reuses - reuses_then);
                if round_all {
                    // A rounded shape is built when it comes again: the first row of a band
                    // runs inline, and rows whose rounded bounds still differ (a table
                    // bounded by `i + j`) build nothing before the nest runs inline.
                    let hash = BuildHasherDefault::<ShapeHasher>::default().hash_one(&memo_key.1);
                    let r = self
                        .compact
                        .loops
                        .rounded
                        .get_mut(&key_body)
                        .expect("rounded");
                    if r.seen.insert(hash) {
                        r.first_sightings += 1;
                        if r.first_sightings > NEST_SHAPES_BEFORE_REUSE as u64
                            && new_reuses + (new_shapes as u64) < r.first_sightings
                        {
                            self.compact.loops.refused.insert(key_body);
                        }
                        return Ok(false);
                    }
                }
                if nest && new_shapes >= NEST_SHAPES_BEFORE_REUSE && new_reuses < new_shapes as u64
                {
                    // Its iterations keep making new shapes (a table whose bounds grow
                    // row by row): each would hold a copy of its inner loop's calls,
                    // which the main body holds more cheaply. Keyed by rounded bounds, rows
                    // of a band may share templates (their results' bounds replayed per
                    // call stay exact); if they still do not, it runs inline.
                    if !round_all && self.opts.value_ranges && self.opts.bound_replay {
                        self.compact.loops.rounded.insert(
                            key_body,
                            Rounded {
                                shapes,
                                reuses,
                                ..Rounded::default()
                            },
                        );
                        return self.try_outline(body);
                    }
                    self.compact.loops.refused.insert(key_body);
                    return Ok(false);
                }
                *self.compact.loops.shapes.entry(key_body).or_default() += 1;
                let his = if ranged { his } else { vec![None; uses.len()] };
                let counts_before = self.loop_counts();
                // Widened bits, too, may make a loop's condition secret in the template.
                let any_lifted = !lifted.is_empty();
                self.compact.loops.lifting += any_lifted as u32;
                let built = self.build_loop_template(
                    body,
                    &places,
                    &uses,
                    &values,
                    &his,
                    &index_vars,
                    TemplateInputs {
                        generic,
                        lifted: &lifted,
                        starts: &starts,
                    },
                );
                self.compact.loops.lifting -= any_lifted as u32;
                match built {
                    Ok(e) if lifting && self.compact.loops.lift_checked.insert(key_body) => {
                        // The first template a nest builds with lifted constants is held
                        // against the same iteration's without them: a lifted divisor,
                        // shift or factor (`x / d[i][0]`) costs a full operation per row
                        // where the constant folds, more than sharing the rows saves.
                        let counts_lifted = self.loop_counts();
                        let his_unlifted = if ranged {
                            key_bounds(&ivs, &uses, &starts, &[], round_all)
                        } else {
                            vec![None; uses.len()]
                        };
                        let unlifted = self.build_loop_template(
                            body,
                            &places,
                            &uses,
                            &values,
                            &his_unlifted,
                            &index_vars,
                            TemplateInputs {
                                generic,
                                lifted: &[],
                                starts: &starts,
                            },
                        );
                        let lifted_gates = self.memo_gates(&e.call);
                        match unlifted {
                            Ok(u) if lifted_gates > self.memo_gates(&u.call) * 5 / 4 + 16 => {
                                // Only the kept build's iterations run as calls.
                                self.keep_later_loop_counts(counts_before, counts_lifted);
                                self.compact.loops.no_lift.insert(key_body);
                                let key = self.loop_shape(
                                    &places,
                                    &uses,
                                    &values,
                                    &his_unlifted,
                                    &[],
                                    &trace,
                                    tier,
                                );
                                lifted = Vec::new();
                                let u = Rc::new(u);
                                self.compact
                                    .loops
                                    .memo
                                    .insert((key_body, key), Rc::clone(&u));
                                u
                            }
                            _ => {
                                self.restore_loop_counts(counts_lifted);
                                let e = Rc::new(e);
                                self.compact.loops.memo.insert(memo_key, Rc::clone(&e));
                                e
                            }
                        }
                    }
                    Ok(e) if generic && self.compact.loops.generic_checked.insert(key_body) => {
                        // The first generic template is held against the body's templates
                        // so far: where its wires replace constants the shapes folded (a
                        // counter `c += 3` that changes every iteration), it costs an
                        // adder per call where each shape cost nothing. The body then runs
                        // inline from now on, if an inlined iteration (at most the shapes'
                        // gates) holds no more than a call, which lists its places' bits:
                        // a big body stays a call, or the main body would not fit where
                        // compact compilation is what makes the program fit.
                        let shaped = self.compact.loops.shape_gates.get(&key_body);
                        let shaped = shaped.copied().unwrap_or(0);
                        if self.memo_gates(&e.call) > shaped * 5 / 4 + 16
                            && shaped <= 2 * flat.len() as u64
                        {
                            self.restore_loop_counts(counts_before);
                            self.compact.loops.refused.insert(key_body);
                            return Ok(false);
                        }
                        let e = Rc::new(e);
                        self.compact.loops.memo.insert(memo_key, Rc::clone(&e));
                        e
                    }
                    Ok(e) => {
                        if !generic {
                            let gates = self.memo_gates(&e.call);
                            let most = self.compact.loops.shape_gates.entry(key_body).or_default();
                            *most = (*most).max(gates);
                        }
                        let e = Rc::new(e);
                        self.compact.loops.memo.insert(memo_key, Rc::clone(&e));
                        e
                    }
                    Err(e) => {
                        // Nothing of the discarded build runs as a call.
                        self.restore_loop_counts(counts_before);
                        if lifting {
                            // A lifted constant may have made a loop's condition secret
                            // (a loop over `k = d[i][0]`): without lifting, this iteration
                            // and the next are stored as before.
                            *self.compact.loops.shapes.entry(key_body).or_default() -= 1;
                            self.compact.loops.no_lift.insert(key_body);
                            return self.try_outline(body);
                        }
                        if self.compact.loops.lifting > 0 {
                            // Inside a template with lifted constants, which may be the
                            // cause: that one is built again without them.
                            return Err(e);
                        }
                        // Inline it from now on; that also reports a real error where it is.
                        self.compact.loops.refused.insert(key_body);
                        return Ok(false);
                    }
                }
            }
        };
        let inputs: Vec<Lit> = flat
            .iter()
            .enumerate()
            .filter(|&(k, l)| generic || l.as_const().is_none() || lifted.get(k) == Some(&true))
            .map(|(_, l)| *l)
            .collect();
        let mut results = self.call_memo(&entry.call, &inputs);
        // The results' intervals (see `replayed_ranges`).
        let out_ranges = self.replayed_ranges(entry.prog, &ivs, &entry.out_ranges, false);
        // Inside a template whose bound program is recorded, the call is a step of it.
        let mut result_regs: Vec<u32> = Vec::new();
        if let Some(p) = entry.prog
            && self.ranges.recording().is_some()
        {
            let in_regs: Vec<u32> = uses
                .iter()
                .zip(&ivs)
                .map(|(u, iv)| {
                    if iv.is_none() {
                        return NO_REG;
                    }
                    let at = starts[u.place] + u.off as usize;
                    self.bound_reg(&flat[at..at + u.len as usize])
                })
                .collect();
            result_regs = self.record_call_step(p, &in_regs, &out_ranges);
        }
        let mut noted: FastSet<NotedUse> = HashSet::default();
        for (k, (u, r)) in uses.iter().zip(&out_ranges).enumerate() {
            // A use of the same bits as an earlier one with the same interval (`d[i][j - 1]`
            // read twice) was noted already.
            if let Some((lo, hi)) = *r
                && noted.insert((u.place, u.off, u.len, *r))
            {
                let at = starts[u.place] + u.off as usize;
                let slice = &mut results[at..at + u.len as usize];
                let noted = self.note_range(slice.to_vec(), lo, hi);
                slice.copy_from_slice(&noted);
                if let Some(&r) = result_regs.get(k) {
                    self.bind_reg(&noted, r);
                }
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
        if nest {
            self.compact.loops.nests_outlined.insert(key_body);
            self.compact.loops.nest_iterations += 1;
        }
        Ok(true)
    }

    /// The places of this iteration (sorted, disjoint) and, per use of the body (each name
    /// used as a value, then each array element site), its place and offset in it; `None`
    /// when the iteration cannot be outlined.
    fn places_of(
        &mut self,
        scan: &BodyScan<'a>,
        key_body: usize,
        trace: &mut Vec<i128>,
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
        for (((_, subs), b), _) in scan
            .sites
            .iter()
            .zip(&res.sites)
            .zip(&scan.site_loop)
            .filter(|(_, l)| l.is_none())
        {
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
        if scan.is_nest() {
            let outer: Vec<(&'a str, Option<(i128, bool)>)> = scan
                .index_names
                .iter()
                .zip(&res.index)
                .map(|(n, b)| (*n, b.as_ref().and_then(|b| self.typed_binding_value(b))))
                .collect();
            let mut nest = NestWalk {
                outer: &outer,
                env: Vec::new(),
                trace,
                sites: 0,
                iterations: 0,
            };
            let top = scan.loops.len();
            let mut walked = Some(());
            for &l in &scan.loop_children[top] {
                walked = self.walk_nest_loop(scan, &res, l, &mut nest, &mut raw, &mut is_int);
                if walked.is_none() {
                    break;
                }
            }
            if walked.is_none() {
                if nest.sites > MAX_NEST_SITES || nest.iterations > MAX_NEST_SITES {
                    // Too large to list: do not walk it again at every iteration.
                    self.compact.loops.refused.insert(key_body);
                }
                return None;
            }
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

    /// Runs the header of nested loop `l` at compile time and adds the places its sites
    /// select on every iteration (and those of the loops inside it), in order; notes the
    /// loop's first counter value and iteration count in the walk's trace. `None` when a
    /// header or subscript cannot be decided, a value leaves the range where C's arithmetic
    /// is the exact one, or the walk grows past [`MAX_NEST_SITES`].
    fn walk_nest_loop(
        &self,
        scan: &BodyScan<'a>,
        res: &Resolved,
        l: usize,
        nest: &mut NestWalk<'a, '_>,
        raw: &mut Vec<Place>,
        is_int: &mut Vec<bool>,
    ) -> Option<()> {
        use BinaryOperator as B;
        let lp = &scan.loops[l];
        let t = res.counter_types[l]?;
        // The counter's promoted type decides how the condition compares.
        let counter_unsigned = !t.promoted().signed;
        let (min, max) = if t.signed {
            (-(1i128 << (t.bits - 1)), (1i128 << (t.bits - 1)) - 1)
        } else {
            (0, (1i128 << t.bits) - 1)
        };
        let (first, _) = nest.value(&lp.init.node)?;
        if !(min..=max).contains(&first) {
            return None;
        }
        let mut k = first;
        let mut count: i128 = 0;
        loop {
            nest.env.push((lp.counter, k));
            let Some((b, b_unsigned)) = nest.value(&lp.bound.node) else {
                nest.env.pop();
                return None;
            };
            if (counter_unsigned || b_unsigned) && (k < 0 || b < 0) {
                // Converted to unsigned, a negative value is no longer itself.
                nest.env.pop();
                return None;
            }
            let goes_on = match lp.op {
                B::Less => k < b,
                B::LessOrEqual => k <= b,
                B::Greater => k > b,
                B::GreaterOrEqual => k >= b,
                B::Equals => k == b,
                _ => k != b,
            };
            if !goes_on {
                nest.env.pop();
                break;
            }
            nest.iterations += 1;
            if nest.iterations > MAX_NEST_SITES || nest.iterations > self.opts.unroll_limit {
                nest.env.pop();
                return None;
            }
            let r = (|| {
                for &site in &scan.loop_sites[l] {
                    let (place, int) = self.nest_site(scan, res, site, nest)?;
                    raw.push(place);
                    is_int.push(int);
                }
                for &inner in &scan.loop_children[l] {
                    self.walk_nest_loop(scan, res, inner, nest, raw, is_int)?;
                }
                Some(())
            })();
            nest.env.pop();
            r?;
            k += lp.step;
            count += 1;
            if !(min..=max).contains(&k) {
                // The step would wrap around (or be undefined).
                return None;
            }
        }
        nest.trace.push(first);
        nest.trace.push(count);
        Some(())
    }

    /// The place an array use inside a nested loop selects with the walk's counters.
    fn nest_site(
        &self,
        scan: &BodyScan<'a>,
        res: &Resolved,
        site: usize,
        nest: &mut NestWalk<'a, '_>,
    ) -> Option<(Place, bool)> {
        nest.sites += 1;
        if nest.sites > MAX_NEST_SITES {
            return None;
        }
        let Some(Binding::Var(v)) = res.sites[site] else {
            return None;
        };
        if self.vars[v].ptr.is_some() {
            return None;
        }
        let subs = &scan.sites[site].1;
        let mut off = 0u64;
        for (depth, e) in subs.iter().enumerate() {
            let Ty::Array(elem, n) = element_type(&self.vars[v].ty, depth)? else {
                return None;
            };
            let (k, _) = nest.value(&e.node)?;
            if k < 0 || k >= *n as i128 {
                return None;
            }
            off += k as u64 * elem.bits();
        }
        let ty = element_type(&self.vars[v].ty, subs.len())?;
        if matches!(ty, Ty::Array(..)) {
            return None;
        }
        Some((
            Place {
                var: v,
                off,
                len: ty.bits(),
            },
            matches!(ty, Ty::Int(_)),
        ))
    }

    /// The value of a binding whose bits are all constants, and whether its type is
    /// unsigned after promotion.
    fn typed_binding_value(&self, b: &Binding) -> Option<(i128, bool)> {
        let unsigned = match *b {
            Binding::Var(v) => match &self.vars[v].ty {
                Ty::Int(t) => !t.promoted().signed,
                _ => return None,
            },
            _ => false,
        };
        Some((self.binding_value(b)?, unsigned))
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
        let counter_types =
            scan.loops
                .iter()
                .map(|l| {
                    let specs = crate::decl::declaration_type_specs(&l.decl.node.specifiers);
                    if specs.iter().any(|t| {
                        matches!(t.node, TypeSpecifier::Enum(_) | TypeSpecifier::Struct(_))
                    }) {
                        // Looking those up would declare them.
                        return None;
                    }
                    match self.base_type(&specs, l.decl.span) {
                        Ok(Ty::Int(t)) if !t.is_bool && (8..=64).contains(&t.bits) => Some(t),
                        _ => None,
                    }
                })
                .collect();
        let r = Rc::new(Resolved {
            epoch: self.scope_epoch,
            shadows: scan
                .declared
                .iter()
                .copied()
                .chain(scan.loops.iter().map(|l| l.counter))
                .any(|d| self.peek(d).is_some()),
            index: scan.index_names.iter().map(|n| self.peek(n)).collect(),
            names: scan.names.iter().map(|n| self.peek(n)).collect(),
            sites: scan.sites.iter().map(|(n, _)| self.peek(n)).collect(),
            counter_types,
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
    #[allow(clippy::too_many_arguments)]
    fn loop_shape(
        &self,
        places: &[Place],
        uses: &[Use],
        values: &[&[Lit]],
        his: &[Option<u64>],
        lifted: &[bool],
        trace: &[i128],
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
        let mut key = Vec::with_capacity(
            8 + uses.len() * 8 + places.len() * 8 + bits_total / 4 + trace.len() * 2,
        );
        key.push(tier as u8);
        // How a nest's loops ran (zigzag-coded): with the same runs, its counters take the
        // same values.
        varint(&mut key, trace.len() as u64);
        for &t in trace {
            varint(&mut key, ((t << 1) ^ (t >> 127)) as u64);
        }
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
        let mut at = 0;
        for (p, bits) in places.iter().zip(values) {
            varint(&mut key, self.vars[p.var].bits.len() as u64);
            varint(&mut key, p.len);
            for four in bits.chunks(4) {
                let mut byte = 0u8;
                for (t, l) in four.iter().enumerate() {
                    let code = match l.as_const() {
                        Some(_) if lifted.get(at + t) == Some(&true) => 2,
                        Some(v) if tier != Tier::Generic => v as u8,
                        _ => 2,
                    };
                    byte |= code << (2 * t);
                }
                key.push(byte);
                at += four.len();
            }
        }
        key
    }

    /// The intervals of the integers used (exact; `None` for other uses and where the
    /// analysis is off). A use of the same bits as an earlier one (`d[i][j - 1]` read twice)
    /// has its interval (looking it up again would find the same).
    fn use_intervals(
        &mut self,
        uses: &[Use],
        starts: &[usize],
        flat: &[Lit],
    ) -> Vec<Option<Interval>> {
        let mut ivs: Vec<Option<Interval>> = Vec::with_capacity(uses.len());
        let mut first_use: HashMap<(usize, u64, u64), usize, BuildHasherDefault<ShapeHasher>> =
            HashMap::default();
        for (k, u) in uses.iter().enumerate() {
            let iv = if !u.int || !self.opts.value_ranges {
                None
            } else if let Some(&j) = first_use.get(&(u.place, u.off, u.len)) {
                ivs[j]
            } else {
                first_use.insert((u.place, u.off, u.len), k);
                let at = starts[u.place] + u.off as usize;
                self.range_of(&flat[at..at + u.len as usize])
            };
            ivs.push(iv);
        }
        ivs
    }

    /// Per bit of the places (one after another), whether it is a constant of a use of the
    /// nest `key_body` that held a different constant at an earlier iteration (`d[i][0]`
    /// after `d[i][0] = i`): such a use would make every iteration its own shape, so it is
    /// a wire of the templates from then on, with its bound rounded up like any other.
    /// Constants that stay the same (a table read in the loop) stay folded. Names of the
    /// subscripts and loop headers are never lifted (they decide the places and the
    /// loops). Empty when nothing is lifted.
    fn loop_variant_bits(
        &mut self,
        key_body: usize,
        places: &[Place],
        uses: &[Use],
        starts: &[usize],
        flat: &[Lit],
        index_vars: &[VarId],
    ) -> Vec<bool> {
        if self.compact.loops.no_lift.contains(&key_body) {
            return Vec::new();
        }
        let state = self.compact.loops.variants.entry(key_body).or_default();
        if state.last.len() != uses.len() {
            // Another run of the loops (a triangular nest): uses are not comparable.
            state.last = vec![None; uses.len()];
            state.lifted = vec![false; uses.len()];
        }
        let mut mask = Vec::new();
        for (k, u) in uses.iter().enumerate() {
            let p = places[u.place];
            if !u.int || u.len > 64 || index_vars.contains(&p.var) {
                continue;
            }
            let at = starts[u.place] + u.off as usize;
            let bits = &flat[at..at + u.len as usize];
            let value = bits.iter().enumerate().try_fold(0u64, |acc, (b, l)| {
                l.as_const().map(|v| acc | (v as u64) << b)
            });
            if let (Some(v), Some(last)) = (value, state.last[k])
                && v != last
            {
                state.lifted[k] = true;
            }
            if value.is_some() {
                state.last[k] = value;
            }
            if state.lifted[k] && value.is_some() {
                if mask.is_empty() {
                    mask = vec![false; flat.len()];
                }
                mask[at..at + u.len as usize].fill(true);
            }
        }
        mask
    }

    /// Whether a loop condition `k` ends the template being built: while a template with
    /// lifted constants is built, a condition that is not a constant comes from a lifted
    /// one (the same iteration inline decides it), and would run the loop on secret paths
    /// up to the limit of such loops before failing.
    pub(crate) fn lifted_decides_loop(&self, k: Lit) -> bool {
        self.compact.loops.lifting > 0 && k.as_const().is_none()
    }

    /// The loop counts of the statistics, kept across a template build that fails.
    fn loop_counts(&self) -> LoopCounts {
        let l = &self.compact.loops;
        (
            l.iterations,
            l.nest_iterations,
            self.compact.calls_reused,
            l.outlined.clone(),
            l.nests_outlined.clone(),
        )
    }

    /// The counts as if only the build after `middle` (since `start`) had run.
    fn keep_later_loop_counts(&mut self, start: LoopCounts, middle: LoopCounts) {
        let l = &mut self.compact.loops;
        l.iterations = start.0 + (l.iterations - middle.0);
        l.nest_iterations = start.1 + (l.nest_iterations - middle.1);
        self.compact.calls_reused = start.2 + (self.compact.calls_reused - middle.2);
    }

    fn restore_loop_counts(&mut self, counts: LoopCounts) {
        let l = &mut self.compact.loops;
        (
            l.iterations,
            l.nest_iterations,
            self.compact.calls_reused,
            l.outlined,
            l.nests_outlined,
        ) = counts;
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
        inputs: TemplateInputs,
    ) -> R<LoopEntry> {
        let TemplateInputs {
            generic,
            lifted,
            starts,
        } = inputs;
        let is_input =
            |k: usize, l: &Lit| is_template_input(l, generic) || lifted.get(k) == Some(&true);
        let num_inputs = values
            .iter()
            .flat_map(|v| v.iter())
            .enumerate()
            .filter(|&(k, l)| is_input(k, l))
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
        let record =
            self.opts.value_ranges && self.opts.bound_replay && his.iter().any(Option::is_some);
        if record {
            self.ranges.start_recording();
        }
        let saved_paths = self.take_path_state();
        // Swap the places' bits for the template's inputs, inside the variables.
        let mut fresh = self.g.input(num_inputs).into_iter();
        let mut saved_bits: Vec<Vec<Lit>> = Vec::with_capacity(places.len());
        let mut saved_active = Vec::new();
        for ((p, bits), &start) in places.iter().zip(values).zip(starts) {
            let var = &mut self.vars[p.var];
            if let Some(a) = var.active.take() {
                saved_active.push((p.var, a));
            }
            let range = p.off as usize..(p.off + p.len) as usize;
            saved_bits.push(var.bits.slice(range.clone()).into_owned());
            let swapped = if lifted.is_empty() {
                as_template_inputs(bits, generic, &mut fresh)
            } else {
                bits.iter()
                    .enumerate()
                    .map(|(k, l)| {
                        if is_input(start + k, l) {
                            fresh.next().expect("one input per input bit")
                        } else {
                            *l
                        }
                    })
                    .collect()
            };
            var.bits.write(range.start, &swapped);
        }
        // The bounds the shape fixes, as facts about the template's inputs (the inputs of
        // the bound program).
        for (k, (u, hi)) in uses.iter().zip(his).enumerate() {
            if let Some(hi) = *hi {
                let p = places[u.place];
                let at = (p.off + u.off) as usize..(p.off + u.off + u.len) as usize;
                let bits = self.vars[p.var].bits.slice(at.clone()).into_owned();
                let noted = self.note_range(bits, 0, hi);
                if record && let Some(iv) = self.range_of(&noted) {
                    self.record_op(&noted, Op::Input(k as u32), iv);
                }
                self.vars[p.var].bits.write(at.start, &noted);
            }
        }
        self.compact.building += 1;
        let r = self.exec_stmt(body);
        self.compact.building -= 1;
        let mut results: Vec<Lit> = Vec::new();
        let mut out_ranges = Vec::with_capacity(uses.len());
        let mut out_regs = Vec::with_capacity(uses.len());
        if r.is_ok() {
            for p in places {
                results.extend_from_slice(
                    &self.var_slice(p.var, p.off as usize..(p.off + p.len) as usize),
                );
            }
            for u in uses {
                let p = places[u.place];
                let at = (p.off + u.off) as usize..(p.off + u.off + u.len) as usize;
                let (r, reg) = if u.int && self.opts.value_ranges {
                    let bits = self.var_slice(p.var, at).into_owned();
                    (self.range_of(&bits), self.bound_reg(&bits))
                } else {
                    (None, NO_REG)
                };
                out_ranges.push(r);
                out_regs.push(reg);
            }
        }
        let recording = self.ranges.take_recording();
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
        let prog = recording.map(|rec| {
            let programs = &mut self.compact.loops.programs;
            programs.push(rec.rec.finish(out_regs));
            programs.len() as u32 - 1
        });
        Ok(LoopEntry {
            call,
            out_ranges,
            prog,
        })
    }
}
