//! Cryptographic primitives of pgc: 128-bit blocks, AES-128 (AES-NI / VAES-512 with a
//! portable fallback), the tweakable circular-correlation-robust hash (TMMO) used by
//! half-gates and OT extension, and OS-seeded pseudorandom generators.

pub mod aes;
pub mod block;
pub mod hash;
pub mod prg;

pub use aes::{Aes128, AesKernel};
pub use block::Block;
pub use hash::TccrHash;
pub use prg::{Prg, os_random_block};
