//! gcc as the oracle: build programs with gcc, run them on inputs, and compare what they print
//! with the compiled circuit evaluated in cleartext and through the two-party protocol.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use pgc_circuit::{CType, Owner, Visibility, eval_bitsliced};
use pgc_compiler::{CompileError, Compiled, Options, compile_file, compile_source};
use pgc_protocol::{Party, run_local_tcp_with};

use super::harness::{Source, UNIT_PRELUDE, driver_c, preprocess, render_unit};
use super::values::{
    Values, cli_value, decode, encode, encode_port, leaves, mask, random_inputs, show_value,
};
use super::{Rng, TempDir};

/// How long one compile may take in the tests before it counts as a hang.
pub const COMPILE_LIMIT: Duration = Duration::from_secs(120);

/// One program to check: its source, the `-D` defines and the compiler options.
#[derive(Clone, Debug)]
pub struct Case {
    /// Names the case in messages.
    pub label: String,
    pub source: Source,
    pub defines: Vec<String>,
    pub include_dirs: Vec<PathBuf>,
    /// Compiler options; `defines`/`include_dirs` above are added to them.
    pub opts: Options,
    /// Float outputs that are NaN in gcc's result match any NaN (sign and payload aside).
    /// For programs where which of two NaN operands survives depends on the instruction
    /// order gcc picks (it commutes `+` and `*`, even at -O0), or where gcc folds a NaN
    /// constant its own way; see docs/c-subset.md, "Floating point".
    pub any_nan: bool,
}

impl Case {
    pub fn file(path: PathBuf, defines: &[&str]) -> Case {
        Case {
            label: path.display().to_string(),
            source: Source::File(path),
            defines: defines.iter().map(|d| d.to_string()).collect(),
            include_dirs: Vec::new(),
            opts: Options::default(),
            any_nan: false,
        }
    }

    pub fn text(name: &str, text: &str) -> Case {
        Case {
            label: name.to_string(),
            source: Source::Text {
                name: name.to_string(),
                text: text.to_string(),
            },
            defines: Vec::new(),
            include_dirs: Vec::new(),
            opts: Options::default(),
            any_nan: false,
        }
    }

    pub fn options(&self) -> Options {
        let mut o = self.opts.clone();
        o.defines.extend(self.defines.iter().cloned());
        o.include_dirs.extend(self.include_dirs.iter().cloned());
        o
    }

    pub fn compile(&self) -> Result<Compiled, CompileError> {
        match &self.source {
            Source::File(p) => compile_file(p, &self.options()),
            Source::Text { name, text } => compile_source(text, name, &self.options()),
        }
    }

    /// [`Case::compile`] on another thread, giving up after `limit` (a compiler that never
    /// finishes then fails the test with the program instead of hanging it).
    pub fn compile_within(&self, limit: Duration) -> Result<Compiled, String> {
        let case = self.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(case.compile().map_err(|e| e.to_string()));
        });
        match rx.recv_timeout(limit) {
            Ok(r) => r,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(format!(
                "pgc did not finish compiling within {limit:?} (a hang?)"
            )),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                Err("pgc panicked while compiling (see the panic message above)".into())
            }
        }
    }

    /// Compiles, panicking with the program and the compiler's message on failure.
    pub fn compile_or_panic(&self) -> Compiled {
        self.compile_within(COMPILE_LIMIT).unwrap_or_else(|e| {
            panic!(
                "pgc failed to compile {} (defines {:?}):\n  {e}\n--- program ---\n{}",
                self.label,
                self.defines,
                self.source.text()
            )
        })
    }

    /// A `pgc local` command line that reproduces one input set by hand.
    pub fn reproduce_command(&self, compiled: &Compiled, input: &Values) -> String {
        let mut cmd = format!("pgc local {}", self.source.name());
        for d in &self.defines {
            cmd.push_str(&format!(" -D {d}"));
        }
        for (p, v) in compiled.interface.inputs.iter().zip(input) {
            let flag = match p.owner {
                Owner::A => "--a",
                Owner::B => "--b",
            };
            cmd.push_str(&format!(
                " {flag} {}={}",
                p.short_name(),
                cli_value(&p.ctype, v)
            ));
        }
        cmd
    }
}

/// Programs built with gcc into one executable that runs any of them on given inputs.
pub struct GccOracle {
    _dir: TempDir,
    exe: PathBuf,
    /// Per unit: the number of input leaves, and the output ports (name, type) in order.
    units: Vec<(usize, Vec<(String, CType)>)>,
}

impl GccOracle {
    /// Builds every `(case, compiled)` into one executable (compiled in parallel chunks).
    /// Entry and non-static function names must differ between cases.
    pub fn build(cases: &[(&Case, &Compiled)]) -> Result<GccOracle, String> {
        Self::build_with_flags(cases, &[])
    }

    /// As [`GccOracle::build`], with extra gcc flags (e.g. `-fsanitize=undefined`).
    pub fn build_with_flags(
        cases: &[(&Case, &Compiled)],
        flags: &[&str],
    ) -> Result<GccOracle, String> {
        let dir = TempDir::new("oracle");
        // Translation units: programs given as text without defines share a few units and
        // keep their `#include`s (whose guards keep the headers from being repeated);
        // the others are used preprocessed (rewritten, or with their own defines), one each,
        // since two preprocessed copies of a header would clash.
        let mut shared: Vec<String> = Vec::new();
        let mut alone: Vec<String> = Vec::new();
        for (i, (case, compiled)) in cases.iter().enumerate() {
            let pre = preprocess(&case.source, &case.defines, &case.include_dirs, dir.path())?;
            let r = render_unit(i, &pre, compiled)
                .map_err(|e| format!("oracle harness for {}: {e}", case.label))?;
            match &case.source {
                Source::Text { text, .. }
                    if !r.rewritten && case.defines.is_empty() && case.include_dirs.is_empty() =>
                {
                    shared.push(format!("{text}\n{}", r.run_function));
                }
                _ => alone.push(format!("{}\n{}", r.program, r.run_function)),
            }
        }
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(shared.len().div_ceil(24))
            .max(1);
        let per_chunk = shared.len().div_ceil(workers).max(1);
        let mut units: Vec<String> = shared.chunks(per_chunk).map(|c| c.concat()).collect();
        units.extend(alone);
        let mut objects = Vec::new();
        let mut children = Vec::new();
        for (c, text) in units.iter().enumerate() {
            let src = dir.path().join(format!("programs{c}.c"));
            let obj = dir.path().join(format!("programs{c}.o"));
            std::fs::write(&src, format!("{UNIT_PRELUDE}{text}"))
                .map_err(|e| format!("cannot write {}: {e}", src.display()))?;
            let child = gcc()
                .args(flags)
                .arg("-c")
                .arg(&src)
                .arg("-o")
                .arg(&obj)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot run gcc: {e}"))?;
            children.push((src, child));
            objects.push(obj);
            // At most `workers` compilers at once.
            if children.len() >= workers.max(2) {
                let (src, child) = children.remove(0);
                wait_gcc(src, child)?;
            }
        }
        for (src, child) in children {
            wait_gcc(src, child)?;
        }
        let driver = dir.path().join("driver.c");
        std::fs::write(&driver, driver_c(cases.len()))
            .map_err(|e| format!("cannot write {}: {e}", driver.display()))?;
        let exe = dir.path().join("oracle");
        let out = gcc()
            .args(flags)
            .arg(&driver)
            .args(&objects)
            .arg("-o")
            .arg(&exe)
            .arg("-lm") // floor, sqrt, … that gcc calls at -O0
            .output()
            .map_err(|e| format!("cannot run gcc: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "gcc failed to link the oracle:\n{}",
                truncate(&String::from_utf8_lossy(&out.stderr), 6000)
            ));
        }
        let units = cases
            .iter()
            .map(|(_, c)| {
                let n_in = c
                    .interface
                    .inputs
                    .iter()
                    .map(|p| leaves(&p.ctype).len())
                    .sum();
                let outs = c
                    .interface
                    .outputs
                    .iter()
                    .map(|p| (p.name.clone(), p.ctype.clone()))
                    .collect();
                (n_in, outs)
            })
            .collect();
        Ok(GccOracle {
            _dir: dir,
            exe,
            units,
        })
    }

    /// Runs unit `calls[i].0` on input set `calls[i].1`; per call, the output values in the
    /// unit's output-port order, or why there are none (the program crashed, printed nothing).
    pub fn run(&self, calls: &[(usize, &Values)]) -> Result<Vec<Result<Values, String>>, String> {
        let mut input = String::new();
        for (unit, vals) in calls {
            let flat: Vec<u64> = vals.iter().flatten().copied().collect();
            assert_eq!(
                flat.len(),
                self.units[*unit].0,
                "input leaves for unit {unit}"
            );
            input.push_str(&format!("{unit} {}", flat.len()));
            for v in flat {
                input.push_str(&format!(" {v}"));
            }
            input.push('\n');
        }
        let mut child = Command::new(&self.exe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run the oracle executable: {e}"))?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child
            .wait_with_output()
            .map_err(|e| format!("the oracle executable did not finish: {e}"))?;
        let _ = writer.join();
        if !out.status.success() {
            return Err(format!(
                "the oracle executable failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let mut results = Vec::with_capacity(calls.len());
        let mut printed: Vec<(String, Vec<u64>)> = Vec::new();
        for line in text.lines() {
            let mut words = line.split_ascii_whitespace();
            match words.next() {
                Some("OUT") => {
                    let name = words.next().unwrap_or_default().to_string();
                    let vals = words
                        .map(|w| w.parse::<u64>().unwrap_or(u64::MAX))
                        .collect();
                    printed.retain(|(n, _)| *n != name);
                    printed.push((name, vals));
                }
                Some("END") => {
                    let status = words.next().unwrap_or("?");
                    let unit = calls.get(results.len()).map(|c| c.0).unwrap_or(0);
                    let r = if status != "0" {
                        Err(format!(
                            "the gcc-built program did not finish normally (wait status \
                             {status}); the oracle's stderr:\n{}",
                            truncate(&stderr, 3000)
                        ))
                    } else {
                        self.units[unit]
                            .1
                            .iter()
                            .map(|(name, t)| {
                                let ls = leaves(t);
                                match printed.iter().find(|(n, _)| n == name) {
                                    Some((_, v)) if v.len() == ls.len() => Ok(v
                                        .iter()
                                        .zip(&ls)
                                        .map(|(x, l)| x & mask(l.bits))
                                        .collect()),
                                    Some((_, v)) => Err(format!(
                                        "gcc printed {} values for {name}, expected {}",
                                        v.len(),
                                        ls.len()
                                    )),
                                    None => Err(format!("gcc printed no value for {name}")),
                                }
                            })
                            .collect()
                    };
                    results.push(r);
                    printed.clear();
                }
                _ => {}
            }
        }
        if results.len() != calls.len() {
            return Err(format!(
                "the oracle executable answered {} of {} calls",
                results.len(),
                calls.len()
            ));
        }
        Ok(results)
    }
}

fn wait_gcc(src: PathBuf, child: std::process::Child) -> Result<(), String> {
    let out = child
        .wait_with_output()
        .map_err(|e| format!("gcc did not finish: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "gcc rejected the oracle program {} (set PGC_KEEP_TEMP=1 to keep it):\n{}",
            src.display(),
            truncate(&String::from_utf8_lossy(&out.stderr), 6000)
        ))
    }
}

fn gcc() -> Command {
    let mut c = Command::new("gcc");
    c.args(["-O1", "-fwrapv", "-w", "-std=gnu11"]);
    c
}

fn truncate(s: &str, n: usize) -> String {
    if s.len() <= n {
        s.to_string()
    } else {
        let mut end = n;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}\n… ({} bytes more)", &s[..end], s.len() - end)
    }
}

fn input_types(c: &Compiled) -> Vec<&CType> {
    c.interface.inputs.iter().map(|p| &p.ctype).collect()
}

fn output_types(c: &Compiled) -> Vec<&CType> {
    c.interface.outputs.iter().map(|p| &p.ctype).collect()
}

/// The circuit evaluated in cleartext on each input set (64 at a time, bit-sliced).
pub fn eval_circuit(c: &Compiled, inputs: &[Values]) -> Vec<Values> {
    let in_types = input_types(c);
    let out_types = output_types(c);
    // Where the compiler found parallel regions, the split circuit (templates and
    // instances) must compute exactly what the flat one does.
    let parallel = (!c.regions.is_empty()).then(|| {
        c.parallel_circuit()
            .unwrap_or_else(|e| panic!("splitting into regions: {e}"))
    });
    let mut results = Vec::with_capacity(inputs.len());
    for batch in inputs.chunks(64) {
        let sets: Vec<Vec<bool>> = batch.iter().map(|v| encode(&in_types, v)).collect();
        let lanes = pgc_circuit::eval::pack_lanes(&sets);
        let out = eval_bitsliced(&c.circuit, &lanes);
        if let Some(pc) = &parallel {
            assert_eq!(
                eval_bitsliced(pc, &lanes),
                out,
                "the parallel regions compute something else than the flat circuit"
            );
        }
        for k in 0..batch.len() {
            let bits = pgc_circuit::eval::unpack_lane(&out, k);
            results.push(decode(&out_types, &bits));
        }
    }
    results
}

/// What one party learned in a protocol run: per output port, its value, or `None` where the
/// protocol withheld it from that party.
pub type PartyView = Vec<Option<Vec<u64>>>;

/// Runs the two-party protocol (both parties in this process over loopback TCP).
pub fn run_protocol(c: &Compiled, input: &Values) -> Result<(PartyView, PartyView), String> {
    // Every run takes one of the protocol's variants, chosen from the input values (so a
    // test always runs the same ones): the sequential protocol, or the parallel one in
    // each mode with 1, 2, 3 or 8 threads (threads may exceed the cores).
    let variants = protocol_variants();
    let pick = input
        .iter()
        .flatten()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
            (h ^ x).wrapping_mul(0x100_0000_01b3)
        });
    run_protocol_with(c, input, variants[(pick % variants.len() as u64) as usize])
}

/// Both parties' views of one protocol run, or why it failed.
type ProtocolRun = Result<(PartyView, PartyView), String>;

/// How a protocol run is made: Yao sequential, Yao's parallel protocol in a mode, or GMW.
#[derive(Clone, Copy, Debug)]
pub enum ProtocolVariant {
    Sequential,
    Parallel(pgc_protocol::ParallelConfig),
    Gmw,
}

/// [`run_protocol`] with a given variant.
pub fn run_protocol_with(
    c: &Compiled,
    input: &Values,
    variant: ProtocolVariant,
) -> Result<(PartyView, PartyView), String> {
    let owners: Vec<Party> = c
        .interface
        .inputs
        .iter()
        .map(|p| match p.owner {
            Owner::A => Party::A,
            Owner::B => Party::B,
        })
        .collect();
    let mut a = Vec::new();
    let mut b = Vec::new();
    for (p, v) in c.interface.inputs.iter().zip(input) {
        let bits = encode_port(&p.ctype, v);
        match p.owner {
            Owner::A => a.push(bits),
            Owner::B => b.push(bits),
        }
    }
    let visibility: Vec<Visibility> = c.interface.outputs.iter().map(|p| p.visibility).collect();
    let result = match variant {
        ProtocolVariant::Gmw => pgc_protocol::run_local_gmw(
            &c.circuit,
            &owners,
            &visibility,
            &a,
            &b,
            &pgc_protocol::GmwConfig::default(),
            pgc_net::LinkShape::default(),
            Duration::from_secs(120),
            pgc_protocol::LocalSecurity::Tls,
            &mut |_| {},
        ),
        ProtocolVariant::Sequential => run_local_tcp_with(
            &c.circuit,
            &owners,
            &visibility,
            &a,
            &b,
            pgc_protocol::LocalTcpOptions {
                timeout: Duration::from_secs(120),
                ..Default::default()
            },
            &mut |_| {},
        ),
        ProtocolVariant::Parallel(config) => {
            let pc = c
                .parallel_circuit()
                .map_err(|e| format!("splitting into regions: {e}"))?;
            pgc_protocol::run_local_parallel(
                &pc,
                &owners,
                &visibility,
                &a,
                &b,
                &config,
                pgc_net::LinkShape::default(),
                Duration::from_secs(120),
                &std::sync::atomic::AtomicU64::new(0),
            )
        }
    };
    let (out_a, out_b) = result.map_err(|e| format!("the two-party protocol failed: {e}"))?;
    let view = |outs: &Vec<Option<Vec<bool>>>| -> Result<PartyView, String> {
        if outs.len() != c.interface.outputs.len() {
            return Err(format!(
                "the protocol returned {} output values for {} output ports",
                outs.len(),
                c.interface.outputs.len()
            ));
        }
        Ok(c.interface
            .outputs
            .iter()
            .zip(outs)
            .map(|(p, bits)| bits.as_ref().map(|b| pgc_circuit_decode(&p.ctype, b)))
            .collect())
    };
    Ok((view(&out_a.outputs)?, view(&out_b.outputs)?))
}

/// The protocol variants [`run_protocol`] spreads its runs over: Yao's sequential
/// protocol, its parallel modes, and GMW.
pub fn protocol_variants() -> Vec<ProtocolVariant> {
    use pgc_protocol::{ParallelConfig, ParallelMode};
    let mut v = vec![ProtocolVariant::Sequential, ProtocolVariant::Gmw];
    for mode in [
        ParallelMode::Fgp,
        ParallelMode::Cgp,
        ParallelMode::Ipp,
        ParallelMode::Auto,
    ] {
        for threads in [1, 2, 3, 8] {
            v.push(ProtocolVariant::Parallel(ParallelConfig {
                mode,
                threads,
                tau: 4,
            }));
        }
    }
    v
}

fn pgc_circuit_decode(t: &CType, bits: &[bool]) -> Vec<u64> {
    if bits.len() as u64 != t.bit_width() {
        // A wrong width is a mismatch the comparison reports; give it an impossible value.
        return vec![u64::MAX; leaves(t).len()];
    }
    super::values::decode_port(t, bits)
}

/// Whether a port's value `got` matches gcc's `want`: bit for bit, except that with
/// `any_nan` a float leaf where gcc has a NaN matches any NaN.
pub fn same_value(t: &CType, got: &[u64], want: &[u64], any_nan: bool) -> bool {
    if got == want {
        return true;
    }
    if !any_nan || got.len() != want.len() {
        return false;
    }
    let is_nan = pgc_circuit::float_text::is_nan;
    leaves(t)
        .iter()
        .zip(got.iter().zip(want))
        .all(|(l, (&g, &w))| g == w || (l.float && is_nan(w, l.bits) && is_nan(g, l.bits)))
}

/// Describes a mismatch between the expected outputs and what `who` produced.
#[allow(clippy::too_many_arguments)]
fn mismatch_report(
    case: &Case,
    c: &Compiled,
    index: usize,
    input: &Values,
    expected: &Values,
    got: &[Option<Vec<u64>>],
    who: &str,
) -> Option<String> {
    let mut diffs = Vec::new();
    for (k, p) in c.interface.outputs.iter().enumerate() {
        match &got[k] {
            Some(v) if same_value(&p.ctype, v, &expected[k], case.any_nan) => {}
            Some(v) => diffs.push(format!(
                "  {}: gcc {} but {who} {}",
                p.name,
                show_value(&p.ctype, &expected[k]),
                show_value(&p.ctype, v)
            )),
            None => diffs.push(format!("  {}: {who} did not get this output", p.name)),
        }
    }
    if diffs.is_empty() {
        return None;
    }
    let inputs: Vec<String> = c
        .interface
        .inputs
        .iter()
        .zip(input)
        .map(|(p, v)| format!("{} = {}", p.name, show_value(&p.ctype, v)))
        .collect();
    Some(format!(
        "MISMATCH in {} ({who} vs gcc), input set #{index}:\n  inputs: {}\n{}\n  reproduce: {}",
        case.label,
        inputs.join(", "),
        diffs.join("\n"),
        case.reproduce_command(c, input)
    ))
}

/// Compares gcc's outputs with the circuit's (cleartext, every input set) and the protocol's
/// (the first `protocol_runs` input sets). Returns the mismatch reports (empty = all agree).
pub fn compare(
    case: &Case,
    c: &Compiled,
    inputs: &[Values],
    gcc_outputs: &[Result<Values, String>],
    protocol_runs: usize,
) -> Vec<String> {
    let mut failures = Vec::new();
    let circuit = eval_circuit(c, inputs);
    for (i, input) in inputs.iter().enumerate() {
        let expected = match &gcc_outputs[i] {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{} input set #{i}: {e}", case.label));
                continue;
            }
        };
        let got: Vec<Option<Vec<u64>>> = circuit[i].iter().cloned().map(Some).collect();
        if let Some(r) = mismatch_report(case, c, i, input, expected, &got, "the circuit") {
            failures.push(r);
        }
        // Every program's first protocol run also goes through GMW: the same outputs, each
        // revealed to the same parties, under both protocols.
        let runs: Vec<(&str, ProtocolRun)> = match i {
            _ if i >= protocol_runs => vec![],
            0 => vec![
                ("the protocol", run_protocol(c, input)),
                (
                    "GMW",
                    run_protocol_with(c, input, ProtocolVariant::Gmw)
                        .map_err(|e| format!("GMW: {e}")),
                ),
            ],
            _ => vec![("the protocol", run_protocol(c, input))],
        };
        for (protocol, run) in runs {
            match run {
                Err(e) => failures.push(format!("{} input set #{i}: {e}", case.label)),
                Ok((view_a, view_b)) => {
                    for (party, view) in [(Party::A, view_a), (Party::B, view_b)] {
                        let who = format!("{protocol} (party {})", party.letter());
                        let mut leaks = Vec::new();
                        let view = check_visibility(c, party, view, expected, &mut leaks);
                        failures.extend(
                            leaks
                                .into_iter()
                                .map(|l| format!("{} input set #{i}: {l}", case.label)),
                        );
                        if let Some(r) = mismatch_report(case, c, i, input, expected, &view, &who) {
                            failures.push(r);
                        }
                    }
                }
            }
        }
    }
    failures
}

/// Checks what `party` was shown against the outputs' visibility: an output meant for the
/// other party only must be withheld (reported as a leak otherwise) and then counts as
/// matching; every other output must be there and is compared as it is.
fn check_visibility(
    c: &Compiled,
    party: Party,
    view: PartyView,
    expected: &Values,
    leaks: &mut Vec<String>,
) -> PartyView {
    c.interface
        .outputs
        .iter()
        .zip(view)
        .zip(expected)
        .map(|((p, v), e)| {
            let hidden = matches!(
                (p.visibility, party),
                (Visibility::A, Party::B) | (Visibility::B, Party::A)
            );
            match v {
                None if hidden => Some(e.clone()),
                Some(_) if hidden => {
                    leaks.push(format!(
                        "party {} learned {}, which is meant for the other party only",
                        party.letter(),
                        p.name
                    ));
                    Some(e.clone())
                }
                other => other,
            }
        })
        .collect()
}

/// The whole check for one program: compile with pgc, build with gcc, run `n_inputs` seeded
/// random input sets through both, and `protocol_runs` of them through the protocol too.
/// Panics with every mismatch (and the program) if any.
pub fn check_case(case: &Case, n_inputs: usize, protocol_runs: usize, seed: u64) -> Compiled {
    let compiled = case.compile_or_panic();
    let mut rng = Rng::new(seed);
    let inputs: Vec<Values> = (0..n_inputs)
        .map(|_| random_inputs(&compiled.interface, &mut rng))
        .collect();
    check_inputs(case, &compiled, &inputs, protocol_runs);
    compiled
}

/// As [`check_case`] with given input sets and an already compiled program.
pub fn check_inputs(case: &Case, compiled: &Compiled, inputs: &[Values], protocol_runs: usize) {
    check_inputs_with(case, compiled, inputs, protocol_runs, &[]);
}

/// The gcc flags for float programs: -O0, so that `a + b` with two NaN operands keeps `a`'s
/// (at -O1 gcc also commutes operands written as leaves, and folds `x - 0.0` to `x`, which
/// leaves a signaling NaN unquieted).
pub const FLOAT_ORACLE_FLAGS: &[&str] = &["-O0"];

/// As [`check_inputs`], with extra gcc flags for the oracle (e.g. [`FLOAT_ORACLE_FLAGS`]).
pub fn check_inputs_with(
    case: &Case,
    compiled: &Compiled,
    inputs: &[Values],
    protocol_runs: usize,
    gcc_flags: &[&str],
) {
    let oracle = GccOracle::build_with_flags(&[(case, compiled)], gcc_flags)
        .unwrap_or_else(|e| panic!("{e}"));
    let calls: Vec<(usize, &Values)> = inputs.iter().map(|v| (0, v)).collect();
    let gcc_outputs = oracle.run(&calls).unwrap_or_else(|e| panic!("{e}"));
    let failures = compare(case, compiled, inputs, &gcc_outputs, protocol_runs);
    if !failures.is_empty() {
        panic!(
            "{} of {} checks failed for {}:\n\n{}\n\n--- program ({}, defines {:?}) ---\n{}",
            failures.len(),
            inputs.len(),
            case.label,
            failures
                .iter()
                .take(6)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n\n"),
            case.source.name(),
            case.defines,
            case.source.text()
        );
    }
}

/// gcc's outputs for given inputs, for checking hand-computed expectations of examples (so a
/// wrong expectation is caught even before the circuit is compared).
pub fn gcc_outputs(case: &Case, compiled: &Compiled, inputs: &[Values]) -> Vec<Values> {
    let oracle = GccOracle::build(&[(case, compiled)]).unwrap_or_else(|e| panic!("{e}"));
    let calls: Vec<(usize, &Values)> = inputs.iter().map(|v| (0, v)).collect();
    oracle
        .run(&calls)
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("{}: {e}", case.label)))
        .collect()
}

/// Looks an output port up by name and returns its value as signed numbers.
pub fn output_named(c: &Compiled, outputs: &Values, name: &str) -> Vec<i128> {
    let k = c
        .interface
        .outputs
        .iter()
        .position(|p| p.name == name)
        .unwrap_or_else(|| {
            panic!(
                "no output port {name}; the ports are {:?}",
                c.interface
                    .outputs
                    .iter()
                    .map(|p| &p.name)
                    .collect::<Vec<_>>()
            )
        });
    let t = &c.interface.outputs[k].ctype;
    leaves(t)
        .iter()
        .zip(&outputs[k])
        .map(|(l, &v)| super::values::as_i128(l, v))
        .collect()
}

/// Builds an input set from `(port name, signed numbers)`; every port must be given.
pub fn inputs_named(c: &Compiled, given: &[(&str, Vec<i64>)]) -> Values {
    c.interface
        .inputs
        .iter()
        .map(|p| {
            // The full name first: A's and B's inputs may share a short name.
            let nums = given
                .iter()
                .find(|(n, _)| *n == p.name)
                .or_else(|| given.iter().find(|(n, _)| *n == p.short_name()))
                .unwrap_or_else(|| panic!("no value given for input {}", p.name));
            super::values::from_i64(&p.ctype, &nums.1)
        })
        .collect()
}
