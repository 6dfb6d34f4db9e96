//! Oblivious transfer for pgc.
//!
//! Semi-honest security (both parties follow the protocol): Chou–Orlandi base OT over
//! Ristretto ([`base`]) and IKNP OT extension ([`IknpSender`], [`IknpReceiver`]) with
//! correlated, random and chosen-message variants.
//!
//! Active security (either party may deviate): Masny–Rindal endemic base OT over Ristretto
//! ([`endemic`]) and KOS15 random-OT extension with its consistency check ([`KosSender`],
//! [`KosReceiver`]), built on the same column generators and [`transpose`] as IKNP, with
//! [`gf128`] arithmetic for the check. A receiver caught by the check yields
//! [`OtError::CheatDetected`]. Their random outputs are endemic (see [`kos`]): a malicious
//! party may fix the keys it learns, so chosen messages are sent masked with the keys.
//!
//! Every message goes through a [`pgc_net::Channel`]; every received length is checked, so a
//! misbehaving peer produces an [`OtError`], never a panic or an oversized allocation.
//! Errors never contain choice bits, keys or Δ.

use pgc_net::{Channel, NetError};
use thiserror::Error;

pub mod base;
pub mod endemic;
pub mod gf128;
pub mod iknp;
pub mod kos;
pub mod transpose;

pub use iknp::{IknpReceiver, IknpSender};
pub use kos::{KosReceiver, KosSender};

/// What can go wrong in an OT protocol.
#[derive(Debug, Error)]
pub enum OtError {
    #[error("OT channel error: {0}")]
    Net(#[from] NetError),
    /// The peer sent a group element that is not a canonical Ristretto encoding, or is the
    /// identity. `index` is the point's position in the peer's message.
    #[error("the peer sent an invalid Ristretto point (point {index} of its message)")]
    InvalidPoint { index: usize },
    /// The peer's message does not fit the protocol (wrong size, wrong order).
    #[error("OT protocol error: {0}")]
    Protocol(String),
    /// The caller's arguments do not fit together (e.g. output and choice lengths).
    #[error("invalid OT call: {0}")]
    BadArgument(String),
    /// The peer provably deviated from an actively secure protocol (a failed consistency
    /// check, a commitment it does not open). Abort the session: nothing the protocol
    /// produced may be used, and the same OT instance refuses to continue.
    #[error("the peer cheated: {0}")]
    CheatDetected(String),
}

/// Receives one frame that must be exactly `expected` bytes long, refusing longer frames
/// before allocating for them. `what` names the message in the error.
pub(crate) fn recv_exact_frame<C: Channel + ?Sized>(
    ch: &mut C,
    buf: &mut Vec<u8>,
    expected: usize,
    what: &str,
) -> Result<(), OtError> {
    match ch.recv_frame_into(buf, expected) {
        Ok(()) if buf.len() == expected => Ok(()),
        Ok(()) => Err(OtError::Protocol(format!(
            "{what}: expected {expected} bytes, got {}",
            buf.len()
        ))),
        Err(NetError::FrameTooLarge { len, .. }) => Err(OtError::Protocol(format!(
            "{what}: expected {expected} bytes, got {len}"
        ))),
        Err(e) => Err(e.into()),
    }
}
