//! Version 3 of the `.pgc` format: compact circuits (the format is documented in the parent
//! module). Writing ([`write_pgc_compact`], [`PgcCompactWriter`]) and reading
//! ([`read_pgc_compact`], [`PgcCompactReader`]).

use std::fmt;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::{
    HashingWriter, LAYOUT_OFFSET, PGC_COMPACT_FORMAT_VERSION, PgcErrorKind, PgcFileError,
    PgcHeader, Source, TAG_RESERVED, check_layout, decode_gate_fields, encode_gate_record, gate_op,
    get_varint, header_bytes, malformed, put_varint, read_header, unjustified_wires, unzigzag,
    with_file, write_file, write_final_checksum, write_header, zigzag,
};
use crate::compact::{Call, CompactCircuit, Expander, Item, Template};
use crate::ir::{Gate, Layout, Op, WireId};
use crate::ports::Interface;

/// Most items in one item block.
pub const MAX_BLOCK_ITEMS: u32 = 1 << 14;
/// The writer closes a block once its records reach this many bytes; a reader accepts this
/// plus the longest record the body can hold.
const BLOCK_TARGET_BYTES: u64 = 1 << 20;
/// The writer also closes a block once its calls hold this many wires, so that a decoded
/// block stays small however well its wires compress.
const BLOCK_TARGET_WIRES: u64 = 1 << 20;
/// Longest run of consecutive wires in one piece; also the most outputs a call may give
/// with the "outputs at next" tag bit. Every byte of a record thus stands for at most 64
/// decoded wires, which bounds what a reader allocates by what it has read.
const MAX_RUN: u32 = 64;
/// Longest template name in bytes.
const MAX_NAME_BYTES: u32 = 1 << 16;
/// Longest gate record (as in version 1).
const MAX_GATE_RECORD_BYTES: u64 = 16;

const CALL_CODE: u8 = 5;
const TAG_OUTPUTS_AT_NEXT: u8 = 1 << 3;
const TAG_SAME_TEMPLATE: u8 = 1 << 4;
const CALL_TAG_RESERVED: u8 = 0b1110_0000;

/// A template's input and output counts: all a caller's record depends on.
#[derive(Clone, Copy, Debug)]
pub(super) struct Arity {
    inputs: u32,
    outputs: u32,
}

impl Arity {
    fn of(t: &Template) -> Arity {
        Arity {
            inputs: t.num_inputs,
            outputs: t.num_outputs,
        }
    }

    /// Longest possible call record: tag, template varint, at most 5 bytes per wire.
    fn record_bytes(self) -> u64 {
        6 + 5 * (self.inputs as u64 + self.outputs as u64)
    }
}

/// Most record bytes an item block of a body calling `callable` may hold.
fn max_block_bytes(callable: &[Arity]) -> u64 {
    let longest = callable
        .iter()
        .map(|a| a.record_bytes())
        .fold(MAX_GATE_RECORD_BYTES, u64::max);
    BLOCK_TARGET_BYTES + longest
}

/// Which body items belong to, for error messages.
#[derive(Clone, Copy)]
enum BodyName<'a> {
    Main,
    Template(u32, &'a str),
}

impl fmt::Display for BodyName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyName::Main => write!(f, "main"),
            BodyName::Template(t, name) => write!(f, "template {t} ({name:?})"),
        }
    }
}

/// What the items of one body may do (see "Well-formedness" in the module docs).
pub(super) struct Body<'a> {
    name: BodyName<'a>,
    num_wires: u32,
    /// Wires below this are the template's inputs, which its body never writes (0 for main).
    first_writable: u32,
    /// The templates it may call (template `t` calls `0 .. t`, main all).
    callable: &'a [Arity],
    max_block_bytes: u64,
}

impl<'a> Body<'a> {
    pub(super) fn main(num_wires: u32, templates: &'a [Arity]) -> Self {
        Body {
            name: BodyName::Main,
            num_wires,
            first_writable: 0,
            callable: templates,
            max_block_bytes: max_block_bytes(templates),
        }
    }

    fn template(t: u32, tpl: &'a Template, earlier: &'a [Arity]) -> Self {
        Body {
            name: BodyName::Template(t, &tpl.name),
            num_wires: tpl.num_wires,
            first_writable: tpl.num_inputs,
            callable: earlier,
            max_block_bytes: max_block_bytes(earlier),
        }
    }

    fn callee(&self, t: u64) -> Result<Arity, String> {
        usize::try_from(t)
            .ok()
            .and_then(|k| self.callable.get(k))
            .copied()
            .ok_or_else(|| match self.name {
                BodyName::Main => format!(
                    "calls template {t}, but there are only {} templates",
                    self.callable.len()
                ),
                BodyName::Template(own, _) => format!(
                    "calls template {t}, but template {own} may call only templates 0..{own} \
                     (those before it)"
                ),
            })
    }

    /// A wire the body writes may not be one of a template's inputs.
    fn check_written(&self, w: WireId, what: &str) -> Result<(), String> {
        if w < self.first_writable {
            return Err(format!(
                "{what} writes wire {w}, one of the template's inputs 0..{} (a template never \
                 writes its inputs)",
                self.first_writable
            ));
        }
        Ok(())
    }

    fn in_range(&self, w: WireId, what: &str) -> Result<(), String> {
        if w >= self.num_wires {
            return Err(format!(
                "{what} is wire {w}, out of range for {} wires",
                self.num_wires
            ));
        }
        Ok(())
    }

    /// Checks an item as a reader of its record does (the writer's side: everything the
    /// encoding does not rule out by itself).
    fn check_item(&self, item: &Item, scratch: &mut Vec<WireId>) -> Result<(), String> {
        match item {
            Item::Gate(g) => {
                if g.op == Op::Const && g.a > 1 {
                    return Err(format!("a constant gate with value {}", g.a));
                }
                for &w in g.inputs() {
                    self.in_range(w, "a gate input")?;
                }
                self.in_range(g.out, "a gate output")?;
                self.check_written(g.out, "the gate")
            }
            Item::Call(c) => {
                let arity = self.callee(c.template as u64)?;
                if c.inputs.len() != arity.inputs as usize
                    || c.outputs.len() != arity.outputs as usize
                {
                    return Err(format!(
                        "a call with {} inputs and {} outputs, but template {} has {} and {}",
                        c.inputs.len(),
                        c.outputs.len(),
                        c.template,
                        arity.inputs,
                        arity.outputs
                    ));
                }
                for (role, wires) in [("input", &c.inputs), ("output", &c.outputs)] {
                    if let Some(k) = wires.iter().position(|&w| w >= self.num_wires) {
                        self.in_range(wires[k], &format!("{role} {k}"))?;
                    }
                }
                check_call_roles(&c.inputs, &c.outputs, self.first_writable, scratch)
            }
        }
    }
}

/// Calls with at most this many scattered outputs are checked without sorting.
const SMALL_CALL_OUTPUTS: usize = 64;

/// [`check_call_roles`] for a few scattered outputs (the usual call of a slot-assigned
/// main body): two 64-bit masks, of `wire % 64` and of `wire / 64 % 64`, rule most wires
/// out, and the rest are looked up in the short output list. Same checks, same messages.
/// (With the first mask alone, an edit-distance cell's 16 outputs let a quarter of its
/// inputs through to the lookup: a fifth of decoding its main body.)
fn check_small_call_roles(
    inputs: &[WireId],
    outputs: &[WireId],
    first_writable: u32,
) -> Result<(), String> {
    let (mut low, mut high) = (0u64, 0u64);
    let maybe_output =
        |low: u64, high: u64, w: WireId| (low >> (w % 64)) & (high >> (w / 64 % 64)) & 1 == 1;
    for (j, &w) in outputs.iter().enumerate() {
        if maybe_output(low, high, w) && outputs[..j].contains(&w) {
            return Err(format!(
                "wire {w} is two of the call's outputs (a call's outputs are distinct)"
            ));
        }
        low |= 1 << (w % 64);
        high |= 1 << (w / 64 % 64);
    }
    if let Some(j) = outputs.iter().position(|&w| w < first_writable) {
        return Err(format!(
            "output {j} is wire {}, one of the template's inputs 0..{first_writable} (a \
             template never writes its inputs)",
            outputs[j]
        ));
    }
    if let Some(k) = inputs
        .iter()
        .position(|&w| maybe_output(low, high, w) && outputs.contains(&w))
    {
        return Err(format!(
            "input {k} is wire {}, which is also one of the call's outputs (a call's outputs \
             differ from its inputs)",
            inputs[k]
        ));
    }
    Ok(())
}

/// A call's outputs are distinct from each other and from its inputs, and none is one of
/// the template's inputs (below `first_writable`). `scratch` holds sorted outputs when they
/// are not one consecutive run.
fn check_call_roles(
    inputs: &[WireId],
    outputs: &[WireId],
    first_writable: u32,
    scratch: &mut Vec<WireId>,
) -> Result<(), String> {
    if outputs.is_empty() {
        return Ok(());
    }
    let consecutive = outputs
        .windows(2)
        .all(|p| p[0].checked_add(1) == Some(p[1]));
    if !consecutive && outputs.len() <= SMALL_CALL_OUTPUTS {
        return check_small_call_roles(inputs, outputs, first_writable);
    }
    check_sorted_call_roles(inputs, outputs, first_writable, scratch, consecutive)
}

/// [`check_call_roles`] by sorting the outputs (or by their range when consecutive).
fn check_sorted_call_roles(
    inputs: &[WireId],
    outputs: &[WireId],
    first_writable: u32,
    scratch: &mut Vec<WireId>,
    consecutive: bool,
) -> Result<(), String> {
    let (Some(&first), Some(&last)) = (outputs.first(), outputs.last()) else {
        return Ok(());
    };
    let sorted: &[WireId] = if consecutive {
        outputs
    } else {
        scratch.clear();
        scratch.extend_from_slice(outputs);
        scratch.sort_unstable();
        if let Some(p) = scratch.windows(2).find(|p| p[0] == p[1]) {
            return Err(format!(
                "wire {} is two of the call's outputs (a call's outputs are distinct)",
                p[0]
            ));
        }
        scratch
    };
    if sorted[0] < first_writable {
        let j = outputs
            .iter()
            .position(|&w| w < first_writable)
            .unwrap_or(0);
        return Err(format!(
            "output {j} is wire {}, one of the template's inputs 0..{first_writable} (a \
             template never writes its inputs)",
            outputs[j]
        ));
    }
    let is_output = |w: WireId| {
        if consecutive {
            (first..=last).contains(&w)
        } else {
            sorted.binary_search(&w).is_ok()
        }
    };
    if let Some(k) = inputs.iter().position(|&w| is_output(w)) {
        return Err(format!(
            "input {k} is wire {}, which is also one of the call's outputs (a call's outputs \
             differ from its inputs)",
            inputs[k]
        ));
    }
    Ok(())
}

/// Checks the main layout's counts and that its output wires are in range.
fn check_main_layout(layout: &Layout) -> Result<(), String> {
    check_layout(layout)?;
    if let Some((index, &w)) = layout
        .output_wires
        .iter()
        .enumerate()
        .find(|&(_, &w)| w >= layout.num_wires)
    {
        return Err(format!(
            "output {index} is wire {w}, out of range for {} wires",
            layout.num_wires
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Writing

/// Writes `circuit` and its `interface` as a version 3 `.pgc` file to `writer` and returns
/// the writer (flushed). The circuit must be [valid](CompactCircuit::validate) (checked
/// first; nothing is written otherwise) and the interface must match its layout (or have no
/// ports at all).
pub fn write_pgc_compact<W: Write>(
    writer: W,
    circuit: &CompactCircuit,
    interface: &Interface,
) -> Result<W, PgcFileError> {
    circuit.validate().map_err(PgcErrorKind::from)?;
    let mut w = PgcCompactWriter::new(writer, &circuit.layout, interface, &circuit.templates)?;
    w.write_items(&circuit.main)?;
    w.finish()
}

/// [`write_pgc_compact`] to a new file at `path` (replaced if it exists).
pub fn write_pgc_compact_file(
    path: impl AsRef<Path>,
    circuit: &CompactCircuit,
    interface: &Interface,
) -> Result<(), PgcFileError> {
    write_file(path.as_ref(), |file| {
        write_pgc_compact(&mut *file, circuit, interface)?;
        Ok(())
    })
}

/// Writes a version 3 `.pgc` file whose main body arrives in pieces, so that a compiler can
/// stream hundreds of millions of items to disk without holding them.
///
/// The header and the templates are written by [`new`](Self::new), main items by
/// [`write_items`](Self::write_items), the end by [`finish`](Self::finish). The templates
/// are validated in full (as [`Expander::new`] does: a failure is
/// [`PgcErrorKind::InvalidCompact`]); every main item is checked as a reader checks its
/// record (wires in range, the called template exists, call arities, a call's outputs
/// distinct from each other and from its inputs): a failure is
/// [`PgcErrorKind::CompactWrite`] naming the item, and the file is then incomplete. That
/// main items read only wires set before them, and that the outputs are set, is the
/// producer's responsibility (readers check it: [`read_pgc_compact`] and
/// [`CompactFile::open`](super::CompactFile::open)).
pub struct PgcCompactWriter<W: Write> {
    out: HashingWriter<W>,
    num_wires: u32,
    arities: Vec<Arity>,
    block: ItemEncoder,
    items: u64,
    calls: u64,
    scratch: Vec<WireId>,
}

impl<W: Write> PgcCompactWriter<W> {
    /// Writes the header for `layout` and `interface`, then `templates`.
    pub fn new(
        writer: W,
        layout: &Layout,
        interface: &Interface,
        templates: &[Template],
    ) -> Result<Self, PgcFileError> {
        let invalid = |e: String| PgcFileError::from(PgcErrorKind::CompactWrite(e));
        check_main_layout(layout).map_err(invalid)?;
        // Checked as an expander would, without its prepared copy of every body.
        crate::compact::check_templates(templates).map_err(PgcErrorKind::from)?;
        let count = u32::try_from(templates.len())
            .map_err(|_| invalid(format!("{} templates (at most 2^32 - 1)", templates.len())))?;
        let mut arities = Vec::with_capacity(templates.len());
        let mut scratch = Vec::new();
        for (t, tpl) in templates.iter().enumerate() {
            let body = Body::template(t as u32, tpl, &arities);
            check_template_header(tpl).map_err(|e| invalid(format!("{}: {e}", body.name)))?;
            for (k, item) in tpl.items.iter().enumerate() {
                body.check_item(item, &mut scratch)
                    .map_err(|e| invalid(format!("{}, item {k}: {e}", body.name)))?;
            }
            arities.push(Arity::of(tpl));
        }

        let mut out = write_header(writer, PGC_COMPACT_FORMAT_VERSION, layout, interface)?;
        out.write_all(&count.to_le_bytes())?;
        let mut block = ItemEncoder::default();
        for tpl in templates {
            out.write_all(&(tpl.name.len() as u32).to_le_bytes())?;
            out.write_all(tpl.name.as_bytes())?;
            for field in [tpl.num_inputs, tpl.num_outputs, tpl.num_wires] {
                out.write_all(&field.to_le_bytes())?;
            }
            out.write_all(&(tpl.items.len() as u64).to_le_bytes())?;
            for item in &tpl.items {
                block.push(item);
                if block.is_full() {
                    block.flush(&mut out)?;
                }
            }
            block.flush(&mut out)?;
        }
        Ok(PgcCompactWriter {
            out,
            num_wires: layout.num_wires,
            arities,
            block,
            items: 0,
            calls: 0,
            scratch,
        })
    }

    /// Appends main-body items (in order).
    pub fn write_items(&mut self, items: &[Item]) -> Result<(), PgcFileError> {
        let body = Body::main(self.num_wires, &self.arities);
        for item in items {
            body.check_item(item, &mut self.scratch).map_err(|e| {
                PgcErrorKind::CompactWrite(format!("main, item {}: {e}", self.items))
            })?;
            self.block.push(item);
            self.items += 1;
            self.calls += matches!(item, Item::Call(_)) as u64;
            if self.block.is_full() {
                self.block.flush(&mut self.out)?;
            }
        }
        Ok(())
    }

    /// Main items written so far.
    pub fn items_written(&self) -> u64 {
        self.items
    }

    /// Writes the last block, the end marker, the counts and the checksum; returns the
    /// writer (flushed).
    pub fn finish(mut self) -> Result<W, PgcFileError> {
        self.block.flush(&mut self.out)?;
        let mut end = [0u8; 24];
        end[8..16].copy_from_slice(&self.items.to_le_bytes());
        end[16..24].copy_from_slice(&self.calls.to_le_bytes());
        self.out.write_all(&end)?;
        write_final_checksum(self.out)
    }
}

/// Rewrites the layout in the header of a finished compact file and recomputes both
/// checksums. For a writer that learns the main body's slot count and output slots only
/// at its end (the streaming compiler writes the header with its SSA layout, whose input
/// and output counts are the final ones, so the header keeps its length): reading the file
/// once more costs far less than a pass over the main body to learn the slots first.
pub fn patch_compact_layout<F: Read + Write + Seek>(
    file: &mut F,
    layout: &Layout,
    interface: &Interface,
) -> Result<(), PgcFileError> {
    let invalid = |e: String| PgcFileError::from(PgcErrorKind::CompactWrite(e));
    check_main_layout(layout).map_err(invalid)?;
    let header = header_bytes(PGC_COMPACT_FORMAT_VERSION, layout, interface)?;
    let mut old = vec![0u8; header.len()];
    file.seek(SeekFrom::Start(0))?;
    file.read_exact(&mut old)?;
    // Magic, version and the layout's length, then the layout, then the interface.
    let before = LAYOUT_OFFSET as usize;
    let after = before + layout.to_bytes().len();
    if old[..before] != header[..before] || old[after..] != header[after..] {
        return Err(invalid(
            "the new layout does not fit the header written (another interface or output count)"
                .into(),
        ));
    }
    let digest = blake3::hash(&header);
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&header)?;
    file.write_all(digest.as_bytes())?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(&header);
    hasher.update(digest.as_bytes());
    let body_start = header.len() as u64 + 32;
    let body_end = file
        .seek(SeekFrom::End(0))?
        .checked_sub(32)
        .filter(|&end| end >= body_start)
        .ok_or_else(|| invalid("the file is shorter than its header and checksum".into()))?;
    file.seek(SeekFrom::Start(body_start))?;
    std::io::copy(&mut (&mut *file).take(body_end - body_start), &mut hasher)?;
    file.seek(SeekFrom::Start(body_end))?;
    file.write_all(hasher.finalize().as_bytes())?;
    file.flush()?;
    Ok(())
}

/// A template's own fields: name length, wire counts.
fn check_template_header(tpl: &Template) -> Result<(), String> {
    if tpl.name.len() > MAX_NAME_BYTES as usize {
        return Err(format!(
            "a name of {} bytes (at most {MAX_NAME_BYTES})",
            tpl.name.len()
        ));
    }
    if tpl.num_inputs as u64 + tpl.num_outputs as u64 > tpl.num_wires as u64 {
        return Err(format!(
            "{} inputs and {} outputs but only {} wires",
            tpl.num_inputs, tpl.num_outputs, tpl.num_wires
        ));
    }
    Ok(())
}

/// Encodes item records into one block at a time (the cursors restart at every block).
#[derive(Default)]
struct ItemEncoder {
    bytes: Vec<u8>,
    items: u32,
    wires: u64,
    next: WireId,
    last_template: Option<u32>,
}

impl ItemEncoder {
    fn push(&mut self, item: &Item) {
        match item {
            Item::Gate(g) => {
                encode_gate_record(g, self.next, &mut self.bytes);
                self.next = g.out.wrapping_add(1);
            }
            Item::Call(c) => self.push_call(c),
        }
        self.items += 1;
    }

    fn push_call(&mut self, c: &Call) {
        let at_next = c.outputs.len() <= MAX_RUN as usize
            && c.outputs
                .iter()
                .enumerate()
                .all(|(j, &w)| w as u64 == self.next as u64 + j as u64);
        let same = self.last_template == Some(c.template);
        let mut tag = CALL_CODE;
        if at_next {
            tag |= TAG_OUTPUTS_AT_NEXT;
        }
        if same {
            tag |= TAG_SAME_TEMPLATE;
        }
        self.bytes.push(tag);
        if !same {
            put_varint(&mut self.bytes, c.template as u64);
        }
        encode_pieces(&c.inputs, self.next, &mut self.bytes);
        if !at_next {
            encode_pieces(&c.outputs, self.next, &mut self.bytes);
        }
        if let Some(&last) = c.outputs.last() {
            self.next = last.wrapping_add(1);
        }
        self.last_template = Some(c.template);
        self.wires += (c.inputs.len() + c.outputs.len()) as u64;
    }

    fn is_full(&self) -> bool {
        self.items == MAX_BLOCK_ITEMS
            || self.bytes.len() as u64 >= BLOCK_TARGET_BYTES
            || self.wires >= BLOCK_TARGET_WIRES
    }

    /// Writes the block (if it holds any item) and starts a new one.
    fn flush<W: Write>(&mut self, out: &mut HashingWriter<W>) -> Result<(), PgcFileError> {
        if self.items == 0 {
            return Ok(());
        }
        let len = u32::try_from(self.bytes.len()).map_err(|_| {
            PgcErrorKind::CompactWrite(
                "a call record longer than 4 GiB (a template with about 800 million inputs \
                 and outputs)"
                    .into(),
            )
        })?;
        out.write_all(&self.items.to_le_bytes())?;
        out.write_all(&len.to_le_bytes())?;
        out.write_all(&self.bytes)?;
        self.bytes.clear();
        self.items = 0;
        self.wires = 0;
        self.next = 0;
        self.last_template = None;
        Ok(())
    }
}

/// Appends `wires` as pieces (see the module docs) with the cursor starting at `cursor`.
fn encode_pieces(wires: &[WireId], cursor: WireId, out: &mut Vec<u8>) {
    let mut c = cursor as i64;
    let mut i = 0;
    while i < wires.len() {
        let start = wires[i];
        let mut len = 1;
        while i + len < wires.len()
            && len < MAX_RUN as usize
            && wires[i + len] as u64 == start as u64 + len as u64
        {
            len += 1;
        }
        let d = zigzag(start as i64 - c);
        if len >= 2 {
            put_varint(out, 2 * d + 1);
            put_varint(out, len as u64 - 2);
        } else {
            put_varint(out, 2 * d);
        }
        c = start as i64 + len as i64;
        i += len;
    }
}

// ---------------------------------------------------------------------------------------
// Reading

/// Reads a version 3 `.pgc` stream: the header and the templates at construction, then the
/// main body block by block ([`read_items`](Self::read_items)), checking everything the
/// module docs list with errors naming the byte offset, body and item.
pub struct PgcCompactReader<R: Read> {
    src: Source<R>,
    header: PgcHeader,
    templates: Vec<Template>,
    pub(super) arities: Vec<Arity>,
    /// Expanded gates and AND gates of one call of each template.
    pub(super) template_counts: Vec<(u64, u64)>,
    items: u64,
    calls: u64,
    finished: bool,
    /// The records of the last block read.
    pub(super) buf: Vec<u8>,
    scratch: Vec<WireId>,
}

impl<R: Read> PgcCompactReader<R> {
    /// Reads and checks the header and the templates (the templates in full, as
    /// [`Expander::new`] does). A version 1 or 2 file is refused with
    /// [`PgcErrorKind::NotCompact`].
    pub fn new(reader: R) -> Result<Self, PgcFileError> {
        let (mut src, header) = read_header(reader)?;
        if header.version != PGC_COMPACT_FORMAT_VERSION {
            return Err(PgcErrorKind::NotCompact {
                version: header.version,
            }
            .into());
        }
        check_main_layout(&header.layout).map_err(|e| malformed(LAYOUT_OFFSET, e))?;
        let mut buf = Vec::new();
        let mut scratch = Vec::new();
        let (templates, arities) = read_templates(&mut src, &mut buf, &mut scratch)?;
        // No scratch reserved: whether the expansion's wires fit depends on what main calls.
        let expander = Expander::with_main_callees(&templates, header.layout.num_wires, [])
            .map_err(PgcErrorKind::from)?;
        let template_counts = (0..templates.len() as u32)
            .map(|t| expander.template_counts(t).unwrap_or_default())
            .collect();
        drop(expander);
        Ok(PgcCompactReader {
            src,
            header,
            templates,
            arities,
            template_counts,
            items: 0,
            calls: 0,
            finished: false,
            buf,
            scratch,
        })
    }

    pub fn header(&self) -> &PgcHeader {
        &self.header
    }

    /// The main body's layout.
    pub fn layout(&self) -> &Layout {
        &self.header.layout
    }

    /// No ports at all for an untyped circuit.
    pub fn interface(&self) -> &Interface {
        &self.header.interface
    }

    pub fn templates(&self) -> &[Template] {
        &self.templates
    }

    /// Main items read so far.
    pub fn items_read(&self) -> u64 {
        self.items
    }

    /// How many of the main items read so far are calls.
    pub fn calls_read(&self) -> u64 {
        self.calls
    }

    /// Byte offset of the next unread byte.
    pub(super) fn offset(&self) -> u64 {
        self.src.offset
    }

    /// Appends the next block of main items to `out` and returns how many; 0 once the end
    /// is reached, after the counts, the final checksum and the end of the stream are
    /// checked.
    pub fn read_items(&mut self, out: &mut Vec<Item>) -> Result<usize, PgcFileError> {
        if self.finished {
            return Ok(0);
        }
        let block_at = self.src.offset;
        let n = self.src.u32("an item block header")?;
        let m = self.src.u32("an item block header")?;
        if n == 0 {
            if m != 0 {
                return Err(malformed(
                    block_at,
                    format!("the end marker of the main body has {m} bytes of records (must be 0)"),
                ));
            }
            self.read_end()?;
            return Ok(0);
        }
        let body = Body::main(self.header.layout.num_wires, &self.arities);
        check_block_size(&body, block_at, n, m, MAX_BLOCK_ITEMS, None)?;
        let data_at = self.src.offset;
        self.src
            .read_into(&mut self.buf, m as u64, "an item block")?;
        let calls = decode_items(
            &self.buf,
            n,
            data_at,
            self.items,
            &body,
            &mut self.scratch,
            out,
        )?;
        self.items += n as u64;
        self.calls += calls;
        Ok(n as usize)
    }

    fn read_end(&mut self) -> Result<(), PgcFileError> {
        let counts_at = self.src.offset;
        let items = self.src.u64("the main item count")?;
        let calls = self.src.u64("the main call count")?;
        if items != self.items || calls != self.calls {
            return Err(malformed(
                counts_at,
                format!(
                    "the file says the main body has {items} items ({calls} calls) but its \
                     blocks hold {} ({} calls)",
                    self.items, self.calls
                ),
            ));
        }
        self.src.final_checksum()?;
        self.finished = true;
        Ok(())
    }

    /// The header and the templates, once the caller is done reading.
    pub(super) fn into_parts(self) -> (PgcHeader, Vec<Template>) {
        (self.header, self.templates)
    }

    /// Reads the remaining main items, checks the end of the file, and returns the whole
    /// compact circuit and its interface (not [validated](CompactCircuit::validate) beyond
    /// what the format checks; [`read_pgc_compact`] validates).
    pub fn read_all(mut self) -> Result<(CompactCircuit, Interface), PgcFileError> {
        let mut main = Vec::new();
        while self.read_items(&mut main)? != 0 {}
        let circuit = CompactCircuit {
            layout: self.header.layout,
            templates: self.templates,
            main,
        };
        Ok((circuit, self.header.interface))
    }
}

/// Reads a whole version 3 `.pgc` stream and [validates](CompactCircuit::validate) the
/// circuit.
pub fn read_pgc_compact_from<R: Read>(
    reader: R,
) -> Result<(CompactCircuit, Interface), PgcFileError> {
    let (circuit, interface) = PgcCompactReader::new(reader)?.read_all()?;
    // The main wires are checked with a bit set of num_wires bits: bound num_wires by what
    // the body writes first (as CompactFile::open does).
    let inputs: u64 = circuit.layout.input_widths.iter().map(|&w| w as u64).sum();
    let writes = body_writes(&circuit.main);
    if let Some(most) = unjustified_wires(circuit.layout.num_wires, inputs, writes) {
        return Err(malformed(
            LAYOUT_OFFSET,
            format!(
                "the main layout declares {} wires, but its {inputs} input wires and the \
                 {writes} wire writes of its body justify at most {most}",
                circuit.layout.num_wires
            ),
        ));
    }
    circuit.validate().map_err(PgcErrorKind::from)?;
    Ok((circuit, interface))
}

/// How many wire writes `items` make (with repeats): one per gate, a call's outputs.
fn body_writes(items: &[Item]) -> u64 {
    items.iter().fold(0u64, |sum, item| {
        sum.saturating_add(match item {
            Item::Gate(_) => 1,
            Item::Call(c) => c.outputs.len() as u64,
        })
    })
}

/// Reads the version 3 `.pgc` file at `path` whole; errors name the file. (For a main body
/// too large to hold, use [`PgcCompactReader`] or [`CompactFile`](super::CompactFile).)
pub fn read_pgc_compact(
    path: impl AsRef<Path>,
) -> Result<(CompactCircuit, Interface), PgcFileError> {
    with_file(path.as_ref(), read_pgc_compact_from)
}

/// Checks an item block's header: `n` items (1 ..= `most`) in `m` bytes (`n ..=` the
/// body's limit).
fn check_block_size(
    body: &Body,
    block_at: u64,
    n: u32,
    m: u32,
    most: u32,
    left: Option<(u64, u64)>,
) -> Result<(), PgcFileError> {
    if n == 0 || n > most {
        let what = match left {
            Some((left, total)) => format!(
                "{}: an item block of {n} items (must be 1..={most}: {left} of its {total} \
                 items are left)",
                body.name
            ),
            None => format!(
                "{}: an item block of {n} items (at most {MAX_BLOCK_ITEMS})",
                body.name
            ),
        };
        return Err(malformed(block_at, what));
    }
    if m < n || m as u64 > body.max_block_bytes {
        return Err(malformed(
            block_at + 4,
            format!(
                "{}: an item block of {n} items in {m} bytes (must be {n}..={})",
                body.name, body.max_block_bytes
            ),
        ));
    }
    Ok(())
}

/// Reads the template section (after the header).
fn read_templates<R: Read>(
    src: &mut Source<R>,
    buf: &mut Vec<u8>,
    scratch: &mut Vec<WireId>,
) -> Result<(Vec<Template>, Vec<Arity>), PgcFileError> {
    let count = src.u32("the template count")?;
    let mut templates: Vec<Template> = Vec::new();
    let mut arities: Vec<Arity> = Vec::new();
    for t in 0..count {
        let at = src.offset;
        let name_len = src.u32("a template header")?;
        if name_len > MAX_NAME_BYTES {
            return Err(malformed(
                at,
                format!("template {t}: a name of {name_len} bytes (at most {MAX_NAME_BYTES})"),
            ));
        }
        let name = src.bytes(name_len as u64, "a template name")?;
        let name = String::from_utf8(name)
            .map_err(|_| malformed(at + 4, format!("template {t}: its name is not UTF-8")))?;
        let fields_at = src.offset;
        let num_inputs = src.u32("a template header")?;
        let num_outputs = src.u32("a template header")?;
        let num_wires = src.u32("a template header")?;
        let item_count = src.u64("a template header")?;
        let mut tpl = Template {
            name,
            num_inputs,
            num_outputs,
            num_wires,
            items: Vec::new(),
        };
        let mut items = Vec::new();
        {
            let body = Body::template(t, &tpl, &arities);
            check_template_header(&tpl)
                .map_err(|e| malformed(fields_at, format!("{}: {e}", body.name)))?;
            while (items.len() as u64) < item_count {
                let block_at = src.offset;
                let left = item_count - items.len() as u64;
                let most = left.min(MAX_BLOCK_ITEMS as u64) as u32;
                let n = src.u32("an item block header")?;
                let m = src.u32("an item block header")?;
                check_block_size(&body, block_at, n, m, most, Some((left, item_count)))?;
                let data_at = src.offset;
                src.read_into(buf, m as u64, "an item block")?;
                decode_items(
                    buf,
                    n,
                    data_at,
                    items.len() as u64,
                    &body,
                    scratch,
                    &mut items,
                )?;
            }
        }
        // Template wires are bit sets and expansion scratch: bound them by the body.
        let writes = body_writes(&items);
        if let Some(most) = unjustified_wires(num_wires, num_inputs as u64, writes) {
            return Err(malformed(
                fields_at + 8,
                format!(
                    "template {t}: {num_wires} wires, but its {num_inputs} inputs and the \
                     {writes} wire writes of its body justify at most {most}"
                ),
            ));
        }
        tpl.items = items;
        arities.push(Arity::of(&tpl));
        templates.push(tpl);
    }
    Ok((templates, arities))
}

/// Decoding state of one block.
struct Cursor {
    next: i64,
    last_template: Option<u32>,
}

/// Decodes the `n` records of one item block (`data`, at file offset `data_at`) into
/// `out`; returns how many of them are calls. Errors name the body and the item's index
/// (counting from `first_item`).
pub(super) fn decode_items(
    data: &[u8],
    n: u32,
    data_at: u64,
    first_item: u64,
    body: &Body,
    scratch: &mut Vec<WireId>,
    out: &mut Vec<Item>,
) -> Result<u64, PgcFileError> {
    let mut cursor = Cursor {
        next: 0,
        last_template: None,
    };
    let mut pos = 0usize;
    let mut calls = 0u64;
    out.reserve(n as usize);
    for i in 0..n as u64 {
        let record_at = data_at + pos as u64;
        let item = decode_item(data, &mut pos, body, &mut cursor, scratch).map_err(|e| {
            malformed(
                record_at,
                format!("{}, item {}: {e}", body.name, first_item + i),
            )
        })?;
        calls += matches!(item, Item::Call(_)) as u64;
        out.push(item);
    }
    if pos != data.len() {
        return Err(malformed(
            data_at + pos as u64,
            format!(
                "{}: {} bytes left over after the block's {n} items",
                body.name,
                data.len() - pos
            ),
        ));
    }
    Ok(calls)
}

fn decode_item(
    data: &[u8],
    pos: &mut usize,
    body: &Body,
    cursor: &mut Cursor,
    scratch: &mut Vec<WireId>,
) -> Result<Item, String> {
    let Some(&tag) = data.get(*pos) else {
        return Err(format!(
            "the block's {} bytes end before its items do",
            data.len()
        ));
    };
    *pos += 1;
    let code = tag & 0b111;
    if code != CALL_CODE {
        let op = gate_op(code).ok_or_else(|| format!("unknown item code {code}"))?;
        if tag & TAG_RESERVED != 0 {
            return Err(format!("reserved bits set in tag byte {tag:#04x}"));
        }
        let g: Gate = decode_gate_fields(data, pos, op, tag, cursor.next, body.num_wires)?;
        body.check_written(g.out, "the gate")?;
        cursor.next = g.out as i64 + 1;
        return Ok(Item::Gate(g));
    }
    if tag & CALL_TAG_RESERVED != 0 {
        return Err(format!("reserved bits set in call tag byte {tag:#04x}"));
    }
    let t = match cursor.last_template {
        _ if tag & TAG_SAME_TEMPLATE == 0 => get_varint(data, pos)?,
        Some(t) => t as u64,
        None => {
            return Err(
                "the tag says \"the previous call's template\" but no call precedes \
                        it in its block"
                    .into(),
            );
        }
    };
    let arity = body.callee(t)?;
    // `callee` found it among at most 2^32 - 1 templates.
    let template = t as u32;
    // Each remaining byte holds at most MAX_RUN wires: never reserve more than that.
    let room = (data.len() - *pos) as u64 * MAX_RUN as u64;
    let mut inputs = Vec::with_capacity(room.min(arity.inputs as u64) as usize);
    decode_pieces(
        data,
        pos,
        arity.inputs,
        cursor.next,
        body.num_wires,
        "input",
        &mut inputs,
    )?;
    let outputs = if tag & TAG_OUTPUTS_AT_NEXT != 0 {
        if arity.outputs > MAX_RUN {
            return Err(format!(
                "the tag says \"outputs at next\" for template {template}'s {} outputs (at \
                 most {MAX_RUN})",
                arity.outputs
            ));
        }
        let end = cursor.next + arity.outputs as i64;
        if end > body.num_wires as i64 {
            return Err(format!(
                "its {} outputs from wire {} on run past the {} wires",
                arity.outputs, cursor.next, body.num_wires
            ));
        }
        (cursor.next as WireId..end as WireId).collect()
    } else {
        let room = (data.len() - *pos) as u64 * MAX_RUN as u64;
        let mut outputs = Vec::with_capacity(room.min(arity.outputs as u64) as usize);
        decode_pieces(
            data,
            pos,
            arity.outputs,
            cursor.next,
            body.num_wires,
            "output",
            &mut outputs,
        )?;
        outputs
    };
    check_call_roles(&inputs, &outputs, body.first_writable, scratch)?;
    if let Some(&last) = outputs.last() {
        cursor.next = last as i64 + 1;
    }
    cursor.last_template = Some(template);
    Ok(Item::Call(Box::new(Call {
        template,
        inputs,
        outputs,
    })))
}

/// Decodes pieces holding exactly `count` wires (a call's inputs or outputs, `role`) with
/// the cursor starting at `cursor`; every wire must be `< num_wires`.
fn decode_pieces(
    data: &[u8],
    pos: &mut usize,
    count: u32,
    cursor: i64,
    num_wires: u32,
    role: &str,
    out: &mut Vec<WireId>,
) -> Result<(), String> {
    let mut c = cursor;
    let mut done = 0u32;
    while done < count {
        let h = get_varint(data, pos)?;
        let start = c + unzigzag(h >> 1);
        // One wire in range (most pieces): the checks below would all pass.
        if h & 1 == 0 && (0..num_wires as i64).contains(&start) {
            out.push(start as WireId);
            c = start + 1;
            done += 1;
            continue;
        }
        let len = if h & 1 == 1 {
            let len = get_varint(data, pos)? + 2;
            if len > MAX_RUN as u64 {
                return Err(format!(
                    "{role} {done}: a run of {len} wires (at most {MAX_RUN})"
                ));
            }
            len as u32
        } else {
            1
        };
        let left = count - done;
        if len > left {
            return Err(format!(
                "{role} {done}: a run of {len} wires, but only {left} of the call's {count} \
                 {role}s are left"
            ));
        }
        let end = start + len as i64;
        if start < 0 || end > num_wires as i64 {
            return Err(if len == 1 {
                format!("{role} {done} is wire {start}, out of range for {num_wires} wires")
            } else {
                format!(
                    "{role}s {done}..{} are wires {start}..{end}, out of range for {num_wires} \
                     wires",
                    done + len
                )
            });
        }
        out.extend(start as WireId..end as WireId);
        c = end;
        done += len;
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {

    #[test]
    fn small_and_sorted_call_checks_agree() {
        let mut rng = SplitMix64::new(0xca11);
        let mut scratch = Vec::new();
        for case in 0..4000 {
            let n_out = 1 + (rng.next_u64() % 20) as usize;
            let n_in = (rng.next_u64() % 30) as usize;
            // Narrow (every mask bit taken) and wide (the second mask rules wires out).
            let range = 8 + rng.next_u64() % if case % 2 == 0 { 120 } else { 6000 };
            let wire = |rng: &mut SplitMix64| (rng.next_u64() % range) as WireId;
            let outputs: Vec<WireId> = (0..n_out).map(|_| wire(&mut rng)).collect();
            // Now and then an output, so that wide cases meet one too.
            let inputs: Vec<WireId> = (0..n_in)
                .map(|_| match rng.next_u64() % 16 {
                    0 => outputs[(rng.next_u64() % n_out as u64) as usize],
                    _ => wire(&mut rng),
                })
                .collect();
            let first_writable = (rng.next_u64() % 8) as u32;
            let small = check_small_call_roles(&inputs, &outputs, first_writable);
            let sorted =
                check_sorted_call_roles(&inputs, &outputs, first_writable, &mut scratch, false);
            assert_eq!(
                small.is_ok(),
                sorted.is_ok(),
                "case {case}: {small:?} vs {sorted:?}"
            );
        }
    }
    use super::super::{
        PGC_MAGIC, PgcReader, pgc_format_version, read_pgc_from, read_pgc_parallel_from, write_pgc,
    };
    use super::*;
    use crate::generate::SplitMix64;
    use crate::ir::Circuit;
    use crate::ports::{CType, InputPort, OutputPort, Owner, Visibility};

    /// A random item list for a body of `num_wires` wires whose wires below `first_writable`
    /// are never written, starting with `defined` set. Every wire read is set before, calls'
    /// outputs are distinct from each other and from their inputs, and about half of the
    /// calls read runs of consecutive wires and write consecutive outputs.
    fn random_body(
        rng: &mut SplitMix64,
        callable: &[Template],
        num_wires: u32,
        first_writable: u32,
        defined: &mut [bool],
        len: usize,
    ) -> Vec<Item> {
        let mut items = Vec::with_capacity(len);
        let pick_defined = |rng: &mut SplitMix64, defined: &[bool]| loop {
            let w = rng.below(num_wires);
            if defined[w as usize] {
                return w;
            }
        };
        let writable = num_wires - first_writable;
        while items.len() < len {
            if !callable.is_empty() && rng.below(3) == 0 {
                let t = rng.below(callable.len() as u32);
                let callee = &callable[t as usize];
                let mut inputs = Vec::new();
                while inputs.len() < callee.num_inputs as usize {
                    let w = pick_defined(rng, defined);
                    inputs.push(w);
                    if rng.next_bool() {
                        let mut v = w + 1;
                        while inputs.len() < callee.num_inputs as usize
                            && v < num_wires
                            && defined[v as usize]
                        {
                            inputs.push(v);
                            v += 1;
                        }
                    }
                }
                let free = |w: &WireId| !inputs.contains(w);
                let candidates: Vec<WireId> = (first_writable..num_wires).filter(free).collect();
                if candidates.len() < callee.num_outputs as usize {
                    continue;
                }
                let n_out = callee.num_outputs as usize;
                let consecutive_start = (0..candidates.len() - n_out + 1)
                    .map(|_| rng.below((candidates.len() - n_out + 1) as u32) as usize)
                    .take(4)
                    .find(|&s| candidates[s + n_out - 1] - candidates[s] == n_out as u32 - 1);
                let outputs: Vec<WireId> = match consecutive_start {
                    Some(s) if rng.next_bool() => candidates[s..s + n_out].to_vec(),
                    _ => {
                        let mut pool = candidates;
                        (0..n_out)
                            .map(|_| pool.swap_remove(rng.below(pool.len() as u32) as usize))
                            .collect()
                    }
                };
                for &w in &outputs {
                    defined[w as usize] = true;
                }
                items.push(Item::Call(Box::new(Call {
                    template: t,
                    inputs,
                    outputs,
                })));
            } else {
                let out = first_writable + rng.below(writable);
                let a = pick_defined(rng, defined);
                let b = pick_defined(rng, defined);
                let g = match rng.below(5) {
                    0 => Gate::xor(a, b, out),
                    1 => Gate::and(a, b, out),
                    2 => Gate::inv(a, out),
                    3 => Gate::copy(a, out),
                    _ => Gate::constant(rng.next_bool(), out),
                };
                defined[out as usize] = true;
                items.push(Item::Gate(g));
            }
        }
        items
    }

    /// A random, valid compact circuit: `templates` templates (each may call the ones before
    /// it) and a main body of about `main_items` items, with slot reuse everywhere.
    pub(in crate::pgcfile) fn random_compact(
        seed: u64,
        templates: usize,
        main_items: usize,
    ) -> CompactCircuit {
        let mut rng = SplitMix64::new(seed);
        let mut tpls: Vec<Template> = Vec::new();
        for t in 0..templates {
            let num_inputs = 1 + rng.below(24);
            let num_outputs = 1 + rng.below(8);
            let scratch = rng.below(12);
            let num_wires = num_inputs + num_outputs + scratch;
            let mut defined = vec![false; num_wires as usize];
            defined[..num_inputs as usize].fill(true);
            let len = (num_outputs + scratch + rng.below(30)) as usize;
            let mut items = random_body(&mut rng, &tpls, num_wires, num_inputs, &mut defined, len);
            for j in 0..num_outputs {
                let src = loop {
                    let w = rng.below(num_wires);
                    if defined[w as usize] {
                        break w;
                    }
                };
                items.push(Item::Gate(Gate::copy(src, num_inputs + j)));
            }
            tpls.push(Template {
                name: format!("f{t}"),
                num_inputs,
                num_outputs,
                num_wires,
                items,
            });
        }
        let input_widths = vec![8, 8];
        let n_in = 16;
        let num_wires = n_in + 40 + rng.below(40);
        let mut defined = vec![false; num_wires as usize];
        defined[..n_in as usize].fill(true);
        let main = random_body(&mut rng, &tpls, num_wires, 0, &mut defined, main_items);
        let set: Vec<WireId> = (0..num_wires).filter(|&w| defined[w as usize]).collect();
        let output_wires: Vec<WireId> = (0..12)
            .map(|_| set[rng.below(set.len() as u32) as usize])
            .collect();
        CompactCircuit {
            layout: Layout {
                num_wires,
                input_widths,
                output_widths: vec![8, 4],
                output_wires,
            },
            templates: tpls,
            main,
        }
    }

    pub(in crate::pgcfile) fn typed_interface() -> Interface {
        let byte = CType::int(8, false);
        Interface {
            inputs: vec![
                InputPort {
                    name: "INPUT_A_x".into(),
                    owner: Owner::A,
                    ctype: byte.clone(),
                },
                InputPort {
                    name: "INPUT_B_y".into(),
                    owner: Owner::B,
                    ctype: byte.clone(),
                },
            ],
            outputs: vec![
                OutputPort {
                    name: "OUTPUT_z".into(),
                    visibility: Visibility::Both,
                    ctype: byte,
                },
                OutputPort {
                    name: "OUTPUT_B_w".into(),
                    visibility: Visibility::B,
                    ctype: CType::Array {
                        elem: Box::new(CType::Bool),
                        len: 4,
                    },
                },
            ],
        }
    }

    fn to_bytes(c: &CompactCircuit, iface: &Interface) -> Vec<u8> {
        write_pgc_compact(Vec::new(), c, iface).unwrap()
    }

    /// A small circuit with nested calls, for the exhaustive corruption tests.
    fn small() -> CompactCircuit {
        random_compact(11, 3, 12)
    }

    #[test]
    fn round_trips_whole() {
        for (seed, templates, items) in [(1, 0, 50), (2, 1, 80), (3, 5, 300), (4, 12, 2000)] {
            let c = random_compact(seed, templates, items);
            for iface in [Interface::default(), typed_interface()] {
                let bytes = to_bytes(&c, &iface);
                assert_eq!(&bytes[8..12], &3u32.to_le_bytes());
                let (c2, iface2) = read_pgc_compact_from(&bytes[..]).unwrap();
                assert_eq!(c2, c);
                assert_eq!(iface2, iface);
            }
        }
    }

    #[test]
    fn streamed_writing_gives_the_same_bytes_and_blocks_read_back() {
        // Enough items for several main blocks, and a template body of several blocks.
        let mut c = random_compact(5, 6, 40_000);
        let mut rng = SplitMix64::new(9);
        let mut defined = vec![false; 30];
        defined[..10].fill(true);
        let mut long_body = random_body(&mut rng, &c.templates, 30, 10, &mut defined, 20_000);
        long_body.push(Item::Gate(Gate::copy(0, 10)));
        long_body.push(Item::Gate(Gate::copy(1, 11)));
        c.templates.push(Template {
            name: "long".into(),
            num_inputs: 10,
            num_outputs: 2,
            num_wires: 30,
            items: long_body,
        });
        let whole = to_bytes(&c, &Interface::default());
        let mut w =
            PgcCompactWriter::new(Vec::new(), &c.layout, &Interface::default(), &c.templates)
                .unwrap();
        let mut at = 0;
        while at < c.main.len() {
            let n = (rng.below(3000) as usize).min(c.main.len() - at);
            w.write_items(&c.main[at..at + n]).unwrap();
            at += n;
        }
        assert_eq!(w.items_written(), c.main.len() as u64);
        let streamed = w.finish().unwrap();
        assert_eq!(streamed, whole);

        let mut r = PgcCompactReader::new(&streamed[..]).unwrap();
        assert_eq!(r.layout(), &c.layout);
        assert_eq!(r.templates(), &c.templates[..]);
        let mut main = Vec::new();
        let mut blocks = 0;
        loop {
            let before = main.len();
            let n = r.read_items(&mut main).unwrap();
            assert_eq!(main.len() - before, n);
            if n == 0 {
                break;
            }
            assert!(n <= MAX_BLOCK_ITEMS as usize);
            blocks += 1;
        }
        assert!(blocks >= 3, "{blocks} blocks");
        assert_eq!(main, c.main);
        let calls = c.main.iter().filter(|i| matches!(i, Item::Call(_))).count();
        assert_eq!(r.calls_read(), calls as u64);
        assert_eq!(r.read_items(&mut main).unwrap(), 0);
    }

    #[test]
    fn a_patched_layout_gives_the_bytes_of_writing_it_first() {
        // Written with a provisional layout (more wires, other output wires), then patched:
        // byte for byte the file written with the final layout, checksums included.
        let c = random_compact(7, 4, 5_000);
        let whole = to_bytes(&c, &Interface::default());
        let mut provisional = c.layout.clone();
        provisional.num_wires += 1000;
        for w in &mut provisional.output_wires {
            *w += 1000;
        }
        let mut w = PgcCompactWriter::new(
            std::io::Cursor::new(Vec::new()),
            &provisional,
            &Interface::default(),
            &c.templates,
        )
        .unwrap();
        w.write_items(&c.main).unwrap();
        let mut file = w.finish().unwrap();
        assert_ne!(file.get_ref(), &whole);
        patch_compact_layout(&mut file, &c.layout, &Interface::default()).unwrap();
        assert_eq!(file.get_ref(), &whole);

        // A layout of another length is refused and the file left as it was.
        let mut longer = c.layout.clone();
        longer.output_widths.push(1);
        longer.output_wires.push(0);
        let e = patch_compact_layout(&mut file, &longer, &Interface::default()).unwrap_err();
        assert!(e.to_string().contains("does not fit"), "{e}");
        assert_eq!(file.get_ref(), &whole);
    }

    #[test]
    fn every_truncation_is_a_clear_error() {
        let bytes = to_bytes(&small(), &typed_interface());
        crate::testdata::assert_truncations_are_clear(&bytes, |b| read_pgc_compact_from(b));
    }

    #[test]
    fn every_byte_flip_is_detected_without_panicking() {
        let bytes = to_bytes(&small(), &typed_interface());
        let mut rng = SplitMix64::new(0xf11b);
        crate::testdata::assert_byte_flips_are_detected(
            &bytes,
            3,
            || rng.next_u64() as u8,
            |b| read_pgc_compact_from(b),
            // Templates are validated before the final checksum is reached.
            |k| matches!(k, PgcErrorKind::InvalidCompact(_)),
        );
    }

    /// Bytes up to and including the header checksum.
    fn header_len(bytes: &[u8]) -> usize {
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let layout_len = word(16);
        let json_len = word(20 + layout_len);
        24 + layout_len + json_len + 32
    }

    /// Flips bytes after the header and fixes the final checksum, so that the decoder's own
    /// checks must catch each corruption: a clean error naming an offset inside the file,
    /// or a circuit that still passes every check (it then writes back to the same bytes).
    #[test]
    fn corrupted_records_with_a_valid_checksum_never_get_past_the_checks() {
        let bytes = to_bytes(&random_compact(12, 4, 40), &Interface::default());
        let header_end = header_len(&bytes);
        let mut rng = SplitMix64::new(0xc0ffee);
        let (mut rejected, mut accepted) = (0, 0);
        for i in header_end..bytes.len() - 32 {
            for _ in 0..4 {
                let mut v = bytes.clone();
                v[i] ^= (rng.next_u64() as u8) | 1;
                let body = v.len() - 32;
                let digest = *blake3::hash(&v[..body]).as_bytes();
                v[body..].copy_from_slice(&digest);
                match read_pgc_compact_from(&v[..]) {
                    Ok((c, iface)) => {
                        accepted += 1;
                        // What was read passes the writer's checks.
                        write_pgc_compact(Vec::new(), &c, &iface).unwrap();
                    }
                    Err(e) => {
                        rejected += 1;
                        let text = e.to_string();
                        match e.kind {
                            PgcErrorKind::Malformed { offset, .. } => {
                                assert!(offset < v.len() as u64, "{text}");
                                assert!(text.starts_with(&format!("byte {offset}: ")), "{text}");
                            }
                            PgcErrorKind::Truncated { .. } | PgcErrorKind::InvalidCompact(_) => {}
                            ref k => panic!("flip at {i}: unexpected {k}"),
                        }
                    }
                }
            }
        }
        eprintln!("{rejected} rejected, {accepted} still well formed");
        assert!(
            rejected > 2 * accepted,
            "{rejected} rejected, {accepted} accepted"
        );
    }

    /// The header of a compact file for `layout`, then `rest`, then a valid final checksum.
    fn handmade(layout: &Layout, rest: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        let out = write_header(
            &mut v,
            PGC_COMPACT_FORMAT_VERSION,
            layout,
            &Interface::default(),
        )
        .unwrap();
        drop(out);
        v.extend_from_slice(rest);
        let digest = *blake3::hash(&v).as_bytes();
        v.extend_from_slice(&digest);
        v
    }

    fn tiny_layout() -> Layout {
        Layout {
            num_wires: 8,
            input_widths: vec![2],
            output_widths: vec![1],
            output_wires: vec![2],
        }
    }

    fn le32(fields: &[u32]) -> Vec<u8> {
        fields.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// A template header: name, inputs, outputs, wires, item count.
    fn template_header(name: &str, fields: [u32; 3], items: u64) -> Vec<u8> {
        let mut v = le32(&[name.len() as u32]);
        v.extend_from_slice(name.as_bytes());
        v.extend(le32(&fields));
        v.extend_from_slice(&items.to_le_bytes());
        v
    }

    #[test]
    fn hostile_counts_are_refused_before_anything_is_allocated() {
        let layout = tiny_layout();
        let header_len = handmade(&layout, &[]).len() - 32;
        let at = |k: usize| header_len + k;
        let cases: Vec<(Vec<u8>, String)> = vec![
            (
                // 4 billion templates: read one by one, the file ends.
                le32(&[u32::MAX]),
                format!(
                    "the file ends at byte {}, inside a template header (truncated?)",
                    at(4)
                ),
            ),
            (
                [le32(&[1, u32::MAX])].concat(),
                format!(
                    "byte {}: template 0: a name of 4294967295 bytes (at most 65536)",
                    at(4)
                ),
            ),
            (
                [le32(&[1]), template_header("f", [u32::MAX, 1, 5], 0)].concat(),
                format!(
                    "byte {}: template 0 (\"f\"): 4294967295 inputs and 1 outputs but only 5 \
                     wires",
                    at(9)
                ),
            ),
            (
                // A template claiming 2^64 - 1 items: blocks are read as they come.
                [le32(&[1]), template_header("f", [1, 1, 2], u64::MAX)].concat(),
                format!(
                    "the file ends at byte {}, inside an item block header (truncated?)",
                    at(29)
                ),
            ),
            (
                [
                    le32(&[1]),
                    template_header("f", [1, 1, 2], 3),
                    le32(&[4, 4]),
                ]
                .concat(),
                format!(
                    "byte {}: template 0 (\"f\"): an item block of 4 items (must be 1..=3: 3 \
                     of its 3 items are left)",
                    at(29)
                ),
            ),
            (
                [le32(&[0]), le32(&[MAX_BLOCK_ITEMS + 1, 1 << 20])].concat(),
                format!(
                    "byte {}: main: an item block of 16385 items (at most 16384)",
                    at(4)
                ),
            ),
            (
                [le32(&[0]), le32(&[1, u32::MAX])].concat(),
                format!(
                    "byte {}: main: an item block of 1 items in 4294967295 bytes (must be \
                     1..=1048592)",
                    at(8)
                ),
            ),
        ];
        for (rest, expected) in cases {
            // No final checksum: the reader must stop on the counts themselves.
            let mut file = handmade(&layout, &rest);
            file.truncate(file.len() - 32);
            let e = read_pgc_compact_from(&file[..]).unwrap_err().to_string();
            assert_eq!(e, expected);
        }
    }

    /// A template of `num_inputs` inputs whose body sets its `num_outputs` outputs to 0.
    fn constant_template(name: &str, num_inputs: u32, num_outputs: u32) -> Template {
        Template {
            name: name.into(),
            num_inputs,
            num_outputs,
            num_wires: num_inputs + num_outputs,
            items: (0..num_outputs)
                .map(|j| Item::Gate(Gate::constant(false, num_inputs + j)))
                .collect(),
        }
    }

    /// The header and template section that [`PgcCompactWriter::new`] writes.
    fn header_and_templates(layout: &Layout, templates: &[Template]) -> Vec<u8> {
        let w =
            PgcCompactWriter::new(Vec::new(), layout, &Interface::default(), templates).unwrap();
        w.out.inner
    }

    #[test]
    fn huge_arities_cost_only_what_the_file_holds() {
        // A template with 2^31 - 64 inputs and 64 outputs, declared in a few bytes; main
        // calls it: the reader must fail on the data, not allocate for the declared arity.
        let layout = Layout {
            num_wires: u32::MAX,
            input_widths: vec![2],
            output_widths: vec![1],
            output_wires: vec![2],
        };
        let big = constant_template("big", (1 << 31) - 64, 64);
        let mut file = header_and_templates(&layout, &[big]);
        // One main call of template 0 whose outputs are at next; its inputs are 3 runs
        // of 64, then the data ends.
        let mut records = vec![CALL_CODE | TAG_OUTPUTS_AT_NEXT, 0];
        for _ in 0..3 {
            records.extend_from_slice(&[1, 62]);
        }
        file.extend(le32(&[1, records.len() as u32]));
        file.extend_from_slice(&records);
        let e = read_pgc_compact_from(&file[..]).unwrap_err().to_string();
        assert!(
            e.contains("main, item 0: the data ends inside a varint"),
            "{e}"
        );
        // The "outputs at next" bit is only for at most 64 outputs.
        let mut file = header_and_templates(&layout, &[constant_template("g", 0, 65)]);
        file.extend(le32(&[1, 2]));
        file.extend_from_slice(&[CALL_CODE | TAG_OUTPUTS_AT_NEXT, 0]);
        let e = read_pgc_compact_from(&file[..]).unwrap_err().to_string();
        assert!(
            e.contains("for template 0's 65 outputs (at most 64)"),
            "{e}"
        );
    }

    /// Main records (one block of `n` items) after a template section of `templates`.
    fn main_block(templates: &[u8], n: u32, records: &[u8]) -> Vec<u8> {
        [
            templates.to_vec(),
            le32(&[n, records.len() as u32]),
            records.to_vec(),
        ]
        .concat()
    }

    #[test]
    fn malformed_records_name_offset_body_and_item() {
        let layout = tiny_layout();
        let header_len = handmade(&layout, &[]).len() - 32;
        // Template 0: 2 inputs, 1 output, 3 wires, one gate out 2 = AND(0, 1).
        let mut tpl = [le32(&[1]), template_header("and", [2, 1, 3], 1)].concat();
        tpl.extend(le32(&[1, 4]));
        tpl.extend_from_slice(&[1, zigzag(2) as u8, zigzag(2) as u8, zigzag(1) as u8]);
        let data_at = header_len + tpl.len() + 8;
        let no_run = |d: i64| (2 * zigzag(d)) as u8;
        let cases: Vec<(Vec<u8>, u32, String)> = vec![
            (vec![6], 1, "main, item 0: unknown item code 6".into()),
            (
                vec![CALL_CODE, 1],
                1,
                "main, item 0: calls template 1, but there are only 1 templates".into(),
            ),
            (
                vec![CALL_CODE | TAG_SAME_TEMPLATE],
                1,
                "main, item 0: the tag says \"the previous call's template\" but no call \
                 precedes it in its block"
                    .into(),
            ),
            (
                vec![CALL_CODE | 0x40, 0],
                1,
                "main, item 0: reserved bits set in call tag byte 0x45".into(),
            ),
            (
                // Inputs 0, 1; output 7 + 1 = 8 is out of range for 8 wires.
                vec![CALL_CODE, 0, no_run(0), no_run(0), no_run(8)],
                1,
                "main, item 0: output 0 is wire 8, out of range for 8 wires".into(),
            ),
            (
                // Inputs 0, 1 then output 1: also an input.
                vec![CALL_CODE, 0, no_run(0), no_run(0), no_run(1)],
                1,
                "main, item 0: input 1 is wire 1, which is also one of the call's outputs (a \
                 call's outputs differ from its inputs)"
                    .into(),
            ),
            (
                // A run of 3 inputs for a template with 2.
                vec![CALL_CODE, 0, 1, 1],
                1,
                "main, item 0: input 0: a run of 3 wires, but only 2 of the call's 2 inputs \
                 are left"
                    .into(),
            ),
            (
                vec![CALL_CODE, 0, 1, 63],
                1,
                "main, item 0: input 0: a run of 65 wires (at most 64)".into(),
            ),
            (
                // A good call (inputs 4, 5 as a run, output 0), then 1 byte left over.
                vec![CALL_CODE | TAG_OUTPUTS_AT_NEXT, 0, 17, 0, 0],
                1,
                "main: 1 bytes left over after the block's 1 items".into(),
            ),
        ];
        for (records, n, expected) in cases {
            let file = handmade(&layout, &main_block(&tpl, n, &records));
            let e = read_pgc_compact_from(&file[..]).unwrap_err();
            let text = e.to_string();
            assert!(text.ends_with(&expected), "{text}\nexpected …{expected}");
            let PgcErrorKind::Malformed { offset, .. } = e.kind else {
                panic!("{text}")
            };
            assert!(offset as usize >= data_at, "{text}");
        }
        // Template bodies: a template may call only earlier templates, never writes its
        // inputs.
        let self_call = [
            le32(&[1]),
            template_header("rec", [1, 1, 2], 1),
            le32(&[1, 4]),
            vec![CALL_CODE, 0, 0, 2],
        ]
        .concat();
        let e = read_pgc_compact_from(&handmade(&layout, &self_call)[..])
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "template 0 (\"rec\"), item 0: calls template 0, but template 0 may call only \
                 templates 0..0 (those before it)"
            ),
            "{e}"
        );
        let writes_input = [
            le32(&[1]),
            template_header("w", [2, 1, 3], 1),
            le32(&[1, 1]),
            vec![4 | TAG_OUT_IS_NEXT_FOR_TEST],
        ]
        .concat();
        let e = read_pgc_compact_from(&handmade(&layout, &writes_input)[..])
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "template 0 (\"w\"), item 0: the gate writes wire 0, one of the template's \
                 inputs 0..2 (a template never writes its inputs)"
            ),
            "{e}"
        );
    }

    const TAG_OUT_IS_NEXT_FOR_TEST: u8 = super::super::TAG_OUT_IS_NEXT;

    #[test]
    fn end_counts_must_match() {
        let c = small();
        let mut bytes = to_bytes(&c, &Interface::default());
        let counts_at = bytes.len() - 48;
        bytes[counts_at] ^= 1;
        let body = bytes.len() - 32;
        let digest = *blake3::hash(&bytes[..body]).as_bytes();
        bytes[body..].copy_from_slice(&digest);
        let e = read_pgc_compact_from(&bytes[..]).unwrap_err().to_string();
        let calls = c.main.iter().filter(|i| matches!(i, Item::Call(_))).count();
        assert_eq!(
            e,
            format!(
                "byte {counts_at}: the file says the main body has {} items ({calls} calls) \
                 but its blocks hold {} ({calls} calls)",
                c.main.len() ^ 1,
                c.main.len()
            )
        );
    }

    fn first_call(c: &mut CompactCircuit) -> &mut Call {
        c.main
            .iter_mut()
            .find_map(|i| match i {
                Item::Call(call) if call.outputs.len() >= 2 => Some(call),
                _ => None,
            })
            .expect("a call with two outputs")
    }

    #[test]
    fn the_writers_refuse_what_a_reader_would() {
        let c = small();
        type Change = fn(&mut CompactCircuit);
        // Format-level problems of main items: the streaming writer's own checks.
        let streamed: [(Change, &str); 5] = [
            (
                |c| first_call(c).template = 99,
                "main, item 0: calls template 99, but there are only 3 templates",
            ),
            (
                |c| {
                    first_call(c).inputs.pop();
                },
                "inputs and",
            ),
            (
                |c| {
                    let call = first_call(c);
                    call.outputs[0] = call.inputs[0];
                },
                "which is also one of the call's outputs",
            ),
            (
                |c| {
                    let call = first_call(c);
                    call.outputs[1] = call.outputs[0];
                },
                "is two of the call's outputs",
            ),
            (
                |c| c.main.push(Item::Gate(Gate::xor(0, 1, 5000))),
                "a gate output is wire 5000, out of range for",
            ),
        ];
        for (change, expected) in streamed {
            let mut bad = c.clone();
            change(&mut bad);
            // Put the bad item first, so that the error names item 0.
            let k = bad
                .main
                .iter()
                .zip(&c.main)
                .position(|(a, b)| a != b)
                .unwrap_or(c.main.len());
            bad.main.swap(0, k);
            let mut w = PgcCompactWriter::new(
                Vec::new(),
                &bad.layout,
                &Interface::default(),
                &bad.templates,
            )
            .unwrap();
            let e = w.write_items(&bad.main).unwrap_err();
            let text = e.to_string();
            assert!(matches!(e.kind, PgcErrorKind::CompactWrite(_)), "{text}");
            assert!(text.contains(expected), "{text}\nexpected {expected}");
            // The whole-circuit writer validates first.
            let e = write_pgc_compact(Vec::new(), &bad, &Interface::default()).unwrap_err();
            assert!(matches!(e.kind, PgcErrorKind::InvalidCompact(_)), "{e}");
        }
        // Templates are validated in full by both writers, and so is the layout.
        let whole: [(Change, &str); 4] = [
            (
                |c| c.templates[0].items.push(Item::Gate(Gate::inv(1, 0))),
                "writes wire 0, which is an input",
            ),
            (
                |c| {
                    c.templates[0].items.push(Item::Call(Box::new(Call {
                        template: 0,
                        inputs: vec![],
                        outputs: vec![],
                    })))
                },
                "which is not an earlier template",
            ),
            (
                |c| c.templates[1].num_wires += 1000,
                "non-input wires exceed the",
            ),
            (|c| c.layout.output_wires[0] = 9999, "wire 9999"),
        ];
        for (change, expected) in whole {
            let mut bad = c.clone();
            change(&mut bad);
            let e = write_pgc_compact(Vec::new(), &bad, &Interface::default()).unwrap_err();
            assert!(e.to_string().contains(expected), "{e}\nexpected {expected}");
            let e = PgcCompactWriter::new(
                Vec::new(),
                &bad.layout,
                &Interface::default(),
                &bad.templates,
            )
            .err()
            .expect("refused");
            assert!(e.to_string().contains(expected), "{e}\nexpected {expected}");
        }
        // Reads of unset wires in main: only the whole-circuit writer can see them.
        let mut bad = c.clone();
        bad.main
            .insert(0, Item::Gate(Gate::xor(0, bad.layout.num_wires - 1, 20)));
        let e = write_pgc_compact(Vec::new(), &bad, &Interface::default()).unwrap_err();
        assert!(e.to_string().contains("main item 0: reads wire"), "{e}");
    }

    #[test]
    fn other_readers_refuse_compact_files_clearly() {
        let bytes = to_bytes(&small(), &Interface::default());
        let errors = [
            read_pgc_from(&bytes[..]).map(|_| ()).unwrap_err(),
            read_pgc_parallel_from(&bytes[..]).map(|_| ()).unwrap_err(),
            PgcReader::new(&bytes[..]).map(|_| ()).unwrap_err(),
        ];
        for e in errors {
            assert!(matches!(e.kind, PgcErrorKind::CompactCircuit), "{e}");
            let text = e.to_string();
            assert!(text.contains("compact circuit (templates"), "{text}");
            assert!(text.contains("read_pgc_compact"), "{text}");
            assert!(text.contains("runs only sequentially"), "{text}");
        }
        // And the compact reader refuses the other versions.
        let plain = Circuit {
            layout: tiny_layout(),
            gates: vec![Gate::and(0, 1, 2)],
        };
        let mut v1 = Vec::new();
        write_pgc(&mut v1, &plain, &Interface::default()).unwrap();
        let e = PgcCompactReader::new(&v1[..]).map(|_| ()).unwrap_err();
        assert!(matches!(e.kind, PgcErrorKind::NotCompact { version: 1 }));
        assert_eq!(
            e.to_string(),
            "this file holds a plain circuit (format version 1), not a compact circuit \
             (format version 3); load it with read_pgc or PgcReader"
        );
    }

    #[test]
    fn format_versions_are_told_apart() {
        let dir = std::env::temp_dir().join(format!("pgc-compact-ver-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = small();
        let compact = dir.join("c.pgc");
        write_pgc_compact_file(&compact, &c, &typed_interface()).unwrap();
        assert_eq!(pgc_format_version(&compact).unwrap(), 3);
        assert_eq!(read_pgc_compact(&compact).unwrap(), (c, typed_interface()));
        let plain = dir.join("p.pgc");
        let circuit = Circuit {
            layout: tiny_layout(),
            gates: vec![Gate::and(0, 1, 2)],
        };
        super::super::write_pgc_file(&plain, &circuit, &Interface::default()).unwrap();
        assert_eq!(pgc_format_version(&plain).unwrap(), 1);
        let e = super::super::read_pgc(&compact).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{}: this file", compact.display())),
            "{e}"
        );
        let e = pgc_format_version(dir.join("missing.pgc"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.pgc"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn bad_magic_and_version() {
        let bytes = to_bytes(&small(), &Interface::default());
        assert!(bytes.starts_with(&PGC_MAGIC));
        let mut v = bytes.clone();
        v[8] = 4;
        let e = read_pgc_compact_from(&v[..]).unwrap_err();
        assert!(matches!(
            e.kind,
            PgcErrorKind::UnsupportedVersion { found: 4 }
        ));
        // A version 2 file whose version byte was changed to 3 fails on the header
        // checksum, not as a "compact circuit".
        let mut v = bytes;
        v[8] = 2;
        let e = read_pgc_from(&v[..]).unwrap_err();
        assert!(matches!(e.kind, PgcErrorKind::Checksum { .. }), "{e}");
    }

    /// Bytes per call for a main body of 100k calls of a template with 64 inputs (4 runs of
    /// 16 consecutive wires, read from recent outputs) and 16 consecutive outputs: written
    /// at the next wire, or at a reused 16-wire slot block.
    #[test]
    fn size_of_typical_calls() {
        let mut items = Vec::new();
        for j in 0..16 {
            items.push(Item::Gate(Gate::xor(j, 16 + j, 64 + j)));
            items.push(Item::Gate(Gate::and(32 + j, 48 + j, 80 + j)));
            items.push(Item::Gate(Gate::xor(64 + j, 80 + j, 64 + j)));
        }
        let template = Template {
            name: "mix".into(),
            num_inputs: 64,
            num_outputs: 16,
            num_wires: 96,
            items,
        };
        let calls = 100_000u32;
        let n_in = 256u32;
        let mut rng = SplitMix64::new(77);
        for reuse in [false, true] {
            // Fresh: call k writes 16 wires after call k - 1's. Reused: 256 blocks of 16 slots.
            let pool = 256u32;
            let num_wires = if reuse {
                n_in + 16 * pool
            } else {
                n_in + 16 * calls
            };
            let out_block = |k: u32, rng: &mut SplitMix64| {
                if reuse {
                    n_in + 16 * rng.below(pool)
                } else {
                    n_in + 16 * k
                }
            };
            let mut recent: Vec<WireId> = (0..n_in / 16).map(|b| 16 * b).collect();
            let mut main = Vec::new();
            let mut last_out = 0;
            for k in 0..calls {
                let out = out_block(k, &mut rng);
                last_out = out;
                let mut inputs = Vec::with_capacity(64);
                while inputs.len() < 64 {
                    let window = recent.len().min(64) as u32;
                    let start = recent[recent.len() - 1 - rng.below(window) as usize];
                    if (out..out + 16).contains(&start) {
                        continue;
                    }
                    inputs.extend(start..start + 16);
                }
                recent.retain(|&s| s != out);
                recent.push(out);
                if recent.len() > 256 {
                    recent.drain(..128);
                }
                main.push(Item::Call(Box::new(Call {
                    template: 0,
                    inputs,
                    outputs: (out..out + 16).collect(),
                })));
            }
            let c = CompactCircuit {
                layout: Layout {
                    num_wires,
                    input_widths: vec![n_in],
                    output_widths: vec![16],
                    output_wires: (last_out..last_out + 16).collect(),
                },
                templates: vec![template.clone()],
                main,
            };
            let bytes = to_bytes(&c, &Interface::default());
            // The same file without main items (the streaming writer does not check outputs).
            let base =
                PgcCompactWriter::new(Vec::new(), &c.layout, &Interface::default(), &c.templates)
                    .and_then(|w| w.finish())
                    .unwrap()
                    .len();
            let per_call = (bytes.len() - base) as f64 / calls as f64;
            eprintln!(
                "size: {calls} calls of a 64-input (4 runs of 16), 16-output template, \
                 outputs {}: {per_call:.2} bytes per call",
                if reuse {
                    "in reused slot blocks"
                } else {
                    "at the next wire"
                }
            );
            assert!(per_call < 30.0, "{per_call} bytes per call");
            let (c2, _) = read_pgc_compact_from(&bytes[..]).unwrap();
            assert_eq!(c2, c);
        }
    }
}
