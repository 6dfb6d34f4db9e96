//! The two-party protocols of pgc, over any [`pgc_net::Channel`].
//!
//! [`yao`] is semi-honest Yao: party A garbles, party B evaluates. Each party learns the
//! outputs it may see (all of them, or per output value: both, only A, only B) and nothing
//! else about the other's inputs, provided both follow the protocol
//! (semi-honest, a.k.a. honest-but-curious, security). A party that deviates can learn or
//! change more; nothing here protects against that.

pub mod auto;
pub mod choice;
pub mod cluster;
pub mod completion;
pub mod gmw;
pub mod gpu;
pub mod handshake;
pub mod local;
pub mod malicious;
pub mod parallel;
mod secret_probe;
#[cfg(test)]
mod transcript_tests;
pub mod yao;

pub use choice::ProtocolChoice;
pub use gmw::{GmwConfig, GmwStats, run_gmw};
pub use gpu::Device;
pub use handshake::{Hello, PROTOCOL_VERSION};
pub use local::{
    LocalSecurity, LocalTcpOptions, run_local_gmw, run_local_parallel, run_local_parallel_secured,
    run_local_tcp, run_local_tcp_with, split_inputs,
};
pub use malicious::Security;
pub use parallel::{ParallelConfig, ParallelMode};
pub use pgc_circuit::Visibility;
pub use pgc_garble::Garbling;
pub use yao::{
    Outcome, Party, ProtocolError, RunOptions, RunStats, all_visible, check_own_inputs,
    run_evaluator, run_evaluator_with, run_evaluator_with_visibility, run_garbler,
    run_garbler_with, run_garbler_with_visibility, sees,
};
