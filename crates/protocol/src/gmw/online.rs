//! GMW's online phase for one party, without IO: XOR shares of every value, free linear
//! gates, and AND gates a level at a time with Beaver triples (the seed paper, Demmler et
//! al. CCS 2015, §2.1; Beaver, CRYPTO 1991).
//!
//! For an AND gate z = x·y with a triple (a, b, c = a·b), each party opens its shares of
//! d = x ⊕ a and e = y ⊕ b; with d and e public,
//!
//!   z_P = c_P ⊕ d·b_P ⊕ e·a_P ⊕ [P = A]·d·e
//!
//! XOR to x·y. A party's opened shares are its own shares masked with its triple shares, which
//! the other party never sees: the messages are uniformly random bits.
//!
//! A level's gates are bit-sliced: their input shares are gathered into 64-bit words and
//! every step after that (masking, opening, combining) runs on whole words, which the
//! compiler turns into the machine's widest vector instructions.
//!
//! Linear gates: XOR of shares; INV and a constant 1 flip A's share only (so the XOR of both
//! flips); copies copy.

use pgc_circuit::Op;

use super::schedule::{AndOp, LinearOp, Schedule};
use super::triples::Triples;
use crate::yao::Party;

/// One party's shares and scratch.
#[derive(Debug)]
pub struct Shares {
    me: Party,
    /// One share bit per value (0 or 1), in the schedule's value numbering.
    values: Vec<u8>,
    /// This party's share of a constant 1 (A holds 1, B holds 0).
    one: u8,
    /// Scratch for the open level: gathered inputs, triple shares, opened bits.
    x: Vec<u64>,
    y: Vec<u64>,
    a: Vec<u64>,
    b: Vec<u64>,
    c: Vec<u64>,
}

impl Shares {
    /// Shares of a circuit with `num_slots` wires, all 0 (a valid sharing of 0).
    pub fn new(me: Party, num_slots: usize) -> Shares {
        Shares {
            me,
            values: vec![0; num_slots],
            one: (me == Party::A) as u8,
            x: Vec::new(),
            y: Vec::new(),
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
        }
    }

    /// This party's share of wire (slot) `w`.
    pub fn get(&self, w: u32) -> bool {
        self.values[w as usize] == 1
    }

    pub fn set(&mut self, w: u32, share: bool) {
        self.values[w as usize] = share as u8;
    }

    /// Makes room for a window's values.
    pub fn begin_window(&mut self, s: &Schedule) {
        if self.values.len() < s.values() {
            self.values.resize(s.values(), 0);
        }
    }

    /// The linear gates of one level.
    pub fn linear(&mut self, ops: &[LinearOp]) {
        for op in ops {
            self.linear_gate(op.op, op.a, op.b, op.out);
        }
    }

    /// One linear gate (XOR, INV, copy or constant; the constant bit rides in `a`).
    #[inline]
    pub fn linear_gate(&mut self, op: Op, a: u32, b: u32, out: u32) {
        let v = &mut self.values;
        v[out as usize] = match op {
            Op::Xor => v[a as usize] ^ v[b as usize],
            Op::Inv => v[a as usize] ^ self.one,
            Op::Copy => v[a as usize],
            Op::Const => (a as u8) & self.one,
            Op::And => unreachable!("AND gates are never run as linear gates"),
        };
    }

    /// Opens a level's AND gates: takes one triple per gate and writes this party's shares
    /// of d then e (each `ands.len()` bits, packed, least significant bit first) to `msg`.
    pub fn open(&mut self, ands: &[AndOp], triples: &mut Triples, msg: &mut Vec<u8>) {
        let n = ands.len();
        triples.take(n, &mut self.a, &mut self.b, &mut self.c);
        let words = n.div_ceil(64);
        self.x.clear();
        self.x.resize(words, 0);
        self.y.clear();
        self.y.resize(words, 0);
        let v = &self.values;
        for (k, chunk) in ands.chunks(64).enumerate() {
            let (mut xw, mut yw) = (0u64, 0u64);
            for (i, g) in chunk.iter().enumerate() {
                xw |= (v[g.a as usize] as u64) << i;
                yw |= (v[g.b as usize] as u64) << i;
            }
            self.x[k] = xw ^ self.a[k];
            self.y[k] = yw ^ self.b[k];
        }
        let bytes = n.div_ceil(8);
        msg.clear();
        msg.reserve(2 * bytes);
        for half in [&self.x, &self.y] {
            let start = msg.len();
            for w in half.iter() {
                msg.extend_from_slice(&w.to_le_bytes());
            }
            msg.truncate(start + bytes);
        }
    }

    /// Closes the level [`open`](Shares::open) opened, with the peer's message (the same
    /// length as ours; the caller checked it).
    pub fn close(&mut self, ands: &[AndOp], peer: &[u8]) {
        let n = ands.len();
        let bytes = n.div_ceil(8);
        debug_assert_eq!(peer.len(), 2 * bytes);
        let is_a = if self.me == Party::A { u64::MAX } else { 0 };
        let word = |half: &[u8], k: usize| {
            let mut w = [0u8; 8];
            let part = &half[(8 * k).min(bytes)..(8 * k + 8).min(bytes)];
            w[..part.len()].copy_from_slice(part);
            u64::from_le_bytes(w)
        };
        let (peer_d, peer_e) = peer.split_at(bytes);
        let v = &mut self.values;
        for (k, chunk) in ands.chunks(64).enumerate() {
            // d and e in the clear: ours (x, y hold our opened shares) ⊕ the peer's.
            let d = self.x[k] ^ word(peer_d, k);
            let e = self.y[k] ^ word(peer_e, k);
            let z = self.c[k] ^ (d & self.b[k]) ^ (e & self.a[k]) ^ (d & e & is_a);
            for (i, g) in chunk.iter().enumerate() {
                v[g.out as usize] = (z >> i & 1) as u8;
            }
        }
    }

    /// Copies the window's last writes back to their slots.
    pub fn end_window(&mut self, s: &Schedule) {
        for &(slot, value) in s.commits() {
            self.values[slot as usize] = self.values[value as usize];
        }
    }
}
