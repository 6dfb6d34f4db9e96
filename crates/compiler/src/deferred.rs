//! Depth that follows the program (`--optimize depth`): associative chains that the program
//! writes serially are evaluated as balanced trees.
//!
//! A loop such as `for (…) s += a[i] * b[i];` unrolls into a left-leaning chain whose AND depth
//! grows linearly with its length, whatever adders it uses. Under [`OptimizeFor::Depth`] the
//! compiler therefore remembers, next to each value that `+`, `-`, `*`, `&`, `|`, min or max
//! makes, what the value is made of (a *deferred* value): the addends of a sum (words, and
//! products as their partial-product columns), the factors of a product, the operands of
//! `&`, `|`, min and max. A value built from a deferred value of the same operator extends it.
//! When the value is first used by anything else (a comparison, a shift, an index, a cast to
//! another width, an output, a merge of secret control flow, …) it is *materialized* once:
//! all addends and partial products in one Dadda tree with a single parallel-prefix adder
//! (carry-save accumulation: the n×ℓ-bit carry-save network adder of Demmler et al., CCS 2015,
//! §4.2, here fed with whole dot products), a balanced tree of multipliers, an AND/OR tree per
//! bit, or a tournament of comparators. So the AND depth grows with the logarithm of the
//! chain's length. A materialized value that the program extends again is continued from
//! its bits (prefix sums stay linear in size).
//!
//! Writes under a secret condition keep a chain going: `if (c) s += x;` becomes
//! `s + c·x` (each new operand made neutral where the condition fails: `c·x` for sums, the
//! operator's identity for the others) instead of a multiplexer over the deep chain; only a
//! single such step on an already materialized value is built as `c ? s + x : s`, which waits
//! for the condition only at the end. `if (e < m) m = e;` and `m = e < m ? e : m` (and their other spellings) are min/max
//! updates.
//!
//! Safety: each deferred value is also computed the way the program writes it (the
//! *placeholder*: exactly the gates the chain would make without this module), and deferred
//! values are known by their placeholder bits, so they follow copies, parameters and return
//! values, and any reader that does not know about deferral still gets the right bits, only
//! deeper. Placeholders nobody reads are removed by dead-gate elimination. Deferral is off in
//! size mode (circuits stay as they were) and in compact compilation (whose templates are
//! built in builders of their own).

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};

use lang_c::ast::{
    BinaryOperator, BinaryOperatorExpression, ConditionalExpression, Expression, IfStatement,
    MemberOperator, Statement, UnaryOperator,
};
use lang_c::span::{Node, Span};
use lang_c::visit::{self, Visit};
use pgc_circuit::{Gates, Lit, OptimizeFor, blocks};

use crate::lower::{Binding, Lowerer, Place, R, Val, VarId};
use crate::parallel::{RedOp, minmax_statement, side_effect_free};
use crate::types::{IntTy, Ty};

/// Most weight (bits of addends and partial products, or of operands) one deferred value
/// gathers; past it the value is materialized and continued from (bounds the compiler's
/// memory, not the depth, which grows by one tree per this many bits).
const MAX_WEIGHT: usize = 1 << 22;

/// The associative operators whose chains are rebalanced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// `+`, `-`, `++`, `--` modulo 2^n.
    Sum,
    /// `*` modulo 2^n.
    Product,
    And,
    Or,
    Min {
        signed: bool,
    },
    Max {
        signed: bool,
    },
}

impl Op {
    /// The operand that changes nothing, `width` bits.
    fn identity(self, width: usize) -> Vec<Lit> {
        let bit = |f: &dyn Fn(usize) -> bool| (0..width).map(|i| Lit::constant(f(i))).collect();
        let top = width.saturating_sub(1);
        match self {
            Op::Sum | Op::Or => bit(&|_| false),
            Op::Product => bit(&|i| i == 0),
            Op::And => bit(&|_| true),
            Op::Min { signed } => bit(&|i| !(signed && i == top)),
            Op::Max { signed } => bit(&|i| signed && i == top),
        }
    }
}

/// One operand of a deferred value.
#[derive(Clone, Debug)]
enum Term {
    /// A word (negated in two's complement if `negate`: sums only).
    Row { bits: Vec<Lit>, negate: bool },
    /// The product of `factors` (sums only), added as partial-product columns.
    Product {
        factors: Vec<Vec<Lit>>,
        negate: bool,
    },
}

impl Term {
    fn row(bits: Vec<Lit>) -> Term {
        Term::Row {
            bits,
            negate: false,
        }
    }

    /// Bits of columns (or operand) it contributes, for the weight bound.
    fn weight(&self) -> usize {
        match self {
            Term::Row { bits, .. } => bits.len(),
            Term::Product { factors, .. } => {
                let w = factors.first().map_or(0, Vec::len);
                w * (w + 1) / 2
            }
        }
    }

    fn negated(self) -> Term {
        match self {
            Term::Row { bits, negate } => Term::Row {
                bits,
                negate: !negate,
            },
            Term::Product { factors, negate } => Term::Product {
                factors,
                negate: !negate,
            },
        }
    }
}

/// A deferred value: its `parent`'s operands (those of the value it extends, or the parent
/// itself as one operand if that is not deferred with the same operator) and `delta`'s.
struct Entry {
    op: Op,
    parent: Option<Vec<Lit>>,
    delta: Vec<Term>,
    weight: usize,
    /// The balanced evaluation, once something used it.
    materialized: Option<Vec<Lit>>,
    /// Two plain operands: the placeholder is already the balanced evaluation.
    simple: bool,
    /// For a write under a secret condition (`parent` is the old value): the value written
    /// and the condition.
    guarded: Option<(Vec<Lit>, Lit)>,
}

/// The deferred values of a compilation, by placeholder bits, and where variables hold them.
#[derive(Default)]
pub struct Deferred {
    entries: HashMap<Vec<Lit>, Entry>,
    /// Per variable: (bit offset, width) of stored deferred values, and the widest width (to
    /// find those overlapping a range), so readers that take a variable's bits wholesale
    /// (outputs, secret indices, aggregates, parallel regions) can materialize them first.
    locations: HashMap<VarId, (BTreeSet<(usize, usize)>, usize)>,
    /// While a loop runs as a parallel region: its reductions, and its reductions with the
    /// variables it reads (see [`Lowerer::settle_for_instance`]).
    region_reductions: Vec<VarId>,
    region_keep: Vec<VarId>,
}

/// Whitespace-free source text of an expression (to compare two expressions).
fn squeeze(text: &str, span: &Span) -> String {
    text.get(span.start..span.end)
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

impl<'a> Lowerer<'a> {
    /// Whether chains are rebalanced in this compilation.
    pub(crate) fn deferring(&self) -> bool {
        self.opts.optimize == OptimizeFor::Depth && !self.opts.compact
    }

    /// `bits` ready for any use: materialized if it is a deferred value.
    pub(crate) fn settle_bits(&mut self, bits: Vec<Lit>) -> Vec<Lit> {
        if self.deferring() && self.deferred.entries.contains_key(&bits) {
            self.materialize(&bits)
        } else {
            bits
        }
    }

    /// A value ready for any use (see [`Self::settle_bits`]).
    pub(crate) fn settle(&mut self, v: Val) -> Val {
        match v {
            Val::Int(t, bits) => Val::Int(t, self.settle_bits(bits)),
            Val::Agg(t, bits) => Val::Agg(t, self.settle_bits(bits)),
            v => v,
        }
    }

    /// The balanced evaluation of deferred value `key` (built once).
    fn materialize(&mut self, key: &[Lit]) -> Vec<Lit> {
        let Some(e) = self.deferred.entries.get_mut(key) else {
            return key.to_vec();
        };
        if let Some(m) = &e.materialized {
            return m.clone();
        }
        if e.simple {
            e.materialized = Some(key.to_vec());
            return key.to_vec();
        }
        // Until built, the placeholder stands for it (no chain leads back here, but should
        // one, it finds correct bits).
        e.materialized = Some(key.to_vec());
        let op = e.op;
        let (parent, guarded) = (e.parent.clone(), e.guarded.clone());
        let base_pending = parent.as_ref().is_some_and(|p| {
            self.deferred
                .entries
                .get(p)
                .is_some_and(|b| b.op == op && b.materialized.is_none() && !b.simple)
        });
        let value = match (guarded, parent) {
            // One guarded step on a settled value: `c ? new : old` waits for the condition
            // only at the end, where `old + c·x` makes the operand wait for it (deeper when
            // the condition is deep); several pending steps are better in one tree.
            (Some((written, guard)), Some(old)) if !base_pending => {
                let new = self.materialize(&written);
                let old = self.settle_bits(old);
                blocks::mux_word(&mut self.g, guard, &new, &old)
            }
            _ => {
                let terms = self.chain_terms(op, key, true);
                self.build(op, key.len(), terms)
            }
        };
        if let Some(e) = self.deferred.entries.get_mut(key) {
            e.materialized = Some(value.clone());
        }
        value
    }

    /// The operands of chain `key` of `op`, newest first (older, deeper ones last, so trees
    /// take them in late). `own`: `key` is being materialized (its own cached value is not
    /// yet built).
    fn chain_terms(&mut self, op: Op, key: &[Lit], own: bool) -> Vec<Term> {
        let mut terms = Vec::new();
        let mut at = key.to_vec();
        let mut first = own;
        let mut other_op = None;
        let mut steps = 0usize;
        loop {
            steps += 1;
            let Some(e) = self.deferred.entries.get(&at) else {
                terms.push(Term::row(at));
                break;
            };
            if !first {
                if let Some(m) = &e.materialized {
                    terms.push(Term::row(m.clone()));
                    break;
                }
                if e.op != op {
                    other_op = Some(at);
                    break;
                }
            }
            if steps > self.deferred.entries.len() + 1 {
                // Unreachable by construction; the placeholder is the right value anyway.
                terms.push(Term::row(at));
                break;
            }
            terms.extend(e.delta.iter().cloned());
            match &e.parent {
                Some(p) => at = p.clone(),
                None => break,
            }
            first = false;
        }
        if let Some(k) = other_op {
            let v = self.materialize(&k);
            terms.push(Term::row(v));
        }
        terms
    }

    /// What `bits` contributes to a chain of `op`.
    fn operand_terms(&mut self, op: Op, bits: &[Lit]) -> Vec<Term> {
        let Some(e) = self.deferred.entries.get(bits) else {
            return vec![Term::row(bits.to_vec())];
        };
        if let Some(m) = &e.materialized {
            return vec![Term::row(m.clone())];
        }
        match e.op {
            o if o == op => self.chain_terms(op, bits, false),
            Op::Product if op == Op::Sum => {
                // Oldest first, as the placeholder multiplied them (so that they share gates).
                let factors = self
                    .chain_terms(Op::Product, bits, false)
                    .into_iter()
                    .rev()
                    .map(|t| match t {
                        Term::Row { bits, .. } => bits,
                        Term::Product { .. } => unreachable!("products hold words"),
                    })
                    .collect();
                vec![Term::Product {
                    factors,
                    negate: false,
                }]
            }
            _ => {
                let v = self.materialize(bits);
                vec![Term::row(v)]
            }
        }
    }

    /// The weight a chain extending `bits` starts from (materializing it first if it is
    /// too heavy to grow).
    fn parent_weight(&mut self, op: Op, bits: &[Lit]) -> usize {
        let w = match self.deferred.entries.get(bits) {
            Some(e) if e.op == op && e.materialized.is_none() => e.weight,
            _ => return bits.len(),
        };
        if w > MAX_WEIGHT {
            self.materialize(bits);
            return bits.len();
        }
        w
    }

    /// `a op b` as the program writes it (`a - b` for a sum with `negate_b`).
    fn serial(&mut self, op: Op, a: &[Lit], b: &[Lit], negate_b: bool) -> Vec<Lit> {
        let g = &mut self.g;
        match op {
            Op::Sum if negate_b => blocks::sub(g, a, b),
            Op::Sum => blocks::add(g, a, b),
            Op::Product => blocks::mul(g, a, b),
            Op::And => blocks::and_word(g, a, b),
            Op::Or => blocks::or_word(g, a, b),
            Op::Min { signed } | Op::Max { signed } => {
                // b wins where it is smaller (min) or larger (max).
                let (x, y) = if matches!(op, Op::Min { .. }) {
                    (b, a)
                } else {
                    (a, b)
                };
                let b_wins = if signed {
                    blocks::lt_signed(g, x, y)
                } else {
                    blocks::lt_unsigned(g, x, y)
                };
                blocks::mux_word(g, b_wins, b, a)
            }
        }
    }

    /// `a op b` (or `a - b`) as a deferred value: the placeholder, with its operands recorded.
    pub(crate) fn defer_binary(
        &mut self,
        op: Op,
        a: &[Lit],
        b: &[Lit],
        negate_b: bool,
    ) -> Vec<Lit> {
        let placeholder = self.serial(op, a, b, negate_b);
        if placeholder == a
            || placeholder == b
            || placeholder.iter().all(|l| l.as_const().is_some())
            || self.deferred.entries.contains_key(&placeholder)
        {
            return placeholder;
        }
        let op_of = |s: &Self, x: &[Lit]| s.deferred.entries.get(x).map(|e| e.op);
        let (ka, kb) = (op_of(self, a), op_of(self, b));
        // An operand that contributes exactly its own bits.
        let plain = |s: &Self, x: &[Lit]| match s.deferred.entries.get(x) {
            None => true,
            Some(e) => e.op != op && e.simple && !(op == Op::Sum && e.op == Op::Product),
        };
        let simple = plain(self, a) && plain(self, b);
        // The parent is preferably a chain of this operator (the accumulator), so that a
        // write under a secret condition can tell what was added.
        let parent_is_a = if ka == Some(op) {
            Some(true)
        } else if !negate_b && kb == Some(op) {
            Some(false)
        } else if ka.is_none() {
            Some(true)
        } else if !negate_b && kb.is_none() {
            Some(false)
        } else {
            None
        };
        let signed_terms = |s: &mut Self, x: &[Lit], neg: bool| {
            let t = s.operand_terms(op, x);
            if neg {
                t.into_iter().map(Term::negated).collect()
            } else {
                t
            }
        };
        let (parent, delta) = match parent_is_a {
            Some(true) => (Some(a.to_vec()), signed_terms(self, b, negate_b)),
            Some(false) => (Some(b.to_vec()), signed_terms(self, a, false)),
            None => {
                let mut d = signed_terms(self, a, false);
                d.extend(signed_terms(self, b, negate_b));
                (None, d)
            }
        };
        self.register(op, placeholder.clone(), parent, delta, simple, None);
        placeholder
    }

    fn register(
        &mut self,
        op: Op,
        key: Vec<Lit>,
        parent: Option<Vec<Lit>>,
        delta: Vec<Term>,
        simple: bool,
        guarded: Option<(Vec<Lit>, Lit)>,
    ) {
        let base = match &parent {
            Some(p) => self.parent_weight(op, p),
            None => 0,
        };
        let weight = base + delta.iter().map(Term::weight).sum::<usize>();
        self.deferred.entries.entry(key).or_insert(Entry {
            op,
            parent,
            delta,
            weight,
            materialized: None,
            simple,
            guarded,
        });
    }

    /// `a op b` for the C operators that chain (`+ - * & |`); `None` for the others, and
    /// for `&`/`|` with a constant mask (nothing to rebalance).
    pub(crate) fn defer_arith(
        &mut self,
        op: &BinaryOperator,
        a: &[Lit],
        b: &[Lit],
    ) -> Option<Vec<Lit>> {
        use BinaryOperator as B;
        let constant = |x: &[Lit]| x.iter().all(|l| l.as_const().is_some());
        let (op, negate) = match op {
            B::Plus => (Op::Sum, false),
            B::Minus => (Op::Sum, true),
            B::Multiply => (Op::Product, false),
            B::BitwiseAnd if !constant(a) && !constant(b) => (Op::And, false),
            B::BitwiseOr if !constant(a) && !constant(b) => (Op::Or, false),
            _ => return None,
        };
        Some(self.defer_binary(op, a, b, negate))
    }

    /// The balanced evaluation of `terms` under `op`, `width` bits.
    fn build(&mut self, op: Op, width: usize, terms: Vec<Term>) -> Vec<Lit> {
        let identity = op.identity(width);
        if op == Op::Sum {
            return self.build_sum(width, terms);
        }
        let mut rows: Vec<Vec<Lit>> = terms
            .into_iter()
            .map(|t| match t {
                Term::Row { bits, .. } => bits,
                Term::Product { .. } => unreachable!("products are terms of sums only"),
            })
            .filter(|r| *r != identity)
            .collect();
        match op {
            Op::Product => {
                // Constant factors multiply at compile time, and the product by them last.
                let mask = if width >= 128 {
                    u128::MAX
                } else {
                    (1u128 << width) - 1
                };
                let mut constant = 1u128;
                rows.retain(|r| match blocks::word_constant(r) {
                    Some(k) if width <= 128 => {
                        constant = constant.wrapping_mul(k) & mask;
                        false
                    }
                    _ => true,
                });
                if constant == 0 {
                    return vec![Lit::FALSE; width];
                }
                let k = blocks::constant_word(constant, width);
                if rows.is_empty() {
                    return k;
                }
                rows.reverse(); // oldest first, as the placeholder multiplied them
                let p = self.product_tree(rows);
                if constant == 1 {
                    p
                } else {
                    blocks::mul(&mut self.g, &p, &k)
                }
            }
            Op::And | Op::Or => {
                if rows.is_empty() {
                    return identity;
                }
                let or = op == Op::Or;
                (0..width)
                    .map(|i| {
                        let column: Vec<Lit> =
                            rows.iter().map(|r| if or { !r[i] } else { r[i] }).collect();
                        let all = blocks::and_reduce(&mut self.g, &column);
                        if or { !all } else { all }
                    })
                    .collect()
            }
            Op::Min { .. } | Op::Max { .. } => {
                let mut level = rows;
                if level.is_empty() {
                    return identity;
                }
                while level.len() > 1 {
                    let mut next = Vec::with_capacity(level.len().div_ceil(2));
                    let mut it = level.into_iter();
                    while let Some(x) = it.next() {
                        match it.next() {
                            Some(y) => next.push(self.serial(op, &x, &y, false)),
                            None => next.push(x),
                        }
                    }
                    level = next;
                }
                level.pop().expect("one left")
            }
            Op::Sum => unreachable!("handled above"),
        }
    }

    /// A balanced tree of multiplications.
    fn product_tree(&mut self, mut level: Vec<Vec<Lit>>) -> Vec<Lit> {
        while level.len() > 1 {
            let mut next = Vec::with_capacity(level.len().div_ceil(2));
            let mut it = level.into_iter();
            while let Some(x) = it.next() {
                match it.next() {
                    Some(y) => next.push(blocks::mul(&mut self.g, &x, &y)),
                    None => next.push(x),
                }
            }
            level = next;
        }
        level.pop().expect("one factor at least")
    }

    /// All addends and partial products in one carry-save tree and one final adder.
    fn build_sum(&mut self, width: usize, terms: Vec<Term>) -> Vec<Lit> {
        let mut cols: Vec<Vec<Lit>> = vec![Vec::new(); width];
        // Negated terms are added complemented; `correction` (mod 2^width) makes up for it:
        // -x = !x + 1 for a word, and each complemented product bit p of weight 2^c counts
        // (1 - p) 2^c, so 2^c is subtracted per bit.
        let mut correction = 0u128;
        let weight = |c: usize| if c < 128 { 1u128 << c } else { 0 };
        let mut products = Vec::new();
        let mut rows = 0;
        for t in terms {
            match t {
                Term::Row { bits, negate } => {
                    for (c, &x) in bits.iter().enumerate() {
                        cols[c].push(if negate { !x } else { x });
                    }
                    if negate {
                        correction = correction.wrapping_add(1);
                    }
                    rows += 1;
                }
                Term::Product { factors, negate } => {
                    let columns = if factors.len() == 1 {
                        factors[0].iter().map(|&x| vec![x]).collect()
                    } else {
                        let half = factors.len() / 2;
                        let (lo, hi) = factors.split_at(half);
                        let x = self.product_tree(lo.to_vec());
                        let y = self.product_tree(hi.to_vec());
                        blocks::product_columns(&mut self.g, &x, &y, width)
                    };
                    products.push((columns, negate));
                }
            }
        }
        // Each product's columns first go through the first stages of its own Dadda tree,
        // the very gates its placeholder (the product alone) made: stopping at the height
        // that makes the fewest stages in all, this costs no depth to speak of and
        // compresses every product only once.
        let tallest = products
            .iter()
            .flat_map(|(c, _): &(Vec<Vec<Lit>>, bool)| c[..c.len().saturating_sub(1)].iter())
            .map(Vec::len)
            .max()
            .unwrap_or(0);
        let heights = blocks::dadda_heights(tallest);
        let stages_to = |d: usize| heights.iter().filter(|&&h| h >= d).count();
        let joint = |d: usize| blocks::dadda_heights(products.len() * d + rows).len();
        let height = heights
            .iter()
            .copied()
            .chain([tallest])
            .min_by_key(|&d| (stages_to(d) + joint(d), d))
            .unwrap_or(tallest);
        for (columns, negate) in std::mem::take(&mut products) {
            let compressed = blocks::compress_columns(&mut self.g, columns, height);
            for (c, col) in compressed.into_iter().enumerate() {
                for x in col {
                    if negate {
                        cols[c].push(!x);
                        correction = correction.wrapping_sub(weight(c));
                    } else {
                        cols[c].push(x);
                    }
                }
            }
        }
        for (c, col) in cols.iter_mut().enumerate() {
            if c < 128 && (correction >> c) & 1 == 1 {
                col.push(Lit::TRUE);
            }
        }
        blocks::sum_columns(&mut self.g, cols)
    }

    /// A write of `value` over bits `off..` of `var` under a secret `guard`: the merged bits,
    /// where deferral has a say. When `value` extends what the writer read, the result
    /// extends the merged bits by the same operands made neutral off `guard`
    /// (`old + guard·x`); otherwise the usual multiplexer, over materialized values.
    pub(crate) fn deferred_write(
        &mut self,
        var: VarId,
        off: usize,
        value: &[Lit],
        guard: Lit,
    ) -> Option<Vec<Lit>> {
        if !self.deferring() {
            return None;
        }
        let end = off + value.len();
        let seen = self.var_slice(var, off..end).into_owned();
        let old = self.vars[var].bits.slice(off..end).into_owned();
        if let Some(merged) = self.defer_guarded(value, &seen, &old, guard) {
            return Some(merged);
        }
        self.settle_locations(var, off, value.len(), false);
        let old = self.vars[var].bits.slice(off..end).into_owned();
        let value = self.settle_bits(value.to_vec());
        Some(blocks::mux_word(&mut self.g, guard, &value, &old))
    }

    fn defer_guarded(
        &mut self,
        value: &[Lit],
        seen: &[Lit],
        old: &[Lit],
        guard: Lit,
    ) -> Option<Vec<Lit>> {
        let e = self.deferred.entries.get(value)?;
        if e.materialized.is_some() || e.parent.as_deref() != Some(seen) {
            return None;
        }
        let (op, delta) = (e.op, e.delta.clone());
        let masked = if op == Op::Sum {
            let mask = |g: &mut pgc_circuit::netlist::NetBuilder, w: &[Lit]| -> Vec<Lit> {
                w.iter().map(|&x| g.and(x, guard)).collect()
            };
            delta
                .into_iter()
                .map(|t| match t {
                    Term::Row { bits, negate } => Term::Row {
                        bits: mask(&mut self.g, &bits),
                        negate,
                    },
                    Term::Product {
                        mut factors,
                        negate,
                    } => {
                        // guard·(x·y) = (guard·x)·y
                        factors[0] = mask(&mut self.g, &factors[0]);
                        Term::Product { factors, negate }
                    }
                })
                .collect()
        } else {
            let combined = self.build(op, value.len(), delta);
            let identity = op.identity(value.len());
            vec![Term::row(blocks::mux_word(
                &mut self.g,
                guard,
                &combined,
                &identity,
            ))]
        };
        let placeholder = blocks::mux_word(&mut self.g, guard, value, old);
        if placeholder != old && !self.deferred.entries.contains_key(&placeholder) {
            self.register(
                op,
                placeholder.clone(),
                Some(old.to_vec()),
                masked,
                false,
                Some((value.to_vec(), guard)),
            );
        }
        Some(placeholder)
    }

    // ---- where variables hold deferred values ---------------------------------------------

    /// Notes that bits `off..off + len` of `var` may now hold a deferred value.
    pub(crate) fn note_stored(&mut self, var: VarId, off: usize, len: usize) {
        if !self.deferring() {
            return;
        }
        let v = &self.vars[var];
        let holds =
            |bits: Option<&[Lit]>| bits.is_some_and(|s| self.deferred.entries.contains_key(s));
        if holds(v.bits.get(off..off + len).as_deref())
            || v.active
                .as_ref()
                .is_some_and(|(_, a)| holds(a.get(off..off + len)))
        {
            let (set, widest) = self.deferred.locations.entry(var).or_default();
            set.insert((off, len));
            *widest = (*widest).max(len);
        }
    }

    /// Materializes the deferred values stored in `var` that overlap `off..off + len` (but
    /// not one exactly there if `keep_exact`: a read of it may extend it).
    pub(crate) fn settle_locations(
        &mut self,
        var: VarId,
        off: usize,
        len: usize,
        keep_exact: bool,
    ) {
        let Some((set, widest)) = self.deferred.locations.get(&var) else {
            return;
        };
        let end = off.saturating_add(len);
        let hits: Vec<(usize, usize)> = set
            .range((off.saturating_sub(*widest), 0)..(end, 0))
            .filter(|&&(o, l)| o + l > off && !(keep_exact && o == off && l == len))
            .copied()
            .collect();
        for (o, l) in hits {
            self.settle_in_var(var, o, l);
        }
    }

    /// Before a loop that may become a parallel region: notes its reductions and the
    /// variables its body, condition and step read.
    pub(crate) fn plan_region_deferral(
        &mut self,
        body: &'a Node<Statement>,
        cond: Option<&'a Node<Expression>>,
        step: Option<&'a Node<Expression>>,
        reductions: &[VarId],
    ) {
        let mut reads = NamesRead::default();
        reads.visit_statement(&body.node, &body.span);
        for e in cond.into_iter().chain(step) {
            reads.visit_expression(&e.node, &e.span);
        }
        let mut keep = reductions.to_vec();
        for name in reads.0 {
            let bound = self
                .frames
                .last()
                .and_then(|f| f.iter().rev().find_map(|scope| scope.get(&name)))
                .or_else(|| self.globals.get(&name));
            if let Some(Binding::Var(v)) = bound {
                keep.push(*v);
                if let Some(p) = &self.vars[*v].ptr {
                    keep.push(p.var);
                }
            }
        }
        self.deferred.region_reductions = reductions.to_vec();
        self.deferred.region_keep = keep;
    }

    /// At the start (`first`) and end of each instance of a parallel region: materializes
    /// the stored deferred values, so that each instance makes its own values' gates and
    /// none reads another's. The first time all but the reductions' (a value from before
    /// the loop may be read by every instance); after that all but the reductions' and
    /// those of variables the loop reads: a value the next iteration extends makes the
    /// loop sequential anyway, and materializing it each time would cut its chain.
    pub(crate) fn settle_for_instance(&mut self, first: bool) {
        let keep = if first {
            self.deferred.region_reductions.clone()
        } else {
            self.deferred.region_keep.clone()
        };
        self.settle_all_locations(&keep);
    }

    /// Materializes every stored deferred value except those in `keep`.
    pub(crate) fn settle_all_locations(&mut self, keep: &[VarId]) {
        let vars: Vec<VarId> = self
            .deferred
            .locations
            .keys()
            .copied()
            .filter(|v| !keep.contains(v))
            .collect();
        for var in vars {
            self.settle_locations(var, 0, usize::MAX, false);
        }
    }

    fn settle_in_var(&mut self, var: VarId, off: usize, len: usize) {
        let end = off + len;
        if let Some(s) = self.vars[var].bits.get(off..end).map(Cow::into_owned)
            && self.deferred.entries.contains_key(&s)
        {
            let t = self.materialize(&s);
            self.vars[var].bits.write(off, &t);
        }
        let active = self.vars[var]
            .active
            .as_ref()
            .and_then(|(_, a)| a.get(off..end).map(<[Lit]>::to_vec));
        if let Some(s) = active
            && self.deferred.entries.contains_key(&s)
        {
            let t = self.materialize(&s);
            if let Some((_, a)) = &mut self.vars[var].active {
                a[off..end].copy_from_slice(&t);
            }
        }
        if let Some((set, _)) = self.deferred.locations.get_mut(&var) {
            set.remove(&(off, len));
            if set.is_empty() {
                self.deferred.locations.remove(&var);
            }
        }
    }

    // ---- min and max ----------------------------------------------------------------------

    /// `if (e < v) v = e;` (and the other spellings) as `v = min(v, e)`, deferred. False
    /// where the statement is not such an update of a scalar of `e`'s type (it then runs as
    /// written).
    pub(crate) fn exec_minmax_if(&mut self, i: &'a IfStatement, span: Span) -> R<bool> {
        let Some((name, op, value)) = minmax_statement(self.text, i) else {
            return Ok(false);
        };
        let Ok(Binding::Var(var)) = self.lookup(&name, span) else {
            return Ok(false);
        };
        let Ty::Int(t) = self.vars[var].ty.clone() else {
            return Ok(false);
        };
        if t.is_bool {
            return Ok(false);
        }
        // Side-effect free: evaluating it here and again as written changes nothing.
        let Val::Int(xt, x) = self.eval_deferred(value)? else {
            return Ok(false);
        };
        if xt.bits != t.bits || xt.signed != t.signed || xt.is_bool {
            return Ok(false);
        }
        let op = if op == RedOp::Min {
            Op::Min { signed: t.signed }
        } else {
            Op::Max { signed: t.signed }
        };
        let old = self.var_bits(var).to_vec();
        let new = self.defer_binary(op, &old, &x, false);
        let place = Place::whole(var, Ty::Int(t));
        self.write_place(&place, &new);
        Ok(true)
    }

    /// `a < b ? a : b` and the other spellings of min and max of two side-effect-free
    /// operands, deferred; `None` for other conditionals.
    pub(crate) fn eval_minmax_conditional(
        &mut self,
        c: &'a Node<ConditionalExpression>,
    ) -> R<Option<Val>> {
        use BinaryOperator as B;
        let Expression::BinaryOperator(cmp) = &c.node.condition.node else {
            return Ok(None);
        };
        let (less, greater) = match cmp.node.operator.node {
            B::Less | B::LessOrEqual => (&cmp.node.lhs, &cmp.node.rhs),
            B::Greater | B::GreaterOrEqual => (&cmp.node.rhs, &cmp.node.lhs),
            _ => return Ok(None),
        };
        let text = |e: &Node<Expression>| squeeze(self.text, &e.span);
        let (then, other) = (text(&c.node.then_expression), text(&c.node.else_expression));
        let (l, g) = (text(less), text(greater));
        let max = if then == l && other == g {
            false
        } else if then == g && other == l {
            true
        } else {
            return Ok(None);
        };
        if !side_effect_free(less) || !side_effect_free(greater) {
            return Ok(None);
        }
        let (Val::Int(lt, lb), Val::Int(gt, gb)) =
            (self.eval_deferred(less)?, self.eval_deferred(greater)?)
        else {
            return Ok(None);
        };
        let ty = IntTy::common(lt, gt);
        let lb = self.convert_bits(lt, &lb, ty);
        let gb = self.convert_bits(gt, &gb, ty);
        let op = if max {
            Op::Max { signed: ty.signed }
        } else {
            Op::Min { signed: ty.signed }
        };
        Ok(Some(Val::Int(ty, self.defer_binary(op, &lb, &gb, false))))
    }
}

/// The identifiers a loop reads: all but the variable a plain `=` assigns to (`a[i] = …`
/// reads `i`, not `a`). Field names count too (harmless: it only keeps more deferred).
#[derive(Default)]
struct NamesRead(HashSet<String>);

impl NamesRead {
    /// The target of `=`: its root variable is written, its indices and pointers are read.
    fn visit_target(&mut self, e: &Node<Expression>) {
        match &e.node {
            Expression::Identifier(_) => {}
            Expression::BinaryOperator(b) if b.node.operator.node == BinaryOperator::Index => {
                self.visit_target(&b.node.lhs);
                self.visit_expression(&b.node.rhs.node, &b.node.rhs.span);
            }
            Expression::Member(m) if m.node.operator.node == MemberOperator::Direct => {
                self.visit_target(&m.node.expression);
            }
            Expression::UnaryOperator(u) if u.node.operator.node == UnaryOperator::Indirection => {
                self.visit_expression(&u.node.operand.node, &u.node.operand.span);
            }
            _ => self.visit_expression(&e.node, &e.span),
        }
    }
}

impl<'ast> Visit<'ast> for NamesRead {
    fn visit_identifier(&mut self, id: &'ast lang_c::ast::Identifier, _: &'ast Span) {
        self.0.insert(id.name.clone());
    }

    fn visit_binary_operator_expression(
        &mut self,
        b: &'ast BinaryOperatorExpression,
        span: &'ast Span,
    ) {
        if b.operator.node == BinaryOperator::Assign {
            self.visit_target(&b.lhs);
            self.visit_expression(&b.rhs.node, &b.rhs.span);
        } else {
            visit::visit_binary_operator_expression(self, b, span);
        }
    }
}
