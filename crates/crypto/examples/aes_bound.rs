//! The AES bound of this CPU: in-register throughput of independent AES-128 encryptions
//! (keys in registers, no memory traffic), the ceiling any garbling loop built on fixed-key
//! AES meets. Half-gates with the TMMO hash runs 8 AES per AND to garble and 4 to evaluate,
//! so the bound in AND/s is this figure / 8 and / 4.
//!
//! `cargo run --release -p pgc-crypto --example aes_bound [iterations]`
//!
//! Each kernel runs independent chains (each block re-encrypted `iterations` times) so
//! that the AES units never wait on a result; the best of 5 runs is printed, timed in this
//! thread's CPU time where the platform tells it (on a shared machine wall time also
//! counts the time other processes held the core), else in wall time.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// CPU time of this thread, or wall time since the first call where there is none.
fn now() -> Duration {
    #[cfg(unix)]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid timespec for the call to write.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
            return Duration::new(t.tv_sec as u64, t.tv_nsec as u32);
        }
    }
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

#[cfg(target_arch = "x86_64")]
mod kernels {
    use pgc_crypto::aes::wide::RoundKeys512;
    use pgc_crypto::{Aes128, Block};
    use std::arch::x86_64::*;

    /// Encrypts 12 independent `zmm` states (48 blocks) `iterations` times; returns a
    /// fold of the states so the work cannot be dropped.
    ///
    /// # Safety
    /// AES-NI, AVX-512F and VAES.
    #[target_feature(enable = "aes,avx512f,vaes")]
    pub unsafe fn vaes512(aes: &Aes128, iterations: u64) -> u64 {
        // SAFETY: register-only intrinsics and `RoundKeys512`, which need AES-NI, AVX-512F and
        // VAES: this function's contract; callers check `AesKernel::Vaes512.is_available()`
        // first.
        unsafe {
            let keys = RoundKeys512::new(aes);
            let mut s: [__m512i; 12] = std::array::from_fn(|i| _mm512_set1_epi64(i as i64));
            for _ in 0..iterations {
                s = keys.encrypt(s);
            }
            let x = s
                .iter()
                .fold(_mm512_setzero_si512(), |a, b| _mm512_xor_si512(a, *b));
            _mm_cvtsi128_si64(_mm512_castsi512_si128(x)) as u64
        }
    }

    /// As [`vaes512`] on 12 `ymm` states (24 blocks); the round keys are arbitrary
    /// constants (the speed does not depend on them). AVX-512VL gives the 32 vector
    /// registers that keys and states need together (with 16 they spill).
    ///
    /// # Safety
    /// AES-NI, AVX2, AVX-512F, AVX-512VL and VAES.
    #[target_feature(enable = "aes,avx2,avx512f,avx512vl,vaes")]
    pub unsafe fn vaes256(iterations: u64) -> u64 {
        {
            let keys: [__m256i; 11] =
                std::array::from_fn(|r| _mm256_set1_epi64x(0x9e37_79b9 * (r as i64 + 1)));
            let mut s: [__m256i; 12] = std::array::from_fn(|i| _mm256_set1_epi64x(i as i64));
            for _ in 0..iterations {
                for x in s.iter_mut() {
                    *x = _mm256_xor_si256(*x, keys[0]);
                }
                for key in &keys[1..10] {
                    for x in s.iter_mut() {
                        *x = _mm256_aesenc_epi128(*x, *key);
                    }
                }
                for x in s.iter_mut() {
                    *x = _mm256_aesenclast_epi128(*x, keys[10]);
                }
            }
            let x = s
                .iter()
                .fold(_mm256_setzero_si256(), |a, b| _mm256_xor_si256(a, *b));
            _mm_cvtsi128_si64(_mm256_castsi256_si128(x)) as u64
        }
    }

    pub fn blocks_per_iteration() -> [(&'static str, u64, bool); 2] {
        [
            (
                "VAES-512 (vaesenc zmm, 12 states)",
                48,
                pgc_crypto::AesKernel::Vaes512.is_available(),
            ),
            (
                "VAES-256 (vaesenc ymm, 12 states)",
                24,
                std::arch::is_x86_feature_detected!("vaes")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("avx2"),
            ),
        ]
    }

    pub fn key() -> Aes128 {
        Aes128::new(Block(0x0123_4567_89ab_cdef))
    }
}

#[cfg(target_arch = "x86_64")]
fn main() {
    let iterations: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(4_000_000);
    let aes = kernels::key();
    for (k, (name, blocks, available)) in kernels::blocks_per_iteration().into_iter().enumerate() {
        if !available {
            println!("{name}: not on this CPU");
            continue;
        }
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = now();
            // SAFETY: the features were detected just above.
            let fold = unsafe {
                match k {
                    0 => kernels::vaes512(&aes, iterations),
                    _ => kernels::vaes256(iterations),
                }
            };
            black_box(fold);
            best = best.min((now() - start).as_secs_f64());
        }
        let rate = (blocks * iterations) as f64 / best;
        println!(
            "{name}: {:.2} G blocks/s; TMMO half-gates bound {:.0} M AND/s garbling (8 AES/AND), \
             {:.0} M AND/s evaluating (4 AES/AND)",
            rate / 1e9,
            rate / 8e6,
            rate / 4e6
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    println!("aes_bound measures x86-64 VAES kernels only");
}
