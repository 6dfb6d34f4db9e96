//! Cryptographic primitives of pgc: 128-bit blocks, fixed-key AES (AES-NI / VAES-512 with a
//! portable fallback), the tweakable circular-correlation-robust hash used by half-gates and
//! OT extension, and OS-seeded pseudorandom generators.

pub mod block;

pub use block::Block;
