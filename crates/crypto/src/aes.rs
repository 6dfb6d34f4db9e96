//! AES-128 with hand-written x86-64 kernels.
//!
//! Three kernels compute the same function (AES-128 of each block's 16 little-endian bytes,
//! i.e. of [`Block::to_bytes`]):
//!
//! - [`AesKernel::Vaes512`]: AVX-512 + VAES, 4 blocks per `zmm` register and 8 registers
//!   (32 blocks) in flight, so the pipelined AES units never wait on a round's latency;
//! - [`AesKernel::AesNi`]: AES-NI, 8 blocks in flight;
//! - [`AesKernel::Portable`]: the `aes` crate (constant-time bitsliced software, or its own
//!   hardware paths), for CPUs without AES-NI.
//!
//! The fastest kernel the CPU has is detected once per process and cached in an atomic, so
//! a call costs one relaxed load and a jump before the kernel runs. Round keys are expanded
//! with `aeskeygenassist` (constant time, so secret PRG seeds are safe to expand here); on
//! CPUs without AES-NI the `aes` crate expands and encrypts.
//!
//! Besides plain encryption the kernels run fused variants used elsewhere in the crate, so
//! that each block is loaded and stored once: π(x) ⊕ x, counter mode for the PRG, and the
//! two-call tweakable hash π(π(x) ⊕ i) ⊕ π(x) of [`crate::hash`], whose second call starts
//! from the first call's output still in registers. [`wide`] exposes the VAES-512 rounds on
//! registers to callers that fuse the hash with their own arithmetic.

use crate::Block;
use aes::cipher::{BlockCipherEncrypt, KeyInit};
use std::sync::atomic::{AtomicU8, Ordering};

/// An AES implementation this crate can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AesKernel {
    /// AVX-512F + VAES: 32 blocks in flight.
    Vaes512,
    /// AES-NI: 8 blocks in flight.
    AesNi,
    /// The `aes` crate: works on every CPU.
    Portable,
}

const KERNEL_UNKNOWN: u8 = 0;
static DETECTED_KERNEL: AtomicU8 = AtomicU8::new(KERNEL_UNKNOWN);

impl AesKernel {
    fn code(self) -> u8 {
        match self {
            AesKernel::Vaes512 => 1,
            AesKernel::AesNi => 2,
            AesKernel::Portable => 3,
        }
    }

    fn from_code(code: u8) -> Option<AesKernel> {
        match code {
            1 => Some(AesKernel::Vaes512),
            2 => Some(AesKernel::AesNi),
            3 => Some(AesKernel::Portable),
            _ => None,
        }
    }

    /// The fastest kernel this CPU supports (detected once, then cached).
    #[inline]
    pub fn detect() -> AesKernel {
        match AesKernel::from_code(DETECTED_KERNEL.load(Ordering::Relaxed)) {
            Some(kernel) => kernel,
            None => {
                let kernel = AesKernel::available()[0];
                DETECTED_KERNEL.store(kernel.code(), Ordering::Relaxed);
                kernel
            }
        }
    }

    /// Whether this CPU can run the kernel.
    pub fn is_available(self) -> bool {
        match self {
            AesKernel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            AesKernel::AesNi => std::arch::is_x86_feature_detected!("aes"),
            #[cfg(target_arch = "x86_64")]
            AesKernel::Vaes512 => {
                std::arch::is_x86_feature_detected!("aes")
                    && std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("vaes")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// Every kernel this CPU can run, fastest first (never empty: `Portable` is last).
    pub fn available() -> Vec<AesKernel> {
        [AesKernel::Vaes512, AesKernel::AesNi, AesKernel::Portable]
            .into_iter()
            .filter(|k| k.is_available())
            .collect()
    }
}

/// AES-128 under one key, expanded once.
#[derive(Clone)]
pub struct Aes128 {
    /// Round keys 0..=10, for the x86 kernels (all zero when the CPU lacks AES-NI).
    round_keys: [Block; 11],
    key: Block,
    /// The `aes` crate's cipher, built only when it is the detected kernel.
    portable: Option<Box<aes::Aes128>>,
}

impl Aes128 {
    pub fn new(key: Block) -> Aes128 {
        let detected = AesKernel::detect();
        let round_keys = if AesKernel::AesNi.is_available() {
            expand_key(key)
        } else {
            [Block::ZERO; 11]
        };
        let portable = (detected == AesKernel::Portable).then(|| Box::new(portable_cipher(key)));
        Aes128 {
            round_keys,
            key,
            portable,
        }
    }

    /// AES of the block's 16 little-endian bytes.
    #[inline]
    pub fn encrypt_block(&self, block: Block) -> Block {
        let mut b = [block];
        match AesKernel::detect() {
            #[cfg(target_arch = "x86_64")]
            AesKernel::Vaes512 | AesKernel::AesNi => {
                // SAFETY: `detect` returns an x86 kernel only when the CPU has AES-NI.
                unsafe { x86::encrypt_one(&self.round_keys, &mut b[0]) };
            }
            _ => self.run(AesKernel::Portable, &mut InPlace::new(&mut b)),
        }
        b[0]
    }

    /// Encrypts every block in place. Callers should pass many blocks at once (≥ 64): that
    /// is where the wide kernels pay off.
    #[inline]
    pub fn encrypt_blocks(&self, blocks: &mut [Block]) {
        self.run(AesKernel::detect(), &mut InPlace::new(blocks));
    }

    /// [`encrypt_blocks`](Self::encrypt_blocks) with a chosen kernel (for tests and
    /// benchmarks). Panics if the CPU cannot run `kernel`.
    pub fn encrypt_blocks_with(&self, kernel: AesKernel, blocks: &mut [Block]) {
        check_kernel(kernel);
        self.run(kernel, &mut InPlace::new(blocks));
    }

    /// `out[k] = π(inputs[k]) ⊕ inputs[k]` (the Matyas–Meyer–Oseas hash of a fixed-key
    /// permutation), fused into one pass. Panics if the lengths differ.
    pub fn encrypt_blocks_xor(&self, inputs: &[Block], out: &mut [Block]) {
        assert_eq!(
            inputs.len(),
            out.len(),
            "encrypt_blocks_xor: length mismatch"
        );
        self.run(AesKernel::detect(), &mut XorInput::new(inputs, out));
    }

    /// [`encrypt_blocks_xor`](Self::encrypt_blocks_xor) with a chosen kernel.
    pub fn encrypt_blocks_xor_with(&self, kernel: AesKernel, inputs: &[Block], out: &mut [Block]) {
        check_kernel(kernel);
        assert_eq!(
            inputs.len(),
            out.len(),
            "encrypt_blocks_xor: length mismatch"
        );
        self.run(kernel, &mut XorInput::new(inputs, out));
    }

    /// `out[k] = π(π(xs[k]) ⊕ tweaks[k]) ⊕ π(xs[k])` (TMMO, see [`crate::hash`]).
    pub(crate) fn tmmo_blocks(
        &self,
        kernel: AesKernel,
        xs: &[Block],
        tweaks: &[u64],
        out: &mut [Block],
    ) {
        check_kernel(kernel);
        assert_eq!(
            xs.len(),
            tweaks.len(),
            "tccr_batch: xs and tweaks differ in length"
        );
        assert_eq!(
            xs.len(),
            out.len(),
            "tccr_batch: xs and out differ in length"
        );
        self.run_tmmo(kernel, &SliceTweaks::new(xs, tweaks), out);
    }

    /// `out[k] = TMMO(xs[k], first_tweak + k)`.
    pub(crate) fn tmmo_seq_blocks(
        &self,
        kernel: AesKernel,
        xs: &[Block],
        first_tweak: u64,
        out: &mut [Block],
    ) {
        check_kernel(kernel);
        assert_eq!(
            xs.len(),
            out.len(),
            "tccr_batch_seq: xs and out differ in length"
        );
        self.run_tmmo(kernel, &SeqTweaks::new(xs, first_tweak), out);
    }

    /// `out[2k] = TMMO(xs[k], first_tweak + k)`, `out[2k + 1] = TMMO(xs[k] ⊕ offset,
    /// first_tweak + k)`.
    pub(crate) fn tmmo_seq_pair_blocks(
        &self,
        kernel: AesKernel,
        xs: &[Block],
        offset: Block,
        first_tweak: u64,
        out: &mut [Block],
    ) {
        check_kernel(kernel);
        assert_eq!(
            2 * xs.len(),
            out.len(),
            "tccr_batch_seq_pairs: out must hold two blocks per input"
        );
        self.run_tmmo(kernel, &SeqPairs::new(xs, offset, first_tweak), out);
    }

    /// Counter mode: block k of `out` (16 bytes, unaligned) = AES(counter + k). The caller
    /// guarantees that the low 64 bits of the counter do not wrap within the call.
    pub(crate) fn counter_bytes(&self, kernel: AesKernel, counter: u128, out: &mut [u8]) {
        debug_assert!(out.len().is_multiple_of(16));
        let blocks = (out.len() / 16) as u128;
        debug_assert!((counter as u64 as u128) + blocks <= 1u128 << 64);
        self.run(kernel, &mut Counter::new(counter, out));
    }

    #[inline]
    fn run<M: Mode>(&self, kernel: AesKernel, mode: &mut M) {
        match kernel {
            // SAFETY (both arms): the kernel was detected on this CPU or checked with
            // `is_available` by the caller, so the instructions it uses exist; `mode`
            // owns valid pointers for `mode.len()` blocks.
            #[cfg(target_arch = "x86_64")]
            AesKernel::Vaes512 => unsafe { x86::run_vaes(&self.round_keys, mode) },
            #[cfg(target_arch = "x86_64")]
            AesKernel::AesNi => unsafe { x86::run_aesni(&self.round_keys, mode) },
            _ => match &self.portable {
                Some(cipher) => run_portable(cipher, mode),
                None => run_portable(&portable_cipher(self.key), mode),
            },
        }
    }

    /// Runs TMMO over `source` into `out` (`out.len() == source.len()`, checked by callers).
    #[inline]
    fn run_tmmo<S: TmmoSource>(&self, kernel: AesKernel, source: &S, out: &mut [Block]) {
        debug_assert_eq!(source.len(), out.len());
        match kernel {
            // SAFETY (both arms): the kernel was detected on this CPU or checked with
            // `is_available` by the caller; `source` reads only its own slices, `out` holds
            // `source.len()` blocks.
            #[cfg(target_arch = "x86_64")]
            AesKernel::Vaes512 => unsafe { x86::tmmo_vaes(&self.round_keys, source, out) },
            #[cfg(target_arch = "x86_64")]
            AesKernel::AesNi => unsafe { x86::tmmo_aesni(&self.round_keys, source, out) },
            _ => match &self.portable {
                Some(cipher) => tmmo_portable(cipher, source, out),
                None => tmmo_portable(&portable_cipher(self.key), source, out),
            },
        }
    }
}

/// Running a kernel the CPU lacks would execute illegal instructions: refuse loudly.
fn check_kernel(kernel: AesKernel) {
    assert!(
        kernel.is_available(),
        "AES kernel {kernel:?} is not supported by this CPU"
    );
}

fn portable_cipher(key: Block) -> aes::Aes128 {
    aes::Aes128::new(&key.to_bytes().into())
}

/// Expands a key into the 11 round keys of AES-128 (requires AES-NI).
fn expand_key(key: Block) -> [Block; 11] {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the only caller checks `AesKernel::AesNi.is_available()` first.
        unsafe { x86::expand_key(key) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = key;
        unreachable!("AES-NI key expansion on a non-x86 CPU")
    }
}

/// What a kernel does around the cipher for each block: where its input comes from and
/// where its output goes. Block `i` is independent of every other block, so kernels may
/// process them in any grouping. The 1-block methods re-derive in `post` whatever they need
/// from the inputs (a cheap L1 load), as AES-NI's 16 registers have no room to keep it.
///
/// # Safety
/// Implementations own raw pointers valid for their `len()` blocks (inputs and outputs
/// never overlap unless the mode works in place); kernels call each method only with
/// indices below `len()`, and the 4-block ones only with `i % 4 == 0 && i + 4 <= len()`.
unsafe trait Mode {
    fn len(&self) -> usize;
    /// Cipher input of block `i` (portable path).
    fn pre(&self, i: usize) -> Block;
    fn post(&mut self, i: usize, ciphertext: Block);

    #[cfg(target_arch = "x86_64")]
    unsafe fn pre1(&self, i: usize) -> x86::Xmm;
    #[cfg(target_arch = "x86_64")]
    unsafe fn post1(&mut self, i: usize, ciphertext: x86::Xmm);
    /// Blocks `i..i + 4`: the first AES state (input ⊕ round key 0, passed as `k0`) and a
    /// value kept in a register for `post4` (AVX-512 has 32 registers, room for it). Only
    /// inlined into code compiled with AVX-512F.
    #[cfg(target_arch = "x86_64")]
    unsafe fn pre4(&self, i: usize, k0: x86::Zmm) -> (x86::Zmm, x86::Zmm);
    #[cfg(target_arch = "x86_64")]
    unsafe fn post4(&mut self, i: usize, ciphertext: x86::Zmm, kept: x86::Zmm);
}

/// Plain encryption in place.
struct InPlace {
    blocks: *mut Block,
    len: usize,
}

impl InPlace {
    fn new(blocks: &mut [Block]) -> InPlace {
        InPlace {
            blocks: blocks.as_mut_ptr(),
            len: blocks.len(),
        }
    }
}

/// `out = π(x) ⊕ x`.
struct XorInput {
    inputs: *const Block,
    out: *mut Block,
    len: usize,
}

impl XorInput {
    fn new(inputs: &[Block], out: &mut [Block]) -> XorInput {
        debug_assert_eq!(inputs.len(), out.len());
        XorInput {
            inputs: inputs.as_ptr(),
            out: out.as_mut_ptr(),
            len: out.len(),
        }
    }
}
/// `out bytes [16k, 16k + 16) = π(counter + k)`, low 64 bits of the counter never wrapping.
struct Counter {
    counter: u128,
    out: *mut u8,
    len: usize,
}

impl Counter {
    fn new(counter: u128, out: &mut [u8]) -> Counter {
        Counter {
            counter,
            out: out.as_mut_ptr(),
            len: out.len() / 16,
        }
    }
}

// SAFETY (all impls below): each pointer comes from a slice of at least `len` blocks (or
// `16 * len` bytes) borrowed for the life of the mode value, and every access is at an
// index the trait contract keeps below `len`; loads and stores are unaligned throughout.
unsafe impl Mode for InPlace {
    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }
    #[inline(always)]
    fn pre(&self, i: usize) -> Block {
        debug_assert!(i < self.len);
        // SAFETY: see the impl comment.
        unsafe { *self.blocks.add(i) }
    }
    #[inline(always)]
    fn post(&mut self, i: usize, ciphertext: Block) {
        debug_assert!(i < self.len);
        // SAFETY: see the impl comment.
        unsafe { *self.blocks.add(i) = ciphertext }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn pre1(&self, i: usize) -> x86::Xmm {
        unsafe { x86::load1(self.blocks.add(i) as *const u8) }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn post1(&mut self, i: usize, ciphertext: x86::Xmm) {
        unsafe { x86::store1(self.blocks.add(i) as *mut u8, ciphertext) }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn pre4(&self, i: usize, k0: x86::Zmm) -> (x86::Zmm, x86::Zmm) {
        unsafe {
            (
                x86::xor4(x86::load4(self.blocks.add(i) as *const u8), k0),
                k0,
            )
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn post4(&mut self, i: usize, ciphertext: x86::Zmm, _kept: x86::Zmm) {
        unsafe { x86::store4(self.blocks.add(i) as *mut u8, ciphertext) }
    }
}

unsafe impl Mode for XorInput {
    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }
    #[inline(always)]
    fn pre(&self, i: usize) -> Block {
        debug_assert!(i < self.len);
        // SAFETY: see the impl comment.
        unsafe { *self.inputs.add(i) }
    }
    #[inline(always)]
    fn post(&mut self, i: usize, ciphertext: Block) {
        let x = self.pre(i);
        // SAFETY: see the impl comment.
        unsafe { *self.out.add(i) = ciphertext ^ x }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn pre1(&self, i: usize) -> x86::Xmm {
        unsafe { x86::load1(self.inputs.add(i) as *const u8) }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn post1(&mut self, i: usize, ciphertext: x86::Xmm) {
        unsafe {
            x86::store1(
                self.out.add(i) as *mut u8,
                x86::xor1(ciphertext, self.pre1(i)),
            )
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn pre4(&self, i: usize, k0: x86::Zmm) -> (x86::Zmm, x86::Zmm) {
        let x = unsafe { x86::load4(self.inputs.add(i) as *const u8) };
        (unsafe { x86::xor4(x, k0) }, x)
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn post4(&mut self, i: usize, ciphertext: x86::Zmm, kept: x86::Zmm) {
        unsafe { x86::store4(self.out.add(i) as *mut u8, x86::xor4(ciphertext, kept)) }
    }
}

unsafe impl Mode for Counter {
    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }
    #[inline(always)]
    fn pre(&self, i: usize) -> Block {
        Block(self.counter.wrapping_add(i as u128))
    }
    #[inline(always)]
    fn post(&mut self, i: usize, ciphertext: Block) {
        debug_assert!(i < self.len);
        let bytes = ciphertext.to_bytes();
        // SAFETY: see the impl comment (16 bytes at 16 * i < 16 * len).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.out.add(16 * i), 16) }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn pre1(&self, i: usize) -> x86::Xmm {
        unsafe { x86::block1(self.counter.wrapping_add(i as u128)) }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn post1(&mut self, i: usize, ciphertext: x86::Xmm) {
        unsafe { x86::store1(self.out.add(16 * i), ciphertext) }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn pre4(&self, i: usize, k0: x86::Zmm) -> (x86::Zmm, x86::Zmm) {
        // The low 64 bits do not wrap within a call, so the high half stays constant.
        let low = (self.counter as u64).wrapping_add(i as u64);
        let high = (self.counter >> 64) as u64;
        unsafe {
            (
                x86::xor4(x86::low_words4(low, x86::STEPS_0123, high), k0),
                k0,
            )
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn post4(&mut self, i: usize, ciphertext: x86::Zmm, _kept: x86::Zmm) {
        unsafe { x86::store4(self.out.add(16 * i), ciphertext) }
    }
}

/// Runs a mode through the `aes` crate, 64 blocks at a time (its wide paths need ≥ 64).
fn run_portable<M: Mode>(cipher: &aes::Aes128, mode: &mut M) {
    const CHUNK: usize = 64;
    let mut buffer = [aes::Block::default(); CHUNK];
    let n = mode.len();
    let mut start = 0;
    while start < n {
        let count = CHUNK.min(n - start);
        for (j, b) in buffer[..count].iter_mut().enumerate() {
            *b = mode.pre(start + j).to_bytes().into();
        }
        cipher.encrypt_blocks(&mut buffer[..count]);
        for (j, b) in buffer[..count].iter().enumerate() {
            let bytes: [u8; 16] = (*b).into();
            mode.post(start + j, Block::from_bytes(bytes));
        }
        start += count;
    }
}

/// The inputs of a batch of TMMO hashes: block `i` is hashed as
/// `π(π(x(i)) ⊕ tweak(i)) ⊕ π(x(i))`, the tweak in the low 64 bits of its block.
///
/// # Safety
/// Implementations own raw pointers valid for their inputs; kernels call the methods only
/// with `i < len()`, and the 4-block ones only with `i % 4 == 0 && i + 4 <= len()`.
unsafe trait TmmoSource {
    fn len(&self) -> usize;
    fn x(&self, i: usize) -> Block;
    fn tweak(&self, i: usize) -> u64;
    /// Blocks `i..i + 4` of x, and their tweaks (only inlined into AVX-512F code).
    #[cfg(target_arch = "x86_64")]
    unsafe fn x4(&self, i: usize) -> x86::Zmm;
    #[cfg(target_arch = "x86_64")]
    unsafe fn tweak4(&self, i: usize) -> x86::Zmm;
}

/// Inputs and tweaks from two slices.
struct SliceTweaks {
    xs: *const Block,
    tweaks: *const u64,
    len: usize,
}

impl SliceTweaks {
    fn new(xs: &[Block], tweaks: &[u64]) -> SliceTweaks {
        debug_assert_eq!(xs.len(), tweaks.len());
        SliceTweaks {
            xs: xs.as_ptr(),
            tweaks: tweaks.as_ptr(),
            len: xs.len(),
        }
    }
}

/// Inputs from a slice, tweaks `first, first + 1, …` (wrapping) made in registers.
struct SeqTweaks {
    xs: *const Block,
    first_tweak: u64,
    len: usize,
}

impl SeqTweaks {
    fn new(xs: &[Block], first_tweak: u64) -> SeqTweaks {
        SeqTweaks {
            xs: xs.as_ptr(),
            first_tweak,
            len: xs.len(),
        }
    }
}

/// Hash input `i` is `xs[i / 2]`, offset by Δ when `i` is odd, with tweak `first + i / 2`.
struct SeqPairs {
    xs: *const Block,
    offset: Block,
    first_tweak: u64,
    len: usize,
}

impl SeqPairs {
    fn new(xs: &[Block], offset: Block, first_tweak: u64) -> SeqPairs {
        SeqPairs {
            xs: xs.as_ptr(),
            offset,
            first_tweak,
            len: 2 * xs.len(),
        }
    }
}

// SAFETY (all three impls): the pointers come from slices borrowed by the caller for the
// whole kernel call, each with at least as many elements as the indices below reach for
// `i < len` (`SeqPairs`: `i / 2 < xs.len()`; its 4-block read at even `i` reads inputs
// `i / 2` and `i / 2 + 1`, both below `xs.len()` as `i + 4 <= len`).
unsafe impl TmmoSource for SliceTweaks {
    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }
    #[inline(always)]
    fn x(&self, i: usize) -> Block {
        debug_assert!(i < self.len);
        // SAFETY: see the impl comment.
        unsafe { *self.xs.add(i) }
    }
    #[inline(always)]
    fn tweak(&self, i: usize) -> u64 {
        debug_assert!(i < self.len);
        // SAFETY: see the impl comment.
        unsafe { *self.tweaks.add(i) }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn x4(&self, i: usize) -> x86::Zmm {
        unsafe { x86::load4(self.xs.add(i) as *const u8) }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn tweak4(&self, i: usize) -> x86::Zmm {
        unsafe { x86::tweaks4(self.tweaks.add(i)) }
    }
}

unsafe impl TmmoSource for SeqTweaks {
    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }
    #[inline(always)]
    fn x(&self, i: usize) -> Block {
        debug_assert!(i < self.len);
        // SAFETY: see the impl comment.
        unsafe { *self.xs.add(i) }
    }
    #[inline(always)]
    fn tweak(&self, i: usize) -> u64 {
        self.first_tweak.wrapping_add(i as u64)
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn x4(&self, i: usize) -> x86::Zmm {
        unsafe { x86::load4(self.xs.add(i) as *const u8) }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn tweak4(&self, i: usize) -> x86::Zmm {
        unsafe { x86::low_words4(self.tweak(i), x86::STEPS_0123, 0) }
    }
}

unsafe impl TmmoSource for SeqPairs {
    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }
    #[inline(always)]
    fn x(&self, i: usize) -> Block {
        debug_assert!(i < self.len);
        // SAFETY: see the impl comment.
        let x = unsafe { *self.xs.add(i / 2) };
        x ^ self.offset.select(i & 1 == 1)
    }
    #[inline(always)]
    fn tweak(&self, i: usize) -> u64 {
        self.first_tweak.wrapping_add((i / 2) as u64)
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn x4(&self, i: usize) -> x86::Zmm {
        unsafe {
            let pair = x86::load2_twice(self.xs.add(i / 2) as *const u8);
            x86::xor4(pair, x86::odd_lanes4(self.offset))
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn tweak4(&self, i: usize) -> x86::Zmm {
        unsafe { x86::low_words4(self.tweak(i), x86::STEPS_0011, 0) }
    }
}

/// TMMO through the `aes` crate, 64 blocks at a time: both calls of π on the whole chunk.
fn tmmo_portable<S: TmmoSource>(cipher: &aes::Aes128, source: &S, out: &mut [Block]) {
    const CHUNK: usize = 64;
    let to_aes = |b: Block| -> aes::Block { b.to_bytes().into() };
    let from_aes = |b: &aes::Block| -> Block { Block::from_bytes((*b).into()) };
    let mut first = [aes::Block::default(); CHUNK];
    let mut second = [aes::Block::default(); CHUNK];
    for (c, out) in out.chunks_mut(CHUNK).enumerate() {
        let start = c * CHUNK;
        let count = out.len();
        for (j, b) in first[..count].iter_mut().enumerate() {
            *b = to_aes(source.x(start + j));
        }
        cipher.encrypt_blocks(&mut first[..count]);
        for (j, b) in second[..count].iter_mut().enumerate() {
            *b = to_aes(from_aes(&first[j]) ^ Block(source.tweak(start + j) as u128));
        }
        cipher.encrypt_blocks(&mut second[..count]);
        for (j, o) in out.iter_mut().enumerate() {
            *o = from_aes(&second[j]) ^ from_aes(&first[j]);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The AES-NI and VAES kernels. Every function here needs the CPU features named in its
    //! `target_feature` attribute (or, for the `#[inline(always)]` helpers, is only inlined
    //! into functions that have them).

    use super::wide::RoundKeys512;
    use super::{Mode, TmmoSource};
    use crate::Block;
    use std::arch::x86_64::*;

    pub(super) type Xmm = __m128i;
    pub(super) type Zmm = __m512i;

    #[inline(always)]
    pub(super) unsafe fn load1(p: *const u8) -> Xmm {
        // SAFETY: the caller passes `p` valid for reading 16 bytes; unaligned load, SSE2
        // baseline.
        unsafe { _mm_loadu_si128(p as *const __m128i) }
    }
    #[inline(always)]
    pub(super) unsafe fn store1(p: *mut u8, v: Xmm) {
        // SAFETY: the caller passes `p` valid for writing 16 bytes; unaligned store, SSE2
        // baseline.
        unsafe { _mm_storeu_si128(p as *mut __m128i, v) }
    }
    #[inline(always)]
    pub(super) unsafe fn xor1(a: Xmm, b: Xmm) -> Xmm {
        // SAFETY: a register-only SSE2 intrinsic (baseline on x86-64).
        unsafe { _mm_xor_si128(a, b) }
    }
    #[inline(always)]
    pub(super) unsafe fn block1(v: u128) -> Xmm {
        // SAFETY: a register-only SSE2 intrinsic (baseline on x86-64).
        unsafe { _mm_set_epi64x((v >> 64) as i64, v as i64) }
    }
    /// The tweak as a block: its 64 bits in the low half.
    #[inline(always)]
    pub(super) unsafe fn tweak1(t: u64) -> Xmm {
        // SAFETY: a register-only SSE2 intrinsic (baseline on x86-64).
        unsafe { _mm_cvtsi64_si128(t as i64) }
    }
    #[inline(always)]
    pub(super) unsafe fn load4(p: *const u8) -> Zmm {
        // SAFETY: the caller passes `p` valid for reading 64 bytes; unaligned load; AVX-512F
        // per the module doc.
        unsafe { _mm512_loadu_si512(p as *const __m512i) }
    }
    #[inline(always)]
    pub(super) unsafe fn store4(p: *mut u8, v: Zmm) {
        // SAFETY: the caller passes `p` valid for writing 64 bytes; unaligned store; AVX-512F
        // per the module doc.
        unsafe { _mm512_storeu_si512(p as *mut __m512i, v) }
    }
    #[inline(always)]
    pub(super) unsafe fn xor4(a: Zmm, b: Zmm) -> Zmm {
        // SAFETY: a register-only AVX-512F intrinsic (the module doc's feature rule).
        unsafe { _mm512_xor_si512(a, b) }
    }
    /// Four tweaks `t[0..4]` as four blocks (each in the low half of its lane).
    #[inline(always)]
    pub(super) unsafe fn tweaks4(t: *const u64) -> Zmm {
        // SAFETY: the expand-load reads only as many u64s as the mask has bits set (4), which
        // the caller guarantees are readable at `t`; AVX-512F per the module doc.
        unsafe { _mm512_maskz_expandloadu_epi64(0b0101_0101, t as *const i64) }
    }
    /// Blocks `0, 1, 2, 3` and `0, 0, 1, 1` in their low halves, for [`low_words4`].
    pub(super) const STEPS_0123: [i64; 8] = [0, 0, 1, 0, 2, 0, 3, 0];
    pub(super) const STEPS_0011: [i64; 8] = [0, 0, 0, 0, 1, 0, 1, 0];
    /// Four blocks with low halves `base + steps[lane]` (wrapping) and high halves `high`.
    #[inline(always)]
    pub(super) unsafe fn low_words4(base: u64, steps: [i64; 8], high: u64) -> Zmm {
        // SAFETY: loads 64 bytes from the live 8-element `steps` array, then register-only
        // AVX-512F intrinsics (the module doc's feature rule).
        unsafe {
            let steps = _mm512_loadu_si512(steps.as_ptr() as *const __m512i);
            _mm512_mask_add_epi64(
                _mm512_set1_epi64(high as i64),
                0b0101_0101,
                _mm512_set1_epi64(base as i64),
                steps,
            )
        }
    }
    /// `v` in the odd blocks of four, zero in the even ones.
    #[inline(always)]
    pub(super) unsafe fn odd_lanes4(v: Block) -> Zmm {
        // SAFETY: register-only AVX-512F intrinsics (the module doc's feature rule).
        unsafe { _mm512_maskz_broadcast_i32x4(0b1111_0000_1111_0000, block1(v.0)) }
    }
    /// Blocks `p[0], p[0], p[1], p[1]`.
    #[inline(always)]
    pub(super) unsafe fn load2_twice(p: *const u8) -> Zmm {
        // SAFETY: the caller passes `p` valid for reading 32 bytes (two blocks); AVX-512F per
        // the module doc.
        unsafe {
            let two = _mm512_castsi256_si512(_mm256_loadu_si256(p as *const __m256i));
            _mm512_shuffle_i64x2::<0b01_01_00_00>(two, two)
        }
    }
    /// FIPS-197 key expansion with `aeskeygenassist`.
    #[target_feature(enable = "aes")]
    pub(super) unsafe fn expand_key(key: Block) -> [Block; 11] {
        #[inline(always)]
        unsafe fn next(prev: __m128i, assist: __m128i) -> __m128i {
            // SAFETY: register-only SSE2 intrinsics (baseline on x86-64).
            unsafe {
                let t = _mm_shuffle_epi32::<0xff>(assist);
                let mut k = prev;
                k = _mm_xor_si128(k, _mm_slli_si128::<4>(k));
                k = _mm_xor_si128(k, _mm_slli_si128::<4>(k));
                k = _mm_xor_si128(k, _mm_slli_si128::<4>(k));
                _mm_xor_si128(k, t)
            }
        }
        let mut rk = [_mm_setzero_si128(); 11];
        // SAFETY: loads 16 bytes from a live `Block`; intrinsics need only the `aes`
        // feature this function is compiled with.
        unsafe {
            rk[0] = _mm_loadu_si128(&key as *const Block as *const __m128i);
            rk[1] = next(rk[0], _mm_aeskeygenassist_si128::<0x01>(rk[0]));
            rk[2] = next(rk[1], _mm_aeskeygenassist_si128::<0x02>(rk[1]));
            rk[3] = next(rk[2], _mm_aeskeygenassist_si128::<0x04>(rk[2]));
            rk[4] = next(rk[3], _mm_aeskeygenassist_si128::<0x08>(rk[3]));
            rk[5] = next(rk[4], _mm_aeskeygenassist_si128::<0x10>(rk[4]));
            rk[6] = next(rk[5], _mm_aeskeygenassist_si128::<0x20>(rk[5]));
            rk[7] = next(rk[6], _mm_aeskeygenassist_si128::<0x40>(rk[6]));
            rk[8] = next(rk[7], _mm_aeskeygenassist_si128::<0x80>(rk[7]));
            rk[9] = next(rk[8], _mm_aeskeygenassist_si128::<0x1b>(rk[8]));
            rk[10] = next(rk[9], _mm_aeskeygenassist_si128::<0x36>(rk[9]));
        }
        let mut out = [Block::ZERO; 11];
        for (o, k) in out.iter_mut().zip(rk) {
            // SAFETY: stores 16 bytes into a live `Block`.
            unsafe { _mm_storeu_si128(o as *mut Block as *mut __m128i, k) };
        }
        out
    }

    #[inline(always)]
    unsafe fn round_keys1(rk: &[Block; 11]) -> [Xmm; 11] {
        let mut k = [unsafe { _mm_setzero_si128() }; 11];
        for (kr, r) in k.iter_mut().zip(rk) {
            *kr = unsafe { load1(r as *const Block as *const u8) };
        }
        k
    }

    /// One block (for `encrypt_block`).
    #[target_feature(enable = "aes")]
    pub(super) unsafe fn encrypt_one(rk: &[Block; 11], block: &mut Block) {
        unsafe {
            let k = round_keys1(rk);
            let mut s = _mm_xor_si128(load1(block as *const Block as *const u8), k[0]);
            for key in &k[1..10] {
                s = _mm_aesenc_si128(s, *key);
            }
            s = _mm_aesenclast_si128(s, k[10]);
            store1(block as *mut Block as *mut u8, s);
        }
    }

    /// Up to `N` blocks from `start` (fewer when `count < N`), rounds outermost so the
    /// blocks' AES instructions overlap.
    #[inline(always)]
    unsafe fn aesni_group<M: Mode, const N: usize>(
        k: &[Xmm; 11],
        mode: &mut M,
        start: usize,
        count: usize,
    ) {
        unsafe {
            let mut s = [_mm_setzero_si128(); N];
            for (j, sj) in s.iter_mut().enumerate().take(count) {
                *sj = _mm_xor_si128(mode.pre1(start + j), k[0]);
            }
            for key in &k[1..10] {
                for sj in s.iter_mut().take(count) {
                    *sj = _mm_aesenc_si128(*sj, *key);
                }
            }
            for (j, sj) in s.iter().enumerate().take(count) {
                mode.post1(start + j, _mm_aesenclast_si128(*sj, k[10]));
            }
        }
    }

    /// AES-NI kernel: 8 blocks in flight.
    #[target_feature(enable = "aes")]
    pub(super) unsafe fn run_aesni<M: Mode>(rk: &[Block; 11], mode: &mut M) {
        unsafe {
            let k = round_keys1(rk);
            let n = mode.len();
            let mut i = 0;
            while i + 8 <= n {
                aesni_group::<M, 8>(&k, mode, i, 8);
                i += 8;
            }
            if i < n {
                aesni_group::<M, 8>(&k, mode, i, n - i);
            }
        }
    }

    /// VAES-512 kernel: 8 registers of 4 blocks in flight, then single registers, then up
    /// to 3 blocks through AES-NI.
    #[target_feature(enable = "aes,avx512f,vaes")]
    pub(super) unsafe fn run_vaes<M: Mode>(rk: &[Block; 11], mode: &mut M) {
        unsafe {
            let mut k = [_mm512_setzero_si512(); 11];
            for (kr, r) in k.iter_mut().zip(rk) {
                *kr = _mm512_broadcast_i32x4(load1(r as *const Block as *const u8));
            }
            let n = mode.len();
            let mut i = 0;
            while i + 32 <= n {
                let mut s = [_mm512_setzero_si512(); 8];
                let mut kept = [_mm512_setzero_si512(); 8];
                for j in 0..8 {
                    (s[j], kept[j]) = mode.pre4(i + 4 * j, k[0]);
                }
                for key in &k[1..10] {
                    for sj in s.iter_mut() {
                        *sj = _mm512_aesenc_epi128(*sj, *key);
                    }
                }
                for j in 0..8 {
                    mode.post4(i + 4 * j, _mm512_aesenclast_epi128(s[j], k[10]), kept[j]);
                }
                i += 32;
            }
            while i + 4 <= n {
                let (mut s, kept) = mode.pre4(i, k[0]);
                for key in &k[1..10] {
                    s = _mm512_aesenc_epi128(s, *key);
                }
                mode.post4(i, _mm512_aesenclast_epi128(s, k[10]), kept);
                i += 4;
            }
            if i < n {
                let k1 = round_keys1(rk);
                aesni_group::<M, 3>(&k1, mode, i, n - i);
            }
        }
    }

    /// TMMO of up to `N` blocks from `start` (fewer when `count < N`) with AES-NI: the first
    /// call on all of them, then the second, rounds outermost.
    #[inline(always)]
    unsafe fn tmmo_aesni_group<S: TmmoSource, const N: usize>(
        k: &[Xmm; 11],
        source: &S,
        out: *mut Block,
        start: usize,
        count: usize,
    ) {
        unsafe {
            let mut first = [_mm_setzero_si128(); N];
            for (j, s) in first.iter_mut().enumerate().take(count) {
                *s = _mm_xor_si128(block1(source.x(start + j).0), k[0]);
            }
            for key in &k[1..10] {
                for s in first.iter_mut().take(count) {
                    *s = _mm_aesenc_si128(*s, *key);
                }
            }
            let mut second = [_mm_setzero_si128(); N];
            for (j, (s, f)) in second
                .iter_mut()
                .zip(first.iter_mut())
                .enumerate()
                .take(count)
            {
                *f = _mm_aesenclast_si128(*f, k[10]);
                let tweak = tweak1(source.tweak(start + j));
                *s = _mm_xor_si128(_mm_xor_si128(*f, tweak), k[0]);
            }
            for key in &k[1..10] {
                for s in second.iter_mut().take(count) {
                    *s = _mm_aesenc_si128(*s, *key);
                }
            }
            for (j, (s, f)) in second.iter().zip(&first).enumerate().take(count) {
                let h = _mm_xor_si128(_mm_aesenclast_si128(*s, k[10]), *f);
                store1(out.add(start + j) as *mut u8, h);
            }
        }
    }

    /// AES-NI TMMO kernel: 8 blocks in flight.
    #[target_feature(enable = "aes")]
    pub(super) unsafe fn tmmo_aesni<S: TmmoSource>(
        rk: &[Block; 11],
        source: &S,
        out: &mut [Block],
    ) {
        unsafe {
            let k = round_keys1(rk);
            let n = source.len();
            let out = out.as_mut_ptr();
            let mut i = 0;
            while i + 8 <= n {
                tmmo_aesni_group::<S, 8>(&k, source, out, i, 8);
                i += 8;
            }
            if i < n {
                tmmo_aesni_group::<S, 8>(&k, source, out, i, n - i);
            }
        }
    }

    /// VAES-512 TMMO kernel: 8 registers (32 blocks) in flight through both calls of π,
    /// then single registers, then up to 3 blocks through AES-NI.
    #[target_feature(enable = "aes,avx512f,vaes")]
    pub(super) unsafe fn tmmo_vaes<S: TmmoSource>(rk: &[Block; 11], source: &S, out: &mut [Block]) {
        unsafe {
            let keys = RoundKeys512::from_round_keys(rk);
            let n = source.len();
            let out = out.as_mut_ptr();
            let mut i = 0;
            while i + 32 <= n {
                let mut xs = [_mm512_setzero_si512(); 8];
                let mut tweaks = [_mm512_setzero_si512(); 8];
                for (j, (x, t)) in xs.iter_mut().zip(tweaks.iter_mut()).enumerate() {
                    *x = source.x4(i + 4 * j);
                    *t = source.tweak4(i + 4 * j);
                }
                for (j, h) in keys.tmmo(xs, tweaks).into_iter().enumerate() {
                    store4(out.add(i + 4 * j) as *mut u8, h);
                }
                i += 32;
            }
            while i + 4 <= n {
                let [h] = keys.tmmo([source.x4(i)], [source.tweak4(i)]);
                store4(out.add(i) as *mut u8, h);
                i += 4;
            }
            if i < n {
                tmmo_aesni_group::<S, 3>(&round_keys1(rk), source, out, i, n - i);
            }
        }
    }
}

/// VAES building blocks on registers of four blocks ([`wide::RoundKeys512`]) or two
/// ([`wide::RoundKeys256`]), for callers that fuse AES or the TMMO hash with their own
/// arithmetic (the half-gates kernels of `pgc-garble`), keeping everything in registers.
///
/// The functions are `unsafe` and `#[inline(always)]`. Those of `RoundKeys512` need
/// AVX-512F and VAES: call them only after [`AesKernel::Vaes512`]`.is_available()`
/// returned true, from functions compiled with
/// `#[target_feature(enable = "aes,avx512f,vaes")]` (so that the intrinsics inline).
/// Those of `RoundKeys256` need AVX2 and VAES, likewise detected and enabled.
#[cfg(target_arch = "x86_64")]
pub mod wide {
    use super::Aes128;
    use crate::Block;
    use std::arch::asm;
    use std::arch::x86_64::*;

    /// Four blocks: block `j` in bits `128j..128j + 128`, as [`Block`]s lie in memory.
    pub type Zmm = __m512i;

    /// The 11 round keys of an AES-128 key, each broadcast to the four blocks of a register.
    #[derive(Clone, Copy)]
    pub struct RoundKeys512([Zmm; 11]);

    impl RoundKeys512 {
        /// The round keys of `aes`, broadcast.
        ///
        /// # Safety
        /// The CPU must have AVX-512F and VAES (see the module doc).
        #[inline(always)]
        pub unsafe fn new(aes: &Aes128) -> RoundKeys512 {
            // SAFETY: the features `from_round_keys` needs are this function's contract.
            unsafe { RoundKeys512::from_round_keys(&aes.round_keys) }
        }

        #[inline(always)]
        pub(crate) unsafe fn from_round_keys(rk: &[Block; 11]) -> RoundKeys512 {
            // SAFETY: a register-only AVX-512F intrinsic; the caller guarantees the feature (as
            // for `new`).
            let mut k = [unsafe { _mm512_setzero_si512() }; 11];
            for (kr, r) in k.iter_mut().zip(rk) {
                // SAFETY: a `Block` is 16 readable bytes; AVX-512F per the caller.
                *kr = unsafe {
                    _mm512_broadcast_i32x4(_mm_loadu_si128(r as *const Block as *const __m128i))
                };
            }
            RoundKeys512(k)
        }

        /// AES of every block of `N` registers, rounds outermost so that the `N`
        /// independent chains overlap (8 keep the AES unit busy).
        ///
        /// # Safety
        /// AVX-512F and VAES (see the module doc).
        #[inline(always)]
        pub unsafe fn encrypt<const N: usize>(&self, mut blocks: [Zmm; N]) -> [Zmm; N] {
            let k = &self.0;
            unsafe {
                for b in blocks.iter_mut() {
                    *b = _mm512_xor_si512(*b, k[0]);
                }
                for key in &k[1..10] {
                    round(&mut blocks, *key);
                }
                last_round(&mut blocks, k[10]);
            }
            blocks
        }

        /// TMMO of every block, as [`crate::TccrHash::tccr`] computes it when this is the
        /// hash's permutation: `π(π(x) ⊕ t) ⊕ π(x)`, with `tweaks` holding each block's
        /// tweak as a block (the 64-bit tweak in its low half, the high half zero). Both
        /// calls of π run on all `N` registers before the next step, so `N = 8` keeps the
        /// AES unit busy; π(x) stays in registers between them.
        ///
        /// # Safety
        /// AVX-512F and VAES (see the module doc).
        #[inline(always)]
        pub unsafe fn tmmo<const N: usize>(&self, xs: [Zmm; N], tweaks: [Zmm; N]) -> [Zmm; N] {
            let k = &self.0;
            unsafe {
                let first = self.encrypt(xs);
                let mut second = [_mm512_setzero_si512(); N];
                for ((s, f), t) in second.iter_mut().zip(&first).zip(&tweaks) {
                    // π(x) ⊕ tweak ⊕ round key 0 in one instruction.
                    *s = _mm512_ternarylogic_epi64::<0x96>(*f, *t, k[0]);
                }
                for key in &k[1..10] {
                    round(&mut second, *key);
                }
                last_round(&mut second, k[10]);
                for (s, f) in second.iter_mut().zip(&first) {
                    *s = _mm512_xor_si512(*s, *f);
                }
                second
            }
        }
    }

    /// Two blocks, as [`Zmm`] holds four.
    pub type Ymm = __m256i;

    /// The round keys broadcast to the two blocks of a `ymm` register, for VAES on 256-bit
    /// registers. Those run on two ports (`zmm` ones on one), so they suit code that must
    /// stay off 512-bit registers, which would take the second port's vector unit away.
    #[derive(Clone, Copy)]
    pub struct RoundKeys256([Ymm; 11]);

    impl RoundKeys256 {
        /// The round keys of `aes`, broadcast.
        ///
        /// # Safety
        /// The CPU must have AVX2 and VAES (see the module doc).
        #[inline(always)]
        pub unsafe fn new(aes: &Aes128) -> RoundKeys256 {
            let mut k = [unsafe { _mm256_setzero_si256() }; 11];
            for (kr, r) in k.iter_mut().zip(&aes.round_keys) {
                // SAFETY: a `Block` is 16 readable bytes; AVX2 per the caller.
                *kr = unsafe {
                    _mm256_broadcastsi128_si256(_mm_loadu_si128(
                        r as *const Block as *const __m128i,
                    ))
                };
            }
            RoundKeys256(k)
        }

        /// TMMO of every block, as [`RoundKeys512::tmmo`].
        ///
        /// # Safety
        /// AVX2 and VAES.
        #[inline(always)]
        pub unsafe fn tmmo<const N: usize>(&self, xs: [Ymm; N], tweaks: [Ymm; N]) -> [Ymm; N] {
            let k = &self.0;
            unsafe {
                let mut first = xs;
                for b in first.iter_mut() {
                    *b = _mm256_xor_si256(*b, k[0]);
                }
                for key in &k[1..10] {
                    round256(&mut first, *key);
                }
                last_round256(&mut first, k[10]);
                let mut second = [_mm256_setzero_si256(); N];
                for ((s, f), t) in second.iter_mut().zip(&first).zip(&tweaks) {
                    *s = _mm256_xor_si256(_mm256_xor_si256(*f, *t), k[0]);
                }
                for key in &k[1..10] {
                    round256(&mut second, *key);
                }
                last_round256(&mut second, k[10]);
                for (s, f) in second.iter_mut().zip(&first) {
                    *s = _mm256_xor_si256(*s, *f);
                }
                second
            }
        }
    }

    /// [`round`] on `ymm` registers.
    #[inline]
    #[target_feature(enable = "avx2,vaes")]
    unsafe fn round256<const N: usize>(blocks: &mut [Ymm; N], key: Ymm) {
        for b in blocks.iter_mut() {
            // SAFETY: as in `round`.
            unsafe {
                asm!(
                    "vaesenc {b}, {b}, {k}",
                    b = inout(ymm_reg) *b,
                    k = in(ymm_reg) key,
                    options(nomem, nostack, preserves_flags)
                )
            };
        }
    }

    /// [`last_round`] on `ymm` registers.
    #[inline]
    #[target_feature(enable = "avx2,vaes")]
    unsafe fn last_round256<const N: usize>(blocks: &mut [Ymm; N], key: Ymm) {
        for b in blocks.iter_mut() {
            // SAFETY: as in `round`.
            unsafe {
                asm!(
                    "vaesenclast {b}, {b}, {k}",
                    b = inout(ymm_reg) *b,
                    k = in(ymm_reg) key,
                    options(nomem, nostack, preserves_flags)
                )
            };
        }
    }

    /// One AES round on every register. Each instruction is its own `asm!` block: the
    /// compiler keeps them in this order (rounds outermost), where it would otherwise run
    /// each register's chain to the end to save registers (measured: 2 chains in flight
    /// instead of 8), leaving the AES unit waiting on round latency.
    #[inline]
    #[target_feature(enable = "avx512f,vaes")]
    unsafe fn round<const N: usize>(blocks: &mut [Zmm; N], key: Zmm) {
        for b in blocks.iter_mut() {
            // SAFETY: a register-only instruction this function's features provide.
            unsafe {
                asm!(
                    "vaesenc {b}, {b}, {k}",
                    b = inout(zmm_reg) *b,
                    k = in(zmm_reg) key,
                    options(nomem, nostack, preserves_flags)
                )
            };
        }
    }

    /// The last AES round on every register (as [`round`]).
    #[inline]
    #[target_feature(enable = "avx512f,vaes")]
    unsafe fn last_round<const N: usize>(blocks: &mut [Zmm; N], key: Zmm) {
        for b in blocks.iter_mut() {
            // SAFETY: as in `round`.
            unsafe {
                asm!(
                    "vaesenclast {b}, {b}, {k}",
                    b = inout(zmm_reg) *b,
                    k = in(zmm_reg) key,
                    options(nomem, nostack, preserves_flags)
                )
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Prg;

    fn reference(key: Block, blocks: &[Block]) -> Vec<Block> {
        let cipher = portable_cipher(key);
        blocks
            .iter()
            .map(|b| {
                let mut a: aes::Block = b.to_bytes().into();
                cipher.encrypt_block(&mut a);
                Block::from_bytes(a.into())
            })
            .collect()
    }

    #[test]
    fn fips197_appendix_c1() {
        // FIPS-197 C.1: key 000102..0f, plaintext 00112233..ff.
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        let pt: [u8; 16] = core::array::from_fn(|i| (i as u8) * 0x11);
        let expect = [
            0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4,
            0xc5, 0x5a,
        ];
        let aes = Aes128::new(Block::from_bytes(key));
        assert_eq!(aes.encrypt_block(Block::from_bytes(pt)).to_bytes(), expect);
        for kernel in AesKernel::available() {
            // Put the vector at every position of a wide call so each lane is checked.
            for len in [1usize, 5, 37] {
                let mut blocks = vec![Block::from_bytes(pt); len];
                aes.encrypt_blocks_with(kernel, &mut blocks);
                assert!(
                    blocks.iter().all(|b| b.to_bytes() == expect),
                    "{kernel:?} len {len}"
                );
            }
        }
    }

    #[test]
    fn fips197_key_expansion() {
        if !AesKernel::AesNi.is_available() {
            return;
        }
        // FIPS-197 A.1: key 2b7e1516 28aed2a6 abf71588 09cf4f3c; last round key
        // d014f9a8 c9ee2589 e13f0cc8 b6630ca6.
        let key = [
            0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf,
            0x4f, 0x3c,
        ];
        let last = [
            0xd0, 0x14, 0xf9, 0xa8, 0xc9, 0xee, 0x25, 0x89, 0xe1, 0x3f, 0x0c, 0xc8, 0xb6, 0x63,
            0x0c, 0xa6,
        ];
        let aes = Aes128::new(Block::from_bytes(key));
        assert_eq!(aes.round_keys[0].to_bytes(), key);
        assert_eq!(aes.round_keys[10].to_bytes(), last);
    }

    #[test]
    fn every_kernel_matches_the_aes_crate() {
        let mut prg = Prg::from_seed(Block(0x5eed_0001));
        for trial in 0..4 {
            let key = prg.random_block();
            let aes = Aes128::new(key);
            for len in 0..200 {
                let mut data = vec![Block::ZERO; len];
                prg.fill_blocks(&mut data);
                let expect = reference(key, &data);
                for kernel in AesKernel::available() {
                    let mut got = data.clone();
                    aes.encrypt_blocks_with(kernel, &mut got);
                    assert_eq!(got, expect, "{kernel:?} trial {trial} len {len}");

                    let mut xored = vec![Block::ONES; len];
                    aes.encrypt_blocks_xor_with(kernel, &data, &mut xored);
                    let expect_xor: Vec<Block> =
                        expect.iter().zip(&data).map(|(&c, &x)| c ^ x).collect();
                    assert_eq!(xored, expect_xor, "xor {kernel:?} trial {trial} len {len}");
                }
            }
        }
    }

    #[test]
    fn counter_mode_matches_encrypting_counters() {
        let aes = Aes128::new(Block(0xc0ffee));
        // Low word close to (but not across) the 64-bit boundary, high word nonzero.
        let start = (7u128 << 64) | (u64::MAX - 300) as u128;
        for len in [0usize, 1, 3, 4, 31, 32, 33, 100] {
            let counters: Vec<Block> = (0..len as u128).map(|k| Block(start + k)).collect();
            let expect = reference(Block(0xc0ffee), &counters);
            for kernel in AesKernel::available() {
                let mut out = vec![0u8; 16 * len];
                aes.counter_bytes(kernel, start, &mut out);
                let got: Vec<Block> = out
                    .chunks(16)
                    .map(|c| Block::from_bytes(c.try_into().unwrap()))
                    .collect();
                assert_eq!(got, expect, "{kernel:?} len {len}");
            }
        }
    }

    #[test]
    fn detect_is_stable_and_available() {
        let k = AesKernel::detect();
        assert_eq!(k, AesKernel::detect());
        assert!(k.is_available());
        assert_eq!(AesKernel::available()[0], k);
        assert_eq!(*AesKernel::available().last().unwrap(), AesKernel::Portable);
    }
}
