//! A test-only record of the secrets a party draws, so that the transcript tests
//! (`transcript_tests`) can check that none of them crosses the wire.
//!
//! [`note`] is called where a protocol draws a secret (a garbler's Δ, its zero-labels, a
//! cut-and-choose copy seed, the labels an evaluator obtained). In a release or ordinary
//! build it is an empty inline function, so nothing is stored and no secret leaves the
//! function that drew it; only `cargo test` of this crate compiles the recording, which
//! goes into a thread-local list of the thread that drew the secret (a party's protocol
//! thread), read back with [`take`] on that thread.

use pgc_crypto::Block;

/// Which secret a [`note`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum Secret {
    /// A garbler's free-XOR offset Δ (one per garbled circuit or copy), or the secret s
    /// of an OT-extension sender drawn outside `pgc_ot` (GMW's triples).
    Delta,
    /// A garbler's zero-labels of its own input wires, in input-bit order.
    OwnZeroLabels,
    /// A garbler's zero-labels of the peer's input wires, in input-bit order.
    PeerZeroLabels,
    /// The labels an evaluator obtained for its own input wires, in input-bit order.
    EvaluatorLabels,
    /// A cut-and-choose copy seed (one per copy, in copy order).
    CopySeed,
}

#[cfg(test)]
thread_local! {
    static NOTED: std::cell::RefCell<Vec<(Secret, Vec<Block>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Records `blocks` as `what` (tests only; a no-op otherwise).
#[inline(always)]
#[cfg_attr(not(test), allow(unused_variables))]
pub(crate) fn note(what: Secret, blocks: &[Block]) {
    #[cfg(test)]
    NOTED.with(|n| n.borrow_mut().push((what, blocks.to_vec())));
}

/// Everything this thread noted since the last call, in order.
#[cfg(test)]
pub(crate) fn take() -> Vec<(Secret, Vec<Block>)> {
    NOTED.with(|n| std::mem::take(&mut *n.borrow_mut()))
}
