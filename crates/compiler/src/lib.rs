//! pgc's C compiler: the CBMC-GC C subset to Boolean circuits.
//!
//! Pipeline: the system C preprocessor (`cpp`) → `lang-c` parser → symbolic execution that
//! unrolls loops and inlines calls, emitting gates through a [`pgc_circuit::netlist`] builder
//! (constant folding, algebraic simplification and structural hashing on the fly) → dead-gate
//! elimination. Inputs/outputs follow the CBMC-GC naming convention (`INPUT_A_*`, `INPUT_B_*`,
//! `OUTPUT_*`, plus `OUTPUT_A_*`/`OUTPUT_B_*` revealed to one party only).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod decl;
mod expr;
mod lower;
pub mod parallel;
/// Random C programs for the differential tests against gcc (test support).
#[doc(hidden)]
pub mod randprog;
mod source;
#[cfg(test)]
mod tests;
mod types;

use lower::Lowerer;
use source::LineMap;

use pgc_circuit::netlist::NetBuilder;
use pgc_circuit::{BuildStats, Circuit, Interface, OptimizeFor};
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
    /// Find parallel regions (`for` loops whose iterations are independent) on their own;
    /// loops marked `#pragma omp parallel for` become regions either way.
    pub regions: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            defines: Vec::new(),
            include_dirs: Vec::new(),
            entry: None,
            optimize: OptimizeFor::Size,
            unroll_limit: 1 << 20,
            regions: true,
        }
    }
}

/// What one optimization did: gates it avoided or removed.
#[derive(Clone, Debug, Serialize)]
pub struct PassStats {
    pub name: &'static str,
    pub gates_removed: u64,
    /// The ANDs among them, where the pass tells them apart.
    pub and_gates_removed: Option<u64>,
}

/// Figures about one compilation.
#[derive(Clone, Debug, Serialize)]
pub struct CompileStats {
    pub passes: Vec<PassStats>,
    /// AND and XOR gates the front end emitted (after the on-the-fly rules).
    pub gates_emitted: u64,
    /// AND and XOR gates left after dead-gate elimination (the circuit also has the free
    /// INV/constant gates that complemented or constant outputs need).
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
    /// The parallel regions found, as gate ranges of `circuit` (see
    /// [`Compiled::parallel_circuit`]).
    pub regions: Vec<pgc_circuit::RegionSpan>,
    pub interface: Interface,
    pub stats: CompileStats,
    /// The entry function's name.
    pub entry_name: String,
    /// The entry function's parameter names in order (each is also a port name of
    /// `interface`), so a test harness can call it.
    pub entry_params: Vec<String>,
}

impl Compiled {
    /// The circuit split into sequential phases and parallel regions (each region's
    /// instances sharing one stored template where they are identical).
    pub fn parallel_circuit(
        &self,
    ) -> Result<pgc_circuit::ParallelCircuit, pgc_circuit::ParallelError> {
        pgc_circuit::ParallelCircuit::from_flat(&self.circuit, &self.regions)
    }
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
    let source = std::fs::read(path).map_err(|e| CompileError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let source = String::from_utf8(source).map_err(|_| CompileError::Source {
        pos: None,
        message: format!("{} is not valid UTF-8", path.display()),
    })?;
    let name = path.display().to_string();
    compile_in(&source, &name, path.parent(), opts)
}

/// Compiles C source text; `name` is used in error positions (and as the `cpp` file name).
pub fn compile_source(source: &str, name: &str, opts: &Options) -> Result<Compiled, CompileError> {
    compile_in(source, name, None, opts)
}

/// The preprocessed text of a program (what a cache should key on: it includes headers).
pub fn preprocess_file(path: &Path, opts: &Options) -> Result<String, CompileError> {
    let source = std::fs::read_to_string(path).map_err(|e| CompileError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    source::preprocess(&source, &path.display().to_string(), path.parent(), opts)
}

/// A program run through the front end: the prepared netlist (dead gates gone, numbering
/// fixed, gates still in RAM or in the spill file) and its interface.
struct FrontEnd {
    netlist: pgc_circuit::netlist::PreparedNetlist,
    interface: Interface,
    entry_name: String,
    entry_params: Vec<String>,
    start: Instant,
}

/// Deeply nested C (long expression chains, deep blocks) recurses deeply in the parser and in
/// symbolic execution; a big stack keeps that from overflowing (only touched pages cost).
const FRONT_END_STACK: usize = 1 << 30;

fn front_end(
    source: &str,
    name: &str,
    dir: Option<&Path>,
    opts: &Options,
    spill: Option<&Path>,
) -> Result<FrontEnd, CompileError> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("pgc-compile".into())
            .stack_size(FRONT_END_STACK)
            .spawn_scoped(s, || {
                front_end_on_this_thread(source, name, dir, opts, spill)
            })
            .map_err(|e| CompileError::Source {
                pos: None,
                message: format!("cannot start the compiler thread: {e}"),
            })?
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

fn front_end_on_this_thread(
    source: &str,
    name: &str,
    dir: Option<&Path>,
    opts: &Options,
    spill: Option<&Path>,
) -> Result<FrontEnd, CompileError> {
    let start = Instant::now();
    let mut text = source::preprocess(
        source,
        name,
        dir.filter(|d| !d.as_os_str().is_empty()),
        opts,
    )?;
    let pragma_result = parallel::take_pragmas(&mut text);
    let map = LineMap::new(&text, name, source);
    let pragmas = pragma_result.map_err(|(offset, message)| CompileError::Source {
        pos: Some(map.pos(offset)),
        message,
    })?;
    let parsed = lang_c::driver::parse_preprocessed(&lang_c::driver::Config::default(), text)
        .map_err(|e| {
            let mut expected: Vec<&str> = e.expected.iter().copied().collect();
            expected.sort_unstable();
            let list = if expected.len() > 8 {
                format!("{} or …", expected[..8].join(", "))
            } else {
                expected.join(", ")
            };
            CompileError::Source {
                pos: Some(map.pos(e.offset)),
                message: format!("syntax error: expected {list}"),
            }
        })?;
    let builder = match spill {
        None => NetBuilder::new(opts.optimize),
        Some(dir) => {
            NetBuilder::with_spill(opts.optimize, dir).map_err(|e| CompileError::Source {
                pos: None,
                message: format!("cannot create the spill file: {e}"),
            })?
        }
    };
    let mut low = Lowerer::new(opts, &map, builder);
    low.text = &parsed.source;
    low.pragmas = pragmas;
    low.collect_globals(&parsed.unit)?;
    let entry = pick_entry(&low, opts, name)?;
    let (entry_name, entry_params) = low.run_entry(entry)?;
    let outputs = low.finish_outputs();
    if outputs.is_empty() {
        return Err(CompileError::Source {
            pos: Some(map.pos(entry.span.start)),
            message: format!(
                "`{entry_name}` has no outputs: name a variable OUTPUT_… (or a pointer parameter `int *OUTPUT_…`)"
            ),
        });
    }
    let interface = Interface {
        inputs: std::mem::take(&mut low.inputs),
        outputs,
    };
    let netlist = low.g.prepare().map_err(|e| CompileError::Source {
        pos: None,
        message: format!("{name}: the circuit cannot be built: {e}"),
    })?;
    Ok(FrontEnd {
        netlist,
        interface,
        entry_name,
        entry_params,
        start,
    })
}

fn compile_stats(b: &BuildStats, and_final: u64, start: Instant) -> CompileStats {
    let pass = |name, gates_removed, and_gates_removed| PassStats {
        name,
        gates_removed,
        and_gates_removed,
    };
    CompileStats {
        passes: vec![
            pass("constant folding", b.constant_folded, None),
            pass("algebraic simplification", b.algebraic, None),
            pass("structural hashing", b.structural_hashing, None),
            pass(
                "dead-gate elimination",
                b.dead_removed,
                Some(b.and_dead_removed),
            ),
        ],
        gates_emitted: b.gates_emitted,
        gates_final: b.gates_emitted - b.dead_removed,
        and_gates_final: and_final,
        elapsed: start.elapsed(),
    }
}

fn compile_in(
    source: &str,
    name: &str,
    dir: Option<&Path>,
    opts: &Options,
) -> Result<Compiled, CompileError> {
    let fe = front_end(source, name, dir, opts, None)?;
    let regions = fe.netlist.region_spans().to_vec();
    let (circuit, b) = fe
        .netlist
        .into_circuit()
        .map_err(|e| CompileError::Source {
            pos: None,
            message: format!("{name}: the circuit cannot be built: {e}"),
        })?;
    let stats = compile_stats(&b, circuit.and_count(), fe.start);
    Ok(Compiled {
        circuit,
        regions,
        interface: fe.interface,
        stats,
        entry_name: fe.entry_name,
        entry_params: fe.entry_params,
    })
}

/// Compiles the C file at `path` straight into a `.pgc` file written to `out`, never holding
/// the whole circuit in memory: gates stream to a temporary spill file in `spill_dir`,
/// dead-gate elimination runs over that file, and the final gates stream into `out`. Memory
/// stays at the program's variables, the bounded structural-hashing table, and two bits per
/// emitted gate. Returns the interface and the statistics.
pub fn compile_file_streaming<W: std::io::Write>(
    path: &Path,
    opts: &Options,
    spill_dir: &Path,
    out: W,
) -> Result<(Interface, CompileStats), CompileError> {
    let source = std::fs::read_to_string(path).map_err(|e| CompileError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let name = path.display().to_string();
    let fe = front_end(&source, &name, path.parent(), opts, Some(spill_dir))?;
    let and_final = fe.netlist.and_count();
    let write_err = |e: pgc_circuit::PgcFileError| CompileError::Source {
        pos: None,
        message: format!("writing the circuit: {e}"),
    };
    let mut writer = pgc_circuit::pgcfile::PgcWriter::new(out, fe.netlist.layout(), &fe.interface)
        .map_err(write_err)?;
    let b = fe
        .netlist
        .for_each_chunk::<StreamError>(|gates| {
            writer.write_gates(gates).map_err(StreamError::Write)
        })
        .map_err(|e| match e {
            StreamError::Write(e) => write_err(e),
            StreamError::Netlist(e) => CompileError::Source {
                pos: None,
                message: format!("{name}: {e}"),
            },
        })?;
    writer.finish().map_err(write_err)?;
    Ok((fe.interface, compile_stats(&b, and_final, fe.start)))
}

enum StreamError {
    Write(pgc_circuit::PgcFileError),
    Netlist(pgc_circuit::NetlistError),
}

impl From<pgc_circuit::NetlistError> for StreamError {
    fn from(e: pgc_circuit::NetlistError) -> Self {
        StreamError::Netlist(e)
    }
}

fn pick_entry<'a>(
    low: &Lowerer<'a>,
    opts: &Options,
    name: &str,
) -> Result<&'a lang_c::span::Node<lang_c::ast::FunctionDefinition>, CompileError> {
    let err = |message: String| CompileError::Source {
        pos: None,
        message: format!("{name}: {message}"),
    };
    if let Some(e) = &opts.entry {
        return low
            .functions
            .get(e.as_str())
            .copied()
            .ok_or_else(|| err(format!("no function named `{e}` (--entry)")));
    }
    if let Some(f) = low.functions.get("mpc_main") {
        return Ok(f);
    }
    let user: Vec<_> = low
        .functions
        .iter()
        .filter(|(_, f)| !low.map.is_system(f.span.start))
        .collect();
    match user.as_slice() {
        [(_, f)] => Ok(f),
        [] => Err(err("no function defined (the entry is `mpc_main`)".into())),
        many => {
            let mut names: Vec<&str> = many.iter().map(|(n, _)| n.as_str()).collect();
            names.sort_unstable();
            Err(err(format!(
                "no `mpc_main` and several functions ({}): name the entry with --entry NAME",
                names.join(", ")
            )))
        }
    }
}
