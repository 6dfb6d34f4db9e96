//! The CPU reference of the kernels: the per-gate C code of `device/halfgates.h` (the code
//! the kernels run), compiled for this CPU by build.rs and driven level by level with the
//! kernels' indexing. Slow (one T-table AES at a time); it exists to be tested against the
//! CPU engine (`pgc_garble`) on every machine and to test the kernels against on a GPU.

use pgc_crypto::Block;

use crate::schedule::Schedule;

mod ffi {
    use pgc_crypto::Block;

    // SAFETY (for every declaration): `Block` is `repr(transparent)` over `u128`, which has
    // the size of the C struct of four `uint32_t` (16 bytes, little-endian words on the
    // x86-64 and AArch64 targets pgc builds for); the C side reads and writes blocks only
    // through the pointers' declared lengths, which the safe wrappers check.
    unsafe extern "C" {
        pub fn pgc_aes_tables(te: *mut u32);
        pub fn pgc_aes_key_schedule(key: *const u8, rk: *mut u32);
        pub fn pgc_ref_aes(te: *const u32, rk: *const u32, input: *const Block, out: *mut Block);
        pub fn pgc_ref_tmmo(
            te: *const u32,
            rk: *const u32,
            input: *const Block,
            tweak: u64,
            out: *mut Block,
        );
        pub fn pgc_ref_garble_levels(
            te: *const u32,
            rk: *const u32,
            gates: *const u32,
            level_offsets: *const u32,
            levels: u32,
            labels: *mut Block,
            tables: *mut Block,
            delta: *const Block,
            and_base: u64,
        );
        pub fn pgc_ref_evaluate_levels(
            te: *const u32,
            rk: *const u32,
            gates: *const u32,
            level_offsets: *const u32,
            levels: u32,
            labels: *mut Block,
            tables: *const Block,
            and_base: u64,
        );
        pub fn pgc_ref_garble_independent(
            te: *const u32,
            rk: *const u32,
            gates: *const u32,
            count: u64,
            labels: *const Block,
            tables: *mut Block,
            corrections: *mut Block,
            delta: *const Block,
            and_base: u64,
        );
    }
}

/// AES-128 under one key as the kernels use it: the 4 × 256-word T-tables, then the 44
/// round-key words (`aes` argument of every kernel).
#[derive(Clone)]
pub struct AesMaterial {
    words: Vec<u32>,
}

impl AesMaterial {
    pub const WORDS: usize = 1024 + 44;

    pub fn new(key: Block) -> AesMaterial {
        let mut words = vec![0u32; Self::WORDS];
        let bytes = key.to_bytes();
        // SAFETY: `words` holds 1024 + 44 words: the tables take the first 1024, the key
        // schedule writes 44 after them and reads the 16 key bytes.
        unsafe {
            ffi::pgc_aes_tables(words.as_mut_ptr());
            ffi::pgc_aes_key_schedule(bytes.as_ptr(), words.as_mut_ptr().add(1024));
        }
        AesMaterial { words }
    }

    /// The words to upload: tables then round keys.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    fn te(&self) -> *const u32 {
        self.words.as_ptr()
    }
    fn rk(&self) -> *const u32 {
        self.words[1024..].as_ptr()
    }

    /// AES of one block (tests).
    pub fn encrypt(&self, block: Block) -> Block {
        let mut out = Block::ZERO;
        // SAFETY: one block in, one out; the tables and keys are this value's.
        unsafe { ffi::pgc_ref_aes(self.te(), self.rk(), &block, &mut out) };
        out
    }

    /// The TMMO hash H(x, tweak) (tests).
    pub fn tmmo(&self, block: Block, tweak: u64) -> Block {
        let mut out = Block::ZERO;
        // SAFETY: as `encrypt`.
        unsafe { ffi::pgc_ref_tmmo(self.te(), self.rk(), &block, tweak, &mut out) };
        out
    }
}

fn check_wires(schedule: &Schedule, labels: usize) {
    // The scheduler checked every wire against its own wire count; the label array must
    // be at least that long for the C code to stay in bounds.
    let max = schedule
        .records
        .iter()
        .map(|r| {
            let op = r[3] & 7;
            match op {
                0 | 1 => r[0].max(r[1]).max(r[2]),
                2 | 3 => r[0].max(r[2]),
                _ => r[2],
            }
        })
        .max();
    if let Some(max) = max {
        assert!(
            (max as usize) < labels,
            "schedule uses wire {max} but only {labels} labels were given"
        );
    }
}

/// Garbles a window: `labels` are the zero-labels (updated in place), `tables` receive 2
/// blocks per AND of the window in sequential order; the window's first AND is the
/// `and_base`-th of the circuit. Panics if `tables` is not exactly 2 blocks per AND or the
/// schedule uses a wire beyond `labels`.
pub fn garble_window(
    aes: &AesMaterial,
    schedule: &Schedule,
    labels: &mut [Block],
    delta: Block,
    and_base: u64,
    tables: &mut [Block],
) {
    assert_eq!(tables.len() as u64, 2 * schedule.and_gates);
    check_wires(schedule, labels.len());
    // SAFETY: every record's wires are below labels.len() (checked above) and its local AND
    // index below and_gates (the scheduler numbers them 0..and_gates), so every access is
    // in bounds; the offsets are the schedule's own.
    unsafe {
        ffi::pgc_ref_garble_levels(
            aes.te(),
            aes.rk(),
            schedule.records.as_ptr().cast(),
            schedule.offsets.as_ptr(),
            schedule.levels() as u32,
            labels.as_mut_ptr(),
            tables.as_mut_ptr(),
            &delta,
            and_base,
        )
    }
}

/// Evaluates a window on the garbler's tables (2 blocks per AND, sequential order);
/// `labels` are the active labels, updated in place. Panics as [`garble_window`].
pub fn evaluate_window(
    aes: &AesMaterial,
    schedule: &Schedule,
    labels: &mut [Block],
    and_base: u64,
    tables: &[Block],
) {
    assert_eq!(tables.len() as u64, 2 * schedule.and_gates);
    check_wires(schedule, labels.len());
    // SAFETY: as in `garble_window`.
    unsafe {
        ffi::pgc_ref_evaluate_levels(
            aes.te(),
            aes.rk(),
            schedule.records.as_ptr().cast(),
            schedule.offsets.as_ptr(),
            schedule.levels() as u32,
            labels.as_mut_ptr(),
            tables.as_ptr(),
            and_base,
        )
    }
}

/// The seed's independent garbling (see `halfgates.h`) of a whole window's records in the
/// window's order: `labels` hold every wire's drawn zero-label; fills `tables` (2 blocks
/// per AND) and `corrections` (1 per gate). For the benchmark's cross-check.
pub fn garble_independent(
    aes: &AesMaterial,
    schedule: &Schedule,
    labels: &[Block],
    delta: Block,
    and_base: u64,
    tables: &mut [Block],
    corrections: &mut [Block],
) {
    assert_eq!(tables.len() as u64, 2 * schedule.and_gates);
    assert_eq!(corrections.len(), schedule.records.len());
    check_wires(schedule, labels.len());
    // SAFETY: as in `garble_window`; `corrections` has one block per record.
    unsafe {
        ffi::pgc_ref_garble_independent(
            aes.te(),
            aes.rk(),
            schedule.records.as_ptr().cast(),
            schedule.records.len() as u64,
            labels.as_ptr(),
            tables.as_mut_ptr(),
            corrections.as_mut_ptr(),
            &delta,
            and_base,
        )
    }
}
