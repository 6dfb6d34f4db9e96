//! Tweakable circular-correlation-robust hashing from a fixed-key permutation.
//!
//! Construction (Guo, Katz, Wang, Yu, "Efficient and Secure Multiparty Computation from
//! Fixed-Key Block Ciphers", IEEE S&P 2020): with π fixed-key AES and the linear
//! orthomorphism σ(x_L ‖ x_R) = (x_L ⊕ x_R) ‖ x_L,
//!
//! ```text
//! H(x, i) = π(σ(x) ⊕ i) ⊕ σ(x)
//! ```

use crate::{Aes128, Block};

/// σ(x_L ‖ x_R) = (x_L ⊕ x_R) ‖ x_L, with x_L the high 64 bits.
#[inline(always)]
pub fn sigma(x: Block) -> Block {
    let hi = (x.0 >> 64) as u64;
    let lo = x.0 as u64;
    Block((((hi ^ lo) as u128) << 64) | hi as u128)
}

/// H(x, i) = π(σ(x) ⊕ i) ⊕ σ(x) under a fixed public key.
#[derive(Clone)]
pub struct TccrHash {
    pi: Aes128,
}

impl TccrHash {
    /// A hash whose permutation is AES under the public key `key`. Use distinct keys for
    /// distinct purposes (garbling, OT extension) so their tweak spaces never meet.
    pub fn new(key: Block) -> TccrHash {
        TccrHash {
            pi: Aes128::new(key),
        }
    }

    #[inline]
    pub fn tccr(&self, x: Block, tweak: u64) -> Block {
        let s = sigma(x);
        self.pi.encrypt_block(s ^ Block(tweak as u128)) ^ s
    }

    /// `out[k] = H(xs[k], tweaks[k])` for all k.
    pub fn tccr_batch(&self, xs: &[Block], tweaks: &[u64], out: &mut [Block]) {
        assert_eq!(xs.len(), tweaks.len());
        assert_eq!(xs.len(), out.len());
        for ((o, &x), &t) in out.iter_mut().zip(xs).zip(tweaks) {
            *o = sigma(x) ^ Block(t as u128);
        }
        self.pi.encrypt_blocks(out);
        for (o, &x) in out.iter_mut().zip(xs) {
            *o ^= sigma(x);
        }
    }
}
