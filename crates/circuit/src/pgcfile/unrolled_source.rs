//! [`UnrolledFile`]: a version 1 or 2 `.pgc` file (an unrolled circuit) as a [`GateSource`]
//! that re-reads the file block by block at every pass, so that its gates are never held
//! in memory whole (a 113 M-gate circuit is 1.8 GB of gate records loaded; streamed, one
//! block). Version 2 files are flattened while streaming, with the templates held.
//!
//! The gates, layout, counts and fingerprint are those of the circuit [`read_pgc`] loads
//! (for version 2 the flattened circuit), so a party streaming a file and a party holding
//! the same circuit in memory agree at the handshake.
//!
//! [`read_pgc`]: super::read_pgc

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use super::{
    LAYOUT_OFFSET, PGC_COMPACT_FORMAT_VERSION, PGC_FORMAT_VERSION, PgcErrorKind, PgcFileError,
    PgcHeader, PgcReader, PhaseSink, SEGMENT_BYTES, Segment, SegmentHashes, check_wires_justified,
    read_header, read_parallel_phases, unjustified_wires,
};
use crate::ir::{CHUNK_GATES, Gate, GateSource, Layout, Op, WireId};
use crate::limits::MemoryNeed;
use crate::parallel::{Instance, Template};
use crate::ports::Interface;

/// Statistics of an unrolled circuit, computed in the one streaming pass of
/// [`UnrolledFile::open`]: memory follows the wires (a depth per wire), never the gates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamedStats {
    pub gates: u64,
    pub and_gates: u64,
    pub xor_gates: u64,
    pub inv_gates: u64,
    pub copy_gates: u64,
    pub const_gates: u64,
    /// Longest path to an output wire, counted in ANDs.
    pub and_depth: u64,
    /// ANDs on each AND level (level `i` = depth `i + 1`), including empty levels.
    pub ands_per_level: Vec<u64>,
    /// Parallel regions (version 2): each region's source line, instances, and AND gates.
    pub regions: Vec<RegionSummary>,
}

/// One parallel region of a version 2 file, as [`StreamedStats`] reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegionSummary {
    pub line: u32,
    pub instances: u64,
    pub and_gates: u64,
}

/// An unrolled circuit file (format version 1 or 2) as a [`GateSource`] streamed from disk.
///
/// [`open`](UnrolledFile::open) reads the whole file once, checking it as [`read_pgc`]
/// does (checksums, counts, wire ranges, every wire set before it is read, outputs set)
/// and computing [`StreamedStats`]; then a second pass computes the fingerprint. It
/// records a BLAKE3 hash of every stretch of about 1 MiB of the file.
///
/// Each [`for_each_chunk`](GateSource::for_each_chunk) reopens the file and reads it
/// stretch by stretch, checking each against its recorded hash *before* decoding any of
/// it: every gate handed out comes from bytes identical to those checked at `open`.
///
/// **If the file changes or cannot be read during a pass**, `for_each_chunk` stops handing
/// out gates, stores the error (see [`take_error`](UnrolledFile::take_error)) and returns
/// `Ok(())`, exactly as [`CompactFile`](super::CompactFile) does: the consumer then has
/// fewer than [`gate_count`](GateSource::gate_count) gates and must check `take_error`
/// before using any result.
///
/// [`read_pgc`]: super::read_pgc
#[derive(Debug)]
pub struct UnrolledFile {
    path: PathBuf,
    header: PgcHeader,
    /// The flattened circuit's layout (version 2: the global wires plus every instance's
    /// internal wires).
    layout: Layout,
    file_len: u64,
    segments: Vec<Segment>,
    stats: StreamedStats,
    fingerprint: [u8; 32],
    error: super::LastPassError,
}

/// How one pass ended early: the consumer's error, or a file problem.
enum PassError<E> {
    Sink(E),
    File(PgcFileError),
}

impl<E> From<PgcFileError> for PassError<E> {
    fn from(e: PgcFileError) -> Self {
        PassError::File(e)
    }
}

impl UnrolledFile {
    /// Opens the unrolled circuit file at `path` (see the type's docs). Returns the source
    /// and the file's interface; errors name the file. A version 3 file is refused with
    /// [`PgcErrorKind::CompactCircuit`].
    pub fn open(path: impl AsRef<Path>) -> Result<(UnrolledFile, Interface), PgcFileError> {
        let path = path.as_ref();
        UnrolledFile::open_inner(path).map_err(|e| PgcFileError {
            path: Some(path.to_path_buf()),
            kind: e.kind,
        })
    }

    fn open_inner(path: &Path) -> Result<(UnrolledFile, Interface), PgcFileError> {
        let file = File::open(path)?;
        let file_len = file.metadata()?.len();
        let mut tee = SegmentTee {
            inner: BufReader::with_capacity(1 << 16, file),
            hashes: SegmentHashes::default(),
        };
        let mut stats = StatsSink {
            file_len,
            ..StatsSink::default()
        };
        let (header, flat) = stream_file(&mut tee, &mut stats)?;
        tee.hashes.close();
        if tee.hashes.segments.iter().map(|s| s.bytes).sum::<u64>() != file_len {
            return Err(changed("its length changed while it was read".into()));
        }
        let layout = flat_layout(&header.layout, flat.internal_wires)?;
        stats.finish(&layout)?;
        let mut source = UnrolledFile {
            path: path.to_path_buf(),
            header,
            layout,
            file_len,
            segments: tee.hashes.segments,
            stats: stats.stats,
            fingerprint: [0; 32],
            error: super::LastPassError::default(),
        };
        if source.stats.gates != flat.gates {
            return Err(changed("its gate count changed while it was read".into()));
        }
        // The fingerprint hashes the gate count before the gates (as Circuit's does), so it
        // takes a second pass, through the same checked stretches as any run.
        let mut hasher = blake3::Hasher::new();
        hasher.update(b"pgc circuit v1\0");
        hasher.update(&source.layout.to_bytes());
        hasher.update(&source.stats.gates.to_le_bytes());
        let mut hashed = 0u64;
        source
            .pass(
                &mut |chunk: &[Gate]| -> Result<(), std::convert::Infallible> {
                    crate::ir::hash_gates(&mut hasher, chunk);
                    hashed += chunk.len() as u64;
                    Ok(())
                },
            )
            .map_err(|e| match e {
                PassError::File(e) => e,
                PassError::Sink(never) => match never {},
            })?;
        if hashed != source.stats.gates {
            return Err(changed("it holds a different number of gates now".into()));
        }
        source.fingerprint = *hasher.finalize().as_bytes();
        let interface = source.header.interface.clone();
        Ok((source, interface))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's header: format version, the stored layout (for version 2 the global
    /// one), the interface.
    pub fn header(&self) -> &PgcHeader {
        &self.header
    }

    /// What the streaming pass of [`open`](UnrolledFile::open) measured.
    pub fn stats(&self) -> &StreamedStats {
        &self.stats
    }

    /// The error that ended a pass early (see the type's docs), if any; taking it clears it.
    pub fn take_error(&self) -> Option<PgcFileError> {
        self.error.take()
    }

    /// One pass: the file read again through its recorded stretches.
    fn pass<E>(&self, f: &mut dyn FnMut(&[Gate]) -> Result<(), E>) -> Result<(), PassError<E>> {
        let file = File::open(&self.path).map_err(PgcFileError::from)?;
        let len = file.metadata().map_err(PgcFileError::from)?.len();
        if len != self.file_len {
            return Err(changed(format!("it had {} bytes, now {len}", self.file_len)).into());
        }
        let mut reader = CheckedStretches {
            file,
            segments: &self.segments,
            next: 0,
            offset: 0,
            buf: Vec::new(),
            pos: 0,
        };
        let mut sink_error = None;
        let mut chunk = |gates: &[Gate]| -> Result<(), PgcFileError> {
            f(gates).map_err(|e| {
                sink_error = Some(e);
                PgcFileError::from(io::Error::other("stopped by the consumer"))
            })
        };
        let result = stream_file(&mut reader, &mut GatesTo(&mut chunk));
        if let Some(e) = sink_error {
            return Err(PassError::Sink(e));
        }
        result.map(|_| ()).map_err(PassError::File)
    }
}

impl GateSource for UnrolledFile {
    fn layout(&self) -> &Layout {
        &self.layout
    }
    fn gate_count(&self) -> u64 {
        self.stats.gates
    }
    fn and_count(&self) -> u64 {
        self.stats.and_gates
    }
    fn fingerprint(&self) -> [u8; 32] {
        self.fingerprint
    }
    fn for_each_chunk<E>(&self, f: &mut dyn FnMut(&[Gate]) -> Result<(), E>) -> Result<(), E> {
        // Each pass reports only its own failure.
        self.error.clear();
        match self.pass(f) {
            Ok(()) => Ok(()),
            Err(PassError::Sink(e)) => Err(e),
            Err(PassError::File(e)) => {
                self.error.set(PgcFileError {
                    path: Some(self.path.clone()),
                    kind: e.kind,
                });
                Ok(())
            }
        }
    }
    /// The error that ended the last pass early (kept until the next pass; unlike
    /// [`UnrolledFile::take_error`] this does not clear it), so the protocol reveals no
    /// output of a pass that stopped short.
    fn check_complete(&self) -> Result<(), String> {
        self.error.check()
    }
    fn form(&self) -> crate::ir::CircuitForm {
        crate::ir::CircuitForm::Streamed
    }
}

fn changed(what: String) -> PgcFileError {
    PgcErrorKind::ChangedSinceOpened(what).into()
}

/// What [`stream_file`] learned beyond the gates.
struct FlatCounts {
    gates: u64,
    internal_wires: u64,
}

/// The flattened layout: the stored one with the instances' internal wires added.
fn flat_layout(layout: &Layout, internal_wires: u64) -> Result<Layout, PgcFileError> {
    let mut flat = layout.clone();
    // The reader checked that the flattened wires fit in 32 bits.
    flat.num_wires = u32::try_from(layout.num_wires as u64 + internal_wires)
        .map_err(|_| changed("its flattened wire count changed".into()))?;
    Ok(flat)
}

/// Reads a whole version 1 or 2 file from `reader`, checking it, and hands its (flattened)
/// gates to `gates` in order, block by block; region summaries go to `regions`.
fn stream_file<R: Read>(
    reader: R,
    sink: &mut dyn StreamSink,
) -> Result<(PgcHeader, FlatCounts), PgcFileError> {
    let (mut src, header) = read_header(reader)?;
    if header.version != PGC_COMPACT_FORMAT_VERSION {
        sink.header(&header)?;
    }
    match header.version {
        PGC_FORMAT_VERSION => {
            let mut reader = PgcReader::after_header(src, header);
            let mut block = Vec::new();
            let mut total = 0u64;
            loop {
                block.clear();
                let n = reader.read_block(&mut block)?;
                if n == 0 {
                    break;
                }
                total += n as u64;
                sink.gates(&block)?;
            }
            let header = reader.header().clone();
            check_wires_justified(&header.layout, total)?;
            Ok((
                header,
                FlatCounts {
                    gates: total,
                    internal_wires: 0,
                },
            ))
        }
        PGC_COMPACT_FORMAT_VERSION => Err(PgcErrorKind::CompactCircuit.into()),
        _ => {
            let mut flatten = Flatten {
                next_internal: header.layout.num_wires,
                local: Vec::new(),
                buf: Vec::with_capacity(CHUNK_GATES),
                out: sink,
                region_instances: 0,
                region_ands: 0,
            };
            let body = read_parallel_phases(&mut src, &header.layout, &mut flatten)?;
            Ok((
                header,
                FlatCounts {
                    gates: body.gates,
                    internal_wires: body.internal_wires,
                },
            ))
        }
    }
}

/// What [`stream_file`] hands out: the header first, then the (flattened) gates in
/// order, and (version 2) a summary of each region once it is read.
trait StreamSink {
    fn header(&mut self, _header: &PgcHeader) -> Result<(), PgcFileError> {
        Ok(())
    }
    fn gates(&mut self, gates: &[Gate]) -> Result<(), PgcFileError>;
    fn region(&mut self, _summary: RegionSummary) {}
}

/// A pass: the gates go to a closure.
struct GatesTo<'a>(&'a mut dyn FnMut(&[Gate]) -> Result<(), PgcFileError>);

impl StreamSink for GatesTo<'_> {
    fn gates(&mut self, gates: &[Gate]) -> Result<(), PgcFileError> {
        (self.0)(gates)
    }
}

/// Flattens version 2 phases into a gate stream, as [`ParallelCircuit::for_each_flat_chunk`]
/// does (instance-internal wires numbered from the layout's wire count up, in order).
///
/// [`ParallelCircuit::for_each_flat_chunk`]: crate::parallel::ParallelCircuit::for_each_flat_chunk
struct Flatten<'a> {
    next_internal: WireId,
    local: Vec<WireId>,
    buf: Vec<Gate>,
    out: &'a mut dyn StreamSink,
    region_instances: u64,
    region_ands: u64,
}

impl Flatten<'_> {
    fn flush(&mut self) -> Result<(), PgcFileError> {
        if !self.buf.is_empty() {
            self.out.gates(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}

impl PhaseSink for Flatten<'_> {
    fn sequential_gates(&mut self, gates: &[Gate]) -> Result<(), PgcFileError> {
        self.flush()?;
        self.out.gates(gates)
    }

    fn end_sequential(&mut self) {}

    fn instance(&mut self, inst: Instance, templates: &[Template]) -> Result<(), PgcFileError> {
        // The reader checked the template index, the instance's arity and that the
        // flattened wires fit in 32 bits before handing the instance over.
        let tpl = &templates[inst.template as usize];
        self.local.clear();
        self.local.extend_from_slice(&inst.inputs);
        let first_gate = self.local.len();
        for _ in &tpl.gates {
            self.local.push(self.next_internal);
            self.next_internal += 1;
        }
        for (&lw, &gw) in tpl.outputs.iter().zip(&inst.outputs) {
            if lw as usize >= first_gate {
                self.local[lw as usize] = gw;
            }
        }
        for g in &tpl.gates {
            let mut ng = *g;
            match g.op {
                Op::Xor | Op::And => {
                    ng.a = self.local[g.a as usize];
                    ng.b = self.local[g.b as usize];
                }
                Op::Inv | Op::Copy => ng.a = self.local[g.a as usize],
                Op::Const => {}
            }
            ng.out = self.local[g.out as usize];
            self.region_ands += (g.op == Op::And) as u64;
            self.buf.push(ng);
            if self.buf.len() >= CHUNK_GATES {
                self.flush()?;
            }
        }
        self.region_instances += 1;
        Ok(())
    }

    /// Hands out the region's last gates (so nothing is buffered once the phases end).
    fn end_region(&mut self, line: u32) -> Result<(), PgcFileError> {
        self.flush()?;
        self.out.region(RegionSummary {
            line,
            instances: std::mem::take(&mut self.region_instances),
            and_gates: std::mem::take(&mut self.region_ands),
        });
        Ok(())
    }
}

/// Records a hash of every stretch of exactly [`SEGMENT_BYTES`] (the last one shorter) of
/// what is read through it.
struct SegmentTee<R> {
    inner: R,
    hashes: SegmentHashes,
}

impl<R: Read> Read for SegmentTee<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let room = (SEGMENT_BYTES - self.hashes.bytes).min(buf.len() as u64) as usize;
        let n = self.inner.read(&mut buf[..room])?;
        self.hashes.update(&buf[..n]);
        if self.hashes.bytes == SEGMENT_BYTES {
            self.hashes.close();
        }
        Ok(n)
    }
}

/// Reads the file stretch by stretch, releasing a stretch's bytes only once its hash
/// matches the one recorded at open.
struct CheckedStretches<'a> {
    file: File,
    segments: &'a [Segment],
    next: usize,
    offset: u64,
    buf: Vec<u8>,
    pos: usize,
}

impl Read for CheckedStretches<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.buf.len() {
            let Some(segment) = self.segments.get(self.next) else {
                return Ok(0);
            };
            // `segment.bytes` was measured at open (at most SEGMENT_BYTES): safe to allocate.
            self.buf.resize(segment.bytes as usize, 0);
            let start = self.offset;
            self.file.read_exact(&mut self.buf).map_err(|e| {
                if e.kind() == io::ErrorKind::UnexpectedEof {
                    changed_io(format!("it ends inside bytes {start}.."))
                } else {
                    e
                }
            })?;
            if *blake3::hash(&self.buf).as_bytes() != segment.hash {
                return Err(changed_io(format!(
                    "its bytes {start}..{} differ",
                    start + segment.bytes
                )));
            }
            self.offset += segment.bytes;
            self.next += 1;
            self.pos = 0;
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn changed_io(what: String) -> io::Error {
    io::Error::other(format!(
        "the file changed since it was opened ({what}); open it again"
    ))
}

/// Computes [`StreamedStats`] gate by gate, checking that every wire is set before it is
/// read (what [`validate`](crate::analysis::validate) checks for a circuit in memory).
#[derive(Default)]
struct StatsSink {
    stats: StreamedStats,
    /// The file's length in bytes.
    file_len: u64,
    num_inputs: u64,
    /// AND depth per wire, grown as wires are written (memory follows the wires used).
    depth: Vec<u32>,
    /// Bit `w`: wire `w` (not an input) has been written.
    set: Vec<u64>,
}

impl StreamSink for StatsSink {
    fn header(&mut self, header: &PgcHeader) -> Result<(), PgcFileError> {
        self.num_inputs = header.layout.input_widths.iter().map(|&w| w as u64).sum();
        // A version 1 gate record takes at least a byte and writes one wire: bound the
        // wires (and this sink's per-wire depths) by the file's size before any gate.
        if header.version == PGC_FORMAT_VERSION
            && let Some(most) =
                unjustified_wires(header.layout.num_wires, self.num_inputs, self.file_len)
        {
            return Err(super::malformed(
                LAYOUT_OFFSET,
                format!(
                    "the layout declares {} wires, but {} input wires and the gates a file \
                     of {} bytes can hold justify at most {most}",
                    header.layout.num_wires, self.num_inputs, self.file_len
                ),
            ));
        }
        Ok(())
    }

    fn region(&mut self, summary: RegionSummary) {
        self.stats.regions.push(summary);
    }

    fn gates(&mut self, gates: &[Gate]) -> Result<(), PgcFileError> {
        for g in gates {
            let index = self.stats.gates;
            let mut d = 0u32;
            for &w in g.inputs() {
                if !self.is_set(w) {
                    return Err(PgcErrorKind::InvalidCircuit(
                        crate::analysis::CircuitError::UnsetRead {
                            gate: index as usize,
                            wire: w,
                        },
                    )
                    .into());
                }
                d = d.max(self.depth.get(w as usize).copied().unwrap_or(0));
            }
            let counts = &mut self.stats;
            match g.op {
                Op::And => {
                    d += 1;
                    counts.and_gates += 1;
                    let level = d as usize - 1;
                    if counts.ands_per_level.len() <= level {
                        counts.ands_per_level.resize(level + 1, 0);
                    }
                    counts.ands_per_level[level] += 1;
                }
                Op::Xor => counts.xor_gates += 1,
                Op::Inv => counts.inv_gates += 1,
                Op::Copy => counts.copy_gates += 1,
                Op::Const => {
                    d = 0;
                    counts.const_gates += 1;
                }
            }
            counts.gates += 1;
            let out = g.out as usize;
            if out >= self.depth.len() {
                // A small version 2 file can flatten to billions of wires: measure first.
                if out >= self.depth.capacity() {
                    MemoryNeed::per_item(out as u64 + 1, "wires", 5, "AND depths and flags")
                        .check()
                        .map_err(PgcErrorKind::from)?;
                }
                self.depth.resize(out + 1, 0);
            }
            self.depth[out] = d;
            super::set_bit(&mut self.set, g.out as u64);
        }
        Ok(())
    }
}

impl StatsSink {
    fn is_set(&self, w: WireId) -> bool {
        (w as u64) < self.num_inputs || super::get_bit(&self.set, w as u64)
    }

    /// The outputs are set; the depth to them.
    fn finish(&mut self, layout: &Layout) -> Result<(), PgcFileError> {
        for (index, &w) in layout.output_wires.iter().enumerate() {
            if !self.is_set(w) {
                return Err(PgcErrorKind::InvalidCircuit(
                    crate::analysis::CircuitError::OutputUnset { index, wire: w },
                )
                .into());
            }
            let d = self.depth.get(w as usize).copied().unwrap_or(0) as u64;
            self.stats.and_depth = self.stats.and_depth.max(d);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{read_pgc, write_pgc_file, write_pgc_parallel_file};
    use super::*;
    use crate::analysis::stats;
    use crate::generate::random_circuit;
    use crate::ir::Circuit;
    use crate::parallel::{ParallelCircuit, RegionSpan};

    fn test_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pgc-unrolled-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn gates_of(source: &impl GateSource) -> Vec<Gate> {
        let mut gates = Vec::new();
        source
            .for_each_chunk(&mut |chunk: &[Gate]| -> Result<(), ()> {
                gates.extend_from_slice(chunk);
                Ok(())
            })
            .unwrap();
        gates
    }

    /// `n` instances of `t = a_i & b_i; u = t ^ a_i` in a region at line 5, then a
    /// sequential chain combining the `u`s: a circuit with a version 2 file.
    fn with_region(n: u32) -> ParallelCircuit {
        let mut gates = Vec::new();
        let first = 2 * n;
        for i in 0..n {
            gates.push(Gate::and(i, n + i, first + 2 * i));
            gates.push(Gate::xor(first + 2 * i, i, first + 2 * i + 1));
        }
        let mut acc = first + 1;
        let mut next = first + 2 * n;
        for i in 1..n {
            let op = if i % 2 == 0 { Gate::and } else { Gate::xor };
            gates.push(op(acc, first + 2 * i + 1, next));
            acc = next;
            next += 1;
        }
        let c = Circuit {
            layout: Layout {
                num_wires: next,
                input_widths: vec![n, n],
                output_widths: vec![1],
                output_wires: vec![acc],
            },
            gates,
        };
        let bounds = (0..=n as usize).map(|k| 2 * k).collect();
        ParallelCircuit::from_flat(&c, &[RegionSpan { line: 5, bounds }]).unwrap()
    }

    /// The streamed gates, layout, counts, fingerprint and statistics are those of the
    /// circuit read whole, for both versions.
    #[test]
    fn streams_what_read_pgc_loads() {
        let dir = test_dir("same");
        let v1 = dir.join("v1.pgc");
        write_pgc_file(&v1, &random_circuit(7, 24, 20_000), &Interface::default()).unwrap();
        let v2 = dir.join("v2.pgc");
        let pc = with_region(3000);
        write_pgc_parallel_file(&v2, &pc, &Interface::default()).unwrap();
        assert_eq!(super::super::pgc_format_version(&v2).unwrap(), 2);
        for path in [&v1, &v2] {
            let (whole, _) = read_pgc(path).unwrap();
            let (file, _) = UnrolledFile::open(path).unwrap();
            assert!(file.segments.len() > 2, "several stretches");
            assert_eq!(file.layout(), &whole.layout);
            assert_eq!(file.gate_count(), whole.gate_count());
            assert_eq!(file.and_count(), whole.and_count());
            assert_eq!(file.fingerprint(), whole.fingerprint());
            assert_eq!(gates_of(&file), whole.gates);
            assert_eq!(gates_of(&file), whole.gates, "a second pass gives the same");
            assert!(file.take_error().is_none());
            let expected = stats(&whole);
            let s = file.stats();
            assert_eq!(
                (s.gates, s.and_gates, s.xor_gates, s.inv_gates, s.copy_gates),
                (
                    expected.gates,
                    expected.and_gates,
                    expected.xor_gates,
                    expected.inv_gates,
                    expected.copy_gates
                )
            );
            assert_eq!(s.and_depth, expected.and_depth);
            let levels = s.ands_per_level.iter().filter(|&&n| n > 0).count() as u64;
            assert_eq!(levels, expected.and_levels);
            assert_eq!(
                s.ands_per_level.iter().max().copied(),
                Some(expected.max_width)
            );
        }
        let (file, _) = UnrolledFile::open(&v2).unwrap();
        assert_eq!(
            file.stats().regions,
            [RegionSummary {
                line: 5,
                instances: 3000,
                and_gates: 3000
            }]
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A file changed after `open` gives no gate from the changed stretch on, and the error.
    #[test]
    fn a_file_changed_after_open_stops_the_pass_with_an_error() {
        let dir = test_dir("changed");
        let path = dir.join("c.pgc");
        let c = random_circuit(9, 16, 20_000);
        write_pgc_file(&path, &c, &Interface::default()).unwrap();
        let (file, _) = UnrolledFile::open(&path).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let gates = gates_of(&file);
        assert!(gates.len() < c.gates.len());
        assert_eq!(
            gates[..],
            c.gates[..gates.len()],
            "only gates from unchanged bytes"
        );
        // What the protocol asks before revealing outputs.
        let incomplete = file.check_complete().unwrap_err();
        assert!(incomplete.contains("changed"), "{incomplete}");
        let e = file
            .take_error()
            .expect("the pass reports the change")
            .to_string();
        assert!(e.contains("the file changed since it was opened"), "{e}");
        bytes.truncate(at);
        std::fs::write(&path, &bytes).unwrap();
        assert!(gates_of(&file).is_empty());
        let e = file.take_error().unwrap().to_string();
        assert!(e.contains("the file changed since it was opened"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// Opening checks what reading whole checks: a read of an unset wire, a hostile wire
    /// count, a compact file.
    #[test]
    fn open_refuses_what_read_pgc_refuses() {
        let dir = test_dir("bad");
        let path = dir.join("bad.pgc");
        let layout = Layout {
            num_wires: 4,
            input_widths: vec![1],
            output_widths: vec![1],
            output_wires: vec![2],
        };
        let unset = Circuit {
            layout: layout.clone(),
            gates: vec![Gate::and(0, 3, 2)],
        };
        let bytes =
            super::super::tests::raw_v1(&layout, r#"{"inputs":[],"outputs":[]}"#, &unset.gates);
        std::fs::write(&path, &bytes).unwrap();
        let e = UnrolledFile::open(&path).unwrap_err().to_string();
        assert!(e.contains("reads wire 3") || e.contains("wire 3"), "{e}");
        // Its one gate writes the last wire: refused before any per-wire memory.
        let last = (1 << 30) - 1;
        let wide = Layout {
            num_wires: 1 << 30,
            output_wires: vec![last],
            ..layout
        };
        let bytes = super::super::tests::raw_v1(
            &wide,
            r#"{"inputs":[],"outputs":[]}"#,
            &[Gate::inv(0, last)],
        );
        std::fs::write(&path, &bytes).unwrap();
        let e = crate::limits::MemoryLimit::from_bytes(1 << 20)
            .scoped(|| UnrolledFile::open(&path).unwrap_err())
            .to_string();
        assert!(e.contains("the layout declares 1073741824 wires"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
