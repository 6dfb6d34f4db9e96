//! Loading the circuit a command names: a C program or a Verilog design (compiled on the
//! fly, cached), a `.pgc` file, a Bristol file, or a built-in circuit.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use pgc_circuit::analysis::{levelize_into_slots, levelize_with_slots};
use pgc_circuit::bristol::{Format, read_circuit_file};
use pgc_circuit::generate::RandomLayered;
use pgc_circuit::pgcfile::{
    CompactFile, PgcContents, UnrolledFile, is_pgc_file, pgc_format_version, read_pgc_contents,
    write_pgc_parallel_file,
};
use pgc_circuit::value::BitOrder;
use pgc_circuit::{
    Circuit, Gate, GateSource, Interface, Layout, MemoryNeed, OptimizeFor, ParallelCircuit, builder,
};
use pgc_compiler::verilog::VerilogFlow;
use pgc_protocol::Party;

/// A circuit ready to run: held in memory, or generated gate by gate as it is consumed.
pub enum Loaded {
    Memory(Circuit),
    Generated(RandomLayered),
    /// A compact circuit (format v3), its main body streamed from the file at every pass.
    Compact(Box<CompactFile>),
    /// An unrolled circuit file (format v1 or v2) streamed block by block at every pass.
    Unrolled(Box<UnrolledFile>),
}

impl GateSource for Loaded {
    fn layout(&self) -> &Layout {
        match self {
            Loaded::Memory(c) => c.layout(),
            Loaded::Generated(g) => g.layout(),
            Loaded::Compact(c) => c.layout(),
            Loaded::Unrolled(c) => c.layout(),
        }
    }
    fn gate_count(&self) -> u64 {
        match self {
            Loaded::Memory(c) => c.gate_count(),
            Loaded::Generated(g) => g.gate_count(),
            Loaded::Compact(c) => c.gate_count(),
            Loaded::Unrolled(c) => c.gate_count(),
        }
    }
    fn and_count(&self) -> u64 {
        match self {
            Loaded::Memory(c) => GateSource::and_count(c),
            Loaded::Generated(g) => g.and_count(),
            Loaded::Compact(c) => c.and_count(),
            Loaded::Unrolled(c) => c.and_count(),
        }
    }
    fn fingerprint(&self) -> [u8; 32] {
        match self {
            Loaded::Memory(c) => c.fingerprint(),
            Loaded::Generated(g) => g.fingerprint(),
            Loaded::Compact(c) => c.fingerprint(),
            Loaded::Unrolled(c) => c.fingerprint(),
        }
    }
    fn for_each_chunk<E>(&self, f: &mut dyn FnMut(&[Gate]) -> Result<(), E>) -> Result<(), E> {
        match self {
            Loaded::Memory(c) => c.for_each_chunk(f),
            Loaded::Generated(g) => g.for_each_chunk(f),
            Loaded::Compact(c) => c.for_each_chunk(f),
            Loaded::Unrolled(c) => c.for_each_chunk(f),
        }
    }
    fn compact_parts(&self) -> Option<pgc_circuit::compact::CompactParts<'_>> {
        match self {
            Loaded::Compact(c) => c.compact_parts(),
            _ => None,
        }
    }
    fn form(&self) -> pgc_circuit::CircuitForm {
        match self {
            Loaded::Memory(c) => c.form(),
            Loaded::Generated(g) => g.form(),
            Loaded::Compact(c) => c.form(),
            Loaded::Unrolled(f) => f.form(),
        }
    }
    fn check_complete(&self) -> Result<(), String> {
        match self {
            Loaded::Memory(c) => c.check_complete(),
            Loaded::Generated(g) => g.check_complete(),
            Loaded::Compact(c) => c.check_complete(),
            Loaded::Unrolled(f) => f.check_complete(),
        }
    }
}

/// A loaded circuit and, for compiled programs, the names and C types of its inputs and
/// outputs.
pub struct Program {
    pub circuit: Loaded,
    /// `Some` for `.c` programs, `.v` designs and `.pgc` files that carry an interface.
    pub interface: Option<Interface>,
    /// The circuit split into sequential phases and parallel regions, for compiled
    /// programs (C sources and `.pgc` files) that have regions; `None` for those without
    /// and for Bristol and built-in circuits, which a parallel mode runs as one sequential
    /// phase (made when it runs: the sequential protocol never needs it).
    pub parallel: Option<ParallelCircuit>,
    /// A temporary compact circuit file the program streams from (removed on drop).
    pub _temp: Option<TempFile>,
}

impl Program {
    /// Fails if a circuit streamed from a file could not be read in full during a pass
    /// (the file changed or vanished meanwhile): the gates then stopped early, so whatever
    /// the pass produced is not the circuit's result. For `eval` (cleartext, one party);
    /// the protocols check this themselves before revealing any output (see
    /// [`GateSource::check_complete`]).
    pub fn check_stream(&self) -> Result<()> {
        let failed = match &self.circuit {
            Loaded::Compact(cf) => cf.take_error().map(|e| (cf.path().to_path_buf(), e)),
            Loaded::Unrolled(uf) => uf.take_error().map(|e| (uf.path().to_path_buf(), e)),
            _ => None,
        };
        if let Some((path, e)) = failed {
            bail!(
                "{} could not be read in full while running ({e}); the result is discarded",
                path.display()
            );
        }
        Ok(())
    }
}

/// Opens a compact circuit file, which reads it through once to check it and count its
/// gates (tens of seconds for a billion-gate circuit: a spinner says so).
fn open_compact(path: &Path, quiet: bool) -> Result<(CompactFile, Interface)> {
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let message = format!(
        "checking the compact circuit {} ({})",
        path.display(),
        crate::report::bytes(size)
    );
    Ok(crate::progress::spin(quiet, &message, || {
        CompactFile::open(path)
    })?)
}

/// `.pgc` files of unrolled circuits (format v1/v2) larger than this are streamed block
/// by block instead of loaded whole, by `info` and `eval`, and by `run`/`local` with
/// `--parallel none` (the gates then never sit in memory; see [`UnrolledFile`]).
pub const STREAM_ABOVE_BYTES: u64 = 32 << 20;

/// Opens an unrolled circuit file for streaming: one checking pass and one fingerprint
/// pass (a spinner says so).
fn open_unrolled(path: &Path, quiet: bool) -> Result<(UnrolledFile, Interface)> {
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let message = format!(
        "checking the circuit {} ({}, streamed)",
        path.display(),
        crate::report::bytes(size)
    );
    Ok(crate::progress::spin(quiet, &message, || {
        UnrolledFile::open(path)
    })?)
}

/// A file removed when dropped, or by the signal handler if the user interrupts pgc.
pub use pgc_circuit::tempfiles::TempPath as TempFile;

/// Above this many gates, `--compact auto` compiles a program compact.
pub const AUTO_COMPACT_ABOVE_GATES: u64 = 1 << 25;

/// Memory an unrolled compilation takes per gate at its peak (the circuit, its parallel
/// form and the file written from it). Measured as peak RSS over gates emitted: a Verilog
/// design of 88.7 M gates, 59 bytes (the netlist's nodes, then the circuit); C programs
/// compiled `--compact never`, 41 (BioMatch, 121 M gates), 49 (MVMul 32×32), 66 (a chain
/// of 32-bit multiplications, 56 M) and 100 (EDT-255, 9.3 M; its tables' wires). A
/// program may make as many gates as `--max-memory` holds at this rate: a Verilog design
/// has no compact form to fall back to, and `--compact never` asks for none.
pub const UNROLLED_COMPILE_BYTES_PER_GATE: u64 = 64;

/// How many gates an unrolled compilation may make under the memory limit in force.
pub fn unrolled_gate_budget() -> u64 {
    pgc_circuit::MemoryLimit::current().bytes() / UNROLLED_COMPILE_BYTES_PER_GATE
}

/// `--compact`: how the compiler stores functions called many times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum CompactArg {
    /// Unroll fully while the program stays under 2^25 (33.5 M) gates, so every
    /// --parallel mode can split it; compact above that.
    #[default]
    Auto,
    /// Store each function once per argument shape (which argument bits are constants) and
    /// expand it while garbling: compiling and the file follow the program's size, not the
    /// unrolled gate count. Compact circuits run the sequential protocol (--parallel none
    /// or auto), their calls that share no wire on --threads threads when it is given.
    Always,
    /// Always unroll every call and loop (the circuit can be split for parallel runs), up to
    /// as many gates as --max-memory holds (64 bytes each).
    Never,
}

/// A compiled C program: the unrolled circuit with its parallel regions, the unrolled
/// circuit of a program without any, or a compact circuit in a file.
pub enum CompiledProgram {
    Flat(ParallelCircuit),
    /// No parallel regions: the gates in program order, never split into phases (the
    /// sequential protocol does not need it, and the parallel modes make the one phase
    /// when they run it).
    Plain(Circuit),
    /// The opened file (checked once), and the temporary file to remove after the run.
    Compact(Box<CompactFile>, Option<TempFile>),
}

/// The names `builtin:NAME` accepts, for help and errors.
pub const BUILTINS: &str = "builtin:millionaires (32-bit, A's value > B's value), \
    builtin:aes128 (input 0 key, input 1 plaintext), builtin:random:WIDTHxDEPTH (generated \
    layered circuit, WIDTH ANDs per level)";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OptimizeArg {
    /// Fewest AND gates (what costs in garbled circuits).
    Size,
    /// Least AND depth (for round-sensitive protocols).
    Depth,
}

/// How Verilog designs become circuits (`--verilog-flow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum VerilogFlowArg {
    /// Yosys elaborates to word-level cells, pgc maps them onto its AND-minimal blocks.
    Words,
    /// Yosys synthesizes to AND/XOR gates with ABC (the seed paper's route; more ANDs).
    Gates,
}

/// The compilers' options, shared by `compile` and every command that takes a circuit.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "Compiling C programs and Verilog designs")]
pub struct CompileArgs {
    /// Define a preprocessor macro, as for gcc (-D N=16, -DDEBUG); for Verilog, a `define.
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    pub defines: Vec<String>,
    /// Add a directory to search for #include (Verilog: `include) files.
    #[arg(short = 'I', value_name = "DIR")]
    pub include_dirs: Vec<PathBuf>,
    /// What the building blocks minimize [default: size].
    #[arg(long, value_enum)]
    pub optimize: Option<OptimizeArg>,
    /// The function to compile [default: mpc_main, or the only function]; for Verilog, the
    /// top module (--top) [default: the only module no other instantiates].
    #[arg(long, visible_alias = "top", value_name = "NAME")]
    pub entry: Option<String>,
    /// Verilog: words (Yosys elaborates, pgc maps each word-level cell onto its blocks) or
    /// gates (Yosys and ABC synthesize AND/XOR gates) [default: words].
    #[arg(long, value_enum, value_name = "FLOW")]
    pub verilog_flow: Option<VerilogFlowArg>,
    /// Most iterations one loop may unroll to before compiling stops with an error
    /// [default: 1048576].
    #[arg(long, value_name = "N")]
    pub unroll_limit: Option<u64>,
    /// Most loop iterations and function calls the whole compilation may run (nested loops
    /// multiply their counts) before it stops with an error; the progress line shows them as
    /// "loop steps" [default: 1073741824].
    #[arg(long, value_name = "N")]
    pub step_limit: Option<u64>,
    /// Store functions called many times once, as templates expanded while garbling:
    /// auto (only programs above 2^25 gates), always, never [default: auto].
    #[arg(long, value_enum, value_name = "WHEN")]
    pub compact: Option<CompactArg>,
}

impl CompileArgs {
    pub fn options(&self) -> pgc_compiler::Options {
        let mut o = pgc_compiler::Options {
            defines: self.defines.clone(),
            include_dirs: self.include_dirs.clone(),
            entry: self.entry.clone(),
            optimize: match self.optimize {
                Some(OptimizeArg::Depth) => OptimizeFor::Depth,
                _ => OptimizeFor::Size,
            },
            verilog_flow: match self.verilog_flow {
                Some(VerilogFlowArg::Gates) => VerilogFlow::Gates,
                _ => VerilogFlow::Words,
            },
            ..Default::default()
        };
        if let Some(n) = self.unroll_limit {
            o.unroll_limit = n;
        }
        if let Some(n) = self.step_limit {
            o.step_limit = n;
        }
        o
    }

    fn any_given(&self) -> bool {
        !self.defines.is_empty()
            || !self.include_dirs.is_empty()
            || self.optimize.is_some()
            || self.entry.is_some()
            || self.unroll_limit.is_some()
            || self.step_limit.is_some()
            || self.compact.is_some()
            || self.verilog_flow.is_some()
    }

    pub fn compact_mode(&self) -> CompactArg {
        self.compact.unwrap_or_default()
    }

    /// Refuses options of the other source language.
    pub fn check_language(&self, spec: &str) -> Result<()> {
        if is_verilog_source(spec) {
            if self.unroll_limit.is_some() {
                bail!("--unroll-limit applies to C programs; {spec} is a Verilog design");
            }
            if self.step_limit.is_some() {
                bail!("--step-limit applies to C programs; {spec} is a Verilog design");
            }
            if self.compact == Some(CompactArg::Always) {
                bail!(
                    "--compact always applies to C programs (functions become templates); \
                     {spec} is a Verilog design, which Yosys flattens"
                );
            }
        } else if self.verilog_flow.is_some() {
            bail!("--verilog-flow applies to Verilog designs (.v); {spec} is not one");
        }
        Ok(())
    }
}

/// Options shared by every command that reads a circuit.
#[derive(Args, Clone, Debug, Default)]
pub struct CircuitArgs {
    /// The computation: a C program (.c) or a Verilog design (.v, .sv; through Yosys), both
    /// compiled on the fly and cached, a circuit compiled by `pgc compile` (.pgc), a Bristol
    /// Fashion / MAND / old Bristol file, or builtin:NAME (builtin:millionaires,
    /// builtin:aes128, builtin:random:WIDTHxDEPTH).
    pub circuit: String,
    /// Bristol file format: bristol-fashion (Bristol Fashion, basic or MAND) or bristol (the
    /// old Bristol format); detected from the file's line structure when not given.
    #[arg(long, value_parser = parse_format, help_heading = "Bristol circuits")]
    pub format: Option<Format>,
    /// Bristol circuits: how each value's bits map to wires: lsb0 (wire 0 = least significant
    /// bit; Bristol Fashion) or msb0 (wire 0 = most significant bit; the old-format AES and
    /// SHA circuits). [default: lsb0]
    #[arg(long, value_parser = parse_bit_order, help_heading = "Bristol circuits")]
    pub bit_order: Option<BitOrder>,
    #[command(flatten)]
    pub compile: CompileArgs,
    /// Compile a .c program or .v design even if the cache holds a circuit for this source
    /// and these options (and leave the cache as it is).
    #[arg(long, help_heading = "Compiling C programs and Verilog designs")]
    pub no_cache: bool,
    /// Read a .pgc file of an unrolled circuit block by block at every pass instead of
    /// loading it: memory for its wires only, never its gates (info then skips the live-wire
    /// count; run/local need --parallel none, and both parties should choose alike).
    /// Automatic for files above 32 MiB.
    #[arg(long)]
    pub stream: bool,
}

impl CircuitArgs {
    /// `spec` (a path or `builtin:NAME`) with every other option at its default.
    pub fn new(spec: impl Into<String>) -> CircuitArgs {
        CircuitArgs {
            circuit: spec.into(),
            ..CircuitArgs::default()
        }
    }

    /// The bit order for untyped (Bristol) circuits.
    pub fn bit_order(&self) -> BitOrder {
        self.bit_order.unwrap_or_default()
    }

    /// Refuses options that do not apply to a typed circuit.
    pub fn check_typed(&self) -> Result<()> {
        if self.bit_order.is_some() {
            bail!(
                "--bit-order applies to Bristol circuits only; a compiled program's values are \
                 C values (name=value)"
            );
        }
        Ok(())
    }
}

fn parse_format(s: &str) -> Result<Format, String> {
    s.parse()
        .map_err(|_| format!("'{s}' is not a format: use bristol-fashion or bristol"))
}

fn parse_bit_order(s: &str) -> Result<BitOrder, String> {
    s.parse()
        .map_err(|_| format!("'{s}' is not a bit order: use lsb0 or msb0"))
}

/// Whether `spec` names a C source file.
pub fn is_c_source(spec: &str) -> bool {
    Path::new(spec)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("c"))
}

/// Whether `spec` names a Verilog design (`.v`, `.sv`).
pub fn is_verilog_source(spec: &str) -> bool {
    pgc_compiler::verilog::is_verilog_path(Path::new(spec))
}

/// Whether `spec` names a source file pgc compiles (C or Verilog).
pub fn is_source(spec: &str) -> bool {
    is_c_source(spec) || is_verilog_source(spec)
}

/// Whether a `.pgc` file of an unrolled circuit is streamed ([`Loaded::Unrolled`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Never,
    /// Files above [`STREAM_ABOVE_BYTES`] (`info`, `eval`: one pass, no speed to lose).
    Large,
    /// Files whose whole-file load for a run would exceed `--max-memory`. A run garbles a
    /// loaded circuit several times faster (AND gates batched by level, wires packed into
    /// slots), so it streams only when it must.
    WhenTooBig,
    Always,
}

/// Bytes per gate that loading an unrolled file for a run takes: the gate record (16), its
/// levelized copy and slot assignment (64), and about one analysed wire per gate (16).
const WHOLE_LOAD_BYTES_PER_GATE: u64 = 96;

/// What loading the unrolled `.pgc` file at `path` whole for a run would take, from the
/// flattened gate count in its end record (the last 48 bytes of a v1 or v2 file: gates,
/// AND gates, checksum), read without decoding anything. `None` if it cannot be read.
fn whole_load_need(path: &Path) -> Option<MemoryNeed> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    file.seek(SeekFrom::End(-48)).ok()?;
    let mut gates = [0u8; 8];
    file.read_exact(&mut gates).ok()?;
    Some(MemoryNeed::per_item(
        u64::from_le_bytes(gates),
        "gates",
        WHOLE_LOAD_BYTES_PER_GATE,
        "bytes to load and prepare for garbling",
    ))
}

impl CircuitArgs {
    /// `--stream`, else large files.
    pub fn stream(&self) -> Stream {
        if self.stream {
            Stream::Always
        } else {
            Stream::Large
        }
    }

    /// For a sequential protocol run: `--stream`, else only what would not fit in memory.
    pub fn stream_for_run(&self) -> Stream {
        if self.stream {
            Stream::Always
        } else {
            Stream::WhenTooBig
        }
    }
}

/// Reads, compiles or builds the circuit `args` names, as given (no rewriting).
pub fn load(args: &CircuitArgs, quiet: bool) -> Result<Program> {
    load_streamed(args, args.stream(), quiet)
}

/// [`load`], streaming `.pgc` files as `stream` says.
pub fn load_streamed(args: &CircuitArgs, stream: Stream, quiet: bool) -> Result<Program> {
    load_spec(
        &args.circuit,
        args.format,
        &args.compile,
        !args.no_cache,
        stream,
        quiet,
    )
}

/// [`load`] from its parts (for `bench --circuit`).
pub fn load_spec(
    spec: &str,
    format: Option<Format>,
    compile: &CompileArgs,
    use_cache: bool,
    stream: Stream,
    quiet: bool,
) -> Result<Program> {
    let is_c = is_source(spec);
    if !is_c && compile.any_given() {
        bail!(
            "-D, -I, --optimize, --entry/--top, --unroll-limit, --verilog-flow and --compact \
             apply to C programs (.c) and Verilog designs (.v) only; {spec} is neither"
        );
    }
    compile.check_language(spec)?;
    // Said, not ignored, as --format and --bit-order are on the wrong kind of circuit.
    let refuse_stream = |what: &str| -> Result<()> {
        if stream == Stream::Always {
            bail!(
                "--stream applies to .pgc files of unrolled circuits (from pgc compile); {spec} \
                 is {what}, held in memory (leave --stream out)"
            );
        }
        Ok(())
    };
    if let Some(name) = spec.strip_prefix("builtin:") {
        refuse_stream("a built-in circuit")?;
        return Ok(Program {
            circuit: builtin(name)?,
            interface: None,
            parallel: None,
            _temp: None,
        });
    }
    let path = Path::new(spec);
    if is_c {
        if format.is_some() {
            bail!("--format applies to Bristol files; {spec} is a source file");
        }
        refuse_stream("a source file, compiled")?;
        let (compiled, interface) = compile_cached(path, compile, use_cache, quiet)?;
        return Ok(match compiled {
            CompiledProgram::Flat(parallel) => Program {
                circuit: Loaded::Memory(flatten(&parallel)?),
                interface: Some(interface),
                parallel: Some(parallel),
                _temp: None,
            },
            CompiledProgram::Plain(c) => Program {
                circuit: Loaded::Memory(c),
                interface: Some(interface),
                parallel: None,
                _temp: None,
            },
            CompiledProgram::Compact(c, temp) => Program {
                circuit: Loaded::Compact(c),
                interface: Some(interface),
                parallel: None,
                _temp: temp,
            },
        });
    }
    let pgc = is_pgc_file(path).with_context(|| format!("cannot read circuit file {spec}"))?;
    if pgc {
        if format.is_some() {
            bail!("--format applies to Bristol files; {spec} is a pgc circuit file");
        }
        if pgc_format_version(path)? == 3 {
            let (c, interface) = open_compact(path, quiet)?;
            let typed = !(interface.inputs.is_empty() && interface.outputs.is_empty());
            return Ok(Program {
                circuit: Loaded::Compact(Box::new(c)),
                interface: typed.then_some(interface),
                parallel: None,
                _temp: None,
            });
        }
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        let streamed = match stream {
            Stream::Never => false,
            Stream::Large => size > STREAM_ABOVE_BYTES,
            Stream::Always => true,
            Stream::WhenTooBig => match whole_load_need(path) {
                Some(need) => match need.check() {
                    Ok(()) => false,
                    Err(e) => {
                        if !quiet {
                            eprintln!(
                                "note: loading {spec} whole for the run would exceed the memory \
                                 limit ({e}); streaming it from the file instead (same result, \
                                 slower garbling; the peer must stream it too: give it --stream)"
                            );
                        }
                        true
                    }
                },
                // An unreadable end record: the whole-file reader reports what is wrong.
                None => false,
            },
        };
        if streamed {
            let (f, interface) = open_unrolled(path, quiet)?;
            let typed = !(interface.inputs.is_empty() && interface.outputs.is_empty());
            return Ok(Program {
                circuit: Loaded::Unrolled(Box::new(f)),
                interface: typed.then_some(interface),
                parallel: None,
                _temp: None,
            });
        }
        let (contents, interface) = read_pgc_contents(path)?;
        let typed = !(interface.inputs.is_empty() && interface.outputs.is_empty());
        let (circuit, parallel) = match contents {
            PgcContents::Plain(c) => (c, None),
            PgcContents::Parallel(pc) => (flatten(&pc)?, Some(pc)),
        };
        return Ok(Program {
            circuit: Loaded::Memory(circuit),
            interface: typed.then_some(interface),
            parallel,
            _temp: None,
        });
    }
    refuse_stream("a Bristol file")?;
    let c = read_circuit_file(path, format)?;
    Ok(Program {
        circuit: Loaded::Memory(c),
        interface: None,
        parallel: None,
        _temp: None,
    })
}

/// Loads a circuit prepared for garbling: AND gates grouped by level (so they are garbled in
/// batches) and wires packed into reusable slots (so label memory is the peak live wires).
/// A streamed `.pgc` file ([`Stream`]) runs as stored.
pub fn load_for_run(args: &CircuitArgs, stream: Stream, quiet: bool) -> Result<Program> {
    prepare(load_streamed(args, stream, quiet)?, &args.circuit)
}

/// [`prepare`]s what [`load_spec`] loads.
pub fn load_spec_for_run(spec: &str) -> Result<Program> {
    prepare(
        load_spec(
            spec,
            None,
            &CompileArgs::default(),
            true,
            Stream::Never,
            true,
        )?,
        spec,
    )
}

/// The plain circuit of `pc`, after checking that its gate records fit the memory limit
/// (a small file of parallel regions can stand for billions of gates).
fn flatten(pc: &ParallelCircuit) -> Result<Circuit> {
    pc.flat_memory_need().check()?;
    Ok(pc.flatten())
}

/// Memory that checking, analysing (`info`) or preparing ([`load_for_run`]) an in-memory
/// circuit takes beyond its gates: per-wire flags, depths and slot maps, and copies of
/// the gate list (an estimate from above).
pub fn analysis_memory(c: &Circuit) -> MemoryNeed {
    MemoryNeed::per_item(
        c.layout.num_wires as u64,
        "wires",
        16,
        "entries for the circuit's analysis",
    )
    .plus(MemoryNeed::per_item(
        c.gates.len() as u64,
        "gates",
        64,
        "records for its reordering",
    ))
}

/// Refuses a protocol run whose wire labels would not fit the memory limit: the labels of
/// the circuit as it runs (`parallel`: the global wires of its phases), 16 bytes per wire.
pub fn check_label_memory(program: &Program, parallel: Option<&ParallelCircuit>) -> Result<()> {
    let wires = match parallel {
        Some(pc) => pc.layout.num_wires,
        None => program.circuit.layout().num_wires,
    };
    pgc_garble::label_memory_needed(wires as usize).check()?;
    Ok(())
}

/// Levelizes and slot-packs a circuit held in memory for the sequential protocol (see
/// [`load_for_run`]); other circuits pass unchanged.
pub fn prepare(p: Program, spec: &str) -> Result<Program> {
    Ok(match p.circuit {
        Loaded::Memory(c) => {
            analysis_memory(&c).check()?;
            // The sequential protocol needs no regions, and each form is dropped as soon as
            // the next is made: the peak is two copies of the gate list, not four (and
            // fresh memory costs its page faults: on EDT-255's 13 M gates, more than the
            // sort itself).
            drop(p.parallel);
            // Levelized and slotted in place (see `levelize_into_slots`).
            let slotted = levelize_into_slots(c).with_context(|| format!("preparing {spec}"))?;
            Program {
                circuit: Loaded::Memory(slotted),
                interface: p.interface,
                parallel: None,
                _temp: p._temp,
            }
        }
        g => Program {
            circuit: g,
            interface: p.interface,
            parallel: p.parallel,
            _temp: p._temp,
        },
    })
}

/// [`prepare`] for a program a caller holds already (the Python package's `Circuit`),
/// without loading it again: a prepared copy of a circuit held in memory; `None` for
/// circuits read from their files or generated while they run, which are opened anew.
pub fn prepare_copy(p: &Program, spec: &str) -> Option<Result<Program>> {
    let Loaded::Memory(c) = &p.circuit else {
        return None;
    };
    let prepared = (|| {
        analysis_memory(c).check()?;
        let slotted = levelize_with_slots(c).with_context(|| format!("preparing {spec}"))?;
        Ok(Program {
            circuit: Loaded::Memory(slotted),
            interface: p.interface.clone(),
            // The sequential protocol runs it; the regions are not needed.
            parallel: None,
            _temp: None,
        })
    })();
    Some(prepared)
}

/// A copy of a program held in memory (see [`prepare_copy`]), as loaded.
pub fn copy_in_memory(p: &Program) -> Option<Program> {
    let Loaded::Memory(c) = &p.circuit else {
        return None;
    };
    Some(Program {
        circuit: Loaded::Memory(c.clone()),
        interface: p.interface.clone(),
        parallel: p.parallel.clone(),
        _temp: None,
    })
}

fn builtin(name: &str) -> Result<Loaded> {
    if let Some(dims) = name.strip_prefix("random:") {
        let parse = || -> Option<(u32, u32)> {
            let (w, d) = dims.split_once('x')?;
            Some((w.parse().ok()?, d.parse().ok()?))
        };
        let Some((width, depth)) = parse().filter(|&(w, d)| w > 0 && d > 0) else {
            bail!(
                "builtin:random:{dims}: expected WIDTHxDEPTH with positive numbers, e.g. builtin:random:4096x1000"
            );
        };
        return Ok(Loaded::Generated(RandomLayered::new(width, depth, 1)?));
    }
    Ok(Loaded::Memory(match name {
        "millionaires" => builder::millionaires_circuit(32),
        "aes128" => builder::aes::aes128_circuit(),
        _ => bail!("unknown built-in circuit '{name}'; there are {BUILTINS}"),
    }))
}

// ---------------------------------------------------------------------------------------
// Compiling with a cache

/// Compiles `path`, or takes the circuit from the cache when this source, these options and
/// this pgc build compiled it before.
///
/// The cache key covers the source as the C preprocessor expands it (so edits to included
/// headers count too), the compiler options, the source's location (which `#include "…"`
/// resolves against) and this pgc executable (so a rebuilt compiler never reuses old
/// circuits). When the preprocessor cannot run, the key falls back to the raw source bytes
/// (and the compiler then reports the problem).
pub fn compile_cached(
    path: &Path,
    args: &CompileArgs,
    use_cache: bool,
    quiet: bool,
) -> Result<(CompiledProgram, Interface)> {
    let source = pgc_circuit::limits::read_text_file(path, pgc_compiler::MAX_SOURCE_BYTES)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let opts = args.options();
    let verilog = pgc_compiler::verilog::is_verilog_path(path);
    // Verilog is flattened by Yosys: never compact.
    let mode = if verilog {
        CompactArg::Never
    } else {
        args.compact_mode()
    };
    let cached_at = if use_cache {
        cache_dir().map(|dir| {
            dir.join(format!(
                "{}.pgc",
                cache_key(path, &source, &opts, &format!("{mode:?}"))
            ))
        })
    } else {
        None
    };
    if let Some(file) = &cached_at
        && file.exists()
    {
        let hit = match pgc_format_version(file) {
            Ok(3) => open_compact(file, quiet)
                .map(|(c, iface)| (CompiledProgram::Compact(Box::new(c), None), iface)),
            Ok(_) => read_pgc_contents(file)
                .map(|(contents, iface)| match contents {
                    PgcContents::Plain(c) => (CompiledProgram::Plain(c), iface),
                    PgcContents::Parallel(pc) => (CompiledProgram::Flat(pc), iface),
                })
                .map_err(anyhow::Error::from),
            Err(e) => Err(e.into()),
        };
        match hit {
            Ok(hit) => return Ok(hit),
            Err(e) if !quiet => eprintln!("note: ignoring a damaged cache entry ({e:#})"),
            Err(_) => {}
        }
    }
    match compile_either(path, &opts, mode, quiet)? {
        Either::Flat(compiled) => {
            let parallel = compiled
                .parallel_circuit()
                .with_context(|| format!("splitting {} into parallel regions", path.display()))?;
            if let Some(file) = &cached_at {
                store(file, &parallel, &compiled.interface);
            }
            // As a cache hit reads it (a program without regions is stored plain).
            let program = if parallel.regions().next().is_none() {
                CompiledProgram::Plain(flatten(&parallel)?)
            } else {
                CompiledProgram::Flat(parallel)
            };
            Ok((program, compiled.interface))
        }
        Either::Compact => {
            // Straight into the cache entry (or a temporary file removed after the run).
            let (file, temp) = match &cached_at {
                Some(f) => (f.clone(), None),
                None => {
                    let f = std::env::temp_dir().join(format!(
                        "pgc-compact-{}-{}.pgc",
                        std::process::id(),
                        std::time::SystemTime::now()
                            .duration_since(UNIX_EPOCH)
                            .map_or(0, |d| d.as_nanos())
                    ));
                    (f.clone(), Some(TempFile::register(f)))
                }
            };
            let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let tmp = file.with_extension(format!("tmp{}", std::process::id()));
            let guard = TempFile::register(tmp.clone());
            let (interface, _, _) = compile_compact_to(path, &opts, &dir, &tmp, quiet)?;
            std::fs::rename(&tmp, &file)
                .with_context(|| format!("cannot write {}", file.display()))?;
            guard.keep();
            let (c, _) = open_compact(&file, quiet)
                .with_context(|| format!("reading the compact circuit of {}", path.display()))?;
            Ok((CompiledProgram::Compact(Box::new(c), temp), interface))
        }
    }
}

/// What [`compile_either`] chose.
pub enum Either {
    Flat(Box<pgc_compiler::Compiled>),
    /// Compile compact (the unrolled form was not attempted, or went over the budget).
    Compact,
}

/// Compiles unrolled unless `mode` says compact; under `auto`, gives up the unrolled form
/// once it passes [`AUTO_COMPACT_ABOVE_GATES`] (or what the memory limit holds, if less)
/// and asks for the compact one instead; under `never`, fails there.
pub fn compile_either(
    path: &Path,
    opts: &pgc_compiler::Options,
    mode: CompactArg,
    quiet: bool,
) -> Result<Either> {
    if pgc_compiler::verilog::is_verilog_path(path) {
        // No compact form to fall back to: the budget is what the memory limit holds.
        let limit = pgc_circuit::MemoryLimit::current();
        let mut o = opts.clone();
        o.gate_budget = Some(unrolled_gate_budget());
        let progress = std::sync::Arc::new(pgc_compiler::Progress::default());
        o.progress = Some(progress.clone());
        let compiled = crate::progress::spin_then_count(
            quiet,
            "compiling through Yosys",
            Some(&progress.gates),
            || pgc_compiler::verilog::compile_file(path, &o),
        )
        .map_err(|e| match e {
            pgc_compiler::CompileError::CellOverBudget { .. } => anyhow::anyhow!(
                "{e}; that budget is what --max-memory ({limit}) holds at about \
                 {UNROLLED_COMPILE_BYTES_PER_GATE} bytes per gate while compiling: raise \
                 --max-memory if this machine has the memory, or narrow the cell's words"
            ),
            e => e.into(),
        })?;
        return Ok(Either::Flat(Box::new(compiled)));
    }
    if mode == CompactArg::Always {
        return Ok(Either::Compact);
    }
    // Unrolled, a program may make as many gates as the memory limit holds; `auto` turns
    // compact at the smaller of that and its own threshold.
    let memory_budget = unrolled_gate_budget();
    let mut o = opts.clone();
    o.gate_budget = Some(match mode {
        CompactArg::Auto => AUTO_COMPACT_ABOVE_GATES.min(memory_budget),
        _ => memory_budget,
    });
    let progress = std::sync::Arc::new(pgc_compiler::Progress::default());
    o.progress = Some(progress.clone());
    let r = crate::progress::watch_compile(quiet, &progress, o.step_limit, || {
        pgc_compiler::compile_file(path, &o)
    });
    match r {
        Ok(c) => Ok(Either::Flat(Box::new(c))),
        Err(pgc_compiler::CompileError::OverBudget { budget }) if mode == CompactArg::Never => {
            let limit = pgc_circuit::MemoryLimit::current();
            Err(anyhow::anyhow!(
                "{} unrolls to more than {} gates, more than --max-memory ({limit}) holds at \
                 about {UNROLLED_COMPILE_BYTES_PER_GATE} bytes per gate while compiling \
                 unrolled: leave out --compact never (the default, auto, compiles large \
                 programs compact), compile it with `pgc compile --low-memory`, or raise \
                 --max-memory if this machine has the memory",
                path.display(),
                crate::report::group(budget)
            ))
        }
        Err(pgc_compiler::CompileError::OverBudget { budget }) => {
            if !quiet {
                let why = if budget < AUTO_COMPACT_ABOVE_GATES {
                    " (what --max-memory holds unrolled)"
                } else {
                    ""
                };
                eprintln!(
                    "note: {} unrolls to more than {} gates{why}; compiling it compact instead \
                     (functions stored once and expanded while garbling; runs sequentially)",
                    path.display(),
                    crate::report::group(budget)
                );
            }
            Ok(Either::Compact)
        }
        Err(e) => Err(e.into()),
    }
}

/// Compiles `path` compact into the file `out` (through temporary files in `spill_dir`),
/// with a progress counter.
pub fn compile_compact_to(
    path: &Path,
    opts: &pgc_compiler::Options,
    spill_dir: &Path,
    out: &Path,
    quiet: bool,
) -> Result<(
    Interface,
    pgc_compiler::CompileStats,
    pgc_compiler::CompactSummary,
)> {
    let mut o = opts.clone();
    let progress = std::sync::Arc::new(pgc_compiler::Progress::default());
    o.progress = Some(progress.clone());
    Ok(crate::progress::watch_compile(
        quiet,
        &progress,
        o.step_limit,
        || pgc_compiler::compile_compact_streaming(path, &o, spill_dir, out),
    )?)
}

/// Writes a cache entry atomically (temporary file, then rename); a cache that cannot be
/// written is not an error, only slower next time.
fn store(file: &Path, circuit: &ParallelCircuit, interface: &Interface) {
    let Some(dir) = file.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    let guard = TempFile::register(tmp.clone());
    if write_pgc_parallel_file(&tmp, circuit, interface).is_ok()
        && std::fs::rename(&tmp, file).is_ok()
    {
        guard.keep();
    }
}

/// `$XDG_CACHE_HOME/pgc`, else `$HOME/.cache/pgc`.
pub fn cache_dir() -> Option<PathBuf> {
    let non_empty = |v: std::ffi::OsString| (!v.is_empty()).then_some(PathBuf::from(v));
    if let Some(xdg) = std::env::var_os("XDG_CACHE_HOME").and_then(non_empty) {
        return Some(xdg.join("pgc"));
    }
    std::env::var_os("HOME")
        .and_then(non_empty)
        .map(|h| h.join(".cache").join("pgc"))
}

fn cache_key(path: &Path, source: &[u8], opts: &pgc_compiler::Options, mode: &str) -> String {
    let mut h = blake3::Hasher::new();
    let mut field = |bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(b"pgc compile cache v1");
    field(env!("CARGO_PKG_VERSION").as_bytes());
    field(executable_identity().as_bytes());
    let dir = path
        .parent()
        .map(|d| {
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            }
        })
        .and_then(|d| d.canonicalize().ok())
        .unwrap_or_default();
    field(dir.to_string_lossy().as_bytes());
    for d in &opts.defines {
        field(b"-D");
        field(d.as_bytes());
    }
    for i in &opts.include_dirs {
        field(b"-I");
        let i = i.canonicalize().unwrap_or_else(|_| i.clone());
        field(i.to_string_lossy().as_bytes());
    }
    field(opts.entry.as_deref().unwrap_or("").as_bytes());
    field(format!("{:?}", opts.optimize).as_bytes());
    field(&opts.unroll_limit.to_le_bytes());
    field(mode.as_bytes());
    if pgc_compiler::verilog::is_verilog_path(path) {
        verilog_key(&mut field, path, source, opts);
        return h.finalize().to_hex()[..32].to_string();
    }
    match preprocess_for_key(&dir, source, opts) {
        Some(expanded) => {
            field(b"preprocessed");
            field(&expanded);
        }
        None => {
            field(b"raw");
            field(source);
        }
    }
    h.finalize().to_hex()[..32].to_string()
}

/// Size and modification time of the running executable: changes with every rebuild.
fn executable_identity() -> String {
    let meta = std::env::current_exe().and_then(std::fs::metadata);
    match meta {
        Ok(m) => {
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{} {modified}", m.len())
        }
        Err(_) => String::new(),
    }
}

/// What a Verilog design's circuit depends on besides the options: the Yosys that reads it
/// (its version line), the flow, and every file Yosys reads (the design and its includes,
/// by content). Without Yosys the key falls back to the design alone (compiling then reports
/// Yosys missing).
fn verilog_key(
    field: &mut dyn FnMut(&[u8]),
    path: &Path,
    source: &[u8],
    opts: &pgc_compiler::Options,
) {
    field(b"verilog");
    field(opts.verilog_flow.name().as_bytes());
    match pgc_compiler::verilog::yosys_version() {
        Ok(v) => field(v.as_bytes()),
        Err(_) => field(b"no yosys"),
    }
    field(source);
    let files = pgc_compiler::verilog::source_files(path, opts).unwrap_or_default();
    for f in files {
        let canonical = f.canonicalize().unwrap_or(f);
        field(canonical.to_string_lossy().as_bytes());
        match pgc_circuit::limits::read_file(&canonical) {
            Ok(bytes) => field(&bytes),
            Err(_) => field(b"unreadable"),
        }
    }
}

/// The source as `cpp` expands it with the compiler's flags, for the cache key only.
fn preprocess_for_key(dir: &Path, source: &[u8], opts: &pgc_compiler::Options) -> Option<Vec<u8>> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut cmd = Command::new("cpp");
    cmd.arg("-std=gnu11").arg("-D__PGC__=1");
    if !dir.as_os_str().is_empty() {
        cmd.arg("-I").arg(dir);
    }
    for d in &opts.defines {
        cmd.arg(format!("-D{d}"));
    }
    for i in &opts.include_dirs {
        cmd.arg("-I").arg(i);
    }
    cmd.arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().ok()?;
    let mut stdin = child.stdin.take()?;
    let text = source.to_vec();
    // A thread writes, so a large output cannot deadlock against a full input pipe.
    let writer = std::thread::spawn(move || stdin.write_all(&text));
    let out = child.wait_with_output().ok()?;
    let _ = writer.join();
    out.status.success().then_some(out.stdout)
}

// ---------------------------------------------------------------------------------------
// Untyped (Bristol) inputs

/// Owner of each input value: `--inputs-of-a` if given, else value 0 is A's and the rest B's.
pub fn owners(layout: &Layout, inputs_of_a: Option<&[usize]>) -> Result<Vec<Party>> {
    let n = layout.input_widths.len();
    let mut owners = vec![Party::B; n];
    match inputs_of_a {
        None => {
            if n > 0 {
                owners[0] = Party::A;
            }
        }
        Some(list) => {
            for &i in list {
                if i >= n {
                    bail!(
                        "--inputs-of-a names input value {i}, but the circuit has {n} input value(s) (numbered from 0)"
                    );
                }
                owners[i] = Party::A;
            }
        }
    }
    Ok(owners)
}

/// Parses input values given on the command line against the widths they must have.
pub fn parse_values(
    texts: &[String],
    widths: &[u32],
    order: BitOrder,
    who: &str,
) -> Result<Vec<Vec<bool>>> {
    if texts.len() != widths.len() {
        let list = widths
            .iter()
            .map(|w| format!("{w}"))
            .collect::<Vec<_>>()
            .join(", ");
        bail!(
            "{who} must give {} input value(s) (of {} bits), but {} were given",
            widths.len(),
            if list.is_empty() { "0".into() } else { list },
            texts.len()
        );
    }
    texts
        .iter()
        .zip(widths)
        .enumerate()
        .map(|(i, (t, &w))| {
            pgc_circuit::value::parse_value(t, w, order)
                .with_context(|| format!("{who}'s input value {}", i + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgc_circuit::analysis::{assign_slots, levelize};
    use pgc_circuit::generate::random_circuit;
    use pgc_circuit::parallel::RegionSpan;
    use pgc_circuit::pgcfile::write_pgc_file;
    use pgc_protocol::parallel::{ParallelConfig, ParallelMode};

    /// A fresh path in the temporary directory (removed on drop).
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let nanos = std::time::SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            Scratch(std::env::temp_dir().join(format!(
                "pgc-engine-{name}-{}-{nanos}.pgc",
                std::process::id()
            )))
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn load_file(path: &Path) -> Program {
        load_spec(
            path.to_str().unwrap(),
            None,
            &CompileArgs::default(),
            false,
            Stream::Never,
            true,
        )
        .unwrap()
    }

    #[test]
    fn a_file_without_regions_loads_as_a_plain_circuit_and_prepares_as_before() {
        let c = random_circuit(29, 12, 3000);
        let file = Scratch::new("plain");
        write_pgc_file(&file.0, &c, &Interface::default()).unwrap();
        let program = load_file(&file.0);
        assert!(program.parallel.is_none(), "no parallel form is built");
        let Loaded::Memory(loaded) = &program.circuit else {
            panic!("held in memory")
        };
        assert_eq!(loaded, &c);
        // Prepared for the sequential protocol exactly as levelize + assign_slots make it,
        // whether the program is given up or kept.
        let want = assign_slots(&levelize(&c).unwrap());
        let kept = prepare_copy(&program, "plain").unwrap().unwrap();
        let Loaded::Memory(kept) = kept.circuit else {
            panic!("held in memory")
        };
        assert_eq!(kept, want);
        let Loaded::Memory(prepared) = prepare(program, "plain").unwrap().circuit else {
            panic!("held in memory")
        };
        assert_eq!(prepared, want);
    }

    #[test]
    fn a_file_with_regions_keeps_its_parallel_form() {
        // Two independent halves: the gates of two copies of one circuit side by side.
        let one = random_circuit(5, 8, 400);
        let shift = one.layout.num_wires - 8;
        let mut gates = one.gates.clone();
        gates.extend(one.gates.iter().map(|g| {
            let mut g = *g;
            let moved = |w: pgc_circuit::WireId| if w < 8 { w } else { w + shift };
            g.a = if g.op == pgc_circuit::Op::Const {
                g.a
            } else {
                moved(g.a)
            };
            g.b = if matches!(g.op, pgc_circuit::Op::Xor | pgc_circuit::Op::And) {
                moved(g.b)
            } else {
                g.b
            };
            g.out = moved(g.out);
            g
        }));
        let c = Circuit {
            layout: Layout {
                num_wires: one.layout.num_wires + shift,
                input_widths: one.layout.input_widths.clone(),
                output_widths: vec![2],
                output_wires: vec![gates[399].out, gates[799].out],
            },
            gates,
        };
        let spans = [RegionSpan {
            line: 1,
            bounds: vec![0, 400, 800],
        }];
        let pc = ParallelCircuit::from_flat(&c, &spans).unwrap();
        assert!(pc.regions().next().is_some());
        let file = Scratch::new("regions");
        write_pgc_parallel_file(&file.0, &pc, &Interface::default()).unwrap();
        let program = load_file(&file.0);
        assert_eq!(program.parallel.as_ref(), Some(&pc));
        let Loaded::Memory(flat) = &program.circuit else {
            panic!("held in memory")
        };
        assert_eq!(flat, &pc.flatten());
    }

    #[test]
    fn a_plain_file_not_in_single_assignment_form_runs_sequentially_only() {
        // Loading it no longer makes a parallel form (which refused such a circuit, so
        // that even `--parallel none` could not load the file); the sequential protocol
        // takes it, and the parallel modes say why they cannot.
        let mut c = random_circuit(3, 4, 20);
        let first_out = c.gates[0].out;
        c.gates.push(Gate::inv(0, first_out));
        let file = Scratch::new("reused");
        write_pgc_file(&file.0, &c, &Interface::default()).unwrap();
        let program = load_file(&file.0);
        assert!(program.parallel.is_none());
        let auto = crate::session::auto_choice(&program, 4, false, None);
        assert_eq!(auto.mode, ParallelMode::None);
        let cgp = ParallelConfig {
            mode: ParallelMode::Cgp,
            threads: 2,
            tau: 128,
        };
        let e = crate::session::parallel_form(&program, &cgp).unwrap_err();
        assert!(format!("{e:#}").contains("single-assignment"), "{e:#}");
        let none = ParallelConfig {
            mode: ParallelMode::None,
            ..cgp
        };
        assert!(
            crate::session::parallel_form(&program, &none)
                .unwrap()
                .is_none()
        );
    }
}
