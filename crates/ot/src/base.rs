//! Base oblivious transfer: the "simplest OT" of Chou and Orlandi (2015) over the Ristretto
//! group, secure against semi-honest parties (both follow the protocol; either may try to
//! learn more from what it sees). It is not secure against a malicious receiver or sender,
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

/// Sender side of `n` random OTs: returns the key pairs (k0_i, k1_i); the receiver learns
/// exactly one key of each pair, the sender does not learn which.
pub fn send_random<C: Channel + ?Sized>(
    ch: &mut C,
    n: usize,
    prg: &mut Prg,
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
    points
        .chunks_exact(POINT_BYTES)
        .enumerate()
        .map(|(i, bytes)| {
            let big_b = decode_point(bytes, i)?;
            let shared0 = a * big_b;
            let shared1 = shared0 - a_times_a;
            Ok((
                derive_key(i, &a_bytes, bytes, &shared0),
                derive_key(i, &a_bytes, bytes, &shared1),
            ))
        })
        .collect()
}

/// Receiver side of random OTs: returns k_{c_i} for every choice bit c_i.
pub fn receive_random<C: Channel + ?Sized>(
    ch: &mut C,
    choices: &[bool],
    prg: &mut Prg,
) -> Result<Vec<Block>, OtError> {
    let mut frame = Vec::new();
    recv_exact_frame(ch, &mut frame, POINT_BYTES, "base OT: sender's point")?;
    let a_bytes: [u8; 32] = frame[..].try_into().expect("length checked above");
    let big_a = decode_point(&a_bytes, 0)?;

    let identity = RistrettoPoint::identity();
    let mut points = Vec::with_capacity(choices.len() * POINT_BYTES);
    let mut shared = Vec::with_capacity(choices.len());
    for &choice in choices {
        let b = random_scalar(prg);
        // B = bG + cA, selecting A or the identity without a secret-dependent branch.
        let chosen =
            RistrettoPoint::conditional_select(&identity, &big_a, Choice::from(choice as u8));
        let big_b = RistrettoPoint::mul_base(&b) + chosen;
        points.extend_from_slice(big_b.compress().as_bytes());
        shared.push(b * big_a);
    }
    ch.send_frame(&points)?;
    ch.flush()?;

    Ok(shared
        .iter()
        .zip(points.chunks_exact(POINT_BYTES))
        .enumerate()
        .map(|(i, (s, b_bytes))| derive_key(i, &a_bytes, b_bytes, s))
        .collect())
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
