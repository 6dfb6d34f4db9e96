//! Access to the shared test circuits and their known-answer vectors
//! (`shared/circuits/vectors.json`), for the tests of every pgc crate.
//!
//! These helpers panic with a clear message when the data is missing or malformed: tests
//! that depend on it must fail, not silently skip.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::bristol::Format;
use crate::value::BitOrder;

/// Environment variable that overrides the location of the shared circuits directory.
pub const SHARED_CIRCUITS_ENV: &str = "PGC_SHARED_CIRCUITS";

/// The directory holding `vectors.json` and the circuit files: `$PGC_SHARED_CIRCUITS` if
/// set, else `shared/circuits` next to the workspace (`<this crate>/../../../shared/circuits`).
///
/// # Panics
/// If the directory does not exist.
pub fn shared_circuits_dir() -> PathBuf {
    let dir = match std::env::var_os(SHARED_CIRCUITS_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/circuits"),
    };
    let dir = dir.canonicalize().unwrap_or_else(|e| {
        panic!(
            "shared circuits directory {} is missing ({e}); set {SHARED_CIRCUITS_ENV} to the \
             directory that holds vectors.json",
            dir.display()
        )
    });
    assert!(
        dir.join("vectors.json").is_file(),
        "{} has no vectors.json; set {SHARED_CIRCUITS_ENV} to the shared circuits directory",
        dir.display()
    );
    dir
}

/// One known-answer vector: input and output values as `0x` hex strings, one per value.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct Vector {
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    #[serde(default)]
    pub note: String,
}

/// A circuit file of the shared set with its header facts and vectors.
#[derive(Clone, Debug)]
pub struct VectorFile {
    /// Absolute path of the circuit file.
    pub path: PathBuf,
    /// Path relative to the shared directory, e.g. `bristol_fashion/adder64.txt`.
    pub rel: String,
    pub format: Format,
    /// Whether the file uses MAND gates (`bristol_fashion_extended`).
    pub extended: bool,
    pub bit_order: BitOrder,
    pub gates: u64,
    pub wires: u32,
    pub input_widths: Vec<u32>,
    pub output_widths: Vec<u32>,
    pub and_count: u64,
    pub and_depth: u32,
    pub vectors: Vec<Vector>,
}

#[derive(serde::Deserialize)]
struct RawFile {
    circuits: BTreeMap<String, RawCircuit>,
}

#[derive(serde::Deserialize)]
struct RawCircuit {
    format: String,
    bit_order: String,
    header: RawHeader,
    and_count: u64,
    and_depth: u32,
    vectors: Vec<Vector>,
}

#[derive(serde::Deserialize)]
struct RawHeader {
    gates: u64,
    wires: u32,
    input_widths: Vec<u32>,
    output_widths: Vec<u32>,
}

/// Loads every circuit entry of `vectors.json`, sorted by relative path.
///
/// # Panics
/// If the file is missing or does not match the expected schema.
pub fn load_vectors() -> Vec<VectorFile> {
    let dir = shared_circuits_dir();
    let json_path = dir.join("vectors.json");
    let text = std::fs::read_to_string(&json_path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", json_path.display()));
    let raw: RawFile = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} does not match the schema: {e}", json_path.display()));
    raw.circuits
        .into_iter()
        .map(|(rel, c)| {
            let (format, extended) = match c.format.as_str() {
                "bristol_fashion" => (Format::BristolFashion, false),
                "bristol_fashion_extended" => (Format::BristolFashion, true),
                "bristol" => (Format::Bristol, false),
                other => panic!("{rel}: unknown format '{other}' in vectors.json"),
            };
            let bit_order = c.bit_order.parse().unwrap_or_else(|e| panic!("{rel}: {e}"));
            VectorFile {
                path: dir.join(&rel),
                rel,
                format,
                extended,
                bit_order,
                gates: c.header.gates,
                wires: c.header.wires,
                input_widths: c.header.input_widths,
                output_widths: c.header.output_widths,
                and_count: c.and_count,
                and_depth: c.and_depth,
                vectors: c.vectors,
            }
        })
        .collect()
}

/// The entry of [`load_vectors`] whose relative path is `rel`.
///
/// # Panics
/// If there is none.
pub fn vector_file(rel: &str) -> VectorFile {
    load_vectors()
        .into_iter()
        .find(|f| f.rel == rel)
        .unwrap_or_else(|| panic!("vectors.json has no entry {rel}"))
}

/// Checks what every reader of pgc's binary format must do with a cut file: the cut at
/// byte `n` is reported as `NotPgc` (inside the magic) or `Truncated` at offset `n`, and
/// one extra byte after the final checksum is refused by name.
///
/// # Panics
/// When a reader does anything else.
pub fn assert_truncations_are_clear<T>(
    bytes: &[u8],
    read: impl Fn(&[u8]) -> Result<T, crate::PgcFileError>,
) {
    use crate::pgcfile::PgcErrorKind;
    for cut in 0..bytes.len() {
        let Err(e) = read(&bytes[..cut]) else {
            panic!("a file cut at byte {cut} was accepted");
        };
        match e.kind {
            PgcErrorKind::NotPgc => assert!(cut < 8, "cut at {cut}: not a pgc file?"),
            PgcErrorKind::Truncated { offset, .. } => assert_eq!(offset, cut as u64),
            ref k => panic!("cut at {cut}: {k}"),
        }
    }
    let mut longer = bytes.to_vec();
    longer.push(7);
    let Err(e) = read(&longer) else {
        panic!("a byte after the final checksum was accepted");
    };
    assert_eq!(
        e.to_string(),
        format!(
            "byte {}: unexpected data after the final checksum",
            bytes.len()
        )
    );
}

/// Checks what every reader of pgc's binary format must do with corrupted bytes: each byte
/// XORed with `per_byte` non-zero values from `flip` (low bit forced) is refused without a
/// panic, as `NotPgc` inside the magic, `UnsupportedVersion` inside the version, a
/// `Malformed` error whose text starts with its offset, a checksum, truncation or interface
/// error, or any kind `also_fine` accepts.
///
/// # Panics
/// When a corrupted file is accepted or refused any other way.
pub fn assert_byte_flips_are_detected<T>(
    bytes: &[u8],
    per_byte: usize,
    mut flip: impl FnMut() -> u8,
    read: impl Fn(&[u8]) -> Result<T, crate::PgcFileError>,
    also_fine: impl Fn(&crate::pgcfile::PgcErrorKind) -> bool,
) {
    use crate::pgcfile::PgcErrorKind;
    for i in 0..bytes.len() {
        for _ in 0..per_byte {
            let mut v = bytes.to_vec();
            v[i] ^= flip() | 1;
            let Err(e) = read(&v) else {
                panic!("a flip at byte {i} went undetected");
            };
            let text = e.to_string();
            match e.kind {
                PgcErrorKind::NotPgc => assert!(i < 8),
                PgcErrorKind::UnsupportedVersion { .. } => assert!((8..12).contains(&i)),
                PgcErrorKind::Malformed { offset, .. } => {
                    assert!(text.starts_with(&format!("byte {offset}: ")), "{text}")
                }
                PgcErrorKind::Checksum { .. }
                | PgcErrorKind::Truncated { .. }
                | PgcErrorKind::Interface(_) => {}
                ref k if also_fine(k) => {}
                ref k => panic!("flip at {i}: unexpected {k}"),
            }
        }
    }
}
