//! Synthetic circuits: a streaming random layered circuit for benchmarks of any size
//! ([`RandomLayered`]) and small random circuits for property tests ([`random_circuit`]).
//!
//! Both are deterministic functions of their parameters (they use fast non-cryptographic
//! PRNGs, [`SplitMix64`] and wyrand, not the OS-seeded PRG: these are public test data, not
//! secrets).

use crate::ir::{CHUNK_GATES, Circuit, Gate, GateSource, Layout, Op, WireId};

/// SplitMix64: a tiny, fast, statistically decent PRNG. **Not cryptographic**; for
/// reproducible test data and generated circuits only.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (multiply-shift; `n` must be at least 1 and fit in 32 bits).
    #[inline]
    pub fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * n as u64) >> 32) as u32
    }

    pub fn next_bool(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }
}

/// wyrand: one 64x64->128-bit multiply per output, faster than SplitMix64 in the
/// generator's inner loop. Not cryptographic.
struct WyRand(u64);

impl WyRand {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xA076_1D64_78BD_642F);
        let t = self.0 as u128 * (self.0 ^ 0xE703_7ED1_A0B4_28DB) as u128;
        (t >> 64) as u64 ^ t as u64
    }
}

/// Invalid parameters for [`RandomLayered`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GenerateError {
    #[error("random layered circuit: width must be at least 1")]
    ZeroWidth,
    #[error(
        "random layered circuit: width {0} is too large (at most {max}: 3 x width wires must \
         fit in 32 bits)",
        max = RandomLayered::MAX_WIDTH
    )]
    WidthTooLarge(u32),
}

/// A random layered circuit of `depth` layers, each `width` ANDs wide, generated on the fly
/// chunk by chunk: memory stays O(width) for any depth, so it can feed garbling benchmarks
/// of billions of gates. Build it with [`RandomLayered::new`], which checks the width.
///
/// Structure: two input values of `width` bits (party A's and party B's). Wire ids are
/// slots in a ring of three regions of `width` slots; the inputs start in regions 0 and 1.
/// Layer `l` reads the previous layer (layer 0 reads both inputs) and writes region
/// `(l + 2) % 3`: first `width` ANDs of two random wires of the previous layer, then for
/// each slot an XOR with another random wire of the previous layer (in place), and an INV of
/// every 16th slot. The ANDs of a layer read only the previous layer, so each layer's ANDs
/// are one independent run. Outputs: the first `min(width, 128)` wires of the last layer
/// (of input A if `depth = 0`). `width = 0` is the empty circuit.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RandomLayered {
    pub width: u32,
    pub depth: u32,
    pub seed: u64,
    layout: Layout,
}

/// Every 16th slot of a layer also gets an INV.
const INV_STRIDE: u32 = 16;

impl RandomLayered {
    /// Largest supported width: the `3 * width` wire slots must fit in 32-bit ids.
    pub const MAX_WIDTH: u32 = u32::MAX / 3;

    /// A checked constructor: `width` must be in `1..=MAX_WIDTH`.
    pub fn new(width: u32, depth: u32, seed: u64) -> Result<Self, GenerateError> {
        match width {
            0 => return Err(GenerateError::ZeroWidth),
            w if w > Self::MAX_WIDTH => return Err(GenerateError::WidthTooLarge(w)),
            _ => {}
        }
        // Outputs live in the last layer's region, or in input A's without layers.
        let output_region = if depth == 0 {
            0
        } else {
            Self::dst_region(depth - 1)
        };
        let layout = Self::make_layout(width, output_region);
        Ok(RandomLayered {
            width,
            depth,
            seed,
            layout,
        })
    }

    fn make_layout(width: u32, region: u32) -> Layout {
        let first_output = region * width;
        Layout {
            num_wires: 3 * width,
            input_widths: vec![width, width],
            output_widths: vec![width.min(128)],
            output_wires: (first_output..first_output + width.min(128)).collect(),
        }
    }

    fn dst_region(layer: u32) -> u32 {
        (layer + 2) % 3
    }

    fn gates_per_layer(&self) -> u64 {
        2 * self.width as u64 + self.width.div_ceil(INV_STRIDE) as u64
    }

    /// The layer's own PRNG, so a layer's gates do not depend on chunking.
    fn layer_rng(&self, layer: u32) -> WyRand {
        let mut mix =
            SplitMix64::new(self.seed ^ (layer as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93));
        WyRand(mix.next_u64())
    }
}

impl GateSource for RandomLayered {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn gate_count(&self) -> u64 {
        self.depth as u64 * self.gates_per_layer()
    }

    fn and_count(&self) -> u64 {
        self.depth as u64 * self.width as u64
    }

    fn fingerprint(&self) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(b"pgc random-layered v1\0");
        h.update(&self.width.to_le_bytes());
        h.update(&self.depth.to_le_bytes());
        h.update(&self.seed.to_le_bytes());
        h.update(&self.layout().to_bytes());
        *h.finalize().as_bytes()
    }

    fn for_each_chunk<E>(&self, f: &mut dyn FnMut(&[Gate]) -> Result<(), E>) -> Result<(), E> {
        let w = self.width;
        let mut out = ChunkWriter {
            buf: vec![Gate::constant(false, 0); CHUNK_GATES],
            len: 0,
        };
        for layer in 0..self.depth {
            let mut rng = self.layer_rng(layer);
            let (src_start, src_len) = if layer == 0 {
                (0, 2 * w as u64)
            } else {
                (Self::dst_region(layer - 1) * w, w as u64)
            };
            let dst = Self::dst_region(layer) * w;
            let pick = move |r: u32| -> WireId { src_start + ((r as u64 * src_len) >> 32) as u32 };
            out.phase(w, f, |j| {
                let r = rng.next_u64();
                Gate::and(pick(r as u32), pick((r >> 32) as u32), dst + j)
            })?;
            // One random word serves two XORs.
            let mut spare = 0u64;
            out.phase(w, f, |j| {
                if j % 2 == 0 {
                    spare = rng.next_u64();
                }
                let r = (spare >> (32 * (j % 2))) as u32;
                Gate::xor(dst + j, pick(r), dst + j)
            })?;
            out.phase(w.div_ceil(INV_STRIDE), f, |k| {
                let j = dst + k * INV_STRIDE;
                Gate::inv(j, j)
            })?;
        }
        if out.len > 0 {
            f(&out.buf[..out.len])?;
        }
        Ok(())
    }
    fn form(&self) -> crate::ir::CircuitForm {
        crate::ir::CircuitForm::Generated
    }
}

/// A reusable chunk buffer that hands itself to the consumer whenever it is full.
struct ChunkWriter {
    buf: Vec<Gate>,
    len: usize,
}

impl ChunkWriter {
    /// Appends `make(0), .., make(count - 1)`, filling the buffer in whole runs so that the
    /// inner loop has no per-gate capacity check.
    #[inline]
    fn phase<E>(
        &mut self,
        count: u32,
        f: &mut dyn FnMut(&[Gate]) -> Result<(), E>,
        mut make: impl FnMut(u32) -> Gate,
    ) -> Result<(), E> {
        let mut k = 0u32;
        while k < count {
            let take = (CHUNK_GATES - self.len).min((count - k) as usize);
            for (slot, i) in self.buf[self.len..self.len + take].iter_mut().zip(k..) {
                *slot = make(i);
            }
            self.len += take;
            k += take as u32;
            if self.len == CHUNK_GATES {
                f(&self.buf)?;
                self.len = 0;
            }
        }
        Ok(())
    }
}

/// A small random valid circuit in single-assignment form, using every op (AND, XOR, INV,
/// copy, constant), for property tests.
///
/// `num_inputs` input wires are split into two values (`ceil(n/2)` and `floor(n/2)` bits;
/// one value if `n = 1`, none if `n = 0`). Gates read random earlier wires, biased towards
/// recent ones so that AND depth grows. Outputs are 1 to 8 random wires, which may include
/// input wires and repeats, split into one or two values.
pub fn random_circuit(seed: u64, num_inputs: u32, num_gates: usize) -> Circuit {
    let mut rng = SplitMix64::new(seed ^ 0x5EED_C1C0_17F0_0D5E);
    let input_widths: Vec<u32> = match num_inputs {
        0 => vec![],
        1 => vec![1],
        n => vec![n.div_ceil(2), n / 2],
    };
    let mut gates = Vec::with_capacity(num_gates);
    let mut next: WireId = num_inputs;
    let pick = |rng: &mut SplitMix64, next: WireId| -> WireId {
        if rng.next_bool() || next <= 16 {
            rng.below(next)
        } else {
            next - 1 - rng.below(16)
        }
    };
    for _ in 0..num_gates {
        let roll = rng.below(100);
        let op = if next == 0 {
            Op::Const
        } else {
            match roll {
                0..35 => Op::And,
                35..70 => Op::Xor,
                70..80 => Op::Inv,
                80..90 => Op::Copy,
                _ => Op::Const,
            }
        };
        let g = match op {
            Op::And => Gate::and(pick(&mut rng, next), pick(&mut rng, next), next),
            Op::Xor => Gate::xor(pick(&mut rng, next), pick(&mut rng, next), next),
            Op::Inv => Gate::inv(pick(&mut rng, next), next),
            Op::Copy => Gate::copy(pick(&mut rng, next), next),
            Op::Const => Gate::constant(rng.next_bool(), next),
        };
        gates.push(g);
        next += 1;
    }
    let mut output_wires = Vec::new();
    if next > 0 {
        let count = 1 + rng.below(8.min(next));
        output_wires = (0..count).map(|_| pick(&mut rng, next)).collect();
    }
    let n_out = output_wires.len() as u32;
    let output_widths = match n_out {
        0 => vec![],
        1 => vec![1],
        n => {
            let first = 1 + rng.below(n - 1);
            vec![first, n - first]
        }
    };
    Circuit {
        layout: Layout {
            num_wires: next,
            input_widths,
            output_widths,
            output_wires,
        },
        gates,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{stats, validate};
    use crate::eval::eval_bitsliced;

    fn collect(src: &RandomLayered) -> Vec<Gate> {
        let mut all = Vec::new();
        src.for_each_chunk::<()>(&mut |gates| {
            all.extend_from_slice(gates);
            Ok(())
        })
        .unwrap();
        all
    }

    #[test]
    fn layered_counts_and_validity() {
        for (w, d) in [(1, 1), (3, 5), (16, 4), (100, 7), (200, 90), (5, 0)] {
            let src = RandomLayered::new(w, d, 42).unwrap();
            let gates = collect(&src);
            assert_eq!(gates.len() as u64, src.gate_count());
            let c = Circuit {
                layout: src.layout().clone(),
                gates,
            };
            assert_eq!(c.and_count(), src.and_count());
            assert_eq!(c.and_count(), w as u64 * d as u64);
            validate(&c).unwrap();
            let s = stats(&c);
            assert_eq!(s.and_levels, d as u64);
            assert_eq!(s.max_width, if d == 0 { 0 } else { w as u64 });
            assert_eq!(s.output_wires, w.min(128) as u64);
            // Consecutive ANDs never read a slot written by an earlier AND of their run.
            let mut run: Vec<WireId> = Vec::new();
            for g in &c.gates {
                if g.op == Op::And {
                    assert!(!run.contains(&g.a) && !run.contains(&g.b));
                    run.push(g.out);
                } else {
                    run.clear();
                }
            }
        }
    }

    #[test]
    fn layered_is_deterministic_and_seeded() {
        let a = RandomLayered::new(50, 30, 1).unwrap();
        let b = RandomLayered::new(50, 30, 1).unwrap();
        let c = RandomLayered::new(50, 30, 2).unwrap();
        assert_eq!(collect(&a), collect(&b));
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_ne!(collect(&a), collect(&c));
        assert_ne!(a.fingerprint(), c.fingerprint());
        assert_ne!(
            a.fingerprint(),
            RandomLayered::new(50, 31, 1).unwrap().fingerprint()
        );
        // Both inputs influence the output.
        let n = 100;
        let zeros = vec![0u64; n];
        let base = eval_bitsliced(&a, &zeros);
        for flip in [0, 50] {
            let mut inputs = zeros.clone();
            inputs[flip..flip + 50].fill(u64::MAX);
            assert_ne!(eval_bitsliced(&a, &inputs), base, "input half at {flip}");
        }
    }

    #[test]
    fn layered_output_wires_are_the_last_layer() {
        let g = RandomLayered::new(10, 4, 3).unwrap();
        assert_eq!(g.layout().output_wires, (20..30).collect::<Vec<_>>());
        assert_eq!(collect(&g).len() as u64, g.gate_count());
    }

    #[test]
    fn layered_rejects_bad_width() {
        assert_eq!(
            RandomLayered::new(0, 3, 0).unwrap_err(),
            GenerateError::ZeroWidth
        );
        assert!(matches!(
            RandomLayered::new(u32::MAX / 2, 3, 0),
            Err(GenerateError::WidthTooLarge(_))
        ));
    }

    #[test]
    fn layered_stops_on_error() {
        let src = RandomLayered::new(1000, 100, 0).unwrap();
        let mut calls = 0;
        let r = src.for_each_chunk(&mut |_| {
            calls += 1;
            if calls == 3 { Err("stop") } else { Ok(()) }
        });
        assert_eq!(r, Err("stop"));
        assert_eq!(calls, 3);
    }

    #[test]
    fn random_circuits_are_valid_and_use_all_ops() {
        let mut seen = [false; 5];
        for seed in 0..200 {
            let c = random_circuit(seed, (seed % 7) as u32, (seed % 50) as usize);
            crate::analysis::validate_ssa(&c).unwrap();
            for g in &c.gates {
                seen[g.op as usize] = true;
            }
        }
        assert_eq!(seen, [true; 5]);
        assert_eq!(random_circuit(5, 4, 30), random_circuit(5, 4, 30));
    }

    /// Throughput check of the generator, run with
    /// `cargo test --release -p pgc-circuit -- --ignored generator_throughput --nocapture`.
    #[test]
    #[ignore = "timing; run in release"]
    fn generator_throughput() {
        let src = RandomLayered::new(4096, 20_000, 9).unwrap();
        let start = std::time::Instant::now();
        let mut total = 0u64;
        src.for_each_chunk::<()>(&mut |gates| {
            total += std::hint::black_box(gates).len() as u64;
            Ok(())
        })
        .unwrap();
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(total, src.gate_count());
        let rate = src.gate_count() as f64 / secs;
        println!(
            "generated {} gates in {secs:.3} s: {:.0} M gates/s",
            src.gate_count(),
            rate / 1e6
        );
    }
}
