//! Base oblivious transfer: the "simplest OT" of Chou and Orlandi (*The Simplest Protocol
//! for Oblivious Transfer*, LATINCRYPT 2015, ePrint 2015/267) over the Ristretto group,
//! secure against semi-honest parties (both follow the protocol; either may try to learn
//! more from what it sees). It is not secure against a malicious receiver or sender,
//! which is all pgc's semi-honest Yao protocol needs.
//!
//! Protocol for n transfers, G the Ristretto base point:
//! 1. The sender picks a scalar a and sends A = aG.
//! 2. For each i the receiver picks b_i and sends B_i = b_i G + c_i A (c_i its choice bit).
//! 3. The sender's keys are k0_i = H(i, A, B_i, a B_i) and k1_i = H(i, A, B_i, a B_i - aA);
//!    the receiver's is k_{c_i} = H(i, A, B_i, b_i A), which equals the one it chose.
//!
//! H is BLAKE3 in key-derivation mode with a domain string of its own, truncated to 128
//! bits. Both parties refuse a point that is not a canonical encoding or is the identity.
//! Chosen-message OT adds one message: the sender encrypts m0_i and m1_i under k0_i and k1_i
//! with a one-time pad.
//!
//! The group operations of the n transfers are independent, so [`send_random_threads`] and
//! [`receive_random_threads`] spread them over threads (the scalars are still drawn from the
//! caller's Prg in order, so the messages and keys are exactly those of one thread). The
//! receiver sends its points before it computes its own keys, so that its n
//! variable-base multiplications overlap the sender's instead of preceding them.

use crate::{OtError, recv_exact_frame};
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::Identity;
use pgc_crypto::{Block, Prg};
use pgc_net::Channel;
use subtle::{Choice, ConditionallySelectable};

/// Domain separation for the key derivation.
const KEY_CONTEXT: &str = "pgc-ot base OT key derivation (Chou-Orlandi over Ristretto) v1";

/// Bytes of one compressed point.
pub(crate) const POINT_BYTES: usize = 32;

/// A uniformly random scalar: 64 bytes from the Prg reduced modulo the group order.
pub(crate) fn random_scalar(prg: &mut Prg) -> Scalar {
    let mut wide = [0u8; 64];
    prg.fill_bytes(&mut wide);
    Scalar::from_bytes_mod_order_wide(&wide)
}

/// Decodes point `index` of a peer's message, refusing non-canonical encodings and the
/// identity (a degenerate point would make keys predictable).
pub(crate) fn decode_point(bytes: &[u8], index: usize) -> Result<RistrettoPoint, OtError> {
    let compressed =
        CompressedRistretto::from_slice(bytes).map_err(|_| OtError::InvalidPoint { index })?;
    match compressed.decompress() {
        Some(p) if p != RistrettoPoint::identity() => Ok(p),
        _ => Err(OtError::InvalidPoint { index }),
    }
}

fn derive_key(index: usize, sender: &[u8; 32], receiver: &[u8], shared: &RistrettoPoint) -> Block {
    let mut h = blake3::Hasher::new_derive_key(KEY_CONTEXT);
    h.update(&(index as u64).to_le_bytes());
    h.update(sender);
    h.update(receiver);
    h.update(shared.compress().as_bytes());
    let digest = h.finalize();
    let mut key = [0u8; 16];
    key.copy_from_slice(&digest.as_bytes()[..16]);
    Block::from_bytes(key)
}

/// Fewer transfers than this per thread are not worth a thread (one transfer costs tens of
/// microseconds, starting a thread a few).
const MIN_PER_THREAD: usize = 8;

/// `f(i)` for i in 0..n, in order, computed on up to `threads` scoped threads in contiguous
/// runs (on the caller's thread alone when that is all there is work for).
fn map_indices<T: Send>(n: usize, threads: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = threads.clamp(1, n.div_ceil(MIN_PER_THREAD).max(1));
    if threads == 1 {
        return (0..n).map(f).collect();
    }
    let per = n.div_ceil(threads);
    let f = &f;
    std::thread::scope(|scope| {
        let rest: Vec<_> = (1..threads)
            .map(|t| scope.spawn(move || (t * per..((t + 1) * per).min(n)).map(f).collect()))
            .collect();
        let mut out: Vec<T> = (0..per.min(n)).map(f).collect();
        for handle in rest {
            let part: Vec<T> = handle
                .join()
                .unwrap_or_else(|payload| std::panic::resume_unwind(payload));
            out.extend(part);
        }
        out
    })
}

/// Sender side of `n` random OTs: returns the key pairs (k0_i, k1_i); the receiver learns
/// exactly one key of each pair, the sender does not learn which.
pub fn send_random<C: Channel + ?Sized>(
    ch: &mut C,
    n: usize,
    prg: &mut Prg,
) -> Result<Vec<(Block, Block)>, OtError> {
    send_random_threads(ch, n, prg, 1)
}

/// [`send_random`] with the group operations on up to `threads` threads (same messages,
/// same keys).
pub fn send_random_threads<C: Channel + ?Sized>(
    ch: &mut C,
    n: usize,
    prg: &mut Prg,
    threads: usize,
) -> Result<Vec<(Block, Block)>, OtError> {
    let a = random_scalar(prg);
    let big_a = RistrettoPoint::mul_base(&a);
    let a_bytes = big_a.compress().to_bytes();
    ch.send_frame(&a_bytes)?;
    ch.flush()?;

    let expected = n
        .checked_mul(POINT_BYTES)
        .ok_or_else(|| OtError::Protocol(format!("{n} base OTs is too many")))?;
    let mut points = Vec::new();
    recv_exact_frame(ch, &mut points, expected, "base OT: receiver's points")?;
    let a_times_a = a * big_a;
    map_indices(n, threads, |i| {
        let bytes = &points[i * POINT_BYTES..(i + 1) * POINT_BYTES];
        let big_b = decode_point(bytes, i)?;
        let shared0 = a * big_b;
        let shared1 = shared0 - a_times_a;
        Ok((
            derive_key(i, &a_bytes, bytes, &shared0),
            derive_key(i, &a_bytes, bytes, &shared1),
        ))
    })
    .into_iter()
    .collect()
}

/// Receiver side of random OTs: returns k_{c_i} for every choice bit c_i.
pub fn receive_random<C: Channel + ?Sized>(
    ch: &mut C,
    choices: &[bool],
    prg: &mut Prg,
) -> Result<Vec<Block>, OtError> {
    receive_random_threads(ch, choices, prg, 1)
}

/// [`receive_random`] with the group operations on up to `threads` threads (same messages,
/// same keys).
pub fn receive_random_threads<C: Channel + ?Sized>(
    ch: &mut C,
    choices: &[bool],
    prg: &mut Prg,
    threads: usize,
) -> Result<Vec<Block>, OtError> {
    let mut frame = Vec::new();
    recv_exact_frame(ch, &mut frame, POINT_BYTES, "base OT: sender's point")?;
    let a_bytes: [u8; 32] = frame[..].try_into().expect("length checked above");
    let big_a = decode_point(&a_bytes, 0)?;

    // The scalars in the order one thread draws them, whatever the thread count.
    let scalars: Vec<Scalar> = choices.iter().map(|_| random_scalar(prg)).collect();
    let identity = RistrettoPoint::identity();
    let encoded = map_indices(choices.len(), threads, |i| {
        // B = bG + cA, selecting A or the identity without a secret-dependent branch.
        let chosen =
            RistrettoPoint::conditional_select(&identity, &big_a, Choice::from(choices[i] as u8));
        (RistrettoPoint::mul_base(&scalars[i]) + chosen)
            .compress()
            .to_bytes()
    });
    let points: Vec<u8> = encoded.concat();
    ch.send_frame(&points)?;
    ch.flush()?;

    // b·A after sending: the sender works on the points meanwhile.
    Ok(map_indices(choices.len(), threads, |i| {
        let b_bytes = &points[i * POINT_BYTES..(i + 1) * POINT_BYTES];
        derive_key(i, &a_bytes, b_bytes, &(scalars[i] * big_a))
    }))
}

/// Sender side of chosen-message OT: the receiver learns `messages[i].c_i` and nothing
/// about the other message.
pub fn send_chosen<C: Channel + ?Sized>(
    ch: &mut C,
    messages: &[(Block, Block)],
    prg: &mut Prg,
) -> Result<(), OtError> {
    let keys = send_random(ch, messages.len(), prg)?;
    let mut pads = Vec::with_capacity(messages.len() * 32);
    for (&(m0, m1), &(k0, k1)) in messages.iter().zip(&keys) {
        pads.extend_from_slice(&(m0 ^ k0).to_bytes());
        pads.extend_from_slice(&(m1 ^ k1).to_bytes());
    }
    ch.send_frame(&pads)?;
    ch.flush()?;
    Ok(())
}

/// Receiver side of chosen-message OT: returns the chosen message of every pair.
pub fn receive_chosen<C: Channel + ?Sized>(
    ch: &mut C,
    choices: &[bool],
    prg: &mut Prg,
) -> Result<Vec<Block>, OtError> {
    let keys = receive_random(ch, choices, prg)?;
    let mut pads = Vec::new();
    recv_exact_frame(
        ch,
        &mut pads,
        choices.len() * 32,
        "base OT: encrypted messages",
    )?;
    Ok(pads
        .chunks_exact(32)
        .zip(choices.iter().zip(&keys))
        .map(|(pair, (&choice, &key))| {
            let e0 = Block::from_bytes(pair[..16].try_into().expect("16-byte half"));
            let e1 = Block::from_bytes(pair[16..].try_into().expect("16-byte half"));
            // e_c without a branch on the secret choice.
            (e0 ^ (e0 ^ e1).select(choice)) ^ key
        })
        .collect())
}
