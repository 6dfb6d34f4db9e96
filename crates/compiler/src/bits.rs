//! The bits a variable holds, stored compactly when the variable is large.
//!
//! The compiler keeps one literal per bit of every variable (see [`crate::lower`]). For a
//! large array that is 8 bytes per bit whatever the circuit: a 4096² table of `int` would
//! take 4 GiB. But the bits of large arrays are nearly always of two kinds: constants (a
//! table not yet written, `d[i][0] = i`) or a few consecutive wires followed by constant
//! high bits (a cell written with the outputs of a template call, which are consecutive
//! wires, whose value range left its high bits zero). So a large variable keeps one 8-byte
//! code per 32 bits ("chunk"): a 32-bit constant, or `k` consecutive positive wires from a
//! base wire then constant bits, or (anything else) an index into a pool of chunks kept
//! literal by literal. Reads decode the chunks they touch; writes re-encode them. The
//! representation is exact: every literal written is read back as written, so the circuit
//! is the same as with flat storage.
//!
//! The pool is bounded ([`POOL_MAX_LITS`] literals over all variables): a program whose large
//! arrays hold arbitrary literals is stopped with an error naming the variable's type rather
//! than exhausting memory.

use std::borrow::Cow;
use std::ops::Range;

use pgc_circuit::Lit;

/// Variables of fewer bits are stored flat (one literal per bit).
pub(crate) const PACK_MIN_BITS: usize = 1 << 16;
/// Bits per code of a packed variable.
const CHUNK: usize = 32;
/// The most bits a pointer argument of a template call may cover: the argument is held
/// flat, so a larger region (possible only in a packed variable) is inlined instead.
pub(crate) const ARG_MAX_BITS: usize = 1 << 27;
/// The most literals the pools of all packed variables may hold together (1 GiB), the
/// flat size of the largest object pgc accepted before packing.
pub(crate) const POOL_MAX_LITS: usize = 1 << 27;

/// A run's code: bits 0..32 its base wire, 32..38 its length `k`, 38 the constant after
/// it, 39..42 its stride, 42..62 which of its first 20 bits are complemented, 62..64 the tag.
const TAG_SHIFT: u32 = 62;
const RUN_NEGATED_BITS: usize = 20;
const MAX_STRIDE: u32 = 7;
const TAG_CONST: u64 = 0;
const TAG_RUN: u64 = 1;
const TAG_POOL: u64 = 2;

/// A variable's bits.
#[derive(Clone, Debug)]
pub(crate) enum Bits {
    Flat(Vec<Lit>),
    Packed(Box<Packed>),
}

impl Default for Bits {
    fn default() -> Self {
        Bits::Flat(Vec::new())
    }
}

/// Chunk codes (see the module docs) and the pool of chunks they could not encode.
#[derive(Clone, Debug)]
pub(crate) struct Packed {
    len: usize,
    codes: Vec<u64>,
    /// `CHUNK` literals per pooled chunk.
    pool: Vec<Lit>,
    /// Pool chunks no code refers to any more.
    free: Vec<u32>,
}

impl Bits {
    /// `n` constant-false bits, packed when large (never allocating a literal per bit).
    pub fn zeros(n: usize) -> Bits {
        if n < PACK_MIN_BITS {
            Bits::Flat(vec![Lit::FALSE; n])
        } else {
            Bits::Packed(Box::new(Packed {
                len: n,
                codes: vec![TAG_CONST << TAG_SHIFT; n.div_ceil(CHUNK)],
                pool: Vec::new(),
                free: Vec::new(),
            }))
        }
    }

    /// `bits`, packed when large.
    pub fn from_vec(bits: Vec<Lit>) -> Bits {
        if bits.len() < PACK_MIN_BITS {
            return Bits::Flat(bits);
        }
        let mut b = Bits::zeros(bits.len());
        b.write(0, &bits);
        b
    }

    pub fn len(&self) -> usize {
        match self {
            Bits::Flat(v) => v.len(),
            Bits::Packed(p) => p.len,
        }
    }

    /// Literals held in the pool (0 for flat variables).
    pub fn pooled_lits(&self) -> usize {
        match self {
            Bits::Flat(_) => 0,
            Bits::Packed(p) => p.pool.len() - p.free.len() * CHUNK,
        }
    }

    /// Bits `r`, or `None` if `r` reaches past the end.
    pub fn get(&self, r: Range<usize>) -> Option<Cow<'_, [Lit]>> {
        match self {
            Bits::Flat(v) => v.get(r).map(Cow::Borrowed),
            Bits::Packed(p) => {
                if r.start > r.end || r.end > p.len {
                    return None;
                }
                let mut out = Vec::with_capacity(r.len());
                p.decode_into(r, &mut out);
                Some(Cow::Owned(out))
            }
        }
    }

    /// Bits `r`.
    ///
    /// # Panics
    /// If `r` reaches past the end (as slicing does).
    pub fn slice(&self, r: Range<usize>) -> Cow<'_, [Lit]> {
        let len = self.len();
        self.get(r.clone())
            .unwrap_or_else(|| panic!("bits {r:?} of a variable of {len} bits"))
    }

    /// Appends bits `r` to `out`.
    ///
    /// # Panics
    /// If `r` reaches past the end.
    pub fn extend_into(&self, r: Range<usize>, out: &mut Vec<Lit>) {
        match self {
            Bits::Flat(v) => out.extend_from_slice(&v[r]),
            Bits::Packed(p) => {
                assert!(
                    r.start <= r.end && r.end <= p.len,
                    "bits {r:?} of a variable of {} bits",
                    p.len
                );
                p.decode_into(r, out);
            }
        }
    }

    /// All the bits.
    pub fn all(&self) -> Cow<'_, [Lit]> {
        self.slice(0..self.len())
    }

    pub fn to_vec(&self) -> Vec<Lit> {
        self.all().into_owned()
    }

    /// Overwrites bits `off..off + value.len()`.
    ///
    /// # Panics
    /// If they reach past the end.
    pub fn write(&mut self, off: usize, value: &[Lit]) {
        match self {
            Bits::Flat(v) => v[off..off + value.len()].copy_from_slice(value),
            Bits::Packed(p) => p.write(off, value),
        }
    }
}

impl Packed {
    /// The literals of chunk `c` (only its first `n` are meaningful in a last partial one).
    fn chunk(&self, c: usize) -> [Lit; CHUNK] {
        let code = self.codes[c];
        let payload = code as u32;
        match code >> TAG_SHIFT {
            TAG_CONST => std::array::from_fn(|t| Lit::constant(payload >> t & 1 == 1)),
            TAG_RUN => {
                let k = (code >> 32 & 0x3f) as usize;
                let fill = Lit::constant(code >> 38 & 1 == 1);
                let stride = (code >> 39 & 7) as u32;
                let negated = (code >> 42) as u32 & ((1 << RUN_NEGATED_BITS) - 1);
                std::array::from_fn(|t| {
                    if t < k {
                        let w = Lit::wire(payload + t as u32 * stride);
                        if negated >> t & 1 == 1 { !w } else { w }
                    } else {
                        fill
                    }
                })
            }
            _ => {
                let at = payload as usize * CHUNK;
                self.pool[at..at + CHUNK]
                    .try_into()
                    .expect("a pooled chunk")
            }
        }
    }

    fn decode_into(&self, r: Range<usize>, out: &mut Vec<Lit>) {
        let mut at = r.start;
        while at < r.end {
            let c = at / CHUNK;
            let lo = at % CHUNK;
            let hi = (r.end - c * CHUNK).min(CHUNK);
            out.extend_from_slice(&self.chunk(c)[lo..hi]);
            at = c * CHUNK + hi;
        }
    }

    fn write(&mut self, off: usize, value: &[Lit]) {
        let end = off + value.len();
        assert!(end <= self.len, "bits {off}..{end} of {}", self.len);
        let mut at = off;
        while at < end {
            let c = at / CHUNK;
            let lo = at % CHUNK;
            let hi = (end - c * CHUNK).min(CHUNK);
            let mut lits = self.chunk(c);
            lits[lo..hi].copy_from_slice(&value[at - off..c * CHUNK + hi - off]);
            // Bits past the end of a last partial chunk are never read: make them false
            // so that they do not stop the chunk from being encoded.
            let valid = (self.len - c * CHUNK).min(CHUNK);
            lits[valid..].fill(Lit::FALSE);
            self.encode(c, &lits);
            at = c * CHUNK + hi;
        }
    }

    /// Stores `lits` as chunk `c`.
    fn encode(&mut self, c: usize, lits: &[Lit; CHUNK]) {
        let old = self.codes[c];
        let code = match encode_direct(lits) {
            Some(code) => {
                if old >> TAG_SHIFT == TAG_POOL {
                    self.free.push(old as u32);
                }
                code
            }
            None => {
                let slot = if old >> TAG_SHIFT == TAG_POOL {
                    old as u32
                } else if let Some(s) = self.free.pop() {
                    s
                } else {
                    let s = (self.pool.len() / CHUNK) as u32;
                    self.pool.extend_from_slice(lits);
                    self.codes[c] = TAG_POOL << TAG_SHIFT | s as u64;
                    return;
                };
                let at = slot as usize * CHUNK;
                self.pool[at..at + CHUNK].copy_from_slice(lits);
                TAG_POOL << TAG_SHIFT | slot as u64
            }
        };
        self.codes[c] = code;
    }
}

/// The code of `lits` (at most 32 of them, padded with constant false) if it is constants
/// or a run (see [`encode_direct`]); with the length, it identifies `lits`.
pub(crate) fn pack_word(lits: &[Lit]) -> Option<u64> {
    if lits.len() > CHUNK {
        return None;
    }
    let mut chunk = [Lit::FALSE; CHUNK];
    chunk[..lits.len()].copy_from_slice(lits);
    encode_direct(&chunk)
}

/// The code of a chunk of constants, or of a run of wires `base + t·stride` (the first
/// [`RUN_NEGATED_BITS`] possibly complemented) then constants all equal; `None` for
/// anything else. Outputs of a template call are consecutive wires; a complemented low
/// bit (`x + 1`) and a stride (outputs of calls interleaved) are common too.
fn encode_direct(lits: &[Lit; CHUNK]) -> Option<u64> {
    let k = lits.iter().take_while(|l| l.as_const().is_none()).count();
    if k == 0 {
        let mut v = 0u32;
        for (t, l) in lits.iter().enumerate() {
            v |= (l.as_const()? as u32) << t;
        }
        return Some(TAG_CONST << TAG_SHIFT | v as u64);
    }
    let base = lits[0].wire_id()?;
    let stride = if k == 1 {
        1
    } else {
        lits[1].wire_id()?.checked_sub(base)?
    };
    if !(1..=MAX_STRIDE).contains(&stride) {
        return None;
    }
    base.checked_add((k as u32 - 1) * stride)?;
    let mut negated = 0u64;
    for (t, l) in lits[..k].iter().enumerate() {
        if l.positive() != Lit::wire(base + t as u32 * stride) {
            return None;
        }
        if l.is_negated() {
            if t >= RUN_NEGATED_BITS {
                return None;
            }
            negated |= 1 << t;
        }
    }
    let fill = lits.get(k).copied().unwrap_or(Lit::FALSE);
    if lits[k..].iter().any(|l| *l != fill) {
        return None;
    }
    let fill = fill.as_const().expect("non-wire past the run") as u64;
    Some(
        TAG_RUN << TAG_SHIFT
            | negated << 42
            | (stride as u64) << 39
            | fill << 38
            | (k as u64) << 32
            | base as u64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded generator of literal patterns: constants, runs, negations, repeats.
    fn pattern(seed: u64, n: usize) -> Vec<Lit> {
        let mut s = seed;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let kind = next() % 5;
            let len = (next() % 40) as usize + 1;
            let base = (next() % 1000) as u32;
            let stride = (next() % 9) as u32;
            for t in 0..len.min(n - out.len()) {
                out.push(match kind {
                    0 => Lit::FALSE,
                    1 => Lit::constant(next() & 1 == 1),
                    2 => Lit::wire(base + t as u32 * stride),
                    3 if next() % 3 == 0 => !Lit::wire(base + t as u32),
                    _ => Lit::wire((next() % 5) as u32),
                });
            }
        }
        out
    }

    #[test]
    fn packed_bits_read_back_what_was_written() {
        for seed in 1..40u64 {
            let n = PACK_MIN_BITS + (seed as usize * 37) % 100;
            let mut flat = pattern(seed, n);
            let mut packed = Bits::from_vec(flat.clone());
            assert!(matches!(packed, Bits::Packed(_)));
            assert_eq!(packed.to_vec(), flat);
            for w in 0..200u64 {
                let len = (w * 7 + seed) as usize % 90 + 1;
                let off = (w as usize * 7919 + seed as usize * 104_729) % (n - len);
                let value = pattern(seed * 1000 + w, len);
                flat[off..off + len].copy_from_slice(&value);
                packed.write(off, &value);
                let r = off.saturating_sub(5)..(off + len + 5).min(n);
                assert_eq!(packed.slice(r.clone()).as_ref(), &flat[r]);
            }
            assert_eq!(packed.to_vec(), flat);
            assert!(packed.get(n - 3..n + 1).is_none());
        }
    }

    #[test]
    fn runs_and_constants_take_no_pool() {
        let mut b = Bits::zeros(1 << 20);
        for e in 0..(1 << 15) {
            // Thirteen consecutive wires, then zeros (a narrowed `int` cell).
            let cell: Vec<Lit> = (0..32)
                .map(|t| {
                    if t < 13 {
                        Lit::wire(e * 13 + t)
                    } else {
                        Lit::FALSE
                    }
                })
                .collect();
            b.write(e as usize * 32, &cell);
        }
        // A whole cell of constants (`d[i][0] = 5`).
        let five: Vec<Lit> = (0..32).map(|t| Lit::constant(5 >> t & 1 == 1)).collect();
        b.write(64, &five);
        assert_eq!(b.pooled_lits(), 0);
        // Strides and complemented low bits are runs too.
        let strided: Vec<Lit> = (0..13).map(|t| Lit::wire(500 + 3 * t)).collect();
        b.write(128, &strided);
        b.write(128, &[!Lit::wire(500)]);
        assert_eq!(b.pooled_lits(), 0);
        assert_eq!(
            b.slice(128..130).as_ref(),
            &[!Lit::wire(500), Lit::wire(503)]
        );
        // A literal out of order is pooled, and freed when overwritten with a run.
        b.write(96, &[Lit::wire(7)]);
        assert_eq!(b.pooled_lits(), CHUNK);
        let run: Vec<Lit> = (0..13).map(|t| Lit::wire(200 + t)).collect();
        b.write(96, &run);
        assert_eq!(b.pooled_lits(), 0);
        assert_eq!(b.slice(96..98).as_ref(), &[Lit::wire(200), Lit::wire(201)]);
    }
}
