//! `pgc compile`: a C program or a Verilog design to a `.pgc` circuit (or a Bristol Fashion
//! file).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use pgc_circuit::analysis::stats;
use pgc_circuit::bristol::write_bristol_fashion;
use pgc_circuit::pgcfile::write_pgc_parallel_file;
use pgc_circuit::validate;
use serde_json::json;

use pgc_engine::circuits::{
    CompactArg, CompileArgs, Either, TempFile, compile_compact_to, compile_either, is_source,
    is_verilog_source,
};
use pgc_engine::report;
use pgc_engine::typed_io;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// pgc's binary circuit format, with input/output names, owners and C types.
    Pgc,
    /// Bristol Fashion text (gates only: no names or types; inputs and outputs in the
    /// order the program declares them).
    Bristol,
}

#[derive(Args)]
pub struct CompileCmdArgs {
    /// The C program (.c) or Verilog design (.v, .sv; read through Yosys).
    pub source: PathBuf,
    /// Output file [default: the source's name with .pgc, or .txt for --emit bristol, next to
    /// the source].
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "pgc")]
    pub emit: Emit,
    /// Also show what each optimization removed and where the compile time went, phase by
    /// phase (parsing, running the statements, writing): wall time and the CPU time of the
    /// thread that ran each phase.
    #[arg(long)]
    pub stats: bool,
    /// Print the summary (and with --stats the pass figures) as JSON.
    #[arg(long)]
    pub json: bool,
    /// No progress line or notes on stderr (a compile longer than a second shows its
    /// progress when stderr is a terminal).
    #[arg(long, short)]
    pub quiet: bool,
    /// Stream gates through a temporary file next to the output instead of holding the
    /// circuit in RAM (for programs of hundreds of millions of gates). Memory then stays at
    /// the program's variables plus about 50 MB; the summary has gate counts but no AND
    /// depth. Only with --emit pgc. The file holds the flat circuit: parallel regions are
    /// not kept, so it runs with fine-grained parallelism only. (--compact always needs no
    /// such flag: compact compilation always streams.)
    #[arg(long)]
    pub low_memory: bool,
    #[command(flatten)]
    pub compile: CompileArgs,
}

impl CompileCmdArgs {
    /// Nothing on stderr but errors: --quiet, or --json (whose output is for programs).
    fn quiet(&self) -> bool {
        self.quiet || self.json
    }
}

pub fn compile(args: CompileCmdArgs) -> Result<()> {
    let spec = args.source.to_string_lossy();
    if !is_source(&spec) {
        bail!(
            "{} is neither a C program (.c) nor a Verilog design (.v, .sv); pgc compile \
             translates those to circuits",
            args.source.display()
        );
    }
    args.compile.check_language(&spec)?;
    if is_verilog_source(&spec) && args.low_memory {
        bail!("--low-memory applies to C programs; a Verilog design compiles in memory");
    }
    let output = args.output.clone().unwrap_or_else(|| {
        args.source.with_extension(match args.emit {
            Emit::Pgc => "pgc",
            Emit::Bristol => "txt",
        })
    });
    if same_file(&output, &args.source) {
        bail!(
            "the output file {} would overwrite the source",
            output.display()
        );
    }
    // Checked before compiling, which may take minutes, rather than when writing.
    let folder = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        bail!(
            "cannot write {}: there is no directory {}",
            output.display(),
            folder.display()
        );
    }
    if args.compile.compact_mode() == CompactArg::Always {
        // Compact compilation streams through temporary files anyway.
        return compile_compact(&args, &args.compile.options(), &output);
    }
    if args.low_memory {
        return compile_low_memory(&args, &output);
    }
    let opts = args.compile.options();
    let compiled = match compile_either(
        &args.source,
        &opts,
        args.compile.compact_mode(),
        args.quiet(),
    )? {
        Either::Flat(compiled) => compiled,
        Either::Compact => return compile_compact(&args, &opts, &output),
    };
    let c = &compiled.circuit;
    validate(c).context("the compiler produced an invalid circuit; this is a bug in pgc")?;
    let parallel = compiled
        .parallel_circuit()
        .context("splitting the circuit into parallel regions; this is a bug in pgc")?;
    let regions = parallel.region_info();
    match args.emit {
        // Each parallel region is stored once, as a template and its instances' wires.
        Emit::Pgc => write_pgc_parallel_file(&output, &parallel, &compiled.interface)?,
        Emit::Bristol => {
            let write = || -> std::io::Result<()> {
                let mut f = std::fs::File::create(&output)?;
                write_bristol_fashion(c, &mut f, false)?;
                f.sync_all()
            };
            write().with_context(|| format!("cannot write {}", output.display()))?;
        }
    }
    let s = stats(c);
    let cs = &compiled.stats;
    if args.json {
        let (inputs, outputs) = typed_io::interface_json(&compiled.interface);
        let mut v = json!({
            "source": args.source.display().to_string(),
            "output": output.display().to_string(),
            "format": match args.emit { Emit::Pgc => "pgc", Emit::Bristol => "bristol-fashion" },
            "entry": compiled.entry_name,
            "gates": s.gates,
            "and_gates": s.and_gates,
            "xor_gates": s.xor_gates,
            "inv_gates": s.inv_gates,
            "and_depth": s.and_depth,
            "wires": s.wires,
            "inputs": inputs,
            "outputs": outputs,
            "compile_seconds": cs.elapsed.as_secs_f64(),
            "phases": cs.phases,
            "regions": regions.iter().map(|r| json!({
                "line": r.line,
                "instances": r.instances,
                "and_gates_per_instance": r.and_gates_per_instance,
            })).collect::<Vec<_>>(),
        });
        if args.stats {
            v["stats"] = serde_json::to_value(cs)?;
        }
        outln!("{v}");
        return Ok(());
    }
    outln!(
        "{} ({}) -> {}",
        args.source.display(),
        compiled.entry_name,
        output.display()
    );
    outln!(
        "gates        {} (AND {}, XOR {}, INV {}), AND depth {}",
        report::group(s.gates),
        report::group(s.and_gates),
        report::group(s.xor_gates),
        report::group(s.inv_gates),
        s.and_depth
    );
    // Loops of XORs only (AES's AddRoundKey, say) are regions too, but with nothing to
    // garble in parallel: one line for all of them instead of one each.
    let (linear, regions): (Vec<_>, Vec<_>) = regions
        .into_iter()
        .partition(|r| r.and_gates_per_instance == 0);
    // The same loop reached again (a function called in a loop) is one line with a count.
    for (r, repeats) in pgc_circuit::RegionInfo::runs(&regions) {
        outln!(
            "region       line {}: {} independent instances × {} ANDs{}{}",
            r.line,
            r.instances,
            report::group(r.and_gates_per_instance),
            if repeats > 1 {
                format!(", {repeats} such regions")
            } else {
                String::new()
            },
            if args.emit == Emit::Bristol {
                " (Bristol output is flat)"
            } else {
                ""
            }
        );
    }
    if let Some(line) = crate::commands::linear_regions_line(&linear) {
        outln!("region       {line}");
    }
    if args.emit == Emit::Bristol {
        outln!("Bristol Fashion keeps no names or types; input and output values in this order:");
    }
    for line in typed_io::interface_lines(&compiled.interface) {
        outln!("{line}");
    }
    if args.stats {
        outln!(
            "compiled in  {:.1} ms; {} AND/XOR gates emitted, {} after dead-gate elimination ({} AND)",
            cs.elapsed.as_secs_f64() * 1e3,
            report::group(cs.gates_emitted),
            report::group(cs.gates_final),
            report::group(cs.and_gates_final)
        );
        outln!("optimizer    gates avoided while building, or removed afterwards:");
        print_passes(cs);
    }
    Ok(())
}

/// A compact circuit (format v3): functions stored once per argument shape.
fn compile_compact(
    args: &CompileCmdArgs,
    opts: &pgc_compiler::Options,
    output: &Path,
) -> Result<()> {
    if args.emit == Emit::Bristol {
        bail!(
            "a compact circuit cannot be written as Bristol Fashion (which has no templates); \
             compile with --compact never to unroll it, or drop --emit bristol"
        );
    }
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = output.with_extension(format!("pgc.tmp{}", std::process::id()));
    let guard = TempFile::register(tmp.clone());
    let (interface, cs, summary) =
        compile_compact_to(&args.source, opts, &dir, &tmp, args.quiet())?;
    std::fs::rename(&tmp, output).with_context(|| format!("cannot write {}", output.display()))?;
    guard.keep();
    let rate = cs.gates_final as f64 / cs.elapsed.as_secs_f64().max(1e-9);
    if args.json {
        let (inputs, outputs) = typed_io::interface_json(&interface);
        let mut v = json!({
            "source": args.source.display().to_string(),
            "output": output.display().to_string(),
            "format": "pgc-compact",
            "gates": cs.gates_final,
            "and_gates": cs.and_gates_final,
            "templates": summary.templates,
            "calls": summary.calls,
            "calls_reused": summary.calls_reused,
            "loops_outlined": summary.loops_outlined,
            "loop_iterations_outlined": summary.loop_iterations_outlined,
            "loops_outlined_nested": summary.loops_outlined_nested,
            "loop_iterations_outlined_nested": summary.loop_iterations_outlined_nested,
            "peak_live_wires": summary.peak_live_wires,
            "label_bytes_when_run": summary.peak_live_wires * 16,
            "inputs": inputs,
            "outputs": outputs,
            "compile_seconds": cs.elapsed.as_secs_f64(),
            "phases": cs.phases,
            "gates_per_second": rate,
            "regions": [],
        });
        if args.stats {
            v["stats"] = serde_json::to_value(&cs)?;
        }
        outln!("{v}");
        return Ok(());
    }
    outln!(
        "{} -> {} (compact)",
        args.source.display(),
        output.display()
    );
    outln!(
        "gates        {} expanded (AND {})",
        report::group(cs.gates_final),
        report::group(cs.and_gates_final)
    );
    outln!(
        "templates    {} stored once; {} calls in the main body ({} answered by a template \
         already compiled)",
        summary.templates,
        report::group(summary.calls),
        report::group(summary.calls_reused)
    );
    outln!(
        "loops        {} written inline stored once ({} iterations run as template calls; \
         {} of them outer loops holding such a loop, {} iterations)",
        summary.loops_outlined,
        report::group(summary.loop_iterations_outlined),
        summary.loops_outlined_nested,
        report::group(summary.loop_iterations_outlined_nested)
    );
    outln!(
        "live wires   {} slots when run ({} of labels per party)",
        report::group(summary.peak_live_wires),
        report::bytes(summary.peak_live_wires * 16)
    );
    for line in typed_io::interface_lines(&interface) {
        outln!("{line}");
    }
    if args.stats {
        outln!(
            "compiled in  {:.1} ms ({:.1} M gates/s of the expanded circuit); {} AND/XOR gates \
             emitted outside templates",
            cs.elapsed.as_secs_f64() * 1e3,
            rate / 1e6,
            report::group(cs.gates_emitted)
        );
        outln!("optimizer    gates avoided while building, or removed afterwards:");
        print_passes(&cs);
    }
    Ok(())
}

/// `--low-memory`: compile straight into the output file through a spill file.
fn compile_low_memory(args: &CompileCmdArgs, output: &Path) -> Result<()> {
    if args.emit != Emit::Pgc {
        bail!("--low-memory writes only pgc's own format (drop --emit bristol)");
    }
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = output.with_extension("pgc.partial");
    let file =
        std::fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let guard = TempFile::register(tmp.clone());
    let result = pgc_compiler::compile_file_streaming(
        &args.source,
        &args.compile.options(),
        &dir,
        std::io::BufWriter::new(file),
    );
    let (interface, cs) = result?;
    std::fs::rename(&tmp, output).with_context(|| format!("cannot write {}", output.display()))?;
    guard.keep();
    if args.json {
        let (inputs, outputs) = typed_io::interface_json(&interface);
        let mut v = json!({
            "source": args.source.display().to_string(),
            "output": output.display().to_string(),
            "format": "pgc",
            "and_gates": cs.and_gates_final,
            "gates": cs.gates_final,
            "inputs": inputs,
            "outputs": outputs,
            "compile_seconds": cs.elapsed.as_secs_f64(),
            "phases": cs.phases,
            // The streaming compile writes the flat circuit (no regions kept).
            "regions": [],
        });
        if args.stats {
            v["stats"] = serde_json::to_value(&cs)?;
        }
        outln!("{v}");
        return Ok(());
    }
    outln!("{} -> {}", args.source.display(), output.display());
    outln!(
        "gates        {} AND/XOR (AND {}), compiled in {:.1} s with gates streamed through disk",
        report::group(cs.gates_final),
        report::group(cs.and_gates_final),
        cs.elapsed.as_secs_f64()
    );
    for line in typed_io::interface_lines(&interface) {
        outln!("{line}");
    }
    if args.stats {
        print_passes(&cs);
    }
    Ok(())
}

/// What each optimization avoided or removed, one line each.
fn print_passes(cs: &pgc_compiler::CompileStats) {
    for p in &cs.passes {
        let ands = p
            .and_gates_removed
            .map(|a| format!(" ({} AND)", report::group(a)))
            .unwrap_or_default();
        outln!(
            "  {:<28} {} gates{ands}",
            p.name,
            report::group(p.gates_removed)
        );
    }
    if !cs.phases.is_empty() {
        outln!("phases       where the time went (wall; CPU of the thread that ran the phase):");
        for p in &cs.phases {
            let cpu = p
                .cpu
                .map(|c| format!(" (CPU {:.2} s)", c.as_secs_f64()))
                .unwrap_or_default();
            outln!("  {:<28} {:.2} s{cpu}", p.name, p.wall.as_secs_f64());
        }
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
