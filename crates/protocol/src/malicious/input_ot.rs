//! The random OTs through which an evaluator obtains the labels of its input in the
//! malicious protocols: the garbler gets a key pair (k0, k1) per input bit, the evaluator
//! the key of its bit, and labels then travel encrypted under the keys (both labels of a
//! bit, each under its key), so the OT itself never sees a label.
//!
//! The OT must be actively secure: a malicious evaluator must not get both keys of a pair
//! (it would learn both labels), and its choices must be well defined: KOS15 random-OT
//! extension (Keller, Orsini, Scholl, CRYPTO 2015) on Masny–Rindal endemic base OTs
//! (CCS 2019), see `pgc_ot::kos`. Its outputs are only "endemic" (a malicious party may fix
//! its own keys), which is what one-time pads of chosen messages need (Masny–Rindal §5).

use pgc_crypto::{Block, Prg};
use pgc_net::Channel;
use pgc_ot::{KosReceiver, KosSender, OtError};

use crate::yao::ProtocolError;

/// Blocks per frame of encrypted labels (1 MiB).
pub(crate) const FRAME_BLOCKS: usize = 1 << 16;

/// The garbler's side: `n` random key pairs.
pub(crate) fn send_keys(
    ch: &mut (impl Channel + ?Sized),
    n: usize,
    prg: &mut Prg,
) -> Result<Vec<(Block, Block)>, ProtocolError> {
    let mut ot = KosSender::setup(ch, prg).map_err(cheat)?;
    let pairs = ot.send_random(ch, n).map_err(cheat)?;
    ch.flush()?;
    Ok(pairs)
}

/// The evaluator's side: the key of each choice bit.
pub(crate) fn receive_keys(
    ch: &mut (impl Channel + ?Sized),
    choices: &[bool],
    prg: &mut Prg,
) -> Result<Vec<Block>, ProtocolError> {
    let mut ot = KosReceiver::setup(ch, prg).map_err(cheat)?;
    let keys = ot.receive_random(ch, choices).map_err(cheat)?;
    ch.flush()?;
    Ok(keys)
}

/// A failed OT check is a detected cheat like any other.
fn cheat(e: OtError) -> ProtocolError {
    match e {
        OtError::CheatDetected(m) => ProtocolError::CheatDetected(m),
        e => e.into(),
    }
}
