//! Pseudorandom generators: AES-128 in counter mode, keyed from the operating system's
//! entropy source (or from a seed, where both parties or a test must agree).
//!
//! Block k of the stream is AES_seed(k); `fill_blocks` and `fill_bytes` run the wide
//! kernels straight into the caller's buffer.

use crate::aes::AesKernel;
use crate::{Aes128, Block};

/// AES-CTR pseudorandom generator.
pub struct Prg {
    aes: Aes128,
    counter: u128,
}

impl Prg {
    /// A generator keyed with 128 bits from the operating system (`getrandom`).
    pub fn from_os_entropy() -> Prg {
        Prg::from_seed(os_random_block())
    }

    /// A deterministic generator: the same seed gives the same stream.
    pub fn from_seed(seed: Block) -> Prg {
        Prg {
            aes: Aes128::new(seed),
            counter: 0,
        }
    }

    pub fn random_block(&mut self) -> Block {
        let b = self.aes.encrypt_block(Block(self.counter));
        self.counter = self.counter.wrapping_add(1);
        b
    }

    pub fn fill_blocks(&mut self, out: &mut [Block]) {
        self.fill_whole_blocks(Block::slice_as_bytes_mut(out));
    }

    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        let whole = out.len() / 16 * 16;
        let (head, tail) = out.split_at_mut(whole);
        self.fill_whole_blocks(head);
        if !tail.is_empty() {
            let b = self.random_block().to_bytes();
            tail.copy_from_slice(&b[..tail.len()]);
        }
    }

    pub fn random_u64(&mut self) -> u64 {
        self.random_block().0 as u64
    }

    pub fn random_bool(&mut self) -> bool {
        self.random_block().lsb()
    }

    /// A uniformly random integer in `0..bound` (exactly uniform: see [`uniform_below`]).
    /// Panics if `bound` is 0.
    pub fn random_below(&mut self, bound: u64) -> u64 {
        uniform_below(bound, || self.random_u64())
    }

    /// Counter-mode output into `out` (a multiple of 16 bytes), split wherever the counter's
    /// low 64 bits would wrap (the kernels keep the high half fixed within a call).
    fn fill_whole_blocks(&mut self, mut out: &mut [u8]) {
        let kernel = AesKernel::detect();
        while !out.is_empty() {
            let before_wrap = (1u128 << 64) - (self.counter as u64 as u128);
            let blocks = ((out.len() / 16) as u128).min(before_wrap) as usize;
            let (now, rest) = out.split_at_mut(blocks * 16);
            self.aes.counter_bytes(kernel, self.counter, now);
            self.counter = self.counter.wrapping_add(blocks as u128);
            out = rest;
        }
    }
}

/// A uniformly random integer in `0..bound` from uniform 64-bit words `draw()`.
///
/// `x % bound` alone favours the residues below 2^64 mod `bound` (by up to `bound`/2^64);
/// a word below `rejected` = 2^64 mod `bound` is drawn again, which leaves
/// 2^64 − `rejected` accepted words, a multiple of `bound`, so each residue is hit by
/// exactly as many of them. A word is rejected with probability below `bound`/2^64, so for
/// protocol-sized bounds the result equals `x % bound` of the first word all but never
/// (recorded transcripts keep their draws). Panics if `bound` is 0.
pub fn uniform_below(bound: u64, mut draw: impl FnMut() -> u64) -> u64 {
    assert!(bound > 0, "uniform_below: the bound must be positive");
    // (2^64 − bound) mod bound = 2^64 mod bound, in u64 arithmetic.
    let rejected = bound.wrapping_neg() % bound;
    loop {
        let x = draw();
        if x >= rejected {
            return x % bound;
        }
    }
}

/// 128 bits from the operating system's entropy source.
pub fn os_random_block() -> Block {
    #[cfg(fuzzing)]
    if let Some(b) = fuzzing::next_block() {
        return b;
    }
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the operating system's random number generator failed");
    Block::from_bytes(b)
}

/// Replayable "entropy", for fuzzing builds only (`--cfg fuzzing`, which `cargo fuzz`
/// sets; release builds have no such module): a fuzz target replays an honest peer's
/// recorded messages, and the malicious protocols check them against this party's own
/// random choices (the OT-extension check coin, the cut-and-choose check set), so a
/// recorded transcript passes those checks only if this party draws what it drew when the
/// transcript was recorded. [`fuzzing::replay_entropy`] makes [`os_random_block`] (and so
/// [`Prg::from_os_entropy`]) return a fixed stream on the calling thread.
#[cfg(fuzzing)]
pub mod fuzzing {
    use std::cell::RefCell;

    use super::Prg;
    use crate::Block;

    thread_local! {
        static STREAM: RefCell<Option<Prg>> = const { RefCell::new(None) };
    }

    /// From now on, on this thread, [`super::os_random_block`] returns the stream of `seed`
    /// (restarted by each call); `None`: the operating system's entropy again.
    pub fn replay_entropy(seed: Option<u64>) {
        STREAM.with(|s| {
            *s.borrow_mut() = seed.map(|seed| Prg::from_seed(Block(seed as u128 | 1 << 100)))
        });
    }

    pub(super) fn next_block() -> Option<Block> {
        STREAM.with(|s| s.borrow_mut().as_mut().map(Prg::random_block))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stream one block at a time, the definition every fast path must match.
    fn blockwise(seed: Block, start: u128, n: usize) -> Vec<Block> {
        let aes = Aes128::new(seed);
        (0..n as u128)
            .map(|k| aes.encrypt_block(Block(start.wrapping_add(k))))
            .collect()
    }

    #[test]
    fn fill_blocks_and_bytes_follow_the_counter_stream() {
        let seed = Block(0x1234);
        let mut prg = Prg::from_seed(seed);
        let first = prg.random_block();
        let mut blocks = vec![Block::ZERO; 77];
        prg.fill_blocks(&mut blocks);
        let mut bytes = vec![0u8; 16 * 5 + 7];
        prg.fill_bytes(&mut bytes);
        let next = prg.random_block();

        let expect = blockwise(seed, 0, 1 + 77 + 6 + 1);
        assert_eq!(first, expect[0]);
        assert_eq!(blocks, expect[1..78]);
        let expect_bytes: Vec<u8> = expect[78..84].iter().flat_map(|b| b.to_bytes()).collect();
        assert_eq!(bytes, expect_bytes[..bytes.len()]);
        assert_eq!(next, expect[84]);
    }

    #[test]
    fn counter_crossing_the_64_bit_boundary() {
        let seed = Block(99);
        let mut prg = Prg::from_seed(seed);
        let start = (u64::MAX - 10) as u128;
        prg.counter = start;
        let mut blocks = vec![Block::ZERO; 50];
        prg.fill_blocks(&mut blocks);
        assert_eq!(blocks, blockwise(seed, start, 50));
        assert_eq!(prg.counter, start + 50);
    }

    /// `uniform_below` with scripted words: the number of words it took and its result.
    fn scripted_below(bound: u64, words: &[u64]) -> (usize, u64) {
        let mut next = words.iter();
        let mut taken = 0;
        let r = uniform_below(bound, || {
            taken += 1;
            *next
                .next()
                .expect("uniform_below drew more words than scripted")
        });
        (taken, r)
    }

    #[test]
    fn uniform_below_rejects_exactly_the_words_below_2_64_mod_bound() {
        // bound = 2^63 + 1: 2^64 mod bound = 2^63 − 1, so 0 ..= 2^63 − 2 are drawn again
        // (a plain `%` would have returned 0 for the first word).
        let bound = (1u64 << 63) + 1;
        let threshold = (1u64 << 63) - 1;
        assert_eq!(
            scripted_below(bound, &[0, threshold - 1, threshold]),
            (3, threshold)
        );
        assert_eq!(scripted_below(bound, &[u64::MAX]), (1, u64::MAX - bound));
        // bound = 3: 2^64 ≡ 1 (mod 3), so only 0 is rejected; 2^64 − 1 ≡ 0.
        assert_eq!(scripted_below(3, &[0, 0, 1]), (3, 1));
        assert_eq!(scripted_below(3, &[u64::MAX]), (1, 0));
        // Powers of two (and 1) reject nothing.
        assert_eq!(scripted_below(1, &[0]), (1, 0));
        assert_eq!(scripted_below(1 << 40, &[0]), (1, 0));
        assert_eq!(scripted_below(u64::MAX, &[0, u64::MAX]), (2, 0));
    }

    #[test]
    fn uniform_below_counts_each_residue_equally_over_the_accepted_words() {
        // The accepted words are rejected .. 2^64; their count must be a multiple of the
        // bound, so every residue has the same number of preimages.
        for bound in [1u64, 2, 3, 7, 10, 123, 1 << 33, (1 << 63) + 1, u64::MAX] {
            let rejected = bound.wrapping_neg() % bound;
            let accepted = (1u128 << 64) - rejected as u128;
            assert_eq!(accepted % bound as u128, 0, "bound {bound}");
            assert!((rejected as u128) < bound as u128);
        }
    }

    #[test]
    fn random_below_stays_below_its_bound() {
        let mut prg = Prg::from_seed(Block(7));
        for bound in (1..200u64).chain([1 << 63, u64::MAX]) {
            for _ in 0..20 {
                assert!(prg.random_below(bound) < bound);
            }
        }
    }

    #[test]
    fn seeds_give_distinct_streams() {
        let a = Prg::from_seed(Block(1)).random_block();
        let b = Prg::from_seed(Block(2)).random_block();
        assert_ne!(a, b);
        assert_ne!(os_random_block(), os_random_block());
    }
}
