//! pgc's C compiler: the CBMC-GC C subset to Boolean circuits.
//!
//! Pipeline: the system C preprocessor (`cpp`) → `lang-c` parser → symbolic execution that
//! unrolls loops and inlines calls, emitting gates through a [`pgc_circuit::netlist`] builder
//! (constant folding, algebraic simplification and structural hashing on the fly) → dead-gate
//! elimination. Inputs/outputs follow the CBMC-GC naming convention (`INPUT_A_*`, `INPUT_B_*`,
//! `OUTPUT_*`, plus `OUTPUT_A_*`/`OUTPUT_B_*` revealed to one party only).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod bits;
pub mod compact;
mod decl;
mod deferred;
mod expr;
mod float;
mod loops;
mod lower;
pub mod parallel;
mod phases;
/// Random C programs for the differential tests against gcc (test support).
#[doc(hidden)]
pub mod randprog;
mod range;
mod replay;
mod source;
mod strings;
#[cfg(test)]
mod tests;
mod types;
pub mod verilog;

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
    /// Entry function; `None` = `mpc_main`, or the only function defined. For Verilog, the
    /// top module (`--top`); `None` = the only module no other instantiates.
    pub entry: Option<String>,
    pub optimize: OptimizeFor,
    /// Most iterations any single loop may unroll to before it is an error.
    pub unroll_limit: u64,
    /// Most loop iterations and function calls the whole compilation may run (nested loops
    /// multiply: each may stay under `unroll_limit` while together they run for hours).
    pub step_limit: u64,
    /// Find parallel regions (`for` loops whose iterations are independent) on their own;
    /// loops marked `#pragma omp parallel for` become regions either way.
    pub regions: bool,
    /// Compile each function once per argument shape as a template of a compact circuit
    /// (see [`compact`]) instead of inlining every call; parallel regions are then not
    /// looked for.
    pub compact: bool,
    /// Where the compiler reports how far it has come, for a progress display; `None` =
    /// nowhere.
    pub progress: Option<std::sync::Arc<Progress>>,
    /// Stop with [`CompileError::OverBudget`] once this many gates are made (calls of
    /// templates counted at their expanded size); `None` = no limit. Lets a caller try the
    /// fully unrolled form first and fall back to the compact one for large programs. A
    /// Verilog design stops with [`CompileError::CellOverBudget`] instead, before a cell
    /// whose block alone needs more, or at the cell that went over.
    pub gate_budget: Option<u64>,
    /// How Verilog designs are synthesized (see [`verilog`]); C ignores it.
    pub verilog_flow: verilog::VerilogFlow,
    /// Value-range analysis: integer operations over only the bits that can be nonzero
    /// (see the `range` module); off only to measure what it saves.
    pub value_ranges: bool,
    /// Compact compilation: loop templates record how their results' intervals follow from
    /// their inputs' and replay that per call (the `replay` module), so a nest whose rows make new
    /// shapes may key its rows by rounded bounds and store them once; off only to measure
    /// what it gains.
    pub bound_replay: bool,
}

/// How far a compilation has come ([`Options::progress`]), read by another thread.
#[derive(Debug, Default)]
pub struct Progress {
    /// Gates made so far (calls of templates counted at their expanded size).
    pub gates: std::sync::atomic::AtomicU64,
    /// Loop iterations and calls run so far, counted against [`Options::step_limit`] (a
    /// program whose loops make no gates shows here that it is still working).
    pub steps: std::sync::atomic::AtomicU64,
}

/// The default [`Options::step_limit`]: 2^30 loop iterations and calls. Symbolic execution
/// runs about half a million iterations of a small constant loop per second (measured on the
/// development machine), so this bounds a compilation that makes no gates to about half an
/// hour; the largest programs of BENCHMARKS.md run about 10^7 (EDIT_LEN = 2047: 4.2 M
/// iterations), and each iteration that makes gates costs memory long before 2^30.
pub const DEFAULT_STEP_LIMIT: u64 = 1 << 30;

impl Default for Options {
    fn default() -> Self {
        Options {
            defines: Vec::new(),
            include_dirs: Vec::new(),
            entry: None,
            optimize: OptimizeFor::Size,
            unroll_limit: 1 << 20,
            step_limit: DEFAULT_STEP_LIMIT,
            regions: true,
            compact: false,
            progress: None,
            gate_budget: None,
            verilog_flow: verilog::VerilogFlow::Words,
            value_ranges: true,
            bound_replay: true,
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
    /// Where the time went, phase by phase (empty where a path does not time its phases).
    pub phases: Vec<PhaseTime>,
}

pub use phases::{PhaseTime, thread_cpu_time};

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
    /// The program made more gates than [`Options::gate_budget`] allows.
    #[error("the program makes more than {budget} gates (the budget for this compilation)")]
    OverBudget { budget: u64 },
    /// A Verilog design went over [`Options::gate_budget`]; `message` names the cell that
    /// did (a Verilog design has no compact form to fall back to).
    #[error("{}", at(.pos, .message))]
    CellOverBudget {
        pos: Option<SourcePos>,
        message: String,
        budget: u64,
    },
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
            CompileError::Source { pos, .. } | CompileError::CellOverBudget { pos, .. } => {
                pos.as_ref()
            }
            _ => None,
        }
    }
}

/// Compiles the C file at `path`.
pub fn compile_file(path: &Path, opts: &Options) -> Result<Compiled, CompileError> {
    let source = read_source(path)?;
    let name = path.display().to_string();
    compile_in(&source, &name, Origin::Source(path.parent()), opts)
}

/// Most bytes of C source read from a device or a pipe (a regular file is bounded by
/// `--max-memory`): as much as the preprocessed program may be, far above real programs.
pub const MAX_SOURCE_BYTES: u64 = 256 << 20;

/// The C source at `path` as text; a byte that is not UTF-8 (a comment saved as Latin-1,
/// say) is an error at its line and column, so that it can be found.
fn read_source(path: &Path) -> Result<String, CompileError> {
    let bytes = pgc_circuit::limits::read_text_file(path, MAX_SOURCE_BYTES).map_err(|e| {
        CompileError::Io {
            path: path.to_path_buf(),
            source: e,
        }
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let line_start = bytes[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        CompileError::Source {
            pos: Some(SourcePos {
                file: path.display().to_string(),
                line: 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count() as u32,
                // Columns count characters, as in the compiler's other errors.
                col: 1 + String::from_utf8_lossy(&bytes[line_start..at])
                    .chars()
                    .count() as u32,
            }),
            message: format!(
                "byte 0x{:02x} is not UTF-8, which pgc reads C source as (convert the file, \
                 e.g. iconv -f latin1 -t utf-8)",
                bytes[at]
            ),
        }
    })
}

/// Compiles C source text; `name` is used in error positions (and as the `cpp` file name).
pub fn compile_source(source: &str, name: &str, opts: &Options) -> Result<Compiled, CompileError> {
    compile_in(source, name, Origin::Source(None), opts)
}

/// Compiles text a C preprocessor has already produced (as [`preprocess_file`] returns it):
/// no `cpp` runs, so `#include` and macros are not expanded; `# line "file"` markers still
/// map positions back to the user's files. For callers that preprocess once themselves, and
/// for fuzzing the compiler without a process per input.
pub fn compile_preprocessed(
    text: &str,
    name: &str,
    opts: &Options,
) -> Result<Compiled, CompileError> {
    compile_in(text, name, Origin::Preprocessed, opts)
}

/// The preprocessed text of a program (what a cache should key on: it includes headers).
pub fn preprocess_file(path: &Path, opts: &Options) -> Result<String, CompileError> {
    let source = read_source(path)?;
    source::preprocess(&source, &path.display().to_string(), path.parent(), opts)
}

/// A program run through the front end: the prepared netlist (dead gates gone, numbering
/// fixed, gates still in RAM or in the spill file) and its interface.
struct FrontEnd {
    netlist: pgc_circuit::netlist::PreparedNetlist,
    /// Templates of compact compilation (empty otherwise).
    templates: Vec<pgc_circuit::compact::Template>,
    calls_reused: u64,
    /// Loops with iterations run as template calls, and those iterations.
    loops_outlined: u64,
    loop_iterations_outlined: u64,
    /// Of those, nests (outer loops' bodies stored once), and their iterations.
    loops_outlined_nested: u64,
    loop_iterations_outlined_nested: u64,
    /// What the value-range analysis avoided.
    ranges: range::RangeStats,
    interface: Interface,
    entry_name: String,
    entry_params: Vec<String>,
    start: Instant,
    /// Parsing, running the statements, preparing the netlist.
    phases: Vec<PhaseTime>,
}

/// How many loops found to be no regions after all (see [`front_end`]) are each taken out
/// of region detection with another pass before detection is turned off altogether.
const MAX_SEQUENTIAL_RETRIES: usize = 8;

/// Deeply nested C (long expression chains, deep blocks) recurses deeply in the parser and in
/// symbolic execution; a big stack keeps that from overflowing (only touched pages cost).
const FRONT_END_STACK: usize = 1 << 30;

/// Where a program's text comes from.
#[derive(Clone, Copy)]
enum Origin<'a> {
    /// C source, run through `cpp` first; `#include "…"` also searches this directory.
    Source(Option<&'a Path>),
    /// Text a C preprocessor has already produced: no `cpp` runs.
    Preprocessed,
}

fn front_end(
    source: &str,
    name: &str,
    origin: Origin<'_>,
    opts: &Options,
    spill: Option<&Path>,
) -> Result<FrontEnd, CompileError> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("pgc-compile".into())
            .stack_size(FRONT_END_STACK)
            .spawn_scoped(s, || {
                front_end_on_this_thread(source, name, origin, opts, spill)
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
    origin: Origin<'_>,
    opts: &Options,
    spill: Option<&Path>,
) -> Result<FrontEnd, CompileError> {
    let start = Instant::now();
    let mut watch = phases::Stopwatch::start();
    let mut phases = Vec::new();
    let mut text = match origin {
        Origin::Source(dir) => source::preprocess(
            source,
            name,
            dir.filter(|d| !d.as_os_str().is_empty()),
            opts,
        )?,
        Origin::Preprocessed => source.to_string(),
    };
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
    watch.lap("parse", &mut phases);
    // A loop that region detection chose on its own may turn out, while its statements
    // run, to have a reduction that partial results cannot compute (a min over a value of
    // another type); that pass stops, and the program is run again with that loop in
    // order. Only such programs pay for another pass; after a few, detection is turned
    // off for every loop not marked with a pragma, which ends it.
    let mut sequential = std::collections::HashSet::new();
    let no_detection = Options {
        regions: false,
        ..opts.clone()
    };
    let mut pass_opts = opts;
    let (mut low, entry, entry_name, entry_params) = loop {
        let builder = match spill {
            None => NetBuilder::new(pass_opts.optimize),
            Some(dir) => NetBuilder::with_spill(pass_opts.optimize, dir).map_err(|e| {
                CompileError::Source {
                    pos: None,
                    message: format!("cannot create the spill file: {e}"),
                }
            })?,
        };
        let mut low = Lowerer::new(pass_opts, &map, builder);
        low.text = &parsed.source;
        low.pragmas = pragmas.clone();
        low.sequential_loops = sequential.clone();
        low.collect_globals(&parsed.unit)?;
        let entry = pick_entry(&low, pass_opts, name)?;
        // A write cut short because the storage of large variables is full is an error here.
        match low
            .run_entry(entry)
            .and_then(|r| low.check_storage().map(|()| r))
        {
            Ok((entry_name, entry_params)) => break (low, entry, entry_name, entry_params),
            Err(e) => match low.not_a_region {
                Some(lower::NotARegion(at)) if pass_opts.regions && sequential.insert(at) => {
                    if sequential.len() > MAX_SEQUENTIAL_RETRIES {
                        pass_opts = &no_detection;
                    }
                }
                _ => return Err(e),
            },
        }
    };
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
    watch.lap("run the statements", &mut phases);
    let netlist = low.g.prepare().map_err(|e| CompileError::Source {
        pos: None,
        message: format!("{name}: the circuit cannot be built: {e}"),
    })?;
    watch.lap("prepare the netlist", &mut phases);
    Ok(FrontEnd {
        netlist,
        templates: std::mem::take(&mut low.compact.templates),
        calls_reused: low.compact.calls_reused,
        loops_outlined: low.compact.loops.loops_outlined(),
        loop_iterations_outlined: low.compact.loops.iterations,
        loops_outlined_nested: low.compact.loops.nests_outlined(),
        loop_iterations_outlined_nested: low.compact.loops.nest_iterations,
        ranges: low.ranges.stats,
        interface,
        entry_name,
        entry_params,
        start,
        phases,
    })
}

fn compile_stats(
    b: &BuildStats,
    ranges: &range::RangeStats,
    and_final: u64,
    start: Instant,
) -> CompileStats {
    let pass = |name, gates_removed, and_gates_removed| PassStats {
        name,
        gates_removed,
        and_gates_removed,
    };
    CompileStats {
        passes: vec![
            pass(
                "value ranges",
                ranges.gates_avoided,
                Some(ranges.and_gates_avoided),
            ),
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
        phases: Vec::new(),
    }
}

fn compile_in(
    source: &str,
    name: &str,
    origin: Origin<'_>,
    opts: &Options,
) -> Result<Compiled, CompileError> {
    let fe = front_end(source, name, origin, opts, None)?;
    let mut watch = phases::Stopwatch::start();
    let regions = fe.netlist.region_spans().to_vec();
    let (circuit, b) = fe
        .netlist
        .into_circuit()
        .map_err(|e| CompileError::Source {
            pos: None,
            message: format!("{name}: the circuit cannot be built: {e}"),
        })?;
    let mut stats = compile_stats(&b, &fe.ranges, circuit.and_count(), fe.start);
    stats.phases = fe.phases;
    watch.lap("build the circuit", &mut stats.phases);
    Ok(Compiled {
        circuit,
        regions,
        interface: fe.interface,
        stats,
        entry_name: fe.entry_name,
        entry_params: fe.entry_params,
    })
}

/// A program compiled into a compact circuit (see [`Options::compact`]).
pub struct CompiledCompact {
    pub circuit: pgc_circuit::compact::CompactCircuit,
    pub interface: Interface,
    /// Figures of the main body; `gates_final`/`and_gates_final` count the expanded circuit.
    pub stats: CompileStats,
    /// Calls answered by an already compiled template.
    pub calls_reused: u64,
    /// Loops written inline whose iterations became template calls, and those iterations.
    pub loops_outlined: u64,
    pub loop_iterations_outlined: u64,
    /// Of those, outer loops whose bodies (holding inner loops) were stored once, and their
    /// iterations.
    pub loops_outlined_nested: u64,
    pub loop_iterations_outlined_nested: u64,
    pub entry_name: String,
    pub entry_params: Vec<String>,
}

/// Compiles the C file at `path` into a compact circuit held in memory (functions called
/// again with arguments of the same shape become calls of one template).
pub fn compile_compact_file(path: &Path, opts: &Options) -> Result<CompiledCompact, CompileError> {
    let source = read_source(path)?;
    compact_in(
        &source,
        &path.display().to_string(),
        Origin::Source(path.parent()),
        opts,
    )
}

/// [`compile_compact_file`] for source text; `name` is used in error messages.
pub fn compile_compact_source(
    source: &str,
    name: &str,
    opts: &Options,
) -> Result<CompiledCompact, CompileError> {
    compact_in(source, name, Origin::Source(None), opts)
}

/// [`compile_compact_source`] for text a C preprocessor has already produced (see
/// [`compile_preprocessed`]).
pub fn compile_compact_preprocessed(
    text: &str,
    name: &str,
    opts: &Options,
) -> Result<CompiledCompact, CompileError> {
    compact_in(text, name, Origin::Preprocessed, opts)
}

fn compact_in(
    source: &str,
    name: &str,
    origin: Origin<'_>,
    opts: &Options,
) -> Result<CompiledCompact, CompileError> {
    let mut opts = opts.clone();
    opts.compact = true;
    let fe = front_end(source, name, origin, &opts, None)?;
    let mut watch = phases::Stopwatch::start();
    let fail = |e: String| CompileError::Source {
        pos: None,
        message: format!("{name}: the circuit cannot be built: {e}"),
    };
    let (layout, items, b) = fe.netlist.into_items().map_err(|e| fail(e.to_string()))?;
    let circuit = pgc_circuit::compact::CompactCircuit::from_ssa(layout, fe.templates, items)
        .map_err(|e| fail(e.to_string()))?;
    let counts = pgc_circuit::compact::compact_stats(&circuit).map_err(|e| fail(e.to_string()))?;
    let mut stats = compile_stats(&b, &fe.ranges, counts.and_gates, fe.start);
    stats.gates_final = counts.gates;
    stats.phases = fe.phases;
    watch.lap("build the compact circuit", &mut stats.phases);
    Ok(CompiledCompact {
        circuit,
        interface: fe.interface,
        stats,
        calls_reused: fe.calls_reused,
        loops_outlined: fe.loops_outlined,
        loop_iterations_outlined: fe.loop_iterations_outlined,
        loops_outlined_nested: fe.loops_outlined_nested,
        loop_iterations_outlined_nested: fe.loop_iterations_outlined_nested,
        entry_name: fe.entry_name,
        entry_params: fe.entry_params,
    })
}

/// Compiles the C file at `path` into a compact circuit written to the `.pgc` file `out`
/// (format v3) in bounded memory: the netlist and its calls spill to temporary files in
/// `spill_dir`; the main body is read from them backward once to find each wire's last
/// use, and forward to assign reusable wire slots while it is written out. So
/// memory holds the program's variables, the templates, and a few bits per main-body wire;
/// never the body itself.
pub fn compile_compact_streaming(
    path: &Path,
    opts: &Options,
    spill_dir: &Path,
    out: &Path,
) -> Result<(Interface, CompileStats, CompactSummary), CompileError> {
    use pgc_circuit::compact::{LastUses, MainSlotter};
    let source = read_source(path)?;
    let name = path.display().to_string();
    let mut opts = opts.clone();
    opts.compact = true;
    let mut fe = front_end(
        &source,
        &name,
        Origin::Source(path.parent()),
        &opts,
        Some(spill_dir),
    )?;
    let mut phases = std::mem::take(&mut fe.phases);
    let mut watch = phases::Stopwatch::start();
    let fail = |e: String| CompileError::Source {
        pos: None,
        message: format!("{name}: {e}"),
    };
    let ssa_layout = fe.netlist.layout().clone();
    let templates = fe.templates;
    // Backward over the netlist: each wire's last use. Then forward once, assigning slots
    // while writing; the header, written first with the SSA layout, gets the slot layout at
    // the end. Both passes read the netlist's own spill files: a parked copy of the body
    // was as large as the rest together, and writing fresh pages costs far more than
    // reading cached ones.
    let compact_fail = |e: pgc_circuit::compact::CompactError| fail(e.to_string());
    let mut last_uses =
        LastUses::new(&ssa_layout, ssa_layout.num_wires as u64).map_err(compact_fail)?;
    fe.netlist
        .for_each_item_backward::<ItemPassError>(|items| {
            last_uses.feed_backward(items);
            Ok(())
        })
        .map_err(|e| e.into_compile_error(&fail))?;
    watch.lap("last uses (backward)", &mut phases);
    let out_err = |e: std::io::Error| CompileError::Io {
        path: out.to_path_buf(),
        source: e,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(out)
        .map_err(out_err)?;
    let write_err = |e: pgc_circuit::PgcFileError| fail(format!("writing {}: {e}", out.display()));
    let mut writer = pgc_circuit::pgcfile::PgcCompactWriter::new(
        std::io::BufWriter::with_capacity(1 << 20, file),
        &ssa_layout,
        &fe.interface,
        &templates,
    )
    .map_err(write_err)?;
    // The templates are in the file: only their sizes are needed from here on (to count the
    // main body's expanded gates and the scratch it needs when run).
    let sizes =
        pgc_circuit::compact::TemplateSizes::new(&templates).map_err(|e| fail(e.to_string()))?;
    if sizes.max_depth() > u32::MAX as u64 {
        return Err(fail(format!(
            "the templates need {} scratch wires (at most 2^32 - 1)",
            sizes.max_depth()
        )));
    }
    let template_count = templates.len() as u64;
    drop(templates);
    // Expanded counts (main-level gates plus each call's template) on the way.
    let mut gates = 0u64;
    let mut ands = 0u64;
    let mut calls = 0u64;
    let mut slotter = MainSlotter::new(last_uses);
    let b = fe
        .netlist
        .for_each_item::<ItemPassError>(|chunk| {
            for item in chunk.iter() {
                match item {
                    pgc_circuit::compact::Item::Gate(_) => gates += 1,
                    pgc_circuit::compact::Item::Call(c) => {
                        let (g, a) = sizes.counts(c.template).ok_or_else(|| {
                            ItemPassError::Failed(fail(format!(
                                "call of missing template {}",
                                c.template
                            )))
                        })?;
                        gates += g;
                        ands += a;
                        calls += 1;
                    }
                }
            }
            slotter
                .rename_forward(chunk)
                .map_err(|e| ItemPassError::Failed(compact_fail(e)))?;
            writer
                .write_items(chunk)
                .map_err(|e| ItemPassError::Failed(write_err(e)))
        })
        .map_err(|e| e.into_compile_error(&fail))?;
    let ands = ands + b.and_final;
    let layout = slotter.finish().map_err(compact_fail)?;
    let w = writer.finish().map_err(write_err)?;
    let mut file = w
        .into_inner()
        .map_err(|e| fail(format!("writing {}: {}", out.display(), e.error())))?;
    watch.lap("slots and write (forward)", &mut phases);
    pgc_circuit::pgcfile::patch_compact_layout(&mut file, &layout, &fe.interface)
        .map_err(write_err)?;
    file.sync_all().map_err(out_err)?;
    // Label memory when run: the main body's slots plus the deepest template's scratch.
    let peak_live_wires = layout.num_wires as u64 + sizes.max_depth();
    watch.lap("header and checksums", &mut phases);
    let mut stats = compile_stats(&b, &fe.ranges, ands, fe.start);
    stats.gates_final = gates;
    stats.phases = phases;
    let summary = CompactSummary {
        templates: template_count,
        calls,
        calls_reused: fe.calls_reused,
        loops_outlined: fe.loops_outlined,
        loop_iterations_outlined: fe.loop_iterations_outlined,
        loops_outlined_nested: fe.loops_outlined_nested,
        loop_iterations_outlined_nested: fe.loop_iterations_outlined_nested,
        main_slots: layout.num_wires as u64,
        peak_live_wires,
    };
    Ok((fe.interface, stats, summary))
}

/// What compact compilation made: templates, calls and the label memory they imply.
#[derive(Clone, Debug, Serialize)]
pub struct CompactSummary {
    pub templates: u64,
    /// Calls in the main body.
    pub calls: u64,
    /// Calls answered by a template compiled for an earlier call.
    pub calls_reused: u64,
    /// Loops written inline whose iterations became template calls
    /// ([`Options::compact`]; see docs/c-subset.md), and how many iterations did.
    pub loops_outlined: u64,
    pub loop_iterations_outlined: u64,
    /// Of those, outer loops whose bodies (one row of a table: holding an inner loop stored
    /// once) were stored once themselves, and their iterations.
    pub loops_outlined_nested: u64,
    pub loop_iterations_outlined_nested: u64,
    /// Wire slots of the main body.
    pub main_slots: u64,
    /// Label slots a party needs when running it (main slots plus template scratch).
    pub peak_live_wires: u64,
}

/// What stops a streaming pass over the netlist's items: reading the netlist, or the pass
/// itself.
enum ItemPassError {
    Netlist(pgc_circuit::NetlistError),
    Failed(CompileError),
}

impl ItemPassError {
    fn into_compile_error(self, fail: &impl Fn(String) -> CompileError) -> CompileError {
        match self {
            ItemPassError::Netlist(e) => fail(e.to_string()),
            ItemPassError::Failed(e) => e,
        }
    }
}

impl From<pgc_circuit::NetlistError> for ItemPassError {
    fn from(e: pgc_circuit::NetlistError) -> Self {
        ItemPassError::Netlist(e)
    }
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
    let source = read_source(path)?;
    let name = path.display().to_string();
    let fe = front_end(
        &source,
        &name,
        Origin::Source(path.parent()),
        opts,
        Some(spill_dir),
    )?;
    let mut watch = phases::Stopwatch::start();
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
    let mut stats = compile_stats(&b, &fe.ranges, and_final, fe.start);
    stats.phases = fe.phases;
    watch.lap("write the circuit", &mut stats.phases);
    Ok((fe.interface, stats))
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
