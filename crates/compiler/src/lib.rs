//! pgc's C compiler: the CBMC-GC C subset to Boolean circuits.
//!
//! Pipeline: the system C preprocessor (`cpp`) → `lang-c` parser → symbolic execution that
//! unrolls loops and inlines calls, emitting gates through a [`pgc_circuit::netlist`] builder
//! (constant folding, algebraic simplification and structural hashing on the fly) → dead-gate
//! elimination. Inputs/outputs follow the CBMC-GC naming convention (`INPUT_A_*`, `INPUT_B_*`,
//! `OUTPUT_*`, plus `OUTPUT_A_*`/`OUTPUT_B_*` revealed to one party only).

use std::path::{Path, PathBuf};
use std::time::Duration;

use pgc_circuit::{Circuit, Interface, OptimizeFor};
use serde::Serialize;
use thiserror::Error;

/// Compiler options (the `-D`, `-I`, `--entry`, `--optimize`, `--unroll-limit` flags).
#[derive(Clone, Debug)]
pub struct Options {
    /// `-D NAME[=VALUE]` passed to the preprocessor.
    pub defines: Vec<String>,
    /// `-I DIR` passed to the preprocessor.
    pub include_dirs: Vec<PathBuf>,
    /// Entry function; `None` = `mpc_main`, or the only function defined.
    pub entry: Option<String>,
    pub optimize: OptimizeFor,
    /// Most iterations any single loop may unroll to before it is an error.
    pub unroll_limit: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            defines: Vec::new(),
            include_dirs: Vec::new(),
            entry: None,
            optimize: OptimizeFor::Size,
            unroll_limit: 1 << 20,
        }
    }
}

/// What one optimization did: gates it avoided or removed.
#[derive(Clone, Debug, Serialize)]
pub struct PassStats {
    pub name: &'static str,
    pub gates_removed: u64,
    pub and_gates_removed: u64,
}

/// Figures about one compilation.
#[derive(Clone, Debug, Serialize)]
pub struct CompileStats {
    pub passes: Vec<PassStats>,
    pub gates_emitted: u64,
    pub gates_final: u64,
    pub and_gates_final: u64,
    #[serde(serialize_with = "secs")]
    pub elapsed: Duration,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// A compiled program: the circuit and its typed inputs/outputs.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub circuit: Circuit,
    pub interface: Interface,
    pub stats: CompileStats,
    /// The entry function's name.
    pub entry_name: String,
    /// The entry function's parameter names in order (each is also a port name of
    /// `interface`), so a test harness can call it.
    pub entry_params: Vec<String>,
}

/// A position in the user's source (1-based line and column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourcePos {
    pub file: String,
    pub line: u32,
    pub col: u32,
}

/// Why a program did not compile. Displays as `file:line:col: message` where a position is
/// known, like gcc.
#[derive(Debug, Error)]
pub enum CompileError {
    #[error("{}", at(.pos, .message))]
    Source {
        pos: Option<SourcePos>,
        message: String,
    },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("preprocessor failed:\n{0}")]
    Preprocessor(String),
}

fn at(pos: &Option<SourcePos>, message: &str) -> String {
    match pos {
        Some(p) => format!("{}:{}:{}: {message}", p.file, p.line, p.col),
        None => message.to_string(),
    }
}

impl CompileError {
    /// The source position of the error, if it has one.
    pub fn pos(&self) -> Option<&SourcePos> {
        match self {
            CompileError::Source { pos, .. } => pos.as_ref(),
            _ => None,
        }
    }
}

/// Compiles the C file at `path`.
pub fn compile_file(path: &Path, opts: &Options) -> Result<Compiled, CompileError> {
    let _ = (path, opts);
    Err(CompileError::Source {
        pos: None,
        message: "the C compiler is being built".into(),
    })
}

/// Compiles C source text; `name` is used in error positions (and as the `cpp` file name).
pub fn compile_source(source: &str, name: &str, opts: &Options) -> Result<Compiled, CompileError> {
    let _ = (source, name, opts);
    Err(CompileError::Source {
        pos: None,
        message: "the C compiler is being built".into(),
    })
}
