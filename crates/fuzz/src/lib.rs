//! The entry points of pgc's fuzz targets: one function per target, each taking the fuzz
//! input as bytes. The cargo-fuzz project in `fuzz/` calls them from libFuzzer, and
//! `tests/corpus.rs` replays every committed seed and regression input through them on a
//! plain `cargo test`, so the corpus keeps guarding once the fuzz run is over (see
//! `docs/fuzzing.md`).
//!
//! Each entry point feeds the bytes to one parser or one party of the protocol and returns
//! normally whatever the bytes are; a panic (or a hang, or unbounded memory, which libFuzzer
//! reports) is a finding. Where the result of a successful parse can be checked cheaply, the
//! entry point does so (a value formatted and parsed back gives the same bits, a decoded
//! hello encodes back to the same bytes, a compact file streams exactly the gates it
//! declares), so that wrong answers are findings too.
//!
//! The `.pgc` entry points first overwrite the file's two BLAKE3 checksums (header, whole
//! file) with the right values, so that mutations reach the decoders behind them instead of
//! stopping at a checksum mismatch. The protocol entry points run one honest party against
//! a scripted peer ([`script::ScriptChannel`]): the fuzz input is every byte the peer sends.

pub mod cluster;
pub mod front_ends;
pub mod malicious;
pub mod script;
pub mod yao_variants;

use std::io::Write;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use pgc_circuit::blocks::{add, lt_unsigned, mul, mux_word};
use pgc_circuit::bristol::{Format, parse_circuit, write_bristol_fashion};
use pgc_circuit::pgcfile::{
    CompactFile, PgcReader, read_pgc_compact_from, read_pgc_from, read_pgc_parallel_from,
};
use pgc_circuit::typed::{format_port_value, json_port_value, parse_port_value, port_value_json};
use pgc_circuit::{
    CType, Circuit, GateSource, NetBuilder, OptimizeFor, ParallelCircuit, Visibility, eval_bits,
    millionaires_circuit,
};
use pgc_net::{Channel, MemoryChannel};
use pgc_protocol::parallel::{MemoryStreams, ParallelConfig, ParallelMode, run_parallel};
use pgc_protocol::{
    GmwConfig, Hello, Outcome, PROTOCOL_VERSION, Party, ProtocolError, run_evaluator, run_garbler,
    run_gmw,
};

use script::{Recorder, RecordingStreams, ScriptChannel, ScriptedStreams};

/// A fuzz target: its name (the file under `fuzz/fuzz_targets/` and the corpus folder) and
/// its entry point.
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
}

/// Every target, in the order `docs/fuzzing.md` lists them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "bristol",
        run: bristol,
    },
    Target {
        name: "pgc_v1",
        run: pgc_v1,
    },
    Target {
        name: "pgc_v2",
        run: pgc_v2,
    },
    Target {
        name: "pgc_v3",
        run: pgc_v3,
    },
    Target {
        name: "typed_value",
        run: typed_value,
    },
    Target {
        name: "hello",
        run: hello,
    },
    Target {
        name: "yao_evaluator",
        run: yao_evaluator,
    },
    Target {
        name: "yao_garbler",
        run: yao_garbler,
    },
    Target {
        name: "parallel_peer",
        run: parallel_peer,
    },
    Target {
        name: "gmw_peer",
        run: gmw_peer,
    },
    Target {
        name: "cut_and_choose",
        run: cut_and_choose,
    },
    Target {
        name: "dual_execution",
        run: dual_execution,
    },
    Target {
        name: "yao_three_halves",
        run: yao_three_halves,
    },
    Target {
        name: "yao_compact",
        run: yao_compact,
    },
    Target {
        name: "c_program",
        run: c_program,
    },
    Target {
        name: "c_semantics",
        run: c_semantics,
    },
    Target {
        name: "yosys_json",
        run: yosys_json,
    },
    Target {
        name: "inputs_json",
        run: inputs_json,
    },
    Target {
        name: "cluster_rank",
        run: cluster_rank,
    },
];

pub use cluster::cluster_rank;
pub use front_ends::{c_program, c_semantics, inputs_json, yosys_json};
pub use malicious::{cut_and_choose, dual_execution};
pub use yao_variants::{yao_compact, yao_three_halves};

/// Circuits at most this many gates are also evaluated (a cheap check of what was parsed).
const EVAL_GATES: usize = 1 << 12;

// ---------------------------------------------------------------------------------------
// Circuit files

/// The Bristol readers. The first byte picks the format (detected, Bristol Fashion, old
/// Bristol); the rest is the file. A circuit that parses is written back as Bristol Fashion
/// and parsed again, and both must compute the same outputs on two input patterns.
pub fn bristol(data: &[u8]) {
    let Some((&selector, text)) = data.split_first() else {
        return;
    };
    let format = match selector % 3 {
        0 => None,
        1 => Some(Format::BristolFashion),
        _ => Some(Format::Bristol),
    };
    let Ok(circuit) = parse_circuit(text, format) else {
        return;
    };
    let mut written = Vec::new();
    write_bristol_fashion(&circuit, &mut written, selector & 4 != 0)
        .expect("a parsed circuit can be written");
    let again = parse_circuit(&written, Some(Format::BristolFashion))
        .expect("a written circuit parses back");
    assert_eq!(circuit.layout.input_widths, again.layout.input_widths);
    assert_eq!(circuit.layout.output_widths, again.layout.output_widths);
    same_function(&circuit, &again);
}

/// Both circuits (same interface) give the same outputs on all-zero and alternating inputs.
fn same_function(a: &impl GateSource, b: &impl GateSource) {
    if a.gate_count() > EVAL_GATES as u64 || b.gate_count() > EVAL_GATES as u64 {
        return;
    }
    let n_in = a.layout().num_input_wires() as usize;
    for pattern in [|_| false, |i: usize| i % 3 == 1] {
        let inputs: Vec<bool> = (0..n_in).map(pattern).collect();
        assert_eq!(eval_bits(a, &inputs), eval_bits(b, &inputs));
    }
}

/// Overwrites the header checksum and the final checksum of a `.pgc` file with the right
/// values, where the file is long enough to hold them (the header's layout and interface
/// lengths say where the header checksum is; the final one is the last 32 bytes).
pub fn fix_pgc_checksums(file: &mut [u8]) {
    let u32_at = |file: &[u8], at: usize| -> Option<usize> {
        let bytes = file.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes(bytes.try_into().ok()?) as usize)
    };
    let header_end = (|| {
        let layout_len = u32_at(file, 16)?;
        let json_len_at = 20usize.checked_add(layout_len)?;
        let json_len = u32_at(file, json_len_at)?;
        json_len_at.checked_add(4)?.checked_add(json_len)
    })();
    let Some(header_end) = header_end else {
        return;
    };
    let Some(body_at) = header_end.checked_add(32).filter(|&e| e <= file.len()) else {
        return;
    };
    let hash = blake3::hash(&file[..header_end]);
    file[header_end..body_at].copy_from_slice(hash.as_bytes());
    if file.len() >= body_at + 32 {
        let end = file.len() - 32;
        let hash = blake3::hash(&file[..end]);
        file[end..].copy_from_slice(hash.as_bytes());
    }
}

/// The file with the given format version and valid checksums.
fn pgc_file(data: &[u8], version: u32) -> Vec<u8> {
    let mut file = data.to_vec();
    if let Some(field) = file.get_mut(8..12) {
        field.copy_from_slice(&version.to_le_bytes());
    }
    fix_pgc_checksums(&mut file);
    file
}

/// The version 1 readers: the whole-file readers and the streaming [`PgcReader`], which must
/// agree on the gates.
pub fn pgc_v1(data: &[u8]) {
    let file = pgc_file(data, 1);
    let whole = read_pgc_from(&file[..]);
    let _ = read_pgc_parallel_from(&file[..]);
    if let Ok(mut reader) = PgcReader::new(&file[..]) {
        let mut gates = Vec::new();
        let streamed = loop {
            match reader.read_block(&mut gates) {
                Ok(0) => break Ok(gates),
                Ok(_) => {}
                Err(e) => break Err(e),
            }
        };
        if let (Ok((circuit, _)), Ok(gates)) = (&whole, &streamed) {
            assert_eq!(&circuit.gates, gates);
        }
        // The whole-file reader also validates; the stream alone does not.
        assert!(whole.is_err() || streamed.is_ok());
    }
}

/// The version 2 (parallel) readers: as a parallel circuit and flattened; both must agree.
pub fn pgc_v2(data: &[u8]) {
    let file = pgc_file(data, 2);
    let parallel = read_pgc_parallel_from(&file[..]);
    let flat = read_pgc_from(&file[..]);
    if let (Ok((pc, _)), Ok((c, _))) = (&parallel, &flat) {
        assert_eq!(pc.gate_count(), c.gates.len() as u64);
        same_function(pc, c);
    }
}

/// The version 3 (compact) readers: [`read_pgc_compact_from`], then [`CompactFile`] on the
/// same bytes in a temporary file, whose gate stream must hand out exactly the gates it
/// declares (when it declares few enough to stream in a fuzz run).
pub fn pgc_v3(data: &[u8]) {
    let file = pgc_file(data, 3);
    let whole = read_pgc_compact_from(&file[..]);
    let path = scratch_file();
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(&file))
        .expect("the fuzz scratch file can be written");
    let Ok((source, _)) = CompactFile::open(&path) else {
        return;
    };
    // CompactFile checks more than the reader (reads before writes), never less.
    assert!(
        whole.is_ok(),
        "CompactFile accepted what the reader refused"
    );
    if source.gate_count() > 1 << 20 {
        return;
    }
    let mut gates = 0u64;
    source
        .for_each_chunk(&mut |chunk| -> Result<(), ()> {
            gates += chunk.len() as u64;
            Ok(())
        })
        .expect("counting gates cannot fail");
    assert!(source.take_error().is_none(), "the unchanged file failed");
    assert_eq!(gates, source.gate_count());
}

/// A scratch file of this process (fuzzing runs one input at a time per process).
fn scratch_file() -> std::path::PathBuf {
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        std::path::PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    dir.join(format!(
        "pgc-fuzz-{}-{:?}.pgc",
        std::process::id(),
        std::thread::current().id()
    ))
}

// ---------------------------------------------------------------------------------------
// Typed values

/// The types the value target parses for, by the first input byte; a byte past the list
/// takes the type from the input as JSON instead (up to a NUL byte).
const CTYPES: &[&str] = &[
    r#""Bool""#,
    r#"{"Int":{"bits":8,"signed":true}}"#,
    r#"{"Int":{"bits":32,"signed":false}}"#,
    r#"{"Int":{"bits":64,"signed":true}}"#,
    r#"{"Int":{"bits":128,"signed":false}}"#,
    r#"{"Int":{"bits":3,"signed":true}}"#,
    r#"{"Array":{"elem":{"Int":{"bits":16,"signed":true}},"len":4}}"#,
    r#"{"Array":{"elem":{"Array":{"elem":"Bool","len":2}},"len":3}}"#,
    r#"{"Struct":{"name":"pt","fields":[["x",{"Int":{"bits":8,"signed":false}}],["ok","Bool"],["v",{"Array":{"elem":{"Int":{"bits":4,"signed":true}},"len":2}}]]}}"#,
    r#"{"Array":{"elem":{"Struct":{"name":"e","fields":[]}},"len":5}}"#,
    r#"{"Float":{"bits":32}}"#,
    r#"{"Array":{"elem":{"Float":{"bits":64}},"len":3}}"#,
    // Plain `char`, which prints as a character constant, and `char` arrays as strings.
    r#"{"Int":{"bits":8,"signed":true,"char":true}}"#,
    r#"{"Array":{"elem":{"Array":{"elem":{"Int":{"bits":8,"signed":true,"char":true}},"len":4}},"len":2}}"#,
];

/// Widest type the value target takes from its input (the parsers' work is linear in it).
const MAX_FUZZ_TYPE_BITS: u64 = 1 << 12;

/// The value parsers of `--input NAME=VALUE` (text) and `--inputs FILE.json` (JSON), for
/// the type the input picks: a value that parses must have the type's width, and format
/// back to a value that parses to the same bits.
pub fn typed_value(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let (ctype_json, text) = match CTYPES.get(selector as usize) {
        Some(json) => (json.as_bytes(), rest),
        None => match rest.iter().position(|&b| b == 0) {
            Some(nul) => (&rest[..nul], &rest[nul + 1..]),
            None => return,
        },
    };
    let Ok(ctype) = serde_json::from_slice::<CType>(ctype_json) else {
        return;
    };
    if !fuzzable_type(&ctype) {
        return;
    }
    let width = ctype.bit_width();
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    if let Ok(bits) = parse_port_value(text, &ctype, "x") {
        assert_eq!(bits.len() as u64, width);
        let formatted = format_port_value(&bits, &ctype);
        let again = parse_port_value(&formatted, &ctype, "x")
            .unwrap_or_else(|e| panic!("formatted value {formatted:?} does not parse: {e}"));
        assert_eq!(bits, again, "{formatted:?}");
        let json = port_value_json(&bits, &ctype);
        let from_json = json_port_value(&json, &ctype, "x")
            .unwrap_or_else(|e| panic!("JSON value {json} does not parse: {e}"));
        assert_eq!(bits, from_json, "{json}");
    }
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text)
        && let Ok(bits) = json_port_value(&value, &ctype, "x")
    {
        assert_eq!(bits.len() as u64, width);
    }
}

/// Whether the harness may hand `ctype` to the value functions: its width (computed here
/// without overflow) is small, every integer is one pgc can format (at most 128 bits,
/// as [`format_port_value`] documents), and every float is a `float` or `double`.
fn fuzzable_type(ctype: &CType) -> bool {
    fn width(t: &CType, depth: u32) -> Option<u64> {
        if depth > 64 {
            return None;
        }
        match t {
            CType::Bool => Some(1),
            CType::Int { bits, .. } => (*bits <= 128).then_some(*bits as u64),
            CType::Float { bits } => matches!(bits, 32 | 64).then_some(*bits as u64),
            CType::Array { elem, len } => width(elem, depth + 1)?.checked_mul(*len as u64),
            CType::Struct { fields, .. } => fields
                .iter()
                .try_fold(0u64, |sum, (_, f)| sum.checked_add(width(f, depth + 1)?)),
        }
    }
    width(ctype, 0).is_some_and(|w| w <= MAX_FUZZ_TYPE_BITS)
}

// ---------------------------------------------------------------------------------------
// The protocol

/// The handshake decoder: a hello that decodes must encode back to the same bytes, and
/// checking it against each party's own hello must not panic.
pub fn hello(data: &[u8]) {
    let Ok(peer) = Hello::from_bytes(data) else {
        return;
    };
    assert_eq!(peer.to_bytes(), data);
    for party in [Party::A, Party::B] {
        let _ = yao_hello(party).check_peer(&peer);
    }
}

/// The hello of party `party` on [`yao_circuit`].
pub fn yao_hello(party: Party) -> Hello {
    let c = yao_circuit();
    Hello {
        version: PROTOCOL_VERSION,
        party,
        fingerprint: c.fingerprint(),
        input_owners: vec![Party::A, Party::B],
        input_widths: c.layout.input_widths.clone(),
        output_widths: c.layout.output_widths.clone(),
        output_visibility: vec![Visibility::Both; c.layout.output_widths.len()],
        // What a plain circuit states (the `GateSource` default).
        value_format: pgc_circuit::ValueFormat::Bits,
        security: pgc_protocol::Security::SemiHonest,
        protocol: pgc_protocol::ProtocolChoice::Yao,
        garbling: Default::default(),
        cluster_ranks: 0,
        // What a gate list in memory states (the `GateSource` default).
        form: pgc_circuit::CircuitForm::Gates,
    }
}

/// The fixed circuit of the sequential-protocol targets: 8-bit millionaires (A's value, B's
/// value; one output).
pub fn yao_circuit() -> &'static Circuit {
    static CIRCUIT: OnceLock<Circuit> = OnceLock::new();
    CIRCUIT.get_or_init(|| millionaires_circuit(8))
}

pub(crate) const YAO_OWNERS: [Party; 2] = [Party::A, Party::B];

pub(crate) fn yao_input(party: Party) -> Vec<Vec<bool>> {
    let value: u8 = if party == Party::A { 200 } else { 77 };
    vec![(0..8).map(|i| value >> i & 1 == 1).collect()]
}

/// The evaluator (B) against a scripted garbler: every message B decodes (hello, hash key,
/// input labels, the OT setup and extension, garbled-table frames, output decoding bits).
pub fn yao_evaluator(data: &[u8]) {
    let _ = yao_evaluator_run(data);
}

/// [`yao_evaluator`]'s run, with its result.
pub fn yao_evaluator_run(data: &[u8]) -> Result<Outcome, ProtocolError> {
    let mut ch = ScriptChannel::new(data);
    run_evaluator(
        &mut ch,
        yao_circuit(),
        &YAO_OWNERS,
        &yao_input(Party::B),
        &mut |_| {},
    )
}

/// The garbler (A) against a scripted evaluator: hello, the OT messages, output permute bits.
pub fn yao_garbler(data: &[u8]) {
    let _ = yao_garbler_run(data);
}

/// [`yao_garbler`]'s run, with its result.
pub fn yao_garbler_run(data: &[u8]) -> Result<Outcome, ProtocolError> {
    let mut ch = ScriptChannel::new(data);
    run_garbler(
        &mut ch,
        yao_circuit(),
        &YAO_OWNERS,
        &yao_input(Party::A),
        &mut |_| {},
    )
}

/// What each party of an honest run of [`yao_circuit`] received: `(A's, B's)`, the seeds
/// of [`yao_garbler`] and [`yao_evaluator`].
pub fn yao_transcripts() -> (Vec<u8>, Vec<u8>) {
    let (ca, cb) = MemoryChannel::pair();
    let (got_a, got_b) = (Arc::default(), Arc::default());
    let mut ra = Recorder {
        inner: timed(ca),
        received: Arc::clone(&got_a),
    };
    let mut rb = Recorder {
        inner: timed(cb),
        received: Arc::clone(&got_b),
    };
    std::thread::scope(|s| {
        let a = s.spawn(|| {
            run_garbler(
                &mut ra,
                yao_circuit(),
                &YAO_OWNERS,
                &yao_input(Party::A),
                &mut |_| {},
            )
        });
        run_evaluator(
            &mut rb,
            yao_circuit(),
            &YAO_OWNERS,
            &yao_input(Party::B),
            &mut |_| {},
        )
        .expect("an honest evaluator succeeds");
        a.join()
            .expect("the garbler thread does not panic")
            .expect("an honest garbler succeeds");
    });
    (take(&got_a), take(&got_b))
}

/// Small windows and a small triple pool, so a run of [`yao_circuit`] has several windows
/// and refills for the fuzzer to reach.
fn gmw_config() -> GmwConfig {
    GmwConfig {
        window_gates: 24,
        send_ahead_bytes: 16 << 10,
        pool_triples: 8,
    }
}

/// A GMW party against a scripted peer; the first byte picks the party (0: A, else B), the
/// rest is every byte the peer sends: hello, base OTs and OT extension of both directions,
/// the input mask seed, the round pieces, the done message and the output shares.
pub fn gmw_peer(data: &[u8]) {
    let _ = gmw_peer_run(data);
}

/// [`gmw_peer`]'s run, with its result (`None` for empty input).
pub fn gmw_peer_run(data: &[u8]) -> Option<Result<Outcome, ProtocolError>> {
    let (&first, rest) = data.split_first()?;
    let me = if first == 0 { Party::A } else { Party::B };
    let mut ch = ScriptChannel::new(rest);
    let visibility = vec![Visibility::Both; yao_circuit().layout.output_widths.len()];
    Some(run_gmw(
        &mut ch,
        yao_circuit(),
        &YAO_OWNERS,
        &visibility,
        me,
        &yao_input(me),
        &gmw_config(),
        &mut |_| {},
    ))
}

/// The seeds of [`gmw_peer`]: for each party, its byte and what it received in an honest
/// GMW run of [`yao_circuit`].
pub fn gmw_transcripts() -> Vec<(String, Vec<u8>)> {
    let (ca, cb) = MemoryChannel::pair();
    let (got_a, got_b) = (Arc::default(), Arc::default());
    let mut ra = Recorder {
        inner: timed(ca),
        received: Arc::clone(&got_a),
    };
    let mut rb = Recorder {
        inner: timed(cb),
        received: Arc::clone(&got_b),
    };
    let visibility = vec![Visibility::Both; yao_circuit().layout.output_widths.len()];
    std::thread::scope(|s| {
        let a = s.spawn(|| {
            run_gmw(
                &mut ra,
                yao_circuit(),
                &YAO_OWNERS,
                &visibility,
                Party::A,
                &yao_input(Party::A),
                &gmw_config(),
                &mut |_| {},
            )
        });
        run_gmw(
            &mut rb,
            yao_circuit(),
            &YAO_OWNERS,
            &visibility,
            Party::B,
            &yao_input(Party::B),
            &gmw_config(),
            &mut |_| {},
        )
        .expect("an honest party B succeeds");
        a.join()
            .expect("party A's thread does not panic")
            .expect("an honest party A succeeds");
    });
    let seed = |party: u8, received: Vec<u8>| [vec![party], received].concat();
    vec![
        ("A".to_string(), seed(0, take(&got_a))),
        ("B".to_string(), seed(1, take(&got_b))),
    ]
}

/// Makes this thread's "OS entropy" the fixed stream of `party` (`None`: the real entropy
/// again), in fuzzing builds (`--cfg fuzzing`) only; elsewhere it does nothing. The newer
/// protocol targets record their seeds and run their inputs this way, so that a recorded
/// peer's messages pass the checks that depend on this party's random choices (the OT
/// extension's check coin, the cut-and-choose check set, the equality test), and a fuzz
/// input runs the same way every time (see `pgc_crypto::prg::fuzzing`).
pub fn replay_entropy(party: Option<Party>) {
    #[cfg(fuzzing)]
    pgc_crypto::prg::fuzzing::replay_entropy(party.map(|p| 0xA0 + p as u64));
    #[cfg(not(fuzzing))]
    let _ = party;
}

/// An honest in-memory run of two parties, A on a thread of its own, each with its fixed
/// entropy ([`replay_entropy`]); what each received: `(A's, B's)`.
pub(crate) fn record_pair(
    run_a: impl FnOnce(&mut dyn Channel) -> Result<Outcome, ProtocolError> + Send,
    run_b: impl FnOnce(&mut dyn Channel) -> Result<Outcome, ProtocolError>,
) -> (Vec<u8>, Vec<u8>) {
    let (ca, cb) = MemoryChannel::pair();
    let (got_a, got_b) = (Arc::default(), Arc::default());
    let mut ra = Recorder {
        inner: timed(ca),
        received: Arc::clone(&got_a),
    };
    let mut rb = Recorder {
        inner: timed(cb),
        received: Arc::clone(&got_b),
    };
    std::thread::scope(|s| {
        let a = s.spawn(|| {
            replay_entropy(Some(Party::A));
            let result = run_a(&mut ra);
            replay_entropy(None);
            result
        });
        replay_entropy(Some(Party::B));
        let b = run_b(&mut rb);
        replay_entropy(None);
        b.unwrap_or_else(|e| panic!("an honest party B fails: {e}"));
        a.join()
            .expect("party A's thread does not panic")
            .unwrap_or_else(|e| panic!("an honest party A fails: {e}"));
    });
    (take(&got_a), take(&got_b))
}

fn timed(mut ch: MemoryChannel) -> MemoryChannel {
    ch.set_timeout(Some(Duration::from_secs(20)));
    ch
}

fn take(buf: &Arc<Mutex<Vec<u8>>>) -> Vec<u8> {
    std::mem::take(&mut *buf.lock().expect("not poisoned"))
}

/// The fixed circuit of the parallel target: A's two 4-bit values, B's two; a region of
/// two products, their sum (an output), then a region of two sums and their minimum (an
/// output), so that every mode has regions and sequential parts to split.
pub fn parallel_circuit() -> &'static ParallelCircuit {
    static CIRCUIT: OnceLock<ParallelCircuit> = OnceLock::new();
    CIRCUIT.get_or_init(|| {
        let (n, w) = (2, 4);
        let mut g = NetBuilder::new(OptimizeFor::Size);
        let a: Vec<_> = (0..n).map(|_| g.input(w)).collect();
        let b: Vec<_> = (0..n).map(|_| g.input(w)).collect();
        g.begin_region(1);
        let mut products = Vec::new();
        for i in 0..n {
            if i > 0 {
                g.next_instance();
            }
            products.push(mul(&mut g, &a[i], &b[i]));
        }
        assert!(g.end_region());
        let dot = add(&mut g, &products[0], &products[1]);
        g.output(&dot);
        g.begin_region(2);
        let mut sums = Vec::new();
        for i in 0..n {
            if i > 0 {
                g.next_instance();
            }
            sums.push(add(&mut g, &a[i], &b[i]));
        }
        assert!(g.end_region());
        let lt = lt_unsigned(&mut g, &sums[0], &sums[1]);
        let min = mux_word(&mut g, lt, &sums[0], &sums[1]);
        g.output(&min);
        let prepared = g.prepare().expect("the fixed circuit is well formed");
        let spans = prepared.region_spans().to_vec();
        let (c, _) = prepared
            .into_circuit()
            .expect("the fixed circuit is well formed");
        ParallelCircuit::from_flat(&c, &spans).expect("the fixed circuit has valid regions")
    })
}

const PARALLEL_OWNERS: [Party; 4] = [Party::A, Party::A, Party::B, Party::B];
const PARALLEL_MODES: [ParallelMode; 5] = [
    ParallelMode::None,
    ParallelMode::Fgp,
    ParallelMode::Cgp,
    ParallelMode::Ipp,
    ParallelMode::Auto,
];

fn parallel_input(party: Party) -> Vec<Vec<bool>> {
    let values: [u8; 2] = if party == Party::A { [5, 11] } else { [9, 3] };
    values
        .iter()
        .map(|v| (0..4).map(|i| v >> i & 1 == 1).collect())
        .collect()
}

/// How a [`parallel_peer`] input starts: the party, mode and thread count the honest party
/// runs with, in one byte.
fn parallel_setup(byte: u8) -> (Party, ParallelConfig) {
    let party = if byte & 1 == 0 { Party::A } else { Party::B };
    let config = ParallelConfig {
        mode: PARALLEL_MODES[(byte >> 1 & 7) as usize % PARALLEL_MODES.len()],
        threads: 1 + (byte >> 4 & 1) as usize,
        tau: 2,
    };
    (party, config)
}

/// One party of the parallel protocol against a scripted peer: the mode agreement, the
/// input phase, the stream token, the worker streams' table frames (and under IPP the
/// role-transfer OTs) and the outputs.
///
/// Input: one setup byte (bit 0: the honest party is A or B; bits 1-3: the mode, in
/// [`ParallelMode`]'s order modulo 5; bit 4: 1 or 2 threads), then the peer's bytes on the
/// main connection, then on each worker stream in order, each as a u16 little-endian
/// length and that many bytes (a missing or short part is what it is: the stream ends).
pub fn parallel_peer(data: &[u8]) {
    let _ = parallel_peer_run(data);
}

/// [`parallel_peer`]'s run, with its result (`None` for an empty input).
pub fn parallel_peer_run(data: &[u8]) -> Option<Result<Outcome, ProtocolError>> {
    let (&setup, rest) = data.split_first()?;
    let (party, config) = parallel_setup(setup);
    let mut parts = split_parts(rest);
    let main = if parts.is_empty() {
        Vec::new()
    } else {
        parts.remove(0)
    };
    let mut ch = ScriptChannel::new(&main);
    let mut streams = ScriptedStreams { scripts: parts };
    let pc = parallel_circuit();
    let visibility = vec![Visibility::Both; pc.layout.output_widths.len()];
    Some(run_parallel(
        party,
        &mut ch,
        &mut streams,
        pc,
        &PARALLEL_OWNERS,
        &visibility,
        &parallel_input(party),
        &config,
        &AtomicU64::new(0),
    ))
}

/// Splits `bytes` into parts, each a u16 little-endian length and that many bytes (the last
/// part takes what is left if it is short).
fn split_parts(mut bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut parts = Vec::new();
    while bytes.len() >= 2 {
        let len = u16::from_le_bytes([bytes[0], bytes[1]]) as usize;
        let body = &bytes[2..];
        let take = len.min(body.len());
        parts.push(body[..take].to_vec());
        bytes = &body[take..];
    }
    parts
}

/// Joins parts as [`split_parts`] reads them (each at most 65535 bytes: longer ones are cut,
/// which keeps seeds small).
fn join_parts(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        let len = p.len().min(u16::MAX as usize);
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.extend_from_slice(&p[..len]);
    }
    out
}

/// Seeds for [`parallel_peer`]: for every mode and thread count, what each party received
/// in an honest run, prefixed by the setup byte that runs that party. Named
/// `MODE-tTHREADS-PARTY`.
pub fn parallel_transcripts() -> Vec<(String, Vec<u8>)> {
    let mut seeds = Vec::new();
    for (m, mode) in PARALLEL_MODES.iter().enumerate() {
        for threads in [1usize, 2] {
            let config = ParallelConfig {
                mode: *mode,
                threads,
                tau: 2,
            };
            let [a, b] = parallel_run_recorded(&config);
            for (party, (main, streams)) in [(Party::A, a), (Party::B, b)] {
                let setup = (party == Party::B) as u8 | (m as u8) << 1 | ((threads - 1) as u8) << 4;
                assert_eq!(parallel_setup(setup), (party, config));
                let mut parts = vec![main];
                parts.extend(streams);
                let mut seed = vec![setup];
                seed.extend(join_parts(&parts));
                seeds.push((
                    format!("{}-t{threads}-{}", mode.name(), party.letter()),
                    seed,
                ));
            }
        }
    }
    seeds
}

/// An honest in-memory run; per party, what it received on the main connection and on each
/// worker stream.
fn parallel_run_recorded(config: &ParallelConfig) -> [(Vec<u8>, Vec<Vec<u8>>); 2] {
    let pc = parallel_circuit();
    let visibility = vec![Visibility::Both; pc.layout.output_widths.len()];
    let (ca, cb) = MemoryChannel::pair();
    let (oa, ob) = MemoryStreams::pair(Duration::from_secs(20));
    let mut recorded = [(); 2].map(|()| {
        (
            Arc::new(Mutex::new(Vec::new())),
            Arc::new(Mutex::new(Vec::new())),
        )
    });
    let mut ends: Vec<_> = [(ca, oa), (cb, ob)]
        .into_iter()
        .zip(&recorded)
        .map(|((ch, opener), (main, streams))| {
            (
                Recorder {
                    inner: timed(ch),
                    received: Arc::clone(main),
                },
                RecordingStreams {
                    inner: opener,
                    received: Arc::clone(streams),
                },
            )
        })
        .collect();
    let (b_end, a_end) = (ends.pop().expect("two ends"), ends.pop().expect("two ends"));
    let run = |party: Party, (mut ch, mut opener): (Recorder<MemoryChannel>, _)| {
        run_parallel(
            party,
            &mut ch as &mut dyn Channel,
            &mut opener,
            pc,
            &PARALLEL_OWNERS,
            &visibility,
            &parallel_input(party),
            config,
            &AtomicU64::new(0),
        )
    };
    std::thread::scope(|s| {
        let a = s.spawn(move || run(Party::A, a_end));
        run(Party::B, b_end).expect("an honest party B succeeds");
        a.join()
            .expect("party A's thread does not panic")
            .expect("an honest party A succeeds");
    });
    recorded.each_mut().map(|(main, streams)| {
        let streams = streams
            .lock()
            .expect("not poisoned")
            .iter()
            .map(take)
            .collect();
        (take(main), streams)
    })
}
