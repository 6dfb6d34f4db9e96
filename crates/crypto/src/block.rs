//! 128-bit blocks: wire labels, AES states, OT messages.

use std::fmt;
use std::ops::{BitAnd, BitAndAssign, BitXor, BitXorAssign};

/// A 128-bit value. Wire labels are blocks; the least significant bit is the
/// point-and-permute bit.
#[derive(Clone, Copy, PartialEq, Eq, Default, Hash, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct Block(pub u128);

impl Block {
    pub const ZERO: Block = Block(0);
    pub const ONES: Block = Block(u128::MAX);

    #[inline(always)]
    pub const fn new(v: u128) -> Block {
        Block(v)
    }
    /// The point-and-permute (colour) bit.
    #[inline(always)]
    pub const fn lsb(self) -> bool {
        self.0 & 1 == 1
    }
    #[inline(always)]
    pub const fn from_bytes(b: [u8; 16]) -> Block {
        Block(u128::from_le_bytes(b))
    }
    #[inline(always)]
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0.to_le_bytes()
    }
    /// `self` if `bit`, else zero, without a branch.
    #[inline(always)]
    pub const fn select(self, bit: bool) -> Block {
        Block(self.0 & (bit as u128).wrapping_neg())
    }
    /// View a slice of blocks as bytes (little-endian per block on x86-64).
    pub fn slice_as_bytes(blocks: &[Block]) -> &[u8] {
        bytemuck::cast_slice(blocks)
    }
    pub fn slice_as_bytes_mut(blocks: &mut [Block]) -> &mut [u8] {
        bytemuck::cast_slice_mut(blocks)
    }
    /// Constant-time equality (for comparing labels or MACs that a peer could probe).
    pub fn ct_eq(&self, other: &Block) -> bool {
        let d = self.0 ^ other.0;
        let folded = (d as u64) | ((d >> 64) as u64);
        // The OR-fold and the final comparison on a single word take the same time for
        // every input.
        std::hint::black_box(folded) == 0
    }
}

impl BitXor for Block {
    type Output = Block;
    #[inline(always)]
    fn bitxor(self, rhs: Block) -> Block {
        Block(self.0 ^ rhs.0)
    }
}
impl BitXorAssign for Block {
    #[inline(always)]
    fn bitxor_assign(&mut self, rhs: Block) {
        self.0 ^= rhs.0
    }
}
impl BitAnd for Block {
    type Output = Block;
    #[inline(always)]
    fn bitand(self, rhs: Block) -> Block {
        Block(self.0 & rhs.0)
    }
}
impl BitAndAssign for Block {
    #[inline(always)]
    fn bitand_assign(&mut self, rhs: Block) {
        self.0 &= rhs.0
    }
}

impl fmt::Debug for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Block({:032x})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_and_lsb() {
        let b = Block(0xdead_beef);
        assert_eq!(b.select(true), b);
        assert_eq!(b.select(false), Block::ZERO);
        assert!(b.lsb());
        assert!(!Block(2).lsb());
        assert!(b.ct_eq(&Block(0xdead_beef)));
        assert!(!b.ct_eq(&Block(0xdead_beef | 1 << 100)));
    }
}
