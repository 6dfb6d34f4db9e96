//! Fixed-key AES-128.
//!
//! This module's public API is what the rest of pgc calls. The reference implementation
//! delegates to the `aes` crate; faster hand-written kernels (AES-NI, VAES-512) may replace
//! the internals as long as they are tested against it.

use crate::Block;
use aes::cipher::{BlockCipherEncrypt, KeyInit};

/// AES-128 under one key, expanded once.
#[derive(Clone)]
pub struct Aes128 {
    cipher: aes::Aes128,
}

impl Aes128 {
    pub fn new(key: Block) -> Aes128 {
        let key = key.to_bytes();
        Aes128 {
            cipher: aes::Aes128::new(&key.into()),
        }
    }

    /// AES of the block's 16 little-endian bytes.
    #[inline]
    pub fn encrypt_block(&self, block: Block) -> Block {
        let mut b = [block];
        self.encrypt_blocks(&mut b);
        b[0]
    }

    /// Encrypts every block in place. Callers should pass many blocks at once (≥ 64): that
    /// is where the wide kernels pay off.
    pub fn encrypt_blocks(&self, blocks: &mut [Block]) {
        // SAFETY: `Block` is a 16-byte `repr(transparent)` u128 and `aes::Block` is a
        // 16-byte array of `u8` (alignment 1), so every `Block` is a valid `aes::Block` and
        // the cast keeps length and lifetime.
        let as_aes: &mut [aes::Block] = unsafe {
            std::slice::from_raw_parts_mut(blocks.as_mut_ptr() as *mut aes::Block, blocks.len())
        };
        self.cipher.encrypt_blocks(as_aes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fips197_appendix_c1() {
        // FIPS-197 C.1: key 000102..0f, plaintext 00112233..ff.
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        let pt: [u8; 16] = core::array::from_fn(|i| (i as u8) * 0x11);
        let ct = Aes128::new(Block::from_bytes(key)).encrypt_block(Block::from_bytes(pt));
        let expect = [
            0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4,
            0xc5, 0x5a,
        ];
        assert_eq!(ct.to_bytes(), expect);
    }
}
