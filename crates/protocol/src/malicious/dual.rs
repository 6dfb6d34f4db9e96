//! Dual execution (placeholder until the module lands).

use pgc_circuit::{GateSource, Visibility};
use pgc_net::Channel;

use crate::yao::{Outcome, Party, ProtocolError};

/// One party's side of dual execution.
pub fn run_dual_execution<S: GateSource>(
    _ch: &mut impl Channel,
    _circuit: &S,
    _owners: &[Party],
    _visibility: &[Visibility],
    _me: Party,
    _inputs: &[Vec<bool>],
    _progress: &mut dyn FnMut(u64),
) -> Result<Outcome, ProtocolError> {
    Err(ProtocolError::Input(
        "dual execution is not built yet".into(),
    ))
}
