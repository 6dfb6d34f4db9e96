//! Cut-and-choose Yao (placeholder until the module lands).

use pgc_circuit::{GateSource, Visibility};
use pgc_net::Channel;

use crate::yao::{Outcome, Party, ProtocolError};

/// How many circuit copies a run garbles and how many of them the evaluator checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyPlan {
    pub copies: usize,
    pub checked: usize,
}

/// One party's side of cut-and-choose Yao.
#[allow(clippy::too_many_arguments)]
pub fn run_cut_and_choose<S: GateSource>(
    _ch: &mut impl Channel,
    _circuit: &S,
    _owners: &[Party],
    _visibility: &[Visibility],
    _me: Party,
    _inputs: &[Vec<bool>],
    _stat_sec: u32,
    _threads: usize,
    _progress: &mut dyn FnMut(u64),
) -> Result<Outcome, ProtocolError> {
    Err(ProtocolError::Input(
        "malicious security is not built yet".into(),
    ))
}
