//! The random OTs through which an evaluator obtains the labels of its input in the
//! malicious protocols: the garbler gets a key pair (k0, k1) per input bit, the evaluator
//! the key of its bit, and labels then travel encrypted under the keys (both labels of a
//! bit, each under its key), so the OT itself never sees a label.
//!
//! The OT must be actively secure: a malicious evaluator must not get both keys of a pair
//! (it would learn both labels), and its choices must be well defined. See `pgc_ot::kos`.

use pgc_crypto::{Block, Prg};
use pgc_net::Channel;
use pgc_ot::{IknpReceiver, IknpSender};

use crate::yao::ProtocolError;

/// Blocks per frame of encrypted labels (1 MiB).
pub(crate) const FRAME_BLOCKS: usize = 1 << 16;

/// The garbler's side: `n` random key pairs.
pub(crate) fn send_keys(
    ch: &mut (impl Channel + ?Sized),
    n: usize,
    prg: &mut Prg,
) -> Result<Vec<(Block, Block)>, ProtocolError> {
    // KOS: switch to the actively secure extension.
    let delta = pgc_garble::random_delta(prg);
    let mut ot = IknpSender::setup(ch, delta, prg)?;
    let pairs = ot.send_random(ch, n)?;
    ch.flush()?;
    Ok(pairs)
}

/// The evaluator's side: the key of each choice bit.
pub(crate) fn receive_keys(
    ch: &mut (impl Channel + ?Sized),
    choices: &[bool],
    prg: &mut Prg,
) -> Result<Vec<Block>, ProtocolError> {
    let mut ot = IknpReceiver::setup(ch, prg)?;
    let keys = ot.receive_random(ch, choices)?;
    ch.flush()?;
    Ok(keys)
}
