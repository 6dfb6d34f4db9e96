//! pgc as a library: what the `pgc` command and the Python package (`python/`) both stand on.
//!
//! - [`circuits`]: open what a user names (a C program or Verilog design, compiled on the fly
//!   through the compile cache; a `.pgc` file; a Bristol file; `builtin:NAME`).
//! - [`typed_io`]: inputs by name (`NAME=VALUE` texts, JSON objects and files) and typed
//!   outputs.
//! - [`session`]: one party's run with a peer ([`session::PartySession`]) and both parties in
//!   this process ([`session::run_local`]), returning outcomes for the caller to print or
//!   hand back.
//! - The options are clap argument structs ([`circuits::CircuitArgs`],
//!   [`options::ProtocolArgs`], [`level::LevelArgs`], [`protocol_arg::ProtocolChoiceArgs`],
//!   [`security::SecurityArgs`]): the CLI's flags, their help and the library's options are
//!   one definition, and a library caller fills in the fields it needs over `Default`.
//!
//! Notes and progress go to stderr (never with `quiet`); nothing here writes to stdout.

pub mod circuits;
pub mod level;
pub mod options;
pub mod progress;
pub mod protocol_arg;
pub mod report;
pub mod security;
pub mod session;
pub mod typed_io;
pub mod watchdog;

/// Whether `--device gpu` can run here: the GPU's description, or what is missing.
pub use pgc_gpu::{GpuError, probe as gpu_probe};

/// The error and its causes on one line, leaving out a cause whose text the message before
/// it already contains (many errors quote their source): how the CLI and the Python
/// exceptions show errors.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if !text.contains(&c) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&c);
        }
    }
    text
}
