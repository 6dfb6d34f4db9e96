//! Verilog input: Yosys reads and elaborates the design, pgc maps Yosys' cells onto its own
//! building blocks.
//!
//! The flow follows the hardware-synthesis route of Demmler et al., *Automated Synthesis of
//! Optimized Circuits for Secure Computation* (CCS 2015, §3), with one change where it
//! matters for cost: generic logic synthesis (ABC) does not know that XOR and INV are free
//! in garbled circuits and AND is not, so by default ([`VerilogFlow::Words`]) Yosys only
//! elaborates the design to word-level cells (`proc; flatten; opt; wreduce`, ROMs kept as
//! tables), and each `$add`, `$mul`, `$lt`, `$mux`, … becomes the AND-minimal (or, with
//! [`OptimizeFor::Depth`](pgc_circuit::OptimizeFor::Depth), low-depth) block of
//! [`pgc_circuit::blocks`] that the C compiler uses too ([`cells`] has the semantics). The
//! seed's own route, `synth -flatten; abc -g AND,XOR`, is [`VerilogFlow::Gates`], for
//! comparison.
//!
//! Ports follow the C compiler's convention (CBMC-GC's): `INPUT_A_*` and `INPUT_B_*` are the
//! parties' inputs, `OUTPUT_*` outputs both learn, `OUTPUT_A_*`/`OUTPUT_B_*` outputs one
//! party learns. A port's bits are its value least significant bit first; `signed` ports
//! are signed integers, one-bit unsigned ports booleans. Yosys itself: see [`yosys`].

mod cells;
mod json;
mod sums;
mod yosys;

use std::path::{Path, PathBuf};
use std::time::Instant;

use pgc_circuit::netlist::NetBuilder;
use pgc_circuit::typed::MAX_INT_BITS;
use pgc_circuit::{CType, InputPort, Interface, OutputPort};
use serde::Serialize;

use crate::lower::{input_owner, output_visibility};
use crate::{CompileError, Compiled, Options, SourcePos};
use json::{BitRef, Design, Module, flag_set, src_attr, src_pos};

/// Which Yosys passes turn the design into cells pgc maps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum VerilogFlow {
    /// Word-level cells after `proc; flatten; opt; wreduce; memory -nomap`, each mapped onto
    /// pgc's building blocks (fewest ANDs).
    #[default]
    Words,
    /// Gate-level synthesis by Yosys and ABC, `synth -flatten; abc -g AND,XOR` (the seed's
    /// route; ABC minimizes all gates, not ANDs).
    Gates,
}

impl VerilogFlow {
    /// The name `--verilog-flow` takes.
    pub fn name(self) -> &'static str {
        match self {
            VerilogFlow::Words => "words",
            VerilogFlow::Gates => "gates",
        }
    }
}

/// Whether `path` names a Verilog design (`.v`, or SystemVerilog `.sv`).
pub fn is_verilog_path(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("v") || e.eq_ignore_ascii_case("sv"))
}

/// The version line of the Yosys pgc would run (`Yosys 0.23 (git sha1 …)`): part of what a
/// compile cache must key on.
pub fn yosys_version() -> Result<String, CompileError> {
    Ok(yosys::find()?.version)
}

/// Yosys' `opt` with the options that turn multiplexers with constant or undefined inputs
/// into plain logic.
const OPT: &str = "opt -mux_undef -mux_bool -undriven";
const OPT_FLAGS: &str = "-mux_undef -mux_bool -undriven";

/// The Yosys passes of a flow, run after the design is read, for top module `top`.
pub fn script(flow: VerilogFlow, top: &str) -> String {
    match flow {
        // `opt -full` would be a little better, but its `opt_expr -fine` mis-optimizes
        // signed comparisons with zero in Yosys 0.23 (`x >= 0` becomes `!x[msb]` with its
        // zero extension filled with ones).
        VerilogFlow::Words => format!(
            "hierarchy -check -top {top}; proc; flatten; {OPT}; wreduce; peepopt; opt_share; \
             opt_clean; memory -nomap; {OPT}; wreduce; opt_clean"
        ),
        // Yosys' own `synth -flatten` up to its gate-level stage, then that stage spelled out
        // (`help synth`) with the same change, and plain `abc` (Yosys 0.23's `abc -fast`
        // is gone from newer versions).
        VerilogFlow::Gates => format!(
            "hierarchy -check -top {top}; synth -flatten -top {top} -run :fine; \
             opt -fast {OPT_FLAGS}; memory_map; {OPT}; techmap; opt -fast; abc; opt -fast; \
             abc -g AND,XOR; opt_clean"
        ),
    }
}

/// Compiles the Verilog design at `path` (its top module: `opts.entry`, else the only module
/// no other instantiates). `opts.defines` and `opts.include_dirs` go to Yosys' preprocessor.
pub fn compile_file(path: &Path, opts: &Options) -> Result<Compiled, CompileError> {
    std::fs::metadata(path).map_err(|e| CompileError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let sv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("sv"));
    // Yosys reports the path as given, which is the name the user knows.
    compile_renamed(path, sv, opts, &|f: &str| f.to_string())
}

/// Compiles Verilog source text; `name` is used in error positions. (Yosys reads it from a
/// temporary file: `include` directives resolve against `opts.include_dirs` only.)
pub fn compile_source(source: &str, name: &str, opts: &Options) -> Result<Compiled, CompileError> {
    use std::io::Write;
    let (tmp, mut file) = yosys::find()?.temp_file()?;
    file.write_all(source.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| CompileError::Io {
            path: tmp.path().to_path_buf(),
            source: e,
        })?;
    drop(file);
    let sv = name.to_ascii_lowercase().ends_with(".sv");
    let tmp_name = tmp.path().display().to_string();
    let renamed = |f: &str| {
        if f == tmp_name {
            name.to_string()
        } else {
            f.to_string()
        }
    };
    compile_renamed(tmp.path(), sv, opts, &renamed)
}

/// The files a compilation of `path` reads: the design and everything it includes (what a
/// compile cache must key on, besides the options and [`yosys_version`]).
pub fn source_files(path: &Path, opts: &Options) -> Result<Vec<PathBuf>, CompileError> {
    let y = yosys::find()?;
    let sv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("sv"));
    let read = read_command(path, sv, opts)?;
    let (deps, _) = y.temp_file()?;
    let mut cmd = std::process::Command::new(&y.program);
    cmd.arg("-q")
        .arg("-E")
        .arg(deps.path())
        .arg("-p")
        .arg(&read);
    let output = yosys::output_within(&y, cmd, yosys::Limits::from_env()?)?;
    let text = std::fs::read_to_string(deps.path()).unwrap_or_default();
    if !output.status.success() || text.is_empty() {
        // Yosys will report the problem when compiling; the design alone keys the cache.
        return Ok(vec![path.to_path_buf()]);
    }
    Ok(make_deps(&text))
}

/// The prerequisites of a Makefile rule `target: a b\ c` (Yosys' `-E` output).
fn make_deps(text: &str) -> Vec<PathBuf> {
    let Some((_, rest)) = split_unescaped_colon(text) else {
        return Vec::new();
    };
    let mut files = Vec::new();
    let mut cur = String::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars
                .peek()
                .is_some_and(|n| *n == ' ' || *n == '\\' || *n == '#') =>
            {
                cur.push(chars.next().expect("peeked"));
            }
            '\\' if chars.peek() == Some(&'\n') => {
                chars.next();
            }
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    files.push(PathBuf::from(std::mem::take(&mut cur)));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        files.push(PathBuf::from(cur));
    }
    files
}

fn split_unescaped_colon(text: &str) -> Option<(&str, &str)> {
    let bytes = text.as_bytes();
    (0..bytes.len())
        .find(|&i| bytes[i] == b':' && (i == 0 || bytes[i - 1] != b'\\'))
        .map(|i| (&text[..i], &text[i + 1..]))
}

/// `read_verilog` with the options' defines and include directories, for `path`.
fn read_command(path: &Path, sv: bool, opts: &Options) -> Result<String, CompileError> {
    let refuse = |what: String| CompileError::Source {
        pos: None,
        message: format!("{what} cannot be passed to Yosys (it contains a space or quote)"),
    };
    // Empty modules stay modules (Yosys would make them blackboxes).
    let mut cmd = String::from("read_verilog -noblackbox");
    if sv {
        cmd.push_str(" -sv");
    }
    for d in &opts.defines {
        if d.is_empty() || d.contains(|c: char| c.is_whitespace() || c == '"' || c == ';') {
            return Err(refuse(format!("-D {d}")));
        }
        cmd.push_str(&format!(" -D{d}"));
    }
    for dir in &opts.include_dirs {
        let s = dir.to_str().unwrap_or("\"");
        if s.is_empty() || s.contains(|c: char| c.is_whitespace() || c == '"' || c == ';') {
            return Err(refuse(format!("-I {}", dir.display())));
        }
        cmd.push_str(&format!(" -I{s}"));
    }
    let file =
        yosys::quoted(path).ok_or_else(|| refuse(format!("the file name {}", path.display())))?;
    cmd.push(' ');
    cmd.push_str(&file);
    Ok(cmd)
}

fn compile_renamed(
    path: &Path,
    sv: bool,
    opts: &Options,
    rename: &dyn Fn(&str) -> String,
) -> Result<Compiled, CompileError> {
    let start = Instant::now();
    let y = yosys::find()?;
    let read = read_command(path, sv, opts)?;
    let top = match &opts.entry {
        Some(t) => {
            if !is_plain_identifier(t) {
                return Err(CompileError::Source {
                    pos: None,
                    message: format!("--top `{t}` is not a plain Verilog identifier"),
                });
            }
            t.clone()
        }
        None => {
            // Only read (Yosys' JSON writer needs processes converted): which modules exist
            // and which instantiate which.
            let read_only = parse_design(&yosys::run(&y, &format!("{read}; proc"), rename)?)?;
            auto_top(&read_only, &rename(&path.display().to_string()))?
        }
    };
    let text = yosys::run(
        &y,
        &format!("{read}; {}", script(opts.verilog_flow, &top)),
        rename,
    )
    .map_err(|e| match e {
        // Yosys' own words name neither the file nor the flag.
        CompileError::Source { pos: None, message }
            if opts.entry.is_some() && message == format!("Module `{top}' not found!") =>
        {
            CompileError::Source {
                pos: None,
                message: format!(
                    "{}: no module named `{top}` (--top)",
                    rename(&path.display().to_string())
                ),
            }
        }
        e => e,
    })?;
    compile_netlist(&text, &top, opts, rename, start)
}

/// Compiles a netlist in Yosys' JSON format (what `write_json` writes after the passes of
/// [`script`]), module `top` (or the one marked `top`): what [`compile_file`] does once Yosys
/// has run. The netlist is outside input like the design (the fuzz target `yosys_json`
/// feeds it bytes), so every malformed part is a clean error.
pub fn compile_json_netlist(
    text: &str,
    top: &str,
    opts: &Options,
) -> Result<Compiled, CompileError> {
    compile_netlist(text, top, opts, &|f: &str| f.to_string(), Instant::now())
}

fn compile_netlist(
    text: &str,
    top: &str,
    opts: &Options,
    rename: &dyn Fn(&str) -> String,
    start: Instant,
) -> Result<Compiled, CompileError> {
    let design = parse_design(text)?;
    let module = design
        .modules
        .0
        .iter()
        .find(|(_, m)| flag_set(m.attributes.get("top")))
        .or_else(|| design.modules.0.iter().find(|(n, _)| *n == top))
        .map(|(_, m)| m)
        .ok_or_else(|| CompileError::Source {
            pos: None,
            message: format!("Yosys' netlist has no module `{top}`"),
        })?;
    let mut g = NetBuilder::new(opts.optimize);
    let (interface, params) = map_module(module, &mut g, rename, opts)?;
    let (circuit, b) = g.try_finish().map_err(|e| CompileError::Source {
        pos: None,
        message: format!("the circuit cannot be built: {e}"),
    })?;
    let stats = crate::compile_stats(&b, &Default::default(), circuit.and_count(), start);
    Ok(Compiled {
        circuit,
        regions: Vec::new(),
        interface,
        stats,
        entry_name: top.to_string(),
        entry_params: params,
    })
}

fn parse_design(text: &str) -> Result<Design, CompileError> {
    serde_json::from_str(text).map_err(|e| CompileError::Source {
        pos: None,
        message: format!("cannot read Yosys' JSON netlist: {e}"),
    })
}

fn is_plain_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// The top module of a design as read: the only module that no other instantiates.
fn auto_top(design: &Design, file: &str) -> Result<String, CompileError> {
    let defined: Vec<&(String, Module)> = design
        .modules
        .0
        .iter()
        .filter(|(_, m)| !flag_set(m.attributes.get("blackbox")))
        .collect();
    let instantiated: std::collections::HashSet<&str> = design
        .modules
        .0
        .iter()
        .flat_map(|(_, m)| m.cells.0.iter())
        .map(|(_, c)| c.kind.trim_start_matches('\\'))
        .collect();
    let tops: Vec<&str> = defined
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| !instantiated.contains(n))
        .collect();
    match tops.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(CompileError::Source {
            pos: None,
            message: format!("{file}: no module defined (or every module is instantiated)"),
        }),
        many => Err(CompileError::Source {
            pos: None,
            message: format!(
                "{file}: several top-level modules ({}): name one with --top NAME",
                many.join(", ")
            ),
        }),
    }
}

/// Declares the ports of `module` in `g`, maps its cells (within `opts.gate_budget`,
/// reporting to `opts.progress`), and declares the outputs. Returns the interface and the
/// port names in declaration order.
fn map_module(
    module: &Module,
    g: &mut NetBuilder,
    rename: &dyn Fn(&str) -> String,
    opts: &Options,
) -> Result<(Interface, Vec<String>), CompileError> {
    let mut interface = Interface::default();
    let mut names = Vec::new();
    let mut mapper = cells::Mapper::new(g, rename, opts.gate_budget, opts.progress.clone());
    let mut outputs = Vec::new();
    for (name, port) in &module.ports.0 {
        let pos = port_pos(module, name, rename);
        let refuse = |message: String| CompileError::Source {
            pos: pos.clone(),
            message,
        };
        let width = port.bits.len();
        let signed = flag_set(port.signed.as_ref());
        if width as u64 > MAX_INT_BITS as u64 {
            return Err(refuse(format!(
                "port `{name}` has {width} bits; ports may have at most {MAX_INT_BITS} (split it)"
            )));
        }
        let ctype = if width == 1 && !signed {
            CType::Bool
        } else {
            CType::int(width as u32, signed)
        };
        match port.direction.as_str() {
            "input" => {
                let owner = input_owner(name).filter(|_| name.len() > "INPUT_A_".len());
                let Some(owner) = owner else {
                    return Err(refuse(format!(
                        "input port `{name}` is neither INPUT_A_… nor INPUT_B_…: a circuit's \
                         inputs belong to one of the two parties (no clocks or resets)"
                    )));
                };
                let lits = mapper.g.input(width as u32);
                for (b, l) in port.bits.iter().zip(lits) {
                    match b {
                        BitRef::Net(n) if !mapper.has_net(*n) => mapper.set_net(*n, l),
                        _ => {
                            return Err(refuse(format!(
                                "input port `{name}` shares bits with another port"
                            )));
                        }
                    }
                }
                interface.inputs.push(InputPort {
                    name: name.clone(),
                    owner,
                    ctype,
                });
            }
            "output" => {
                let Some(visibility) = output_visibility(name).filter(|_| {
                    let prefix = ["OUTPUT_A_", "OUTPUT_B_", "OUTPUT_"]
                        .iter()
                        .find(|p| name.starts_with(*p))
                        .map_or(0, |p| p.len());
                    name.len() > prefix
                }) else {
                    return Err(refuse(format!(
                        "output port `{name}` is not named OUTPUT_… (or OUTPUT_A_…/OUTPUT_B_… \
                         for an output one party learns)"
                    )));
                };
                outputs.push((
                    port,
                    OutputPort {
                        name: name.clone(),
                        visibility,
                        ctype,
                    },
                ));
            }
            other => {
                return Err(refuse(format!(
                    "port `{name}` is an {other} port: only inputs and outputs are supported"
                )));
            }
        }
        names.push(name.clone());
    }
    if outputs.is_empty() {
        return Err(CompileError::Source {
            pos: src_attr(&module.attributes).and_then(|s| src_pos(s, rename)),
            message: "the top module has no outputs: name an output port OUTPUT_…".into(),
        });
    }
    mapper.map_cells(module)?;
    for (port, out) in outputs {
        let bits: Vec<_> = port.bits.iter().map(|b| mapper.lit(b)).collect();
        mapper.g.output(&bits);
        interface.outputs.push(out);
    }
    Ok((interface, names))
}

/// A port's declaration, from the `src` of the wire of the same name.
fn port_pos(module: &Module, name: &str, rename: &dyn Fn(&str) -> String) -> Option<SourcePos> {
    module
        .netnames
        .get(name)
        .and_then(|n| src_attr(&n.attributes))
        .and_then(|s| src_pos(s, rename))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makefile_dependencies() {
        let deps = make_deps("out\\ x.json: sp\\ ace/inc.vh sp\\ ace/t.v \\\n  other.v\n");
        assert_eq!(
            deps,
            [
                PathBuf::from("sp ace/inc.vh"),
                PathBuf::from("sp ace/t.v"),
                PathBuf::from("other.v")
            ]
        );
    }

    #[test]
    fn verilog_paths_and_identifiers() {
        assert!(is_verilog_path(Path::new("a/b.v")));
        assert!(is_verilog_path(Path::new("b.SV")));
        assert!(!is_verilog_path(Path::new("b.c")));
        assert!(is_plain_identifier("mac_16"));
        assert!(!is_plain_identifier("a b"));
        assert!(!is_plain_identifier("1x"));
    }
}
