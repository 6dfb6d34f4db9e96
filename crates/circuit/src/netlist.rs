//! Gate emission for compilers: literals (constants or possibly-complemented wires) and the
//! [`Gates`] trait that word-level building blocks are written against.
//!
//! A [`Lit`] never costs a gate to negate: complement is a flag, materialized as an INV gate
//! only when a gate output must carry it. Constants are literals too, so constant operands
//! fold away before any gate is emitted.
//!
//! [`NetBuilder`] implements [`Gates`] with constant folding, algebraic rules and structural
//! hashing, and produces a [`Circuit`] without dead gates, either in memory
//! ([`NetBuilder::finish`]) or streamed chunk by chunk ([`NetBuilder::prepare`], then
//! [`PreparedNetlist::for_each_chunk`]); with [`NetBuilder::with_spill`] its gate graph lives
//! in a temporary file instead of RAM.

use crate::ir::WireId;

/// What the building blocks minimize: AND gates (the cost in Yao) or AND depth (rounds in GMW).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum OptimizeFor {
    #[default]
    Size,
    Depth,
}

/// A Boolean signal: constant false, constant true, or wire `w` possibly complemented.
/// Encoding: 0 = false, 1 = true, `2 * (w + 1) + negated` for wires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lit(u64);

impl Lit {
    pub const FALSE: Lit = Lit(0);
    pub const TRUE: Lit = Lit(1);

    pub const fn constant(value: bool) -> Lit {
        Lit(value as u64)
    }
    pub const fn wire(w: WireId) -> Lit {
        Lit(2 * (w as u64 + 1))
    }
    /// `Some(value)` for constants.
    pub const fn as_const(self) -> Option<bool> {
        if self.0 < 2 { Some(self.0 == 1) } else { None }
    }
    /// The wire of a non-constant literal (ignoring its complement flag).
    pub const fn wire_id(self) -> Option<WireId> {
        if self.0 < 2 {
            None
        } else {
            Some((self.0 / 2 - 1) as WireId)
        }
    }
    pub const fn is_negated(self) -> bool {
        self.0 >= 2 && self.0 & 1 == 1
    }
    /// The complement (free).
    #[allow(clippy::should_implement_trait)]
    pub const fn not(self) -> Lit {
        Lit(self.0 ^ 1)
    }
    /// The literal without its complement flag (constants unchanged).
    pub const fn positive(self) -> Lit {
        if self.0 < 2 { self } else { Lit(self.0 & !1) }
    }
    /// Raw encoding, e.g. for hashing tables.
    pub const fn raw(self) -> u64 {
        self.0
    }
}

impl std::ops::Not for Lit {
    type Output = Lit;
    fn not(self) -> Lit {
        Lit(self.0 ^ 1)
    }
}

/// Anything that emits gates for the building blocks. Implementations fold constants and may
/// deduplicate; callers never assume that a call emits a gate.
pub trait Gates {
    fn xor(&mut self, a: Lit, b: Lit) -> Lit;
    fn and(&mut self, a: Lit, b: Lit) -> Lit;
    fn or(&mut self, a: Lit, b: Lit) -> Lit {
        !self.and(!a, !b)
    }
    /// `if sel { t } else { f }` with one AND.
    fn mux(&mut self, sel: Lit, t: Lit, f: Lit) -> Lit {
        let d = self.xor(t, f);
        let m = self.and(sel, d);
        self.xor(f, m)
    }
    /// Which variant of each block to build.
    fn optimize_for(&self) -> OptimizeFor {
        OptimizeFor::Size
    }
}

// ---------------------------------------------------------------------------------------
// NetBuilder: a structurally hashed gate graph with dead-gate elimination at the end.
// ---------------------------------------------------------------------------------------

use crate::compact::{Call, Item};
use crate::ir::{Circuit, Gate, Layout};
use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// How many gates each simplification rule avoided or removed while building
/// (what `pgc compile --stats` prints).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BuildStats {
    /// Gates with a constant operand that folded away (`x&0`, `x&1`, `x^0`, `x^1`).
    pub constant_folded: u64,
    /// Gates that folded away by algebraic rules: equal or complementary operands (`x^x`,
    /// `x^!x`, `x&x`, `x&!x`) and the two-level rules of [`NetBuilder`].
    pub algebraic: u64,
    /// Gates not emitted because an identical gate already existed (structural hashing).
    pub structural_hashing: u64,
    /// Emitted gates removed because no output depends on them.
    pub dead_removed: u64,
    /// The ANDs among `dead_removed`.
    pub and_dead_removed: u64,
    /// AND and XOR gates emitted (before dead-gate elimination).
    pub gates_emitted: u64,
    /// Gates of the final circuit, including the INV and constant gates added at the end.
    pub gates_final: u64,
    /// ANDs of the final circuit.
    pub and_final: u64,
    /// Calls of compact templates kept (see [`NetBuilder::call`]).
    pub calls_final: u64,
    /// Calls removed because no output depends on them.
    pub calls_dead_removed: u64,
}

/// Why a [`NetBuilder`] could not produce its circuit.
#[derive(Debug, thiserror::Error)]
pub enum NetlistError {
    #[error("the netlist needs more than 2^32 - 2 nodes (inputs and emitted gates)")]
    TooManyNodes,
    #[error("the final circuit would need {wires} wires, more than 32-bit wire ids can name")]
    TooManyWires { wires: u64 },
    #[error(
        "this netlist calls compact templates, so it has no flat gate list: take its items \
         (PreparedNetlist::for_each_item) instead"
    )]
    HasCalls,
    #[error("the netlist makes more than {limit} gates, the limit set for it")]
    GateLimit { limit: u64 },
    #[error("netlist spill file {path}: {source}")]
    Spill {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// One node of the graph, 16 bytes, the operation implied by the operand order:
/// an input bit is `(0, 0)`; an AND is `(a, b)` with `a < b` (raw literals, complements
/// allowed); an XOR is `(a, b)` with `a > b` (both uncomplemented: complements are pushed to
/// the XOR's result). Constants never occur as operands, so `a = 0` marks opaque nodes
/// unambiguously: an input bit is `(0, 0)`, an output of template call `c` is `(0, c + 1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Node {
    a: u64,
    b: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeKind {
    Input,
    CallOutput,
    And,
    Xor,
}

impl Node {
    const INPUT: Node = Node { a: 0, b: 0 };

    fn kind(self) -> NodeKind {
        if self.a == 0 {
            if self.b == 0 {
                NodeKind::Input
            } else {
                NodeKind::CallOutput
            }
        } else if self.a < self.b {
            NodeKind::And
        } else {
            NodeKind::Xor
        }
    }

    fn to_bytes(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.a.to_le_bytes());
        out[8..].copy_from_slice(&self.b.to_le_bytes());
        out
    }

    fn from_bytes(bytes: &[u8]) -> Node {
        let word = |r: std::ops::Range<usize>| {
            u64::from_le_bytes(bytes[r].try_into().expect("8-byte slice"))
        };
        Node {
            a: word(0..8),
            b: word(8..16),
        }
    }
}

/// Literal with the given raw encoding (module-private: only for stored node operands).
const fn lit_from_raw(raw: u64) -> Lit {
    Lit(raw)
}

/// A fast multiplicative hasher for the structural-hashing keys (pairs of small integers);
/// no DoS concern, the keys come from our own gate graph.
#[derive(Default, Clone, Copy)]
struct PairHasher(u64);

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(26) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type StrashMap = HashMap<(u64, u64), u32, BuildHasherDefault<PairHasher>>;

/// Structural-hashing table with bounded memory: two generations of at most `limit / 2`
/// entries; when the current one is full, the older one is dropped and the current one
/// becomes the older. Gates are reused mostly close to where they were made, so forgetting
/// old entries loses little (cf. the chunked tables of Kreuter et al.). Clearing a whole
/// table leaves no tombstones, so memory stays at two fixed-size tables.
struct Strash {
    current: StrashMap,
    previous: StrashMap,
    generation_limit: usize,
}

impl Strash {
    fn new(limit: usize) -> Strash {
        Strash {
            current: StrashMap::default(),
            previous: StrashMap::default(),
            generation_limit: (limit / 2).max(1),
        }
    }

    fn get(&self, key: (u64, u64)) -> Option<u32> {
        match self.current.get(&key) {
            Some(&v) => Some(v),
            None if self.previous.is_empty() => None,
            None => self.previous.get(&key).copied(),
        }
    }

    /// Forgets every entry (keeping the allocations).
    fn clear(&mut self) {
        self.current.clear();
        self.previous.clear();
    }

    fn insert(&mut self, key: (u64, u64), node: u32) {
        if self.current.len() >= self.generation_limit {
            // Keep the allocation: the cleared old generation becomes the new current one.
            std::mem::swap(&mut self.current, &mut self.previous);
            self.current.clear();
        }
        self.current.insert(key, node);
    }
}

/// Largest node count: node ids are `u32` wire ids of [`Lit::wire`], with one id to spare.
const MAX_NODES: u64 = u32::MAX as u64 - 1;

/// How many of the newest nodes the two-level rules can look into (16 bytes each). A fixed
/// window, kept the same way in RAM and spill mode, so both build identical circuits.
const RECENT_NODES: usize = 1 << 16;

/// Nodes per chunk when spilled nodes are read back (16 bytes each: 1 MiB).
const SPILL_CHUNK_NODES: usize = 1 << 16;

/// Default bound of the structural-hashing table in entries: two tables of 2^16 buckets,
/// about 3 MB, so lookups stay in cache. (Measured on a multiply-accumulate loop: 15 M gates
/// per second at this size against 4.6 M with 1.8 M entries, which no longer fit in cache.
/// Reuse is mostly local; raise the limit with [`NetBuilder::set_strash_limit`] where a
/// program recomputes values far apart.)
pub const DEFAULT_STRASH_LIMIT: usize = 2 * ((1 << 16) / 8 * 7);

/// The emitted nodes, in RAM or streamed to a temporary file.
enum NodeStore {
    /// Fixed-size chunks of [`SPILL_CHUNK_NODES`]: no reallocation copies, no doubling slack.
    Memory(Vec<Vec<Node>>),
    Spill(SpillFile),
}

/// A temporary file of the nodes in chunks of [`SPILL_CHUNK_NODES`], as 16-byte records:
/// a node as it is, except that consecutive outputs of one call (nine in ten nodes of a
/// compact body) are one record, `a` = [`CALL_RUN`] | count and `b` the call's field. Writing
/// fresh pages of a file costs far more than reading them back, so the smaller file pays.
/// Removed when dropped.
struct SpillFile {
    path: crate::tempfiles::TempPath,
    writer: Option<BufWriter<File>>,
    /// The file reopened for reading, after writing ended.
    reader: Option<File>,
    nodes: u64,
    /// Byte offset of each chunk's first record, and the bytes written.
    chunk_starts: Vec<u64>,
    bytes: u64,
    /// The call-output run not yet written: the nodes' `b` and how many.
    run: Option<(u64, u64)>,
    /// Bytes of the chunk being read, reused: a fresh megabyte per chunk was fresh pages
    /// from the system each time (a page fault every 4 KiB).
    read_buf: Vec<u8>,
}

/// Marks a record of [`SpillFile`] standing for a run of call outputs (a node's `a` is a
/// literal, below 2^34).
const CALL_RUN: u64 = 1 << 63;

impl SpillFile {
    fn create(dir: &Path) -> io::Result<SpillFile> {
        let (path, file) = crate::tempfiles::create_temp_file(dir, "pgc-netlist")?;
        Ok(SpillFile {
            path,
            writer: Some(BufWriter::with_capacity(1 << 20, file)),
            reader: None,
            nodes: 0,
            chunk_starts: Vec::new(),
            bytes: 0,
            run: None,
            read_buf: Vec::new(),
        })
    }

    fn write_record(&mut self, node: Node) -> io::Result<()> {
        let w = self
            .writer
            .as_mut()
            .expect("spill file written after it was closed");
        w.write_all(&node.to_bytes())?;
        self.bytes += 16;
        Ok(())
    }

    fn end_run(&mut self) -> io::Result<()> {
        match self.run.take() {
            Some((b, count)) => self.write_record(Node {
                a: CALL_RUN | count,
                b,
            }),
            None => Ok(()),
        }
    }

    fn push(&mut self, node: Node) -> io::Result<()> {
        if self.nodes.is_multiple_of(SPILL_CHUNK_NODES as u64) {
            self.end_run()?;
            self.chunk_starts.push(self.bytes);
        }
        self.nodes += 1;
        if node.kind() == NodeKind::CallOutput {
            match &mut self.run {
                Some((b, count)) if *b == node.b => *count += 1,
                _ => {
                    self.end_run()?;
                    self.run = Some((node.b, 1));
                }
            }
            return Ok(());
        }
        self.end_run()?;
        self.write_record(node)
    }

    /// Ends writing; later reads use the file itself.
    fn close_writer(&mut self) -> io::Result<()> {
        if self.writer.is_some() {
            self.end_run()?;
        }
        if let Some(w) = self.writer.take() {
            let file = w.into_inner().map_err(|e| e.into_error())?;
            self.reader = Some(file);
        }
        Ok(())
    }

    fn chunk_count(&self) -> usize {
        self.chunk_starts.len()
    }

    /// Reads chunk `k` (nodes from `k * SPILL_CHUNK_NODES`) into `buf`.
    fn read_chunk(&mut self, k: usize, buf: &mut Vec<Node>) -> io::Result<()> {
        self.close_writer()?;
        let file = self.reader.as_mut().expect("reader set by close_writer");
        let start = self.chunk_starts[k];
        let end = self.chunk_starts.get(k + 1).copied().unwrap_or(self.bytes);
        file.seek(SeekFrom::Start(start))?;
        let bytes = &mut self.read_buf;
        bytes.resize((end - start) as usize, 0);
        file.read_exact(bytes)?;
        let want = (self.nodes - (k * SPILL_CHUNK_NODES) as u64).min(SPILL_CHUNK_NODES as u64);
        buf.clear();
        for record in bytes.chunks_exact(16).map(Node::from_bytes) {
            if record.a & CALL_RUN == 0 {
                buf.push(record);
                continue;
            }
            let count = record.a & !CALL_RUN;
            if buf.len() as u64 + count > want {
                break;
            }
            let output = Node { a: 0, b: record.b };
            buf.extend(std::iter::repeat_n(output, count as usize));
        }
        if buf.len() as u64 != want {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("chunk {k} of the netlist spill does not hold {want} nodes"),
            ));
        }
        Ok(())
    }
}

impl NodeStore {
    /// Calls `f(first_index, nodes)` on consecutive chunks, from the last chunk to the
    /// first; stops at an error of `f`.
    fn for_each_chunk_backward<E>(
        &mut self,
        f: &mut ChunkVisitor<'_, E>,
        io_error: impl Fn(io::Error) -> E,
    ) -> Result<(), E> {
        match self {
            NodeStore::Memory(chunks) => {
                for (k, chunk) in chunks.iter().enumerate().rev() {
                    f((k * SPILL_CHUNK_NODES) as u64, chunk)?;
                }
                Ok(())
            }
            NodeStore::Spill(file) => {
                let mut buf = Vec::with_capacity(SPILL_CHUNK_NODES);
                for k in (0..file.chunk_count()).rev() {
                    file.read_chunk(k, &mut buf).map_err(&io_error)?;
                    f((k * SPILL_CHUNK_NODES) as u64, &buf)?;
                }
                Ok(())
            }
        }
    }

    /// Calls `f(first_index, nodes)` on consecutive chunks, first to last; stops at an error
    /// of `f`.
    fn for_each_chunk_forward<E>(
        &mut self,
        f: &mut ChunkVisitor<'_, E>,
        io_error: impl Fn(io::Error) -> E,
    ) -> Result<(), E> {
        match self {
            NodeStore::Memory(chunks) => {
                // The store is consumed: free each chunk once its gates are out, so the nodes
                // and the finished gates are not held twice.
                for (k, slot) in chunks.iter_mut().enumerate() {
                    let chunk = std::mem::take(slot);
                    f((k * SPILL_CHUNK_NODES) as u64, &chunk)?;
                }
                Ok(())
            }
            NodeStore::Spill(file) => {
                let mut buf = Vec::with_capacity(SPILL_CHUNK_NODES);
                for k in 0..file.chunk_count() {
                    file.read_chunk(k, &mut buf).map_err(&io_error)?;
                    f((k * SPILL_CHUNK_NODES) as u64, &buf)?;
                }
                Ok(())
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Template calls (compact circuits)
// ---------------------------------------------------------------------------------------

/// Calls per chunk of the call store (a chunk is decoded whole when read back).
const CALL_CHUNK_CALLS: usize = 1 << 14;

/// Encoded bytes after which a chunk is closed whatever its call count: calls with tens of
/// thousands of inputs (a row of a table stored once) would otherwise make chunks of
/// hundreds of MiB when decoded (8 bytes an input).
const CALL_CHUNK_BYTES: usize = 1 << 20;

/// One recorded call of a compact template: its outputs are nodes
/// `first_node..first_node + num_outputs`, its inputs `inputs` (literals of earlier nodes).
#[derive(Clone, Debug, Default)]
struct CallRecord {
    first_node: u64,
    template: u32,
    num_outputs: u32,
    inputs: Vec<Lit>,
}

/// Where a chunk of encoded calls lives.
enum CallChunkData {
    Memory(Vec<u8>),
    /// `len` bytes at `offset` of the spill file.
    Spilled {
        offset: u64,
        len: usize,
    },
}

struct CallChunk {
    first_call: u64,
    /// The previous call's first node (distances of the chunk's first call count from it).
    base: u64,
    calls: usize,
    data: CallChunkData,
}

/// The calls of a [`NetBuilder`], in emission order, varint-encoded in chunks: each input
/// literal as its distance below the call's first output node (recent values cost a byte
/// or two), so a call of a template with tens of inputs takes tens of bytes. In spill mode
/// finished chunks go to a temporary file, so RAM holds one chunk.
struct CallStore {
    chunks: Vec<CallChunk>,
    current: Vec<u8>,
    current_calls: usize,
    total: u64,
    last_first_node: u64,
    chunk_base: u64,
    /// Where chunks spill (the file is made with the first chunk: most netlists have no
    /// calls).
    spill_dir: Option<PathBuf>,
    spill: Option<(crate::tempfiles::TempPath, File, u64)>,
    /// Bytes of the spilled chunk being read.
    read_buf: Vec<u8>,
}

fn put_varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Decodes the varint at `pos`. Call inputs (most of the call store, decoded in three passes)
/// are mostly one or two bytes: those take no loop.
#[inline]
fn get_varint(bytes: &[u8], pos: &mut usize) -> u64 {
    let b0 = bytes[*pos];
    if b0 < 0x80 {
        *pos += 1;
        return b0 as u64;
    }
    if let Some(&b1) = bytes.get(*pos + 1)
        && b1 < 0x80
    {
        *pos += 2;
        return (b0 & 0x7f) as u64 | (b1 as u64) << 7;
    }
    get_varint_long(bytes, pos)
}

fn get_varint_long(bytes: &[u8], pos: &mut usize) -> u64 {
    let mut x = 0u64;
    let mut shift = 0;
    loop {
        let b = bytes[*pos];
        *pos += 1;
        x |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return x;
        }
        shift += 7;
    }
}

impl CallStore {
    fn new() -> CallStore {
        CallStore {
            chunks: Vec::new(),
            current: Vec::new(),
            current_calls: 0,
            total: 0,
            last_first_node: 0,
            chunk_base: 0,
            spill_dir: None,
            spill: None,
            read_buf: Vec::new(),
        }
    }

    /// Spills finished chunks to a temporary file in `dir`.
    fn spill_to(dir: &Path) -> CallStore {
        let mut store = CallStore::new();
        store.spill_dir = Some(dir.to_path_buf());
        store
    }

    fn push(&mut self, call: &CallRecord) -> io::Result<()> {
        let out = &mut self.current;
        put_varint(out, call.first_node - self.last_first_node);
        put_varint(out, call.template as u64);
        put_varint(out, call.num_outputs as u64);
        put_varint(out, call.inputs.len() as u64);
        let top = 2 * (call.first_node + 1);
        for lit in &call.inputs {
            put_varint(out, top - lit.raw());
        }
        self.last_first_node = call.first_node;
        self.current_calls += 1;
        self.total += 1;
        if self.current_calls == CALL_CHUNK_CALLS || self.current.len() >= CALL_CHUNK_BYTES {
            self.seal()?;
        }
        Ok(())
    }

    /// Closes the current chunk.
    fn seal(&mut self) -> io::Result<()> {
        if self.current_calls == 0 {
            return Ok(());
        }
        let bytes = std::mem::take(&mut self.current);
        if self.spill.is_none()
            && let Some(dir) = &self.spill_dir
        {
            let (path, file) = crate::tempfiles::create_temp_file(dir, "pgc-calls")?;
            self.spill = Some((path, file, 0));
        }
        let data = match &mut self.spill {
            None => CallChunkData::Memory(bytes),
            Some((_, file, end)) => {
                file.seek(SeekFrom::Start(*end))?;
                file.write_all(&bytes)?;
                let offset = *end;
                *end += bytes.len() as u64;
                CallChunkData::Spilled {
                    offset,
                    len: bytes.len(),
                }
            }
        };
        self.chunks.push(CallChunk {
            first_call: self.total - self.current_calls as u64,
            base: self.chunk_base,
            calls: self.current_calls,
            data,
        });
        self.current_calls = 0;
        self.chunk_base = self.last_first_node;
        Ok(())
    }

    /// Decodes chunk `k` into `out`.
    fn read_chunk(&mut self, k: usize, out: &mut Vec<CallRecord>) -> io::Result<()> {
        let chunk = &self.chunks[k];
        let bytes: &[u8] = match &chunk.data {
            CallChunkData::Memory(b) => b,
            CallChunkData::Spilled { offset, len } => {
                let (_, file, _) = self.spill.as_mut().expect("spilled chunks have a file");
                file.seek(SeekFrom::Start(*offset))?;
                // Reused: a fresh buffer per chunk was fresh pages each time.
                self.read_buf.resize(*len, 0);
                file.read_exact(&mut self.read_buf)?;
                &self.read_buf
            }
        };
        out.resize_with(chunk.calls, CallRecord::default);
        let mut pos = 0;
        let mut base = chunk.base;
        for rec in out.iter_mut() {
            rec.first_node = base + get_varint(bytes, &mut pos);
            base = rec.first_node;
            rec.template = get_varint(bytes, &mut pos) as u32;
            rec.num_outputs = get_varint(bytes, &mut pos) as u32;
            let n = get_varint(bytes, &mut pos) as usize;
            let top = 2 * (rec.first_node + 1);
            rec.inputs.clear();
            rec.inputs
                .extend((0..n).map(|_| lit_from_raw(top - get_varint(bytes, &mut pos))));
        }
        Ok(())
    }
}

/// Reads calls by index from a sealed [`CallStore`], one decoded chunk at a time (callers
/// walk the calls in order, forward or backward).
#[derive(Default)]
struct CallCursor {
    chunk: Option<usize>,
    recs: Vec<CallRecord>,
}

impl CallCursor {
    fn get(&mut self, store: &mut CallStore, index: u64) -> io::Result<&CallRecord> {
        // Every output node of a call asks for it: answer from the loaded chunk first.
        if let Some(k) = self.chunk {
            let c = &store.chunks[k];
            if (c.first_call..c.first_call + c.calls as u64).contains(&index) {
                return Ok(&self.recs[(index - c.first_call) as usize]);
            }
        }
        let k = store.chunks.partition_point(|c| c.first_call <= index) - 1;
        if self.chunk != Some(k) {
            store.read_chunk(k, &mut self.recs)?;
            self.chunk = Some(k);
        }
        Ok(&self.recs[(index - store.chunks[k].first_call) as usize])
    }
}

/// What [`NodeStore::for_each_chunk_forward`] calls: first node index and the chunk.
type ChunkVisitor<'a, E> = dyn FnMut(u64, &[Node]) -> Result<(), E> + 'a;

/// Input value `index_of_first..` occupies nodes `first_node..first_node + width`.
#[derive(Clone, Copy, Debug)]
struct InputRun {
    first_node: u32,
    first_index: u32,
    width: u32,
}

/// Builds a circuit from gate calls, simplifying as it goes:
///
/// - constant folding: `x&0 = 0`, `x&1 = x`, `x^0 = x`, `x^1 = !x`;
/// - algebraic rules: `x^x = 0`, `x^!x = 1`, `x&x = x`, `x&!x = 0`, and two-level rules
///   looking one gate deep into recent gates: `x^(x^y) = y`, `x&(x&y) = x&y`,
///   `x&(!x&y) = 0`, `x&!(!x&y) = x`, `(x&y)&(!x&z) = 0`;
/// - structural hashing: an AND or XOR of the same (normalized) operands is made once; XOR
///   complements are pushed to the result (`!a ^ b = !(a ^ b)`) so one gate serves every
///   polarity. The table's memory is bounded ([`NetBuilder::set_strash_limit`]).
///
/// Negation is free (a flag of [`Lit`]); at the end, each wire whose complement an AND or an
/// output needs gets one INV gate. [`finish`](NetBuilder::finish) removes gates that no
/// output depends on and numbers the wires densely: input value `i` is consecutive wires from
/// 0 in declaration order, then the constant gates and INVs of inputs, then the gates in
/// emission order, each followed by its INV if one is needed. The result is in
/// single-assignment form and topologically ordered (not AND-levelized: use
/// [`crate::analysis::levelize`] for that).
///
/// Nodes (inputs and gates) take 16 bytes each in RAM, or none with
/// [`with_spill`](NetBuilder::with_spill), which streams them to a temporary file; the
/// strash table is bounded in both cases.
pub struct NetBuilder {
    optimize: OptimizeFor,
    store: NodeStore,
    num_nodes: u64,
    inputs: Vec<InputRun>,
    num_input_bits: u64,
    input_widths: Vec<u32>,
    output_widths: Vec<u32>,
    output_bits: Vec<Lit>,
    strash: Strash,
    /// The newest nodes, node `v` at `v % RECENT_NODES`.
    recent: Vec<Node>,
    stats: BuildStats,
    error: Option<NetlistError>,
    /// Closed regions whose instances proved independent, in node numbers.
    regions: Vec<NodeRegion>,
    open_region: Option<OpenRegion>,
    calls: CallStore,
    /// Most gates [`intern`](NetBuilder::intern) emits (see [`NetBuilder::set_gate_limit`]).
    gate_limit: u64,
}

/// A parallel region in node numbers: instance `k` is nodes `bounds[k]..bounds[k + 1]`.
#[derive(Clone, Debug)]
struct NodeRegion {
    line: u32,
    bounds: Vec<u64>,
}

/// The region being recorded: gates of the current instance may read nodes made before
/// `bounds[0]` or since the last bound, never nodes of an earlier instance.
#[derive(Clone, Debug)]
struct OpenRegion {
    line: u32,
    bounds: Vec<u64>,
}

impl OpenRegion {
    fn earlier_instances(&self) -> std::ops::Range<u64> {
        self.bounds[0]..*self.bounds.last().expect("bounds start non-empty")
    }
}

impl NetBuilder {
    /// A builder that keeps its nodes in RAM.
    pub fn new(optimize: OptimizeFor) -> NetBuilder {
        NetBuilder::with_store(optimize, NodeStore::Memory(Vec::new()))
    }

    /// A builder that streams its nodes to a temporary file in `dir` (removed when the
    /// builder or its [`PreparedNetlist`] is dropped), so that RAM use does not grow with
    /// the number of gates: only the bounded strash table, the inputs and outputs, and at
    /// the end two bits per node. Produces exactly the circuit [`NetBuilder::new`] would.
    pub fn with_spill(optimize: OptimizeFor, dir: &Path) -> Result<NetBuilder, NetlistError> {
        let file = SpillFile::create(dir).map_err(|source| NetlistError::Spill {
            path: dir.to_path_buf(),
            source,
        })?;
        let calls = CallStore::spill_to(dir);
        let mut b = NetBuilder::with_store(optimize, NodeStore::Spill(file));
        b.calls = calls;
        Ok(b)
    }

    fn with_store(optimize: OptimizeFor, store: NodeStore) -> NetBuilder {
        NetBuilder {
            optimize,
            store,
            num_nodes: 0,
            inputs: Vec::new(),
            num_input_bits: 0,
            input_widths: Vec::new(),
            output_widths: Vec::new(),
            output_bits: Vec::new(),
            strash: Strash::new(DEFAULT_STRASH_LIMIT),
            recent: Vec::new(),
            stats: BuildStats::default(),
            error: None,
            regions: Vec::new(),
            open_region: None,
            calls: CallStore::new(),
            gate_limit: u64::MAX,
        }
    }

    /// Calls compact template `template` (an index into the templates the caller keeps; see
    /// [`crate::compact`]) on `inputs` and returns its `num_outputs` output bits, fresh
    /// wires. A call is opaque: nothing folds through it, it is never shared, and it stays
    /// whole (all outputs) if any output is used, or goes whole if none is. A netlist with
    /// calls finishes only as items ([`PreparedNetlist::for_each_item`]). Closes any open
    /// parallel region (regions hold plain gates only).
    ///
    /// # Panics
    /// If an input names a wire this builder never made.
    pub fn call(&mut self, template: u32, inputs: &[Lit], num_outputs: u32) -> Vec<Lit> {
        for lit in inputs {
            if let Some(w) = lit.wire_id() {
                assert!(
                    (w as u64) < self.num_nodes,
                    "NetBuilder::call: input names wire {w}, which this builder never made"
                );
            }
        }
        self.open_region = None;
        if num_outputs == 0 {
            return Vec::new();
        }
        let first = self.num_nodes;
        if first + num_outputs as u64 > MAX_NODES || self.error.is_some() {
            self.fail(NetlistError::TooManyNodes);
            return vec![Lit::FALSE; num_outputs as usize];
        }
        let marker = Node {
            a: 0,
            b: self.calls.total + 1,
        };
        for _ in 0..num_outputs {
            self.push_node(marker);
        }
        let record = CallRecord {
            first_node: first,
            template,
            num_outputs,
            inputs: inputs.to_vec(),
        };
        if let Err(source) = self.calls.push(&record) {
            let path = self
                .calls
                .spill
                .as_ref()
                .map(|s| s.0.path().to_path_buf())
                .or(self.calls.spill_dir.clone());
            self.fail(NetlistError::Spill {
                path: path.unwrap_or_default(),
                source,
            });
        }
        (first..first + num_outputs as u64)
            .map(|n| Lit::wire(n as WireId))
            .collect()
    }

    /// Starts recording a parallel region (a loop whose iterations may be independent)
    /// that came from source line `line`; the first instance starts now. Returns false
    /// (and records nothing) if a region is already open: regions do not nest, the outer
    /// one is the unit of parallelism.
    pub fn begin_region(&mut self, line: u32) -> bool {
        if self.open_region.is_some() {
            return false;
        }
        self.open_region = Some(OpenRegion {
            line,
            bounds: vec![self.num_nodes],
        });
        // Every instance starts from the same (empty) table, so instances that make the
        // same gate calls come out identical and share one template.
        self.strash.clear();
        true
    }

    /// Ends the current instance of the open region and starts the next.
    pub fn next_instance(&mut self) {
        if let Some(r) = &mut self.open_region {
            r.bounds.push(self.num_nodes);
            self.strash.clear();
        }
    }

    /// Closes the open region and keeps it. Returns false if there was none: in particular
    /// when a gate of one instance read a gate of an earlier one (a loop-carried
    /// dependence), which gives the region up on the spot (its gates simply stay
    /// sequential, and a loop nested in its later iterations may open a region of its own).
    pub fn end_region(&mut self) -> bool {
        let Some(mut r) = self.open_region.take() else {
            return false;
        };
        if r.bounds.len() < 2 || r.bounds.last() != Some(&self.num_nodes) {
            r.bounds.push(self.num_nodes);
        }
        self.regions.push(NodeRegion {
            line: r.line,
            bounds: r.bounds,
        });
        true
    }

    /// Whether a region is being recorded.
    pub fn region_open(&self) -> bool {
        self.open_region.is_some()
    }

    /// Whether node `v` is one of the input bits.
    fn is_input_node(&self, v: u64) -> bool {
        let i = self.inputs.partition_point(|r| (r.first_node as u64) <= v);
        i > 0 && {
            let r = self.inputs[i - 1];
            v < r.first_node as u64 + r.width as u64
        }
    }

    /// Records a dependence if an operand of a new gate is a gate of an earlier instance.
    fn check_region_operands(&mut self, node: Node) {
        let Some(r) = &self.open_region else {
            return;
        };
        let earlier = r.earlier_instances();
        let crosses = [node.a, node.b].into_iter().any(|raw| {
            lit_from_raw(raw)
                .wire_id()
                .is_some_and(|w| earlier.contains(&(w as u64)) && !self.is_input_node(w as u64))
        });
        if crosses {
            // Give the region up at once: the loop stays sequential, and loops nested in its
            // remaining iterations may become regions of their own.
            self.open_region = None;
        }
    }

    /// Bounds the structural-hashing table to about `entries` entries (at least 2; the
    /// default is [`DEFAULT_STRASH_LIMIT`], about 3 MB): when full, it forgets the older
    /// half, so smaller tables may emit duplicate gates. Call before emitting gates.
    pub fn set_strash_limit(&mut self, entries: usize) {
        self.strash = Strash::new(entries);
    }

    /// Stops emitting gates once `gates` are emitted: the builder then fails with
    /// [`NetlistError::GateLimit`] (further gates fold to constants, so a caller whose input
    /// asks for more gates than memory holds finds out at its next [`NetBuilder::error`]
    /// check instead of running out). `None`: no limit but the node count's.
    pub fn set_gate_limit(&mut self, gates: Option<u64>) {
        self.gate_limit = gates.unwrap_or(u64::MAX);
    }

    /// Declares the next input value of `width` bits; returns its bits, least significant
    /// first. Inputs may be declared at any time; they keep their declaration order.
    pub fn input(&mut self, width: u32) -> Vec<Lit> {
        let first = self.num_nodes;
        if first + width as u64 > MAX_NODES {
            self.fail(NetlistError::TooManyNodes);
            self.input_widths.push(width);
            return vec![Lit::FALSE; width as usize];
        }
        for _ in 0..width {
            self.push_node(Node::INPUT);
        }
        if width > 0 {
            self.inputs.push(InputRun {
                first_node: first as u32,
                first_index: self.num_input_bits as u32,
                width,
            });
        }
        self.num_input_bits += width as u64;
        self.input_widths.push(width);
        (first..first + width as u64)
            .map(|n| Lit::wire(n as WireId))
            .collect()
    }

    /// Declares the next output value: its bits, least significant first. Bits may be
    /// constants, complemented, inputs, or repeat each other.
    ///
    /// # Panics
    /// If a literal names a wire this builder never made (a literal of another builder).
    pub fn output(&mut self, bits: &[Lit]) {
        for b in bits {
            if let Some(w) = b.wire_id() {
                assert!(
                    (w as u64) < self.num_nodes,
                    "NetBuilder::output: literal of wire {w} that this builder never made"
                );
            }
        }
        self.output_widths.push(bits.len() as u32);
        self.output_bits.extend_from_slice(bits);
    }

    /// AND and XOR gates emitted so far (before dead-gate elimination).
    pub fn gates_emitted(&self) -> u64 {
        self.stats.gates_emitted
    }

    /// The statistics so far (the removal and final counts are filled in at the end).
    pub fn stats(&self) -> &BuildStats {
        &self.stats
    }

    /// The first error met while building (the node limit, or a spill-file write error);
    /// once set, further gates fold to constants and finishing fails with it.
    pub fn error(&self) -> Option<&NetlistError> {
        self.error.as_ref()
    }

    /// The circuit and the statistics.
    ///
    /// # Panics
    /// Where [`try_finish`](NetBuilder::try_finish) fails: more than 2^32 - 2 nodes or
    /// wires, or (only with [`with_spill`](NetBuilder::with_spill)) an I/O error.
    pub fn finish(self) -> (Circuit, BuildStats) {
        match self.try_finish() {
            Ok(done) => done,
            Err(e) => panic!("NetBuilder::finish: {e}"),
        }
    }

    /// The circuit and the statistics; see [`NetBuilder`] for the wire numbering.
    pub fn try_finish(self) -> Result<(Circuit, BuildStats), NetlistError> {
        self.prepare()?.into_circuit()
    }

    fn fail(&mut self, e: NetlistError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    fn push_node(&mut self, node: Node) -> u32 {
        let id = self.num_nodes;
        if self.recent.len() < RECENT_NODES {
            self.recent.push(node);
        } else {
            self.recent[id as usize % RECENT_NODES] = node;
        }
        match &mut self.store {
            NodeStore::Memory(chunks) => match chunks.last_mut() {
                Some(last) if last.len() < SPILL_CHUNK_NODES => last.push(node),
                _ => {
                    // The first chunk grows as needed: a template's builder holds a few
                    // hundred nodes, and a full chunk per template costs page zeroing.
                    let capacity = if chunks.is_empty() {
                        256
                    } else {
                        SPILL_CHUNK_NODES
                    };
                    let mut chunk = Vec::with_capacity(capacity);
                    chunk.push(node);
                    chunks.push(chunk);
                }
            },
            NodeStore::Spill(file) => {
                if let Err(source) = file.push(node) {
                    let path = file.path.path().to_path_buf();
                    self.fail(NetlistError::Spill { path, source });
                }
            }
        }
        self.num_nodes += 1;
        id as u32
    }

    /// The gate for a normalized node: an existing one if the table knows it.
    ///
    /// # Panics
    /// If an operand names a wire this builder never made (a literal of another builder).
    fn intern(&mut self, node: Node) -> Lit {
        // Operands are sorted, so the larger raw literal has the larger wire.
        let top = lit_from_raw(node.a.max(node.b)).wire_id().unwrap_or(0);
        assert!(
            (top as u64) < self.num_nodes,
            "NetBuilder: gate operand names wire {top}, which this builder never made"
        );
        self.check_region_operands(node);
        if let Some(id) = self.strash.get((node.a, node.b)) {
            // Inside a region, a gate of an earlier instance is not shared: each instance
            // computes its own (that is what keeps instances independent).
            let shared_across_instances = self
                .open_region
                .as_ref()
                .is_some_and(|r| r.earlier_instances().contains(&(id as u64)));
            if !shared_across_instances {
                self.stats.structural_hashing += 1;
                return Lit::wire(id);
            }
        }
        if self.stats.gates_emitted >= self.gate_limit {
            self.fail(NetlistError::GateLimit {
                limit: self.gate_limit,
            });
        }
        if self.num_nodes >= MAX_NODES || self.error.is_some() {
            self.fail(NetlistError::TooManyNodes);
            return Lit::FALSE;
        }
        let id = self.push_node(node);
        self.strash.insert((node.a, node.b), id);
        self.stats.gates_emitted += 1;
        Lit::wire(id)
    }

    /// The node of a wire literal if it is among the newest [`RECENT_NODES`].
    fn recent_node(&self, lit: Lit) -> Option<Node> {
        let w = lit.wire_id()? as u64;
        if w + (RECENT_NODES as u64) < self.num_nodes || w >= self.num_nodes {
            return None;
        }
        // Inside a region only the current instance's own nodes count as recent: whether an
        // older node is within the window depends on the instance's position, and the
        // instances should simplify alike.
        if let Some(r) = &self.open_region
            && w < *r.bounds.last().expect("bounds start non-empty")
        {
            return None;
        }
        Some(self.recent[w as usize % RECENT_NODES])
    }

    /// The operands of a literal's AND node (ignoring the literal's complement).
    fn and_operands(&self, lit: Lit) -> Option<(Lit, Lit)> {
        let node = self.recent_node(lit)?;
        (node.kind() == NodeKind::And).then(|| (lit_from_raw(node.a), lit_from_raw(node.b)))
    }

    /// Two-level AND rules: `x & (x & y) = x & y`, `x & (!x & y) = 0`,
    /// `x & !(!x & y) = x`, and `(x & y) & (!x & z) = 0`.
    fn and_two_level(&self, a: Lit, b: Lit) -> Option<Lit> {
        for (x, y) in [(a, b), (b, a)] {
            if let Some((c, d)) = self.and_operands(y) {
                if !y.is_negated() {
                    if x == c || x == d {
                        return Some(y);
                    }
                    if x == !c || x == !d {
                        return Some(Lit::FALSE);
                    }
                } else if x == !c || x == !d {
                    return Some(x);
                }
            }
        }
        if !a.is_negated()
            && !b.is_negated()
            && let (Some((c1, d1)), Some((c2, d2))) = (self.and_operands(a), self.and_operands(b))
            && [c1, d1].iter().any(|&p| p == !c2 || p == !d2)
        {
            return Some(Lit::FALSE);
        }
        None
    }

    /// Two-level XOR rule: `x ^ (x ^ y) = y` (in any polarity).
    fn xor_two_level(&self, a: Lit, b: Lit) -> Option<Lit> {
        for (x, y) in [(a, b), (b, a)] {
            let Some(node) = self.recent_node(y) else {
                continue;
            };
            if node.kind() != NodeKind::Xor {
                continue;
            }
            let (c, d) = (lit_from_raw(node.a), lit_from_raw(node.b));
            let flip = x.is_negated() != y.is_negated();
            let other = if x.positive() == c {
                d
            } else if x.positive() == d {
                c
            } else {
                continue;
            };
            return Some(if flip { !other } else { other });
        }
        None
    }

    /// Runs dead-gate elimination (a backward pass over the nodes, one liveness bit per
    /// node) and fixes the final numbering; the gates then stream out of
    /// [`PreparedNetlist::for_each_chunk`] without being held whole.
    pub fn prepare(mut self) -> Result<PreparedNetlist, NetlistError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let n = self.num_nodes as usize;
        let mut live = BitVec::new(n);
        let mut negated = BitVec::new(n);
        for &lit in &self.output_bits {
            if let Some(w) = lit.wire_id() {
                live.set(w as usize);
                if lit.is_negated() {
                    negated.set(w as usize);
                }
            }
        }
        let (mut dead, mut and_dead, mut and_live) = (0u64, 0u64, 0u64);
        let spill_path = match &self.store {
            NodeStore::Spill(f) => Some(f.path.path().to_path_buf()),
            NodeStore::Memory(_) => None,
        };
        let to_error = |source: io::Error| NetlistError::Spill {
            path: spill_path.clone().unwrap_or_default(),
            source,
        };
        let calls = &mut self.calls;
        calls.seal().map_err(&to_error)?;
        let mut cursor = CallCursor::default();
        let mut call_consts = [false; 2];
        let (mut calls_live, mut calls_dead, mut call_outputs_live) = (0u64, 0u64, 0u64);
        self.store
            .for_each_chunk_backward(
                &mut |first, nodes| {
                    for (k, node) in nodes.iter().enumerate().rev() {
                        let v = first as usize + k;
                        let kind = node.kind();
                        if kind == NodeKind::CallOutput {
                            // An output right after another of the same call is not the
                            // first: no need to look the call up.
                            if k > 0 && nodes[k - 1].a == 0 && nodes[k - 1].b == node.b {
                                continue;
                            }
                            let rec = cursor.get(calls, node.b - 1)?;
                            // A call is decided at its first output, when every later node
                            // (every reader of any of its outputs) has been seen.
                            if v as u64 != rec.first_node {
                                continue;
                            }
                            let outputs = v..v + rec.num_outputs as usize;
                            if !outputs.clone().any(|w| live.get(w)) {
                                calls_dead += 1;
                                continue;
                            }
                            calls_live += 1;
                            call_outputs_live += rec.num_outputs as u64;
                            outputs.for_each(|w| live.set(w));
                            for &lit in &rec.inputs {
                                match lit.as_const() {
                                    Some(value) => call_consts[value as usize] = true,
                                    None => {
                                        let w = lit.wire_id().expect("non-constant") as usize;
                                        live.set(w);
                                        if lit.is_negated() {
                                            negated.set(w);
                                        }
                                    }
                                }
                            }
                            continue;
                        }
                        if !live.get(v) {
                            if kind != NodeKind::Input {
                                dead += 1;
                                and_dead += (kind == NodeKind::And) as u64;
                            }
                            continue;
                        }
                        match kind {
                            NodeKind::Input | NodeKind::CallOutput => {}
                            NodeKind::Xor | NodeKind::And => {
                                and_live += (kind == NodeKind::And) as u64;
                                for raw in [node.a, node.b] {
                                    let lit = lit_from_raw(raw);
                                    let w = lit.wire_id().expect("operands are wires") as usize;
                                    live.set(w);
                                    if lit.is_negated() {
                                        negated.set(w);
                                    }
                                }
                            }
                        }
                    }
                    Ok(())
                },
                |e| e,
            )
            .map_err(&to_error)?;

        // Inputs are kept regardless of use and numbered by declaration: move their bits out
        // of the gate bitmaps.
        let n_in = self.num_input_bits as usize;
        let mut input_negated = BitVec::new(n_in);
        for run in &self.inputs {
            for k in 0..run.width as usize {
                let v = run.first_node as usize + k;
                if negated.get(v) {
                    input_negated.set(run.first_index as usize + k);
                }
                live.clear(v);
                negated.clear(v);
            }
        }
        let gates = PairRank::new(live, negated);
        let input_inv = PairRank::new(input_negated, BitVec::new(n_in));

        let needs_const = |value: bool| {
            call_consts[value as usize] || self.output_bits.contains(&Lit::constant(value))
        };
        let const_wires: [Option<WireId>; 2] = {
            let mut next = n_in as u64;
            let mut take = |needed: bool| {
                needed.then(|| {
                    next += 1;
                    (next - 1) as WireId
                })
            };
            let f = take(needs_const(false));
            let t = take(needs_const(true));
            [f, t]
        };
        let n_const = const_wires.iter().flatten().count() as u64;
        let input_inv_base = n_in as u64 + n_const;
        let gate_base = input_inv_base + input_inv.ones_first;
        let num_wires = gate_base + gates.ones_first + gates.ones_second;
        if num_wires > u32::MAX as u64 {
            return Err(NetlistError::TooManyWires { wires: num_wires });
        }
        let numbering = Numbering {
            inputs: self.inputs,
            gates,
            input_inv,
            input_inv_base: input_inv_base as u32,
            gate_base: gate_base as u32,
            const_wires,
        };
        let output_wires = self
            .output_bits
            .iter()
            .map(|&lit| numbering.wire_of(lit))
            .collect();
        let gate_count = num_wires - n_in as u64;
        // Region bounds in final gate indices: gates are the constants and input INVs, then
        // each kept node (and its INV) in node order.
        let first_node_gate = gate_base - n_in as u64;
        let total_ranked = numbering.gates.ones_first + numbering.gates.ones_second;
        let gate_index = |v: u64| -> usize {
            let r = if v as usize >= n {
                total_ranked
            } else {
                numbering.gates.rank(v as usize)
            };
            (first_node_gate + r) as usize
        };
        let region_spans = self
            .regions
            .iter()
            .map(|r| crate::parallel::RegionSpan {
                line: r.line,
                bounds: r.bounds.iter().map(|&v| gate_index(v)).collect(),
            })
            .collect();
        let mut stats = self.stats;
        stats.dead_removed = dead;
        stats.and_dead_removed = and_dead;
        stats.gates_final = gate_count - call_outputs_live;
        stats.and_final = and_live;
        stats.calls_final = calls_live;
        stats.calls_dead_removed = calls_dead;
        Ok(PreparedNetlist {
            layout: Layout {
                num_wires: num_wires as u32,
                input_widths: self.input_widths,
                output_widths: self.output_widths,
                output_wires,
            },
            store: self.store,
            numbering,
            stats,
            spill_path,
            region_spans,
            calls: self.calls,
        })
    }
}

impl Gates for NetBuilder {
    fn xor(&mut self, a: Lit, b: Lit) -> Lit {
        if let Some(x) = a.as_const() {
            self.stats.constant_folded += 1;
            return if x { !b } else { b };
        }
        if let Some(y) = b.as_const() {
            self.stats.constant_folded += 1;
            return if y { !a } else { a };
        }
        if a.positive() == b.positive() {
            self.stats.algebraic += 1;
            return Lit::constant(a != b);
        }
        if let Some(r) = self.xor_two_level(a, b) {
            self.stats.algebraic += 1;
            return r;
        }
        let negate = a.is_negated() != b.is_negated();
        let (x, y) = (a.positive().raw(), b.positive().raw());
        let r = self.intern(Node {
            a: x.max(y),
            b: x.min(y),
        });
        if negate { !r } else { r }
    }

    fn and(&mut self, a: Lit, b: Lit) -> Lit {
        match (a.as_const(), b.as_const()) {
            (Some(false), _) | (_, Some(false)) => {
                self.stats.constant_folded += 1;
                return Lit::FALSE;
            }
            (Some(true), _) => {
                self.stats.constant_folded += 1;
                return b;
            }
            (_, Some(true)) => {
                self.stats.constant_folded += 1;
                return a;
            }
            (None, None) => {}
        }
        if a == b {
            self.stats.algebraic += 1;
            return a;
        }
        if a == !b {
            self.stats.algebraic += 1;
            return Lit::FALSE;
        }
        if let Some(r) = self.and_two_level(a, b) {
            self.stats.algebraic += 1;
            return r;
        }
        let (x, y) = (a.raw(), b.raw());
        self.intern(Node {
            a: x.min(y),
            b: x.max(y),
        })
    }

    fn optimize_for(&self) -> OptimizeFor {
        self.optimize
    }
}

/// A plain bit vector.
struct BitVec {
    words: Vec<u64>,
}

impl BitVec {
    fn new(bits: usize) -> BitVec {
        BitVec {
            words: vec![0; bits.div_ceil(64)],
        }
    }
    fn get(&self, i: usize) -> bool {
        self.words[i / 64] >> (i % 64) & 1 == 1
    }
    fn set(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }
    fn clear(&mut self, i: usize) {
        self.words[i / 64] &= !(1 << (i % 64));
    }
}

/// Two bit vectors over the same positions with constant-time rank of their sum (ones of
/// either before a position): a cumulative count per 512 positions plus a 16-bit offset per
/// 64, i.e. under 3/8 bit of overhead per position, instead of a 32-bit map entry per wire.
/// A query reads one count, one offset and one word of each vector.
struct PairRank {
    first: BitVec,
    second: BitVec,
    /// Ones before each 8-word block.
    block_ranks: Vec<u64>,
    /// Ones before each word, counted from its block's start (at most 2 * 448).
    word_offsets: Vec<u16>,
    ones_first: u64,
    ones_second: u64,
}

impl PairRank {
    fn new(first: BitVec, second: BitVec) -> PairRank {
        debug_assert_eq!(first.words.len(), second.words.len());
        let words = first.words.len();
        let mut block_ranks = Vec::with_capacity(words.div_ceil(8));
        let mut word_offsets = Vec::with_capacity(words);
        let (mut ones_first, mut ones_second) = (0u64, 0u64);
        for (w, (&x, &y)) in first.words.iter().zip(&second.words).enumerate() {
            if w % 8 == 0 {
                block_ranks.push(ones_first + ones_second);
            }
            let block_start = block_ranks[w / 8];
            word_offsets.push((ones_first + ones_second - block_start) as u16);
            ones_first += x.count_ones() as u64;
            ones_second += y.count_ones() as u64;
        }
        PairRank {
            first,
            second,
            block_ranks,
            word_offsets,
            ones_first,
            ones_second,
        }
    }

    /// Ones of both vectors at positions `< i`.
    fn rank(&self, i: usize) -> u64 {
        let word = i / 64;
        let mut r = self.block_ranks[word / 8] + self.word_offsets[word] as u64;
        let below = (1u64 << (i % 64)) - 1;
        r += (self.first.words[word] & below).count_ones() as u64;
        r += (self.second.words[word] & below).count_ones() as u64;
        r
    }
}

/// The final wire numbering, computed from ranks instead of a per-wire table.
struct Numbering {
    inputs: Vec<InputRun>,
    /// First: gate nodes kept (reachable from an output); second: gate nodes whose
    /// complement is needed (one INV right after the gate). A gate's wire is the count of
    /// both before it.
    gates: PairRank,
    /// First: input bits (by input index) whose complement is needed; second: empty.
    input_inv: PairRank,
    input_inv_base: u32,
    gate_base: u32,
    const_wires: [Option<WireId>; 2],
}

impl Numbering {
    fn input_index(&self, node: usize) -> usize {
        let run = self
            .inputs
            .partition_point(|r| r.first_node as usize <= node)
            - 1;
        let r = self.inputs[run];
        debug_assert!(node < r.first_node as usize + r.width as usize);
        r.first_index as usize + (node - r.first_node as usize)
    }

    /// The final wire of a kept gate node.
    fn gate_wire(&self, node: usize) -> WireId {
        (self.gate_base as u64 + self.gates.rank(node)) as WireId
    }

    /// The final wire holding `lit` (for wires: the node's wire or its INV).
    fn wire_of(&self, lit: Lit) -> WireId {
        match lit.as_const() {
            Some(v) => self.const_wires[v as usize].expect("constant wire allocated"),
            None => {
                let node = lit.wire_id().expect("non-constant") as usize;
                if self.gates.first.get(node) {
                    self.gate_wire(node) + lit.is_negated() as WireId
                } else {
                    let index = self.input_index(node);
                    if lit.is_negated() {
                        self.input_inv_base + self.input_inv.rank(index) as WireId
                    } else {
                        index as WireId
                    }
                }
            }
        }
    }
}

/// A chunk of items being made, whose calls' boxes (and their vectors) are reused by the
/// next chunk: both streaming passes make one call item per call of the body, three
/// allocations each otherwise.
#[derive(Default)]
struct ItemChunk {
    items: Vec<Item>,
    /// Boxed on purpose: the box itself is what an item holds and what is reused.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<Call>>,
}

impl ItemChunk {
    fn with_capacity(n: usize) -> ItemChunk {
        ItemChunk {
            items: Vec::with_capacity(n),
            spare: Vec::new(),
        }
    }

    fn clear(&mut self) {
        for item in self.items.drain(..) {
            if let Item::Call(call) = item {
                self.spare.push(call);
            }
        }
    }

    /// A call box for the next item, its vectors empty.
    fn call_box(&mut self) -> Box<Call> {
        match self.spare.pop() {
            Some(mut call) => {
                call.inputs.clear();
                call.outputs.clear();
                call
            }
            None => Box::new(Call {
                template: 0,
                inputs: Vec::new(),
                outputs: Vec::new(),
            }),
        }
    }
}

/// Appends the items of nodes `first..first + nodes.len()` (kept gates with their INVs,
/// and each kept call at its first output node) to `out`. A node's items depend on that
/// node alone, so chunks can be turned into items in any order.
fn push_node_items(
    num: &Numbering,
    calls: &mut CallStore,
    cursor: &mut CallCursor,
    first: u64,
    nodes: &[Node],
    out: &mut ItemChunk,
) -> io::Result<()> {
    // The call whose outputs are being passed over (its item is made at its first output).
    let mut skipping_call = 0;
    for (k, node) in nodes.iter().enumerate() {
        let v = first as usize + k;
        let kind = node.kind();
        if kind == NodeKind::CallOutput && node.b == skipping_call {
            continue;
        }
        if !num.gates.first.get(v) {
            continue;
        }
        if kind == NodeKind::CallOutput {
            let rec = cursor.get(calls, node.b - 1)?;
            skipping_call = node.b;
            if v as u64 != rec.first_node {
                continue;
            }
            let mut call = out.call_box();
            call.template = rec.template;
            call.inputs
                .extend(rec.inputs.iter().map(|&l| num.wire_of(l)));
            // A live call's outputs are all kept: each output's wire follows the previous
            // one's (and its INV's, if it has one), so one rank serves them all.
            let first_wire = num.gate_wire(v);
            let mut w = first_wire;
            for j in 0..rec.num_outputs as usize {
                call.outputs.push(w);
                w += 1 + num.gates.second.get(v + j) as WireId;
            }
            out.items.push(Item::Call(call));
            let mut w = first_wire;
            for j in 0..rec.num_outputs as usize {
                if num.gates.second.get(v + j) {
                    out.items.push(Item::Gate(Gate::inv(w, w + 1)));
                    w += 1;
                }
                w += 1;
            }
        } else {
            let a = num.wire_of(lit_from_raw(node.a));
            let b = num.wire_of(lit_from_raw(node.b));
            let w = num.gate_wire(v);
            out.items.push(Item::Gate(match kind {
                NodeKind::And => Gate::and(a, b, w),
                _ => Gate::xor(b, a, w),
            }));
            if num.gates.second.get(v) {
                out.items.push(Item::Gate(Gate::inv(w, w + 1)));
            }
        }
    }
    Ok(())
}

/// A finished netlist whose dead gates are gone and whose numbering is fixed: the layout
/// and counts are known, and the gates can be streamed out (from RAM or the spill file)
/// without being held whole.
pub struct PreparedNetlist {
    layout: Layout,
    store: NodeStore,
    numbering: Numbering,
    stats: BuildStats,
    spill_path: Option<PathBuf>,
    region_spans: Vec<crate::parallel::RegionSpan>,
    calls: CallStore,
}

impl PreparedNetlist {
    /// The parallel regions that proved independent, as gate ranges of the final circuit
    /// (see [`crate::ParallelCircuit::from_flat`]).
    pub fn region_spans(&self) -> &[crate::parallel::RegionSpan] {
        &self.region_spans
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }
    /// Gates of the final circuit.
    pub fn gate_count(&self) -> u64 {
        self.stats.gates_final
    }
    /// ANDs of the final circuit.
    pub fn and_count(&self) -> u64 {
        self.stats.and_final
    }
    pub fn stats(&self) -> &BuildStats {
        &self.stats
    }

    /// Hands the final gates to `f` in order, in chunks (boundaries carry no meaning), and
    /// returns the statistics. Stops at the first error of `f`.
    pub fn for_each_chunk<E: From<NetlistError>>(
        self,
        mut f: impl FnMut(&[Gate]) -> Result<(), E>,
    ) -> Result<BuildStats, E> {
        if self.calls.total > 0 {
            return Err(E::from(NetlistError::HasCalls));
        }
        let mut gates: Vec<Gate> = Vec::with_capacity(SPILL_CHUNK_NODES * 2);
        self.for_each_item(|items| {
            gates.clear();
            gates.extend(items.iter().map(|item| match item {
                Item::Gate(g) => *g,
                Item::Call(_) => unreachable!("netlists with calls were refused above"),
            }));
            f(&gates)
        })
    }

    /// Whether the netlist calls compact templates (then only
    /// [`for_each_item`](PreparedNetlist::for_each_item) can hand it out).
    pub fn has_calls(&self) -> bool {
        self.calls.total > 0
    }

    /// Hands the final body to `f` in order, in chunks of [`Item`]s: gates, and template
    /// calls whose outputs are fresh wires in single-assignment form (a call's outputs
    /// follow its inputs; an output whose complement is needed gets an INV after the call).
    /// Wires are numbered as for [`for_each_chunk`](PreparedNetlist::for_each_chunk), the
    /// outputs of a call counting like gates. The chunks are `f`'s to change (a slotter
    /// renames them in place). Stops at the first error of `f`.
    pub fn for_each_item<E: From<NetlistError>>(
        mut self,
        mut f: impl FnMut(&mut [Item]) -> Result<(), E>,
    ) -> Result<BuildStats, E> {
        let mut out = self.item_chunk();
        self.push_prefix_items(&mut out.items);
        let spill_error = self.spill_error::<E>();
        let (num, calls) = (&self.numbering, &mut self.calls);
        let mut cursor = CallCursor::default();
        self.store.for_each_chunk_forward(
            &mut |first, nodes| {
                push_node_items(num, calls, &mut cursor, first, nodes, &mut out)
                    .map_err(&spill_error)?;
                if out.items.len() >= SPILL_CHUNK_NODES {
                    f(&mut out.items)?;
                    out.clear();
                }
                Ok(())
            },
            &spill_error,
        )?;
        if !out.items.is_empty() {
            f(&mut out.items)?;
        }
        Ok(self.stats)
    }

    /// The items of [`for_each_item`](PreparedNetlist::for_each_item) in reverse: chunks
    /// from the last to the first, each chunk's items in body order (so walking every chunk
    /// backward walks the body backward). Leaves the netlist as it was, so it can be handed
    /// out forward afterwards (a backward pass for last uses, then the forward one, without
    /// a copy of the body). Stops at the first error of `f`.
    pub fn for_each_item_backward<E: From<NetlistError>>(
        &mut self,
        mut f: impl FnMut(&[Item]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut out = self.item_chunk();
        let spill_error = self.spill_error::<E>();
        let (num, calls) = (&self.numbering, &mut self.calls);
        let mut cursor = CallCursor::default();
        self.store.for_each_chunk_backward(
            &mut |first, nodes| {
                out.clear();
                push_node_items(num, calls, &mut cursor, first, nodes, &mut out)
                    .map_err(&spill_error)?;
                if out.items.is_empty() {
                    return Ok(());
                }
                f(&out.items)
            },
            &spill_error,
        )?;
        out.clear();
        self.push_prefix_items(&mut out.items);
        if !out.items.is_empty() {
            f(&out.items)?;
        }
        Ok(())
    }

    /// A buffer for one chunk of items, sized for small bodies too (templates): a full
    /// chunk each would be zeroed pages.
    fn item_chunk(&self) -> ItemChunk {
        ItemChunk::with_capacity(SPILL_CHUNK_NODES.min(self.stats.gates_final as usize + 64))
    }

    /// The items before the first node's: the constant gates, then the INVs of inputs.
    fn push_prefix_items(&self, out: &mut Vec<Item>) {
        let num = &self.numbering;
        for (value, wire) in num.const_wires.iter().enumerate() {
            if let Some(w) = wire {
                out.push(Item::Gate(Gate::constant(value == 1, *w)));
            }
        }
        let mut next = num.input_inv_base;
        for index in 0..self.layout.num_input_wires() as usize {
            if num.input_inv.first.get(index) {
                out.push(Item::Gate(Gate::inv(index as WireId, next)));
                next += 1;
            }
        }
    }

    /// Turns an I/O error on the spill files into the netlist's error naming the file.
    fn spill_error<E: From<NetlistError>>(&self) -> impl Fn(io::Error) -> E + use<E> {
        let path = self.spill_path.clone().unwrap_or_default();
        move |source| {
            E::from(NetlistError::Spill {
                path: path.clone(),
                source,
            })
        }
    }

    /// The whole body in memory as items (see
    /// [`for_each_item`](PreparedNetlist::for_each_item)): the layout (in single-assignment
    /// wires), the items and the statistics.
    pub fn into_items(self) -> Result<(Layout, Vec<Item>, BuildStats), NetlistError> {
        let layout = self.layout.clone();
        let mut items = Vec::new();
        let stats = self.for_each_item(|chunk| {
            items.extend_from_slice(chunk);
            Ok::<(), NetlistError>(())
        })?;
        Ok((layout, items, stats))
    }

    /// The whole circuit in memory.
    pub fn into_circuit(self) -> Result<(Circuit, BuildStats), NetlistError> {
        let layout = self.layout.clone();
        let mut gates = Vec::with_capacity(self.gate_count() as usize);
        let stats = self.for_each_chunk(|chunk| {
            gates.extend_from_slice(chunk);
            Ok::<(), NetlistError>(())
        })?;
        Ok((Circuit { layout, gates }, stats))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of every varint length, back to back, decode to themselves (the one- and
    /// two-byte fast paths and the loop alike).
    #[test]
    fn varints_round_trip() {
        let mut values = vec![0, 1, 127, 128, 255, 16_383, 16_384, 1 << 21, u64::MAX];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for k in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (k % 64));
        }
        let mut bytes = Vec::new();
        for &v in &values {
            put_varint(&mut bytes, v);
        }
        let mut pos = 0;
        for &v in &values {
            assert_eq!(get_varint(&bytes, &mut pos), v);
        }
        assert_eq!(pos, bytes.len());
    }

    /// Past its gate limit a builder emits nothing more and fails with the limit.
    #[test]
    fn a_gate_limit_stops_emission() {
        let mut g = NetBuilder::new(OptimizeFor::Size);
        g.set_gate_limit(Some(3));
        let x = g.input(8);
        let mut acc = x[0];
        for &b in &x[1..] {
            acc = g.and(acc, b);
        }
        g.output(&[acc]);
        assert_eq!(g.gates_emitted(), 3);
        assert!(matches!(
            g.error(),
            Some(NetlistError::GateLimit { limit: 3 })
        ));
        let e = g.try_finish().unwrap_err();
        assert!(e.to_string().contains("more than 3 gates"), "{e}");
    }
}
