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
    terminal_safe(&text)
}

/// `text` with every control character but newline and tab, and the bidirectional
/// overrides, written as an escape (`\x1b`, `\u{202e}`). Errors quote files, Yosys' and the
/// preprocessor's messages and file names, any of which may come from someone else: on a
/// terminal, an escape sequence in them could rewrite or hide what is shown.
pub fn terminal_safe(text: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let bidi = matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if (c.is_control() && c != '\n' && c != '\t') || bidi {
            if c.is_ascii() {
                let _ = write!(out, "\\x{:02x}", c as u32);
            } else {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_bidi_overrides_are_escaped() {
        assert_eq!(
            terminal_safe("a\x1b[31mb\x07\r\u{9b}c\u{202e}d\n\te ü"),
            "a\\x1b[31mb\\x07\\x0d\\u{9b}c\\u{202e}d\n\te ü"
        );
        // Escaping twice changes nothing more: the escapes are printable.
        let once = terminal_safe("\x1b]0;title\x07");
        assert_eq!(terminal_safe(&once), once);
        let e = anyhow::anyhow!("line 1: found '\x1b[2J'").context("f.txt");
        assert_eq!(error_text(&e), "f.txt: line 1: found '\\x1b[2J'");
    }
}
