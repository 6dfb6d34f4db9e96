//! The native half of the `pgc` Python package: `pgc-engine` (what the `pgc` command runs)
//! behind a few functions that take and return plain Python values. The Python half
//! (`python/pgc/__init__.py`) gives them their documented, typed shape.
//!
//! Conventions:
//! - Values cross as JSON-like Python objects: ints, bools, floats, strings, lists, dicts
//!   (NumPy arrays and scalars through their `tolist()`, `bytes` as lists of bytes), checked against the program's C
//!   types by the same code as `pgc run --inputs FILE.json`.
//! - Work that can take long (compiling, running a protocol) runs with the GIL released, on
//!   a worker thread; the calling thread looks for Ctrl-C every 100 ms and, on one, ends the
//!   run's connections (`pgc_net::interrupt`) and raises `KeyboardInterrupt` once the worker
//!   has stopped.
//! - Errors carry the CLI's messages: `CompileError` (with `file`, `line`, `col`),
//!   `ProtocolError` (the peer, the network, a detected cheat), `ValueError` (inputs),
//!   `PgcError` for the rest (a malformed circuit file, a missing key, a bad option).

// The fuzzing build's replayable entropy (`pgc_crypto::prg::fuzzing`, `--cfg fuzzing`) makes
// every "random" choice predictable: it must never reach a program that protects real data.
#[cfg(fuzzing)]
compile_error!("pgc must not be built with --cfg fuzzing: its randomness is replayable there");

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use anyhow::Context;
use clap::ValueEnum;
use pgc_circuit::{GateSource, Interface, ParallelCircuit};
use pgc_engine::circuits::{
    self, CircuitArgs, CompactArg, Loaded, OptimizeArg, Program, VerilogFlowArg,
};
use pgc_engine::level::{LevelArg, LevelArgs};
use pgc_engine::options::{DeviceArg, GarblingArg, ParallelArg, ProtocolArgs};
use pgc_engine::protocol_arg::{ProtocolArg, ProtocolChoiceArgs};
use pgc_engine::security::SecurityArgs;
use pgc_engine::session::{
    InputValues, LocalOptions, PartyOptions, PartySession, eval_clear, gather_inputs, run_local,
};
use pgc_engine::typed_io::{self, Scope};
use pgc_protocol::Party;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};
use serde_json::Value;

pyo3::create_exception!(_native, PgcError, PyException, "An error from pgc.");
pyo3::create_exception!(
    _native,
    CompileError,
    PgcError,
    "A C program or Verilog design that does not compile (file, line, col say where)."
);
pyo3::create_exception!(
    _native,
    ProtocolError,
    PgcError,
    "A protocol run that failed: the peer, the network, or a detected cheat."
);

// ---------------------------------------------------------------------------------------
// Errors

/// The Python exception for an error from the engine (see the module doc).
fn to_py_err(py: Python<'_>, e: anyhow::Error) -> PyErr {
    let text = pgc_engine::error_text(&e);
    for cause in e.chain() {
        if let Some(ce) = cause.downcast_ref::<pgc_compiler::CompileError>() {
            let err = CompileError::new_err(text.clone());
            let value = err.value(py);
            let pos = ce.pos();
            let _ = value.setattr("file", pos.map(|p| p.file.to_string()));
            let _ = value.setattr("line", pos.map(|p| p.line));
            let _ = value.setattr("col", pos.map(|p| p.col));
            return err;
        }
        if let Some(ne) = cause.downcast_ref::<pgc_net::NetError>() {
            if matches!(ne, pgc_net::NetError::Interrupted) {
                return pyo3::exceptions::PyKeyboardInterrupt::new_err(text);
            }
            return ProtocolError::new_err(text);
        }
        if cause
            .downcast_ref::<pgc_protocol::ProtocolError>()
            .is_some()
        {
            return ProtocolError::new_err(text);
        }
    }
    PgcError::new_err(text)
}

/// Input errors are the caller's values: `ValueError`.
fn value_err(e: anyhow::Error) -> PyErr {
    PyValueError::new_err(pgc_engine::error_text(&e))
}

// ---------------------------------------------------------------------------------------
// Values between Python and JSON

/// A Python value as the JSON the engine reads inputs from.
fn to_json(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if obj.is_none() {
        return Err(PyValueError::new_err("None is not an input value"));
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(v) = obj.extract::<i64>() {
            return Ok(Value::from(v));
        }
        if let Ok(v) = obj.extract::<u64>() {
            return Ok(Value::from(v));
        }
        // Wider than 64 bits: as decimal text, which the C types' parser range-checks.
        return Ok(Value::String(obj.str()?.to_string()));
    }
    if obj.is_instance_of::<PyFloat>() {
        let v: f64 = obj.extract()?;
        return serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| {
                // The value itself is not shown: inputs are secret.
                PyValueError::new_err(
                    "an input value is a float that is not finite; give infinities and NaNs \
                     as strings (\"inf\", \"-inf\", \"nan\")",
                )
            });
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(Value::String(obj.extract()?));
    }
    // `bytes`/`bytearray` for arrays of 8-bit integers: one element per byte.
    if obj.is_instance_of::<PyBytes>() || obj.is_instance_of::<PyByteArray>() {
        let bytes: Vec<u8> = obj.extract()?;
        return Ok(Value::Array(bytes.into_iter().map(Value::from).collect()));
    }
    if obj.is_instance_of::<PyDict>() {
        let mut map = serde_json::Map::new();
        for (k, v) in obj.cast::<PyDict>()?.iter() {
            let key: String = k
                .extract()
                .map_err(|_| PyValueError::new_err("input names (dict keys) must be strings"))?;
            map.insert(key, to_json(&v)?);
        }
        return Ok(Value::Object(map));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let items: Vec<Value> = obj
            .try_iter()?
            .map(|item| to_json(&item?))
            .collect::<PyResult<_>>()?;
        return Ok(Value::Array(items));
    }
    // NumPy arrays and scalars (and anything else that can say itself as plain values).
    if obj.hasattr("tolist")? {
        return to_json(&obj.call_method0("tolist")?);
    }
    Err(PyValueError::new_err(format!(
        "cannot use a {} as an input value (give ints, bools, floats, lists, dicts, bytes or NumPy arrays)",
        obj.get_type().name()?
    )))
}

/// JSON (outputs, statistics, descriptions) as Python values.
fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, item) in map {
                dict.set_item(k, to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// Input values from Python: a dict by name (compiled programs) or a list of values in
/// circuit order (Bristol circuits, each as decimal text the way the CLI takes them).
fn input_values(obj: Option<&Bound<'_, PyAny>>) -> PyResult<InputValues> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(InputValues::default());
    };
    if obj.is_instance_of::<PyDict>() {
        return Ok(InputValues {
            json: Some(to_json(obj)?),
            ..InputValues::default()
        });
    }
    let Value::Array(items) = to_json(obj)? else {
        return Err(PyValueError::new_err(
            "inputs are a dict by name (compiled programs) or a list of values in circuit \
             order (Bristol circuits)",
        ));
    };
    let assignments = items
        .iter()
        .map(|v| match v {
            Value::Number(n) => Ok(n.to_string()),
            Value::String(s) => Ok(s.clone()),
            Value::Bool(b) => Ok(u8::from(*b).to_string()),
            other => Err(PyValueError::new_err(format!(
                "a Bristol circuit's input values are integers, not {} (not shown)",
                match other {
                    Value::Array(_) => "a list",
                    Value::Object(_) => "a dict",
                    _ => "this kind of value",
                }
            ))),
        })
        .collect::<PyResult<_>>()?;
    Ok(InputValues {
        assignments,
        ..InputValues::default()
    })
}

// ---------------------------------------------------------------------------------------
// Running work off the GIL, interruptibly

/// Runs `work` on a worker thread with the GIL released, looking for Ctrl-C every 100 ms
/// (see the module doc).
fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> anyhow::Result<T> + Send,
) -> PyResult<anyhow::Result<T>> {
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(move || {
            let result = std::panic::catch_unwind(AssertUnwindSafe(work));
            let _ = tx.send(result);
        });
        let mut rx = rx;
        let mut interrupt: Option<PyErr> = None;
        loop {
            let wait = if interrupt.is_some() {
                Duration::from_secs(3600)
            } else {
                Duration::from_millis(100)
            };
            let (got, back) = py.detach(move || (rx.recv_timeout(wait), rx));
            rx = back;
            match got {
                Ok(Ok(result)) => {
                    return match interrupt {
                        Some(e) => Err(e),
                        None => Ok(result),
                    };
                }
                Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(PgcError::new_err(
                        "internal error: pgc's worker thread panicked (a bug in pgc; please \
                         report it)",
                    ));
                }
                Err(RecvTimeoutError::Timeout) => {
                    if interrupt.is_none()
                        && let Err(e) = py.check_signals()
                    {
                        // End the run's connections; the worker then stops within moments.
                        pgc_net::interrupt::interrupt_all();
                        interrupt = Some(e);
                    }
                }
            }
        }
    })
}

// ---------------------------------------------------------------------------------------
// Circuits

/// A loaded circuit: how it was named (so runs open it the same way, through the compile
/// cache) and what was loaded (for its description, `eval` and `save`).
#[pyclass(module = "pgc._native")]
struct NativeCircuit {
    args: CircuitArgs,
    program: Program,
}

/// One of a flag's values, by the name the CLI gives it (`"semi-honest"`, `"cgp"`, ...).
fn choice<T: ValueEnum>(what: &str, s: &str) -> PyResult<T> {
    T::from_str(s, false).map_err(|_| {
        let names: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value())
            .map(|v| format!("{:?}", v.get_name()))
            .collect();
        PyValueError::new_err(format!("{what}={s:?}: use one of {}", names.join(", ")))
    })
}

#[pyfunction]
#[pyo3(signature = (spec, defines, include_dirs, optimize, entry, compact, verilog_flow, use_cache, format, bit_order, quiet))]
#[allow(clippy::too_many_arguments)]
fn open_circuit(
    py: Python<'_>,
    spec: String,
    defines: Vec<String>,
    include_dirs: Vec<PathBuf>,
    optimize: &str,
    entry: Option<String>,
    compact: &str,
    verilog_flow: Option<&str>,
    use_cache: bool,
    format: Option<&str>,
    bit_order: Option<&str>,
    quiet: bool,
) -> PyResult<NativeCircuit> {
    let mut args = CircuitArgs::new(spec);
    args.compile.defines = defines;
    args.compile.include_dirs = include_dirs;
    // The defaults stay unset, as on the command line: a Bristol file or `.pgc` refuses
    // compiler options.
    let optimize = choice::<OptimizeArg>("optimize", optimize)?;
    args.compile.optimize = (optimize != OptimizeArg::Size).then_some(optimize);
    args.compile.entry = entry;
    let compact = choice::<CompactArg>("compact", compact)?;
    args.compile.compact = (compact != CompactArg::Auto).then_some(compact);
    args.compile.verilog_flow = verilog_flow
        .map(|f| choice::<VerilogFlowArg>("verilog_flow", f))
        .transpose()?;
    args.no_cache = !use_cache;
    args.format = format
        .map(|f| f.parse())
        .transpose()
        .map_err(|_| PyValueError::new_err("format: use \"bristol-fashion\" or \"bristol\""))?;
    args.bit_order = bit_order
        .map(|b| b.parse())
        .transpose()
        .map_err(|_| PyValueError::new_err("bit_order: use \"lsb0\" or \"msb0\""))?;
    let loaded = {
        let args = args.clone();
        interruptible(py, move || circuits::load(&args, quiet))?
    };
    let program = loaded.map_err(|e| to_py_err(py, e))?;
    Ok(NativeCircuit { args, program })
}

#[pymethods]
impl NativeCircuit {
    /// What the circuit is: inputs, outputs, gate counts, regions, kind.
    fn describe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (inputs, outputs) = match self.program.interface.as_ref() {
            Some(iface) => typed_io::interface_json(iface),
            None => {
                let layout = self.program.circuit.layout();
                let inputs = layout
                    .input_widths
                    .iter()
                    .enumerate()
                    .map(|(i, w)| serde_json::json!({ "name": format!("input {i}"), "bits": w }))
                    .collect();
                let outputs = layout
                    .output_widths
                    .iter()
                    .enumerate()
                    .map(|(i, w)| serde_json::json!({ "name": format!("output {i}"), "bits": w }))
                    .collect();
                (Value::Array(inputs), Value::Array(outputs))
            }
        };
        let kind = match &self.program.circuit {
            Loaded::Memory(_) => "memory",
            Loaded::Generated(_) => "generated",
            Loaded::Compact(_) => "compact",
            Loaded::Unrolled(_) => "streamed",
        };
        let regions: Vec<Value> = self
            .program
            .parallel
            .as_ref()
            .map(|pc| pc.region_info())
            .unwrap_or_default()
            .iter()
            .map(|r| {
                serde_json::json!({
                    "line": r.line,
                    "instances": r.instances,
                    "and_gates_per_instance": r.and_gates_per_instance,
                    "and_gates": r.and_gates,
                })
            })
            .collect();
        let v = serde_json::json!({
            "spec": self.args.circuit,
            "typed": self.program.interface.is_some(),
            "inputs": inputs,
            "outputs": outputs,
            "and_gates": self.program.circuit.and_count(),
            "gates": self.program.circuit.gate_count(),
            "kind": kind,
            "regions": regions,
        });
        to_py(py, &v)
    }

    /// The AND depth (the longest chain of AND gates from an input to an output), for
    /// circuits held in memory; `None` for compact, streamed and generated ones.
    fn and_depth(&self) -> Option<u64> {
        match &self.program.circuit {
            Loaded::Memory(c) => Some(pgc_circuit::analysis::stats(c).and_depth as u64),
            _ => None,
        }
    }

    /// Evaluates in the clear (no protocol, no privacy): both parties' inputs, every output.
    fn eval<'py>(
        &self,
        py: Python<'py>,
        a: Option<Bound<'py, PyAny>>,
        b: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let a = input_values(a.as_ref())?;
        let b = input_values(b.as_ref())?;
        let typed = self.program.interface.is_some();
        if typed {
            check_inputs(
                self,
                &[(&a, Some(Party::A), "a"), (&b, Some(Party::B), "b")],
                None,
            )?;
        }
        let given = [
            (&a, Scope::Party(Party::A), "a"),
            (&b, Scope::Party(Party::B), "b"),
        ];
        let (program, args) = (&self.program, &self.args);
        let outputs = py
            .detach(|| eval_clear(program, args, &given))
            .map_err(|e| {
                if typed {
                    to_py_err(py, e)
                } else {
                    value_err(e)
                }
            })?;
        let outputs: Vec<Option<Vec<bool>>> = outputs.into_iter().map(Some).collect();
        outputs_to_py(py, &self.program, &outputs, self.args.bit_order())
    }

    /// Writes the circuit as a `.pgc` file (what `pgc compile` writes).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        save_pgc(&self.program, &path).map_err(|e| to_py_err(py, e))
    }

    /// Writes the circuit in Bristol Fashion.
    fn to_bristol(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let Loaded::Memory(c) = &self.program.circuit else {
            return Err(PgcError::new_err(
                "only a circuit held in memory can be written as Bristol Fashion; a compact \
                 circuit (functions as templates) would have to be expanded: compile with \
                 compact=\"never\"",
            ));
        };
        let result = (|| -> anyhow::Result<()> {
            let file = std::fs::File::create(&path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            let mut out = std::io::BufWriter::new(file);
            pgc_circuit::bristol::write_bristol_fashion(c, &mut out, false)
                .with_context(|| format!("writing {}", path.display()))?;
            std::io::Write::flush(&mut out)
                .with_context(|| format!("writing {}", path.display()))?;
            Ok(())
        })();
        result.map_err(|e| to_py_err(py, e))
    }
}

fn save_pgc(program: &Program, path: &Path) -> anyhow::Result<()> {
    let empty = Interface::default();
    let iface = program.interface.as_ref().unwrap_or(&empty);
    if let Some(pc) = &program.parallel {
        pgc_circuit::pgcfile::write_pgc_parallel_file(path, pc, iface)?;
        return Ok(());
    }
    match &program.circuit {
        Loaded::Memory(c) => {
            let pc = ParallelCircuit::sequential(c)
                .context("this circuit is not in single-assignment form")?;
            pgc_circuit::pgcfile::write_pgc_parallel_file(path, &pc, iface)?;
        }
        Loaded::Compact(cf) => {
            std::fs::copy(cf.path(), path)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        Loaded::Unrolled(uf) => {
            std::fs::copy(uf.path(), path)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        Loaded::Generated(_) => {
            anyhow::bail!(
                "a generated circuit (builtin:random) is made while it runs; it has no file"
            )
        }
    }
    Ok(())
}

/// Outputs as Python values: a dict by name for compiled programs (outputs this party may
/// not see left out), a list of ints for Bristol circuits.
fn outputs_to_py<'py>(
    py: Python<'py>,
    program: &Program,
    outputs: &[Option<Vec<bool>>],
    order: pgc_circuit::BitOrder,
) -> PyResult<Bound<'py, PyAny>> {
    match program.interface.as_ref() {
        Some(iface) => to_py(py, &typed_io::outputs_json(iface, outputs)),
        None => {
            let visible: Vec<Vec<bool>> = outputs.iter().flatten().cloned().collect();
            let hex = pgc_engine::report::outputs_hex(&visible, order);
            to_py(py, &serde_json::json!(hex))
        }
    }
}

// ---------------------------------------------------------------------------------------
// Runs

/// Why `device="gpu"` cannot run in a package built without the GPU engine (the engine's
/// own message names the CLI's build).
const GPU_NOT_BUILT: &str = "this pgc package was built without GPU support; build it with \
     `MATURIN_PEP517_ARGS=\"--features gpu\" pip install ./python` (no CUDA is needed to build; \
     at run time an NVIDIA driver and NVRTC)";

/// How a run uses this machine and the link, as Python gives them: `device`, `garbling`,
/// `rate_limit` and `latency` (the CLI's `--device`, `--garbling`, `--rate-limit`,
/// `--latency`).
#[derive(FromPyObject)]
struct Engine {
    device: String,
    garbling: String,
    rate_limit: Option<f64>,
    latency: Option<f64>,
}

/// The options of a run, as Python gives them.
#[allow(clippy::too_many_arguments)]
fn protocol_options(
    parallel: &str,
    threads: Option<usize>,
    timeout: f64,
    quiet: bool,
    protocol: &str,
    security: &str,
    stat_sec: Option<u32>,
    inputs_of_a: Option<Vec<usize>>,
    engine: Engine,
) -> PyResult<(ProtocolArgs, LevelArgs, ProtocolChoiceArgs)> {
    let parallel = choice::<ParallelArg>("parallel", parallel)?;
    let level = choice::<LevelArg>("security", security)?;
    let protocol = choice::<ProtocolArg>("protocol", protocol)?;
    let device = choice::<DeviceArg>("device", &engine.device)?;
    let garbling = choice::<GarblingArg>("garbling", &engine.garbling)?;
    if device == DeviceArg::Gpu && !cfg!(feature = "gpu") {
        // The engine's own message names the CLI's build; this is the package's.
        return Err(PgcError::new_err(format!(
            "device=\"gpu\": {GPU_NOT_BUILT}"
        )));
    }
    let p = ProtocolArgs {
        inputs_of_a,
        timeout,
        quiet,
        parallel,
        threads,
        device,
        garbling,
        rate_limit: engine.rate_limit,
        latency: engine.latency,
        ..ProtocolArgs::default()
    };
    // The engine's own rule for the shaping values, with Python's names in the message.
    p.link_shape().map_err(|e| {
        PyValueError::new_err(
            e.to_string()
                .replace("--rate-limit", "rate_limit")
                .replace("--latency", "latency"),
        )
    })?;
    Ok((
        p,
        LevelArgs { level, stat_sec },
        ProtocolChoiceArgs { protocol },
    ))
}

/// Checks the values Python gave against the program's inputs before anything runs, so
/// that a bad value is a `ValueError` (the run would stop with the same message). `scope`
/// `None`: every input (cleartext evaluation).
fn check_inputs(
    circuit: &NativeCircuit,
    given: &[(&InputValues, Option<Party>, &'static str)],
    inputs_of_a: Option<&[usize]>,
) -> PyResult<()> {
    for &(values, party, flag) in given {
        gather_inputs(
            &circuit.program,
            &circuit.args,
            values,
            party,
            flag,
            inputs_of_a,
        )
        .map_err(value_err)?;
    }
    Ok(())
}

#[pyfunction]
#[pyo3(signature = (circuit, a, b, parallel, threads, timeout, quiet, protocol, security, stat_sec, insecure_plaintext, inputs_of_a, engine))]
#[allow(clippy::too_many_arguments)]
fn local<'py>(
    py: Python<'py>,
    circuit: &NativeCircuit,
    a: Option<Bound<'py, PyAny>>,
    b: Option<Bound<'py, PyAny>>,
    parallel: &str,
    threads: Option<usize>,
    timeout: f64,
    quiet: bool,
    protocol: &str,
    security: &str,
    stat_sec: Option<u32>,
    insecure_plaintext: bool,
    inputs_of_a: Option<Vec<usize>>,
    engine: Engine,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let a = input_values(a.as_ref())?;
    let b = input_values(b.as_ref())?;
    check_inputs(
        circuit,
        &[(&a, Some(Party::A), "a"), (&b, Some(Party::B), "b")],
        inputs_of_a.as_deref(),
    )?;
    let (p, level, protocol) = protocol_options(
        parallel,
        threads,
        timeout,
        quiet,
        protocol,
        security,
        stat_sec,
        inputs_of_a,
        engine,
    )?;
    let (args, program) = (&circuit.args, &circuit.program);
    let result = interruptible(py, move || {
        let both = InputValues::default();
        run_local(&LocalOptions {
            circuit: args,
            loaded: Some(program),
            a: &a,
            b: &b,
            both: &both,
            flags: ("a", "b"),
            insecure_plaintext,
            level: &level,
            protocol: &protocol,
            p: &p,
        })
    })?
    .map_err(|e| to_py_err(py, e))?;
    let outputs = outputs_to_py(py, &circuit.program, &result.outputs, result.bit_order)?;
    let stats = serde_json::json!({
        "a": pgc_engine::report::stats_json(&result.a),
        "b": pgc_engine::report::stats_json(&result.b),
        "protocol": result.protocol.to_string(),
        "security": result.level.name(),
    });
    Ok((outputs, to_py(py, &stats)?))
}

#[pyfunction]
#[pyo3(signature = (circuit, party, listen, connect, inputs, peer_key, key, psk, insecure_plaintext, parallel, threads, timeout, quiet, protocol, security, stat_sec, inputs_of_a, engine))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    circuit: &NativeCircuit,
    party: &str,
    listen: Option<String>,
    connect: Option<String>,
    inputs: Option<Bound<'py, PyAny>>,
    peer_key: Option<String>,
    key: Option<PathBuf>,
    psk: Option<PathBuf>,
    insecure_plaintext: bool,
    parallel: &str,
    threads: Option<usize>,
    timeout: f64,
    quiet: bool,
    protocol: &str,
    security: &str,
    stat_sec: Option<u32>,
    inputs_of_a: Option<Vec<usize>>,
    engine: Engine,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let me = match party {
        "a" | "A" => Party::A,
        "b" | "B" => Party::B,
        other => {
            return Err(PyValueError::new_err(format!(
                "party={other:?}: use \"a\" (garbles) or \"b\" (evaluates)"
            )));
        }
    };
    if listen.is_some() == connect.is_some() {
        return Err(PyValueError::new_err(
            "give exactly one of listen=\"HOST:PORT\" (wait for the peer) and \
             connect=\"HOST:PORT\" (to the peer)",
        ));
    }
    let values = input_values(inputs.as_ref())?;
    check_inputs(
        circuit,
        &[(&values, Some(me), "inputs")],
        inputs_of_a.as_deref(),
    )?;
    let (p, level, protocol) = protocol_options(
        parallel,
        threads,
        timeout,
        quiet,
        protocol,
        security,
        stat_sec,
        inputs_of_a,
        engine,
    )?;
    let security = SecurityArgs {
        peer_key,
        key,
        psk,
        insecure_plaintext,
    };
    let (args, program) = (&circuit.args, &circuit.program);
    let result = interruptible(py, move || {
        let session = PartySession::prepare(&PartyOptions {
            circuit: args,
            loaded: Some(program),
            party: me,
            inputs: &values,
            input_flag: "inputs",
            security: &security,
            level: &level,
            protocol: &protocol,
            p: &p,
        })?;
        session.describe_on_stderr();
        let outcome = session.listen_or_connect(listen.as_deref(), connect.as_deref())?;
        Ok((outcome, session.bit_order))
    })?
    .map_err(|e| to_py_err(py, e))?;
    let (outcome, order) = result;
    let outputs = outputs_to_py(py, &circuit.program, &outcome.outputs, order)?;
    let stats = pgc_engine::report::stats_json(&outcome.stats);
    Ok((outputs, to_py(py, &stats)?))
}

/// Whether `device="gpu"` can run here: `(True, the GPU)` or `(False, why not)`.
#[pyfunction]
fn gpu_probe() -> (bool, String) {
    if !cfg!(feature = "gpu") {
        return (false, GPU_NOT_BUILT.to_string());
    }
    match pgc_engine::gpu_probe() {
        Ok(gpu) => (true, gpu),
        Err(e) => (false, e.to_string()),
    }
}

/// Writes a fresh random shared secret for `run(..., psk=...)` (`pgc keygen --secret`).
#[pyfunction]
fn new_secret(py: Python<'_>, path: PathBuf, overwrite: bool) -> PyResult<()> {
    let written = pgc_net::Secret::generate().and_then(|s| s.save(&path, overwrite));
    written.map_err(|e| to_py_err(py, e.into()))
}

/// The `pgc` executable's version of the engine.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open_circuit, m)?)?;
    m.add_function(wrap_pyfunction!(local, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(new_secret, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_probe, m)?)?;
    m.add_class::<NativeCircuit>()?;
    m.add("PgcError", m.py().get_type::<PgcError>())?;
    m.add("CompileError", m.py().get_type::<CompileError>())?;
    m.add("ProtocolError", m.py().get_type::<ProtocolError>())?;
    Ok(())
}
