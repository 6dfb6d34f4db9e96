//! Reading and writing circuits in the Bristol formats.
//!
//! **Bristol Fashion** (basic and extended):
//! ```text
//! <ngates> <nwires>
//! <niv> <w_1> .. <w_niv>        number of input values, then each one's width
//! <nov> <o_1> .. <o_nov>        number of output values, then each one's width
//!
//! <nin> <nout> <in..> <out..> <OP>    one gate per line, OP in XOR AND INV EQW EQ MAND
//! ```
//! Input value `i` is the consecutive wires after those of values `0..i`, starting at wire 0;
//! the outputs are the **last** `o_1 + .. + o_nov` wires. `EQW` copies a wire, `EQ` sets a
//! wire to a literal `0`/`1` (its "input" is the constant, not a wire id), and
//! `2n n a_1..a_n b_1..b_n c_1..c_n MAND` is `n` independent ANDs `c_k = a_k & b_k`, which
//! this parser expands into `n` consecutive [`Op::And`] gates. The header's gate count
//! counts lines, so a MAND line counts once.
//!
//! **Old Bristol format**: header `<ngates> <nwires>` then `<n1> <n2> <n3>` (input widths and
//! output width); input 2 is omitted when `n2 = 0`, the output is the last `n3` wires. Gate
//! lines are as above.
//!
//! Tokens are separated by any ASCII whitespace, blank lines are skipped anywhere, and a gate
//! occupies exactly one line. Every structural error is refused with the 1-based line where
//! it was found; the parser never panics on any input.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::ir::{Circuit, Gate, Layout, Op, WireId};

/// Which Bristol dialect a file is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Bristol Fashion, basic or extended (MAND); three header lines.
    BristolFashion,
    /// The old Bristol format; two header lines, at most two inputs and one output.
    Bristol,
}

impl Format {
    /// Canonical name accepted by [`FromStr`].
    pub fn name(self) -> &'static str {
        match self {
            Format::BristolFashion => "bristol-fashion",
            Format::Bristol => "bristol",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The format name was not recognised.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown circuit format '{0}' (expected 'bristol-fashion', 'bf', 'bristol' or 'old')")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bristol-fashion" | "bristol_fashion" | "bf" | "bristol_fashion_extended" => {
                Ok(Format::BristolFashion)
            }
            "bristol" | "old" | "bristol-format" | "bristol_format" => Ok(Format::Bristol),
            _ => Err(UnknownFormat(s.to_string())),
        }
    }
}

/// Largest wire count a file may declare. Bristol circuits are far smaller; the bound keeps
/// a corrupt or hostile header from making the parser (or any later consumer, which
/// allocates per wire) reserve gigabytes.
pub const MAX_WIRES: u32 = 1 << 28;

/// A malformed circuit file: what is wrong, and on which 1-based line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ParseError {
    /// 1-based line number (for an early end of file: one past the last line).
    pub line: usize,
    pub kind: ParseErrorKind,
}

/// What is wrong with a circuit file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    #[error("file ends before the {expected} header line")]
    MissingHeader { expected: &'static str },
    #[error("malformed {what} header: expected {expected}, found '{found}'")]
    BadHeader {
        what: &'static str,
        expected: &'static str,
        found: String,
    },
    #[error("{what} header declares {declared} values but lists {listed} widths")]
    WidthCount {
        what: &'static str,
        declared: u64,
        listed: usize,
    },
    #[error("header declares {declared} wires, more than the supported maximum {MAX_WIRES}")]
    TooManyWires { declared: u64 },
    #[error(
        "header declares {declared} gates, but a file of {bytes} bytes has room for at most \
         {most} gate lines"
    )]
    TooManyGates {
        declared: u64,
        bytes: usize,
        most: u64,
    },
    #[error(
        "header declares {num_wires} wires, but {inputs} input wires and {justified_by} \
         justify at most {most} (every wire is an input or a gate output; a few unused ones \
         are allowed)"
    )]
    UnjustifiedWires {
        num_wires: u32,
        inputs: u64,
        justified_by: String,
        most: u64,
    },
    #[error("header declares {num_wires} wires, fewer than its {needed} {what} wires")]
    TooFewWires {
        num_wires: u32,
        needed: u64,
        what: &'static str,
    },
    #[error("'{found}' is not a valid {what}")]
    BadNumber { what: &'static str, found: String },
    #[error("unknown gate type '{found}' (expected XOR, AND, INV, EQW, EQ or MAND)")]
    UnknownOp { found: String },
    #[error("{op} gate declares {nin} inputs and {nout} outputs, expected {expected}")]
    Arity {
        op: &'static str,
        nin: u64,
        nout: u64,
        expected: &'static str,
    },
    #[error("gate line has {found} fields, expected {expected} (2 counts, the wires, the type)")]
    FieldCount { found: usize, expected: u64 },
    #[error("EQ constant must be 0 or 1, found '{found}'")]
    ConstNotBit { found: String },
    #[error("wire {wire} is out of range (the header declares {num_wires} wires)")]
    WireOutOfRange { wire: u64, num_wires: u32 },
    #[error("wire {wire} is read before it is set")]
    UnsetWire { wire: WireId },
    #[error("wire {wire} is written again (it is an input wire)")]
    WritesInput { wire: WireId },
    #[error("wire {wire} is written again (first set on line {first_line})")]
    WrittenTwice { wire: WireId, first_line: usize },
    #[error("file ends after {found} of the {declared} gates declared in the header")]
    Truncated { declared: u64, found: u64 },
    #[error("unexpected content after the {declared} gates declared in the header")]
    TrailingContent { declared: u64 },
    #[error(
        "output wire {wire} is never set: with {num_wires} wires declared, the outputs are \
         wires {first_output}..{num_wires}, but the inputs and gates do not set them all"
    )]
    OutputUnset {
        wire: WireId,
        num_wires: u32,
        first_output: u32,
    },
}

/// Reading a circuit file failed: the file could not be read, or it is malformed.
#[derive(Debug, thiserror::Error)]
pub enum CircuitFileError {
    #[error("cannot read circuit file {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}: {source}", path.display())]
    Parse { path: PathBuf, source: ParseError },
}

/// Reads and parses a circuit file; `format: None` detects it (see [`detect_format`]).
pub fn read_circuit_file(
    path: impl AsRef<Path>,
    format: Option<Format>,
) -> Result<Circuit, CircuitFileError> {
    let path = path.as_ref();
    let text = crate::limits::read_file(path).map_err(|source| CircuitFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_circuit(&text, format).map_err(|source| CircuitFileError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

/// Longest token quoted verbatim in an error.
const MAX_QUOTED: usize = 40;

fn quote(token: &[u8]) -> String {
    let s = String::from_utf8_lossy(token);
    if s.chars().count() <= MAX_QUOTED {
        s.into_owned()
    } else {
        let head: String = s.chars().take(MAX_QUOTED).collect();
        format!("{head}...")
    }
}

/// Splits text into lines, numbering them from 1 and skipping blank ones.
#[derive(Clone)]
struct Lines<'a> {
    text: &'a [u8],
    pos: usize,
    line_no: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a [u8]) -> Self {
        Lines {
            text,
            pos: 0,
            line_no: 0,
        }
    }

    /// The next line holding a token, with its number, or `None` at end of file.
    fn next_nonblank(&mut self) -> Option<(usize, &'a [u8])> {
        while self.pos < self.text.len() {
            let rest = &self.text[self.pos..];
            let len = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            let line = &rest[..len];
            self.pos += len + 1;
            self.line_no += 1;
            if line.iter().any(|b| !b.is_ascii_whitespace()) {
                return Some((self.line_no, line));
            }
        }
        None
    }

    /// Line number an error about a missing line is reported at: one past the last line.
    fn eof_line(&self) -> usize {
        let ends_with_newline = self.text.last() == Some(&b'\n');
        let lines = self.text.iter().filter(|&&b| b == b'\n').count()
            + usize::from(!self.text.is_empty() && !ends_with_newline);
        lines + 1
    }
}

/// Splits a line into whitespace-separated tokens, reusing `out`'s allocation.
fn tokenize<'a>(line: &'a [u8], out: &mut Vec<&'a [u8]>) {
    out.clear();
    out.extend(
        line.split(|b| b.is_ascii_whitespace())
            .filter(|t| !t.is_empty()),
    );
}

/// Parses a decimal token of ASCII digits; `None` if it is not one or exceeds `u64`.
fn parse_u64(token: &[u8]) -> Option<u64> {
    if token.is_empty() || token.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in token {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// Whether a line's last token is a gate type (not a number): tells gate lines from
/// header lines.
fn ends_with_word(line: &[u8]) -> bool {
    line.split(|b| b.is_ascii_whitespace())
        .rfind(|t| !t.is_empty())
        .is_some_and(|t| parse_u64(t).is_none())
}

/// Detects the dialect from the line structure.
///
/// The first header line (`<ngates> <nwires>`) and the second (inputs) look alike in both
/// dialects, and a second line such as `128 128 128` is valid in both. What differs is the
/// line after it: in Bristol Fashion it is the output header, numbers only; in the old
/// format it is already the first gate line, which ends with a gate type such as `XOR`.
/// So the first non-blank line after the second header line decides. A file with nothing
/// after two header lines can only be old format (with no gates). Returns `None` if the
/// file has fewer than two non-blank lines.
pub fn detect_format(text: &[u8]) -> Option<Format> {
    let mut lines = Lines::new(text);
    lines.next_nonblank()?;
    lines.next_nonblank()?;
    Some(match lines.next_nonblank() {
        Some((_, line)) if !ends_with_word(line) => Format::BristolFashion,
        _ => Format::Bristol,
    })
}

/// Tracks, for every non-input wire, the line that set it (0 = unset). Dense for the ids a
/// file of this size can plausibly use, sparse beyond, so a header declaring many wires
/// never makes the parser allocate more than O(file size).
struct WireDefs {
    num_inputs: u32,
    dense: Vec<u32>,
    sparse: HashMap<WireId, u32>,
}

/// Marker for input wires in error reports.
const INPUT: u32 = u32::MAX;

impl WireDefs {
    fn new(num_inputs: u32, num_wires: u32, file_len: usize) -> Self {
        let dense_len = ((num_wires - num_inputs) as usize).min(file_len + 64);
        WireDefs {
            num_inputs,
            dense: vec![0; dense_len],
            sparse: HashMap::new(),
        }
    }

    /// The line that set `wire`, [`INPUT`] for an input wire, 0 if unset.
    fn get(&self, wire: WireId) -> u32 {
        if wire < self.num_inputs {
            return INPUT;
        }
        let i = (wire - self.num_inputs) as usize;
        match self.dense.get(i) {
            Some(&line) => line,
            None => self.sparse.get(&wire).copied().unwrap_or(0),
        }
    }

    fn set(&mut self, wire: WireId, line: usize) {
        let line = u32::try_from(line).unwrap_or(INPUT - 1).clamp(1, INPUT - 1);
        let i = (wire - self.num_inputs) as usize;
        match self.dense.get_mut(i) {
            Some(slot) => *slot = line,
            None => {
                self.sparse.insert(wire, line);
            }
        }
    }
}

struct Header {
    num_gates: u64,
    num_wires: u32,
    input_widths: Vec<u32>,
    output_widths: Vec<u32>,
}

fn err(line: usize, kind: ParseErrorKind) -> ParseError {
    ParseError { line, kind }
}

/// Parses a header line of numbers only.
fn header_numbers(
    line_no: usize,
    line: &[u8],
    what: &'static str,
    expected: &'static str,
) -> Result<Vec<u64>, ParseError> {
    let mut tokens = Vec::new();
    tokenize(line, &mut tokens);
    tokens
        .iter()
        .map(|t| parse_u64(t))
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| {
            err(
                line_no,
                ParseErrorKind::BadHeader {
                    what,
                    expected,
                    found: quote(line.trim_ascii()),
                },
            )
        })
}

fn next_header_line<'a>(
    lines: &mut Lines<'a>,
    expected: &'static str,
) -> Result<(usize, &'a [u8]), ParseError> {
    lines
        .next_nonblank()
        .ok_or_else(|| err(lines.eof_line(), ParseErrorKind::MissingHeader { expected }))
}

/// Parses a Bristol Fashion `<n> <w_1> .. <w_n>` line.
fn width_list(lines: &mut Lines<'_>, what: &'static str) -> Result<(usize, Vec<u32>), ParseError> {
    let expected = "'<count> <width> ..'";
    let (line_no, line) = next_header_line(lines, what)?;
    let nums = header_numbers(line_no, line, what, expected)?;
    let Some((&declared, widths)) = nums.split_first() else {
        return Err(err(
            line_no,
            ParseErrorKind::BadHeader {
                what,
                expected,
                found: String::new(),
            },
        ));
    };
    if declared != widths.len() as u64 {
        return Err(err(
            line_no,
            ParseErrorKind::WidthCount {
                what,
                declared,
                listed: widths.len(),
            },
        ));
    }
    let widths = widths
        .iter()
        .map(|&w| {
            u32::try_from(w).map_err(|_| err(line_no, ParseErrorKind::TooManyWires { declared: w }))
        })
        .collect::<Result<Vec<u32>, _>>()?;
    Ok((line_no, widths))
}

fn check_width_sum(
    line_no: usize,
    widths: &[u32],
    num_wires: u32,
    what: &'static str,
) -> Result<(), ParseError> {
    let needed: u64 = widths.iter().map(|&w| w as u64).sum();
    if needed > num_wires as u64 {
        return Err(err(
            line_no,
            ParseErrorKind::TooFewWires {
                num_wires,
                needed,
                what,
            },
        ));
    }
    Ok(())
}

/// Unused wire ids a file may declare beyond twice the wires its gates set (as for `.pgc`
/// files: memory stays proportional to the file).
const UNUSED_WIRES_SLACK: u64 = 64;

/// Checks `num_wires` against `inputs` input wires and at most `sets` wires set by gates
/// (`by` says where that bound comes from); the error names `line`.
fn check_wires_justified(
    line: usize,
    num_wires: u32,
    inputs: u64,
    sets: u64,
    by: impl FnOnce() -> String,
) -> Result<(), ParseError> {
    let most = inputs
        .saturating_add(sets.saturating_mul(2))
        .saturating_add(UNUSED_WIRES_SLACK);
    if num_wires as u64 > most {
        return Err(err(
            line,
            ParseErrorKind::UnjustifiedWires {
                num_wires,
                inputs,
                justified_by: by(),
                most,
            },
        ));
    }
    Ok(())
}

/// Refuses a header whose gate count or wire count the file's `text_len` bytes cannot
/// hold, before anything is allocated: a gate line takes at least 8 bytes and every wire a
/// gate sets takes at least 2 (its number and a space).
fn check_header_against_size(
    line_no: usize,
    header: &Header,
    text_len: usize,
) -> Result<(), ParseError> {
    let most_gates = (text_len / 8) as u64;
    if header.num_gates > most_gates {
        return Err(err(
            line_no,
            ParseErrorKind::TooManyGates {
                declared: header.num_gates,
                bytes: text_len,
                most: most_gates,
            },
        ));
    }
    let inputs: u64 = header.input_widths.iter().map(|&w| w as u64).sum();
    let most_sets = (text_len / 2) as u64;
    check_wires_justified(line_no, header.num_wires, inputs, most_sets, || {
        format!("the gate lines a file of {text_len} bytes can hold")
    })
}

fn parse_header(lines: &mut Lines<'_>, format: Format) -> Result<Header, ParseError> {
    let (line_no, line) = next_header_line(lines, "'<gates> <wires>'")?;
    let expected = "'<gates> <wires>'";
    let nums = header_numbers(line_no, line, "first", expected)?;
    let &[num_gates, num_wires] = nums.as_slice() else {
        return Err(err(
            line_no,
            ParseErrorKind::BadHeader {
                what: "first",
                expected,
                found: quote(line.trim_ascii()),
            },
        ));
    };
    if num_wires > MAX_WIRES as u64 {
        return Err(err(
            line_no,
            ParseErrorKind::TooManyWires {
                declared: num_wires,
            },
        ));
    }
    let num_wires = num_wires as u32;
    match format {
        Format::BristolFashion => {
            let (in_line, input_widths) = width_list(lines, "input")?;
            check_width_sum(in_line, &input_widths, num_wires, "input")?;
            let (out_line, output_widths) = width_list(lines, "output")?;
            check_width_sum(out_line, &output_widths, num_wires, "output")?;
            Ok(Header {
                num_gates,
                num_wires,
                input_widths,
                output_widths,
            })
        }
        Format::Bristol => {
            let expected = "'<input 1 bits> <input 2 bits> <output bits>'";
            let (line_no, line) = next_header_line(lines, expected)?;
            let nums = header_numbers(line_no, line, "second", expected)?;
            let bad = || {
                err(
                    line_no,
                    ParseErrorKind::BadHeader {
                        what: "second",
                        expected,
                        found: quote(line.trim_ascii()),
                    },
                )
            };
            let &[n1, n2, n3] = nums.as_slice() else {
                return Err(bad());
            };
            let to_u32 = |w: u64| {
                u32::try_from(w)
                    .map_err(|_| err(line_no, ParseErrorKind::TooManyWires { declared: w }))
            };
            let (n1, n2, n3) = (to_u32(n1)?, to_u32(n2)?, to_u32(n3)?);
            let input_widths = if n2 == 0 { vec![n1] } else { vec![n1, n2] };
            check_width_sum(line_no, &input_widths, num_wires, "input")?;
            check_width_sum(line_no, &[n3], num_wires, "output")?;
            Ok(Header {
                num_gates,
                num_wires,
                input_widths,
                output_widths: vec![n3],
            })
        }
    }
}

/// Parses a circuit from the text of a Bristol Fashion or old Bristol file; `format: None`
/// detects the dialect with [`detect_format`]. The wire ids of the file are kept.
pub fn parse_circuit(text: &[u8], format: Option<Format>) -> Result<Circuit, ParseError> {
    let format = match format {
        Some(f) => f,
        None => detect_format(text).unwrap_or(Format::BristolFashion),
    };
    let mut lines = Lines::new(text);
    let header = parse_header(&mut lines, format)?;
    let header_line = 1 + text
        .iter()
        .take_while(|b| b.is_ascii_whitespace())
        .filter(|&&b| b == b'\n')
        .count();
    check_header_against_size(header_line, &header, text.len())?;
    let num_wires = header.num_wires;
    // The width sums were checked against num_wires, so they fit in u32.
    let num_inputs: u32 = header.input_widths.iter().sum();
    let num_outputs: u32 = header.output_widths.iter().sum();
    let mut defs = WireDefs::new(num_inputs, num_wires, text.len());
    // Every gate line takes at least 8 bytes ("1 1 0 1 INV"), so this never over-reserves
    // by much even when the header's gate count is absurd.
    let mut gates: Vec<Gate> = Vec::with_capacity((header.num_gates as usize).min(text.len() / 8));
    let mut tokens: Vec<&[u8]> = Vec::new();
    let mut wires: Vec<WireId> = Vec::new();
    let mut gates_read: u64 = 0;
    let mut gate_outputs: u64 = 0;
    while gates_read < header.num_gates {
        let Some((line_no, line)) = lines.next_nonblank() else {
            return Err(err(
                lines.eof_line(),
                ParseErrorKind::Truncated {
                    declared: header.num_gates,
                    found: gates_read,
                },
            ));
        };
        tokenize(line, &mut tokens);
        gate_outputs += parse_gate_line(
            line_no, &tokens, num_wires, &mut defs, &mut wires, &mut gates,
        )?;
        gates_read += 1;
    }
    if let Some((line_no, _)) = lines.next_nonblank() {
        return Err(err(
            line_no,
            ParseErrorKind::TrailingContent {
                declared: header.num_gates,
            },
        ));
    }
    check_wires_justified(
        header_line,
        num_wires,
        num_inputs as u64,
        gate_outputs,
        || format!("the {gate_outputs} wires its gates set"),
    )?;
    let first_output = num_wires - num_outputs;
    // Distinct outputs must each be an input or a gate output; checking the count first
    // bounds the work below by the file size.
    if num_outputs as u64 > num_inputs as u64 + gate_outputs {
        let wire = (first_output..num_wires)
            .find(|&w| defs.get(w) == 0)
            .unwrap_or(first_output);
        return Err(err(
            header_line,
            ParseErrorKind::OutputUnset {
                wire,
                num_wires,
                first_output,
            },
        ));
    }
    if let Some(wire) = (first_output..num_wires).find(|&w| defs.get(w) == 0) {
        return Err(err(
            header_line,
            ParseErrorKind::OutputUnset {
                wire,
                num_wires,
                first_output,
            },
        ));
    }
    Ok(Circuit {
        layout: Layout {
            num_wires,
            input_widths: header.input_widths,
            output_widths: header.output_widths,
            output_wires: (first_output..num_wires).collect(),
        },
        gates,
    })
}

/// Parses one gate line into `gates`; returns the number of wires it sets.
fn parse_gate_line(
    line_no: usize,
    tokens: &[&[u8]],
    num_wires: u32,
    defs: &mut WireDefs,
    wires: &mut Vec<WireId>,
    gates: &mut Vec<Gate>,
) -> Result<u64, ParseError> {
    let e = |kind| err(line_no, kind);
    let op_token = *tokens.last().expect("a non-blank line has a token");
    let op_name: &'static str = match op_token {
        b"XOR" => "XOR",
        b"AND" => "AND",
        b"INV" => "INV",
        b"EQW" => "EQW",
        b"EQ" => "EQ",
        b"MAND" => "MAND",
        _ => {
            return Err(e(ParseErrorKind::UnknownOp {
                found: quote(op_token),
            }));
        }
    };
    if tokens.len() < 3 {
        return Err(e(ParseErrorKind::FieldCount {
            found: tokens.len(),
            expected: 5,
        }));
    }
    let count = |t: &[u8], what| {
        parse_u64(t).ok_or_else(|| {
            e(ParseErrorKind::BadNumber {
                what,
                found: quote(t),
            })
        })
    };
    let nin = count(tokens[0], "input count")?;
    let nout = count(tokens[1], "output count")?;
    let arity_ok = match op_name {
        "XOR" | "AND" => nin == 2 && nout == 1,
        "INV" | "EQW" | "EQ" => nin == 1 && nout == 1,
        _ => nout >= 1 && nin == 2 * nout,
    };
    if !arity_ok {
        let expected = match op_name {
            "XOR" | "AND" => "2 and 1",
            "MAND" => "2n and n (n >= 1)",
            _ => "1 and 1",
        };
        return Err(e(ParseErrorKind::Arity {
            op: op_name,
            nin,
            nout,
            expected,
        }));
    }
    // nin and nout are small here unless MAND; 2 + nin + nout + 1 cannot overflow since
    // nin = 2 nout <= u64::MAX.
    let expected_fields = 3u64.saturating_add(nin).saturating_add(nout);
    if tokens.len() as u64 != expected_fields {
        return Err(e(ParseErrorKind::FieldCount {
            found: tokens.len(),
            expected: expected_fields,
        }));
    }
    let wire_tokens = &tokens[2..tokens.len() - 1];
    let (in_tokens, out_tokens) = wire_tokens.split_at(nin as usize);
    let wire_id = |t: &[u8]| -> Result<WireId, ParseError> {
        let w = parse_u64(t).ok_or_else(|| {
            e(ParseErrorKind::BadNumber {
                what: "wire id",
                found: quote(t),
            })
        })?;
        if w >= num_wires as u64 {
            return Err(e(ParseErrorKind::WireOutOfRange { wire: w, num_wires }));
        }
        Ok(w as WireId)
    };
    wires.clear();
    if op_name == "EQ" {
        let bit = match in_tokens[0] {
            b"0" => 0,
            b"1" => 1,
            t => {
                return Err(e(ParseErrorKind::ConstNotBit { found: quote(t) }));
            }
        };
        wires.push(bit);
    } else {
        // All inputs are checked before any output is set: a MAND's ANDs are one parallel
        // layer and may not read each other.
        for &t in in_tokens {
            let w = wire_id(t)?;
            if defs.get(w) == 0 {
                return Err(e(ParseErrorKind::UnsetWire { wire: w }));
            }
            wires.push(w);
        }
    }
    let first_out = wires.len();
    for &t in out_tokens {
        let w = wire_id(t)?;
        match defs.get(w) {
            0 => defs.set(w, line_no),
            INPUT => return Err(e(ParseErrorKind::WritesInput { wire: w })),
            first => {
                return Err(e(ParseErrorKind::WrittenTwice {
                    wire: w,
                    first_line: first as usize,
                }));
            }
        }
        wires.push(w);
    }
    let (ins, outs) = wires.split_at(first_out);
    match op_name {
        "XOR" => gates.push(Gate::xor(ins[0], ins[1], outs[0])),
        "AND" => gates.push(Gate::and(ins[0], ins[1], outs[0])),
        "INV" => gates.push(Gate::inv(ins[0], outs[0])),
        "EQW" => gates.push(Gate::copy(ins[0], outs[0])),
        "EQ" => gates.push(Gate::constant(ins[0] == 1, outs[0])),
        _ => {
            let n = outs.len();
            gates.extend((0..n).map(|k| Gate::and(ins[k], ins[n + k], outs[k])));
        }
    }
    Ok(nout)
}

/// Writes `c` as a Bristol Fashion file that computes the same function.
///
/// Works for any valid circuit: if wire ids are reused slots, outputs are not the last
/// wires, an output is an input wire or repeats another, the circuit is renumbered into SSA
/// form (inputs keep `0..n_in`, every gate writes a fresh wire, output value bits become the
/// last wires) and `EQW` copies are appended where an output cannot be a gate's own output.
/// With `mand: true`, runs of consecutive ANDs that do not read each other are written as
/// MAND lines (extended Bristol Fashion).
///
/// Fails with [`io::ErrorKind::InvalidInput`] if the circuit is invalid (see
/// [`crate::analysis::validate`]).
pub fn write_bristol_fashion<W: Write + ?Sized>(
    c: &Circuit,
    out: &mut W,
    mand: bool,
) -> io::Result<()> {
    crate::analysis::validate(c).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let (num_wires, gates) = to_ssa_with_trailing_outputs(c);
    let lines = group_lines(&gates, mand, num_wires);
    let mut w = io::BufWriter::new(out);
    writeln!(w, "{} {}", lines.len(), num_wires)?;
    write_widths(&mut w, &c.layout.input_widths)?;
    write_widths(&mut w, &c.layout.output_widths)?;
    writeln!(w)?;
    for range in lines {
        let run = &gates[range];
        let g = run[0];
        if run.len() > 1 {
            write!(w, "{} {}", 2 * run.len(), run.len())?;
            for g in run {
                write!(w, " {}", g.a)?;
            }
            for g in run {
                write!(w, " {}", g.b)?;
            }
            for g in run {
                write!(w, " {}", g.out)?;
            }
            writeln!(w, " MAND")?;
            continue;
        }
        match g.op {
            Op::Xor | Op::And => writeln!(w, "2 1 {} {} {} {}", g.a, g.b, g.out, g.op.name())?,
            Op::Inv | Op::Copy | Op::Const => writeln!(w, "1 1 {} {} {}", g.a, g.out, g.op.name())?,
        }
    }
    w.flush()
}

fn write_widths(w: &mut impl Write, widths: &[u32]) -> io::Result<()> {
    write!(w, "{}", widths.len())?;
    for x in widths {
        write!(w, " {x}")?;
    }
    writeln!(w)
}

/// Renumbers a valid circuit so that every gate writes a fresh wire and the output bits are
/// the last wires, in order; returns the wire count and the gates (with copies appended).
fn to_ssa_with_trailing_outputs(c: &Circuit) -> (u32, Vec<Gate>) {
    let layout = &c.layout;
    let n_in = layout.num_input_wires();
    let n_out = layout.output_wires.len();
    const NONE: u32 = u32::MAX;
    let mut last_writer = vec![NONE; layout.num_wires as usize];
    for (i, g) in c.gates.iter().enumerate() {
        last_writer[g.out as usize] = i as u32;
    }
    // Output position each gate's result goes to, if any; outputs needing a copy.
    let mut gate_output_pos = vec![NONE; c.gates.len()];
    let mut claimed = vec![false; layout.num_wires as usize];
    let mut copies: Vec<(WireId, usize)> = Vec::new();
    for (j, &w) in layout.output_wires.iter().enumerate() {
        let writer = last_writer[w as usize];
        if writer != NONE && !claimed[w as usize] {
            claimed[w as usize] = true;
            gate_output_pos[writer as usize] = j as u32;
        } else {
            copies.push((w, j));
        }
    }
    let total = n_in as u64 + c.gates.len() as u64 + copies.len() as u64;
    let num_wires = u32::try_from(total).expect("circuit too large for 32-bit wire ids");
    let first_output = num_wires - n_out as u32;
    let mut current: Vec<WireId> = (0..layout.num_wires).collect();
    let mut next_id = n_in;
    let mut gates = Vec::with_capacity(c.gates.len() + copies.len());
    for (i, g) in c.gates.iter().enumerate() {
        let mut ng = *g;
        match g.op {
            Op::Xor | Op::And => {
                ng.a = current[g.a as usize];
                ng.b = current[g.b as usize];
            }
            Op::Inv | Op::Copy => ng.a = current[g.a as usize],
            Op::Const => {}
        }
        ng.out = if gate_output_pos[i] != NONE {
            first_output + gate_output_pos[i]
        } else {
            next_id += 1;
            next_id - 1
        };
        current[g.out as usize] = ng.out;
        gates.push(ng);
    }
    for (w, j) in copies {
        gates.push(Gate::copy(current[w as usize], first_output + j as u32));
    }
    (num_wires, gates)
}

/// Splits SSA gates into output lines: single gates, or (with `mand`) maximal runs of
/// consecutive ANDs none of which reads another's output.
fn group_lines(gates: &[Gate], mand: bool, num_wires: u32) -> Vec<std::ops::Range<usize>> {
    let mut lines = Vec::with_capacity(gates.len());
    if !mand {
        lines.extend((0..gates.len()).map(|i| i..i + 1));
        return lines;
    }
    // Run number (1-based) that wrote each wire; only compared within the current run.
    let mut written_in_run = vec![0u32; num_wires as usize];
    let mut run_id = 0u32;
    let mut start = 0;
    for (i, g) in gates.iter().enumerate() {
        let extends = i > start
            && g.op == Op::And
            && gates[start].op == Op::And
            && written_in_run[g.a as usize] != run_id
            && written_in_run[g.b as usize] != run_id;
        if !extends && i > start {
            lines.push(start..i);
            start = i;
        }
        if i == start {
            run_id += 1;
        }
        if g.op == Op::And {
            written_in_run[g.out as usize] = run_id;
        }
    }
    if start < gates.len() {
        lines.push(start..gates.len());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{assign_slots, levelize, validate};
    use crate::eval::eval_bitsliced;
    use crate::generate::{SplitMix64, random_circuit};
    use proptest::prelude::*;

    /// Inputs a (2 bits: wires 0, 1) and b (1 bit: wire 2); output (2 bits: wires 5, 6) =
    /// (!((a0 & a1) ^ b), a0).
    const SMALL: &str =
        "4 7\n2 2 1\n1 2\n\n2 1 0 1 3 AND\n2 1 2 3 4 XOR\n1 1 4 5 INV\n1 1 0 6 EQW\n";

    fn parse_err(text: &str, format: Option<Format>) -> ParseError {
        parse_circuit(text.as_bytes(), format).expect_err("must be refused")
    }

    /// Asserts the error is on `line` and its message contains `needle`.
    fn assert_err(text: &str, line: usize, needle: &str) {
        let e = parse_err(text, Some(Format::BristolFashion));
        assert_eq!(e.line, line, "{e}");
        let msg = e.to_string();
        assert!(msg.contains(needle), "message '{msg}' lacks '{needle}'");
        assert!(msg.starts_with(&format!("line {line}: ")), "{msg}");
    }

    fn eval_all(c: &Circuit) -> Vec<Vec<u64>> {
        let n = c.layout.num_input_wires() as usize;
        let mut rng = SplitMix64::new(99);
        (0..4)
            .map(|_| {
                let lanes: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
                eval_bitsliced(c, &lanes)
            })
            .collect()
    }

    /// Finding 1 of issue 16: 45 bytes declaring 2^28 wires parsed and then took 2.1 GB of
    /// per-wire memory downstream. Now the header is refused against the file's size.
    #[test]
    fn a_tiny_file_cannot_declare_millions_of_wires_or_gates() {
        let text = "1 268435456\n1 2\n1 1\n\n2 1 0 1 268435455 AND\n";
        assert!(text.len() <= 45, "{}", text.len());
        let e = parse_circuit(text.as_bytes(), None).unwrap_err();
        assert_eq!(e.line, 1);
        assert!(
            matches!(
                e.kind,
                ParseErrorKind::UnjustifiedWires {
                    num_wires: 268435456,
                    inputs: 2,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string()
                .starts_with("line 1: header declares 268435456 wires"),
            "{e}"
        );
        // Within the file's room but not used by its gates: refused after the gate lines.
        let padded = format!("1 200\n1 2\n1 1\n{}\n2 1 0 1 199 AND\n", " ".repeat(300));
        let e = parse_circuit(padded.as_bytes(), None).unwrap_err();
        assert!(
            matches!(e.kind, ParseErrorKind::UnjustifiedWires { most: 68, .. }),
            "{e}"
        );
        let e = parse_circuit(b"4000000000 3\n1 2\n1 1\n2 1 0 1 2 AND\n", None).unwrap_err();
        assert!(
            matches!(
                e.kind,
                ParseErrorKind::TooManyGates {
                    declared: 4000000000,
                    ..
                }
            ),
            "{e}"
        );
        // A few unused wires stay allowed.
        let c = parse_circuit(b"1 10\n1 2\n1 1\n2 1 0 1 9 AND\n", None).unwrap();
        assert_eq!(c.layout.num_wires, 10);
    }

    #[test]
    fn small_file_parses_and_evaluates() {
        let c = parse_circuit(SMALL.as_bytes(), None).unwrap();
        assert_eq!(c.layout.num_wires, 7);
        assert_eq!(c.layout.input_widths, [2, 1]);
        assert_eq!(c.layout.output_widths, [2]);
        assert_eq!(c.layout.output_wires, [5, 6]);
        assert_eq!(c.gates[3], Gate::copy(0, 6));
        for x in 0..8u32 {
            let bits = [x & 1 == 1, x & 2 == 2, x & 4 == 4];
            let out = crate::eval::eval_bits(&c, &bits);
            assert_eq!(out, [!((bits[0] & bits[1]) ^ bits[2]), bits[0]]);
        }
        // CRLF, tabs, blank lines and trailing spaces change nothing.
        let messy = format!(
            "\n\n{}\n\n   \n",
            SMALL.replace('\n', " \r\n").replace(' ', "\t ")
        );
        assert_eq!(parse_circuit(messy.as_bytes(), None).unwrap(), c);
    }

    #[test]
    fn eq_and_mand_gates() {
        let text = "3 8\n1 2\n1 4\n2 1 0 1 2 XOR\n6 3 0 1 2 1 2 0 4 5 6 MAND\n1 1 1 7 EQ\n";
        let c = parse_circuit(text.as_bytes(), Some(Format::BristolFashion)).unwrap();
        assert_eq!(
            c.gates,
            vec![
                Gate::xor(0, 1, 2),
                Gate::and(0, 1, 4),
                Gate::and(1, 2, 5),
                Gate::and(2, 0, 6),
                Gate::constant(true, 7),
            ]
        );
        // Wire 3 is never set, but it is not an output: accepted.
        assert_eq!(c.layout.output_wires, [4, 5, 6, 7]);
    }

    #[test]
    fn old_format() {
        let text = "2 5\n2 1 2\n2 1 0 1 3 AND\n2 1 2 0 4 XOR\n";
        assert_eq!(detect_format(text.as_bytes()), Some(Format::Bristol));
        let c = parse_circuit(text.as_bytes(), None).unwrap();
        assert_eq!(c.layout.input_widths, [2, 1]);
        assert_eq!(c.layout.output_wires, [3, 4]);
        let one_input = "1 3\n2 0 1\n2 1 0 1 2 AND\n";
        let c = parse_circuit(one_input.as_bytes(), None).unwrap();
        assert_eq!(c.layout.input_widths, [2]);
        assert_eq!(
            detect_format(SMALL.as_bytes()),
            Some(Format::BristolFashion)
        );
        assert_eq!(detect_format(b"1 2\n"), None);
    }

    #[test]
    fn format_names() {
        assert_eq!("bf".parse::<Format>().unwrap(), Format::BristolFashion);
        assert_eq!(
            "Bristol-Fashion".parse::<Format>().unwrap(),
            Format::BristolFashion
        );
        assert_eq!("old".parse::<Format>().unwrap(), Format::Bristol);
        assert_eq!("bristol".parse::<Format>().unwrap(), Format::Bristol);
        assert!("verilog".parse::<Format>().is_err());
    }

    #[test]
    fn header_errors() {
        assert_err("", 1, "file ends before the '<gates> <wires>' header");
        assert_err("\n\n", 3, "file ends before");
        assert_err(
            "4 x\n",
            1,
            "malformed first header: expected '<gates> <wires>', found '4 x'",
        );
        assert_err("4\n2 2 1\n1 2\n", 1, "malformed first header");
        assert_err("4 7 1\n2 2 1\n1 2\n", 1, "malformed first header");
        assert_err("4 7\n", 2, "file ends before the input header");
        assert_err(
            "4 7\n2 2\n1 2\n",
            2,
            "input header declares 2 values but lists 1 widths",
        );
        assert_err("4 7\n2 2 1\n", 3, "file ends before the output header");
        assert_err(
            "4 7\n2 2 1\n2 2\n",
            3,
            "output header declares 2 values but lists 1 widths",
        );
        assert_err("4 7\n2 2 1\nx\n", 3, "malformed output header");
        assert_err(
            "4 2\n2 2 1\n1 2\n",
            2,
            "header declares 2 wires, fewer than its 3 input wires",
        );
        assert_err("4 7\n2 2 1\n1 8\n", 3, "fewer than its 8 output wires");
        assert_err(
            "4 999999999\n2 2 1\n1 2\n",
            1,
            "more than the supported maximum",
        );
        assert_err("4 99999999999999999999999\n", 1, "malformed first header");
        assert_err("4 7\n2 2 99999999999\n1 2\n", 2, "99999999999");
    }

    #[test]
    fn old_format_header_errors() {
        let e = parse_err("2 5\n2 1\n2 1 0 1 3 AND\n", Some(Format::Bristol));
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("malformed second header"), "{e}");
        // A Bristol Fashion file read as old format fails at its output header.
        let e = parse_err(SMALL, Some(Format::Bristol));
        assert_eq!(e.line, 3);
        assert!(e.to_string().contains("unknown gate type '2'"), "{e}");
        // An old-format file read as Bristol Fashion fails at its first gate.
        let e = parse_err(
            "2 5\n2 1 2\n2 1 0 1 3 AND\n2 1 2 0 4 XOR\n",
            Some(Format::BristolFashion),
        );
        assert_eq!(e.line, 3);
        assert!(e.to_string().contains("malformed output header"), "{e}");
    }

    /// SMALL with gate line `k` (0-based) replaced by `line`.
    fn with_gate(k: usize, line: &str) -> String {
        let mut lines: Vec<&str> = SMALL.lines().collect();
        lines[4 + k] = line;
        lines.join("\n")
    }

    #[test]
    fn gate_errors() {
        assert_err(
            &with_gate(1, "2 1 2 9 4 XOR"),
            6,
            "wire 9 is out of range (the header declares 7 wires)",
        );
        assert_err(
            &with_gate(0, "2 1 0 4 3 AND"),
            5,
            "wire 4 is read before it is set",
        );
        assert_err(
            &with_gate(2, "1 1 4 3 INV"),
            7,
            "wire 3 is written again (first set on line 5)",
        );
        assert_err(
            &with_gate(3, "1 1 4 1 EQW"),
            8,
            "wire 1 is written again (it is an input wire)",
        );
        assert_err(
            &with_gate(0, "2 1 0 1 3 NAND"),
            5,
            "unknown gate type 'NAND'",
        );
        assert_err(&with_gate(0, "2 1 0 1 3 and"), 5, "unknown gate type 'and'");
        assert_err(
            &with_gate(0, "1 1 0 3 AND"),
            5,
            "AND gate declares 1 inputs and 1 outputs, expected 2 and 1",
        );
        assert_err(
            &with_gate(2, "2 1 4 0 5 INV"),
            7,
            "INV gate declares 2 inputs",
        );
        assert_err(
            &with_gate(0, "2 1 0 3 AND"),
            5,
            "gate line has 5 fields, expected 6",
        );
        assert_err(
            &with_gate(0, "2 1 0 1 1 3 AND"),
            5,
            "gate line has 7 fields, expected 6",
        );
        assert_err(
            &with_gate(0, "AND"),
            5,
            "gate line has 1 fields, expected 5",
        );
        assert_err(
            &with_gate(0, "2 1 0 x 3 AND"),
            5,
            "'x' is not a valid wire id",
        );
        assert_err(
            &with_gate(0, "2 1 0 -1 3 AND"),
            5,
            "'-1' is not a valid wire id",
        );
        assert_err(
            &with_gate(0, "two 1 0 1 3 AND"),
            5,
            "'two' is not a valid input count",
        );
        assert_err(
            &with_gate(3, "1 1 2 6 EQ"),
            8,
            "EQ constant must be 0 or 1, found '2'",
        );
        assert_err(
            &with_gate(0, "4 2 0 1 1 3 3 4 MAND"),
            5,
            "wire 3 is read before it is set",
        );
        assert_err(
            &with_gate(0, "3 2 0 1 1 3 4 MAND"),
            5,
            "MAND gate declares 3 inputs and 2 outputs",
        );
        assert_err(
            &with_gate(0, "0 0 MAND"),
            5,
            "MAND gate declares 0 inputs and 0 outputs",
        );
    }

    #[test]
    fn count_errors() {
        // Header says 5 gates, the file has 4 (and two trailing blank lines).
        let text = format!("5{}\n\n", &SMALL[1..]);
        let e = parse_err(&text, None);
        assert_eq!(e.line, 11, "{e}");
        assert!(
            e.to_string().contains("file ends after 4 of the 5 gates"),
            "{e}"
        );
        // No newline at the end.
        let e = parse_err(&format!("5{}", SMALL[1..].trim_end()), None);
        assert_eq!(e.line, 9, "{e}");
        // Header says 3 gates, the file has 4.
        let text = format!("3 6{}", &SMALL[3..]);
        let e = parse_err(&text, None);
        assert_eq!(e.line, 8, "{e}");
        assert!(
            e.to_string()
                .contains("unexpected content after the 3 gates"),
            "{e}"
        );
        // Wire count too large by one: the last output wire (7) is never set.
        let e = parse_err(&format!("4 8{}", &SMALL[3..]), None);
        assert_eq!(e.line, 1, "{e}");
        assert!(
            e.to_string().contains(
                "output wire 7 is never set: with 8 wires declared, the outputs are wires 6..8"
            ),
            "{e}"
        );
        // Same, with leading blank lines: the header line is reported.
        let e = parse_err(&format!("\n\n4 8{}", &SMALL[3..]), None);
        assert_eq!(e.line, 3, "{e}");
        // A huge wire count whose last output is set by a gate was once accepted; its
        // consumers then allocated per declared wire (issue 16). Now it is refused.
        let e = parse_err("1 200000000\n1 1\n1 1\n1 1 0 199999999 INV\n", None);
        assert_eq!(e.line, 1, "{e}");
        assert!(
            e.to_string().contains("header declares 200000000 wires"),
            "{e}"
        );
        // More outputs than inputs plus gate outputs cannot all be set.
        let e = parse_err("1 200000000\n1 1\n1 100000000\n1 1 0 199999999 INV\n", None);
        assert_eq!(e.line, 1, "{e}");
    }

    #[test]
    fn file_errors_name_the_path() {
        let missing = Path::new("/nonexistent/pgc/circuit.txt");
        let e = read_circuit_file(missing, None).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot read circuit file /nonexistent/pgc/circuit.txt: "),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("pgc-circuit-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.txt");
        std::fs::write(&path, "1 2\n1 1\n1 1\n1 1 0 1 XYZ\n").unwrap();
        let e = read_circuit_file(&path, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: line 4: unknown gate type 'XYZ' (expected XOR, AND, INV, EQW, EQ or MAND)",
                path.display()
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn round_trip(c: &Circuit, mand: bool) -> Circuit {
        let mut text = Vec::new();
        write_bristol_fashion(c, &mut text, mand).unwrap();
        let back = parse_circuit(&text, None).unwrap_or_else(|e| {
            panic!("{e}\n{}", String::from_utf8_lossy(&text));
        });
        assert_eq!(back.layout.input_widths, c.layout.input_widths);
        assert_eq!(back.layout.output_widths, c.layout.output_widths);
        assert_eq!(back.and_count(), c.and_count());
        assert_eq!(eval_all(&back), eval_all(c));
        back
    }

    #[test]
    fn write_round_trips_random_circuits() {
        for seed in 0..150u64 {
            let c = random_circuit(seed, (seed % 10) as u32, (seed * 3 % 120) as usize);
            let back = round_trip(&c, false);
            // Already SSA with trailing outputs? Then ids may change but the gate count only
            // grows by the copies needed for input or repeated outputs.
            assert!(back.gates.len() >= c.gates.len());
            round_trip(&c, true);
            // Slot-reusing circuits (outputs anywhere) need renumbering.
            let slotted = assign_slots(&levelize(&c).unwrap());
            round_trip(&slotted, false);
            round_trip(&slotted, true);
        }
    }

    #[test]
    fn write_mand_groups_independent_ands() {
        let c = levelize(&random_circuit(11, 16, 400)).unwrap();
        let mut plain = Vec::new();
        write_bristol_fashion(&c, &mut plain, false).unwrap();
        let mut grouped = Vec::new();
        write_bristol_fashion(&c, &mut grouped, true).unwrap();
        let count_lines = |t: &[u8]| t.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count();
        assert!(count_lines(&grouped) < count_lines(&plain));
        assert!(String::from_utf8_lossy(&grouped).contains("MAND"));
        round_trip(&c, true);
    }

    #[test]
    fn write_refuses_invalid_circuit() {
        let mut c = random_circuit(1, 4, 10);
        c.gates[0] = Gate::and(0, 50, c.gates[0].out);
        let e = write_bristol_fashion(&c, &mut Vec::new(), false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    /// Interesting replacement tokens for mutations.
    const TOKENS: &[&str] = &[
        "0",
        "1",
        "2",
        "3",
        "6",
        "7",
        "8",
        "9",
        "4294967295",
        "4294967296",
        "268435456",
        "99999999999999999999999",
        "-1",
        "x",
        "XOR",
        "AND",
        "INV",
        "EQW",
        "EQ",
        "MAND",
        "\n",
        " ",
        "\r",
        "",
        "\u{feff}",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            for format in [None, Some(Format::BristolFashion), Some(Format::Bristol)] {
                if let Ok(c) = parse_circuit(&bytes, format) {
                    prop_assert!(validate(&c).is_ok());
                }
            }
        }

        #[test]
        fn mutated_files_never_panic(
            edits in proptest::collection::vec((any::<usize>(), 0usize..TOKENS.len(), 0u8..3), 1..5),
            mand in any::<bool>(),
        ) {
            let base = if mand {
                "3 8\n1 3\n1 4\n2 1 0 1 3 XOR\n6 3 0 1 2 1 2 0 4 5 6 MAND\n1 1 1 7 EQ\n"
            } else {
                SMALL
            };
            let mut tokens: Vec<String> = base
                .split_inclusive(|c: char| c.is_ascii_whitespace())
                .map(str::to_string)
                .collect();
            for (pos, token, kind) in edits {
                let i = pos % tokens.len();
                match kind {
                    0 => tokens[i] = format!("{} ", TOKENS[token]),
                    1 => { tokens.remove(i); if tokens.is_empty() { tokens.push(String::new()); } }
                    _ => tokens.insert(i, format!("{} ", TOKENS[token])),
                }
            }
            let text = tokens.concat();
            for format in [None, Some(Format::BristolFashion), Some(Format::Bristol)] {
                if let Ok(c) = parse_circuit(text.as_bytes(), format) {
                    prop_assert!(validate(&c).is_ok());
                    let mut out = Vec::new();
                    write_bristol_fashion(&c, &mut out, true).unwrap();
                    prop_assert!(parse_circuit(&out, Some(Format::BristolFashion)).is_ok());
                }
            }
        }
    }
}
