//! Ending every connection of this process at once: what Ctrl-C does in the Python package,
//! where an interrupted call must return (the interpreter goes on) instead of the process
//! exiting as the CLI does.
//!
//! [`interrupt_all`] moves a process-wide generation on. Each connection remembers the
//! generation it was made in; from then on its next read or write, or the wait of one it is
//! blocked in (blocked calls wake every [`CHECK_EVERY`] to look), fails with
//! [`NetError::Interrupted`](crate::NetError::Interrupted), as do accepts and connects that
//! started before. Both parties of a local run are in this process, so both stop; a remote
//! peer sees the connection close. Connections made after the interrupt are not affected.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// How long a blocked read or write waits before it looks for an interrupt again.
pub(crate) const CHECK_EVERY: Duration = Duration::from_millis(200);

/// Interrupts every connection (and accept or connect under way) made before this call.
pub fn interrupt_all() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

/// The generation a connection made now belongs to.
pub(crate) fn generation() -> u64 {
    GENERATION.load(Ordering::SeqCst)
}

/// Whether [`interrupt_all`] ran since `generation` was current.
pub(crate) fn interrupted_since(generation: u64) -> bool {
    GENERATION.load(Ordering::Relaxed) != generation
}
