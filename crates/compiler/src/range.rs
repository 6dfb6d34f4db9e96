//! Value-range analysis: integer arithmetic and comparisons over only the bits that can be
//! nonzero.
//!
//! Symbolic execution already knows some bits of every value: the literals that are
//! constants (the *known bits* of the abstract-interpretation literature; loop counters and
//! indices are entirely known). What the literals cannot say is a bound that is not a power
//! of two: a cell of an edit-distance table is at most `i + j`, but `x + 1` on a value whose
//! low `k` bits are unknown makes `k + 1` unknown bits, so the table's widths would creep up
//! by one bit per cell until the full 32 bits of an `int`. This module therefore remembers,
//! next to the literals, an *interval* `[lo, hi]` of the unsigned number the bit vector
//! holds, and narrows:
//!
//! * `+`, `-`, `*`, `/`, `%`, `&` whose result provably does not wrap are built over the
//!   `k` bits that the result's bound needs (the bits above are constant zero);
//! * `<`, `<=`, `>`, `>=`, `==`, `!=` on values known to be non-negative compare only the
//!   bits that can be nonzero, and are constants where the intervals do not overlap;
//! * a multiplexer (`c ? x : y`, a write under a secret condition such as
//!   `if (x < best) best = x;`, a read or write at a secret index) gets the hull of its
//!   inputs' intervals, narrowed where its selector is a comparison of its own two choices:
//!   `x < y ? x : y` and `if (x < best) best = x;` are a minimum, whose bound is the
//!   *smaller* of the two bounds (and a maximum's lower bound the larger one), so the cells
//!   of an edit-distance table are bounded by `max(i, j)` instead of `i + j`
//!   ([`Lowerer::mux_ranged`] has the rule and why it is sound);
//! * whatever has an interval has its bits above the bound (and the common high bits of
//!   `lo` and `hi`) replaced by constants, so later gates fold them.
//!
//! Soundness does not depend on C's rules (undefined signed overflow and the like): every
//! interval is a fact about the Boolean function the literals compute on *all* inputs,
//! derived from the operands' intervals by exact integer arithmetic, and an operation is
//! narrowed only when that arithmetic shows the narrow circuit computes the same bits as the
//! full-width one. Facts true only on some paths (inside `if (x < 5)`) are never recorded.
//! Intervals are kept per literal vector (the same literals are the same function, whatever
//! variable or array cell holds them), so values flow through copies, array cells, returns
//! and the conditional writes of unrolled loops; the unrolled execution visits every
//! iteration, so no widening over loops is needed. The table is a cache: dropping entries
//! only loses precision.

use std::collections::HashMap;

use lang_c::ast::BinaryOperator;
use pgc_circuit::netlist::Gates;
use pgc_circuit::{Lit, OptimizeFor, blocks};

use crate::compact::ShapeHasher;
use crate::lower::{Lowerer, Val};
use crate::replay::{Interval, NO_REG, Op, Recorder, Select};
use crate::types::IntTy;

/// Values wider than this keep no interval (`long long` is the widest integer).
const MAX_BITS: usize = 64;

/// Intervals remembered per generation: when the young table is full it becomes the old one
/// (the previous old one is dropped) and a lookup that finds an old entry copies it to the
/// young table, so values still in use keep their intervals while the compiler's memory
/// stays bounded (a dropped interval only costs precision).
const GENERATION: usize = 1 << 19;

/// One generation. A key of at most 32 literals that [`crate::bits::pack_word`] encodes
/// (constants, or a run of wires then zeros: nearly all narrowed values) is kept as that
/// code, with its interval as two `u32` (a number of at most 32 bits), in 16 bytes an entry;
/// any other key as a boxed copy. Keys are trimmed ([`trimmed`]: their last literal is not
/// the constant 0), so the code alone determines the key: `pack_word` pads a key with zeros
/// to 32 literals, and trimming that padded chunk gives the key back.
#[derive(Default)]
pub(crate) struct Table {
    packed: HashMap<u64, (u32, u32), RangeHasher>,
    lits: HashMap<Box<[Lit]>, (u64, u64), RangeHasher>,
}

impl Table {
    fn len(&self) -> usize {
        self.packed.len() + self.lits.len()
    }

    fn clear(&mut self) {
        self.packed.clear();
        self.lits.clear();
    }

    fn get(&self, key: &[Lit], packed: Option<u64>) -> Option<(u64, u64)> {
        match packed {
            Some(p) => self.packed.get(&p).map(|&(lo, hi)| (lo as u64, hi as u64)),
            None => self.lits.get(key).copied(),
        }
    }

    fn insert(&mut self, key: &[Lit], packed: Option<u64>, (lo, hi): (u64, u64)) {
        match packed {
            Some(p) => {
                // A key of at most 32 literals holds a number below 2^32.
                let narrow = (u32::try_from(lo), u32::try_from(hi));
                if let (Ok(lo), Ok(hi)) = narrow {
                    self.packed.insert(p, (lo, hi));
                }
            }
            None => {
                self.lits.insert(key.into(), (lo, hi));
            }
        }
    }
}

/// The packed form of a trimmed key, if it has one.
fn packed_key(key: &[Lit]) -> Option<u64> {
    debug_assert_eq!(trimmed(key).len(), key.len(), "range keys are trimmed");
    crate::bits::pack_word(key)
}

type RangeHasher = std::hash::BuildHasherDefault<ShapeHasher>;

/// The intervals of one gate builder's literal vectors, and what narrowing saved.
#[derive(Default)]
pub struct Ranges {
    /// Inclusive bounds of the unsigned number a literal vector (trailing constant-zero
    /// literals trimmed) holds, where tighter than its constant literals say.
    young: Table,
    old: Table,
    /// Recent comparisons, for recognizing a minimum or maximum.
    orders: Orders,
    /// The bound program of the template being built, where one is recorded
    /// ([`crate::replay`]).
    rec: Option<Recording>,
    pub stats: RangeStats,
}

/// A bound program being recorded, and the register of each literal vector (trimmed) whose
/// interval it derives.
#[derive(Default)]
pub(crate) struct Recording {
    pub(crate) rec: Recorder,
    regs: HashMap<Box<[Lit]>, u32, RangeHasher>,
}

/// The tables of a builder, and its recording.
pub(crate) type SavedRanges = (Table, Table, Orders, Option<Recording>);

impl Ranges {
    /// Starts the tables of a new builder (a template's), recording nothing; returns the
    /// current one's.
    pub(crate) fn enter_builder(&mut self) -> SavedRanges {
        (
            std::mem::take(&mut self.young),
            std::mem::take(&mut self.old),
            std::mem::take(&mut self.orders),
            self.rec.take(),
        )
    }

    /// Back to the builder whose tables `enter_builder` returned (statistics are kept).
    pub(crate) fn leave_builder(&mut self, (young, old, orders, rec): SavedRanges) {
        self.young = young;
        self.old = old;
        self.orders = orders;
        self.rec = rec;
    }

    /// Records the current builder's bound program from now on.
    pub(crate) fn start_recording(&mut self) {
        self.rec = Some(Recording::default());
    }

    /// The recording of the current builder, which stops.
    pub(crate) fn take_recording(&mut self) -> Option<Recording> {
        self.rec.take()
    }

    /// The recording of the current builder, if one is made.
    pub(crate) fn recording(&mut self) -> Option<&mut Recording> {
        self.rec.as_mut()
    }

    fn get(&mut self, key: &[Lit]) -> Option<(u64, u64)> {
        let packed = packed_key(key);
        if let Some(r) = self.young.get(key, packed) {
            return Some(r);
        }
        let r = self.old.get(key, packed)?;
        self.insert_packed(key, packed, r);
        Some(r)
    }

    fn insert(&mut self, key: &[Lit], r: (u64, u64)) {
        self.insert_packed(key, packed_key(key), r);
    }

    fn insert_packed(&mut self, key: &[Lit], packed: Option<u64>, r: (u64, u64)) {
        if self.young.len() >= GENERATION {
            // The old generation's table, emptied, is the new young one: its allocation is
            // kept instead of growing a fresh table again.
            std::mem::swap(&mut self.young, &mut self.old);
            self.young.clear();
        }
        self.young.insert(key, packed, r);
    }
}

/// How many comparisons [`Orders`] remembers: a comparison matters to the multiplexer right
/// after it (`if (x < m) m = x;`, `x < m ? x : m`), so a few suffice; older ones are
/// overwritten (which only costs precision).
const ORDERS: usize = 32;

/// `guard ⇒ x ≤ y` (unsigned numbers of the trimmed literal vectors `x`, `y`) and, where
/// `exact`, also `¬guard ⇒ y ≤ x`. A comparison's output `lt ≡ x < y` gives the exact fact
/// (its complement `¬lt ≡ y ≤ x` the same fact with `x` and `y` swapped); a path condition
/// `cur ∧ lt` only implies the order.
struct Order {
    guard: Lit,
    x: Vec<Lit>,
    y: Vec<Lit>,
    exact: bool,
}

/// The last [`ORDERS`] order facts of one builder, in a ring whose vectors are reused.
#[derive(Default)]
pub(crate) struct Orders {
    ring: Vec<Order>,
    next: usize,
}

impl Orders {
    fn push(&mut self, guard: Lit, x: &[Lit], y: &[Lit], exact: bool) {
        if self.ring.len() < ORDERS {
            self.ring.push(Order {
                guard: Lit::FALSE,
                x: Vec::new(),
                y: Vec::new(),
                exact: false,
            });
        }
        let o = &mut self.ring[self.next];
        self.next = (self.next + 1) % ORDERS;
        o.guard = guard;
        o.exact = exact;
        o.x.clear();
        o.x.extend_from_slice(trimmed(x));
        o.y.clear();
        o.y.extend_from_slice(trimmed(y));
    }

    /// The facts about `g`, as `(x, y, exact)` with `g ⇒ x ≤ y` (and `¬g ⇒ y ≤ x` where
    /// exact).
    fn about(&self, g: Lit) -> impl Iterator<Item = (&[Lit], &[Lit], bool)> {
        self.ring.iter().filter_map(move |o| {
            if o.guard == g {
                Some((&o.x[..], &o.y[..], o.exact))
            } else if o.guard == !g && o.exact {
                Some((&o.y[..], &o.x[..], true))
            } else {
                None
            }
        })
    }
}

/// What the analysis saved, counted per narrowed operation against the same operation built
/// at full width from the same literals with constant folding.
#[derive(Clone, Copy, Debug, Default)]
pub struct RangeStats {
    pub gates_avoided: u64,
    pub and_gates_avoided: u64,
}

/// `bits` without its trailing constant-zero literals (zero-extension does not change the
/// key).
fn trimmed(bits: &[Lit]) -> &[Lit] {
    let n = bits.len() - bits.iter().rev().take_while(|l| **l == Lit::FALSE).count();
    &bits[..n]
}

/// The interval that the constant literals alone give, if the value fits `MAX_BITS`.
fn literal_range(bits: &[Lit]) -> Option<(u64, u64)> {
    trimmed_literal_range(trimmed(bits))
}

/// [`literal_range`] of bits already trimmed.
fn trimmed_literal_range(bits: &[Lit]) -> Option<(u64, u64)> {
    if bits.len() > MAX_BITS {
        return None;
    }
    let (mut lo, mut hi) = (0u64, 0u64);
    for (i, l) in bits.iter().enumerate() {
        match l.as_const() {
            Some(true) => {
                lo |= 1 << i;
                hi |= 1 << i;
            }
            Some(false) => {}
            None => hi |= 1 << i,
        }
    }
    Some((lo, hi))
}

/// Bits needed for numbers up to `x`.
fn bit_len(x: u128) -> usize {
    (128 - x.leading_zeros()) as usize
}

/// `bits` resized to `n` (truncated, or extended with zeros).
fn resized(bits: &[Lit], n: usize) -> Vec<Lit> {
    let mut v: Vec<Lit> = bits.iter().copied().take(n).collect();
    v.resize(n, Lit::FALSE);
    v
}

/// Counts the gates a block would make, folding constants and equal or complementary
/// operands (not structural hashing); emits nothing.
struct Tally {
    next: u64,
    ands: u64,
    xors: u64,
    optimize: OptimizeFor,
}

impl Tally {
    fn fresh(&mut self) -> Lit {
        self.next += 1;
        // Numbered down from the top, far above the wires of the builder's operands
        // (only for counting: a clash could only miscount).
        Lit::wire(u32::MAX - 1 - (self.next as u32))
    }
}

impl Gates for Tally {
    fn xor(&mut self, a: Lit, b: Lit) -> Lit {
        match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) => Lit::constant(x ^ y),
            (Some(x), None) => lit_xor(b, x),
            (None, Some(y)) => lit_xor(a, y),
            _ if a == b => Lit::FALSE,
            _ if a == !b => Lit::TRUE,
            _ => {
                self.xors += 1;
                self.fresh()
            }
        }
    }
    fn and(&mut self, a: Lit, b: Lit) -> Lit {
        match (a.as_const(), b.as_const()) {
            (Some(false), _) | (_, Some(false)) => Lit::FALSE,
            (Some(true), _) => b,
            (_, Some(true)) => a,
            _ if a == b => a,
            _ if a == !b => Lit::FALSE,
            _ => {
                self.ands += 1;
                self.fresh()
            }
        }
    }
    fn optimize_for(&self) -> OptimizeFor {
        self.optimize
    }
}

fn lit_xor(l: Lit, flip: bool) -> Lit {
    if flip { !l } else { l }
}

/// An integer operation the analysis may narrow.
#[derive(Clone, Copy)]
enum Narrowed {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    /// `a < b` unsigned.
    Less,
    Equal,
}

impl Narrowed {
    /// Builds the operation over `a` and `b` (equal widths); comparisons give one bit.
    fn build<G: Gates + ?Sized>(self, g: &mut G, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
        match self {
            Narrowed::Add => blocks::add(g, a, b),
            Narrowed::Sub => blocks::sub(g, a, b),
            Narrowed::Mul => blocks::mul(g, a, b),
            Narrowed::Div => blocks::udivrem(g, a, b).0,
            Narrowed::Rem => blocks::udivrem(g, a, b).1,
            Narrowed::And => blocks::and_word(g, a, b),
            Narrowed::Less => vec![blocks::lt_unsigned(g, a, b)],
            Narrowed::Equal => vec![blocks::eq(g, a, b)],
        }
    }
}

impl Lowerer<'_> {
    /// The interval of the unsigned number `bits` holds, if it has at most 64 significant
    /// bits.
    pub(crate) fn range_of(&mut self, bits: &[Lit]) -> Option<(u64, u64)> {
        let bits = trimmed(bits);
        let (lo, hi) = trimmed_literal_range(bits)?;
        if lo == hi {
            return Some((lo, hi));
        }
        match self.ranges.get(bits) {
            Some((l, h)) => Some((lo.max(l), hi.min(h))),
            None => Some((lo, hi)),
        }
    }

    /// Records that `bits` holds a number in `[lo, hi]`: the bits that fact fixes become
    /// constants (returned), and the interval is remembered where the literals alone do not
    /// imply it.
    pub(crate) fn note_range(&mut self, bits: Vec<Lit>, lo: u64, hi: u64) -> Vec<Lit> {
        let Some((llo, lhi)) = literal_range(&bits) else {
            return bits;
        };
        let (lo, hi) = (lo.max(llo), hi.min(lhi));
        if lo > hi {
            // Contradictory facts cannot come from sound rules; keep the literals.
            debug_assert!(false, "empty interval [{lo}, {hi}]");
            return bits;
        }
        // Bits above the highest one in which `lo` and `hi` differ are those of `lo`.
        let fixed_from = bit_len((lo ^ hi) as u128);
        let mut out = bits;
        for (i, l) in out.iter_mut().enumerate().skip(fixed_from) {
            *l = Lit::constant(i < 64 && (lo >> i) & 1 == 1);
        }
        let key = trimmed(&out);
        if trimmed_literal_range(key) != Some((lo, hi)) {
            self.ranges.insert(key, (lo, hi));
        }
        out
    }

    /// A multiplexer's result: the hull of its inputs' intervals.
    pub(crate) fn note_mux(&mut self, out: Vec<Lit>, inputs: &[&[Lit]]) -> Vec<Lit> {
        if !self.opts.value_ranges || out.len() > 2 * MAX_BITS {
            return out;
        }
        let mut hull: Option<(u64, u64)> = None;
        for x in inputs {
            let Some((l, h)) = self.range_of(x) else {
                return out;
            };
            hull = Some(match hull {
                None => (l, h),
                Some((hl, hh)) => (hl.min(l), hh.max(h)),
            });
        }
        let Some((lo, hi)) = hull else {
            return out;
        };
        let out = self.note_range(out, lo, hi);
        if self.ranges.rec.is_some() {
            let regs: Vec<u32> = inputs.iter().map(|x| self.bound_reg(x)).collect();
            if !regs.contains(&NO_REG)
                && let Some(iv) = self.range_of(&out)
            {
                let rec = self.ranges.rec.as_mut().expect("recording");
                let r = rec.rec.push_hull(&regs, iv);
                self.bind_reg(&out, r);
            }
        }
        out
    }

    /// The register of the bound program being recorded that holds the interval of `bits`:
    /// the one its derivation was recorded in, else a new one holding only the interval
    /// known now. [`NO_REG`] when nothing is recorded or `bits` has no interval.
    pub(crate) fn bound_reg(&mut self, bits: &[Lit]) -> u32 {
        if self.ranges.rec.is_none() {
            return NO_REG;
        }
        let key = trimmed(bits);
        if let Some(&r) = self.ranges.rec.as_ref().and_then(|rec| rec.regs.get(key)) {
            return r;
        }
        let Some(iv) = self.range_of(key) else {
            return NO_REG;
        };
        let rec = self.ranges.rec.as_mut().expect("recording");
        let r = rec.rec.push(Op::Const, iv);
        rec.regs.insert(key.into(), r);
        r
    }

    /// Records that register `r` holds the interval of `bits` (from now on).
    pub(crate) fn bind_reg(&mut self, bits: &[Lit], r: u32) {
        if let Some(rec) = self.ranges.rec.as_mut()
            && r != NO_REG
        {
            rec.regs.insert(trimmed(bits).into(), r);
        }
    }

    /// Records `op(a, b)` (registers of `a` and `b`) as the derivation of `out`'s interval.
    pub(crate) fn record_binary(
        &mut self,
        op: fn(u32, u32) -> Op,
        out: &[Lit],
        a: &[Lit],
        b: &[Lit],
    ) {
        if self.ranges.rec.is_none() {
            return;
        }
        let (ra, rb) = (self.bound_reg(a), self.bound_reg(b));
        if ra == NO_REG || rb == NO_REG {
            return;
        }
        let Some(iv) = self.range_of(out) else {
            return;
        };
        let rec = self.ranges.rec.as_mut().expect("recording");
        let r = rec.rec.push(op(ra, rb), iv);
        self.bind_reg(out, r);
    }

    /// Records a register of the program being recorded whose interval the build found to be
    /// `iv`, holding `op`, as the interval of `bits`; returns it ([`NO_REG`] when nothing is
    /// recorded).
    pub(crate) fn record_op(&mut self, bits: &[Lit], op: Op, iv: Interval) -> u32 {
        let Some(rec) = self.ranges.rec.as_mut() else {
            return NO_REG;
        };
        let r = rec.rec.push(op, iv);
        self.bind_reg(bits, r);
        r
    }

    /// Remembers that `lt` is the unsigned comparison `x < y` of the (full-width) operand
    /// vectors, for [`Self::mux_ranged`]. Callers pass only comparisons that order the
    /// numbers as unsigned ones: unsigned types, or signed operands known non-negative.
    pub(crate) fn note_order(&mut self, lt: Lit, x: &[Lit], y: &[Lit]) {
        if self.opts.value_ranges && lt.as_const().is_none() {
            self.ranges.orders.push(lt, x, y, true);
        }
    }

    /// `n = cur ∧ c` (a path condition) implies the orders that `c` implies.
    pub(crate) fn note_implied_order(&mut self, n: Lit, c: Lit) {
        if !self.opts.value_ranges || n == c || n.as_const().is_some() {
            return;
        }
        let facts: Vec<(Vec<Lit>, Vec<Lit>)> = self
            .ranges
            .orders
            .about(c)
            .map(|(x, y, _)| (x.to_vec(), y.to_vec()))
            .collect();
        for (x, y) in facts {
            self.ranges.orders.push(n, &x, &y, false);
        }
    }

    /// `sel ? t : f`, bit by bit, with the interval of the result: the hull of `t`'s and
    /// `f`'s, narrowed by what a remembered comparison says about `sel`. The bits that the
    /// interval fixes are constants, without multiplexers.
    ///
    /// Soundness: let `r = sel ? t : f` (unsigned numbers). If `sel ⇒ t ≤ f`, then on every
    /// input either `sel` holds and `r = t ≤ f`, or it does not and `r = f`: so `r ≤ f`,
    /// `hi(r) ≤ hi(f)`. That is all a path condition `cur ∧ (t < f)` gives (where `cur` is
    /// false, `r = f` whatever `t` is). If moreover `¬sel ⇒ f ≤ t` (`sel` *is* the comparison
    /// `t < f` or `t <= f`), then also `r ≤ t`: `r = min(t, f)`, `hi(r) ≤ min(hi(t), hi(f))`.
    /// Symmetrically `sel ⇒ f ≤ t` gives `r ≥ f`, `lo(r) ≥ lo(f)`, and with `¬sel ⇒ t ≤ f`
    /// too `r = max(t, f)`, `lo(r) ≥ max(lo(t), lo(f))`. The order facts compare the very
    /// literal vectors chosen between (equal trimmed vectors hold equal numbers), so each
    /// is a fact about the Boolean functions on all inputs, like every interval here.
    pub(crate) fn mux_ranged(&mut self, sel: Lit, t: &[Lit], f: &[Lit]) -> Vec<Lit> {
        let Some((lo, hi, hull_from, order)) = self.select_range(sel, t, f) else {
            return blocks::mux_word(&mut self.g, sel, t, f);
        };
        let fixed_from = bit_len((lo ^ hi) as u128).min(t.len());
        let mut out: Vec<Lit> = t[..fixed_from]
            .iter()
            .zip(&f[..fixed_from])
            .map(|(&x, &y)| self.g.mux(sel, x, y))
            .collect();
        out.extend((fixed_from..t.len()).map(|i| Lit::constant(i < 64 && (lo >> i) & 1 == 1)));
        if fixed_from < hull_from {
            // The multiplexers the order saved: bits the hull leaves open and the order
            // fixes.
            let mut tally = Tally {
                next: 0,
                ands: 0,
                xors: 0,
                optimize: self.g.optimize_for(),
            };
            for i in fixed_from..hull_from {
                tally.mux(sel, t[i], f[i]);
            }
            let s = &mut self.ranges.stats;
            s.and_gates_avoided += tally.ands;
            s.gates_avoided += tally.ands + tally.xors;
        }
        let out = self.note_range(out, lo, hi);
        if self.ranges.rec.is_some() {
            let (rt, rf) = (self.bound_reg(t), self.bound_reg(f));
            if rt != NO_REG
                && rf != NO_REG
                && let Some(iv) = self.range_of(&out)
            {
                let op = Op::Select {
                    t: rt,
                    f: rf,
                    order,
                };
                self.record_op(&out, op, iv);
            }
        }
        out
    }

    /// The interval of `sel ? t : f` ([`Self::mux_ranged`]) and the first bit that the hull
    /// alone would fix.
    /// Also which of the choices' bounds bound it, for the bound program being recorded.
    fn select_range(
        &mut self,
        sel: Lit,
        t: &[Lit],
        f: &[Lit],
    ) -> Option<(u64, u64, usize, Select)> {
        if !self.opts.value_ranges || t.len() != f.len() || sel.as_const().is_some() {
            return None;
        }
        let (tlo, thi) = self.range_of(t)?;
        let (flo, fhi) = self.range_of(f)?;
        let (mut lo, mut hi) = (tlo.min(flo), thi.max(fhi));
        let hull_from = bit_len((lo ^ hi) as u128).min(t.len());
        let (tk, fk) = (trimmed(t), trimmed(f));
        let mut order = Select::default();
        for (x, y, exact) in self.ranges.orders.about(sel) {
            if x == tk && y == fk {
                // sel ⇒ t ≤ f: r ≤ f; exact: r = min(t, f).
                hi = hi.min(fhi);
                order.hi_f = true;
                if exact {
                    hi = hi.min(thi);
                    order.hi_t = true;
                }
            }
            if x == fk && y == tk {
                // sel ⇒ f ≤ t: r ≥ f; exact: r = max(t, f).
                lo = lo.max(flo);
                order.lo_f = true;
                if exact {
                    lo = lo.max(tlo);
                    order.lo_t = true;
                }
            }
        }
        Some((lo, hi, hull_from, order))
    }

    /// `a op b` for operands of type `ct` (already converted), built over fewer bits where
    /// the operands' intervals allow; `None` = build it as usual.
    pub(crate) fn ranged_arith(
        &mut self,
        op: &BinaryOperator,
        ct: IntTy,
        a: &[Lit],
        b: &[Lit],
    ) -> Option<Val> {
        use BinaryOperator as B;
        if !self.opts.value_ranges {
            return None;
        }
        let w = ct.bits as usize;
        let (alo, ahi) = self.range_of(a)?;
        let (blo, bhi) = self.range_of(b)?;
        let (alo, ahi, blo, bhi) = (alo as u128, ahi as u128, blo as u128, bhi as u128);
        let modulus = 1u128 << w;
        // Signed operands are ordered like unsigned ones when both are non-negative.
        let nonneg = !ct.signed || (ahi < modulus / 2 && bhi < modulus / 2);
        let (kind, lo, hi, k) = match op {
            B::Plus if ahi + bhi < modulus => {
                (Narrowed::Add, alo + blo, ahi + bhi, bit_len(ahi + bhi))
            }
            B::Minus if alo >= bhi => (Narrowed::Sub, alo - bhi, ahi - blo, bit_len(ahi)),
            B::Multiply if ahi.checked_mul(bhi).is_some_and(|p| p < modulus) => {
                (Narrowed::Mul, alo * blo, ahi * bhi, bit_len(ahi * bhi))
            }
            B::Divide if nonneg && blo >= 1 => {
                let k = bit_len(ahi.max(bhi));
                (Narrowed::Div, alo / bhi, ahi / blo, k)
            }
            B::Modulo if nonneg && blo >= 1 => {
                let k = bit_len(ahi.max(bhi));
                (Narrowed::Rem, 0, ahi.min(bhi - 1), k)
            }
            B::BitwiseAnd => {
                let hi = ahi.min(bhi);
                (Narrowed::And, 0, hi, bit_len(hi))
            }
            B::Less | B::Greater | B::LessOrEqual | B::GreaterOrEqual if nonneg => {
                // `x < y` with `(x, y)` ordered as the block builds it.
                let ((xlo, xhi), (ylo, yhi)) = if matches!(op, B::Less | B::GreaterOrEqual) {
                    ((alo, ahi), (blo, bhi))
                } else {
                    ((blo, bhi), (alo, ahi))
                };
                let strict = matches!(op, B::Less | B::Greater);
                let decided = if xhi < ylo {
                    Some(true)
                } else if xlo >= yhi {
                    Some(false)
                } else {
                    None
                };
                let k = bit_len(ahi.max(bhi));
                if let Some(lt) = decided {
                    self.tally_saving(Narrowed::Less, &a[..w], &b[..w], &[], &[]);
                    return Some(bool_val(Lit::constant(lt == strict)));
                }
                (Narrowed::Less, 0, 1, k)
            }
            B::Equals | B::NotEquals => {
                let k = bit_len(ahi.max(bhi));
                if ahi < blo || bhi < alo {
                    self.tally_saving(Narrowed::Equal, &a[..w], &b[..w], &[], &[]);
                    return Some(bool_val(Lit::constant(*op == B::NotEquals)));
                }
                (Narrowed::Equal, 0, 1, k)
            }
            _ => return None,
        };
        if k >= w {
            return None;
        }
        let k = k.max(1);
        let (na, nb) = (resized(a, k), resized(b, k));
        // Comparisons take their operands in the order the usual builder would.
        let (x, y, fx, fy) = match op {
            B::Greater | B::LessOrEqual => (&nb, &na, b, a),
            _ => (&na, &nb, a, b),
        };
        let out = kind.build(&mut self.g, x, y);
        self.tally_saving(kind, &fx[..w], &fy[..w], x, y);
        match kind {
            Narrowed::Less => {
                let lt = out[0];
                // Non-negative operands: the unsigned order of the full-width vectors.
                self.note_order(lt, &fx[..w], &fy[..w]);
                let strict = matches!(op, B::Less | B::Greater);
                Some(bool_val(if strict { lt } else { !lt }))
            }
            Narrowed::Equal => {
                let eq = out[0];
                Some(bool_val(if *op == B::Equals { eq } else { !eq }))
            }
            _ => {
                let bits = self.note_range(resized(&out, w), lo as u64, hi as u64);
                let op: fn(u32, u32) -> Op = match kind {
                    Narrowed::Add => Op::Add,
                    Narrowed::Sub => Op::Sub,
                    Narrowed::Mul => Op::Mul,
                    Narrowed::Div => Op::Div,
                    Narrowed::Rem => Op::Rem,
                    _ => Op::And,
                };
                self.record_binary(op, &bits, a, b);
                Some(Val::Int(ct, bits))
            }
        }
    }

    /// Adds to the statistics the gates of `kind` over the full-width `fx`, `fy` less those
    /// over the narrowed `x`, `y` (empty: the result was a constant).
    fn tally_saving(&mut self, kind: Narrowed, fx: &[Lit], fy: &[Lit], x: &[Lit], y: &[Lit]) {
        let optimize = self.g.optimize_for();
        let count = |a: &[Lit], b: &[Lit]| {
            let mut t = Tally {
                next: 0,
                ands: 0,
                xors: 0,
                optimize,
            };
            if !a.is_empty() {
                kind.build(&mut t, a, b);
            }
            (t.ands, t.xors)
        };
        let (full_and, full_xor) = count(fx, fy);
        let (narrow_and, narrow_xor) = count(x, y);
        let ands = full_and.saturating_sub(narrow_and);
        let s = &mut self.ranges.stats;
        s.and_gates_avoided += ands;
        s.gates_avoided += ands + full_xor.saturating_sub(narrow_xor);
    }
}

fn bool_val(b: Lit) -> Val {
    let mut bits = vec![Lit::FALSE; IntTy::INT.bits as usize];
    bits[0] = b;
    Val::Int(IntTy::INT, bits)
}

#[cfg(test)]
mod tests {
    use pgc_circuit::eval_bits;

    use crate::{Compiled, Options, compile_source};

    /// `src` (`int` inputs, one `int` output) compiled with and without the analysis.
    fn both(src: &str) -> (Compiled, Compiled) {
        let compile = |value_ranges| {
            let opts = Options {
                value_ranges,
                ..Options::default()
            };
            compile_source(src, "t.c", &opts).unwrap_or_else(|e| panic!("{e}"))
        };
        (compile(true), compile(false))
    }

    fn run(c: &Compiled, inputs: &[i32]) -> i32 {
        let bits: Vec<bool> = inputs
            .iter()
            .flat_map(|v| (0..32).map(move |i| (v >> i) & 1 == 1))
            .collect();
        value(&eval_bits(&c.circuit, &bits))
    }

    fn value(bits: &[bool]) -> i32 {
        bits.iter()
            .take(32)
            .enumerate()
            .map(|(i, &b)| (b as i32) << i)
            .sum()
    }

    /// Every narrowing is an identity of the circuit, also where C leaves the result
    /// undefined: an index out of range reads zero, signed overflow wraps, a difference
    /// below zero is negative.
    #[test]
    fn narrowed_circuits_equal_full_width_ones_on_edge_inputs() {
        let programs = [
            // Cells in [4, 7]; an index out of range reads 0, which the hull must include.
            "int f(int INPUT_A_i, int INPUT_B_x) { int t[3]; for (int k = 0; k < 3; k++)
               t[k] = 4 + (INPUT_B_x & 3); return t[INPUT_A_i]; }",
            // Differences that go below zero, compared signed.
            "int f(int INPUT_A_x, int INPUT_B_y) { int a = INPUT_A_x & 7, b = INPUT_B_y & 7;
               int d = a - b; return (d < 0) * 100 + (a - 3 > b) + d; }",
            // Bounded products, quotients and remainders; overflow of unbounded ones.
            "int f(int INPUT_A_x, int INPUT_B_y) { int a = INPUT_A_x & 255, b = (INPUT_B_y & 15) + 1;
               return a * b + a / b + a % b + (INPUT_A_x * 65536) * 65536 + (a * b < 300); }",
            // Minimum of bounded values kept under secret conditions, then widened.
            "int f(int INPUT_A_x, int INPUT_B_y) { int m = 9; int v[4];
               for (int k = 0; k < 4; k++) { v[k] = ((INPUT_A_x >> k) & 3) + k;
                 if (v[k] < m) m = v[k]; }
               v[INPUT_B_y & 3] = m + 1; return v[0] * 1000 + v[1] * 100 + v[2] * 10 + v[3] + m; }",
        ];
        for (k, src) in programs.iter().enumerate() {
            let (on, off) = both(src);
            for &x in &EDGES {
                for &y in &EDGES {
                    assert_eq!(
                        run(&on, &[x, y]),
                        run(&off, &[x, y]),
                        "inputs ({x}, {y}) of\n{src}"
                    );
                }
            }
            let (on_ands, off_ands) = (on.stats.and_gates_final, off.stats.and_gates_final);
            assert!(on_ands <= off_ands, "{src}: {on_ands} > {off_ands}");
            // The first two are edge cases whose literals already show all there is to know.
            assert!(k < 2 || on_ands < off_ands, "nothing narrowed in\n{src}");
        }
    }

    const EDGES: [i32; 15] = [
        0,
        1,
        2,
        3,
        4,
        -1,
        -2,
        7,
        255,
        256,
        65535,
        i32::MAX,
        i32::MIN,
        0x5a5a_5a5a,
        -0x1234_5678,
    ];

    /// Compiles `body` (statements over `int a, b` that set `int m`, inside
    /// `f(INPUT_A_x, INPUT_B_y)` after `prelude`) returning `ret`, checks that the analysis
    /// changes no output on the edge inputs, and returns the AND count with the analysis.
    fn ands_of_equal_circuits(prelude: &str, body: &str, ret: &str) -> u64 {
        let src =
            format!("int f(int INPUT_A_x, int INPUT_B_y) {{ {prelude} {body} return {ret}; }}");
        let (on, off) = both(&src);
        for &x in &EDGES {
            for &y in &EDGES {
                assert_eq!(
                    run(&on, &[x, y]),
                    run(&off, &[x, y]),
                    "inputs ({x}, {y}) of\n{src}"
                );
            }
        }
        on.stats.and_gates_final
    }

    /// A choice whose selector is the comparison of its own two choices is a minimum
    /// (bounded by the smaller bound) or a maximum (bounded below by the larger lower
    /// bound), in every spelling; a choice on an unrelated secret bit gets only the hull.
    #[test]
    fn min_and_max_of_their_own_comparison_are_narrowed() {
        // a ≤ 255, b ≤ 15: min(a, b) ≤ 15 makes `m * m` a 4-bit product.
        let small = "int a = INPUT_A_x & 255, b = INPUT_B_y & 15;";
        let mins = [
            "int m = a < b ? a : b;",
            "int m = a <= b ? a : b;",
            "int m = b > a ? a : b;",
            "int m = b >= a ? a : b;",
            "int m = b < a ? b : a;",
            "int m = a > b ? b : a;",
            "int m = a >= b ? b : a;",
            "int m = a; if (b < m) m = b;",
            "int m = a; if (m > b) m = b;",
            "int m = a; if (b <= m) m = b;",
            "int m = a; if (m >= b) m = b;",
            "int m = a; if (m <= b) {} else m = b;",
            "int m = b; if (a < m) m = a;",
            "int m = b; if (!(m <= a)) m = a;",
        ];
        let hull = ands_of_equal_circuits(small, "int m = INPUT_A_x & 512 ? a : b;", "m * m");
        for body in mins {
            let ands = ands_of_equal_circuits(small, body, "m * m");
            assert!(ands < hull, "{body}: {ands} AND, hull {hull}");
        }
        // a in [240, 255], b ≤ 255: max(a, b) ≥ 240 makes `m - 240` exact and narrow.
        let high = "int a = (INPUT_A_x & 15) + 240, b = INPUT_B_y & 255;";
        let maxes = [
            "int m = a > b ? a : b;",
            "int m = a >= b ? a : b;",
            "int m = b < a ? a : b;",
            "int m = b <= a ? a : b;",
            "int m = a < b ? b : a;",
            "int m = b; if (a > m) m = a;",
            "int m = b; if (m < a) m = a;",
            "int m = a; if (b >= m) m = b;",
        ];
        let ret = "(m - 240) * (m - 240)";
        let hull = ands_of_equal_circuits(high, "int m = INPUT_A_x & 512 ? a : b;", ret);
        for body in maxes {
            let ands = ands_of_equal_circuits(high, body, ret);
            assert!(ands < hull, "{body}: {ands} AND, hull {hull}");
        }
    }

    /// Under an enclosing secret condition the write happens on `cur ∧ (b < m)`: where `cur`
    /// is false `m` keeps its value, so the result is bounded by `m`'s bound only (not by
    /// the smaller one), and still narrower than the hull when `m`'s bound is the smaller.
    #[test]
    fn min_under_an_enclosing_condition_is_bounded_by_the_kept_value() {
        let prelude = "int a = INPUT_A_x & 15, b = INPUT_B_y & 255;";
        let ret = "m * m + m";
        // Each with the same program choosing on an unrelated secret bit instead.
        for (body, unrelated) in [
            (
                "int m = a; if (INPUT_A_x & 512) { if (b < m) m = b; }",
                "int m = a; if (INPUT_A_x & 512) { if (INPUT_B_y & 1024) m = b; }",
            ),
            (
                "int m = a; if (INPUT_A_x & 512) { if (m > b) m = b; } else m = a;",
                "int m = a; if (INPUT_A_x & 512) { if (INPUT_B_y & 1024) m = b; } else m = a;",
            ),
            (
                "int m = a; if (INPUT_A_x & 1) if (b < m) m = b; if (INPUT_A_x & 2) if (b < m) m = b;",
                "int m = a; if (INPUT_A_x & 1) if (b < m) m = b; if (INPUT_A_x & 2) if (INPUT_B_y & 2) m = b;",
            ),
        ] {
            let ands = ands_of_equal_circuits(prelude, body, ret);
            let hull = ands_of_equal_circuits(prelude, unrelated, ret);
            assert!(ands < hull, "{body}: {ands} AND, hull {hull}");
        }
        // The kept value has the larger bound: nothing to gain, nothing wrong.
        let prelude = "int a = INPUT_A_x & 255, b = INPUT_B_y & 15;";
        ands_of_equal_circuits(
            prelude,
            "int m = a; if (INPUT_A_x & 512) { if (b < m) m = b; }",
            ret,
        );
        // A maximum under a condition keeps its lower bound.
        let prelude = "int a = (INPUT_A_x & 15) + 240, b = INPUT_B_y & 255;";
        ands_of_equal_circuits(
            prelude,
            "int m = a; if (INPUT_A_x & 512) { if (b > m) m = b; }",
            "(m - 240) * (m - 240)",
        );
    }

    /// A loop that only updates `m` as a minimum (or maximum) is run as a reduction: each
    /// iteration starts from the operator's identity and the partial results are combined
    /// afterwards, by the same narrowed comparisons and choices.
    #[test]
    fn min_and_max_reductions_over_loops_are_bounded() {
        let ret = "m * m + m";
        for (body, unrelated) in [
            (
                "int m = 1000; for (int k = 0; k < 4; k++) { int v = (INPUT_A_x >> (4 * k)) & 15;
                   if (v < m) m = v; }",
                "int m = 1000; for (int k = 0; k < 4; k++) { int v = (INPUT_A_x >> (4 * k)) & 15;
                   if ((INPUT_B_y >> k) & 1) m = v; }",
            ),
            (
                "unsigned m = 3; for (int k = 0; k < 4; k++) {
                   unsigned v = ((INPUT_A_x >> (4 * k)) & 15) + 1000; if (v >= m) m = v; }
                 m = m - 1000;",
                "unsigned m = 3; for (int k = 0; k < 4; k++) {
                   unsigned v = ((INPUT_A_x >> (4 * k)) & 15) + 1000;
                   if ((INPUT_B_y >> k) & 1) m = v; }
                 m = m - 1000;",
            ),
        ] {
            let ands = ands_of_equal_circuits("", body, ret);
            let hull = ands_of_equal_circuits("", unrelated, ret);
            assert!(ands < hull, "{body}: {ands} AND, hull {hull}");
        }
        // Equal circuits, no claim about the count: signed values that may be negative,
        // and updates under a secret condition (an iteration that skips the update leaves
        // the identity, INT_MAX, as its partial result: the hull of the partials is wide
        // until the last combination with the value before the loop).
        for body in [
            "int m = 5; for (int k = 0; k < 3; k++) { int v = (INPUT_A_x << (8 * k)) >> 24;
               if (v < m) m = v; }",
            "int m = 1000; for (int k = 0; k < 4; k++) { int v = (INPUT_A_x >> (4 * k)) & 15;
               if ((INPUT_B_y >> k) & 1) if (m > v) m = v; }",
        ] {
            ands_of_equal_circuits("", body, ret);
        }
    }

    /// Orders that are not unsigned orders of the chosen values must not narrow: signed
    /// values that may be negative, a value changed between comparison and write, a value
    /// truncated on the way, and unrelated values.
    #[test]
    fn choices_that_are_not_min_or_max_are_not_narrowed_wrongly() {
        let cases = [
            // Signed minimum of a possibly negative value: not an unsigned minimum.
            (
                "int a = INPUT_A_x, b = INPUT_B_y & 15;",
                "int m = a < b ? a : b;",
            ),
            (
                "int a = INPUT_A_x, b = INPUT_B_y & 15;",
                "int m = b; if (a < m) m = a;",
            ),
            (
                "int a = INPUT_A_x - 8, b = INPUT_B_y & 15;",
                "int m = a <= b ? a : b;",
            ),
            // Unsigned: a true unsigned minimum whatever the sign bit.
            (
                "unsigned a = INPUT_A_x, b = INPUT_B_y & 15;",
                "unsigned m = a < b ? a : b;",
            ),
            (
                "unsigned a = INPUT_A_x, b = INPUT_B_y & 15;",
                "unsigned m = a > b ? a : b;",
            ),
            // The kept value changes after the comparison.
            (
                "int a = INPUT_A_x & 255, b = INPUT_B_y & 15;",
                "int m = a; if (b < m) { m = m + 100; m = b + (m & 1); }",
            ),
            // The written value is not the compared one.
            (
                "int a = INPUT_A_x & 255, b = INPUT_B_y & 15;",
                "int m = a; if (b < m) m = b + 300;",
            ),
            (
                "int a = INPUT_A_x & 255, b = INPUT_B_y & 15;",
                "int m = a; if (b < (a & 3)) m = b;",
            ),
            (
                "int a = INPUT_A_x & 255, b = INPUT_B_y & 15;",
                "int m = a < b + 9 ? a : b;",
            ),
            (
                "int a = INPUT_A_x & 255, b = INPUT_B_y & 15;",
                "int m = a; if (b < m) m = a; else m = b;",
            ),
            // Truncated on the way: an 8-bit variable holding a 10-bit value's low bits.
            (
                "int a = INPUT_A_x & 1023; unsigned char c = INPUT_B_y;",
                "int m; if (a < c) c = a; m = c;",
            ),
            // A comparison reused as the selector between other values.
            (
                "int a = INPUT_A_x & 255, b = INPUT_B_y & 15;",
                "int c = b < a; int m = c ? a : b;",
            ),
            (
                "int a = INPUT_A_x & 255, b = INPUT_B_y & 15;",
                "int m = (b < a) ? a + 1 : b;",
            ),
        ];
        for (prelude, body) in cases {
            ands_of_equal_circuits(prelude, body, "m * m * 3 + (m >> 2) - m");
        }
    }

    #[test]
    fn out_of_range_index_reads_zero() {
        let src = "int f(int INPUT_A_i, int INPUT_B_x) { int t[3]; for (int k = 0; k < 3; k++)
                   t[k] = 4 + (INPUT_B_x & 3); return t[INPUT_A_i]; }";
        let (on, _) = both(src);
        assert_eq!(run(&on, &[5, 2]), 0);
        assert_eq!(run(&on, &[1, 2]), 6);
    }
}
