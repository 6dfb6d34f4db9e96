//! A secure equality test: party A holds a 32-byte string T_A, party B a string T_B, and
//! both learn whether T_A = T_B and nothing else, even if one of them deviates. Dual
//! execution ([`super::dual`]) runs it on the two parties' output-validation strings, the
//! step Huang, Katz, Evans (IEEE S&P 2012, §3) require to be secure against a malicious
//! peer.
//!
//! It is a Diffie–Hellman test over the Ristretto group (as the base OT in `pgc_ot::base`):
//! h hashes a string into the group (64 bytes of BLAKE3 output, mapped with
//! `RistrettoPoint::from_uniform_bytes`), a and b are fresh non-zero scalars of A and B.
//! Message flow:
//! 1. A → B: X = a·h(T_A); B → A: Y = b·h(T_B) (each sent before reading the other's).
//! 2. A → B: a commitment to a·Y: BLAKE3 (key-derivation mode, a domain string of its own)
//!    of a fresh random 32-byte nonce and a·Y.
//! 3. B → A: b·X.
//! 4. A → B: the opening, the nonce and a·Y. B checks it against the commitment.
//!
//! Both accept iff a·Y = b·X. Honestly run, a·Y = ab·h(T_B) and b·X = ab·h(T_A), equal
//! exactly when T_A = T_B (barring a hash collision).
//!
//! Who learns what. Under decisional Diffie–Hellman, with h modelled as a random oracle,
//! a·h(T) is a uniformly random group element to whoever lacks a, so X and Y say nothing
//! about T_A, T_B; and when T_A ≠ T_B, ab·h(T_A) and ab·h(T_B) look like two independent
//! random elements, so the last messages say only "unequal". A cheater chooses its own
//! message freely, but whatever it sends amounts to testing the peer's string against *one*
//! value of its choice (the string it hashed): each run answers one hypothesis, one bit.
//!
//! Why the commitment: were a·Y sent in the clear before b·X, B could return it as its own
//! "b·X" and A would accept whatever T_B was. B must send b·X first, and the commitment
//! keeps A from choosing a·Y after seeing b·X.
//!
//! Why not simply exchange T_A and T_B (or hashes of them): T is built from garbled-circuit
//! labels, and a garbler knows *both* labels of every wire of its own circuit. Seeing the
//! peer's T, it could recompute T offline for every candidate output (or for every outcome
//! of a deliberately wrong circuit or a selective-failure attack) and learn which one the
//! peer got: many bits of the peer's input, not one.
//!
//! Both parties refuse a point that is not a canonical encoding or is the identity: a
//! peer sending X = identity (a = 0) and committing to the identity would make b·X = a·Y
//! hold whatever the strings. B also refuses an opening that does not match the
//! commitment. A party that stops early (A after reading b·X, say) leaves the other with
//! a closed connection and no verdict; neither accepts anything then.

use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::Identity;
use pgc_crypto::Prg;
use pgc_net::Channel;

use crate::yao::{Party, ProtocolError};

/// Domain string of the hash into the group.
const HASH_TO_GROUP_CONTEXT: &str = "pgc dual execution equality test: hash to Ristretto v1";
/// Domain string of A's commitment.
const COMMIT_CONTEXT: &str = "pgc dual execution equality test: commitment v1";
/// Bytes of one compressed point.
const POINT_BYTES: usize = 32;
/// Bytes of the commitment nonce.
const NONCE_BYTES: usize = 32;

/// h(T): a group element no one knows the discrete logarithm of.
fn hash_to_group(value: &[u8; 32]) -> RistrettoPoint {
    let mut wide = [0u8; 64];
    blake3::Hasher::new_derive_key(HASH_TO_GROUP_CONTEXT)
        .update(value)
        .finalize_xof()
        .fill(&mut wide);
    RistrettoPoint::from_uniform_bytes(&wide)
}

/// A uniformly random non-zero scalar.
fn random_nonzero_scalar(prg: &mut Prg) -> Scalar {
    loop {
        let mut wide = [0u8; 64];
        prg.fill_bytes(&mut wide);
        let s = Scalar::from_bytes_mod_order_wide(&wide);
        if s != Scalar::ZERO {
            return s;
        }
    }
}

fn commitment(nonce: &[u8; NONCE_BYTES], point: &[u8; POINT_BYTES]) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key(COMMIT_CONTEXT);
    h.update(nonce);
    h.update(point);
    *h.finalize().as_bytes()
}

/// Receives a frame of exactly `N` bytes.
fn recv_exact<const N: usize>(
    ch: &mut (impl Channel + ?Sized),
    what: &str,
) -> Result<[u8; N], ProtocolError> {
    let bad = |len: String| {
        ProtocolError::Peer(format!(
            "expected {N} bytes of {what} in the equality test, got {len}"
        ))
    };
    let bytes = ch.recv_frame(N).map_err(|e| match e {
        pgc_net::NetError::FrameTooLarge { len, .. } => bad(len.to_string()),
        e => e.into(),
    })?;
    bytes
        .as_slice()
        .try_into()
        .map_err(|_| bad(bytes.len().to_string()))
}

/// Receives a point, refusing non-canonical encodings and the identity.
fn recv_point(
    ch: &mut (impl Channel + ?Sized),
    what: &str,
) -> Result<RistrettoPoint, ProtocolError> {
    let bytes = recv_exact::<POINT_BYTES>(ch, what)?;
    decode_point(&bytes).ok_or_else(|| {
        ProtocolError::Peer(format!(
            "{what} in the equality test is not a valid group element (or is the identity)"
        ))
    })
}

fn decode_point(bytes: &[u8; POINT_BYTES]) -> Option<RistrettoPoint> {
    CompressedRistretto(*bytes)
        .decompress()
        .filter(|p| *p != RistrettoPoint::identity())
}

fn send(ch: &mut (impl Channel + ?Sized), bytes: &[u8]) -> Result<(), ProtocolError> {
    ch.send_frame(bytes)?;
    ch.flush()?;
    Ok(())
}

/// Runs the equality test as party `me` on this party's string `value`. Returns whether the
/// peer's string is equal; an error if the peer's messages are malformed or its opening
/// does not match its commitment (then no verdict was reached).
pub fn equality_test(
    ch: &mut (impl Channel + ?Sized),
    me: Party,
    value: &[u8; 32],
) -> Result<bool, ProtocolError> {
    let mut prg = Prg::from_os_entropy();
    let secret = random_nonzero_scalar(&mut prg);
    let mine = (secret * hash_to_group(value)).compress();
    send(ch, mine.as_bytes())?;
    let theirs = recv_point(ch, "the peer's blinded string")?;
    // a·Y at A, b·X at B: both ab·h(T) when the strings match.
    let result = (secret * theirs).compress().to_bytes();
    match me {
        Party::A => {
            let mut nonce = [0u8; NONCE_BYTES];
            prg.fill_bytes(&mut nonce);
            send(ch, &commitment(&nonce, &result))?;
            let peer_result = recv_point(ch, "the peer's result")?;
            let mut opening = [0u8; NONCE_BYTES + POINT_BYTES];
            opening[..NONCE_BYTES].copy_from_slice(&nonce);
            opening[NONCE_BYTES..].copy_from_slice(&result);
            send(ch, &opening)?;
            Ok(peer_result.compress().to_bytes() == result)
        }
        Party::B => {
            let committed = recv_exact::<32>(ch, "the peer's commitment")?;
            send(ch, &result)?;
            let opening = recv_exact::<{ NONCE_BYTES + POINT_BYTES }>(ch, "the peer's opening")?;
            let nonce: [u8; NONCE_BYTES] = opening[..NONCE_BYTES].try_into().expect("32 bytes");
            let opened: [u8; POINT_BYTES] = opening[NONCE_BYTES..].try_into().expect("32 bytes");
            if commitment(&nonce, &opened) != committed {
                return Err(ProtocolError::CheatDetected(
                    "the peer's equality-test opening does not match its commitment".into(),
                ));
            }
            Ok(opened == result)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgc_net::MemoryChannel;

    fn run_both(
        a: [u8; 32],
        b: [u8; 32],
    ) -> (Result<bool, ProtocolError>, Result<bool, ProtocolError>) {
        let (mut ca, cb) = MemoryChannel::pair();
        std::thread::scope(|s| {
            let ha = s.spawn(move || equality_test(&mut ca, Party::A, &a));
            // B's end closes as B returns, before the join.
            let rb = equality_test(&mut { cb }, Party::B, &b);
            (ha.join().unwrap(), rb)
        })
    }

    #[test]
    fn equal_strings_pass_and_unequal_ones_fail_on_both_sides() {
        let (a, b) = run_both([7; 32], [7; 32]);
        assert!(a.unwrap() && b.unwrap());
        let mut other = [7; 32];
        other[31] ^= 1;
        let (a, b) = run_both([7; 32], other);
        assert!(!a.unwrap() && !b.unwrap());
    }

    /// A fake peer as A that sends `x` as its blinded string, then a commitment, then
    /// reads B's result and sends `opening`; returns B's verdict.
    fn against_fake_a(
        x: Vec<u8>,
        opening: impl FnOnce(&[u8; 32]) -> Vec<u8> + Send,
    ) -> Result<bool, ProtocolError> {
        let (mut ca, cb) = MemoryChannel::pair();
        std::thread::scope(|s| {
            s.spawn(move || {
                let _ = ca.send_frame(&x);
                let _ = ca.flush();
                let _ = ca.recv_frame(64);
                let nonce = [1u8; 32];
                let claimed = [2u8; 32];
                let _ = ca.send_frame(&commitment(&nonce, &claimed));
                let _ = ca.flush();
                if let Ok(r) = ca.recv_frame(64) {
                    let r: [u8; 32] = r.try_into().unwrap_or([0; 32]);
                    let _ = ca.send_frame(&opening(&r));
                    let _ = ca.flush();
                }
            });
            // B's end closes as B returns, so the fake peer never waits on a party that
            // stopped.
            equality_test(&mut { cb }, Party::B, &[9; 32])
        })
    }

    #[test]
    fn invalid_points_and_sizes_are_refused() {
        let identity = RistrettoPoint::identity().compress().to_bytes().to_vec();
        let e = against_fake_a(identity, |_| vec![]).unwrap_err();
        assert!(matches!(e, ProtocolError::Peer(_)), "{e}");
        assert!(e.to_string().contains("identity"), "{e}");
        let e = against_fake_a(vec![0xff; 32], |_| vec![]).unwrap_err();
        assert!(matches!(e, ProtocolError::Peer(_)), "{e}");
        let e = against_fake_a(vec![1; 31], |_| vec![]).unwrap_err();
        assert!(e.to_string().contains("expected 32 bytes"), "{e}");
        let e = against_fake_a(vec![1; 1000], |_| vec![]).unwrap_err();
        assert!(e.to_string().contains("expected 32 bytes"), "{e}");
    }

    #[test]
    fn an_opening_that_does_not_match_the_commitment_is_cheating() {
        // The fake A committed to [2; 32] with nonce [1; 32]; it then "opens" to B's own
        // result (what a cheater would like B to see: equality) and is caught.
        let h = RistrettoPoint::mul_base(&Scalar::from(5u64))
            .compress()
            .to_bytes()
            .to_vec();
        let e = against_fake_a(h.clone(), |r| [[1u8; 32], *r].concat()).unwrap_err();
        assert!(matches!(e, ProtocolError::CheatDetected(_)), "{e}");
        // An honest opening of a wrong value is a plain "unequal".
        let got = against_fake_a(h.clone(), |_| [[1u8; 32], [2u8; 32]].concat()).unwrap();
        assert!(!got);
        let e = against_fake_a(h, |_| vec![0; 63]).unwrap_err();
        assert!(matches!(e, ProtocolError::Peer(_)), "{e}");
    }

    #[test]
    fn hash_to_group_separates_strings() {
        assert_ne!(hash_to_group(&[0; 32]), hash_to_group(&[1; 32]));
        assert_ne!(hash_to_group(&[0; 32]), RistrettoPoint::identity());
    }
}
