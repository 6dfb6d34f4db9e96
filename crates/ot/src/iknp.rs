//! IKNP oblivious-transfer extension (Ishai, Kilian, Nissim, Petrank, CRYPTO 2003),
//! semi-honest version: 128 base OTs, then any number of OTs for symmetric-key work.
//!
//! Roles are reversed in the base OTs: the extension *receiver* sends 128 seed pairs
//! (k0_i, k1_i); the extension *sender* picks one of each with the bits s_i of its secret
//! s. For a batch of m OTs with choice bits r (as a column of m bits), the receiver expands
//! t^i = G(k0_i) and sends u^i = t^i ⊕ G(k1_i) ⊕ r; the sender computes
//! q^i = G(k_{s_i}) ⊕ s_i·u^i = t^i ⊕ s_i·r. Transposing the 128 × m matrices gives rows
//! with q_j = t_j ⊕ r_j·s: correlated OT with the correlation s.
//!
//! In pgc the sender is the garbler and s is its free-XOR offset Δ, so the correlated OTs
//! are exactly the label pairs (q_j, q_j ⊕ Δ) with no hashing and no further message.
//! Random and chosen OTs break the correlation with the tweakable correlation-robust hash
//! H(x, j) (fixed-key AES, its own key), using the global index j of the OT as the tweak.
//!
//! Both parties must make the same sequence of calls with the same sizes. Each call is cut
//! into batches of at most [`BATCH_OTS`] OTs (one message each), padded to a multiple of
//! 128, so memory stays bounded whatever n is. The column generators keep their state
//! across calls, so every call continues the extension.

use crate::transpose::{padded_stride, transpose_128_strided};
use crate::{OtError, base, recv_exact_frame};
use pgc_crypto::{Block, Prg, TccrHash};
use pgc_net::Channel;

/// Most OTs per batch (one message of 16 bytes per OT from the receiver). Small enough
/// that a batch's matrices stay in cache, large enough to amortize per-message costs.
pub const BATCH_OTS: usize = 1 << 16;

/// Public key of the fixed-key AES behind the OT hash; distinct from garbling's.
const OT_HASH_KEY: Block = Block::from_bytes(*b"pgc/iknp-ot/tccr");

/// Security parameter: number of base OTs and bits per extended OT row.
pub(crate) const KAPPA: usize = 128;

/// OT-extension sender. In Yao it is the garbler: its secret is the free-XOR offset Δ.
pub struct IknpSender {
    delta: Block,
    /// Generator of column i, seeded with k_{s_i}^i.
    columns: Vec<Prg>,
    hash: TccrHash,
    /// Global index of the next OT (the hash tweak).
    next_index: u64,
    /// Scratch: the receiver's message and the q matrix of one batch.
    u_frame: Vec<u8>,
    q: Vec<Block>,
}

/// OT-extension receiver. In Yao it is the evaluator, choosing with its input bits.
pub struct IknpReceiver {
    /// Generators of column i: (G(k0_i), G(k1_i)).
    columns: Vec<(Prg, Prg)>,
    hash: TccrHash,
    next_index: u64,
    /// Scratch for one batch: packed choices, the t matrix, one row of G(k1), the message.
    packed_choices: Vec<Block>,
    t: Vec<Block>,
    row: Vec<Block>,
    u: Vec<Block>,
}

/// Blocks per column for a batch of `n` OTs (n rounded up to a multiple of 128).
pub(crate) fn batch_width(n: usize) -> usize {
    n.div_ceil(KAPPA)
}

/// Packs choice bits, 128 per block, bit j of the column at bit j % 128 of block j / 128;
/// padding bits are 0.
pub(crate) fn pack_choices(choices: &[bool], out: &mut [Block]) {
    out.fill(Block::ZERO);
    for (block, bits) in out.iter_mut().zip(choices.chunks(KAPPA)) {
        let mut words = [0u64; 2];
        for (k, byte_group) in bits.chunks(8).enumerate() {
            let mut bytes = [0u8; 8];
            for (b, &c) in bytes.iter_mut().zip(byte_group) {
                *b = c as u8;
            }
            // Multiplying eight 0/1 bytes by this constant puts byte k's bit at bit 56 + k
            // with no carries (all 64 partial products land on distinct bits).
            let gathered = u64::from_le_bytes(bytes).wrapping_mul(0x0102_0408_1020_4080) >> 56;
            words[k / 8] |= gathered << (8 * (k % 8));
        }
        *block = Block(words[0] as u128 | (words[1] as u128) << 64);
    }
}

/// Checks that an output buffer matches the number of OTs asked for.
fn check_len(what: &str, got: usize, expected: usize) -> Result<(), OtError> {
    if got == expected {
        Ok(())
    } else {
        Err(OtError::BadArgument(format!(
            "{what}: {got} entries for {expected} OTs"
        )))
    }
}

impl IknpSender {
    /// Runs 128 base OTs as their receiver with choice bits = the bits of `delta`.
    /// `delta` (the garbler's free-XOR offset) becomes the OT correlation.
    pub fn setup<C: Channel + ?Sized>(
        ch: &mut C,
        delta: Block,
        prg: &mut Prg,
    ) -> Result<IknpSender, OtError> {
        IknpSender::setup_threads(ch, delta, prg, 1)
    }

    /// [`setup`](Self::setup) with the base OTs' group operations on up to `threads`
    /// threads: the same messages, so the peer may use any thread count.
    pub fn setup_threads<C: Channel + ?Sized>(
        ch: &mut C,
        delta: Block,
        prg: &mut Prg,
        threads: usize,
    ) -> Result<IknpSender, OtError> {
        let choices: Vec<bool> = (0..KAPPA).map(|i| (delta.0 >> i) & 1 == 1).collect();
        let seeds = base::receive_random_threads(ch, &choices, prg, threads)?;
        Ok(IknpSender {
            delta,
            columns: seeds.into_iter().map(Prg::from_seed).collect(),
            hash: TccrHash::new(OT_HASH_KEY),
            next_index: 0,
            u_frame: Vec::new(),
            q: Vec::new(),
        })
    }

    /// The correlation Δ of the correlated OTs.
    pub fn delta(&self) -> Block {
        self.delta
    }

    /// Correlated OT: returns x0_j; the receiver gets x0_j ⊕ (r_j ? Δ : 0).
    pub fn send_correlated<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
    ) -> Result<Vec<Block>, OtError> {
        let mut out = vec![Block::ZERO; n];
        self.send_correlated_into(ch, &mut out)?;
        Ok(out)
    }

    /// [`send_correlated`](Self::send_correlated) writing the x0_j into `out`
    /// (`out.len()` OTs), so large runs need no fresh allocation.
    pub fn send_correlated_into<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        out: &mut [Block],
    ) -> Result<(), OtError> {
        for batch in out.chunks_mut(BATCH_OTS) {
            self.extend_batch(ch, batch)?;
        }
        Ok(())
    }

    /// Random OT: returns (m0_j, m1_j); the receiver gets m_{r_j}.
    pub fn send_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
    ) -> Result<Vec<(Block, Block)>, OtError> {
        let mut out = Vec::with_capacity(n);
        let mut hashed = HashedPairs::default();
        let mut remaining = n;
        while remaining > 0 {
            let len = remaining.min(BATCH_OTS);
            self.hashed_batch(ch, len, &mut hashed)?;
            out.extend(hashed.h0.iter().copied().zip(hashed.h1.iter().copied()));
            remaining -= len;
        }
        Ok(out)
    }

    /// Chosen-message OT: the receiver gets `messages[j].r_j` and nothing about the other.
    pub fn send_chosen<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        messages: &[(Block, Block)],
    ) -> Result<(), OtError> {
        let mut hashed = HashedPairs::default();
        let mut frame = Vec::new();
        for batch in messages.chunks(BATCH_OTS) {
            self.hashed_batch(ch, batch.len(), &mut hashed)?;
            frame.clear();
            for (&(m0, m1), (&h0, &h1)) in batch.iter().zip(hashed.h0.iter().zip(&hashed.h1)) {
                frame.extend_from_slice(&(m0 ^ h0).to_bytes());
                frame.extend_from_slice(&(m1 ^ h1).to_bytes());
            }
            ch.send_frame(&frame)?;
            ch.flush()?;
        }
        Ok(())
    }

    /// One batch of correlated OTs hashed into random pairs (H(q_j), H(q_j ⊕ Δ)).
    fn hashed_batch<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        len: usize,
        hashed: &mut HashedPairs,
    ) -> Result<(), OtError> {
        let first = self.next_index;
        hashed.resize(len, first);
        self.extend_batch(ch, &mut hashed.x)?;
        self.hash
            .tccr_batch(&hashed.x, &hashed.tweaks, &mut hashed.h0);
        for x in hashed.x.iter_mut() {
            *x ^= self.delta;
        }
        self.hash
            .tccr_batch(&hashed.x, &hashed.tweaks, &mut hashed.h1);
        Ok(())
    }

    /// One batch (at most [`BATCH_OTS`]): receive u, form q, transpose into `out`.
    fn extend_batch<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        out: &mut [Block],
    ) -> Result<(), OtError> {
        let n = out.len();
        debug_assert!(n <= BATCH_OTS);
        if n == 0 {
            return Ok(());
        }
        let width = batch_width(n);
        recv_exact_frame(
            ch,
            &mut self.u_frame,
            KAPPA * width * 16,
            "IKNP: receiver's matrix",
        )?;
        let stride = padded_stride(width);
        self.q.resize(KAPPA * stride, Block::ZERO);
        expand_sender_columns(
            &mut self.columns,
            self.delta,
            &self.u_frame,
            width,
            &mut self.q,
            stride,
        );
        transpose_into(&self.q, stride, out);
        self.next_index += n as u64;
        Ok(())
    }
}

impl IknpReceiver {
    /// Runs 128 base OTs as their sender.
    pub fn setup<C: Channel + ?Sized>(ch: &mut C, prg: &mut Prg) -> Result<IknpReceiver, OtError> {
        IknpReceiver::setup_threads(ch, prg, 1)
    }

    /// [`setup`](Self::setup) with the base OTs' group operations on up to `threads`
    /// threads: the same messages, so the peer may use any thread count.
    pub fn setup_threads<C: Channel + ?Sized>(
        ch: &mut C,
        prg: &mut Prg,
        threads: usize,
    ) -> Result<IknpReceiver, OtError> {
        let seeds = base::send_random_threads(ch, KAPPA, prg, threads)?;
        Ok(IknpReceiver {
            columns: seeds
                .into_iter()
                .map(|(k0, k1)| (Prg::from_seed(k0), Prg::from_seed(k1)))
                .collect(),
            hash: TccrHash::new(OT_HASH_KEY),
            next_index: 0,
            packed_choices: Vec::new(),
            t: Vec::new(),
            row: Vec::new(),
            u: Vec::new(),
        })
    }

    /// Correlated OT: returns x0_j ⊕ (r_j ? Δ : 0) for the sender's x0_j.
    pub fn receive_correlated<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[bool],
    ) -> Result<Vec<Block>, OtError> {
        let mut out = vec![Block::ZERO; choices.len()];
        self.receive_correlated_into(ch, choices, &mut out)?;
        Ok(out)
    }

    /// [`receive_correlated`](Self::receive_correlated) writing into `out`, which must
    /// have one entry per choice.
    pub fn receive_correlated_into<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[bool],
        out: &mut [Block],
    ) -> Result<(), OtError> {
        check_len("receive_correlated_into output", out.len(), choices.len())?;
        for (batch_choices, batch_out) in choices.chunks(BATCH_OTS).zip(out.chunks_mut(BATCH_OTS)) {
            self.extend_batch(ch, batch_choices, batch_out)?;
        }
        Ok(())
    }

    /// Random OT: returns m_{r_j} of the sender's random pair (m0_j, m1_j).
    pub fn receive_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[bool],
    ) -> Result<Vec<Block>, OtError> {
        let mut out = Vec::with_capacity(choices.len());
        let mut hashed = HashedPairs::default();
        for batch in choices.chunks(BATCH_OTS) {
            self.hashed_batch(ch, batch, &mut hashed)?;
            out.extend_from_slice(&hashed.h0);
        }
        Ok(out)
    }

    /// Chosen-message OT: returns `messages[j].r_j` of the sender's pairs.
    pub fn receive_chosen<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[bool],
    ) -> Result<Vec<Block>, OtError> {
        let mut out = Vec::with_capacity(choices.len());
        let mut hashed = HashedPairs::default();
        let mut frame = Vec::new();
        for batch in choices.chunks(BATCH_OTS) {
            self.hashed_batch(ch, batch, &mut hashed)?;
            recv_exact_frame(ch, &mut frame, 32 * batch.len(), "IKNP: encrypted messages")?;
            for ((pair, &choice), &h) in frame.chunks_exact(32).zip(batch).zip(&hashed.h0) {
                let y0 = Block::from_bytes(pair[..16].try_into().expect("16-byte half"));
                let y1 = Block::from_bytes(pair[16..].try_into().expect("16-byte half"));
                // y_{r_j} without a branch on the secret choice.
                out.push(y0 ^ (y0 ^ y1).select(choice) ^ h);
            }
        }
        Ok(out)
    }

    /// One batch of correlated OTs hashed: h0[j] = H(t_j) = m_{r_j}.
    fn hashed_batch<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[bool],
        hashed: &mut HashedPairs,
    ) -> Result<(), OtError> {
        let first = self.next_index;
        hashed.resize(choices.len(), first);
        self.extend_batch(ch, choices, &mut hashed.x)?;
        self.hash
            .tccr_batch(&hashed.x, &hashed.tweaks, &mut hashed.h0);
        Ok(())
    }

    /// One batch (at most [`BATCH_OTS`]): expand t and u, send u, transpose t into `out`.
    fn extend_batch<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[bool],
        out: &mut [Block],
    ) -> Result<(), OtError> {
        let n = choices.len();
        debug_assert!(n <= BATCH_OTS && out.len() == n);
        if n == 0 {
            return Ok(());
        }
        let width = batch_width(n);
        self.packed_choices.resize(width, Block::ZERO);
        pack_choices(choices, &mut self.packed_choices);
        let stride = padded_stride(width);
        self.t.resize(KAPPA * stride, Block::ZERO);
        self.u.resize(KAPPA * width, Block::ZERO);
        self.row.resize(width, Block::ZERO);
        expand_receiver_columns(
            &mut self.columns,
            &self.packed_choices,
            &mut self.t,
            stride,
            &mut self.u,
            &mut self.row,
        );
        // Send before transposing so the sender can start on this batch meanwhile.
        ch.send_frame(Block::slice_as_bytes(&self.u))?;
        ch.flush()?;
        transpose_into(&self.t, stride, out);
        self.next_index += n as u64;
        Ok(())
    }
}

/// The extension sender's matrix of one batch (the IKNP step, which KOS15 reuses as is):
/// q^i = G(k_{s_i}) ⊕ s_i·u^i for every column i, s = `delta`, written as row i of `q`
/// (rows at `stride`, `width` blocks used). `u_frame` holds the receiver's 128 rows of
/// `width` blocks (at least `128 * width * 16` bytes; the rest is ignored).
#[inline]
pub(crate) fn expand_sender_columns(
    columns: &mut [Prg],
    delta: Block,
    u_frame: &[u8],
    width: usize,
    q: &mut [Block],
    stride: usize,
) {
    let rows = q.chunks_exact_mut(stride);
    let u_rows = u_frame.chunks_exact(16 * width);
    for (i, ((q_row, u_row), column)) in rows.zip(u_rows).zip(columns).enumerate() {
        let q_row = &mut q_row[..width];
        column.fill_blocks(q_row);
        // q^i = G(k_{s_i}) ⊕ s_i·u^i, masking instead of branching on the secret s_i.
        let mask = Block(((delta.0 >> i) & 1).wrapping_neg());
        for (q, u) in q_row.iter_mut().zip(u_row.chunks_exact(16)) {
            *q ^= Block::from_bytes(u.try_into().expect("16-byte chunk")) & mask;
        }
    }
}

/// The extension receiver's matrices of one batch (the IKNP step, which KOS15 reuses): for
/// every column i, t^i = G(k0_i) as row i of `t` (rows at `stride`) and u^i = t^i ⊕
/// G(k1_i) ⊕ r as row i of `u` (rows of `width` = `packed_choices.len()` blocks), r being
/// the packed choice column. `row` (`width` blocks) is scratch.
#[inline]
pub(crate) fn expand_receiver_columns(
    columns: &mut [(Prg, Prg)],
    packed_choices: &[Block],
    t: &mut [Block],
    stride: usize,
    u: &mut [Block],
    row: &mut [Block],
) {
    let width = packed_choices.len();
    let t_rows = t.chunks_exact_mut(stride);
    let u_rows = u.chunks_exact_mut(width);
    for ((t_row, u_row), (g0, g1)) in t_rows.zip(u_rows).zip(columns) {
        let t_row = &mut t_row[..width];
        g0.fill_blocks(t_row);
        g1.fill_blocks(row);
        // u^i = G(k0_i) ⊕ G(k1_i) ⊕ r.
        for (((u, &t), &g), &r) in u_row.iter_mut().zip(&*t_row).zip(&*row).zip(packed_choices) {
            *u = t ^ g ^ r;
        }
    }
}

/// Transposes a batch matrix (128 rows at `stride`) into `out`, which may be shorter than
/// the batch padded to a multiple of 128.
fn transpose_into(matrix: &[Block], stride: usize, out: &mut [Block]) {
    if out.len().is_multiple_of(KAPPA) {
        transpose_128_strided(matrix, stride, out);
    } else {
        let mut full = vec![Block::ZERO; batch_width(out.len()) * KAPPA];
        transpose_128_strided(matrix, stride, &mut full);
        out.copy_from_slice(&full[..out.len()]);
    }
}

/// Scratch for hashing one batch: the correlated OTs, their tweaks and the hashes.
#[derive(Default)]
struct HashedPairs {
    x: Vec<Block>,
    tweaks: Vec<u64>,
    h0: Vec<Block>,
    h1: Vec<Block>,
}

impl HashedPairs {
    fn resize(&mut self, len: usize, first_index: u64) {
        self.x.resize(len, Block::ZERO);
        self.h0.resize(len, Block::ZERO);
        self.h1.resize(len, Block::ZERO);
        self.tweaks.clear();
        self.tweaks.extend(first_index..first_index + len as u64);
    }
}

impl std::fmt::Debug for IknpSender {
    /// Leaves out Δ and the seeds.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IknpSender")
            .field("next_index", &self.next_index)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for IknpReceiver {
    /// Leaves out the seeds.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IknpReceiver")
            .field("next_index", &self.next_index)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neither_party_sends_its_secret() {
        // The sender's secret s (the garbler's Δ in Yao) stays out of everything it sends;
        // the receiver's choice bits stay out of what it sends.
        use pgc_net::MemoryChannel;
        use pgc_net::RecordingChannel;
        use pgc_net::recording::{assert_bits_absent, assert_block_absent};
        let (a, b) = MemoryChannel::pair();
        let (mut a, mut b) = (RecordingChannel::new(a), RecordingChannel::new(b));
        let mut prg = Prg::from_seed(Block(0x1c));
        let delta = Block(prg.random_block().0 | 1);
        let choices: Vec<bool> = (0..1000).map(|_| prg.random_bool()).collect();
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                let mut r = IknpReceiver::setup(&mut b, &mut Prg::from_seed(Block(2))).unwrap();
                let mut got = r.receive_correlated(&mut b, &choices[..400]).unwrap();
                got.extend(r.receive_random(&mut b, &choices[400..]).unwrap());
                got
            });
            let mut sender =
                IknpSender::setup(&mut a, delta, &mut Prg::from_seed(Block(1))).unwrap();
            let x0 = sender.send_correlated(&mut a, 400).unwrap();
            let pairs = sender.send_random(&mut a, 600).unwrap();
            let got = h.join().unwrap();
            for (j, (&x, &c)) in x0.iter().zip(&choices).enumerate() {
                assert_eq!(got[j], x ^ delta.select(c));
            }
            for (j, (p, &c)) in pairs.iter().zip(&choices[400..]).enumerate() {
                assert_eq!(got[400 + j], if c { p.1 } else { p.0 });
            }
        });
        assert_block_absent(&a.sent(), delta.0, "the IKNP sender's secret s");
        assert_bits_absent(&b.sent(), &choices, "the IKNP receiver's choice bits");
    }

    #[test]
    fn pack_choices_matches_bit_by_bit() {
        let mut prg = Prg::from_seed(Block(5));
        for n in [1usize, 7, 8, 9, 63, 64, 65, 128, 129, 300] {
            let choices: Vec<bool> = (0..n).map(|_| prg.random_bool()).collect();
            let mut packed = vec![Block::ONES; batch_width(n)];
            pack_choices(&choices, &mut packed);
            for j in 0..128 * packed.len() {
                let bit = (packed[j / 128].0 >> (j % 128)) & 1 == 1;
                assert_eq!(bit, j < n && choices[j], "n = {n}, bit {j}");
            }
        }
        // Every byte pattern of the multiply trick.
        for pattern in 0u32..256 {
            let choices: Vec<bool> = (0..8).map(|k| (pattern >> k) & 1 == 1).collect();
            let mut packed = [Block::ZERO];
            pack_choices(&choices, &mut packed);
            assert_eq!(packed[0].0, pattern as u128);
        }
    }
}
