//! `pgc bench width | apps | ipp`: the experiments of the seed paper's evaluation (Buescher
//! et al., USENIX Security 2015, §6.3–6.5) on pgc's own engine and compiler:
//!
//! - `width` (Fig. 5): FGP efficiency on AND-only random circuits of growing level width, and
//!   the threshold τ (ANDs per thread worth a split) derived from it;
//! - `apps` (Tables 2–3, Figs. 6–8): the seed applications BioMatch, MExp and MVMul compiled
//!   from the embedded examples, offline garbling speed-up with FGP and CGP, AND-level
//!   widths, the single-core protocol and its CGP speed-up;
//! - `ipp` (Tables 4–5): inter-party parallelism against the sequential protocol, and over a
//!   shaped (WAN-like) link against CGP.
//!
//! Every figure comes with its check: offline garblings are evaluated and decoded, protocol
//! runs must give both parties the cleartext outputs. Tables are printed (or, with `--json`,
//! one JSON object); with `--out DIR` the JSON and SVG charts are also written there.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use pgc_circuit::generate::SplitMix64;
use pgc_circuit::{Circuit, Gate, Layout, Op, ParallelCircuit, eval_bits};
use pgc_compiler::Compiled;
use pgc_crypto::{Block, Prg};
use pgc_garble::parallel::{self as engine, Mode, Plan, PlanStats, SliceSource, garble_offline};
use pgc_garble::random_delta;
use pgc_net::LinkShape;
use pgc_protocol::parallel::MAX_THREADS;
use pgc_protocol::{ParallelConfig, ParallelMode, Party, run_local_parallel, sees, split_inputs};
use serde_json::{Value, json};

use crate::plot::{Distribution, DistributionChart, LineChart, Series, quantile};
use pgc_engine::report;
use pgc_engine::typed_io;

/// A speed-up at least this large with 2 threads counts as worth splitting for (τ).
const TAU_MIN_SPEEDUP: f64 = 1.2;

#[derive(Args)]
pub struct WidthArgs {
    /// Thread counts to garble with (1 is always measured: it is the baseline).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
    threads: Vec<usize>,
    /// Levels of every generated circuit.
    #[arg(long, default_value_t = 1000)]
    depth: u32,
    /// Level widths (ANDs per level) to try.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "16,32,64,128,256,512,1024"
    )]
    widths: Vec<u32>,
    /// Timed garblings per width and thread count (the median counts).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Do not save the derived τ for later runs.
    #[arg(long)]
    no_save: bool,
    /// Also write width.json and fig5_width_efficiency.svg into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Args, Clone)]
pub struct AppSelection {
    /// Applications to run: biomatch, mexp, mvmul.
    #[arg(long, value_delimiter = ',', default_value = "biomatch,mexp,mvmul")]
    apps: Vec<String>,
    /// Small sizes (BioMatch n=16, MExp k=2, MVMul 4×4), so that everything runs in seconds.
    #[arg(long)]
    small: bool,
    /// Preprocessor definitions for every application, e.g. -D BIOMATCH_N=64 (after
    /// --small's, so they win).
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE")]
    defines: Vec<String>,
    /// FGP/CGP threshold τ (ANDs per thread); default: what `pgc bench width` measured
    /// here, else the built-in default.
    #[arg(long)]
    tau: Option<usize>,
}

#[derive(Args)]
pub struct AppsArgs {
    #[command(flatten)]
    sel: AppSelection,
    /// Thread counts for the speed-up figures.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
    threads: Vec<usize>,
    /// Timed runs per measurement (the median counts).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Only the offline parts (Table 2, Figs. 6 and 7): no protocol runs.
    #[arg(long)]
    offline_only: bool,
    /// Also write apps.json and the SVG charts (fig6, fig7, fig8) into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Args)]
pub struct IppArgs {
    #[command(flatten)]
    sel: AppSelection,
    /// Threads per party for Table 4 (under ipp: this many garbling and this many
    /// evaluating threads per party).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    threads: Vec<usize>,
    /// Timed runs per measurement (the median counts).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Table 5: shape each direction of the link to this many Mbit/s (e.g. 100).
    #[arg(long, value_name = "MBIT")]
    rate_limit: Option<f64>,
    /// Table 5: one-way latency of the shaped link in milliseconds (e.g. 50).
    #[arg(long, value_name = "MS")]
    latency: Option<f64>,
    /// Also write ipp.json and fig_ipp.svg into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

// ---------------------------------------------------------------------------------------
// Shared helpers

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Sorted, deduplicated thread counts, with 1 added when `with_one` (the baseline).
fn thread_list(list: &[usize], with_one: bool) -> Result<Vec<usize>> {
    if let Some(&bad) = list.iter().find(|&&t| t == 0 || t > MAX_THREADS) {
        bail!("--threads: {bad} is not a thread count between 1 and {MAX_THREADS}");
    }
    let mut v = list.to_vec();
    if with_one || v.is_empty() {
        v.push(1);
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

fn check_repeat(repeat: usize) -> Result<()> {
    if repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    Ok(())
}

/// "4*" for thread counts above the machine's CPUs.
fn thread_label(t: usize) -> String {
    if t > cores() {
        format!("{t}*")
    } else {
        t.to_string()
    }
}

fn oversubscription_note(threads: &[usize]) -> Option<String> {
    let n = cores();
    let over: Vec<String> = threads
        .iter()
        .filter(|&&t| t > n)
        .map(|t| t.to_string())
        .collect();
    (!over.is_empty()).then(|| {
        format!(
            "* {} thread(s) exceed this machine's {n} CPU(s): they run, but cannot speed \
             anything up",
            over.join(", ")
        )
    })
}

/// The middle element by `key` (the lower middle for even counts): a real measurement.
fn median_by<T>(mut runs: Vec<T>, key: impl Fn(&T) -> f64) -> T {
    runs.sort_by(|a, b| key(a).total_cmp(&key(b)));
    let mid = (runs.len() - 1) / 2;
    runs.swap_remove(mid)
}

/// Progress lines on stderr, only for a person watching.
fn progress(msg: &str) {
    if std::io::stderr().is_terminal() {
        eprintln!("  .. {msg}");
    }
}

/// A text table: first column left-aligned, the others right-aligned.
struct Table {
    title: String,
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
}

impl Table {
    fn new(title: impl Into<String>, headers: &[&str]) -> Table {
        Table {
            title: title.into(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn render(&self) -> String {
        let cols = self.headers.len();
        let mut width = vec![0; cols];
        for row in std::iter::once(&self.headers).chain(&self.rows) {
            for (k, cell) in row.iter().enumerate().take(cols) {
                width[k] = width[k].max(cell.chars().count());
            }
        }
        let line = |row: &[String]| -> String {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .take(cols)
                .map(|(k, c)| {
                    if k == 0 {
                        format!("{c:<w$}", w = width[k])
                    } else {
                        format!("{c:>w$}", w = width[k])
                    }
                })
                .collect();
            format!("  {}", cells.join("  ").trim_end())
        };
        let mut out = format!("{}\n{}\n", self.title, line(&self.headers));
        let rule: usize = width.iter().sum::<usize>() + 2 * cols.saturating_sub(1);
        out.push_str(&format!("  {}\n", "-".repeat(rule)));
        for row in &self.rows {
            out.push_str(&line(row));
            out.push('\n');
        }
        for note in &self.notes {
            out.push_str(&format!("  {note}\n"));
        }
        out
    }
}

fn secs(s: f64) -> String {
    if s >= 10.0 {
        format!("{s:.1}")
    } else if s >= 0.1 {
        format!("{s:.2}")
    } else {
        format!("{s:.3}")
    }
}

fn millions(n: f64) -> String {
    if n >= 1e6 {
        format!("{:.2}M", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.1}K", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

/// Writes the JSON and the charts under `dir` (created if needed); returns the paths.
fn write_outputs(
    dir: &Path,
    name: &str,
    doc: &Value,
    charts: &[(String, String)],
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    let path = dir.join(format!("{name}.json"));
    let text = serde_json::to_string_pretty(doc)?;
    std::fs::write(&path, text + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    written.push(path);
    for (file, svg) in charts {
        let path = dir.join(file);
        std::fs::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// Prints the tables (or the JSON), and writes the files when `out` is given.
fn finish(
    json: bool,
    out: Option<&Path>,
    name: &str,
    mut doc: Value,
    tables: &[Table],
    charts: &[(String, String)],
) -> Result<()> {
    let written = match out {
        Some(dir) => {
            let files: Vec<String> = charts
                .iter()
                .map(|(f, _)| dir.join(f).display().to_string())
                .chain([dir.join(format!("{name}.json")).display().to_string()])
                .collect();
            doc["files"] = json!(files);
            write_outputs(dir, name, &doc, charts)?
        }
        None => Vec::new(),
    };
    if json {
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    for t in tables {
        outln!("{}", t.render());
    }
    for path in written {
        outln!("wrote {}", path.display());
    }
    Ok(())
}

/// Garbles `circuit` as `plan` says into memory, evaluates the tables with the same plan on
/// `inputs`, and checks the decoded outputs against `expected` (cleartext evaluation).
fn check_offline(
    plan: &Plan,
    pc: &ParallelCircuit,
    inputs: &[bool],
    expected: &[bool],
) -> Result<()> {
    let mut prg = Prg::from_os_entropy();
    let delta = random_delta(&mut prg);
    let hash_key = prg.random_block();
    let mut zero = vec![Block::ZERO; inputs.len()];
    prg.fill_blocks(&mut zero);
    let mut streams: Vec<Vec<Block>> = vec![Vec::new(); plan.threads()];
    let garbled = match engine::garble(plan, pc, delta, hash_key, &zero, &mut streams) {
        Ok(out) => out,
        Err(never) => match never {},
    };
    let labels: Vec<Block> = zero
        .iter()
        .zip(inputs)
        .map(|(&z, &bit)| z ^ delta.select(bit))
        .collect();
    let mut sources: Vec<SliceSource<'_>> = streams.iter().map(|s| SliceSource::new(s)).collect();
    let outputs = engine::evaluate(plan, pc, hash_key, &labels, &mut sources)
        .map_err(|e| anyhow!("evaluating the garbled circuit failed: {e}"))?;
    let decoded: Vec<bool> = outputs
        .iter()
        .zip(&garbled.output_zero_labels)
        .map(|(l, z)| l.lsb() ^ z.lsb())
        .collect();
    if sources.iter().any(|s| s.remaining() != 0) || decoded != expected {
        bail!(
            "{:?} garbling with {} threads gave wrong outputs; this is a bug in pgc",
            plan.mode(),
            plan.threads()
        );
    }
    Ok(())
}

struct Offline {
    seconds: f64,
    and_per_sec: f64,
    plan: PlanStats,
}

/// Plans (region instances claimed as the threads go, as the protocol runs them), checks
/// once, then times `repeat` garblings (median).
fn offline(
    pc: &ParallelCircuit,
    mode: Mode,
    threads: usize,
    tau: usize,
    repeat: usize,
    inputs: &[bool],
    expected: &[bool],
) -> Result<Offline> {
    let plan = Plan::claimed(pc, threads, mode, tau);
    check_offline(&plan, pc, inputs, expected)?;
    // One untimed run first: the first garbling of a plan pays for page faults.
    std::hint::black_box(garble_offline(&plan, pc));
    let runs: Vec<_> = (0..repeat).map(|_| garble_offline(&plan, pc)).collect();
    let best = median_by(runs, |r| r.seconds);
    Ok(Offline {
        seconds: best.seconds,
        and_per_sec: best.and_per_sec,
        plan: plan.stats().clone(),
    })
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::None => "none",
        Mode::Fgp => "fgp",
        Mode::Cgp => "cgp",
        Mode::Auto => "auto",
    }
}

fn random_bits(prg: &mut Prg, n: usize) -> Vec<bool> {
    (0..n).map(|_| prg.random_bool()).collect()
}

// ---------------------------------------------------------------------------------------
// pgc bench width (Fig. 5)

/// An AND-only circuit of `depth` levels of `width` ANDs each: level 0 reads the two
/// `width`-bit inputs, level l reads two random distinct wires of level l − 1. Outputs: the
/// last level. Single-assignment wire ids, so it is a valid sequential [`ParallelCircuit`].
pub fn and_only_layered(width: u32, depth: u32, seed: u64) -> Result<Circuit> {
    if width == 0 || depth == 0 {
        bail!("width and depth must be positive");
    }
    let wires = (width as u64) * (2 + depth as u64);
    let num_wires =
        u32::try_from(wires).map_err(|_| anyhow!("{width} × {depth} levels is too many wires"))?;
    let mut rng = SplitMix64::new(seed);
    let mut gates = Vec::with_capacity(width as usize * depth as usize);
    let (mut src, mut src_len) = (0u32, 2 * width);
    for level in 0..depth {
        let dst = (2 + level) * width;
        for j in 0..width {
            let a = rng.below(src_len);
            let b = (a + 1 + rng.below(src_len - 1)) % src_len;
            gates.push(Gate::and(src + a, src + b, dst + j));
        }
        (src, src_len) = (dst, width);
    }
    let last = (1 + depth) * width;
    let layout = Layout {
        num_wires,
        input_widths: vec![width, width],
        output_widths: vec![width],
        output_wires: (last..last + width).collect(),
    };
    Ok(Circuit { layout, gates })
}

pub fn width(args: WidthArgs, json: bool) -> Result<()> {
    let threads = thread_list(&args.threads, true)?;
    check_repeat(args.repeat)?;
    if args.depth == 0 {
        bail!("--depth must be positive");
    }
    let mut widths = args.widths.clone();
    widths.sort_unstable();
    widths.dedup();
    if widths.is_empty() || widths[0] == 0 {
        bail!("--widths must be positive level widths");
    }
    let mut prg = Prg::from_os_entropy();
    // (width, threads) -> seconds, in row-major order.
    let mut measured: Vec<Vec<Offline>> = Vec::new();
    for &w in &widths {
        let circuit = and_only_layered(w, args.depth, 0x5eed_0000 + w as u64)?;
        let pc = ParallelCircuit::sequential(&circuit)?;
        let inputs = random_bits(&mut prg, 2 * w as usize);
        let expected = eval_bits(&pc, &inputs);
        let mut row = Vec::new();
        for &t in &threads {
            progress(&format!("width {w}, {t} thread(s)"));
            // τ = 1: every level is split however thin, to measure what a split costs.
            row.push(offline(
                &pc,
                Mode::Fgp,
                t,
                1,
                args.repeat,
                &inputs,
                &expected,
            )?);
        }
        measured.push(row);
    }
    let base = |k: usize| measured[k][0].seconds;
    let speedup = |k: usize, i: usize| base(k) / measured[k][i].seconds.max(1e-12);

    // τ: the smallest ANDs per thread from which on (every wider level too) 2 threads reach
    // the target speed-up.
    let two = threads.iter().position(|&t| t == 2);
    let tau = two.and_then(|i| {
        let ok: Vec<bool> = (0..widths.len())
            .map(|k| speedup(k, i) >= TAU_MIN_SPEEDUP)
            .collect();
        let first = (0..widths.len()).find(|&k| ok[k..].iter().all(|&x| x))?;
        Some((widths[first] as usize / 2).max(1))
    });
    let saved = match (tau, args.no_save) {
        (Some(t), false) => Some(save_tau(t)?),
        _ => None,
    };

    let mut table = Table::new(
        format!(
            "FGP offline garbling of AND-only random circuits, depth {} (paper Fig. 5): \
             efficiency = speed-up / threads",
            args.depth
        ),
        &[],
    );
    table.headers = vec!["width".into(), "1 thread".into()];
    table.headers.extend(
        threads[1..]
            .iter()
            .map(|&t| format!("{} thr", thread_label(t))),
    );
    let mut rows_json = Vec::new();
    for (k, &w) in widths.iter().enumerate() {
        let mut row = vec![
            w.to_string(),
            report::per_sec(measured[k][0].and_per_sec, "AND/s"),
        ];
        for (i, &t) in threads.iter().enumerate() {
            let s = speedup(k, i);
            if i > 0 {
                row.push(format!("{:.2}", s / t as f64));
            }
            rows_json.push(json!({
                "width": w, "threads": t, "ands": w as u64 * args.depth as u64,
                "seconds": measured[k][i].seconds, "and_per_sec": measured[k][i].and_per_sec,
                "speedup": s, "efficiency": s / t as f64, "oversubscribed": t > cores(),
                "parallel_steps": measured[k][i].plan.parallel_steps,
            }));
        }
        table.rows.push(row);
    }
    table.notes.extend(oversubscription_note(&threads));
    let tau_text = match (tau, two) {
        (_, None) => "τ not derived: --threads must include 2".to_string(),
        (None, Some(_)) => format!(
            "τ: none — no width reached a {TAU_MIN_SPEEDUP}× speed-up with 2 threads here \
             (runs keep using {})",
            current_tau_text()
        ),
        (Some(t), Some(_)) => format!(
            "τ = {t} ANDs per thread (from this width on, 2 threads reach ≥ {TAU_MIN_SPEEDUP}×){}",
            match &saved {
                Some(p) => format!("; saved to {} for later runs", p.display()),
                None => "; not saved (--no-save)".to_string(),
            }
        ),
    };
    table.notes.push(tau_text);

    let mut series = vec![Series::reference(
        "ideal",
        widths.iter().map(|&w| (w as f64, 1.0)).collect(),
    )];
    for (i, &t) in threads.iter().enumerate().skip(1) {
        let name = if t > cores() {
            format!("{t} threads (> {} CPUs)", cores())
        } else {
            format!("{t} threads")
        };
        series.push(Series::new(
            name,
            (0..widths.len())
                .map(|k| (widths[k] as f64, speedup(k, i) / t as f64))
                .collect(),
        ));
    }
    let chart = LineChart {
        title: "FGP efficiency by level width (paper Fig. 5)".into(),
        subtitle: format!(
            "AND-only random circuits of depth {}, offline garbling; {} CPU(s) on this machine",
            args.depth,
            cores()
        ),
        x_label: "level width (ANDs per level)".into(),
        y_label: "efficiency (speed-up / threads)".into(),
        log2_x: true,
        y_from_zero: true,
        y_at_least: 1.0,
        x_ticks: Vec::new(),
        series,
    };
    let doc = json!({
        "experiment": "width", "depth": args.depth, "cores": cores(), "repeat": args.repeat,
        "widths": widths, "threads": threads, "measurements": rows_json,
        "tau": { "value": tau, "min_speedup_2_threads": TAU_MIN_SPEEDUP,
                 "saved_to": saved.map(|p| p.display().to_string()) },
    });
    finish(
        json,
        args.out.as_deref(),
        "width",
        doc,
        &[table],
        &[("fig5_width_efficiency.svg".into(), chart.to_svg())],
    )
}

fn save_tau(tau: usize) -> Result<PathBuf> {
    let path = pgc_engine::options::tau_file()
        .ok_or_else(|| anyhow!("cannot save τ: neither XDG_CACHE_HOME nor HOME is set"))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&path, format!("{tau}\n"))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

fn current_tau_text() -> String {
    match pgc_engine::options::measured_tau() {
        Some(t) => format!("τ = {t} saved earlier"),
        None => format!("the default τ = {}", engine::DEFAULT_TAU),
    }
}

fn effective_tau(given: Option<usize>) -> Result<usize> {
    match given {
        Some(0) => bail!("--tau must be positive"),
        Some(t) => Ok(t),
        None => Ok(pgc_engine::options::measured_tau().unwrap_or(engine::DEFAULT_TAU)),
    }
}

// ---------------------------------------------------------------------------------------
// The seed applications

struct App {
    key: &'static str,
    name: &'static str,
    file: &'static str,
    source: &'static str,
    /// Defines for `--small`.
    small: &'static [&'static str],
}

const APPS: [App; 3] = [
    App {
        key: "biomatch",
        name: "BioMatch",
        file: "biomatch.c",
        source: include_str!("../../../examples/biomatch.c"),
        small: &["BIOMATCH_N=16"],
    },
    App {
        key: "mexp",
        name: "MExp",
        file: "mexp.c",
        source: include_str!("../../../examples/mexp.c"),
        small: &["MEXP_K=2"],
    },
    App {
        key: "mvmul",
        name: "MVMul",
        file: "mvmul.c",
        source: include_str!("../../../examples/mvmul.c"),
        small: &["MVMUL_M=4", "MVMUL_K=4"],
    },
];

fn select_apps(names: &[String]) -> Result<Vec<&'static App>> {
    let mut out: Vec<&'static App> = Vec::new();
    for n in names {
        let key = n.trim().to_ascii_lowercase();
        let app = APPS.iter().find(|a| a.key == key).ok_or_else(|| {
            anyhow!("--apps: unknown application {n:?} (known: biomatch, mexp, mvmul)")
        })?;
        if !out.iter().any(|a| a.key == app.key) {
            out.push(app);
        }
    }
    if out.is_empty() {
        bail!("--apps: no application given");
    }
    Ok(out)
}

/// Lines of program text: not blank, not only a comment, not a preprocessor directive.
fn lines_of_code(source: &str) -> usize {
    let mut in_comment = false;
    let mut count = 0;
    for line in source.lines() {
        let mut code = String::new();
        let mut rest = line;
        loop {
            if in_comment {
                match rest.find("*/") {
                    Some(end) => {
                        in_comment = false;
                        rest = &rest[end + 2..];
                    }
                    None => break,
                }
            } else {
                let block = rest.find("/*");
                let line_c = rest.find("//");
                match (block, line_c) {
                    (Some(b), l) if l.is_none_or(|l| b < l) => {
                        code.push_str(&rest[..b]);
                        in_comment = true;
                        rest = &rest[b + 2..];
                    }
                    (_, Some(l)) => {
                        code.push_str(&rest[..l]);
                        break;
                    }
                    _ => {
                        code.push_str(rest);
                        break;
                    }
                }
            }
        }
        let code = code.trim();
        if !code.is_empty() && !code.starts_with('#') {
            count += 1;
        }
    }
    count
}

/// A compiled application with fixed random inputs and their cleartext outputs.
struct Prepared {
    app: &'static App,
    defines: Vec<String>,
    compiled: Compiled,
    pc: ParallelCircuit,
    compile_seconds: f64,
    /// Input values in circuit order.
    inputs: Vec<Vec<bool>>,
    /// Cleartext outputs, all values concatenated.
    expected: Vec<bool>,
}

impl Prepared {
    fn all_inputs(&self) -> Vec<bool> {
        self.inputs.concat()
    }
}

fn prepare(app: &'static App, sel: &AppSelection, prg: &mut Prg) -> Result<Prepared> {
    let mut defines: Vec<String> = Vec::new();
    if sel.small {
        defines.extend(app.small.iter().map(|d| d.to_string()));
    }
    defines.extend(sel.defines.iter().cloned());
    progress(&format!("compiling {} {}", app.name, defines.join(" ")));
    let opts = pgc_compiler::Options {
        defines: defines.clone(),
        ..Default::default()
    };
    let start = Instant::now();
    let compiled = pgc_compiler::compile_source(app.source, app.file, &opts)
        .map_err(|e| anyhow!("compiling the embedded {}: {e}", app.file))?;
    let compile_seconds = start.elapsed().as_secs_f64();
    let pc = compiled
        .parallel_circuit()
        .with_context(|| format!("{}: building the parallel circuit", app.name))?;
    let inputs: Vec<Vec<bool>> = pc
        .layout
        .input_widths
        .iter()
        .map(|&w| random_bits(prg, w as usize))
        .collect();
    let expected = eval_bits(&pc, &inputs.concat());
    if eval_bits(&compiled.circuit, &inputs.concat()) != expected {
        bail!(
            "{}: the parallel circuit and the flat circuit disagree; this is a bug in pgc",
            app.name
        );
    }
    Ok(Prepared {
        app,
        defines,
        compiled,
        pc,
        compile_seconds,
        inputs,
        expected,
    })
}

struct Online {
    seconds: f64,
    input_seconds: f64,
    circuit_seconds: f64,
    and_gates: u64,
    bytes_a_sent: u64,
    bytes_b_sent: u64,
}

impl Online {
    fn bandwidth_gbps(&self) -> f64 {
        (self.bytes_a_sent + self.bytes_b_sent) as f64 * 8.0 / self.circuit_seconds.max(1e-12) / 1e9
    }

    fn to_json(&self) -> Value {
        json!({
            "seconds": self.seconds, "input_seconds": self.input_seconds,
            "circuit_seconds": self.circuit_seconds, "and_gates": self.and_gates,
            "and_per_sec": report::rate(self.and_gates, self.seconds),
            "bytes_a_to_b": self.bytes_a_sent, "bytes_b_to_a": self.bytes_b_sent,
            "bandwidth_gbit_per_sec": self.bandwidth_gbps(),
        })
    }
}

/// Both parties over loopback TCP (through `shape`), checked against the cleartext
/// outputs: each party must get exactly the outputs it may see, and the right ones.
fn online_once(
    p: &Prepared,
    mode: ParallelMode,
    threads: usize,
    tau: usize,
    shape: LinkShape,
) -> Result<Online> {
    let iface = &p.compiled.interface;
    let owners = typed_io::owners(iface);
    let visibility = typed_io::visibility(iface);
    let a = split_inputs(&owners, &p.inputs, Party::A);
    let b = split_inputs(&owners, &p.inputs, Party::B);
    let config = ParallelConfig { mode, threads, tau };
    let timeout = Duration::from_secs(if shape.is_none() { 120 } else { 1800 });
    let counter = AtomicU64::new(0);
    let what = format!(
        "{}: {} protocol with {threads} thread(s)",
        p.app.name,
        mode.name()
    );
    progress(&what);
    let (oa, ob) = run_local_parallel(
        &p.pc,
        &owners,
        &visibility,
        &a,
        &b,
        &config,
        shape,
        timeout,
        &counter,
    )
    .with_context(|| what.clone())?;
    let mut offset = 0;
    for (j, &width) in p.pc.layout.output_widths.iter().enumerate() {
        let want = &p.expected[offset..offset + width as usize];
        offset += width as usize;
        for (party, outcome) in [(Party::A, &oa), (Party::B, &ob)] {
            let got = outcome.outputs.get(j).and_then(|o| o.as_deref());
            let ok = match got {
                Some(bits) => sees(visibility[j], party) && bits == want,
                None => !sees(visibility[j], party),
            };
            if !ok {
                bail!("{what}: party {party:?} got a wrong output; this is a bug in pgc");
            }
        }
    }
    Ok(Online {
        seconds: oa.stats.seconds.max(ob.stats.seconds),
        input_seconds: ob.stats.input_seconds,
        circuit_seconds: ob.stats.circuit_seconds,
        and_gates: ob.stats.and_gates,
        bytes_a_sent: oa.stats.bytes_sent,
        bytes_b_sent: ob.stats.bytes_sent,
    })
}

fn online(
    p: &Prepared,
    mode: ParallelMode,
    threads: usize,
    tau: usize,
    shape: LinkShape,
    repeat: usize,
) -> Result<Online> {
    let runs = (0..repeat)
        .map(|_| online_once(p, mode, threads, tau, shape))
        .collect::<Result<Vec<_>>>()?;
    Ok(median_by(runs, |r| r.seconds))
}

/// ANDs per AND level of a (topologically ordered) circuit: level = AND depth of the gate.
pub fn and_level_widths(c: &Circuit) -> Vec<u64> {
    let mut depth = vec![0u32; c.layout.num_wires as usize];
    let mut per_level: Vec<u64> = Vec::new();
    for g in &c.gates {
        let d = match g.op {
            Op::Const => 0,
            Op::Inv | Op::Copy => depth[g.a as usize],
            Op::Xor => depth[g.a as usize].max(depth[g.b as usize]),
            Op::And => {
                let d = depth[g.a as usize].max(depth[g.b as usize]) + 1;
                if per_level.len() < d as usize {
                    per_level.resize(d as usize, 0);
                }
                per_level[d as usize - 1] += 1;
                d
            }
        };
        depth[g.out as usize] = d;
    }
    per_level.retain(|&n| n > 0);
    per_level
}

/// Table 2's figures for one application.
struct Properties {
    loc: usize,
    gates: u64,
    and_gates: u64,
    input_bits_a: u64,
    input_bits_b: u64,
    regions: usize,
    instances: u64,
    region_ands: u64,
}

fn properties(p: &Prepared) -> Properties {
    let c = &p.compiled.circuit;
    let owners = typed_io::owners(&p.compiled.interface);
    let bits = |party: Party| -> u64 {
        owners
            .iter()
            .zip(&c.layout.input_widths)
            .filter(|(o, _)| **o == party)
            .map(|(_, &w)| w as u64)
            .sum()
    };
    let info = p.pc.region_info();
    Properties {
        loc: lines_of_code(p.app.source),
        gates: c.gates.len() as u64,
        and_gates: c.and_count(),
        input_bits_a: bits(Party::A),
        input_bits_b: bits(Party::B),
        regions: info.len(),
        instances: info.iter().map(|r| r.instances).sum(),
        region_ands: info.iter().map(|r| r.and_gates).sum(),
    }
}

struct WidthSummary {
    levels: usize,
    min: f64,
    q1: f64,
    median: f64,
    q3: f64,
    max: f64,
    mean: f64,
}

fn summarize(widths: &[u64]) -> WidthSummary {
    let mut v: Vec<f64> = widths.iter().map(|&w| w as f64).collect();
    v.sort_by(f64::total_cmp);
    let q = |p: f64| quantile(&v, p).unwrap_or(0.0);
    WidthSummary {
        levels: v.len(),
        min: q(0.0),
        q1: q(0.25),
        median: q(0.5),
        q3: q(0.75),
        max: q(1.0),
        mean: if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        },
    }
}

fn size_text(p: &Prepared) -> String {
    if p.defines.is_empty() {
        "paper sizes".to_string()
    } else {
        p.defines.join(" ")
    }
}

// ---------------------------------------------------------------------------------------
// pgc bench apps (Tables 2–3, Figs. 6–8)

pub fn apps(args: AppsArgs, json: bool) -> Result<()> {
    let apps = select_apps(&args.sel.apps)?;
    let threads = thread_list(&args.threads, true)?;
    check_repeat(args.repeat)?;
    let tau = effective_tau(args.sel.tau)?;
    let mut prg = Prg::from_os_entropy();

    let mut t2 = Table::new(
        "Table 2: circuit properties (offline = single-thread garbling, median)",
        &[
            "app",
            "LOC",
            "gates",
            "ANDs",
            "AND %",
            "input bits A/B",
            "regions",
            "instances",
            "ANDs in regions",
            "compile s",
            "offline s",
            "offline AND/s",
        ],
    );
    let mut t3 = Table::new(
        "Table 3: protocol on one core (--parallel none, 1 thread, loopback TCP)",
        &[
            "app",
            "total s",
            "AND/s",
            "Gbit/s",
            "input phase s",
            "circuit s",
            "A→B bytes",
        ],
    );
    let mut head = vec!["app / mode".to_string()];
    head.extend(threads.iter().map(|&t| thread_label(t)));
    let mut f6 = Table::new(
        "Fig. 6: offline garbling speed-up over single-thread garbling, by threads",
        &[],
    );
    f6.headers = head.clone();
    let mut f7 = Table::new(
        "Fig. 7: ANDs per AND level of the flat circuit",
        &["app", "levels", "min", "q1", "median", "q3", "max", "mean"],
    );
    let mut f8 = Table::new(
        "Fig. 8: protocol speed-up with CGP over Table 3's time, by threads",
        &[],
    );
    f8.headers = head.clone();
    let mut f8_phases = Table::new(
        "Fig. 8 by phase: CGP's input phase / circuit phase in seconds (the evaluator's \
         clocks), by threads",
        &[],
    );
    f8_phases.headers = head;

    let mut apps_json = Vec::new();
    let mut f6_series = Vec::new();
    let mut f8_series = Vec::new();
    let mut distributions = Vec::new();
    let mut sizes = Vec::new();
    for app in apps {
        let p = prepare(app, &args.sel, &mut prg)?;
        sizes.push(format!("{}: {}", app.name, size_text(&p)));
        let all = p.all_inputs();
        let props = properties(&p);
        progress(&format!("{}: single-thread garbling", app.name));
        let base = offline(&p.pc, Mode::None, 1, tau, args.repeat, &all, &p.expected)?;
        t2.rows.push(vec![
            app.name.into(),
            props.loc.to_string(),
            millions(props.gates as f64),
            millions(props.and_gates as f64),
            format!(
                "{:.0}%",
                100.0 * props.and_gates as f64 / props.gates.max(1) as f64
            ),
            format!(
                "{}/{}",
                report::group(props.input_bits_a),
                report::group(props.input_bits_b)
            ),
            props.regions.to_string(),
            props.instances.to_string(),
            format!(
                "{:.0}%",
                100.0 * props.region_ands as f64 / props.and_gates.max(1) as f64
            ),
            secs(p.compile_seconds),
            secs(base.seconds),
            report::per_sec(base.and_per_sec, "AND/s"),
        ]);

        // Fig. 6: FGP and CGP against the single-thread time. CGP first: dropping an FGP
        // plan (BioMatch's holds its 15 M flattened gates) leaves the allocator purging and
        // re-faulting memory during the next runs, which made CGP on one thread (the very
        // plan of the single-thread run) look 0.7× as fast when it followed FGP.
        let mut offline_json = Vec::new();
        for mode in [Mode::Cgp, Mode::Fgp] {
            let mut row = vec![format!("{} {}", app.name, mode_name(mode).to_uppercase())];
            let mut points = Vec::new();
            for &t in &threads {
                progress(&format!(
                    "{}: offline {} with {t} thread(s)",
                    app.name,
                    mode_name(mode)
                ));
                let r = offline(&p.pc, mode, t, tau, args.repeat, &all, &p.expected)?;
                let s = base.seconds / r.seconds.max(1e-12);
                row.push(format!("{s:.2}"));
                points.push((t as f64, s));
                offline_json.push(json!({
                    "mode": mode_name(mode), "threads": t, "seconds": r.seconds,
                    "and_per_sec": r.and_per_sec, "speedup": s, "oversubscribed": t > cores(),
                    "parallel_and_fraction":
                        r.plan.parallel_ands as f64 / (r.plan.parallel_ands + r.plan.serial_ands).max(1) as f64,
                    "steps": r.plan.steps,
                }));
            }
            f6.rows.push(row);
            f6_series.push(Series::new(
                format!("{} - {}", app.name, mode_name(mode).to_uppercase()),
                points,
            ));
        }

        // Fig. 7.
        let widths = and_level_widths(&p.compiled.circuit);
        let w = summarize(&widths);
        f7.rows.push(vec![
            app.name.into(),
            w.levels.to_string(),
            format!("{:.0}", w.min),
            format!("{:.0}", w.q1),
            format!("{:.0}", w.median),
            format!("{:.0}", w.q3),
            format!("{:.0}", w.max),
            format!("{:.0}", w.mean),
        ]);
        distributions.push(Distribution {
            name: app.name.into(),
            values: widths.iter().map(|&n| n as f64).collect(),
        });

        // Table 3 and Fig. 8.
        let mut online_json = Value::Null;
        if !args.offline_only {
            // One untimed (but checked) run first: the first run pays for warming up.
            online_once(&p, ParallelMode::None, 1, tau, LinkShape::default())?;
            let seq = online(
                &p,
                ParallelMode::None,
                1,
                tau,
                LinkShape::default(),
                args.repeat,
            )?;
            t3.rows.push(vec![
                app.name.into(),
                secs(seq.seconds),
                report::per_sec(report::rate(seq.and_gates, seq.seconds), "AND/s"),
                format!("{:.2}", seq.bandwidth_gbps()),
                secs(seq.input_seconds),
                secs(seq.circuit_seconds),
                report::bytes(seq.bytes_a_sent),
            ]);
            let mut row = vec![format!("{} CGP", app.name)];
            let mut phase_row = vec![format!("{} CGP", app.name)];
            let mut points = Vec::new();
            let mut cgp_json = Vec::new();
            for &t in &threads {
                let r = online(
                    &p,
                    ParallelMode::Cgp,
                    t,
                    tau,
                    LinkShape::default(),
                    args.repeat,
                )?;
                let s = seq.seconds / r.seconds.max(1e-12);
                row.push(format!("{s:.2}"));
                phase_row.push(format!(
                    "{} / {}",
                    secs(r.input_seconds),
                    secs(r.circuit_seconds)
                ));
                points.push((t as f64, s));
                let mut j = r.to_json();
                j["threads"] = json!(t);
                j["speedup"] = json!(s);
                j["oversubscribed"] = json!(t > cores());
                cgp_json.push(j);
            }
            f8.rows.push(row);
            f8_phases.rows.push(phase_row);
            f8_series.push(Series::new(format!("{} - CGP", app.name), points));
            online_json = json!({ "sequential": seq.to_json(), "cgp": cgp_json });
        }

        apps_json.push(json!({
            "app": app.key, "name": app.name, "defines": p.defines,
            "table2": {
                "lines_of_code": props.loc, "gates": props.gates, "and_gates": props.and_gates,
                "and_fraction": props.and_gates as f64 / props.gates.max(1) as f64,
                "input_bits_a": props.input_bits_a, "input_bits_b": props.input_bits_b,
                "regions": props.regions, "instances": props.instances,
                "region_and_gates": props.region_ands, "compile_seconds": p.compile_seconds,
                "offline_seconds": base.seconds, "offline_and_per_sec": base.and_per_sec,
            },
            "offline": offline_json,
            "level_widths": {
                "levels": w.levels, "min": w.min, "q1": w.q1, "median": w.median, "q3": w.q3,
                "max": w.max, "mean": w.mean, "per_level": widths,
            },
            "online": online_json,
        }));
    }

    f8_phases.notes.push(format!(
        "input phase: handshake, the garbler's input labels, the OT set-up (its base OTs on \
         the run's threads) and extension; circuit phase: the gates. Table 3's `none`: {}",
        t3.rows
            .iter()
            .map(|r| format!("{} {} / {}", r[0], r[4], r[5]))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let note = oversubscription_note(&threads);
    for t in [&mut f6, &mut f8] {
        t.notes.extend(note.clone());
    }
    f6.notes.push(format!(
        "τ = {tau} ANDs per thread; sizes: {}",
        sizes.join("; ")
    ));
    t2.notes
        .push("LOC: lines of program text (no comments, blank lines or preprocessor lines)".into());
    t3.notes.push(
        "AND/s over the total time; Gbit/s = bytes both ways × 8 / circuit-phase time".into(),
    );
    let subtitle = format!(
        "{}; {} CPU(s) here{}",
        sizes.join(", "),
        cores(),
        if threads.iter().any(|&t| t > cores()) {
            ": more threads than CPUs cannot speed up"
        } else {
            ""
        }
    );
    let max_t = *threads.last().unwrap_or(&1) as f64;
    let ideal = || Series::reference("ideal parallelization", vec![(1.0, 1.0), (max_t, max_t)]);
    let mut charts = Vec::new();
    let mut f6_all = vec![ideal()];
    f6_all.extend(f6_series);
    charts.push((
        "fig6_offline_speedup.svg".to_string(),
        LineChart {
            title: "Offline garbling speed-up, FGP and CGP (paper Fig. 6)".into(),
            subtitle: subtitle.clone(),
            x_label: "threads".into(),
            y_label: "speed-up over one thread".into(),
            log2_x: false,
            y_from_zero: true,
            y_at_least: 2.0,
            x_ticks: threads.iter().map(|&t| t as f64).collect(),
            series: f6_all,
        }
        .to_svg(),
    ));
    charts.push((
        "fig7_level_widths.svg".to_string(),
        DistributionChart {
            title: "ANDs per AND level (paper Fig. 7)".into(),
            subtitle: format!(
                "{}; box: quartiles and median, bars: levels per power-of-two width",
                sizes.join(", ")
            ),
            y_label: "ANDs per level".into(),
            groups: distributions,
        }
        .to_svg(),
    ));
    let mut tables = vec![t2];
    if !args.offline_only {
        let mut f8_all = vec![ideal()];
        f8_all.extend(f8_series);
        charts.push((
            "fig8_online_speedup.svg".to_string(),
            LineChart {
                title: "Protocol speed-up with CGP (paper Fig. 8)".into(),
                subtitle,
                x_label: "threads per party".into(),
                y_label: "speed-up over the sequential protocol".into(),
                log2_x: false,
                y_from_zero: true,
                y_at_least: 2.0,
                x_ticks: threads.iter().map(|&t| t as f64).collect(),
                series: f8_all,
            }
            .to_svg(),
        ));
        tables.push(t3);
    }
    tables.push(f6);
    tables.push(f7);
    if !args.offline_only {
        tables.push(f8);
        tables.push(f8_phases);
    }
    let doc = json!({
        "experiment": "apps", "cores": cores(), "threads": threads, "repeat": args.repeat,
        "tau": tau, "small": args.sel.small, "apps": apps_json,
    });
    finish(json, args.out.as_deref(), "apps", doc, &tables, &charts)
}

// ---------------------------------------------------------------------------------------
// pgc bench ipp (Tables 4–5)

pub fn ipp(args: IppArgs, json: bool) -> Result<()> {
    let apps = select_apps(&args.sel.apps)?;
    let threads = thread_list(&args.threads, false)?;
    check_repeat(args.repeat)?;
    let tau = effective_tau(args.sel.tau)?;
    let shape = link_shape(args.rate_limit, args.latency)?;
    let mut prg = Prg::from_os_entropy();
    let prepared = apps
        .into_iter()
        .map(|a| prepare(a, &args.sel, &mut prg))
        .collect::<Result<Vec<_>>>()?;

    // Table 4: rows are configurations, two columns (time, S) per application.
    let mut configs: Vec<(ParallelMode, usize)> = vec![(ParallelMode::None, 1)];
    for &t in &threads {
        if t > 1 {
            configs.push((ParallelMode::Cgp, t));
        }
        configs.push((ParallelMode::Ipp, t));
    }
    let mut headers = vec!["mode threads".to_string()];
    for p in &prepared {
        headers.push(format!("{} s", p.app.name));
        headers.push("S".into());
    }
    let mut t4 = Table::new(
        "Table 4: IPP on loopback TCP; S = speed-up over --parallel none with 1 thread",
        &[],
    );
    t4.headers = headers.clone();
    let mut times = vec![vec![0.0f64; prepared.len()]; configs.len()];
    let mut t4_json = Vec::new();
    for (k, p) in prepared.iter().enumerate() {
        // One untimed (but checked) run first: the first run pays for warming up.
        online_once(p, ParallelMode::None, 1, tau, LinkShape::default())?;
        for (c, &(mode, t)) in configs.iter().enumerate() {
            let r = online(p, mode, t, tau, LinkShape::default(), args.repeat)?;
            times[c][k] = r.seconds;
            let mut j = r.to_json();
            j["app"] = json!(p.app.key);
            j["mode"] = json!(mode.name());
            j["threads"] = json!(t);
            j["speedup"] = json!(times[0][k] / r.seconds.max(1e-12));
            j["oversubscribed"] = json!(threads_used(mode, t) > cores());
            t4_json.push(j);
        }
    }
    for (c, &(mode, t)) in configs.iter().enumerate() {
        let mut row = vec![format!("{} {}", mode.name(), thread_label_for(mode, t))];
        for (base, time) in times[0].iter().zip(&times[c]) {
            row.push(secs(*time));
            row.push(format!("{:.2}", base / time.max(1e-12)));
        }
        t4.rows.push(row);
    }
    let mut used: Vec<usize> = configs.iter().map(|&(m, t)| threads_used(m, t)).collect();
    used.sort_unstable();
    used.dedup();
    t4.notes.extend(oversubscription_note(&used));
    t4.notes.push(
        "ipp N: each party runs N garbling and N evaluating threads (2N threads per party)".into(),
    );
    let sizes: Vec<String> = prepared
        .iter()
        .map(|p| format!("{}: {}", p.app.name, size_text(p)))
        .collect();
    t4.notes.push(format!("sizes: {}", sizes.join("; ")));
    let mut tables = vec![t4];

    // Table 5: one thread per party, CGP against IPP, over the shaped link.
    let mut t5_json = Value::Null;
    if !shape.is_none() {
        let mut t5 = Table::new(
            format!("Table 5: one thread per party over a shaped link ({shape} each way)"),
            &["app", "cgp s", "ipp s", "S"],
        );
        let mut rows = Vec::new();
        for p in &prepared {
            let cgp = online(p, ParallelMode::Cgp, 1, tau, shape, args.repeat)?;
            let ipp = online(p, ParallelMode::Ipp, 1, tau, shape, args.repeat)?;
            let s = cgp.seconds / ipp.seconds.max(1e-12);
            t5.rows.push(vec![
                p.app.name.into(),
                secs(cgp.seconds),
                secs(ipp.seconds),
                format!("{s:.2}"),
            ]);
            rows.push(json!({ "app": p.app.key, "cgp": cgp.to_json(), "ipp": ipp.to_json(), "speedup": s }));
        }
        t5.notes
            .push("S = cgp time / ipp time (the seed gained 1.30–1.58× at ~100 Mbit/s)".into());
        t5_json = json!({
            "rate_bits_per_sec": shape.rate_bits_per_sec,
            "latency_ms": shape.latency.as_secs_f64() * 1e3,
            "rows": rows,
        });
        tables.push(t5);
    }

    // Chart: speed-up by threads, CGP and IPP per application.
    let max_t = *threads.last().unwrap_or(&1) as f64;
    let mut series = vec![Series::reference(
        "ideal parallelization",
        vec![(1.0, 1.0), (max_t, max_t)],
    )];
    for (k, p) in prepared.iter().enumerate() {
        for mode in [ParallelMode::Cgp, ParallelMode::Ipp] {
            let points: Vec<(f64, f64)> = configs
                .iter()
                .enumerate()
                .filter(|(_, (m, _))| {
                    *m == mode || (mode == ParallelMode::Cgp && *m == ParallelMode::None)
                })
                .map(|(c, &(_, t))| (t as f64, times[0][k] / times[c][k].max(1e-12)))
                .collect();
            series.push(Series::new(
                format!("{} - {}", p.app.name, mode.name().to_uppercase()),
                points,
            ));
        }
    }
    let chart = LineChart {
        title: "Protocol speed-up, CGP and IPP (paper Table 4)".into(),
        subtitle: format!(
            "{}; {} CPU(s) here; CGP at 1 thread = --parallel none",
            sizes.join(", "),
            cores()
        ),
        x_label: "threads per party (ipp: per role)".into(),
        y_label: "speed-up over the sequential protocol".into(),
        log2_x: false,
        y_from_zero: true,
        y_at_least: 2.0,
        x_ticks: std::iter::once(1.0)
            .chain(threads.iter().map(|&t| t as f64))
            .collect(),
        series,
    };
    let doc = json!({
        "experiment": "ipp", "cores": cores(), "threads": threads, "repeat": args.repeat,
        "tau": tau, "small": args.sel.small, "table4": t4_json, "table5": t5_json,
    });
    finish(
        json,
        args.out.as_deref(),
        "ipp",
        doc,
        &tables,
        // A speed-up curve needs at least two thread counts.
        &if threads.len() >= 2 {
            vec![("fig_ipp_speedup.svg".into(), chart.to_svg())]
        } else {
            Vec::new()
        },
    )
}

/// Threads one party runs: ipp runs a garbling and an evaluating thread per count.
fn threads_used(mode: ParallelMode, t: usize) -> usize {
    if mode == ParallelMode::Ipp { 2 * t } else { t }
}

fn thread_label_for(mode: ParallelMode, t: usize) -> String {
    if threads_used(mode, t) > cores() {
        format!("{t}*")
    } else {
        t.to_string()
    }
}

fn link_shape(rate_mbit: Option<f64>, latency_ms: Option<f64>) -> Result<LinkShape> {
    let rate_bits_per_sec = match rate_mbit {
        None => None,
        Some(r) if r.is_finite() && r > 0.0 => Some((r * 1e6).round() as u64),
        Some(r) => bail!("--rate-limit must be a positive number of Mbit/s, not {r}"),
    };
    let latency = match latency_ms {
        None => Duration::ZERO,
        Some(ms) if ms.is_finite() && (0.0..=60_000.0).contains(&ms) => {
            Duration::from_secs_f64(ms / 1e3)
        }
        Some(ms) => bail!("--latency must be between 0 and 60000 ms, not {ms}"),
    };
    Ok(LinkShape {
        rate_bits_per_sec,
        latency,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn and_only_circuits_are_layered_and_valid() {
        let c = and_only_layered(16, 10, 7).unwrap();
        pgc_circuit::validate(&c).unwrap();
        assert_eq!(c.gates.len(), 160);
        assert!(c.gates.iter().all(|g| g.op == Op::And && g.a != g.b));
        assert_eq!(and_level_widths(&c), vec![16; 10]);
        ParallelCircuit::sequential(&c).unwrap();
        assert!(and_only_layered(0, 10, 7).is_err());
    }

    #[test]
    fn level_widths_follow_and_depth_through_free_gates() {
        // in0 & in1 (level 1); inv of it; xor with in2; & in3 (level 2); in0 & in2 (level 1).
        let layout = Layout {
            num_wires: 9,
            input_widths: vec![2, 2],
            output_widths: vec![2],
            output_wires: vec![7, 8],
        };
        let gates = vec![
            Gate::and(0, 1, 4),
            Gate::inv(4, 5),
            Gate::xor(5, 2, 6),
            Gate::and(6, 3, 7),
            Gate::and(0, 2, 8),
        ];
        let c = Circuit { layout, gates };
        assert_eq!(and_level_widths(&c), vec![2, 1]);
    }

    #[test]
    fn offline_check_accepts_every_mode() {
        let c = and_only_layered(8, 6, 1).unwrap();
        let pc = ParallelCircuit::sequential(&c).unwrap();
        let mut prg = Prg::from_seed(Block(42));
        let inputs = random_bits(&mut prg, 16);
        let expected = eval_bits(&pc, &inputs);
        for mode in [Mode::None, Mode::Fgp, Mode::Cgp, Mode::Auto] {
            for t in [1, 3] {
                check_offline(&Plan::new(&pc, t, mode, 1), &pc, &inputs, &expected).unwrap();
                check_offline(&Plan::claimed(&pc, t, mode, 1), &pc, &inputs, &expected).unwrap();
            }
        }
        let mut wrong = expected.clone();
        wrong[0] = !wrong[0];
        assert!(check_offline(&Plan::new(&pc, 2, Mode::Fgp, 1), &pc, &inputs, &wrong).is_err());
    }

    #[test]
    fn lines_of_code_skip_comments_and_directives() {
        let src = "/* header\n * more */\n#include <x.h>\nint f(void) // c\n{\n\n  return 1; /* x */\n}\n";
        assert_eq!(lines_of_code(src), 4);
        assert!(lines_of_code(APPS[2].source) >= 5);
    }

    #[test]
    fn thread_lists_are_checked_and_sorted() {
        assert_eq!(thread_list(&[4, 2, 2], true).unwrap(), vec![1, 2, 4]);
        assert_eq!(thread_list(&[4, 2], false).unwrap(), vec![2, 4]);
        assert!(thread_list(&[0], true).is_err());
        assert!(thread_list(&[MAX_THREADS + 1], true).is_err());
    }

    #[test]
    fn tables_align() {
        let mut t = Table::new("T", &["app", "n"]);
        t.rows.push(vec!["BioMatch".into(), "1".into()]);
        t.rows.push(vec!["M".into(), "123".into()]);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "  app         n");
        assert_eq!(lines[3], "  BioMatch    1");
        assert_eq!(lines[4], "  M         123");
    }

    #[test]
    fn link_shapes_are_validated() {
        assert!(link_shape(None, None).unwrap().is_none());
        let s = link_shape(Some(100.0), Some(50.0)).unwrap();
        assert_eq!(s.rate_bits_per_sec, Some(100_000_000));
        assert_eq!(s.latency, Duration::from_millis(50));
        assert!(link_shape(Some(0.0), None).is_err());
        assert!(link_shape(None, Some(-1.0)).is_err());
    }

    #[test]
    fn medians_are_real_runs() {
        assert_eq!(median_by(vec![3.0, 1.0, 2.0], |&x| x), 2.0);
        assert_eq!(median_by(vec![4.0, 1.0, 3.0, 2.0], |&x| x), 2.0);
    }
}
