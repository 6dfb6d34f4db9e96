//! Building circuits in code: a [`Builder`] of single gates with local constant folding, and
//! word-level blocks (adders, comparators, multiplexers) on little-endian bit vectors
//! (index 0 = least significant bit).
//!
//! Constant folding keeps constant operands free: `x ^ 0 = x`, `x ^ 1 = !x`, `x & 0 = 0`,
//! `x & 1 = x`, `x ^ x = 0`, `x & x = x`, `!!x = x`. So e.g. an adder with a constant
//! carry-in costs no AND for it.

pub mod aes;

use crate::analysis::levelize;
use crate::ir::{Circuit, Gate, Layout, WireId};

/// Marker for "not known" in the per-wire tables.
const NONE: WireId = WireId::MAX;

/// Builds a circuit gate by gate. See the [module docs](self).
#[derive(Clone, Debug)]
pub struct Builder {
    input_widths: Vec<u32>,
    gates: Vec<Gate>,
    next: WireId,
    /// Per wire: 0 = not a known constant, 1 = constant 0, 2 = constant 1.
    constant_value: Vec<u8>,
    /// The wire holding each constant, once created.
    constant_wire: [WireId; 2],
    /// Per wire: the wire known to hold its negation, or [`NONE`].
    negation: Vec<WireId>,
    outputs: Vec<Vec<WireId>>,
}

impl Builder {
    /// A builder with input values of the given widths; returns it and each input value's
    /// wires (consecutive, starting at wire 0).
    pub fn new(input_widths: &[u32]) -> (Builder, Vec<Vec<WireId>>) {
        let total: u32 = input_widths.iter().sum();
        let mut start = 0;
        let inputs = input_widths
            .iter()
            .map(|&w| {
                start += w;
                (start - w..start).collect()
            })
            .collect();
        let builder = Builder {
            input_widths: input_widths.to_vec(),
            gates: Vec::new(),
            next: total,
            constant_value: vec![0; total as usize],
            constant_wire: [NONE; 2],
            negation: vec![NONE; total as usize],
            outputs: Vec::new(),
        };
        (builder, inputs)
    }

    fn push(&mut self, gate: Gate) -> WireId {
        debug_assert_eq!(gate.out, self.next);
        self.gates.push(gate);
        self.constant_value.push(0);
        self.negation.push(NONE);
        self.next = self
            .next
            .checked_add(1)
            .expect("builder: too many wires for 32-bit ids");
        gate.out
    }

    /// The constant a wire is known to hold, if any.
    pub fn known(&self, w: WireId) -> Option<bool> {
        match self.constant_value[w as usize] {
            1 => Some(false),
            2 => Some(true),
            _ => None,
        }
    }

    /// A wire holding `value` (one shared constant gate per value).
    pub fn constant(&mut self, value: bool) -> WireId {
        let slot = value as usize;
        if self.constant_wire[slot] == NONE {
            let w = self.push(Gate::constant(value, self.next));
            self.constant_value[w as usize] = 1 + value as u8;
            self.constant_wire[slot] = w;
        }
        self.constant_wire[slot]
    }

    /// `a ^ b`.
    pub fn xor(&mut self, a: WireId, b: WireId) -> WireId {
        if a == b {
            return self.constant(false);
        }
        match (self.known(a), self.known(b)) {
            (Some(x), Some(y)) => self.constant(x ^ y),
            (Some(false), None) => b,
            (Some(true), None) => self.not(b),
            (None, Some(false)) => a,
            (None, Some(true)) => self.not(a),
            (None, None) => {
                if self.negation[a as usize] == b {
                    return self.constant(true);
                }
                self.push(Gate::xor(a, b, self.next))
            }
        }
    }

    /// `a & b`.
    pub fn and(&mut self, a: WireId, b: WireId) -> WireId {
        if a == b {
            return a;
        }
        match (self.known(a), self.known(b)) {
            (Some(false), _) | (_, Some(false)) => self.constant(false),
            (Some(true), _) => b,
            (_, Some(true)) => a,
            (None, None) => {
                if self.negation[a as usize] == b {
                    return self.constant(false);
                }
                self.push(Gate::and(a, b, self.next))
            }
        }
    }

    /// `!a` (reuses an existing negation of `a`).
    pub fn not(&mut self, a: WireId) -> WireId {
        if let Some(x) = self.known(a) {
            return self.constant(!x);
        }
        let existing = self.negation[a as usize];
        if existing != NONE {
            return existing;
        }
        let w = self.push(Gate::inv(a, self.next));
        self.negation[a as usize] = w;
        self.negation[w as usize] = a;
        w
    }

    /// `a | b` (one AND).
    pub fn or(&mut self, a: WireId, b: WireId) -> WireId {
        let (na, nb) = (self.not(a), self.not(b));
        let both_zero = self.and(na, nb);
        self.not(both_zero)
    }

    /// An explicit copy of `a` into a new wire (a Bristol `EQW`).
    pub fn copy(&mut self, a: WireId) -> WireId {
        let w = self.push(Gate::copy(a, self.next));
        self.constant_value[w as usize] = self.constant_value[a as usize];
        w
    }

    /// Adds an output value made of these wires (index 0 = the value's first wire). Inputs,
    /// constants and repeated wires are fine.
    pub fn output(&mut self, wires: &[WireId]) {
        assert!(
            wires.iter().all(|&w| w < self.next),
            "builder: output names a wire that does not exist"
        );
        self.outputs.push(wires.to_vec());
    }

    /// Gates added so far (before dead-gate removal).
    pub fn gate_count(&self) -> usize {
        self.gates.len()
    }

    /// The circuit: gates that cannot reach an output are dropped, wires renumbered densely
    /// (inputs keep `0..n_in`), and the result put into AND-level order with
    /// [`levelize`].
    pub fn finish(self) -> Circuit {
        let n_in: u32 = self.input_widths.iter().sum();
        let mut needed = vec![false; self.next as usize];
        for w in self.outputs.iter().flatten() {
            needed[*w as usize] = true;
        }
        for g in self.gates.iter().rev() {
            if needed[g.out as usize] {
                for &i in g.inputs() {
                    needed[i as usize] = true;
                }
            }
        }
        let mut new_id: Vec<WireId> = (0..self.next).collect();
        let mut next = n_in;
        let mut gates = Vec::new();
        for g in &self.gates {
            if !needed[g.out as usize] {
                continue;
            }
            let mut ng = *g;
            match g.op {
                crate::ir::Op::Xor | crate::ir::Op::And => {
                    ng.a = new_id[g.a as usize];
                    ng.b = new_id[g.b as usize];
                }
                crate::ir::Op::Inv | crate::ir::Op::Copy => ng.a = new_id[g.a as usize],
                crate::ir::Op::Const => {}
            }
            new_id[g.out as usize] = next;
            ng.out = next;
            next += 1;
            gates.push(ng);
        }
        let circuit = Circuit {
            layout: Layout {
                num_wires: next,
                input_widths: self.input_widths,
                output_widths: self.outputs.iter().map(|o| o.len() as u32).collect(),
                output_wires: self
                    .outputs
                    .iter()
                    .flatten()
                    .map(|&w| new_id[w as usize])
                    .collect(),
            },
            gates,
        };
        levelize(&circuit).expect("builder circuits are in single-assignment form")
    }

    // ---- Word-level blocks (little-endian bit vectors) ----

    /// The bits of `value` as constant wires, `width` of them, least significant first.
    pub fn constant_word(&mut self, value: u128, width: u32) -> Vec<WireId> {
        (0..width)
            .map(|i| self.constant(i < 128 && (value >> i) & 1 == 1))
            .collect()
    }

    /// Bitwise `a ^ b`.
    pub fn xor_word(&mut self, a: &[WireId], b: &[WireId]) -> Vec<WireId> {
        assert_eq!(a.len(), b.len(), "xor_word: widths differ");
        a.iter().zip(b).map(|(&x, &y)| self.xor(x, y)).collect()
    }

    /// Bitwise `a & b`.
    pub fn and_word(&mut self, a: &[WireId], b: &[WireId]) -> Vec<WireId> {
        assert_eq!(a.len(), b.len(), "and_word: widths differ");
        a.iter().zip(b).map(|(&x, &y)| self.and(x, y)).collect()
    }

    /// Bitwise `!a`.
    pub fn not_word(&mut self, a: &[WireId]) -> Vec<WireId> {
        a.iter().map(|&x| self.not(x)).collect()
    }

    /// One full-adder carry: `maj(a, b, c) = c ^ ((a ^ c) & (b ^ c))`, one AND.
    fn carry(&mut self, a: WireId, b: WireId, c: WireId) -> WireId {
        let ac = self.xor(a, c);
        let bc = self.xor(b, c);
        let t = self.and(ac, bc);
        self.xor(c, t)
    }

    /// `a + b + carry_in` with the carry out: `n` ANDs for `n`-bit words.
    pub fn add_with_carry(
        &mut self,
        a: &[WireId],
        b: &[WireId],
        carry_in: WireId,
    ) -> (Vec<WireId>, WireId) {
        assert_eq!(a.len(), b.len(), "add: widths differ");
        let mut c = carry_in;
        let mut sum = Vec::with_capacity(a.len());
        for (&x, &y) in a.iter().zip(b) {
            let xy = self.xor(x, y);
            sum.push(self.xor(xy, c));
            c = self.carry(x, y, c);
        }
        (sum, c)
    }

    /// `(a + b) mod 2^n`: `n - 1` ANDs (ripple carry, no carry out).
    pub fn add(&mut self, a: &[WireId], b: &[WireId]) -> Vec<WireId> {
        let zero = self.constant(false);
        self.add_mod(a, b, zero)
    }

    /// `(a + b + carry_in) mod 2^n` without computing the final carry: `n - 1` ANDs, plus
    /// none for a constant carry-in.
    fn add_mod(&mut self, a: &[WireId], b: &[WireId], carry_in: WireId) -> Vec<WireId> {
        assert_eq!(a.len(), b.len(), "add: widths differ");
        let n = a.len();
        let mut c = carry_in;
        let mut sum = Vec::with_capacity(n);
        for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
            let xy = self.xor(x, y);
            sum.push(self.xor(xy, c));
            if i + 1 < n {
                c = self.carry(x, y, c);
            }
        }
        sum
    }

    /// `(a - b) mod 2^n` as `a + !b + 1`: `n - 1` ANDs.
    pub fn sub(&mut self, a: &[WireId], b: &[WireId]) -> Vec<WireId> {
        let nb = self.not_word(b);
        let one = self.constant(true);
        self.add_mod(a, &nb, one)
    }

    /// Whether `a >= b` (unsigned): the carry out of `a + !b + 1`; `n` ANDs.
    fn ge_unsigned(&mut self, a: &[WireId], b: &[WireId]) -> WireId {
        assert_eq!(a.len(), b.len(), "compare: widths differ");
        let mut c = self.constant(true);
        for (&x, &y) in a.iter().zip(b) {
            let ny = self.not(y);
            c = self.carry(x, ny, c);
        }
        c
    }

    /// `a < b` for unsigned words: `n` ANDs.
    pub fn lt_unsigned(&mut self, a: &[WireId], b: &[WireId]) -> WireId {
        let ge = self.ge_unsigned(a, b);
        self.not(ge)
    }

    /// `a > b` for unsigned words: `n` ANDs.
    pub fn gt_unsigned(&mut self, a: &[WireId], b: &[WireId]) -> WireId {
        self.lt_unsigned(b, a)
    }

    /// `a < b` for two's complement words: `n` ANDs (unsigned comparison with the sign bits
    /// flipped).
    pub fn lt_signed(&mut self, a: &[WireId], b: &[WireId]) -> WireId {
        assert_eq!(a.len(), b.len(), "compare: widths differ");
        if a.is_empty() {
            return self.constant(false);
        }
        let flip = |this: &mut Self, v: &[WireId]| -> Vec<WireId> {
            let mut v = v.to_vec();
            let top = v.len() - 1;
            v[top] = this.not(v[top]);
            v
        };
        let (fa, fb) = (flip(self, a), flip(self, b));
        self.lt_unsigned(&fa, &fb)
    }

    /// `a == b`: `n - 1` ANDs in a balanced tree (depth `ceil(log2 n)`).
    pub fn eq(&mut self, a: &[WireId], b: &[WireId]) -> WireId {
        assert_eq!(a.len(), b.len(), "eq: widths differ");
        let mut level: Vec<WireId> = a
            .iter()
            .zip(b)
            .map(|(&x, &y)| {
                let d = self.xor(x, y);
                self.not(d)
            })
            .collect();
        if level.is_empty() {
            return self.constant(true);
        }
        while level.len() > 1 {
            level = level
                .chunks(2)
                .map(|pair| match *pair {
                    [x, y] => self.and(x, y),
                    [x] => x,
                    _ => unreachable!("chunks(2) yields one or two"),
                })
                .collect();
        }
        level[0]
    }

    /// `sel ? if_true : if_false`, bitwise: `n` ANDs.
    pub fn mux(&mut self, sel: WireId, if_true: &[WireId], if_false: &[WireId]) -> Vec<WireId> {
        assert_eq!(if_true.len(), if_false.len(), "mux: widths differ");
        if_true
            .iter()
            .zip(if_false)
            .map(|(&t, &f)| {
                let d = self.xor(t, f);
                let pick = self.and(sel, d);
                self.xor(f, pick)
            })
            .collect()
    }
}

/// Yao's millionaires' problem: input 0 = A's wealth, input 1 = B's wealth (`bits` bits
/// each, unsigned, lsb0); one output bit, 1 iff A is richer. `bits` ANDs.
pub fn millionaires_circuit(bits: u32) -> Circuit {
    let (mut b, inputs) = Builder::new(&[bits, bits]);
    let richer = b.gt_unsigned(&inputs[0], &inputs[1]);
    b.output(&[richer]);
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats;
    use crate::eval::eval_bitsliced;
    use crate::generate::SplitMix64;

    /// Evaluates a two-input circuit on 64 random (a, b) pairs of `width` bits; returns the
    /// pairs and each lane's output value (lsb0).
    fn run(c: &Circuit, width: u32, seed: u64) -> Vec<(u64, u64, u128)> {
        let mut rng = SplitMix64::new(seed);
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        let mut pairs: Vec<(u64, u64)> = (0..64)
            .map(|_| (rng.next_u64() & mask, rng.next_u64() & mask))
            .collect();
        // Edge cases in the first lanes.
        pairs[0] = (0, 0);
        pairs[1] = (mask, mask);
        pairs[2] = (mask, 0);
        pairs[3] = (0, mask);
        pairs[4] = (pairs[5].0, pairs[5].0);
        let mut lanes = vec![0u64; 2 * width as usize];
        for (k, &(a, b)) in pairs.iter().enumerate() {
            for i in 0..width as usize {
                lanes[i] |= ((a >> i) & 1) << k;
                lanes[width as usize + i] |= ((b >> i) & 1) << k;
            }
        }
        let out = eval_bitsliced(c, &lanes);
        pairs
            .iter()
            .enumerate()
            .map(|(k, &(a, b))| {
                let v = out
                    .iter()
                    .enumerate()
                    .map(|(i, &w)| (((w >> k) & 1) as u128) << i)
                    .sum();
                (a, b, v)
            })
            .collect()
    }

    fn binary(
        width: u32,
        f: impl Fn(&mut Builder, &[WireId], &[WireId]) -> Vec<WireId>,
    ) -> Circuit {
        let (mut b, inputs) = Builder::new(&[width, width]);
        let out = f(&mut b, &inputs[0], &inputs[1]);
        b.output(&out);
        b.finish()
    }

    fn sign_extend(x: u64, width: u32) -> i64 {
        ((x << (64 - width)) as i64) >> (64 - width)
    }

    #[test]
    fn word_blocks_match_integer_arithmetic() {
        for width in [1u32, 2, 3, 7, 8, 13, 32, 63, 64] {
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            let add = binary(width, |b, x, y| b.add(x, y));
            assert_eq!(add.and_count(), width as u64 - 1, "add ANDs");
            let sub = binary(width, |b, x, y| b.sub(x, y));
            assert_eq!(sub.and_count(), width as u64 - 1, "sub ANDs");
            let ltu = binary(width, |b, x, y| vec![b.lt_unsigned(x, y)]);
            assert_eq!(ltu.and_count(), width as u64);
            let gtu = binary(width, |b, x, y| vec![b.gt_unsigned(x, y)]);
            let lts = binary(width, |b, x, y| vec![b.lt_signed(x, y)]);
            assert_eq!(lts.and_count(), width as u64);
            let eq = binary(width, |b, x, y| vec![b.eq(x, y)]);
            assert_eq!(eq.and_count(), width as u64 - 1);
            assert_eq!(
                stats(&eq).and_depth,
                (32 - (width - 1).leading_zeros()) as u64
            );
            let mux = binary(width, |b, x, y| {
                let sel = x[0];
                b.mux(sel, x, y)
            });
            let adc = binary(width, |b, x, y| {
                let cin = b.constant(true);
                let (mut s, c) = b.add_with_carry(x, y, cin);
                s.push(c);
                s
            });
            for seed in 0..4 {
                for (a, b, v) in run(&add, width, seed) {
                    assert_eq!(
                        v,
                        (a.wrapping_add(b) & mask) as u128,
                        "add {a} {b} width {width}"
                    );
                }
                for (a, b, v) in run(&sub, width, seed) {
                    assert_eq!(v, (a.wrapping_sub(b) & mask) as u128, "sub {a} {b}");
                }
                for (a, b, v) in run(&ltu, width, seed) {
                    assert_eq!(v, (a < b) as u128, "lt_unsigned {a} {b}");
                }
                for (a, b, v) in run(&gtu, width, seed) {
                    assert_eq!(v, (a > b) as u128, "gt_unsigned {a} {b}");
                }
                for (a, b, v) in run(&lts, width, seed) {
                    let want = sign_extend(a, width) < sign_extend(b, width);
                    assert_eq!(v, want as u128, "lt_signed {a} {b} width {width}");
                }
                for (a, b, v) in run(&eq, width, seed) {
                    assert_eq!(v, (a == b) as u128, "eq {a} {b}");
                }
                for (a, b, v) in run(&mux, width, seed) {
                    assert_eq!(v, if a & 1 == 1 { a } else { b } as u128, "mux {a} {b}");
                }
                for (a, b, v) in run(&adc, width, seed) {
                    let full = a as u128 + b as u128 + 1;
                    assert_eq!(v, full & ((1u128 << (width + 1)) - 1), "adc {a} {b}");
                }
            }
        }
    }

    #[test]
    fn constants_fold_without_ands() {
        let (mut b, inputs) = Builder::new(&[8]);
        let x = &inputs[0];
        let zero = b.constant(false);
        let one = b.constant(true);
        assert_eq!(b.xor(x[0], zero), x[0]);
        assert_eq!(b.and(x[0], one), x[0]);
        assert_eq!(b.and(x[0], zero), zero);
        assert_eq!(b.xor(x[1], x[1]), zero);
        assert_eq!(b.and(x[1], x[1]), x[1]);
        let nx = b.not(x[2]);
        assert_eq!(b.not(nx), x[2]);
        assert_eq!(b.not(x[2]), nx);
        assert_eq!(b.xor(x[2], nx), one);
        assert_eq!(b.and(nx, x[2]), zero);
        assert_eq!(b.xor(x[3], one), b.not(x[3]));
        // Adding a constant costs ANDs only where the constant bits are unknown: none here
        // beyond the carries that depend on x.
        let five = b.constant_word(5, 8);
        let sum = b.add(x, &five);
        b.output(&sum);
        let before = b.gate_count();
        let c = b.finish();
        assert!(c.gates.len() <= before);
        assert!(c.and_count() <= 7);
        let mux_const = {
            let (mut b, inputs) = Builder::new(&[1]);
            let t = b.constant_word(0b1010, 4);
            let f = b.constant_word(0b1010, 4);
            let m = b.mux(inputs[0][0], &t, &f);
            b.output(&m);
            b.finish()
        };
        assert_eq!(mux_const.and_count(), 0);
    }

    #[test]
    fn finish_drops_dead_gates_and_levelizes() {
        let (mut b, inputs) = Builder::new(&[2, 2]);
        let dead = b.and(inputs[0][0], inputs[1][0]);
        let _ = b.xor(dead, inputs[0][1]);
        let live = b.and(inputs[0][1], inputs[1][1]);
        let copied = b.copy(live);
        b.output(&[copied, inputs[0][0]]);
        let c = b.finish();
        assert_eq!(c.gates, vec![Gate::and(1, 3, 4), Gate::copy(4, 5)]);
        assert_eq!(c.layout.num_wires, 6);
        assert_eq!(c.layout.output_wires, vec![5, 0]);
        crate::analysis::validate_ssa(&c).unwrap();
    }

    #[test]
    fn millionaires() {
        for bits in [1u32, 5, 32, 64] {
            let c = millionaires_circuit(bits);
            assert_eq!(c.and_count(), bits as u64);
            assert_eq!(c.layout.input_widths, vec![bits, bits]);
            assert_eq!(c.layout.output_widths, vec![1]);
            for (a, b, v) in run(&c, bits, 77) {
                assert_eq!(v, (a > b) as u128, "{a} > {b}");
            }
        }
    }
}
