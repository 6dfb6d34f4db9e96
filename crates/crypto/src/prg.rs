//! Pseudorandom generators: AES-128 in counter mode, keyed from the operating system's
//! entropy source (or from a seed, where both parties or a test must agree).

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
        self.counter += 1;
        b
    }

    pub fn fill_blocks(&mut self, out: &mut [Block]) {
        for b in out.iter_mut() {
            *b = Block(self.counter);
            self.counter += 1;
        }
        self.aes.encrypt_blocks(out);
    }

    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(16) {
            let b = self.random_block().to_bytes();
            chunk.copy_from_slice(&b[..chunk.len()]);
        }
    }

    pub fn random_u64(&mut self) -> u64 {
        self.random_block().0 as u64
    }

    pub fn random_bool(&mut self) -> bool {
        self.random_block().lsb()
    }
}

/// 128 bits from the operating system's entropy source.
pub fn os_random_block() -> Block {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the operating system's random number generator failed");
    Block::from_bytes(b)
}
