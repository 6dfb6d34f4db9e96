//! Base oblivious transfer secure against malicious parties: the endemic OT of Masny and
//! Rindal ("Endemic Oblivious Transfer", ACM CCS 2019, ePrint 2019/706; MR19), §4, Fig. 8
//! with n = 2 and Diffie–Hellman over Ristretto as the one-round key agreement, batched as
//! McQuoid, Rosulek and Roy prescribe ("Batching Base Oblivious Transfers", ASIACRYPT 2021,
//! ePrint 2021/682; MRR21), §4, Fig. 3: one sender message for the whole batch, and every
//! hash and key derivation tagged with the OT's index i and branch j, so that a receiver
//! that repeats or correlates its messages across instances still gets unrelated keys
//! (MRR21 §3 shows the untagged batch is insecure).
//!
//! For n transfers, G the Ristretto base point and H_{i,j} a hash onto the group (64 bytes
//! of BLAKE3 in XOF mode with a domain string of its own, over i, j and the input point,
//! mapped by `RistrettoPoint::from_uniform_bytes`):
//!
//! - sender → receiver: A = aG for a random scalar a (one point for the batch).
//! - receiver → sender: for each i, the pair (r_{i,0}, r_{i,1}). With choice bit c the
//!   receiver draws r_{i,1−c} uniformly from the group (hashed random bytes: nobody knows
//!   its discrete log) and a random scalar b_i, and sets r_{i,c} = b_i G − H_{i,c}(r_{i,1−c}).
//!
//! Neither message depends on the other, so both parties send first and then receive:
//! the protocol takes one round. Outputs, with M_{i,j} = r_{i,j} + H_{i,j}(r_{i,1−j}) (so
//! M_{i,c} = b_i G):
//! - sender: k_{i,j} = KDF(i, j, A, r_{i,0}, r_{i,1}, a·M_{i,j}) for j = 0, 1;
//! - receiver: k_{i,c} = KDF(i, c, A, r_{i,0}, r_{i,1}, b_i·A), equal to the sender's k_{i,c}.
//!
//! KDF is BLAKE3 in key-derivation mode with its own domain string, truncated to 128 bits.
//! Both parties refuse a point that is not a canonical encoding or is the identity.
//!
//! Who learns what (MR19 Thm. 4.1, MRR21 Thm. 9, programmable random-oracle model, hashed
//! Diffie–Hellman): (r_{i,0}, r_{i,1}) is a uniform pair whatever c is, so the sender
//! learns nothing about the choices. Fixing either r fixes the other M through the random
//! oracle, so the receiver knows the discrete log of at most one M_{i,j} and learns at
//! most one key. The security is *endemic* (MR19 §2.3): a malicious party may choose the
//! keys it learns (a malicious receiver its k_{i,c}, a malicious sender both), while every
//! key it does not choose is uniform to it. That suffices for the base OTs of OT extension
//! (MR19 §5.2) and for one-time-padding chosen messages (MR19 Lemma 3.4, Fig. 4); callers
//! must not rely on a key being uniform against the party that learns it.

use crate::base::{POINT_BYTES, decode_point, random_scalar};
use crate::{OtError, recv_exact_frame};
use curve25519_dalek::ristretto::RistrettoPoint;
use pgc_crypto::{Block, Prg};
use pgc_net::Channel;
use subtle::{Choice, ConditionallySelectable};

/// Domain separation for the key derivation.
const KEY_CONTEXT: &str = "pgc-ot endemic OT key derivation (Masny-Rindal over Ristretto) v1";

/// Domain separation for the hash onto the group.
const HASH_TO_GROUP_CONTEXT: &str =
    "pgc-ot endemic OT hash to group (Masny-Rindal over Ristretto) v1";

/// Bytes of the receiver's message per OT: r_{i,0} then r_{i,1}.
const PAIR_BYTES: usize = 2 * POINT_BYTES;

/// H_{i,j}(point): a point of the group with unknown discrete log.
fn hash_to_group(index: usize, branch: u8, point: &[u8]) -> RistrettoPoint {
    let mut h = blake3::Hasher::new_derive_key(HASH_TO_GROUP_CONTEXT);
    h.update(&(index as u64).to_le_bytes());
    h.update(&[branch]);
    h.update(point);
    let mut wide = [0u8; 64];
    h.finalize_xof().fill(&mut wide);
    RistrettoPoint::from_uniform_bytes(&wide)
}

/// KDF(i, j, A, r_{i,0}, r_{i,1}, shared): the key of branch j of OT i, bound to the
/// whole transcript of that OT.
fn derive_key(
    index: usize,
    branch: u8,
    sender: &[u8; POINT_BYTES],
    pair: &[u8],
    shared: &RistrettoPoint,
) -> Block {
    let mut h = blake3::Hasher::new_derive_key(KEY_CONTEXT);
    h.update(&(index as u64).to_le_bytes());
    h.update(&[branch]);
    h.update(sender);
    h.update(pair);
    h.update(shared.compress().as_bytes());
    let mut key = [0u8; 16];
    key.copy_from_slice(&h.finalize().as_bytes()[..16]);
    Block::from_bytes(key)
}

/// Sender side of `n` random OTs: returns the key pairs (k_{i,0}, k_{i,1}). The receiver
/// learns one key of each pair; the sender does not learn which.
pub fn send_random<C: Channel + ?Sized>(
    ch: &mut C,
    n: usize,
    prg: &mut Prg,
) -> Result<Vec<(Block, Block)>, OtError> {
    let a = random_scalar(prg);
    let a_bytes = RistrettoPoint::mul_base(&a).compress().to_bytes();
    ch.send_frame(&a_bytes)?;
    ch.flush()?;

    let expected = n
        .checked_mul(PAIR_BYTES)
        .ok_or_else(|| OtError::BadArgument(format!("{n} base OTs is too many")))?;
    let mut pairs = Vec::new();
    recv_exact_frame(
        ch,
        &mut pairs,
        expected,
        "endemic OT: receiver's point pairs",
    )?;
    pairs
        .chunks_exact(PAIR_BYTES)
        .enumerate()
        .map(|(i, pair)| {
            let (r0_bytes, r1_bytes) = pair.split_at(POINT_BYTES);
            let r0 = decode_point(r0_bytes, 2 * i)?;
            let r1 = decode_point(r1_bytes, 2 * i + 1)?;
            let m0 = r0 + hash_to_group(i, 0, r1_bytes);
            let m1 = r1 + hash_to_group(i, 1, r0_bytes);
            Ok((
                derive_key(i, 0, &a_bytes, pair, &(a * m0)),
                derive_key(i, 1, &a_bytes, pair, &(a * m1)),
            ))
        })
        .collect()
}

/// Receiver side of random OTs: returns k_{i,c_i} for every choice bit c_i.
pub fn receive_random<C: Channel + ?Sized>(
    ch: &mut C,
    choices: &[bool],
    prg: &mut Prg,
) -> Result<Vec<Block>, OtError> {
    let mut pairs = Vec::with_capacity(choices.len() * PAIR_BYTES);
    let mut secrets = Vec::with_capacity(choices.len());
    for (i, &choice) in choices.iter().enumerate() {
        let mut wide = [0u8; 64];
        prg.fill_bytes(&mut wide);
        let mut other = RistrettoPoint::from_uniform_bytes(&wide)
            .compress()
            .to_bytes();
        let b = random_scalar(prg);
        // The hash input holds the choice as data only; BLAKE3 does not branch on data.
        let mut chosen = (RistrettoPoint::mul_base(&b) - hash_to_group(i, choice as u8, &other))
            .compress()
            .to_bytes();
        // (r_0, r_1) = (chosen, other), swapped when c = 1, without a secret branch.
        let swap = Choice::from(choice as u8);
        for (x, y) in chosen.iter_mut().zip(other.iter_mut()) {
            u8::conditional_swap(x, y, swap);
        }
        pairs.extend_from_slice(&chosen);
        pairs.extend_from_slice(&other);
        secrets.push(b);
    }
    ch.send_frame(&pairs)?;
    ch.flush()?;

    let mut frame = Vec::new();
    recv_exact_frame(ch, &mut frame, POINT_BYTES, "endemic OT: sender's point")?;
    let a_bytes: [u8; POINT_BYTES] = frame[..].try_into().expect("length checked above");
    let big_a = decode_point(&a_bytes, 0)?;
    Ok(secrets
        .iter()
        .zip(pairs.chunks_exact(PAIR_BYTES))
        .zip(choices)
        .enumerate()
        .map(|(i, ((&b, pair), &choice))| derive_key(i, choice as u8, &a_bytes, pair, &(b * big_a)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two branches of one OT, and the same branch of two OTs, hash apart: the tags
    /// MRR21 asks for are really in the input.
    #[test]
    fn hashes_and_keys_are_tagged_by_index_and_branch() {
        let point = curve25519_dalek::constants::RISTRETTO_BASEPOINT_COMPRESSED.to_bytes();
        let h = hash_to_group(3, 0, &point);
        assert_ne!(h, hash_to_group(3, 1, &point));
        assert_ne!(h, hash_to_group(4, 0, &point));
        let shared = RistrettoPoint::mul_base(&curve25519_dalek::Scalar::from(7u8));
        let pair = [point, point].concat();
        let k = derive_key(3, 0, &point, &pair, &shared);
        assert_ne!(k, derive_key(3, 1, &point, &pair, &shared));
        assert_ne!(k, derive_key(4, 0, &point, &pair, &shared));
    }
}
