//! GMW's setup phase: Beaver multiplication triples (Beaver, CRYPTO 1991) from random OT.
//!
//! A triple is three XOR-shared bits a, b, c with c = a·b. Each AND gate of the online phase
//! consumes one. They depend on neither the inputs nor the circuit, so they can be made
//! before either is known (the seed paper, Demmler et al. CCS 2015, §2.1 and §5: "setup"
//! and "online" phases).
//!
//! One random OT in each direction gives a triple (the construction that ABY uses, from
//! Asharov, Lindell, Schneider, Zohner, CCS 2013, §5.1 "multiplication triples"): with the
//! bit OT in which P is the sender of random bits (m0, m1) and the other party Q chooses
//! with a random bit r and learns m_r, P sets a_P = m0 ⊕ m1 and u_P = m0, Q sets b_Q = r and
//! v_Q = m_r, and then u_P ⊕ v_Q = a_P·b_Q. With the same in the other direction,
//!
//!   c_P = a_P·b_P ⊕ u_P ⊕ v_P   gives   c_A ⊕ c_B = (a_A ⊕ a_B)·(b_A ⊕ b_B).
//!
//! The random bit OTs are IKNP random OTs ([`pgc_ot::IknpSender::send_random`]): the
//! least significant bit of each hashed message. Each party runs one IKNP sender and one
//! IKNP receiver, their base OTs done once in [`TripleGenerator::setup`].
//!
//! Shares are kept bit-packed, 64 triples per `u64` word, in the order the online phase
//! consumes them.

use pgc_crypto::{Block, Prg};
use pgc_net::Channel;
use pgc_ot::{IknpReceiver, IknpSender};

use crate::secret_probe::{self, Secret};
use crate::yao::{Party, ProtocolError};

/// Triples made per OT-extension batch in each direction: one 32 KiB message, so that a
/// batch each way fits any socket's buffers while both parties send at once. The same on
/// both sides, whatever their settings.
const TRIPLES_PER_BATCH: usize = 2048;

/// This party's shares of a run of triples, bit-packed (bit `i % 64` of word `i / 64`).
#[derive(Clone, Debug, Default)]
pub struct Triples {
    a: Vec<u64>,
    b: Vec<u64>,
    c: Vec<u64>,
    /// Triples held (from the start of the words).
    len: usize,
    /// The next unused triple.
    pos: usize,
}

impl Triples {
    /// Triples not yet used.
    pub fn available(&self) -> usize {
        self.len - self.pos
    }

    /// Appends a packed run of `n` triples (words beyond `n` bits are ignored).
    fn append(&mut self, a: &[u64], b: &[u64], c: &[u64], n: usize) {
        self.compact();
        for (dst, src) in [(&mut self.a, a), (&mut self.b, b), (&mut self.c, c)] {
            append_bits(dst, self.len, src, n);
        }
        self.len += n;
    }

    /// Drops the used words at the front so the pool does not grow across refills.
    fn compact(&mut self) {
        let used_words = self.pos / 64;
        if used_words == 0 {
            return;
        }
        for v in [&mut self.a, &mut self.b, &mut self.c] {
            v.drain(..used_words);
        }
        self.pos -= used_words * 64;
        self.len -= used_words * 64;
    }

    /// Takes the next `n` triples into `a`, `b`, `c` (resized to `n.div_ceil(64)` words,
    /// bit 0 of word 0 the first triple, bits beyond `n` zero).
    ///
    /// # Panics
    /// If fewer than `n` are available (the online phase refills first).
    pub fn take(&mut self, n: usize, a: &mut Vec<u64>, b: &mut Vec<u64>, c: &mut Vec<u64>) {
        assert!(n <= self.available(), "triple pool exhausted");
        for (dst, src) in [(a, &self.a), (b, &self.b), (c, &self.c)] {
            extract_bits(src, self.pos, n, dst);
        }
        self.pos += n;
    }
}

/// Appends bits `0..n` of `src` to `dst`, which holds `at` bits.
fn append_bits(dst: &mut Vec<u64>, at: usize, src: &[u64], n: usize) {
    dst.resize((at + n).div_ceil(64), 0);
    let shift = at % 64;
    let first = at / 64;
    for (i, &w) in src.iter().take(n.div_ceil(64)).enumerate() {
        let bits = if (i + 1) * 64 > n {
            w & (u64::MAX >> (64 - (n - i * 64)))
        } else {
            w
        };
        dst[first + i] |= bits << shift;
        if shift != 0 && first + i + 1 < dst.len() {
            dst[first + i + 1] |= bits >> (64 - shift);
        }
    }
}

/// Bits `from..from + n` of `src` into `dst` (bit 0 first), zero beyond `n`.
fn extract_bits(src: &[u64], from: usize, n: usize, dst: &mut Vec<u64>) {
    let words = n.div_ceil(64);
    dst.clear();
    dst.resize(words, 0);
    let shift = from % 64;
    let first = from / 64;
    for (i, d) in dst.iter_mut().enumerate() {
        let lo = src.get(first + i).copied().unwrap_or(0) >> shift;
        let hi = if shift == 0 {
            0
        } else {
            src.get(first + i + 1).copied().unwrap_or(0) << (64 - shift)
        };
        *d = lo | hi;
    }
    if !n.is_multiple_of(64) {
        dst[words - 1] &= u64::MAX >> (64 - n % 64);
    }
}

/// The two OT extensions a party runs to make triples (one as sender, one as receiver).
pub struct TripleGenerator {
    sender: IknpSender,
    receiver: IknpReceiver,
    prg: Prg,
}

impl TripleGenerator {
    /// Base OTs for both extensions: first A is the IKNP sender, then B.
    pub fn setup(
        ch: &mut (impl Channel + ?Sized),
        me: Party,
    ) -> Result<TripleGenerator, ProtocolError> {
        let mut prg = Prg::from_os_entropy();
        // The sender's secret s of IKNP; any uniform value (no free-XOR constraint here).
        let s = prg.random_block();
        secret_probe::note(Secret::Delta, &[s]);
        let (sender, receiver) = match me {
            Party::A => {
                let sender = IknpSender::setup(ch, s, &mut prg)?;
                ch.flush()?;
                let receiver = IknpReceiver::setup(ch, &mut prg)?;
                (sender, receiver)
            }
            Party::B => {
                let receiver = IknpReceiver::setup(ch, &mut prg)?;
                ch.flush()?;
                let sender = IknpSender::setup(ch, s, &mut prg)?;
                (sender, receiver)
            }
        };
        ch.flush()?;
        Ok(TripleGenerator {
            sender,
            receiver,
            prg,
        })
    }

    /// Makes `n` more triples and appends this party's shares to `pool`. Both parties call
    /// this with the same `n` at the same point of the run.
    ///
    /// Both directions run at once, so both ways of the link carry OT traffic: each party
    /// sends its next extension batches as receiver up to `send_ahead_bytes` beyond what it
    /// has consumed of the peer's, then consumes the peer's next batch as sender. Only this
    /// look-ahead differs between parties; the batches (and so every message) are the same
    /// whatever either side's setting.
    pub fn extend(
        &mut self,
        ch: &mut (impl Channel + ?Sized),
        n: usize,
        send_ahead_bytes: usize,
        pool: &mut Triples,
    ) -> Result<(), ProtocolError> {
        let words = n.div_ceil(64);
        let (mut a, mut u) = (vec![0u64; words], vec![0u64; words]);
        let (mut b, mut v) = (vec![0u64; words], vec![0u64; words]);
        let mut choices = Vec::with_capacity(TRIPLES_PER_BATCH);
        let mut bytes = vec![0u8; TRIPLES_PER_BATCH / 8];
        let batches = n.div_ceil(TRIPLES_PER_BATCH);
        // Batches of our own in flight beyond the peer's we have consumed (each is 16 bytes
        // per triple); at least one, so the two sides always make progress.
        let ahead = (send_ahead_bytes / (16 * TRIPLES_PER_BATCH))
            .saturating_sub(1)
            .max(1);
        // Batch k covers triples k·B .. (k+1)·B: whole words, as B is a multiple of 64.
        let range = |k: usize| {
            let start = k * TRIPLES_PER_BATCH;
            let len = (n - start).min(TRIPLES_PER_BATCH);
            (start / 64..(start + len).div_ceil(64), len)
        };
        let (mut chosen_done, mut sent_done) = (0usize, 0usize);
        while sent_done < batches {
            let mut pushed = false;
            while chosen_done < batches && chosen_done < sent_done + ahead {
                // As IKNP receiver: random choices b, learn v = m_b.
                let (at, len) = range(chosen_done);
                let bytes = &mut bytes[..len.div_ceil(8)];
                self.prg.fill_bytes(bytes);
                choices.clear();
                choices.extend((0..len).map(|i| bytes[i / 8] >> (i % 8) & 1 == 1));
                let chosen = self.receiver.receive_random(ch, &choices)?;
                pack_receiver_bits(&choices, &chosen, &mut b[at.clone()], &mut v[at]);
                chosen_done += 1;
                pushed = true;
            }
            if pushed {
                ch.flush()?;
            }
            // As IKNP sender: random (m0, m1), a = m0 ⊕ m1, u = m0.
            let (at, len) = range(sent_done);
            let pairs = self.sender.send_random(ch, len)?;
            pack_sender_bits(&pairs, &mut a[at.clone()], &mut u[at]);
            sent_done += 1;
        }
        ch.flush()?;
        let c: Vec<u64> = (0..words).map(|i| (a[i] & b[i]) ^ u[i] ^ v[i]).collect();
        pool.append(&a, &b, &c, n);
        Ok(())
    }
}

/// From the sender's random pairs: a = lsb(m0) ⊕ lsb(m1) and u = lsb(m0), packed.
fn pack_sender_bits(pairs: &[(Block, Block)], a: &mut [u64], u: &mut [u64]) {
    a.fill(0);
    u.fill(0);
    for (i, (m0, m1)) in pairs.iter().enumerate() {
        let (x0, x1) = (m0.lsb() as u64, m1.lsb() as u64);
        a[i / 64] |= (x0 ^ x1) << (i % 64);
        u[i / 64] |= x0 << (i % 64);
    }
}

/// From the receiver's side: b = the choice r and v = lsb(m_r), packed.
fn pack_receiver_bits(choices: &[bool], chosen: &[Block], b: &mut [u64], v: &mut [u64]) {
    b.fill(0);
    v.fill(0);
    for (i, (&r, m)) in choices.iter().zip(chosen).enumerate() {
        b[i / 64] |= (r as u64) << (i % 64);
        v[i / 64] |= (m.lsb() as u64) << (i % 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgc_net::MemoryChannel;

    fn bits(words: &[u64], n: usize) -> Vec<bool> {
        (0..n).map(|i| words[i / 64] >> (i % 64) & 1 == 1).collect()
    }

    #[test]
    fn bit_runs_append_and_extract_at_any_offset() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut pool = Triples::default();
        let mut reference = Vec::new();
        for n in [1usize, 63, 64, 65, 130, 7, 200] {
            let w: Vec<u64> = (0..n.div_ceil(64)).map(|_| next()).collect();
            pool.append(&w, &w, &w, n);
            reference.extend(bits(&w, n));
        }
        let (mut a, mut b, mut c) = (vec![], vec![], vec![]);
        let mut at = 0;
        for n in [5usize, 64, 1, 100, 129, 0, 31] {
            pool.take(n, &mut a, &mut b, &mut c);
            assert_eq!(bits(&a, n), reference[at..at + n], "take {n} at {at}");
            assert!(n % 64 == 0 || a[n / 64] >> (n % 64) == 0, "zero beyond n");
            at += n;
        }
        // A refill after use keeps the order (and drops used words).
        let w = vec![u64::MAX; 2];
        pool.append(&w, &w, &w, 70);
        reference.extend(vec![true; 70]);
        let rest = pool.available();
        pool.take(rest, &mut a, &mut b, &mut c);
        assert_eq!(bits(&c, rest), reference[at..]);
    }

    #[test]
    fn triples_multiply() {
        let n = 70_000; // more than one batch, not a multiple of 64
        let (mut ca, mut cb) = MemoryChannel::pair();
        let (ta, tb) = std::thread::scope(|s| {
            let h = s.spawn(move || {
                let mut g = TripleGenerator::setup(&mut ca, Party::A).unwrap();
                let mut pool = Triples::default();
                g.extend(&mut ca, n, 64 << 10, &mut pool).unwrap();
                pool
            });
            let mut g = TripleGenerator::setup(&mut cb, Party::B).unwrap();
            let mut pool = Triples::default();
            g.extend(&mut cb, n, 1 << 20, &mut pool).unwrap();
            (h.join().unwrap(), pool)
        });
        let take = |mut t: Triples| {
            let (mut a, mut b, mut c) = (vec![], vec![], vec![]);
            t.take(n, &mut a, &mut b, &mut c);
            (bits(&a, n), bits(&b, n), bits(&c, n))
        };
        let (a0, b0, c0) = take(ta);
        let (a1, b1, c1) = take(tb);
        let mut ones = [0usize; 3];
        for i in 0..n {
            let (a, b, c) = (a0[i] ^ a1[i], b0[i] ^ b1[i], c0[i] ^ c1[i]);
            assert_eq!(c, a & b, "triple {i}");
            ones[0] += a as usize;
            ones[1] += b as usize;
            ones[2] += a0[i] as usize;
        }
        // Uniform bits: far from 0 or n (a bug that fixes a or b would show here).
        for k in ones {
            assert!((n * 45 / 100..n * 55 / 100).contains(&k), "{ones:?}");
        }
    }
}
