//! pgc's own binary circuit format (`.pgc`): a circuit with its typed [`Interface`], compact,
//! versioned and checksummed, readable as a stream.
//!
//! # Format, version 1
//!
//! All integers are little-endian. Offsets are from the start of the file.
//!
//! ```text
//! header
//!   0   8 bytes   magic 0x89 'p' 'g' 'c' 0x0D 0x0A 0x1A 0x0A
//!   8   u32       format version = 1
//!  12   u32       flags = 0 (reserved; readers reject other values)
//!  16   u32       L, then L bytes: the layout
//!       u32       J, then J bytes: the interface as UTF-8 JSON
//!       32 bytes  BLAKE3 of every header byte before this field
//! gate blocks, each
//!       u32       n: gates in the block, 1 ..= 65536
//!       u32       m: bytes of gate records that follow, n ..= 16·n
//!       m bytes   n gate records
//! end
//!       u32 0, u32 0   (a block with no gates ends the list)
//!       u64       total gate count (the sum of all n)
//!       u64       total AND gate count
//!       32 bytes  BLAKE3 of every byte of the file before this field
//! ```
//! Nothing may follow the final checksum.
//!
//! **Layout** (`L` bytes; [`Layout::to_bytes`]): `u32 num_wires`, `u32 k`, `k × u32` input
//! widths, `u32 o`, `o × u32` output widths, then `sum(output widths) × u32` output wires.
//! `L` must be exactly the size these fields need.
//!
//! **Interface** (`J` bytes): the JSON form of [`Interface`] as serde writes it, e.g.
//! ```json
//! {"inputs":[{"name":"INPUT_A_x","owner":"A","ctype":{"Int":{"bits":32,"signed":true}}},
//!            {"name":"INPUT_B_v","owner":"B","ctype":{"Array":{"elem":"Bool","len":4}}}],
//!  "outputs":[{"name":"OUTPUT_r","visibility":"Both",
//!              "ctype":{"Struct":{"name":"pt","fields":[["x",{"Int":{"bits":8,"signed":false}}]]}}}]}
//! ```
//! `owner` is `"A"` or `"B"`; `visibility` is `"Both"`, `"A"` or `"B"`; a `ctype` is `"Bool"`
//! or one of `{"Int":{"bits","signed"}}`, `{"Float":{"bits"}}` (32: `float`, 64: `double`),
//! `{"Array":{"elem","len"}}`, `{"Struct":{"name","fields":[[name, ctype], …]}}`. (`Float`
//! came later than the format's version 1; a reader that predates it refuses such a file
//! with an error naming the unknown variant, so the version did not change.) Plain `char`
//! is `{"Int":{"bits":8,"signed":true,"char":true}}`; `"char"` is written only when true
//! (it came later still: files without it read as before, every other integer is written
//! as before, and a reader that predates it ignores it and takes the port for `int8_t`; a
//! `"char"` on any other integer is refused). Port `i` describes layout value `i`
//! and must have its width. An interface with no ports at all (`{"inputs":[],"outputs":[]}`)
//! means an untyped circuit (e.g. converted from Bristol).
//!
//! **Gate records.** Each block decodes on its own: a cursor `next` starts at 0 at every
//! block and becomes `out + 1` after each gate. A record is a tag byte, then unsigned LEB128
//! varints (7 bits per byte, low groups first, high bit = more; at most 5 bytes) holding
//! zigzag-encoded signed differences (`zz(d) = 2d` for `d ≥ 0`, `−2d − 1` for `d < 0`):
//! ```text
//! tag   bits 0-2: operation 0 XOR, 1 AND, 2 INV, 3 EQW (copy), 4 EQ (constant)
//!       bit 3:    1 if out = next (then no out field follows)
//!       bit 4:    the constant's value (EQ only; 0 for other operations)
//!       bits 5-7: 0
//! [zz(out − next)]          unless bit 3 is set
//! zz(out − a), zz(out − b)  XOR and AND
//! zz(out − a)               INV and EQW
//!                           (nothing for EQ)
//! ```
//! Every wire decoded must be `< num_wires`. The gates are the circuit's gates in order, with
//! [`Gate`]'s meaning (for EQ, `a` is the constant and `b` is 0; for INV and EQW `b` is 0).
//! In compiler output most gates write the next wire and read recent ones, so a record is
//! usually 3 to 6 bytes (a Bristol-style text line takes 10 to 30).
//!
//! # Format, version 2: circuits with parallel regions
//!
//! A [`ParallelCircuit`] keeps each parallel region as its instances' wire maps over shared
//! *templates*: a template's gates are stored once however many instances run it. Version 2
//! reuses version 1's header, gate blocks and gate records.
//!
//! ```text
//! header      as version 1 with format version = 2; the layout is the parallel circuit's
//!             global layout (inputs, then every wire a sequential gate or an instance
//!             output sets; instance-internal wires are not counted)
//! templates
//!       u32       T: number of templates
//!       T times
//!         u32     num_inputs: the template's inputs are its wires 0 .. num_inputs
//!         u32     G: gates (gate k writes wire num_inputs + k); num_inputs + G < 2^32
//!         u32     P: outputs, at most G
//!         gate blocks as in version 1 holding exactly the G gates, no end marker
//!         u32     m, then m bytes (P ..= 5·P): P varints zz(w − c), the output wires in
//!                 order; the cursor c starts at num_inputs and becomes w + 1 after each
//! phases, in order, each starting with a u8 kind
//!   0 sequential  gate blocks on global wires as in version 1, then u32 0, u32 0
//!   1 region      u32 source line, u32 N: instances (at least 1), then instance blocks
//!                 until N instances are read, each
//!       u32       n: instances in the block, 1 ..= min(65536, instances left)
//!       u32       m: bytes of instance records that follow, at least n
//!       m bytes   n instance records
//!   2 end of the phases
//! end
//!       u64       total gate count of the flattened circuit (sequential gates plus, for
//!                 every instance, its template's gates)
//!       u64       total AND gate count of the flattened circuit
//!       32 bytes  BLAKE3 of every byte of the file before this field
//! ```
//! Nothing may follow the final checksum.
//!
//! **Template gates** use version 1's records, with wires numbered inside the template
//! (range `0 .. num_inputs + G`); gate `k` must write `num_inputs + k` and read only lower
//! wires, so after each block's first gate every record has bit 3 set and is about 3 bytes.
//! Template outputs are distinct gate wires (never inputs).
//!
//! **Instance records.** Two decoding states live for one region (across its blocks): the
//! output cursor `next_out`, starting at 0, and, per template, the input wires of the last
//! instance of the region that ran it and their *stride* (that instance's inputs minus those
//! of the one before it with the same template; all 0 after the template's first instance).
//! A record is varints (as in gate records):
//! ```text
//! 2·t + o          t: template index (< T); o = 1: the outputs are next_out, next_out+1, …
//! zz(in_j − p_j)   for each input j of the template, where the prediction p_j is
//!                  last_j + stride_j if the region already ran template t, otherwise
//!                  in_(j−1) + 1 (p_0 = 0)
//! zz(out_j − next_out)  for each output j, only if o = 0
//! ```
//! `next_out` becomes `out_j + 1` after each output (`next_out + P` when `o = 1`). Instances
//! repeating a stride (`a[i]`, `b[i]` of a loop) cost about one byte per input; outputs in
//! order cost nothing.
//!
//! **Well-formedness** (checked while reading, errors name the byte offset): global wires are
//! in range, read only once set, set exactly once and never inputs; an instance reads only
//! wires set before its region began; every global wire that is not an input is set (so
//! `num_wires` = inputs + wires set); every output wire is set; the flattened circuit has
//! fewer than 2^32 wires; the counts at the end match.
//!
//! # Reading
//! [`PgcReader`] checks the header (magic, version, layout, interface, header checksum) before
//! any gate is read, then hands out gates block by block; the whole-file checksum and the
//! counts are checked when the end is reached. Every malformation is an error naming the byte
//! offset and what is wrong; a truncated file says where it ends. [`read_pgc`] reads a whole
//! file and also [validates](crate::analysis::validate) the circuit.
//!
//! [`read_pgc_parallel`] reads either version as a [`ParallelCircuit`] (a version 1 circuit
//! becomes [`ParallelCircuit::sequential`], which needs it in single-assignment form);
//! [`read_pgc`] reads either version as a plain circuit (version 2 flattened). [`PgcReader`]
//! streams version 1 only: it refuses a version 2 file with an error that says so.
//!
//! [`UnrolledFile`] streams a version 1 or 2 file as a [`GateSource`](crate::GateSource)
//! (version 2 flattened on the fly), re-reading it at every pass, so that an unrolled
//! circuit's gates are never held whole; it yields the layout, counts and fingerprint
//! [`read_pgc`] gives.
//!
//! **Bounds.** Every count is checked against what the rest of the file justifies before
//! memory follows it: a layout (version 1 or 3, and a version 3 template) may declare at
//! most `inputs + 2 × wire writes + 64` wires (see [`MemoryLimit`](crate::MemoryLimit) for
//! what input widths and version 2 flattening may still ask, which is measured against the
//! memory limit before it is allocated); interface widths are computed with checked
//! arithmetic.
//!
//! Version 3 files (compact circuits, below) are read by [`read_pgc_compact`],
//! [`PgcCompactReader`] and [`CompactFile`]; [`read_pgc`], [`read_pgc_parallel`] and
//! [`PgcReader`] refuse them with [`PgcErrorKind::CompactCircuit`], once the header checksum
//! shows that the version field is not a corruption. [`pgc_format_version`] tells which
//! version a file is.
//!
//! # Writing
//! [`write_pgc`] and [`PgcWriter`] write version 1. [`write_pgc_parallel`] writes version 2,
//! or version 1 for a parallel circuit without regions. [`write_pgc_compact`] and
//! [`PgcCompactWriter`] write version 3.
//!
//! # Format, version 3: compact circuits
//!
//! A [`CompactCircuit`](crate::compact::CompactCircuit) stores repeated structure once, as
//! templates that the main body and other templates call (see [`crate::compact`] for the
//! wire conventions). Its main body may hold hundreds of millions of items, so version 3 is
//! written and read as a stream: the templates come first and are held in memory, then the
//! main body follows in blocks that each decode on their own.
//!
//! ```text
//! header      as version 1 with format version = 3; the layout is the main body's
//! templates
//!       u32       T: number of templates
//!       T times
//!         u32     N, then N bytes: the template's name, UTF-8 (N at most 65536)
//!         u32     num_inputs
//!         u32     num_outputs      num_inputs + num_outputs <= num_wires
//!         u32     num_wires
//!         u64     I: items in its body
//!         item blocks holding exactly the I items, no end marker
//! main        item blocks, then u32 0, u32 0 (a block with no items ends the body)
//! end
//!       u64       main item count (the sum of the main blocks' n)
//!       u64       main call count (how many of those items are calls)
//!       32 bytes  BLAKE3 of every byte of the file before this field
//! item block
//!       u32       n: items in the block, 1 ..= 16384 (in a template, at most the items left)
//!       u32       m: bytes of item records that follow, n ..= 2^20 + R, where R, the
//!                 longest record the body can hold, is the largest 6 + 5·(num_inputs +
//!                 num_outputs) among the templates the body may call, and at least 16
//!       m bytes   n item records
//! ```
//! Nothing may follow the final checksum. The expanded gate and AND counts are not stored:
//! readers compute them from the templates (a writer streaming the main body does not know
//! them cheaply).
//!
//! **Item records.** Each block decodes on its own: a cursor `next` starts at 0 at every
//! block, and so does "the previous call's template". A record starts with a tag byte whose
//! bits 0-2 are a code: 0 to 4 are the gates of version 1 (the record is a version 1 gate
//! record with the same cursor, and `next` becomes `out + 1`), 5 is a call:
//! ```text
//! tag   bits 0-2: 5
//!       bit 3:    the outputs are next, next + 1, … (no output pieces follow)
//!       bit 4:    the template is the previous call's in this block (no template field)
//!       bits 5-7: 0
//! [varint t]                    the called template, unless bit 4 is set
//! pieces for num_inputs wires   the inputs, the piece cursor c starting at next
//! [pieces for num_outputs wires]  the outputs, unless bit 3 is set; c starts at next again
//! ```
//! A *piece* is a run of consecutive wires: a varint `h = 2·zz(start − c) + r`, then, if
//! `r = 1`, a varint `len − 2` (`2 <= len <= 64`; `len = 1` when `r = 0`); the piece is the
//! wires `start .. start + len`, and `c` becomes `start + len`. A list's pieces hold exactly
//! its count of wires. After a call with outputs, `next` is its last output + 1. A call
//! whose 64 inputs are 4 runs of 16 wires costs about 13 bytes when its 16 outputs follow
//! the previous item's, about 16 when they are a reused block of slots elsewhere.
//!
//! **Well-formedness** (checked while reading, errors name the byte offset, the body and the
//! item): every wire is below its body's `num_wires` (main: the layout's); template `t`
//! calls only templates `0 .. t`, the main body any template; a template body never writes
//! its input wires (`0 .. num_inputs`); a call's outputs are distinct from each other and
//! from its inputs; the layout's output wires are in range; the counts at the end match.
//! Which wires are set before they are read is not checked here (it needs the expansion).
//!
//! **Memory.** No count is trusted for an allocation: bytes are read in pieces as the file
//! delivers them, and runs are at most 64 wires long, so what a reader holds is at most a
//! small multiple of the bytes it has read. The templates are held whole; of the main body,
//! one block at a time.

mod compact_file;
mod compact_source;
mod unrolled_source;

pub use compact_file::{
    MAX_BLOCK_ITEMS, PgcCompactReader, PgcCompactWriter, patch_compact_layout, read_pgc_compact,
    read_pgc_compact_from, write_pgc_compact, write_pgc_compact_file,
};
pub use compact_source::CompactFile;
pub use unrolled_source::{RegionSummary, StreamedStats, UnrolledFile};

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::analysis::{CircuitError, validate};
use crate::compact::CompactError;
use crate::ir::{Circuit, Gate, Layout, Op, WireId};
use crate::limits::{MemoryError, MemoryNeed};
use crate::parallel::{Instance, ParallelCircuit, ParallelError, Phase, Region, Template};
use crate::ports::Interface;
use crate::typed::{InterfaceMismatch, check_interface};

/// Bytes of a file-backed source checked with one hash before any of them is decoded in a
/// pass (smaller in tests, so that small files have several).
const SEGMENT_BYTES: u64 = if cfg!(test) { 1 << 12 } else { 1 << 20 };

/// A stretch of a file as it was when it was opened.
#[derive(Clone, Debug)]
struct Segment {
    bytes: u64,
    hash: [u8; 32],
}

/// Records a BLAKE3 hash of every stretch of a file while it is read once at open; each
/// source decides where a stretch ends (the compact file at block boundaries, the unrolled
/// one at [`SEGMENT_BYTES`] exactly).
#[derive(Default)]
struct SegmentHashes {
    segments: Vec<Segment>,
    hasher: blake3::Hasher,
    /// Bytes in the open stretch.
    bytes: u64,
}

impl SegmentHashes {
    fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.bytes += bytes.len() as u64;
    }

    /// Ends the open stretch, if it holds anything.
    fn close(&mut self) {
        if self.bytes > 0 {
            self.segments.push(Segment {
                bytes: self.bytes,
                hash: *self.hasher.finalize().as_bytes(),
            });
            self.hasher.reset();
            self.bytes = 0;
        }
    }
}

/// Why the last pass over a file-backed gate source stopped short, kept for the caller: a
/// [`GateSource`](crate::GateSource) pass cannot return a file error itself (its error type
/// is the consumer's), so it hands out fewer gates and records the cause here, and the
/// protocol asks [`check`](LastPassError::check) before revealing any output.
#[derive(Debug, Default)]
pub(crate) struct LastPassError(std::sync::Mutex<Option<PgcFileError>>);

impl LastPassError {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<PgcFileError>> {
        // A panic while holding the lock leaves a plain Option behind: keep using it.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
    /// At the start of a pass: each pass reports only its own failure.
    pub(crate) fn clear(&self) {
        *self.slot() = None;
    }
    pub(crate) fn set(&self, e: PgcFileError) {
        *self.slot() = Some(e);
    }
    pub(crate) fn take(&self) -> Option<PgcFileError> {
        self.slot().take()
    }
    /// The recorded failure as text, without clearing it.
    pub(crate) fn check(&self) -> Result<(), String> {
        match &*self.slot() {
            Some(e) => Err(e.to_string()),
            None => Ok(()),
        }
    }
}

/// The first 8 bytes of every `.pgc` file (PNG-style: non-ASCII first byte, CR LF, ^Z, LF
/// catch text-mode transfers).
pub const PGC_MAGIC: [u8; 8] = [0x89, b'p', b'g', b'c', 0x0d, 0x0a, 0x1a, 0x0a];
/// The format version of a plain circuit's file (what [`write_pgc`] and [`PgcWriter`] write).
pub const PGC_FORMAT_VERSION: u32 = 1;
/// The format version of a file holding a [`ParallelCircuit`] with regions.
pub const PGC_PARALLEL_FORMAT_VERSION: u32 = 2;
/// The format version of a file holding a [`CompactCircuit`](crate::compact::CompactCircuit).
pub const PGC_COMPACT_FORMAT_VERSION: u32 = 3;
/// Most gates in one block.
pub const MAX_BLOCK_GATES: u32 = 1 << 16;
/// Longest gate record: tag + three 5-byte varints.
const MAX_RECORD_BYTES: u32 = 16;
/// Longest varint (a zigzagged difference of two `u32`s needs 33 bits).
const MAX_VARINT_BYTES: usize = 5;

const TAG_OUT_IS_NEXT: u8 = 1 << 3;
const TAG_CONST_ONE: u8 = 1 << 4;
const TAG_RESERVED: u8 = 0b1110_0000;

/// Phase kinds of a version 2 file.
const PHASE_SEQUENTIAL: u8 = 0;
const PHASE_REGION: u8 = 1;
const PHASE_END: u8 = 2;
/// Most instances in one instance block.
const MAX_BLOCK_INSTANCES: u32 = 1 << 16;
/// The writer closes an instance block once its records reach this size.
const INSTANCE_BLOCK_TARGET_BYTES: usize = 1 << 20;
/// The layout's bytes start after magic, version, flags and the layout length.
const LAYOUT_OFFSET: u64 = 20;

/// Reading or writing a `.pgc` file failed; displays as `PATH: what is wrong`.
#[derive(Debug, thiserror::Error)]
#[error("{}{kind}", .path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
pub struct PgcFileError {
    /// The file, when known.
    pub path: Option<PathBuf>,
    pub kind: PgcErrorKind,
}

/// What is wrong with a `.pgc` file.
#[derive(Debug, thiserror::Error)]
pub enum PgcErrorKind {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("not a pgc circuit file (it does not start with the pgc magic bytes)")]
    NotPgc,
    #[error(
        "pgc circuit format version {found}; this build reads versions {PGC_FORMAT_VERSION} \
         to {PGC_COMPACT_FORMAT_VERSION} (recompile the program, or use a matching pgc)"
    )]
    UnsupportedVersion { found: u32 },
    #[error("the file ends at byte {offset}, inside {what} (truncated?)")]
    Truncated { offset: u64, what: String },
    #[error("byte {offset}: {what}")]
    Malformed { offset: u64, what: String },
    #[error("the checksum of {what} (bytes 0..{offset}) does not match: the file is corrupted")]
    Checksum { offset: u64, what: &'static str },
    #[error("the circuit is invalid: {0}")]
    InvalidCircuit(#[from] CircuitError),
    #[error("the interface does not match the circuit: {0}")]
    Interface(#[from] InterfaceMismatch),
    #[error(
        "this file (format version {PGC_PARALLEL_FORMAT_VERSION}) holds a circuit with parallel \
         regions, which the streaming reader does not read; use read_pgc_parallel or read_pgc"
    )]
    ParallelNotStreamable,
    #[error("the parallel circuit is invalid: {0}")]
    InvalidParallel(#[from] ParallelError),
    #[error(
        "this file (format version {PGC_COMPACT_FORMAT_VERSION}) holds a compact circuit \
         (templates expanded while garbling), which this reader does not read; load it with \
         read_pgc_compact or CompactFile (a compact circuit runs only sequentially)"
    )]
    CompactCircuit,
    #[error(
        "this file holds a {} (format version {version}), not a compact circuit (format \
         version {PGC_COMPACT_FORMAT_VERSION}); load it with {}",
        if *.version == PGC_FORMAT_VERSION { "plain circuit" } else { "parallel circuit" },
        if *.version == PGC_FORMAT_VERSION { "read_pgc or PgcReader" } else { "read_pgc_parallel" }
    )]
    NotCompact { version: u32 },
    #[error("the compact circuit is invalid: {0}")]
    InvalidCompact(#[from] CompactError),
    #[error("cannot write the compact circuit: {0}")]
    CompactWrite(String),
    #[error("the file changed since it was opened ({0}); open it again")]
    ChangedSinceOpened(String),
    #[error("{0}")]
    Memory(Box<MemoryError>),
}

impl From<MemoryError> for PgcErrorKind {
    fn from(e: MemoryError) -> Self {
        PgcErrorKind::Memory(Box::new(e))
    }
}

impl PgcErrorKind {
    fn at(self, path: Option<&Path>) -> PgcFileError {
        PgcFileError {
            path: path.map(Path::to_path_buf),
            kind: self,
        }
    }
}

impl From<PgcErrorKind> for PgcFileError {
    fn from(kind: PgcErrorKind) -> Self {
        PgcFileError { path: None, kind }
    }
}

impl From<io::Error> for PgcFileError {
    fn from(e: io::Error) -> Self {
        PgcErrorKind::Io(e).into()
    }
}

/// Whether `bytes` (a file's beginning) start with [`PGC_MAGIC`].
pub fn has_pgc_magic(bytes: &[u8]) -> bool {
    bytes.starts_with(&PGC_MAGIC)
}

/// Whether the file at `path` starts with [`PGC_MAGIC`].
pub fn is_pgc_file(path: impl AsRef<Path>) -> io::Result<bool> {
    let mut head = Vec::with_capacity(PGC_MAGIC.len());
    File::open(path)?
        .take(PGC_MAGIC.len() as u64)
        .read_to_end(&mut head)?;
    Ok(has_pgc_magic(&head))
}

// ---------------------------------------------------------------------------------------
// Writing

/// Writes `circuit` and its `interface` as a `.pgc` file to `writer`.
///
/// The circuit must be [valid](crate::analysis::validate) and the interface must match its
/// layout (or have no ports at all, for an untyped circuit).
pub fn write_pgc<W: Write>(
    writer: W,
    circuit: &Circuit,
    interface: &Interface,
) -> Result<(), PgcFileError> {
    validate(circuit).map_err(PgcErrorKind::from)?;
    let mut w = PgcWriter::new(writer, &circuit.layout, interface)?;
    w.write_gates(&circuit.gates)?;
    w.finish()?;
    Ok(())
}

/// [`write_pgc`] to a new file at `path` (replaced if it exists).
pub fn write_pgc_file(
    path: impl AsRef<Path>,
    circuit: &Circuit,
    interface: &Interface,
) -> Result<(), PgcFileError> {
    write_file(path.as_ref(), |file| {
        write_pgc(&mut *file, circuit, interface)?;
        Ok(())
    })
}

/// Creates (or replaces) the file at `path`, lets `write` fill it, and syncs it; errors
/// name the path.
fn write_file(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<(), PgcFileError>,
) -> Result<(), PgcFileError> {
    let run = || -> Result<(), PgcFileError> {
        let mut file = BufWriter::new(File::create(path)?);
        write(&mut file)?;
        file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(())
    };
    run().map_err(|e| PgcFileError {
        path: Some(path.to_path_buf()),
        kind: e.kind,
    })
}

/// Writes a `.pgc` file gate chunk by gate chunk, for producers that never hold the whole
/// circuit. Each gate's wires are checked against the layout; that gates read only wires
/// set before them is the producer's responsibility (readers check it with
/// [`validate`]).
pub struct PgcWriter<W: Write> {
    out: HashingWriter<W>,
    num_wires: u32,
    block: BlockEncoder,
    gates: u64,
    and_gates: u64,
}

impl<W: Write> PgcWriter<W> {
    /// Writes the header for `layout` and `interface`.
    pub fn new(writer: W, layout: &Layout, interface: &Interface) -> Result<Self, PgcFileError> {
        let out = write_header(writer, PGC_FORMAT_VERSION, layout, interface)?;
        Ok(PgcWriter {
            out,
            num_wires: layout.num_wires,
            block: BlockEncoder::with_capacity(8 * MAX_BLOCK_GATES as usize),
            gates: 0,
            and_gates: 0,
        })
    }

    /// Appends gates (in circuit order).
    pub fn write_gates(&mut self, gates: &[Gate]) -> Result<(), PgcFileError> {
        for g in gates {
            let index = self.gates as usize;
            let range = |wire: WireId| {
                if wire < self.num_wires {
                    Ok(())
                } else {
                    Err(PgcErrorKind::InvalidCircuit(CircuitError::WireOutOfRange {
                        gate: index,
                        wire,
                        num_wires: self.num_wires,
                    }))
                }
            };
            range(g.out)?;
            if g.op == Op::Const && g.a > 1 {
                return Err(PgcErrorKind::InvalidCircuit(CircuitError::ConstNotBit {
                    gate: index,
                    value: g.a,
                })
                .into());
            }
            g.inputs().iter().try_for_each(|&w| range(w))?;
            self.block.push(g);
            self.gates += 1;
            self.and_gates += (g.op == Op::And) as u64;
            if self.block.is_full() {
                self.block.flush(&mut self.out)?;
            }
        }
        Ok(())
    }

    /// Writes the last block, the end marker, the counts and the checksum; returns the
    /// writer (flushed).
    pub fn finish(mut self) -> Result<W, PgcFileError> {
        self.block.flush(&mut self.out)?;
        let mut end = [0u8; 24];
        end[8..16].copy_from_slice(&self.gates.to_le_bytes());
        end[16..24].copy_from_slice(&self.and_gates.to_le_bytes());
        self.out.write_all(&end)?;
        write_final_checksum(self.out)
    }
}

/// Writes the header (through the checksum) and returns the hashing writer for the rest.
fn write_header<W: Write>(
    writer: W,
    version: u32,
    layout: &Layout,
    interface: &Interface,
) -> Result<HashingWriter<W>, PgcFileError> {
    let header = header_bytes(version, layout, interface)?;
    let mut out = HashingWriter {
        inner: writer,
        hasher: blake3::Hasher::new(),
    };
    out.write_all(&header)?;
    let digest = out.digest();
    out.write_all(&digest)?;
    Ok(out)
}

/// The header (before its checksum): magic, version, the layout and interface sections.
fn header_bytes(
    version: u32,
    layout: &Layout,
    interface: &Interface,
) -> Result<Vec<u8>, PgcFileError> {
    if !is_untyped(interface) {
        check_interface(layout, interface).map_err(PgcErrorKind::from)?;
    }
    let layout_bytes = layout.to_bytes();
    let json = serde_json::to_vec(interface).map_err(io::Error::other)?;
    let mut header = Vec::with_capacity(24 + layout_bytes.len() + json.len());
    header.extend_from_slice(&PGC_MAGIC);
    header.extend_from_slice(&version.to_le_bytes());
    header.extend_from_slice(&0u32.to_le_bytes());
    for section in [&layout_bytes, &json] {
        let len = u32::try_from(section.len()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the layout or interface is larger than 4 GiB",
            )
        })?;
        header.extend_from_slice(&len.to_le_bytes());
        header.extend_from_slice(section);
    }
    Ok(header)
}

/// Appends the whole-file checksum and flushes.
fn write_final_checksum<W: Write>(mut out: HashingWriter<W>) -> Result<W, PgcFileError> {
    let digest = out.digest();
    out.write_all(&digest)?;
    out.inner.flush()?;
    Ok(out.inner)
}

/// Encodes gate records into one block at a time (the cursor restarts at every block).
struct BlockEncoder {
    bytes: Vec<u8>,
    gates: u32,
    next: WireId,
}

impl BlockEncoder {
    fn with_capacity(bytes: usize) -> Self {
        BlockEncoder {
            bytes: Vec::with_capacity(bytes),
            gates: 0,
            next: 0,
        }
    }

    fn push(&mut self, g: &Gate) {
        encode_gate_record(g, self.next, &mut self.bytes);
        self.next = g.out.wrapping_add(1);
        self.gates += 1;
    }

    fn is_full(&self) -> bool {
        self.gates == MAX_BLOCK_GATES
    }

    /// Writes the block (if it holds any gate) and starts a new one.
    fn flush<W: Write>(&mut self, out: &mut HashingWriter<W>) -> io::Result<()> {
        if self.gates == 0 {
            return Ok(());
        }
        out.write_all(&self.gates.to_le_bytes())?;
        out.write_all(&(self.bytes.len() as u32).to_le_bytes())?;
        out.write_all(&self.bytes)?;
        self.bytes.clear();
        self.gates = 0;
        self.next = 0;
        Ok(())
    }
}

/// Appends `g`'s gate record for the cursor `next` (see the module documentation).
fn encode_gate_record(g: &Gate, next: WireId, bytes: &mut Vec<u8>) {
    let mut tag = g.op as u8;
    if g.out == next {
        tag |= TAG_OUT_IS_NEXT;
    }
    if g.op == Op::Const && g.a == 1 {
        tag |= TAG_CONST_ONE;
    }
    bytes.push(tag);
    if g.out != next {
        put_varint(bytes, zigzag(g.out as i64 - next as i64));
    }
    if g.op != Op::Const {
        for &w in g.inputs() {
            put_varint(bytes, zigzag(g.out as i64 - w as i64));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Writing version 2 (parallel circuits)

/// Writes `pc` and its `interface` as a `.pgc` file to `writer` and returns the writer
/// (flushed): version 2, or version 1 when `pc` has no regions.
///
/// `pc` is first checked against everything a reader checks (its fields are public, so it
/// may have changed since [`ParallelCircuit::new`]); nothing is written if a check fails.
/// Beyond what [`ParallelCircuit::new`] checks, a circuit with regions must set every
/// global wire that is not an input (as [`ParallelCircuit::from_flat`] builds them), have no
/// empty region, and its templates' outputs must be distinct gate wires. The interface must
/// match the global layout (or have no ports at all).
pub fn write_pgc_parallel<W: Write>(
    writer: W,
    pc: &ParallelCircuit,
    interface: &Interface,
) -> Result<W, PgcFileError> {
    let has_regions = pc.regions().next().is_some();
    let (gates, and_gates) = check_parallel(pc, has_regions).map_err(PgcErrorKind::from)?;
    if !has_regions {
        let mut w = PgcWriter::new(writer, &pc.layout, interface)?;
        for phase in &pc.phases {
            if let Phase::Sequential(g) = phase {
                w.write_gates(g)?;
            }
        }
        return w.finish();
    }
    encode_parallel(writer, pc, interface, gates, and_gates)
}

/// Writes `pc` as version 2 with the given end counts, trusting that it is well formed
/// (and that its counts fit the u32 fields).
fn encode_parallel<W: Write>(
    writer: W,
    pc: &ParallelCircuit,
    interface: &Interface,
    gates: u64,
    and_gates: u64,
) -> Result<W, PgcFileError> {
    let mut out = write_header(writer, PGC_PARALLEL_FORMAT_VERSION, &pc.layout, interface)?;
    out.write_all(&(pc.templates.len() as u32).to_le_bytes())?;
    let mut block = BlockEncoder::with_capacity(1 << 16);
    let mut bytes = Vec::new();
    for tpl in &pc.templates {
        for field in [
            tpl.num_inputs,
            tpl.gates.len() as u32,
            tpl.outputs.len() as u32,
        ] {
            out.write_all(&field.to_le_bytes())?;
        }
        write_gate_blocks(&mut out, &mut block, &tpl.gates)?;
        bytes.clear();
        let mut cursor = tpl.num_inputs as i64;
        for &w in &tpl.outputs {
            put_varint(&mut bytes, zigzag(w as i64 - cursor));
            cursor = w as i64 + 1;
        }
        write_sized(&mut out, &bytes)?;
    }
    for phase in &pc.phases {
        match phase {
            Phase::Sequential(gates) => {
                out.write_all(&[PHASE_SEQUENTIAL])?;
                write_gate_blocks(&mut out, &mut block, gates)?;
                out.write_all(&[0u8; 8])?;
            }
            Phase::Region(region) => {
                out.write_all(&[PHASE_REGION])?;
                out.write_all(&region.line.to_le_bytes())?;
                out.write_all(&(region.instances.len() as u32).to_le_bytes())?;
                let mut codec = InstanceCodec::default();
                let mut in_block = 0u32;
                bytes.clear();
                for (i, inst) in region.instances.iter().enumerate() {
                    codec.encode(inst, &mut bytes);
                    in_block += 1;
                    let last = i + 1 == region.instances.len();
                    if last
                        || in_block == MAX_BLOCK_INSTANCES
                        || bytes.len() >= INSTANCE_BLOCK_TARGET_BYTES
                    {
                        out.write_all(&in_block.to_le_bytes())?;
                        write_sized(&mut out, &bytes)?;
                        bytes.clear();
                        in_block = 0;
                    }
                }
            }
        }
    }
    out.write_all(&[PHASE_END])?;
    out.write_all(&gates.to_le_bytes())?;
    out.write_all(&and_gates.to_le_bytes())?;
    write_final_checksum(out)
}

/// [`write_pgc_parallel`] to a new file at `path` (replaced if it exists).
pub fn write_pgc_parallel_file(
    path: impl AsRef<Path>,
    pc: &ParallelCircuit,
    interface: &Interface,
) -> Result<(), PgcFileError> {
    write_file(path.as_ref(), |file| {
        write_pgc_parallel(&mut *file, pc, interface)?;
        Ok(())
    })
}

/// Writes `gates` as full blocks and a last partial one (no end marker).
fn write_gate_blocks<W: Write>(
    out: &mut HashingWriter<W>,
    block: &mut BlockEncoder,
    gates: &[Gate],
) -> io::Result<()> {
    for g in gates {
        block.push(g);
        if block.is_full() {
            block.flush(out)?;
        }
    }
    block.flush(out)
}

/// Writes `u32 len` and `bytes`.
fn write_sized<W: Write>(out: &mut HashingWriter<W>, bytes: &[u8]) -> io::Result<()> {
    let len = u32::try_from(bytes.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "an instance record or output list is larger than 4 GiB",
        )
    })?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(bytes)
}

/// Checks `pc` as a reader of its version 2 file would (wires in range, set once before
/// they are read, instances independent, outputs set, and with `dense` every global wire
/// set); returns the flattened gate and AND counts.
fn check_parallel(pc: &ParallelCircuit, dense: bool) -> Result<(u64, u64), ParallelError> {
    let malformed = ParallelError::Malformed;
    let layout = &pc.layout;
    let n_in = check_layout(layout).map_err(malformed)?;
    if u32::try_from(pc.templates.len()).is_err() {
        return Err(malformed(format!(
            "{} templates (at most 2^32 - 1)",
            pc.templates.len()
        )));
    }
    let mut template_ands = Vec::with_capacity(pc.templates.len());
    for (t, tpl) in pc.templates.iter().enumerate() {
        check_template(tpl).map_err(|e| malformed(format!("template {t}: {e}")))?;
        template_ands.push(tpl.and_count());
    }
    let mut wires = GlobalWires::new(n_in, layout.num_wires);
    let (mut gates, mut and_gates, mut internal) = (0u64, 0u64, 0u64);
    for (p, phase) in pc.phases.iter().enumerate() {
        match phase {
            Phase::Sequential(seq) => {
                for (k, g) in seq.iter().enumerate() {
                    wires
                        .sequential_gate(g)
                        .map_err(|e| malformed(format!("phase {p}, gate {k}: {e}")))?;
                    and_gates += (g.op == Op::And) as u64;
                }
                gates += seq.len() as u64;
            }
            Phase::Region(region) => {
                let line = region.line;
                if region.instances.is_empty() {
                    return Err(malformed(format!(
                        "phase {p}: the region at line {line} has no instances"
                    )));
                }
                if u32::try_from(region.instances.len()).is_err() {
                    return Err(malformed(format!(
                        "phase {p}: the region at line {line} has more than 2^32 - 1 instances"
                    )));
                }
                for (i, inst) in region.instances.iter().enumerate() {
                    let at = |e: String| {
                        malformed(format!(
                            "phase {p} (region at line {line}), instance {i}: {e}"
                        ))
                    };
                    let t = inst.template as usize;
                    let tpl = pc.templates.get(t).ok_or_else(|| {
                        at(format!(
                            "template {t} of {} does not exist",
                            pc.templates.len()
                        ))
                    })?;
                    if inst.inputs.len() != tpl.num_inputs as usize
                        || inst.outputs.len() != tpl.outputs.len()
                    {
                        return Err(at(format!(
                            "{} inputs and {} outputs, but template {t} has {} and {}",
                            inst.inputs.len(),
                            inst.outputs.len(),
                            tpl.num_inputs,
                            tpl.outputs.len()
                        )));
                    }
                    for &w in &inst.inputs {
                        wires.read_before_region(w).map_err(at)?;
                    }
                    for &w in &inst.outputs {
                        wires.write(w, true).map_err(at)?;
                    }
                    gates += tpl.gates.len() as u64;
                    and_gates += template_ands[t];
                    internal += tpl.gates.len() as u64;
                }
                wires.end_region();
            }
        }
    }
    check_flat_wires(layout.num_wires, internal).map_err(malformed)?;
    wires
        .check_outputs(&layout.output_wires)
        .map_err(malformed)?;
    if dense {
        wires.check_dense().map_err(malformed)?;
    }
    Ok((gates, and_gates))
}

/// Checks the layout's counts; returns the number of input wires.
fn check_layout(layout: &Layout) -> Result<u64, String> {
    let n_in: u64 = layout.input_widths.iter().map(|&w| w as u64).sum();
    if n_in > layout.num_wires as u64 {
        return Err(format!(
            "the layout has {n_in} input wires but only {} wires",
            layout.num_wires
        ));
    }
    let declared: u64 = layout.output_widths.iter().map(|&w| w as u64).sum();
    if layout.output_wires.len() as u64 != declared {
        return Err(format!(
            "the layout lists {} output wires but its output widths add up to {declared}",
            layout.output_wires.len()
        ));
    }
    Ok(n_in)
}

fn check_flat_wires(num_wires: u32, internal: u64) -> Result<(), String> {
    let flat = num_wires as u64 + internal;
    if flat > u32::MAX as u64 {
        return Err(format!(
            "the flattened circuit would have {flat} wires, more than 32-bit ids allow"
        ));
    }
    Ok(())
}

/// A template's gates and outputs, as [`check_template_gate`] and
/// [`check_template_output`] see them.
fn check_template(tpl: &Template) -> Result<(), String> {
    let wires = tpl.num_inputs as u64 + tpl.gates.len() as u64;
    if wires > u32::MAX as u64 {
        return Err(format!(
            "{} inputs and {} gates make more than 2^32 - 1 wires",
            tpl.num_inputs,
            tpl.gates.len()
        ));
    }
    for (k, g) in tpl.gates.iter().enumerate() {
        if g.op == Op::Const && g.a > 1 {
            return Err(format!("gate {k} is a constant {}", g.a));
        }
        check_template_gate(tpl.num_inputs, k as u64, g).map_err(|e| format!("gate {k} {e}"))?;
    }
    let mut seen = Vec::new();
    for (j, &w) in tpl.outputs.iter().enumerate() {
        check_template_output(tpl.num_inputs, wires as u32, w, &mut seen)
            .map_err(|e| format!("output {j}: {e}"))?;
    }
    Ok(())
}

/// Template gate `k` writes `num_inputs + k` and reads only wires below it.
fn check_template_gate(num_inputs: u32, k: u64, g: &Gate) -> Result<(), String> {
    let expected = num_inputs as u64 + k;
    if g.out as u64 != expected {
        return Err(format!(
            "writes wire {}, not {expected} (a template's gate k writes wire num_inputs + k)",
            g.out
        ));
    }
    if let Some(&w) = g.inputs().iter().find(|&&w| w >= g.out) {
        return Err(format!("reads wire {w}, which is not set before it"));
    }
    Ok(())
}

/// A template output is a gate's wire (not an input: flattening gives instance outputs
/// the wires of gates) listed once; `seen` marks the gate wires already listed.
fn check_template_output(
    num_inputs: u32,
    num_wires: u32,
    w: WireId,
    seen: &mut Vec<u64>,
) -> Result<(), String> {
    if w < num_inputs || w >= num_wires {
        return Err(format!(
            "wire {w} is not one of the template's gate wires {num_inputs}..{num_wires}"
        ));
    }
    let k = (w - num_inputs) as u64;
    if get_bit(seen, k) {
        return Err(format!("wire {w} is listed twice"));
    }
    set_bit(seen, k);
    Ok(())
}

fn get_bit(bits: &[u64], i: u64) -> bool {
    bits.get((i / 64) as usize)
        .is_some_and(|word| word >> (i % 64) & 1 == 1)
}

/// Sets bit `i`, growing `bits` as needed (so memory follows the wires actually used).
fn set_bit(bits: &mut Vec<u64>, i: u64) {
    let k = (i / 64) as usize;
    if k >= bits.len() {
        bits.resize(k + 1, 0);
    }
    bits[k] |= 1 << (i % 64);
}

fn clear_bit(bits: &mut [u64], i: u64) {
    if let Some(word) = bits.get_mut((i / 64) as usize) {
        *word &= !(1 << (i % 64));
    }
}

/// Which global wires are set, while a parallel circuit is checked phase by phase.
struct GlobalWires {
    num_inputs: u64,
    num_wires: u32,
    /// Bit `w - num_inputs`: set by a sequential gate or by an instance of a finished region.
    set: Vec<u64>,
    /// Set by an instance of the current region (readable only after the region).
    pending: Vec<u64>,
    pending_list: Vec<WireId>,
    writes: u64,
}

impl GlobalWires {
    fn new(num_inputs: u64, num_wires: u32) -> Self {
        GlobalWires {
            num_inputs,
            num_wires,
            set: Vec::new(),
            pending: Vec::new(),
            pending_list: Vec::new(),
            writes: 0,
        }
    }

    fn is_set(&self, w: WireId) -> bool {
        let w = w as u64;
        w < self.num_inputs || get_bit(&self.set, w - self.num_inputs)
    }

    fn is_pending(&self, w: WireId) -> bool {
        let w = w as u64;
        w >= self.num_inputs && get_bit(&self.pending, w - self.num_inputs)
    }

    fn in_range(&self, w: WireId) -> Result<(), String> {
        if w < self.num_wires {
            Ok(())
        } else {
            Err(format!(
                "wire {w} is out of range for {} global wires",
                self.num_wires
            ))
        }
    }

    fn sequential_gate(&mut self, g: &Gate) -> Result<(), String> {
        if g.op == Op::Const && g.a > 1 {
            return Err(format!("a constant {}", g.a));
        }
        for &w in g.inputs() {
            self.in_range(w)?;
            if !self.is_set(w) {
                return Err(format!("reads wire {w}, which is not set before it"));
            }
        }
        self.write(g.out, false)
    }

    /// An instance input: set before the current region began.
    fn read_before_region(&self, w: WireId) -> Result<(), String> {
        self.in_range(w)?;
        if self.is_set(w) {
            Ok(())
        } else if self.is_pending(w) {
            Err(format!(
                "reads wire {w}, which another instance of the same region sets"
            ))
        } else {
            Err(format!(
                "reads wire {w}, which is not set before the region"
            ))
        }
    }

    fn write(&mut self, w: WireId, in_region: bool) -> Result<(), String> {
        self.in_range(w)?;
        if (w as u64) < self.num_inputs {
            return Err(format!("writes input wire {w}"));
        }
        if self.is_set(w) || self.is_pending(w) {
            return Err(format!("writes wire {w} again (a global wire is set once)"));
        }
        let i = w as u64 - self.num_inputs;
        if in_region {
            set_bit(&mut self.pending, i);
            self.pending_list.push(w);
        } else {
            set_bit(&mut self.set, i);
        }
        self.writes += 1;
        Ok(())
    }

    /// The wires set by the region's instances become readable.
    fn end_region(&mut self) {
        for w in self.pending_list.drain(..) {
            let i = w as u64 - self.num_inputs;
            clear_bit(&mut self.pending, i);
            set_bit(&mut self.set, i);
        }
    }

    fn check_outputs(&self, outputs: &[WireId]) -> Result<(), String> {
        for (index, &w) in outputs.iter().enumerate() {
            self.in_range(w)
                .map_err(|e| format!("output {index}: {e}"))?;
            if !self.is_set(w) {
                return Err(format!("output {index} is wire {w}, which is never set"));
            }
        }
        Ok(())
    }

    /// Every global wire is an input or set (so `num_wires` cannot claim more than the
    /// file holds).
    fn check_dense(&self) -> Result<(), String> {
        let unset = self.num_wires as u64 - self.num_inputs - self.writes;
        if unset != 0 {
            return Err(format!(
                "the layout has {} global wires but {unset} of them are neither inputs nor set by any phase",
                self.num_wires
            ));
        }
        Ok(())
    }
}

/// Encoding state of one region's instance records (see the module documentation).
#[derive(Default)]
struct InstanceCodec {
    next_out: u64,
    /// Per template: the inputs of the region's last instance running it, and their stride.
    history: HashMap<u32, (Vec<WireId>, Vec<i64>)>,
}

impl InstanceCodec {
    /// The prediction for input `j` of an instance of `template`, given its input `j - 1`.
    fn predict(&self, template: u32, j: usize, previous_input: Option<WireId>) -> i64 {
        match self.history.get(&template) {
            Some((last, stride)) => last[j] as i64 + stride[j],
            None => previous_input.map_or(0, |w| w as i64 + 1),
        }
    }

    fn remember(&mut self, template: u32, inputs: &[WireId]) {
        match self.history.entry(template) {
            Entry::Occupied(mut e) => {
                let (last, stride) = e.get_mut();
                for ((l, s), &w) in last.iter_mut().zip(stride.iter_mut()).zip(inputs) {
                    *s = w as i64 - *l as i64;
                    *l = w;
                }
            }
            Entry::Vacant(e) => {
                e.insert((inputs.to_vec(), vec![0; inputs.len()]));
            }
        }
    }

    fn encode(&mut self, inst: &Instance, out: &mut Vec<u8>) {
        let in_order = inst
            .outputs
            .iter()
            .enumerate()
            .all(|(j, &w)| w as u64 == self.next_out + j as u64);
        put_varint(out, 2 * inst.template as u64 + in_order as u64);
        for (j, &w) in inst.inputs.iter().enumerate() {
            let previous = j.checked_sub(1).map(|k| inst.inputs[k]);
            let predicted = self.predict(inst.template, j, previous);
            put_varint(out, zigzag(w as i64 - predicted));
        }
        self.remember(inst.template, &inst.inputs);
        if in_order {
            self.next_out += inst.outputs.len() as u64;
        } else {
            for &w in &inst.outputs {
                put_varint(out, zigzag(w as i64 - self.next_out as i64));
                self.next_out = w as u64 + 1;
            }
        }
    }
}

fn is_untyped(interface: &Interface) -> bool {
    interface.inputs.is_empty() && interface.outputs.is_empty()
}

struct HashingWriter<W> {
    inner: W,
    hasher: blake3::Hasher,
}

impl<W: Write> HashingWriter<W> {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.hasher.update(bytes);
        self.inner.write_all(bytes)
    }
    fn digest(&self) -> [u8; 32] {
        *self.hasher.finalize().as_bytes()
    }
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    (z >> 1) as i64 ^ -((z & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

// ---------------------------------------------------------------------------------------
// Reading

/// What a `.pgc` header holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgcHeader {
    pub version: u32,
    pub layout: Layout,
    /// No ports at all for an untyped circuit.
    pub interface: Interface,
}

/// Reads a version 1 `.pgc` stream: the header at construction, then gates block by block.
/// (A version 2 file needs the whole of its templates before any flattened gate can be
/// given out; [`read_pgc_parallel`] or [`read_pgc`] read it.)
pub struct PgcReader<R: Read> {
    src: Source<R>,
    header: PgcHeader,
    gates: u64,
    and_gates: u64,
    finished: bool,
    buf: Vec<u8>,
}

impl<R: Read> PgcReader<R> {
    /// Reads and checks the header (magic, version, layout, interface, header checksum).
    /// A version 2 file is refused with [`PgcErrorKind::ParallelNotStreamable`], a version 3
    /// file with [`PgcErrorKind::CompactCircuit`].
    pub fn new(reader: R) -> Result<Self, PgcFileError> {
        let (src, header) = read_header(reader)?;
        match header.version {
            PGC_FORMAT_VERSION => {}
            PGC_COMPACT_FORMAT_VERSION => return Err(PgcErrorKind::CompactCircuit.into()),
            _ => return Err(PgcErrorKind::ParallelNotStreamable.into()),
        }
        Ok(PgcReader::after_header(src, header))
    }

    fn after_header(src: Source<R>, header: PgcHeader) -> Self {
        PgcReader {
            src,
            header,
            gates: 0,
            and_gates: 0,
            finished: false,
            buf: Vec::new(),
        }
    }

    pub fn header(&self) -> &PgcHeader {
        &self.header
    }

    /// Appends the next block of gates to `out` and returns how many; 0 once the end is
    /// reached, after the counts, the final checksum and the end of the stream are checked.
    pub fn read_block(&mut self, out: &mut Vec<Gate>) -> Result<usize, PgcFileError> {
        if self.finished {
            return Ok(0);
        }
        let Some((n, data_at)) = read_gate_block(&mut self.src, &mut self.buf)? else {
            return self.read_end().map(|()| 0);
        };
        let decoded = decode_block(
            &self.buf,
            n,
            self.header.layout.num_wires,
            data_at,
            self.gates,
            "",
            &mut |_, _| Ok(()),
            out,
        )?;
        self.and_gates += decoded;
        self.gates += n as u64;
        Ok(n as usize)
    }

    fn read_end(&mut self) -> Result<(), PgcFileError> {
        let counts_at = self.src.offset;
        let gates = self.src.u64("the gate count")?;
        let and_gates = self.src.u64("the AND gate count")?;
        if gates != self.gates || and_gates != self.and_gates {
            return Err(malformed(
                counts_at,
                format!(
                    "the file says {gates} gates ({and_gates} AND) but its blocks hold {} ({} AND)",
                    self.gates, self.and_gates
                ),
            ));
        }
        self.src.final_checksum()?;
        check_wires_justified(&self.header.layout, self.gates)?;
        self.finished = true;
        Ok(())
    }

    /// Reads all remaining gates and checks the end of the file.
    pub fn read_all(self) -> Result<(PgcHeader, Vec<Gate>), PgcFileError> {
        self.read_all_expecting(0)
    }

    /// [`PgcReader::read_all`] into a list made room for `expected` gates first (a hint:
    /// a wrong one costs only a regrowth; on EDT-255's 13 M gates, growing the list as the
    /// blocks came cost a tenth of a run's CPU in copies and fresh pages).
    fn read_all_expecting(
        mut self,
        expected: usize,
    ) -> Result<(PgcHeader, Vec<Gate>), PgcFileError> {
        let mut gates = Vec::new();
        // Only a hint: if the room cannot be had, the list grows as the blocks come (an
        // allocation failure here must not abort the process).
        let _ = gates.try_reserve_exact(expected);
        while self.read_block(&mut gates)? != 0 {}
        Ok((self.header, gates))
    }
}

/// Reads and checks the header of a version 1, 2 or 3 file; returns the source positioned
/// after it.
fn read_header<R: Read>(reader: R) -> Result<(Source<R>, PgcHeader), PgcFileError> {
    let mut src = Source {
        inner: reader,
        offset: 0,
        hasher: blake3::Hasher::new(),
    };
    let mut magic = [0u8; 8];
    let got = src.read_up_to(&mut magic)?;
    if !has_pgc_magic(&magic[..got]) || got < magic.len() {
        return Err(PgcErrorKind::NotPgc.into());
    }
    let version = src.u32("the format version")?;
    if !(PGC_FORMAT_VERSION..=PGC_COMPACT_FORMAT_VERSION).contains(&version) {
        return Err(PgcErrorKind::UnsupportedVersion { found: version }.into());
    }
    let flags_at = src.offset;
    let flags = src.u32("the flags")?;
    if flags != 0 {
        return Err(malformed(
            flags_at,
            format!("unknown flags {flags:#x} (this build knows none)"),
        ));
    }
    let layout_len = src.u32("the layout length")?;
    let layout_at = src.offset;
    let layout_bytes = src.bytes(layout_len as u64, "the layout")?;
    let layout = parse_layout(&layout_bytes, layout_at)?;
    let json_len = src.u32("the interface length")?;
    let json_at = src.offset;
    let json = src.bytes(json_len as u64, "the interface")?;
    let interface: Interface = serde_json::from_slice(&json).map_err(|e| {
        malformed(
            json_at,
            format!("the interface is not valid pgc interface JSON: {e}"),
        )
    })?;
    src.checksum("the header")?;
    check_layout(&layout).map_err(|e| malformed(LAYOUT_OFFSET, e))?;
    if !is_untyped(&interface) {
        check_interface(&layout, &interface).map_err(PgcErrorKind::from)?;
    }
    Ok((
        src,
        PgcHeader {
            version,
            layout,
            interface,
        },
    ))
}

/// Reads a gate block's header and records (into `buf`); `None` at an end marker, else
/// the block's gate count and the offset of its records.
fn read_gate_block<R: Read>(
    src: &mut Source<R>,
    buf: &mut Vec<u8>,
) -> Result<Option<(u32, u64)>, PgcFileError> {
    let block_at = src.offset;
    let n = src.u32("a gate block header")?;
    let m = src.u32("a gate block header")?;
    if n == 0 {
        if m != 0 {
            return Err(malformed(
                block_at,
                format!("the end marker has {m} bytes of records (must be 0)"),
            ));
        }
        return Ok(None);
    }
    if n > MAX_BLOCK_GATES {
        return Err(malformed(
            block_at,
            format!("a gate block of {n} gates (at most {MAX_BLOCK_GATES})"),
        ));
    }
    if m < n || m > n * MAX_RECORD_BYTES {
        return Err(malformed(
            block_at + 4,
            format!(
                "a gate block of {n} gates in {m} bytes (must be {n}..={})",
                n * MAX_RECORD_BYTES
            ),
        ));
    }
    let data_at = src.offset;
    buf.resize(m as usize, 0);
    src.fill(buf, "a gate block")?;
    Ok(Some((n, data_at)))
}

/// Unused wire ids a body may declare beyond those it can justify, for tiny circuits.
const UNUSED_WIRES_SLACK: u64 = 64;

/// Whether `num_wires` is justified by `inputs` input wires and `writes` wire writes (one
/// per gate, a call's outputs): every wire is an input or written before it is read, so a
/// count far beyond that would be label memory claimed by a few header bytes (a 1 KB file
/// declaring 2^30 wires would take 16 GiB per party to garble). Writers may leave some
/// slots unused, so up to `writes + 64` more are allowed: the memory a file can claim
/// stays proportional to its size. Returns the most allowed when `num_wires` is more.
fn unjustified_wires(num_wires: u32, inputs: u64, writes: u64) -> Option<u64> {
    let most = inputs
        .saturating_add(writes.saturating_mul(2))
        .saturating_add(UNUSED_WIRES_SLACK);
    (num_wires as u64 > most).then_some(most)
}

/// [`unjustified_wires`] for a version 1 layout and its `gates` gates.
fn check_wires_justified(layout: &Layout, gates: u64) -> Result<(), PgcFileError> {
    let inputs: u64 = layout.input_widths.iter().map(|&w| w as u64).sum();
    if let Some(most) = unjustified_wires(layout.num_wires, inputs, gates) {
        return Err(malformed(
            LAYOUT_OFFSET,
            format!(
                "the layout declares {} wires, but {inputs} input wires and {gates} gates \
                 justify at most {most} (inputs + 2 x gates + {UNUSED_WIRES_SLACK})",
                layout.num_wires
            ),
        ));
    }
    Ok(())
}

/// The memory [`validate`] takes for `layout` (one flag per wire), checked against the
/// memory limit before it runs.
fn check_validate_memory(layout: &Layout) -> Result<(), PgcFileError> {
    MemoryNeed::per_item(layout.num_wires as u64, "wires", 1, "flags for checking")
        .check()
        .map_err(|e| PgcErrorKind::from(e).into())
}

/// A whole unrolled file (version 1 or 2) as stored: a plain circuit, or one of sequential
/// phases and parallel regions.
pub enum PgcContents {
    /// A version 1 file: gates in file order, no regions.
    Plain(Circuit),
    /// A version 2 file.
    Parallel(ParallelCircuit),
}

fn read_any<R: Read>(reader: R) -> Result<(PgcContents, Interface), PgcFileError> {
    read_any_expecting(reader, 0)
}

/// [`read_any`]; `expected`: a hint of the plain circuit's gate count.
fn read_any_expecting<R: Read>(
    reader: R,
    expected: usize,
) -> Result<(PgcContents, Interface), PgcFileError> {
    let (mut src, header) = read_header(reader)?;
    if header.version == PGC_COMPACT_FORMAT_VERSION {
        return Err(PgcErrorKind::CompactCircuit.into());
    }
    if header.version == PGC_FORMAT_VERSION {
        let (header, gates) = PgcReader::after_header(src, header).read_all_expecting(expected)?;
        let circuit = Circuit {
            layout: header.layout,
            gates,
        };
        check_validate_memory(&circuit.layout)?;
        validate(&circuit).map_err(PgcErrorKind::from)?;
        Ok((PgcContents::Plain(circuit), header.interface))
    } else {
        let pc = read_parallel_body(&mut src, header.layout)?;
        Ok((PgcContents::Parallel(pc), header.interface))
    }
}

/// Reads a whole `.pgc` stream (either version) and validates the circuit; a version 2
/// file's parallel circuit comes flattened.
pub fn read_pgc_from<R: Read>(reader: R) -> Result<(Circuit, Interface), PgcFileError> {
    match read_any(reader)? {
        (PgcContents::Plain(c), interface) => Ok((c, interface)),
        (PgcContents::Parallel(pc), interface) => {
            pc.flat_memory_need().check().map_err(PgcErrorKind::from)?;
            let circuit = pc.flatten();
            check_validate_memory(&circuit.layout)?;
            validate(&circuit).map_err(PgcErrorKind::from)?;
            Ok((circuit, interface))
        }
    }
}

/// Reads the `.pgc` file at `path` (either version) and validates the circuit; errors name
/// the file.
pub fn read_pgc(path: impl AsRef<Path>) -> Result<(Circuit, Interface), PgcFileError> {
    with_file(path.as_ref(), read_pgc_from)
}

/// The format version of the `.pgc` file at `path` (1 plain, 2 parallel, 3 compact), after
/// checking its header (magic, version, layout, interface, header checksum), so that a
/// caller can pick the reader; errors name the file.
pub fn pgc_format_version(path: impl AsRef<Path>) -> Result<u32, PgcFileError> {
    with_file(path.as_ref(), |reader| {
        read_header(reader).map(|(_, header)| header.version)
    })
}

/// Reads a whole `.pgc` stream as a parallel circuit: version 2 as stored, version 1 as
/// [`ParallelCircuit::sequential`] (which needs a single-assignment circuit).
pub fn read_pgc_parallel_from<R: Read>(
    reader: R,
) -> Result<(ParallelCircuit, Interface), PgcFileError> {
    match read_any(reader)? {
        (PgcContents::Plain(c), interface) => {
            let pc = ParallelCircuit::sequential(&c).map_err(PgcErrorKind::from)?;
            Ok((pc, interface))
        }
        (PgcContents::Parallel(pc), interface) => Ok((pc, interface)),
    }
}

/// [`read_pgc_parallel_from`] the file at `path`; errors name the file.
pub fn read_pgc_parallel(
    path: impl AsRef<Path>,
) -> Result<(ParallelCircuit, Interface), PgcFileError> {
    with_file(path.as_ref(), read_pgc_parallel_from)
}

/// Reads the unrolled `.pgc` file at `path` (version 1 or 2) as stored, validated: a version
/// 1 file as a plain circuit (not turned into a [`ParallelCircuit`], which costs a pass and
/// a copy of the gates that the sequential protocol does not need), a version 2 file as its
/// phases and regions. Errors name the file.
pub fn read_pgc_contents(path: impl AsRef<Path>) -> Result<(PgcContents, Interface), PgcFileError> {
    let path = path.as_ref();
    let expected = stored_gate_count_hint(path);
    with_file(path, |reader| read_any_expecting(reader, expected))
}

/// The gate count a version 1 file's end record states (the 48 bytes before the end: gates,
/// AND gates, checksum), read without decoding anything, as a hint for the gate list's
/// size: at most one gate per byte of the file (every record takes at least one), so a
/// wrong count can neither reserve more than the file could hold nor fail the read (the
/// count itself is checked when the blocks have been read). 0 if it cannot be read.
fn stored_gate_count_hint(path: &Path) -> usize {
    use std::io::{Seek, SeekFrom};
    let hint = || -> io::Result<u64> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        file.seek(SeekFrom::End(-48))?;
        let mut gates = [0u8; 8];
        file.read_exact(&mut gates)?;
        Ok(u64::from_le_bytes(gates).min(len))
    };
    hint().map_or(0, |n| usize::try_from(n).unwrap_or(0))
}

fn with_file<T>(
    path: &Path,
    read: impl FnOnce(BufReader<File>) -> Result<T, PgcFileError>,
) -> Result<T, PgcFileError> {
    let file = File::open(path).map_err(|e| PgcErrorKind::Io(e).at(Some(path)))?;
    read(BufReader::with_capacity(1 << 16, file)).map_err(|e| PgcFileError {
        path: Some(path.to_path_buf()),
        kind: e.kind,
    })
}

fn malformed(offset: u64, what: String) -> PgcFileError {
    PgcErrorKind::Malformed { offset, what }.into()
}

/// A reader that counts and hashes what it reads.
struct Source<R> {
    inner: R,
    offset: u64,
    hasher: blake3::Hasher,
}

impl<R: Read> Source<R> {
    /// Reads until `buf` is full or the stream ends; returns the bytes read.
    fn read_up_to(&mut self, buf: &mut [u8]) -> Result<usize, PgcFileError> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.inner.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(k) => filled += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.hasher.update(&buf[..filled]);
        self.offset += filled as u64;
        Ok(filled)
    }

    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<(), PgcFileError> {
        if self.read_up_to(buf)? < buf.len() {
            return Err(PgcErrorKind::Truncated {
                offset: self.offset,
                what: what.to_string(),
            }
            .into());
        }
        Ok(())
    }

    fn u8(&mut self, what: &str) -> Result<u8, PgcFileError> {
        let mut b = [0u8; 1];
        self.fill(&mut b, what)?;
        Ok(b[0])
    }

    fn u32(&mut self, what: &str) -> Result<u32, PgcFileError> {
        let mut b = [0u8; 4];
        self.fill(&mut b, what)?;
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self, what: &str) -> Result<u64, PgcFileError> {
        let mut b = [0u8; 8];
        self.fill(&mut b, what)?;
        Ok(u64::from_le_bytes(b))
    }

    /// `len` bytes, read in pieces so that a corrupted length cannot make us allocate more
    /// than the file holds.
    fn bytes(&mut self, len: u64, what: &str) -> Result<Vec<u8>, PgcFileError> {
        let mut v = Vec::new();
        let mut piece = [0u8; 1 << 14];
        while (v.len() as u64) < len {
            let k = (len - v.len() as u64).min(piece.len() as u64) as usize;
            self.fill(&mut piece[..k], what)?;
            v.extend_from_slice(&piece[..k]);
        }
        Ok(v)
    }

    /// Replaces `buf`'s contents with the next `len` bytes, growing it only as the bytes
    /// arrive (so a corrupted length cannot make us allocate more than the file holds).
    fn read_into(&mut self, buf: &mut Vec<u8>, len: u64, what: &str) -> Result<(), PgcFileError> {
        const PIECE: u64 = 1 << 16;
        buf.clear();
        while (buf.len() as u64) < len {
            let have = buf.len();
            let k = (len - have as u64).min(PIECE) as usize;
            buf.resize(have + k, 0);
            self.fill(&mut buf[have..], what)?;
        }
        Ok(())
    }

    /// Reads a 32-byte checksum and compares it with the hash of everything before it.
    /// The whole-file checksum, then the end of the stream.
    fn final_checksum(&mut self) -> Result<(), PgcFileError> {
        self.checksum("the file")?;
        let mut extra = [0u8; 1];
        if self.read_up_to(&mut extra)? != 0 {
            return Err(malformed(
                self.offset - 1,
                "unexpected data after the final checksum".to_string(),
            ));
        }
        Ok(())
    }

    fn checksum(&mut self, what: &'static str) -> Result<(), PgcFileError> {
        let expected = *self.hasher.finalize().as_bytes();
        let covered = self.offset;
        let mut stored = [0u8; 32];
        self.fill(&mut stored, "a checksum")?;
        if stored != expected {
            return Err(PgcErrorKind::Checksum {
                offset: covered,
                what,
            }
            .into());
        }
        Ok(())
    }
}

/// What reading a version 2 body does with its phases: keep them
/// ([`CollectPhases`], for [`ParallelCircuit`]) or flatten them into a gate stream
/// (streaming readers). Errors stop the reading and are returned as they are.
trait PhaseSink {
    /// One gate block of a sequential phase (global wires).
    fn sequential_gates(&mut self, gates: &[Gate]) -> Result<(), PgcFileError>;
    fn end_sequential(&mut self);
    /// One instance of the current region, with the file's templates.
    fn instance(&mut self, inst: Instance, templates: &[Template]) -> Result<(), PgcFileError>;
    fn end_region(&mut self, line: u32) -> Result<(), PgcFileError>;
}

/// Keeps the phases as they are read.
#[derive(Default)]
struct CollectPhases {
    phases: Vec<Phase>,
    seq: Vec<Gate>,
    instances: Vec<Instance>,
}

impl PhaseSink for CollectPhases {
    fn sequential_gates(&mut self, gates: &[Gate]) -> Result<(), PgcFileError> {
        self.seq.extend_from_slice(gates);
        Ok(())
    }
    fn end_sequential(&mut self) {
        self.phases
            .push(Phase::Sequential(std::mem::take(&mut self.seq)));
    }
    fn instance(&mut self, inst: Instance, _: &[Template]) -> Result<(), PgcFileError> {
        self.instances.push(inst);
        Ok(())
    }
    fn end_region(&mut self, line: u32) -> Result<(), PgcFileError> {
        let instances = std::mem::take(&mut self.instances);
        self.phases.push(Phase::Region(Region { line, instances }));
        Ok(())
    }
}

/// What a version 2 body held, beyond its phases.
struct ParallelBody {
    templates: Vec<Template>,
    gates: u64,
    /// Instance-internal wires of the flattened circuit (its wires are the layout's plus
    /// these).
    internal_wires: u64,
}

/// Reads a version 2 file after its header into a [`ParallelCircuit`].
fn read_parallel_body<R: Read>(
    src: &mut Source<R>,
    layout: Layout,
) -> Result<ParallelCircuit, PgcFileError> {
    let mut sink = CollectPhases::default();
    let body = read_parallel_phases(src, &layout, &mut sink)?;
    // Everything `new` checks was checked while reading; its own check stays as a safety net.
    ParallelCircuit::new(layout, sink.phases, body.templates)
        .map_err(|e| PgcErrorKind::from(e).into())
}

/// Reads a version 2 file after its header: templates, phases and the end (see the module
/// documentation), checking everything with offsets as it goes and handing the phases to
/// `sink`.
fn read_parallel_phases<R: Read>(
    src: &mut Source<R>,
    layout: &Layout,
    sink: &mut dyn PhaseSink,
) -> Result<ParallelBody, PgcFileError> {
    let num_wires = layout.num_wires;
    let num_inputs = check_layout(layout).map_err(|e| malformed(LAYOUT_OFFSET, e))?;
    let mut buf = Vec::new();

    let template_count = src.u32("the template count")?;
    let mut templates: Vec<Template> = Vec::new();
    let mut template_ands: Vec<u64> = Vec::new();
    for t in 0..template_count {
        let (template, ands) = read_template(src, t, &mut buf)?;
        templates.push(template);
        template_ands.push(ands);
    }

    let mut wires = GlobalWires::new(num_inputs, num_wires);
    let mut block = Vec::new();
    let mut phase_count = 0usize;
    let (mut gates, mut and_gates, mut internal) = (0u64, 0u64, 0u64);
    loop {
        let phase_at = src.offset;
        let p = phase_count;
        phase_count += 1;
        match src.u8("a phase kind")? {
            PHASE_SEQUENTIAL => {
                let label = format!("phase {p}, ");
                let mut in_phase = 0u64;
                while let Some((n, data_at)) = read_gate_block(src, &mut buf)? {
                    block.clear();
                    and_gates += decode_block(
                        &buf,
                        n,
                        num_wires,
                        data_at,
                        in_phase,
                        &label,
                        &mut |_, g| wires.sequential_gate(g),
                        &mut block,
                    )?;
                    in_phase += n as u64;
                    sink.sequential_gates(&block)?;
                }
                gates += in_phase;
                sink.end_sequential();
            }
            PHASE_REGION => {
                let line = src.u32("a region header")?;
                let count_at = src.offset;
                let count = src.u32("a region header")?;
                if count == 0 {
                    return Err(malformed(
                        count_at,
                        format!("phase {p}: the region at line {line} has no instances"),
                    ));
                }
                let mut done = 0u32;
                let mut codec = InstanceCodec::default();
                while done < count {
                    let block_at = src.offset;
                    let left = count - done;
                    let n = src.u32("an instance block header")?;
                    let m = src.u32("an instance block header")?;
                    let most = left.min(MAX_BLOCK_INSTANCES);
                    if n == 0 || n > most {
                        return Err(malformed(
                            block_at,
                            format!(
                                "phase {p}: an instance block of {n} instances (must be \
                                 1..={most}: {left} of the region's {count} are left)"
                            ),
                        ));
                    }
                    if m < n {
                        return Err(malformed(
                            block_at + 4,
                            format!(
                                "phase {p}: an instance block of {n} instances in {m} bytes \
                                 (each takes at least 1)"
                            ),
                        ));
                    }
                    let data_at = src.offset;
                    src.read_into(&mut buf, m as u64, "an instance block")?;
                    let mut pos = 0usize;
                    for _ in 0..n {
                        let i = done;
                        let record_at = data_at + pos as u64;
                        let bad = |what: String| {
                            malformed(
                                record_at,
                                format!("phase {p} (region at line {line}), instance {i}: {what}"),
                            )
                        };
                        let inst = codec
                            .decode(&buf, &mut pos, &templates, &mut wires)
                            .map_err(bad)?;
                        let t = inst.template as usize;
                        let tpl_gates = templates[t].gates.len() as u64;
                        gates += tpl_gates;
                        and_gates += template_ands[t];
                        internal += tpl_gates;
                        check_flat_wires(num_wires, internal).map_err(bad)?;
                        sink.instance(inst, &templates)?;
                        done += 1;
                    }
                    if pos != buf.len() {
                        return Err(malformed(
                            data_at + pos as u64,
                            format!(
                                "phase {p}: {} bytes left over after the instance block's {n} records",
                                buf.len() - pos
                            ),
                        ));
                    }
                }
                wires.end_region();
                sink.end_region(line)?;
            }
            PHASE_END => break,
            kind => {
                return Err(malformed(
                    phase_at,
                    format!("unknown phase kind {kind} (0 sequential, 1 region, 2 end)"),
                ));
            }
        }
    }
    let counts_at = src.offset;
    let stored_gates = src.u64("the gate count")?;
    let stored_ands = src.u64("the AND gate count")?;
    if stored_gates != gates || stored_ands != and_gates {
        return Err(malformed(
            counts_at,
            format!(
                "the file says {stored_gates} gates ({stored_ands} AND) but its phases hold \
                 {gates} ({and_gates} AND)"
            ),
        ));
    }
    src.final_checksum()?;
    wires
        .check_outputs(&layout.output_wires)
        .map_err(|e| malformed(LAYOUT_OFFSET, e))?;
    wires
        .check_dense()
        .map_err(|e| malformed(LAYOUT_OFFSET, e))?;
    Ok(ParallelBody {
        templates,
        gates,
        internal_wires: internal,
    })
}

/// Reads template `t`; returns it and its AND count.
fn read_template<R: Read>(
    src: &mut Source<R>,
    t: u32,
    buf: &mut Vec<u8>,
) -> Result<(Template, u64), PgcFileError> {
    let at = src.offset;
    let num_inputs = src.u32("a template header")?;
    let gate_count = src.u32("a template header")?;
    let output_count = src.u32("a template header")?;
    let wires = num_inputs as u64 + gate_count as u64;
    if wires > u32::MAX as u64 {
        return Err(malformed(
            at,
            format!(
                "template {t}: {num_inputs} inputs and {gate_count} gates make more than \
                 2^32 - 1 wires"
            ),
        ));
    }
    if output_count > gate_count {
        return Err(malformed(
            at + 8,
            format!(
                "template {t}: {output_count} outputs but {gate_count} gates (outputs are \
                 distinct gate wires)"
            ),
        ));
    }
    let label = format!("template {t}, ");
    let mut gates = Vec::new();
    let mut ands = 0u64;
    while gates.len() < gate_count as usize {
        let block_at = src.offset;
        let left = gate_count as usize - gates.len();
        let Some((n, data_at)) = read_gate_block(src, buf)? else {
            return Err(malformed(
                block_at,
                format!(
                    "template {t}: its gate blocks end after {} of its {gate_count} gates",
                    gates.len()
                ),
            ));
        };
        if n as usize > left {
            return Err(malformed(
                block_at,
                format!(
                    "template {t}: a gate block of {n} gates, but only {left} of its \
                     {gate_count} gates are left"
                ),
            ));
        }
        ands += decode_block(
            buf,
            n,
            wires as u32,
            data_at,
            gates.len() as u64,
            &label,
            &mut |k, g| check_template_gate(num_inputs, k, g),
            &mut gates,
        )?;
    }
    let list_at = src.offset;
    let len = src.u32("a template's output list length")?;
    let most = output_count as u64 * MAX_VARINT_BYTES as u64;
    if (len as u64) < output_count as u64 || len as u64 > most {
        return Err(malformed(
            list_at,
            format!(
                "template {t}: an output list of {output_count} wires in {len} bytes (must \
                 be {output_count}..={most})"
            ),
        ));
    }
    let data_at = src.offset;
    let data = src.bytes(len as u64, "a template's output list")?;
    let mut pos = 0usize;
    let mut cursor = num_inputs as i64;
    let mut outputs = Vec::new();
    let mut seen = Vec::new();
    for j in 0..output_count {
        let record_at = data_at + pos as u64;
        let bad = |what: String| malformed(record_at, format!("template {t}, output {j}: {what}"));
        let w = cursor + unzigzag(get_varint(&data, &mut pos).map_err(bad)?);
        let w = WireId::try_from(w).map_err(|_| {
            bad(format!(
                "wire {w} is not one of the template's gate wires {num_inputs}..{wires}"
            ))
        })?;
        check_template_output(num_inputs, wires as u32, w, &mut seen).map_err(bad)?;
        outputs.push(w);
        cursor = w as i64 + 1;
    }
    if pos != data.len() {
        return Err(malformed(
            data_at + pos as u64,
            format!(
                "template {t}: {} bytes left over after its {output_count} output wires",
                data.len() - pos
            ),
        ));
    }
    Ok((
        Template {
            num_inputs,
            gates,
            outputs,
        },
        ands,
    ))
}

impl InstanceCodec {
    /// Decodes one instance record at `pos`, checking its wires against `wires` (inputs set
    /// before the region, outputs set now).
    fn decode(
        &mut self,
        data: &[u8],
        pos: &mut usize,
        templates: &[Template],
        wires: &mut GlobalWires,
    ) -> Result<Instance, String> {
        let head = get_varint(data, pos)?;
        let (t, in_order) = (head >> 1, head & 1 == 1);
        let tpl = usize::try_from(t)
            .ok()
            .and_then(|t| templates.get(t))
            .ok_or_else(|| format!("template {t} of {} does not exist", templates.len()))?;
        let template = t as u32;
        let mut inputs: Vec<WireId> = Vec::new();
        for j in 0..tpl.num_inputs as usize {
            let predicted = self.predict(template, j, inputs.last().copied());
            let w = predicted + unzigzag(get_varint(data, pos)?);
            let w = WireId::try_from(w).map_err(|_| format!("input {j} is wire {w}"))?;
            wires
                .read_before_region(w)
                .map_err(|e| format!("input {j}: {e}"))?;
            inputs.push(w);
        }
        self.remember(template, &inputs);
        let mut outputs = Vec::new();
        for j in 0..tpl.outputs.len() {
            let w = if in_order {
                self.next_out as i64
            } else {
                self.next_out as i64 + unzigzag(get_varint(data, pos)?)
            };
            let w = WireId::try_from(w).map_err(|_| format!("output {j} is wire {w}"))?;
            wires
                .write(w, true)
                .map_err(|e| format!("output {j}: {e}"))?;
            outputs.push(w);
            self.next_out = w as u64 + 1;
        }
        Ok(Instance {
            template,
            inputs,
            outputs,
        })
    }
}

/// An unsigned LEB128 varint of at most [`MAX_VARINT_BYTES`] bytes at `pos`.
///
/// Inlined, with a well-formed varint that has [`MAX_VARINT_BYTES`] bytes after it decoded
/// here: a call per varint, returning its `Result` through memory, was a quarter of
/// decoding a compact main body (see BENCHMARKS.md, helper `compactpipe`).
#[inline]
fn get_varint(data: &[u8], pos: &mut usize) -> Result<u64, String> {
    let at = *pos;
    if let Some(bytes) = data.get(at..at.saturating_add(MAX_VARINT_BYTES)) {
        let mut v = 0u64;
        for (k, &byte) in bytes.iter().enumerate() {
            v |= ((byte & 0x7f) as u64) << (7 * k);
            if byte & 0x80 == 0 {
                *pos = at + k + 1;
                return Ok(v);
            }
        }
    }
    get_varint_near_end(data, pos)
}

/// [`get_varint`] byte by byte: near the end of `data`, or an error.
#[inline(never)]
fn get_varint_near_end(data: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for k in 0..MAX_VARINT_BYTES {
        let Some(&byte) = data.get(*pos) else {
            return Err("the data ends inside a varint".into());
        };
        *pos += 1;
        v |= ((byte & 0x7f) as u64) << (7 * k);
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(format!("a varint longer than {MAX_VARINT_BYTES} bytes"))
}

fn parse_layout(bytes: &[u8], at: u64) -> Result<Layout, PgcFileError> {
    let mut pos = 0usize;
    let mut word = |what: &str| -> Result<u32, PgcFileError> {
        let b = bytes.get(pos..pos + 4).ok_or_else(|| {
            malformed(
                at + pos as u64,
                format!("the layout ends before {what} (layout length too small)"),
            )
        })?;
        pos += 4;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    };
    let num_wires = word("the wire count")?;
    let n_in = word("the input count")?;
    let mut input_widths = Vec::new();
    for _ in 0..n_in {
        input_widths.push(word("an input width")?);
    }
    let n_out = word("the output count")?;
    let mut output_widths = Vec::new();
    for _ in 0..n_out {
        output_widths.push(word("an output width")?);
    }
    let n_wires_out: u64 = output_widths.iter().map(|&w| w as u64).sum();
    let mut output_wires = Vec::new();
    for _ in 0..n_wires_out {
        output_wires.push(word("an output wire")?);
    }
    if pos != bytes.len() {
        return Err(malformed(
            at + pos as u64,
            format!(
                "{} bytes left over after the layout's fields (layout length too large)",
                bytes.len() - pos
            ),
        ));
    }
    Ok(Layout {
        num_wires,
        input_widths,
        output_widths,
        output_wires,
    })
}

/// Decodes the `n` records of one block; returns the number of AND gates among them.
/// Errors name the gate as `{label}gate {index}`; `check` sees each decoded gate with its
/// index, and what it returns as an error is reported at the gate's record.
#[allow(clippy::too_many_arguments)]
fn decode_block(
    data: &[u8],
    n: u32,
    num_wires: u32,
    data_at: u64,
    first_gate: u64,
    label: &str,
    check: &mut dyn FnMut(u64, &Gate) -> Result<(), String>,
    out: &mut Vec<Gate>,
) -> Result<u64, PgcFileError> {
    let mut pos = 0usize;
    let mut next: i64 = 0;
    let mut ands = 0u64;
    out.reserve(n as usize);
    for i in 0..n as u64 {
        let gate = first_gate + i;
        let record_at = data_at + pos as u64;
        let bad = |what: String| malformed(record_at, format!("{label}gate {gate}: {what}"));
        let Some(&tag) = data.get(pos) else {
            return Err(bad(format!(
                "the block's {} bytes end before its {n} gates do",
                data.len()
            )));
        };
        pos += 1;
        let code = tag & 0b111;
        let op = gate_op(code).ok_or_else(|| bad(format!("unknown operation code {code}")))?;
        if tag & TAG_RESERVED != 0 {
            return Err(bad(format!("reserved bits set in tag byte {tag:#04x}")));
        }
        let g = decode_gate_fields(data, &mut pos, op, tag, next, num_wires).map_err(bad)?;
        check(gate, &g).map_err(bad)?;
        ands += (op == Op::And) as u64;
        out.push(g);
        next = g.out as i64 + 1;
    }
    if pos != data.len() {
        return Err(malformed(
            data_at + pos as u64,
            format!(
                "{} bytes left over after the block's {n} gates",
                data.len() - pos
            ),
        ));
    }
    Ok(ands)
}

/// The operation of gate code `code` (bits 0-2 of a tag), if it is one.
fn gate_op(code: u8) -> Option<Op> {
    match code {
        0 => Some(Op::Xor),
        1 => Some(Op::And),
        2 => Some(Op::Inv),
        3 => Some(Op::Copy),
        4 => Some(Op::Const),
        _ => None,
    }
}

/// Decodes the rest of a gate record whose tag (already read, operation `op`) is `tag`,
/// for the cursor `next`; every wire must be `< num_wires`.
fn decode_gate_fields(
    data: &[u8],
    pos: &mut usize,
    op: Op,
    tag: u8,
    next: i64,
    num_wires: u32,
) -> Result<Gate, String> {
    if tag & TAG_CONST_ONE != 0 && op != Op::Const {
        return Err(format!(
            "constant bit set in the tag of a {} gate",
            op.name()
        ));
    }
    let varint = |pos: &mut usize| get_varint(data, pos).map(unzigzag);
    let out_wire = if tag & TAG_OUT_IS_NEXT != 0 {
        next
    } else {
        next + varint(pos)?
    };
    let wire = |w: i64, role: &str| -> Result<WireId, String> {
        if (0..num_wires as i64).contains(&w) {
            Ok(w as WireId)
        } else {
            Err(format!(
                "{role} wire {w} is out of range for {num_wires} wires"
            ))
        }
    };
    let out = wire(out_wire, "output")?;
    Ok(match op {
        Op::Xor | Op::And => {
            let a = wire(out_wire - varint(pos)?, "input")?;
            let b = wire(out_wire - varint(pos)?, "input")?;
            Gate { op, a, b, out }
        }
        Op::Inv | Op::Copy => {
            let a = wire(out_wire - varint(pos)?, "input")?;
            Gate { op, a, b: 0, out }
        }
        Op::Const => Gate::constant(tag & TAG_CONST_ONE != 0, out),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{assign_slots, levelize};
    use crate::builder::Builder;
    use crate::generate::random_circuit;
    use crate::ir::GateSource;
    use crate::limits::MemoryLimit;
    use crate::ports::{CType, InputPort, OutputPort, Owner, Visibility};

    fn millionaires() -> (Circuit, Interface) {
        let (mut b, inputs) = Builder::new(&[32, 32]);
        let gt = b.lt_signed(&inputs[1], &inputs[0]);
        let one = b.constant(true);
        let eq = b.eq(&inputs[0], &inputs[1]);
        b.output(&[gt]);
        b.output(&[eq, one]);
        let c = b.finish();
        let i32t = CType::int(32, true);
        let iface = Interface {
            inputs: vec![
                InputPort {
                    name: "INPUT_A_income".into(),
                    owner: Owner::A,
                    ctype: i32t.clone(),
                },
                InputPort {
                    name: "INPUT_B_income".into(),
                    owner: Owner::B,
                    ctype: i32t,
                },
            ],
            outputs: vec![
                OutputPort {
                    name: "OUTPUT_result".into(),
                    visibility: Visibility::Both,
                    ctype: CType::Bool,
                },
                OutputPort {
                    name: "OUTPUT_B_flags".into(),
                    visibility: Visibility::B,
                    ctype: CType::Array {
                        elem: Box::new(CType::Bool),
                        len: 2,
                    },
                },
            ],
        };
        (c, iface)
    }

    fn to_bytes(c: &Circuit, iface: &Interface) -> Vec<u8> {
        let mut v = Vec::new();
        write_pgc(&mut v, c, iface).unwrap();
        v
    }

    fn all_ops_circuit() -> Circuit {
        Circuit {
            layout: Layout {
                num_wires: 9,
                input_widths: vec![2],
                output_widths: vec![3, 2],
                output_wires: vec![8, 7, 2, 0, 8],
            },
            gates: vec![
                Gate::xor(0, 1, 2),
                Gate::and(2, 0, 3),
                Gate::inv(3, 4),
                Gate::copy(4, 5),
                Gate::constant(true, 6),
                Gate::constant(false, 7),
                Gate::and(5, 6, 8),
                Gate::xor(8, 3, 2), // slot reuse: rewrites wire 2
            ],
        }
    }

    #[test]
    fn round_trips() {
        let (c, iface) = millionaires();
        let bytes = to_bytes(&c, &iface);
        assert!(has_pgc_magic(&bytes));
        let (c2, iface2) = read_pgc_from(&bytes[..]).unwrap();
        assert_eq!(c2, c);
        assert_eq!(iface2, iface);

        let c = all_ops_circuit();
        let (c2, iface2) = read_pgc_from(&to_bytes(&c, &Interface::default())[..]).unwrap();
        assert_eq!(c2, c);
        assert_eq!(iface2, Interface::default());

        // Larger circuits, SSA and slot-assigned, across several blocks.
        let big = random_circuit(7, 64, 200_000);
        let slots = assign_slots(&levelize(&big).unwrap());
        for c in [big, slots] {
            let bytes = to_bytes(&c, &Interface::default());
            let (c2, _) = read_pgc_from(&bytes[..]).unwrap();
            assert_eq!(c2, c);
            assert!(
                bytes.len() < c.gates.len() * 9,
                "{} bytes for {} gates",
                bytes.len(),
                c.gates.len()
            );
        }
    }

    /// Files written before `char` was a port type (the checked-in fuzz seeds, one or two per
    /// format version) read as they did, and an interface without a `char` is written in
    /// the same JSON bytes as before, so such files, their checksums and the programs'
    /// fingerprints do not change.
    #[test]
    fn files_from_before_char_read_as_they_did() {
        let i32t = CType::int(32, true);
        let u32x16 = CType::Array {
            elem: Box::new(CType::int(32, false)),
            len: 16,
        };
        let seeds: [(&[u8], u32, [&CType; 3]); 4] = [
            (
                include_bytes!("../../../fuzz/seeds/pgc_v1/millionaires.pgc"),
                1,
                [&i32t, &i32t, &i32t],
            ),
            (
                include_bytes!("../../../fuzz/seeds/pgc_v2/hamming.pgc"),
                2,
                [&u32x16, &u32x16, &CType::int(32, false)],
            ),
            (
                include_bytes!("../../../fuzz/seeds/pgc_v3/hamming.pgc"),
                3,
                [&u32x16, &u32x16, &CType::int(32, false)],
            ),
            (
                include_bytes!("../../../fuzz/seeds/pgc_v3/millionaires.pgc"),
                3,
                [&i32t, &i32t, &i32t],
            ),
        ];
        for (bytes, version, types) in seeds {
            let (_, header) = read_header(bytes).unwrap();
            assert_eq!(header.version, version);
            let iface = &header.interface;
            let found: Vec<&CType> = iface
                .inputs
                .iter()
                .map(|p| &p.ctype)
                .chain(iface.outputs.iter().map(|p| &p.ctype))
                .collect();
            assert_eq!(found, types);
            let json = serde_json::to_vec(iface).unwrap();
            assert!(
                bytes.windows(json.len()).any(|w| w == json),
                "the interface of a version {version} seed is written as it was"
            );
        }
        // The whole file reads too, by the reader of its version.
        let (c, _) = read_pgc_from(seeds[0].0).unwrap();
        assert_eq!(c.layout.input_widths, [32, 32]);
        let (pc, _) = read_pgc_parallel_from(seeds[1].0).unwrap();
        assert_eq!(pc.layout.input_widths, [512, 512]);
        let (cc, _) = crate::pgcfile::read_pgc_compact_from(seeds[2].0).unwrap();
        assert_eq!(cc.layout.input_widths, [512, 512]);
        // What a `char` compiled to before, an 8-bit signed integer without the flag, is
        // still `int8_t`.
        let old: CType = serde_json::from_str(r#"{"Int":{"bits":8,"signed":true}}"#).unwrap();
        assert_eq!(old, CType::int(8, true));
        assert_eq!(old.c_name(), "int8_t");
    }

    #[test]
    fn char_ports_survive_a_file() {
        let mut b = Builder::new(&[8, 48]).0;
        let zero = b.constant(false);
        b.output(&[zero; 8]);
        b.output(&[zero; 48]);
        let c = b.finish();
        let name_t = CType::Array {
            elem: Box::new(CType::CHAR),
            len: 6,
        };
        let iface = Interface {
            inputs: vec![
                InputPort {
                    name: "INPUT_A_c".into(),
                    owner: Owner::A,
                    ctype: CType::CHAR,
                },
                InputPort {
                    name: "INPUT_B_s".into(),
                    owner: Owner::B,
                    ctype: name_t.clone(),
                },
            ],
            outputs: vec![
                OutputPort {
                    name: "OUTPUT_u".into(),
                    visibility: Visibility::Both,
                    ctype: CType::int(8, false),
                },
                OutputPort {
                    name: "OUTPUT_s".into(),
                    visibility: Visibility::Both,
                    ctype: name_t,
                },
            ],
        };
        let bytes = to_bytes(&c, &iface);
        let flagged = br#"{"Int":{"bits":8,"signed":true,"char":true}}"#;
        assert!(
            bytes.windows(flagged.len()).any(|w| w == flagged),
            "the flag is in the JSON"
        );
        let (_, back) = read_pgc_from(&bytes[..]).unwrap();
        assert_eq!(back, iface);
        let names: Vec<String> = back.outputs.iter().map(|p| p.ctype.c_name()).collect();
        assert_eq!(names, ["uint8_t", "char[6]"]);
        assert_eq!(back.inputs[0].ctype.c_name(), "char");
    }

    #[test]
    fn streaming_reader_gives_header_first_then_blocks() {
        let c = random_circuit(3, 16, 150_000);
        let bytes = to_bytes(&c, &Interface::default());
        let mut r = PgcReader::new(&bytes[..]).unwrap();
        assert_eq!(r.header().layout, c.layout);
        let mut gates = Vec::new();
        let mut blocks = 0;
        loop {
            let n = r.read_block(&mut gates).unwrap();
            if n == 0 {
                break;
            }
            assert!(n <= MAX_BLOCK_GATES as usize);
            blocks += 1;
        }
        assert_eq!(blocks, 150_000usize.div_ceil(MAX_BLOCK_GATES as usize));
        assert_eq!(gates, c.gates);
        assert_eq!(r.read_block(&mut gates).unwrap(), 0);
    }

    #[test]
    fn file_round_trip_and_detection() {
        let dir = std::env::temp_dir().join(format!("pgcfile-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.pgc");
        let (c, iface) = millionaires();
        write_pgc_file(&path, &c, &iface).unwrap();
        assert!(is_pgc_file(&path).unwrap());
        assert_eq!(read_pgc(&path).unwrap(), (c, iface));
        let text = dir.join("bristol.txt");
        std::fs::write(&text, "1 3\n2 1 1\n1 1\n\n2 1 0 1 2 AND\n").unwrap();
        assert!(!is_pgc_file(&text).unwrap());
        let e = read_pgc(&text).unwrap_err().to_string();
        assert!(e.contains("bristol.txt: not a pgc circuit file"), "{e}");
        let e = read_pgc(dir.join("missing.pgc")).unwrap_err().to_string();
        assert!(e.contains("missing.pgc"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn every_truncation_is_a_clear_error() {
        let (c, iface) = millionaires();
        let bytes = to_bytes(&c, &iface);
        crate::testdata::assert_truncations_are_clear(&bytes, |b| read_pgc_from(b));
    }

    #[test]
    fn every_corruption_is_detected_without_panicking() {
        let (c, iface) = millionaires();
        let bytes = to_bytes(&c, &iface);
        let mut seed = 0x1234_5678_9abc_def0u64;
        let xorshift = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        };
        crate::testdata::assert_byte_flips_are_detected(
            &bytes,
            3,
            xorshift,
            |b| read_pgc_from(b),
            |_| false,
        );
    }

    #[test]
    fn malformed_records_name_offset_and_gate() {
        // A hand-made file with a bad operation code, with a valid checksum so the record
        // decoder is what complains.
        let layout = Layout {
            num_wires: 3,
            input_widths: vec![2],
            output_widths: vec![1],
            output_wires: vec![2],
        };
        let mut v = Vec::new();
        let w = PgcWriter::new(&mut v, &layout, &Interface::default()).unwrap();
        drop(w);
        let header_len = v.len();
        let mut file = v.clone();
        file.extend_from_slice(&1u32.to_le_bytes());
        file.extend_from_slice(&3u32.to_le_bytes());
        file.extend_from_slice(&[0x05 | TAG_OUT_IS_NEXT, 0, 0]);
        let e = PgcReader::new(&file[..])
            .unwrap()
            .read_block(&mut Vec::new())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!("byte {}: gate 0: unknown operation code 5", header_len + 8)
        );
        // An input wire beyond num_wires: XOR at out 0 reading wire 0 - (-5) = 5.
        let mut file = v.clone();
        file.extend_from_slice(&1u32.to_le_bytes());
        file.extend_from_slice(&3u32.to_le_bytes());
        file.extend_from_slice(&[TAG_OUT_IS_NEXT, zigzag(-5) as u8, 0]);
        let e = PgcReader::new(&file[..])
            .unwrap()
            .read_block(&mut Vec::new())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("gate 0: input wire 5 is out of range for 3 wires"),
            "{e}"
        );
        // Block size limits.
        let mut file = v.clone();
        file.extend_from_slice(&(MAX_BLOCK_GATES + 1).to_le_bytes());
        file.extend_from_slice(&0u32.to_le_bytes());
        let e = PgcReader::new(&file[..])
            .unwrap()
            .read_block(&mut Vec::new())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("byte {header_len}: a gate block of 65537")),
            "{e}"
        );
    }

    #[test]
    fn writer_refuses_bad_circuits_and_interfaces() {
        let (c, mut iface) = millionaires();
        iface.outputs.pop();
        let e = write_pgc(Vec::new(), &c, &iface).unwrap_err().to_string();
        assert!(e.contains("1 output ports but the circuit has 2"), "{e}");
        let mut bad = all_ops_circuit();
        bad.gates[1].a = 50;
        let e = write_pgc(Vec::new(), &bad, &Interface::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("gate 1 uses wire 50"), "{e}");
    }

    #[test]
    fn header_lengths_cannot_force_huge_allocations() {
        let mut v = PGC_MAGIC.to_vec();
        v.extend_from_slice(&1u32.to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&u32::MAX.to_le_bytes());
        v.extend_from_slice(&[0; 100]);
        let e = read_pgc_from(&v[..]).unwrap_err().to_string();
        assert_eq!(
            e,
            "the file ends at byte 120, inside the layout (truncated?)"
        );
    }

    /// A version 1 file written without the writer's checks: any layout, any interface
    /// JSON (what an attacker can produce).
    pub(super) fn raw_v1(layout: &Layout, interface_json: &str, gates: &[Gate]) -> Vec<u8> {
        let mut out = HashingWriter {
            inner: Vec::new(),
            hasher: blake3::Hasher::new(),
        };
        out.write_all(&PGC_MAGIC).unwrap();
        out.write_all(&1u32.to_le_bytes()).unwrap();
        out.write_all(&0u32.to_le_bytes()).unwrap();
        for section in [layout.to_bytes(), interface_json.as_bytes().to_vec()] {
            out.write_all(&(section.len() as u32).to_le_bytes())
                .unwrap();
            out.write_all(&section).unwrap();
        }
        let digest = out.digest();
        out.write_all(&digest).unwrap();
        let mut block = BlockEncoder::with_capacity(64);
        write_gate_blocks(&mut out, &mut block, gates).unwrap();
        out.write_all(&[0u8; 8]).unwrap();
        let ands = gates.iter().filter(|g| g.op == Op::And).count() as u64;
        out.write_all(&(gates.len() as u64).to_le_bytes()).unwrap();
        out.write_all(&ands.to_le_bytes()).unwrap();
        write_final_checksum(out).unwrap()
    }

    /// Finding 1 of issue 16: a 1 KB version 1 file declaring 2^30 wires made every reader
    /// (and then `info`, `eval`, the garbler) allocate per declared wire, up to 16 GiB.
    #[test]
    fn a_small_file_cannot_declare_a_billion_wires() {
        let layout = Layout {
            num_wires: 1 << 30,
            input_widths: vec![1, 1],
            output_widths: vec![1],
            output_wires: vec![2],
        };
        let gates = [Gate::and(0, 1, 2)];
        // The writer writes it (its wires are in range), so build it as an attacker would.
        let mut bytes = Vec::new();
        let c = Circuit {
            layout: layout.clone(),
            gates: gates.to_vec(),
        };
        let mut w = PgcWriter::new(&mut bytes, &c.layout, &Interface::default()).unwrap();
        w.write_gates(&c.gates).unwrap();
        w.finish().unwrap();
        assert!(bytes.len() < 1024);
        assert_eq!(
            bytes,
            raw_v1(&layout, r#"{"inputs":[],"outputs":[]}"#, &gates)
        );
        let started = std::time::Instant::now();
        // A scoped limit of 64 MiB: any per-wire allocation before the check would fail it.
        MemoryLimit::from_bytes(64 << 20).scoped(|| {
            let expected = "byte 20: the layout declares 1073741824 wires, but 2 input wires \
                            and 1 gates justify at most 68";
            let e = read_pgc_from(&bytes[..]).unwrap_err().to_string();
            assert!(e.starts_with(expected), "{e}");
            let e = read_pgc_parallel_from(&bytes[..]).unwrap_err().to_string();
            assert!(e.starts_with(expected), "{e}");
            let e = PgcReader::new(&bytes[..])
                .unwrap()
                .read_all()
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(expected), "{e}");
        });
        assert!(started.elapsed().as_secs() < 5);
    }

    /// Input widths need no gate bytes, so they are bounded by the memory limit instead:
    /// checked before the per-wire allocation of the circuit check.
    #[test]
    fn wide_inputs_are_refused_above_the_memory_limit() {
        let layout = Layout {
            num_wires: (1 << 31) + 1,
            input_widths: vec![1 << 31],
            output_widths: vec![1],
            output_wires: vec![1 << 31],
        };
        let bytes = raw_v1(
            &layout,
            r#"{"inputs":[],"outputs":[]}"#,
            &[Gate::inv(0, 1 << 31)],
        );
        let e = MemoryLimit::from_bytes(64 << 20)
            .scoped(|| read_pgc_from(&bytes[..]).unwrap_err())
            .to_string();
        assert_eq!(
            e,
            "this circuit needs 2.0 GiB (2147483649 wires × 1-byte flags for checking), more \
             than --max-memory 64.0 MiB; raise --max-memory if the machine has it"
        );
    }

    /// Finding 2 of issue 16: an output type whose width overflowed (nested array lengths
    /// multiplied without a check) matched an 8-bit output, passed every check, and the
    /// process panicked when printing the result after the secure run.
    #[test]
    fn an_output_type_whose_width_overflows_is_refused_when_read() {
        let layout = Layout {
            num_wires: 3,
            input_widths: vec![1, 1],
            output_widths: vec![8],
            output_wires: vec![2; 8],
        };
        // 8 + 64 * 2^31 * 2^31 * 2^27 bits: 8 modulo 2^64.
        let huge = r#"{"Array":{"elem":{"Array":{"elem":{"Array":{"elem":{"Int":{"bits":64,"signed":false}},"len":134217728}},"len":2147483648}},"len":2147483648}}"#;
        let json = format!(
            r#"{{"inputs":[{{"name":"INPUT_A_x","owner":"A","ctype":"Bool"}},{{"name":"INPUT_B_y","owner":"B","ctype":"Bool"}}],"outputs":[{{"name":"OUTPUT_r","visibility":"Both","ctype":{{"Struct":{{"name":"s","fields":[["a",{{"Int":{{"bits":8,"signed":false}}}}],["b",{huge}]]}}}}}}]}}"#
        );
        let bytes = raw_v1(&layout, &json, &[Gate::and(0, 1, 2)]);
        let e = read_pgc_from(&bytes[..]).unwrap_err().to_string();
        assert!(
            e.starts_with("the interface does not match the circuit: output port OUTPUT_r (struct s): field b: "),
            "{e}"
        );
        assert!(e.contains("overflows"), "{e}");
        // An integer too wide to print, and an array of zero-width elements (billions of
        // elements printed for no bits), are refused the same way.
        for (ctype, width, problem) in [
            (
                r#"{"Int":{"bits":200,"signed":true}}"#,
                200,
                "an integer of 200 bits",
            ),
            (
                r#"{"Array":{"elem":{"Int":{"bits":0,"signed":true}},"len":4294967295}}"#,
                0,
                "an array of 4294967295 elements of no bits",
            ),
        ] {
            let layout = Layout {
                num_wires: 3,
                input_widths: vec![1, 1],
                output_widths: vec![width],
                output_wires: vec![2; width as usize],
            };
            let json = format!(
                r#"{{"inputs":[{{"name":"INPUT_A_x","owner":"A","ctype":"Bool"}},{{"name":"INPUT_B_y","owner":"B","ctype":"Bool"}}],"outputs":[{{"name":"OUTPUT_r","visibility":"Both","ctype":{ctype}}}]}}"#
            );
            let bytes = raw_v1(&layout, &json, &[Gate::and(0, 1, 2)]);
            let e = read_pgc_from(&bytes[..]).unwrap_err().to_string();
            assert!(
                e.contains("output port OUTPUT_r") && e.contains(problem),
                "{e}"
            );
        }
    }

    /// A version 2 file is flattened by `read_pgc`: a small file of regions can stand for
    /// billions of gates, so the flat gate list is measured against the limit first.
    #[test]
    fn flattening_is_measured_against_the_memory_limit() {
        let bytes =
            write_pgc_parallel(Vec::new(), &tiny_parallel(), &Interface::default()).unwrap();
        let e = MemoryLimit::from_bytes(31)
            .scoped(|| read_pgc_from(&bytes[..]).unwrap_err())
            .to_string();
        assert!(
            e.starts_with("this circuit needs 32 B (2 gates × 16-byte records when flattened)"),
            "{e}"
        );
        assert!(read_pgc_from(&bytes[..]).is_ok());
    }

    /// Two instances of one AND template on inputs 0 and 1, writing wires 2 and 3.
    fn tiny_parallel() -> ParallelCircuit {
        let layout = Layout {
            num_wires: 4,
            input_widths: vec![2],
            output_widths: vec![2],
            output_wires: vec![2, 3],
        };
        let template = Template {
            num_inputs: 2,
            gates: vec![Gate::and(0, 1, 2)],
            outputs: vec![2],
        };
        let instance = |inputs: Vec<WireId>, out: WireId| Instance {
            template: 0,
            inputs,
            outputs: vec![out],
        };
        let region = Region {
            line: 7,
            instances: vec![instance(vec![0, 1], 2), instance(vec![1, 0], 3)],
        };
        ParallelCircuit::new(layout, vec![Phase::Region(region)], vec![template]).unwrap()
    }

    fn region_mut(pc: &mut ParallelCircuit) -> &mut Region {
        match &mut pc.phases[0] {
            Phase::Region(r) => r,
            Phase::Sequential(_) => unreachable!(),
        }
    }

    #[test]
    fn the_reader_checks_what_the_encoding_cannot_rule_out() {
        let pc = tiny_parallel();
        let bytes = write_pgc_parallel(Vec::new(), &pc, &Interface::default()).unwrap();
        assert_eq!(read_pgc_parallel_from(&bytes[..]).unwrap().0, pc);
        type Change = fn(&mut ParallelCircuit);
        let cases: [(Change, &str); 6] = [
            (
                |pc| region_mut(pc).instances[1].inputs[0] = 2,
                "phase 0 (region at line 7), instance 1: input 0: reads wire 2, which another \
                 instance of the same region sets",
            ),
            (
                |pc| region_mut(pc).instances[1].outputs[0] = 1,
                "instance 1: output 0: writes input wire 1",
            ),
            (
                |pc| region_mut(pc).instances[0].template = 5,
                "instance 0: template 5 of 1 does not exist",
            ),
            (
                |pc| {
                    let t = &mut pc.templates[0];
                    t.gates.push(Gate::xor(0, 1, 2));
                },
                "template 0, gate 1: writes wire 2, not 3 (a template's gate k writes wire \
                 num_inputs + k)",
            ),
            (
                |pc| pc.templates[0].outputs[0] = 1,
                "template 0, output 0: wire 1 is not one of the template's gate wires 2..3",
            ),
            (
                |pc| pc.layout.num_wires = 5,
                "byte 20: the layout has 5 global wires but 1 of them are neither inputs nor \
                 set by any phase",
            ),
        ];
        for (change, expected) in cases {
            let mut bad = pc.clone();
            change(&mut bad);
            assert!(check_parallel(&bad, true).is_err());
            let file = encode_parallel(
                Vec::new(),
                &bad,
                &Interface::default(),
                pc.gate_count(),
                pc.and_count(),
            )
            .unwrap();
            let e = read_pgc_parallel_from(&file[..]).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(expected), "{text}");
            let PgcErrorKind::Malformed { offset, .. } = e.kind else {
                panic!("{text}")
            };
            assert!(text.starts_with(&format!("byte {offset}: ")), "{text}");
            assert!(offset >= LAYOUT_OFFSET && (offset as usize) < file.len());
        }
    }

    #[test]
    fn parallel_header_fields_are_bounded() {
        // A template whose inputs and gates overflow 32-bit wire ids, and one with more
        // outputs than gates.
        let pc = tiny_parallel();
        let mut v = Vec::new();
        let out = write_header(
            &mut v,
            PGC_PARALLEL_FORMAT_VERSION,
            &pc.layout,
            &Interface::default(),
        )
        .unwrap();
        drop(out);
        let header_len = v.len();
        for (fields, expected) in [
            (
                [1, u32::MAX, 1, 0],
                "template 0: 4294967295 inputs and 1 gates make more than 2^32 - 1 wires",
            ),
            (
                [1, 2, 1, 2],
                "template 0: 2 outputs but 1 gates (outputs are distinct gate wires)",
            ),
        ] {
            let mut file = v.clone();
            for x in fields {
                file.extend_from_slice(&x.to_le_bytes());
            }
            let e = read_pgc_parallel_from(&file[..]).unwrap_err().to_string();
            let at = if fields[3] > fields[2] { 12 } else { 4 };
            assert_eq!(e, format!("byte {}: {expected}", header_len + at));
        }
    }

    #[test]
    fn varints_and_zigzag() {
        for d in [0i64, 1, -1, 63, -64, 64, 1 << 20, -(1 << 32), (1 << 32) - 1] {
            assert_eq!(unzigzag(zigzag(d)), d);
            let mut v = Vec::new();
            put_varint(&mut v, zigzag(d));
            assert!(v.len() <= MAX_VARINT_BYTES);
        }
    }

    /// `get_varint` reads the same value, and stops at the same byte or with the same
    /// error, whether the data goes on after the varint (the inlined path) or ends there
    /// (byte by byte).
    #[test]
    fn varints_read_alike_with_and_without_bytes_after_them() {
        let values = [
            0u64,
            1,
            127,
            128,
            16_383,
            16_384,
            2_097_151,
            1 << 28,
            u32::MAX as u64,
        ];
        for &value in &values {
            let mut bytes = Vec::new();
            put_varint(&mut bytes, value);
            for tail in 0..=MAX_VARINT_BYTES {
                let mut data = bytes.clone();
                data.extend(std::iter::repeat_n(0x80, tail));
                let mut pos = 0;
                assert_eq!(get_varint(&data, &mut pos), Ok(value), "{value}, {tail}");
                assert_eq!(pos, bytes.len());
            }
        }
        // Too long, or cut off, with any number of bytes after it.
        for (data, error) in [
            (vec![0xff; MAX_VARINT_BYTES], "longer than"),
            (vec![0xff; 2 * MAX_VARINT_BYTES], "longer than"),
            (vec![0x80, 0x80], "ends inside"),
            (vec![], "ends inside"),
        ] {
            let mut pos = 0;
            let got = get_varint(&data, &mut pos);
            assert!(
                got.as_ref().is_err_and(|e| e.contains(error)),
                "{data:?}: {got:?}"
            );
        }
    }
}
