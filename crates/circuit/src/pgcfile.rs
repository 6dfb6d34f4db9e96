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
//! or one of `{"Int":{"bits","signed"}}`, `{"Array":{"elem","len"}}`,
//! `{"Struct":{"name","fields":[[name, ctype], …]}}`. Port `i` describes layout value `i`
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
//! # Reading
//! [`PgcReader`] checks the header (magic, version, layout, interface, header checksum) before
//! any gate is read, then hands out gates block by block; the whole-file checksum and the
//! counts are checked when the end is reached. Every malformation is an error naming the byte
//! offset and what is wrong; a truncated file says where it ends. [`read_pgc`] reads a whole
//! file and also [validates](crate::analysis::validate) the circuit.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::analysis::{CircuitError, validate};
use crate::ir::{Circuit, Gate, Layout, Op, WireId};
use crate::ports::Interface;
use crate::typed::{InterfaceMismatch, check_interface};

/// The first 8 bytes of every `.pgc` file (PNG-style: non-ASCII first byte, CR LF, ^Z, LF
/// catch text-mode transfers).
pub const PGC_MAGIC: [u8; 8] = [0x89, b'p', b'g', b'c', 0x0d, 0x0a, 0x1a, 0x0a];
/// The format version this build reads and writes.
pub const PGC_FORMAT_VERSION: u32 = 1;
/// Most gates in one block.
pub const MAX_BLOCK_GATES: u32 = 1 << 16;
/// Longest gate record: tag + three 5-byte varints.
const MAX_RECORD_BYTES: u32 = 16;
/// Longest varint (a zigzagged difference of two `u32`s needs 33 bits).
const MAX_VARINT_BYTES: usize = 5;

const TAG_OUT_IS_NEXT: u8 = 1 << 3;
const TAG_CONST_ONE: u8 = 1 << 4;
const TAG_RESERVED: u8 = 0b1110_0000;

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
        "pgc circuit format version {found}; this build reads version {PGC_FORMAT_VERSION} \
         (recompile the program, or use a matching pgc)"
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
    let path = path.as_ref();
    let run = || -> Result<(), PgcFileError> {
        let mut file = BufWriter::new(File::create(path)?);
        write_pgc(&mut file, circuit, interface)?;
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
/// [`validate`](crate::analysis::validate)).
pub struct PgcWriter<W: Write> {
    out: HashingWriter<W>,
    num_wires: u32,
    block: Vec<u8>,
    block_gates: u32,
    next: WireId,
    gates: u64,
    and_gates: u64,
}

impl<W: Write> PgcWriter<W> {
    /// Writes the header for `layout` and `interface`.
    pub fn new(writer: W, layout: &Layout, interface: &Interface) -> Result<Self, PgcFileError> {
        if !is_untyped(interface) {
            check_interface(layout, interface).map_err(PgcErrorKind::from)?;
        }
        let mut out = HashingWriter {
            inner: writer,
            hasher: blake3::Hasher::new(),
        };
        let layout_bytes = layout.to_bytes();
        let json = serde_json::to_vec(interface).map_err(io::Error::other)?;
        let mut header = Vec::with_capacity(24 + layout_bytes.len() + json.len());
        header.extend_from_slice(&PGC_MAGIC);
        header.extend_from_slice(&PGC_FORMAT_VERSION.to_le_bytes());
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
        out.write_all(&header)?;
        let digest = out.digest();
        out.write_all(&digest)?;
        Ok(PgcWriter {
            out,
            num_wires: layout.num_wires,
            block: Vec::with_capacity(8 * MAX_BLOCK_GATES as usize),
            block_gates: 0,
            next: 0,
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
            self.encode(g);
            self.gates += 1;
            self.and_gates += (g.op == Op::And) as u64;
            if self.block_gates == MAX_BLOCK_GATES {
                self.flush_block()?;
            }
        }
        Ok(())
    }

    fn encode(&mut self, g: &Gate) {
        let mut tag = g.op as u8;
        if g.out == self.next {
            tag |= TAG_OUT_IS_NEXT;
        }
        if g.op == Op::Const && g.a == 1 {
            tag |= TAG_CONST_ONE;
        }
        self.block.push(tag);
        if g.out != self.next {
            put_varint(&mut self.block, zigzag(g.out as i64 - self.next as i64));
        }
        if g.op != Op::Const {
            for &w in g.inputs() {
                put_varint(&mut self.block, zigzag(g.out as i64 - w as i64));
            }
        }
        self.next = g.out.wrapping_add(1);
        self.block_gates += 1;
    }

    fn flush_block(&mut self) -> Result<(), PgcFileError> {
        if self.block_gates == 0 {
            return Ok(());
        }
        self.out.write_all(&self.block_gates.to_le_bytes())?;
        self.out
            .write_all(&(self.block.len() as u32).to_le_bytes())?;
        self.out.write_all(&self.block)?;
        self.block.clear();
        self.block_gates = 0;
        self.next = 0;
        Ok(())
    }

    /// Writes the last block, the end marker, the counts and the checksum; returns the
    /// writer (flushed).
    pub fn finish(mut self) -> Result<W, PgcFileError> {
        self.flush_block()?;
        let mut end = [0u8; 24];
        end[8..16].copy_from_slice(&self.gates.to_le_bytes());
        end[16..24].copy_from_slice(&self.and_gates.to_le_bytes());
        self.out.write_all(&end)?;
        let digest = self.out.digest();
        self.out.write_all(&digest)?;
        self.out.inner.flush()?;
        Ok(self.out.inner)
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

/// Reads a `.pgc` stream: the header at construction, then gates block by block.
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
    pub fn new(reader: R) -> Result<Self, PgcFileError> {
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
        if version != PGC_FORMAT_VERSION {
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
        if !is_untyped(&interface) {
            check_interface(&layout, &interface).map_err(PgcErrorKind::from)?;
        }
        Ok(PgcReader {
            src,
            header: PgcHeader {
                version,
                layout,
                interface,
            },
            gates: 0,
            and_gates: 0,
            finished: false,
            buf: Vec::new(),
        })
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
        let block_at = self.src.offset;
        let n = self.src.u32("a gate block header")?;
        let m = self.src.u32("a gate block header")?;
        if n == 0 {
            if m != 0 {
                return Err(malformed(
                    block_at,
                    format!("the end marker has {m} bytes of records (must be 0)"),
                ));
            }
            return self.read_end().map(|()| 0);
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
        let data_at = self.src.offset;
        self.buf.resize(m as usize, 0);
        self.src.fill(&mut self.buf, "a gate block")?;
        let decoded = decode_block(
            &self.buf,
            n,
            self.header.layout.num_wires,
            data_at,
            self.gates,
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
        self.src.checksum("the file")?;
        let mut extra = [0u8; 1];
        if self.src.read_up_to(&mut extra)? != 0 {
            return Err(malformed(
                self.src.offset - 1,
                "unexpected data after the final checksum".to_string(),
            ));
        }
        self.finished = true;
        Ok(())
    }

    /// Reads all remaining gates and checks the end of the file.
    pub fn read_all(mut self) -> Result<(PgcHeader, Vec<Gate>), PgcFileError> {
        let mut gates = Vec::new();
        while self.read_block(&mut gates)? != 0 {}
        Ok((self.header, gates))
    }
}

/// Reads a whole `.pgc` stream and validates the circuit.
pub fn read_pgc_from<R: Read>(reader: R) -> Result<(Circuit, Interface), PgcFileError> {
    let (header, gates) = PgcReader::new(reader)?.read_all()?;
    let circuit = Circuit {
        layout: header.layout,
        gates,
    };
    validate(&circuit).map_err(PgcErrorKind::from)?;
    Ok((circuit, header.interface))
}

/// Reads the `.pgc` file at `path` and validates the circuit; errors name the file.
pub fn read_pgc(path: impl AsRef<Path>) -> Result<(Circuit, Interface), PgcFileError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| PgcErrorKind::Io(e).at(Some(path)))?;
    read_pgc_from(BufReader::with_capacity(1 << 16, file)).map_err(|e| PgcFileError {
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

    /// Reads a 32-byte checksum and compares it with the hash of everything before it.
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
fn decode_block(
    data: &[u8],
    n: u32,
    num_wires: u32,
    data_at: u64,
    first_gate: u64,
    out: &mut Vec<Gate>,
) -> Result<u64, PgcFileError> {
    let mut pos = 0usize;
    let mut next: i64 = 0;
    let mut ands = 0u64;
    out.reserve(n as usize);
    for i in 0..n as u64 {
        let gate = first_gate + i;
        let record_at = data_at + pos as u64;
        let bad = |what: String| malformed(record_at, format!("gate {gate}: {what}"));
        let Some(&tag) = data.get(pos) else {
            return Err(bad(format!(
                "the block's {} bytes end before its {n} gates do",
                data.len()
            )));
        };
        pos += 1;
        let op = match tag & 0b111 {
            0 => Op::Xor,
            1 => Op::And,
            2 => Op::Inv,
            3 => Op::Copy,
            4 => Op::Const,
            code => return Err(bad(format!("unknown operation code {code}"))),
        };
        if tag & TAG_RESERVED != 0 {
            return Err(bad(format!("reserved bits set in tag byte {tag:#04x}")));
        }
        if tag & TAG_CONST_ONE != 0 && op != Op::Const {
            return Err(bad(format!(
                "constant bit set in the tag of a {} gate",
                op.name()
            )));
        }
        let varint = |pos: &mut usize| -> Result<i64, PgcFileError> {
            let mut v: u64 = 0;
            for k in 0..MAX_VARINT_BYTES {
                let Some(&byte) = data.get(*pos) else {
                    return Err(bad("the block ends inside a varint".into()));
                };
                *pos += 1;
                v |= ((byte & 0x7f) as u64) << (7 * k);
                if byte & 0x80 == 0 {
                    return Ok(unzigzag(v));
                }
            }
            Err(bad(format!(
                "a varint longer than {MAX_VARINT_BYTES} bytes"
            )))
        };
        let out_wire = if tag & TAG_OUT_IS_NEXT != 0 {
            next
        } else {
            next + varint(&mut pos)?
        };
        let wire = |w: i64, role: &str| -> Result<WireId, PgcFileError> {
            if (0..num_wires as i64).contains(&w) {
                Ok(w as WireId)
            } else {
                Err(bad(format!(
                    "{role} wire {w} is out of range for {num_wires} wires"
                )))
            }
        };
        let o = wire(out_wire, "output")?;
        let g = match op {
            Op::Xor | Op::And => {
                let a = wire(out_wire - varint(&mut pos)?, "input")?;
                let b = wire(out_wire - varint(&mut pos)?, "input")?;
                Gate { op, a, b, out: o }
            }
            Op::Inv | Op::Copy => {
                let a = wire(out_wire - varint(&mut pos)?, "input")?;
                Gate {
                    op,
                    a,
                    b: 0,
                    out: o,
                }
            }
            Op::Const => Gate::constant(tag & TAG_CONST_ONE != 0, o),
        };
        ands += (op == Op::And) as u64;
        out.push(g);
        next = out_wire + 1;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{assign_slots, levelize};
    use crate::builder::Builder;
    use crate::generate::random_circuit;
    use crate::ports::{CType, InputPort, OutputPort, Owner, Visibility};

    fn millionaires() -> (Circuit, Interface) {
        let (mut b, inputs) = Builder::new(&[32, 32]);
        let gt = b.lt_signed(&inputs[1], &inputs[0]);
        let one = b.constant(true);
        let eq = b.eq(&inputs[0], &inputs[1]);
        b.output(&[gt]);
        b.output(&[eq, one]);
        let c = b.finish();
        let i32t = CType::Int {
            bits: 32,
            signed: true,
        };
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
        for cut in 0..bytes.len() {
            let e = read_pgc_from(&bytes[..cut]).unwrap_err();
            match e.kind {
                PgcErrorKind::NotPgc => assert!(cut < 8),
                PgcErrorKind::Truncated { offset, .. } => assert_eq!(offset, cut as u64),
                ref k => panic!("cut at {cut}: {k}"),
            }
        }
        let mut longer = bytes.clone();
        longer.push(0);
        let e = read_pgc_from(&longer[..]).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "byte {}: unexpected data after the final checksum",
                bytes.len()
            )
        );
    }

    #[test]
    fn every_corruption_is_detected_without_panicking() {
        let (c, iface) = millionaires();
        let bytes = to_bytes(&c, &iface);
        let mut seed = 0x1234_5678_9abc_def0u64;
        for i in 0..bytes.len() {
            for _ in 0..3 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let mut v = bytes.clone();
                let flip = (seed as u8) | 1;
                v[i] ^= flip;
                let e = read_pgc_from(&v[..]).expect_err("corruption must be detected");
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
                    ref k => panic!("flip at {i}: unexpected {k}"),
                }
            }
        }
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

    #[test]
    fn varints_and_zigzag() {
        for d in [0i64, 1, -1, 63, -64, 64, 1 << 20, -(1 << 32), (1 << 32) - 1] {
            assert_eq!(unzigzag(zigzag(d)), d);
            let mut v = Vec::new();
            put_varint(&mut v, zigzag(d));
            assert!(v.len() <= MAX_VARINT_BYTES);
        }
    }
}
