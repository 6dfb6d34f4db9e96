//! [`CompactFile`]: a version 3 `.pgc` file as a [`GateSource`] that expands the compact
//! circuit while streaming its main body from disk, so that neither the expansion nor the
//! main body is ever held in memory.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::compact_file::{Arity, Body, PgcCompactReader, decode_items};
use super::{
    LAYOUT_OFFSET, PgcErrorKind, PgcFileError, PgcHeader, get_bit, malformed, set_bit,
    unjustified_wires,
};
use super::{SEGMENT_BYTES, Segment, SegmentHashes};
use crate::compact::{
    CompactError, CompactStats, Expander, Item, Location, Template, fingerprint_parts, hash_items,
};
use crate::ir::{Gate, GateSource, Layout, Op, WireId};
use crate::ports::Interface;

/// A compact circuit file (format version 3) as a [`GateSource`]: the garbler sees the
/// expansion (as with [`CompactSource`](crate::compact::CompactSource), with the same
/// layout, counts and fingerprint), read from the file block by block at every pass.
///
/// [`open`](CompactFile::open) reads the header and the templates into memory and makes
/// one streaming pass over the main body, checking it in full (as
/// [`CompactCircuit::validate`](crate::compact::CompactCircuit::validate) does, with reads
/// of unset wires tracked in a bit set of the main wires) and computing the expanded gate
/// and AND counts, the fingerprint, and the wires the expansion needs. It also records a
/// BLAKE3 hash of every stretch of about 1 MiB of main blocks (32 bytes per MiB of file).
///
/// Each [`for_each_chunk`](GateSource::for_each_chunk) reopens the file and, stretch by
/// stretch, reads, checks against the recorded hash, decodes and expands the main body, so
/// memory stays at one stretch and one block of items. Every gate handed out therefore
/// comes from bytes identical to those checked at `open`.
///
/// **If the file changes or cannot be read during a pass** (it was replaced, truncated or
/// edited since `open`, or an I/O error occurs), `for_each_chunk` cannot report it through
/// its caller-chosen error type: it stops handing out gates, stores the error (see
/// [`take_error`](CompactFile::take_error)) and returns `Ok(())`. The consumer then has
/// received fewer than [`gate_count`](GateSource::gate_count) gates, and
/// [`check_complete`](GateSource::check_complete) returns the cause until the next pass
/// (the protocols call it, and compare the gates processed by both parties, before any
/// output is revealed); [`take_error`](CompactFile::take_error) takes it. A file whose length differs
/// from the one seen at `open` fails before any gate is handed out.
#[derive(Debug)]
pub struct CompactFile {
    path: PathBuf,
    header: PgcHeader,
    /// The expansion's layout: the main layout with the expansion's wire count.
    layout: Layout,
    templates: Vec<Template>,
    arities: Vec<Arity>,
    /// The distinct templates the main body calls (what the expansion reserves scratch for).
    main_callees: Vec<u32>,
    /// Scratch wires the expansion reserves above the main wires.
    scratch_wires: u32,
    main_offset: u64,
    file_len: u64,
    segments: Vec<Segment>,
    main_items: u64,
    main_calls: u64,
    gates: u64,
    ands: u64,
    fingerprint: [u8; 32],
    error: super::LastPassError,
}

/// How one pass ended early: the consumer's error, or a file problem.
enum PassError<E> {
    Sink(E),
    File(PgcFileError),
}

impl<E> From<CompactError> for PassError<E> {
    fn from(e: CompactError) -> Self {
        PassError::File(PgcErrorKind::InvalidCompact(e).into())
    }
}

impl<E> From<PgcFileError> for PassError<E> {
    fn from(e: PgcFileError) -> Self {
        PassError::File(e)
    }
}

impl<E> From<io::Error> for PassError<E> {
    fn from(e: io::Error) -> Self {
        PassError::File(e.into())
    }
}

/// Adds one main-body block to the stretch hashes: its header fields and records, as they
/// are in the file; a stretch ends at the first block boundary past [`SEGMENT_BYTES`].
fn hash_block(segments: &mut SegmentHashes, n: u32, records: &[u8]) {
    segments.update(&n.to_le_bytes());
    segments.update(&(records.len() as u32).to_le_bytes());
    segments.update(records);
    if segments.bytes >= SEGMENT_BYTES {
        segments.close();
    }
}

impl CompactFile {
    /// Opens the compact circuit file at `path`: reads and checks the header and templates,
    /// then reads the whole main body once (see the type's docs). Returns the source and
    /// the file's interface; errors name the file.
    pub fn open(path: impl AsRef<Path>) -> Result<(CompactFile, Interface), PgcFileError> {
        let path = path.as_ref();
        CompactFile::open_inner(path).map_err(|e| PgcFileError {
            path: Some(path.to_path_buf()),
            kind: e.kind,
        })
    }

    fn open_inner(path: &Path) -> Result<(CompactFile, Interface), PgcFileError> {
        let file = File::open(path)?;
        let file_len = file.metadata()?.len();
        let mut reader = PgcCompactReader::new(BufReader::with_capacity(1 << 16, file))?;
        let main_offset = reader.offset();
        let num_wires = reader.layout().num_wires;
        let mut fingerprint = fingerprint_parts(reader.layout(), reader.templates());
        let mut check = MainCheck::new(reader.layout());
        let mut segments = SegmentHashes::default();
        let mut items = Vec::new();
        loop {
            items.clear();
            let first_item = reader.items_read();
            let n = reader.read_items(&mut items)?;
            if n == 0 {
                break;
            }
            hash_block(&mut segments, n as u32, &reader.buf);
            hash_items(&mut fingerprint, &items);
            check
                .items(&items, first_item, &reader.template_counts)
                .map_err(PgcErrorKind::from)?;
        }
        segments.close();
        check
            .outputs(&reader.layout().output_wires)
            .map_err(PgcErrorKind::from)?;
        check.wires_justified(num_wires)?;
        let (main_items, main_calls) = (reader.items_read(), reader.calls_read());
        let arities = reader.arities.clone();
        let (header, templates) = reader.into_parts();
        let main_callees: Vec<u32> = (0..templates.len() as u32)
            .filter(|&t| get_bit(&check.called, t as u64))
            .collect();
        let expander =
            Expander::with_main_callees(&templates, num_wires, main_callees.iter().copied())
                .map_err(PgcErrorKind::from)?;
        let mut layout = header.layout.clone();
        layout.num_wires = expander.num_wires();
        let scratch_wires = expander.scratch_wires();
        drop(expander);
        let interface = header.interface.clone();
        let source = CompactFile {
            path: path.to_path_buf(),
            header,
            layout,
            templates,
            arities,
            main_callees,
            scratch_wires,
            main_offset,
            file_len,
            segments: segments.segments,
            main_items,
            main_calls,
            gates: check.gates,
            ands: check.ands,
            fingerprint: *fingerprint.finalize().as_bytes(),
            error: super::LastPassError::default(),
        };
        Ok((source, interface))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's header: format version, the main body's layout, the interface.
    pub fn header(&self) -> &PgcHeader {
        &self.header
    }

    /// The main body's layout (the expansion's, [`GateSource::layout`], has more wires).
    pub fn main_layout(&self) -> &Layout {
        &self.header.layout
    }

    pub fn templates(&self) -> &[Template] {
        &self.templates
    }

    pub fn main_item_count(&self) -> u64 {
        self.main_items
    }

    /// Calls among the main items.
    pub fn main_call_count(&self) -> u64 {
        self.main_calls
    }

    /// Sizes of the compact circuit and of its expansion (as
    /// [`compact_stats`](crate::compact::compact_stats) gives them for the circuit in
    /// memory).
    pub fn stats(&self) -> CompactStats {
        let main_slots = self.header.layout.num_wires as u64;
        let peak_live_wires = self.layout.num_wires as u64;
        CompactStats {
            templates: self.templates.len() as u64,
            template_items: self.templates.iter().map(|t| t.items.len() as u64).sum(),
            main_items: self.main_items,
            calls: self.main_calls,
            gates: self.gates,
            and_gates: self.ands,
            main_slots,
            scratch_slots: self.scratch_wires as u64,
            peak_live_wires,
            label_bytes_per_party: peak_live_wires * 16,
        }
    }

    /// The error that ended a pass early (see the type's docs), if any; taking it clears it.
    pub fn take_error(&self) -> Option<PgcFileError> {
        self.error.take()
    }

    /// One pass over the expansion; see [`GateSource::for_each_chunk`].
    fn pass<E>(&self, f: &mut dyn FnMut(&[Gate]) -> Result<(), E>) -> Result<(), PassError<E>> {
        let main_num_wires = self.header.layout.num_wires;
        let mut expander = Expander::with_main_callees(
            &self.templates,
            main_num_wires,
            self.main_callees.iter().copied(),
        )?;
        let mut sink = |chunk: &[Gate]| f(chunk).map_err(PassError::Sink);
        self.items_pass(&mut |items| expander.expand(items, &mut sink))?;
        expander.finish(&mut sink)
    }

    /// One pass over the main body's items, checked against the stretch hashes of `open`.
    fn items_pass<E>(&self, on_items: &mut OnItems<'_, E>) -> Result<(), PassError<E>> {
        let mut file = File::open(&self.path)?;
        let len = file.metadata()?.len();
        if len != self.file_len {
            return Err(changed(format!(
                "it had {} bytes, now {len}",
                self.file_len
            )));
        }
        file.seek(SeekFrom::Start(self.main_offset))?;
        let body = Body::main(self.header.layout.num_wires, &self.arities);
        let (mut stretch, mut items, mut scratch) = (Vec::new(), Vec::new(), Vec::new());
        let mut offset = self.main_offset;
        let mut item_index = 0u64;
        for segment in &self.segments {
            // `segment.bytes` was measured at `open` (at most about 2 MiB): safe to allocate.
            stretch.resize(segment.bytes as usize, 0);
            file.read_exact(&mut stretch).map_err(|e| {
                if e.kind() == io::ErrorKind::UnexpectedEof {
                    changed(format!("it ends inside the main body after byte {offset}"))
                } else {
                    e.into()
                }
            })?;
            if *blake3::hash(&stretch).as_bytes() != segment.hash {
                return Err(changed(format!(
                    "the main body's bytes {offset}..{} differ",
                    offset + segment.bytes
                )));
            }
            let mut pos = 0usize;
            while pos < stretch.len() {
                let (n, records) = block_at(&stretch, pos).ok_or_else(|| {
                    changed(format!(
                        "the block at byte {} does not fit its stretch",
                        offset + pos as u64
                    ))
                })?;
                items.clear();
                decode_items(
                    records,
                    n,
                    offset + pos as u64 + 8,
                    item_index,
                    &body,
                    &mut scratch,
                    &mut items,
                )?;
                on_items(&items)?;
                pos += 8 + records.len();
                item_index += n as u64;
            }
            offset += segment.bytes;
        }
        Ok(())
    }

    /// Keeps a file error of a pass for [`GateSource::check_complete`]; passes the
    /// consumer's own error on.
    fn settle<E>(&self, result: Result<(), PassError<E>>) -> Result<(), E> {
        match result {
            Ok(()) => Ok(()),
            Err(PassError::Sink(e)) => Err(e),
            Err(PassError::File(e)) => {
                let e = PgcFileError {
                    path: Some(self.path.clone()),
                    kind: e.kind,
                };
                self.error.set(e);
                Ok(())
            }
        }
    }
}

impl crate::compact::MainItems for CompactFile {
    fn for_each_items(
        &self,
        f: &mut dyn FnMut(&[Item]) -> Result<(), crate::compact::StopPass>,
    ) -> Result<(), crate::compact::StopPass> {
        self.error.clear();
        self.settle(self.items_pass(&mut |items| f(items).map_err(PassError::Sink)))
    }
}

/// What [`CompactFile::items_pass`] calls on each block of items.
type OnItems<'a, E> = dyn FnMut(&[Item]) -> Result<(), PassError<E>> + 'a;

/// The block starting at `pos` of a stretch: its item count and records.
fn block_at(stretch: &[u8], pos: usize) -> Option<(u32, &[u8])> {
    let word = |at: usize| -> Option<u32> {
        let bytes = stretch.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes(bytes.try_into().ok()?))
    };
    let n = word(pos)?;
    let m = word(pos + 4)? as usize;
    let start = pos + 8;
    Some((n, stretch.get(start..start.checked_add(m)?)?))
}

fn changed<E>(what: String) -> PassError<E> {
    PassError::File(PgcErrorKind::ChangedSinceOpened(what).into())
}

impl GateSource for CompactFile {
    fn layout(&self) -> &Layout {
        &self.layout
    }
    fn gate_count(&self) -> u64 {
        self.gates
    }
    fn and_count(&self) -> u64 {
        self.ands
    }
    fn fingerprint(&self) -> [u8; 32] {
        self.fingerprint
    }
    /// Streams the expansion from the file; a file error ends the stream early with
    /// `Ok(())` and is kept for [`CompactFile::take_error`] (see the type's docs).
    fn for_each_chunk<E>(&self, f: &mut dyn FnMut(&[Gate]) -> Result<(), E>) -> Result<(), E> {
        // A new pass: an error of an earlier one no longer describes what is handed out.
        self.error.clear();
        self.settle(self.pass(f))
    }
    /// The error that ended the last pass early (kept until the next pass; unlike
    /// [`CompactFile::take_error`] this does not clear it).
    fn check_complete(&self) -> Result<(), String> {
        self.error.check()
    }
    fn compact_parts(&self) -> Option<crate::compact::CompactParts<'_>> {
        Some(crate::compact::CompactParts {
            templates: &self.templates,
            main_num_wires: self.header.layout.num_wires,
            main: self,
        })
    }
    fn form(&self) -> crate::ir::CircuitForm {
        crate::ir::CircuitForm::Compact
    }
}

/// What `open` checks of the main body beyond the format (as
/// [`CompactCircuit::validate`](crate::compact::CompactCircuit::validate) does), and the
/// expanded counts.
struct MainCheck {
    num_inputs: u64,
    /// Bit `w - num_inputs`: main wire `w` has been written (grows with the wires used).
    set: Vec<u64>,
    /// Wire writes of the main body (one per gate, a call's outputs; with repeats).
    writes: u64,
    /// Bit `t`: main calls template `t`.
    called: Vec<u64>,
    gates: u64,
    ands: u64,
}

impl MainCheck {
    fn new(layout: &Layout) -> Self {
        MainCheck {
            num_inputs: layout.input_widths.iter().map(|&w| w as u64).sum(),
            set: Vec::new(),
            writes: 0,
            called: Vec::new(),
            gates: 0,
            ands: 0,
        }
    }

    fn is_set(&self, w: WireId) -> bool {
        let w = w as u64;
        w < self.num_inputs || get_bit(&self.set, w - self.num_inputs)
    }

    fn write(&mut self, w: WireId) {
        let w = w as u64;
        self.writes += 1;
        if w >= self.num_inputs {
            set_bit(&mut self.set, w - self.num_inputs);
        }
    }

    /// Checks reads and adds up the counts of `items` (main items `first_item..`), whose
    /// format (ranges, callees, arities, aliasing) the decoder has checked.
    fn items(
        &mut self,
        items: &[Item],
        first_item: u64,
        template_counts: &[(u64, u64)],
    ) -> Result<(), CompactError> {
        let overflow = || CompactError::CountOverflow {
            what: "the main body".to_string(),
        };
        for (k, item) in items.iter().enumerate() {
            let at = || Location::Main {
                item: first_item + k as u64,
            };
            let unset = |wire: WireId| CompactError::UnsetRead { at: at(), wire };
            let (gates, ands) = match item {
                Item::Gate(g) => {
                    if let Some(&w) = g.inputs().iter().find(|&&w| !self.is_set(w)) {
                        return Err(unset(w));
                    }
                    self.write(g.out);
                    (1, (g.op == Op::And) as u64)
                }
                Item::Call(c) => {
                    if let Some(&w) = c.inputs.iter().find(|&&w| !self.is_set(w)) {
                        return Err(unset(w));
                    }
                    for &w in &c.outputs {
                        self.write(w);
                    }
                    set_bit(&mut self.called, c.template as u64);
                    template_counts
                        .get(c.template as usize)
                        .copied()
                        .ok_or_else(|| CompactError::NoSuchTemplate {
                            at: at(),
                            callee: c.template,
                            count: template_counts.len(),
                        })?
                }
            };
            self.gates = self.gates.checked_add(gates).ok_or_else(overflow)?;
            self.ands = self.ands.checked_add(ands).ok_or_else(overflow)?;
        }
        Ok(())
    }

    /// Refuses a main layout declaring more wires than its inputs and body justify (see
    /// [`unjustified_wires`](super::unjustified_wires)).
    fn wires_justified(&self, num_wires: u32) -> Result<(), PgcFileError> {
        match unjustified_wires(num_wires, self.num_inputs, self.writes) {
            Some(most) => Err(malformed(
                LAYOUT_OFFSET,
                format!(
                    "the main layout declares {num_wires} wires, but its {} input wires and \
                     the {} wire writes of its body justify at most {most}",
                    self.num_inputs, self.writes
                ),
            )),
            None => Ok(()),
        }
    }

    fn outputs(&self, outputs: &[WireId]) -> Result<(), CompactError> {
        match outputs.iter().position(|&w| !self.is_set(w)) {
            Some(index) => Err(CompactError::OutputUnset {
                index: index as u64,
                wire: outputs[index],
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::compact_file::tests::{random_compact, typed_interface};
    use super::super::{PgcCompactWriter, write_pgc_compact_file, write_pgc_file};
    use super::*;
    use crate::compact::{CompactCircuit, CompactSource, compact_stats};
    use crate::ir::Circuit;

    /// A fresh directory for one test's files.
    fn test_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("pgc-compactfile-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Every gate of one pass.
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

    fn main_bytes(source: &CompactFile) -> u64 {
        source.segments.iter().map(|s| s.bytes).sum()
    }

    /// Finding 1 of issue 16, compact form: a v3 main body declaring 2^30 wires made `eval`
    /// and the garbler allocate per declared wire. Both readers now refuse it at once.
    #[test]
    fn a_main_body_cannot_declare_a_billion_wires() {
        let dir = test_dir("wires");
        let layout = Layout {
            num_wires: 1 << 30,
            input_widths: vec![1, 1],
            output_widths: vec![1],
            output_wires: vec![2],
        };
        let mut w = PgcCompactWriter::new(Vec::new(), &layout, &Interface::default(), &[]).unwrap();
        w.write_items(&[Item::Gate(Gate::and(0, 1, 2))]).unwrap();
        let bytes = w.finish().unwrap();
        assert!(bytes.len() < 1024);
        let path = dir.join("wide.pgc");
        std::fs::write(&path, &bytes).unwrap();
        let started = std::time::Instant::now();
        crate::limits::MemoryLimit::from_bytes(64 << 20).scoped(|| {
            let e = CompactFile::open(&path).unwrap_err().to_string();
            assert!(
                e.ends_with(
                    "byte 20: the main layout declares 1073741824 wires, but its 2 input \
                     wires and the 1 wire writes of its body justify at most 68"
                ),
                "{e}"
            );
            let e = super::super::read_pgc_compact_from(&bytes[..])
                .unwrap_err()
                .to_string();
            assert!(e.contains("declares 1073741824 wires"), "{e}");
        });
        assert!(started.elapsed().as_secs() < 5);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn streams_the_same_expansion_as_the_circuit_in_memory() {
        let dir = test_dir("same");
        for (seed, templates, items) in [
            (21, 0, 40),
            (22, 1, 200),
            (23, 6, 3000),
            (29, 10, 300),
            (24, 5, 30_000),
        ] {
            let c = random_compact(seed, templates, items);
            let path = dir.join(format!("c{seed}.pgc"));
            write_pgc_compact_file(&path, &c, &typed_interface()).unwrap();
            let (file, interface) = CompactFile::open(&path).unwrap();
            assert_eq!(interface, typed_interface());
            let memory = CompactSource::new(c.clone()).unwrap();
            assert_eq!(file.layout(), memory.layout());
            assert_eq!(file.gate_count(), memory.gate_count());
            assert_eq!(file.and_count(), memory.and_count());
            assert_eq!(file.fingerprint(), memory.fingerprint());
            assert_eq!(file.fingerprint(), c.fingerprint());
            assert_eq!(file.main_layout(), &c.layout);
            assert_eq!(file.templates(), &c.templates[..]);
            assert_eq!(file.main_item_count(), c.main.len() as u64);
            let calls = c.main.iter().filter(|i| matches!(i, Item::Call(_))).count();
            assert_eq!(file.main_call_count(), calls as u64);
            assert_eq!(file.stats(), compact_stats(&c).unwrap());
            let flat = c.flatten().unwrap();
            assert_eq!(file.layout(), &flat.layout);
            let gates = gates_of(&file);
            assert_eq!(gates.len() as u64, file.gate_count());
            assert_eq!(gates, flat.gates);
            // A second pass gives the same stream.
            assert_eq!(gates_of(&file), flat.gates);
            assert!(file.take_error().is_none());
            if items == 30_000 {
                assert!(file.segments.len() >= 2, "{} segments", file.segments.len());
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_consumers_error_ends_the_pass() {
        let dir = test_dir("sink");
        let c = random_compact(25, 4, 5000);
        let path = dir.join("c.pgc");
        write_pgc_compact_file(&path, &c, &Interface::default()).unwrap();
        let (file, _) = CompactFile::open(&path).unwrap();
        let mut chunks = 0;
        let result = file.for_each_chunk(&mut |_: &[Gate]| {
            chunks += 1;
            if chunks == 2 { Err("enough") } else { Ok(()) }
        });
        assert_eq!(result, Err("enough"));
        assert_eq!(chunks, 2);
        assert!(file.take_error().is_none());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_file_changed_after_open_ends_the_stream_with_a_stored_error() {
        let dir = test_dir("changed");
        let c = random_compact(26, 5, 30_000);
        let path = dir.join("c.pgc");
        write_pgc_compact_file(&path, &c, &Interface::default()).unwrap();
        let original = std::fs::read(&path).unwrap();
        let (file, _) = CompactFile::open(&path).unwrap();
        let full = gates_of(&file);
        assert!(file.segments.len() >= 2);

        // Same length, one byte of the last stretch changed: the stretches before it are
        // streamed, then the stream ends and the error says where.
        let mut edited = original.clone();
        let last = file.main_offset + main_bytes(&file) - 3;
        edited[last as usize] ^= 0x40;
        std::fs::write(&path, &edited).unwrap();
        assert!(file.check_complete().is_ok());
        let partial = gates_of(&file);
        assert!(!partial.is_empty() && partial.len() < full.len());
        assert_eq!(partial[..], full[..partial.len()]);
        let reported = file.check_complete().expect_err("the pass was incomplete");
        assert!(reported.contains("differ"), "{reported}");
        assert!(
            file.check_complete().is_err(),
            "checking does not clear the error"
        );
        let e = file.take_error().expect("an error is stored");
        assert!(matches!(e.kind, PgcErrorKind::ChangedSinceOpened(_)), "{e}");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("{}: the file changed", path.display())),
            "{text}"
        );
        assert!(text.contains("differ"), "{text}");
        assert!(file.take_error().is_none(), "taking the error clears it");

        // A different length: nothing at all is streamed.
        std::fs::write(&path, &original[..original.len() - 1]).unwrap();
        assert!(gates_of(&file).is_empty());
        let e = file.take_error().expect("an error is stored").to_string();
        assert!(
            e.contains(&format!(
                "it had {} bytes, now {}",
                original.len(),
                original.len() - 1
            )),
            "{e}"
        );

        // Gone: an I/O error naming the file.
        std::fs::remove_file(&path).unwrap();
        assert!(gates_of(&file).is_empty());
        let e = file.take_error().expect("an error is stored");
        assert!(matches!(e.kind, PgcErrorKind::Io(_)), "{e}");
        assert_eq!(e.path.as_deref(), Some(path.as_path()));

        // Restored: streams in full again, and a complete pass clears an earlier error.
        std::fs::write(&path, &original[..original.len() - 1]).unwrap();
        assert!(gates_of(&file).is_empty());
        assert!(file.check_complete().is_err());
        std::fs::write(&path, &original).unwrap();
        assert_eq!(gates_of(&file), full);
        assert!(file.check_complete().is_ok());
        assert!(file.take_error().is_none());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn open_checks_the_main_body_and_the_version() {
        let dir = test_dir("open");
        let c = random_compact(27, 3, 100);
        // The streaming writer does not track which wires are set: a main body reading an
        // unset wire gets written, and `open` refuses it.
        let mut bad = c.clone();
        let unset = bad.layout.num_wires - 1;
        bad.main.insert(0, Item::Gate(Gate::xor(0, unset, 20)));
        let path = dir.join("bad.pgc");
        let mut w = PgcCompactWriter::new(
            Vec::new(),
            &bad.layout,
            &Interface::default(),
            &bad.templates,
        )
        .unwrap();
        w.write_items(&bad.main).unwrap();
        std::fs::write(&path, w.finish().unwrap()).unwrap();
        let e = CompactFile::open(&path).unwrap_err();
        assert!(matches!(e.kind, PgcErrorKind::InvalidCompact(_)), "{e}");
        assert_eq!(
            e.to_string(),
            format!(
                "{}: the compact circuit is invalid: main item 0: reads wire {unset} before it is set",
                path.display()
            )
        );
        // Outputs never set.
        let mut bad = c.clone();
        bad.layout.output_wires[0] = unset;
        let mut w = PgcCompactWriter::new(
            Vec::new(),
            &bad.layout,
            &Interface::default(),
            &bad.templates,
        )
        .unwrap();
        w.write_items(&bad.main).unwrap();
        std::fs::write(&path, w.finish().unwrap()).unwrap();
        if bad.validate().is_err() {
            let e = CompactFile::open(&path).unwrap_err().to_string();
            assert!(
                e.contains(&format!("main output 0: wire {unset} is never set")),
                "{e}"
            );
        }
        // A plain circuit file.
        let plain = dir.join("plain.pgc");
        let circuit = Circuit {
            layout: Layout {
                num_wires: 3,
                input_widths: vec![2],
                output_widths: vec![1],
                output_wires: vec![2],
            },
            gates: vec![Gate::and(0, 1, 2)],
        };
        write_pgc_file(&plain, &circuit, &Interface::default()).unwrap();
        let e = CompactFile::open(&plain).unwrap_err();
        assert!(
            matches!(e.kind, PgcErrorKind::NotCompact { version: 1 }),
            "{e}"
        );
        let e = CompactFile::open(dir.join("missing.pgc"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.pgc"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_compact_file_can_be_shared_between_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<CompactFile>();
        let dir = test_dir("threads");
        let c: CompactCircuit = random_compact(28, 3, 2000);
        let path = dir.join("c.pgc");
        write_pgc_compact_file(&path, &c, &Interface::default()).unwrap();
        let (file, _) = CompactFile::open(&path).unwrap();
        let expected = c.flatten().unwrap().gates;
        std::thread::scope(|s| {
            let a = s.spawn(|| gates_of(&file));
            let b = s.spawn(|| gates_of(&file));
            assert_eq!(a.join().unwrap(), expected);
            assert_eq!(b.join().unwrap(), expected);
        });
        std::fs::remove_dir_all(&dir).ok();
    }
}
