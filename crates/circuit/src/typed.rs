//! Values of C types as users write them, converted to and from the bits of a typed port
//! (see [`crate::ports`] for the bit order).
//!
//! Text notation (what `--input NAME=VALUE` takes, and what outputs print as):
//! - integers in decimal, `-` allowed for signed types (`-42`), or hexadecimal `0x2a`; `_`
//!   may separate digits. Decimal values must lie in the C type's range. A hexadecimal value
//!   is the type's bit pattern, so for `int8_t` both `-1` and `0xff` mean -1; `-0x10` is
//!   -16 (range-checked like decimal);
//! - `_Bool`: `true`, `false`, `0` or `1`;
//! - character constants for integers: `'a'` is the byte 97, as in C (escapes `\n`, `\t`,
//!   `\r`, `\0`, `\\`, `\'`, `\"` and `\xHH`); a character is one byte of UTF-8, taken
//!   as the type's bit pattern like hexadecimal (so `'\xff'` is -1 for `int8_t`);
//! - strings for arrays of 8-bit integers (`char`, `int8_t`, `uint8_t`): `"kitten"` is its
//!   UTF-8 bytes, padded with zero bytes to the array's length as a C initializer pads them
//!   (`char s[6] = "kitten"` fills all six bytes; a longer string is an error);
//! - `float`/`double`: decimal (`1.5`, `-0.0`, `1e-3`, `.5`, `7`), C hexadecimal floating
//!   constants (`0x1.8p3`), `inf`, `-inf`, `nan`, `-nan` (any case; `infinity` too), all
//!   rounded correctly to the type (to nearest, ties to even, like `strtof`/`strtod`); or
//!   the raw IEEE-754 bit pattern in hexadecimal without a `.` or `p` (`0x3fc00000` is
//!   1.5f, `0x7fc00001` a NaN with a payload);
//! - arrays: `[1, 2, 3]`, nested for more dimensions `[[1, 2], [3, 4]]` (`{…}` works too, as
//!   in a C initializer);
//! - structs: `{x: 1, y: [1, 2]}` (also `{.x = 1, .y = {1, 2}}`), or positionally `{1, [1, 2]}`.
//!
//! JSON (`--inputs FILE.json`): numbers, strings in the text notation (`"0xff"`, `"-5"`,
//! needed for integers beyond what JSON numbers carry exactly; `"nan"`, `"-inf"`,
//! `"0x7fc00001"` for what JSON numbers cannot say; `"\"kitten\""` for text, since a JSON
//! string is read as the text notation and text there is quoted), `true`/`false`, nested
//! lists for arrays, objects (or lists, positionally) for structs. A JSON number for a `double` is
//! rounded correctly; for a `float` it is rounded to a `double` first, which differs from
//! rounding straight to `float` only for numbers within 2^-29 of a unit in the last place
//! from halfway between two floats (give such a value as a string to have it rounded once).
//!
//! Outputs format as the same notation with decimal integers, signed per C type, and as JSON
//! with exact integers (64-bit values included; wider ones as decimal strings), nested lists
//! and objects. `_Bool` prints as `0` or `1`, as C's `printf("%d")` would. A plain `char`
//! prints as a character constant (`'a'`, `'\n'`, `'\xff'`) and an array of `char` as a
//! string (`"kitten"`; row by row for more dimensions), its trailing zero bytes left out
//! since the string reads back padded with them; inside both, printable ASCII is itself,
//! `\n` `\t` `\r` `\0` `\\` and the quote are escaped and every other byte (control
//! characters, UTF-8 beyond ASCII) is `\xHH`, so that what prints reads back to the same
//! bits. `int8_t`/`uint8_t` (also `signed char`/`unsigned char`) print as numbers, and in
//! JSON every integer, `char` included, is a number (exact, and the same as before `char`
//! had a name). Floats print in the shortest form that reads back to the same bits
//! ([`crate::float_text::format_float`]:
//! `0.1`, `-0.0`, `1e300`, `inf`, `nan`, `-nan`; a NaN with a payload as its bit pattern);
//! in JSON, finite floats are numbers, infinities and NaNs strings in the text notation
//! (`"inf"`, `"-inf"`, `"-nan"`, `"0x7fc00001"`), since JSON numbers have neither.
//!
//! Errors name the port (and the element, e.g. `INPUT_A_m[1][0]` or `INPUT_B_p.y[2]`), the
//! type expected, what kind of value was given instead (a number, a string of 7 bytes, a list
//! of 3 elements) and the character position of a syntax error, but never the value itself
//! nor any piece of it: inputs are the parties' secrets, and error text ends up in logs and
//! terminals shared with others. Field names are shown (they are the program's names);
//! within a value, punctuation the parser did not expect is shown, letters and digits are
//! not.

use std::fmt::Write as _;

use crate::float_text;
use crate::ir::Layout;
use crate::ports::{CType, Interface};

/// The widest integer type values can be given for.
pub const MAX_INT_BITS: u32 = 128;

/// Longest user text quoted verbatim in an error; longer texts are shortened.
const MAX_QUOTED: usize = 48;

fn quoted(text: &str) -> String {
    if text.chars().count() <= MAX_QUOTED {
        text.to_string()
    } else {
        let head: String = text.chars().take(MAX_QUOTED).collect();
        format!("{head}...")
    }
}

/// A value that does not fit the port's C type, or text that is not a value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TypedError {
    /// The text is not in the value notation. `what` describes the problem without
    /// quoting the value.
    #[error("{port}: cannot read the value given (not shown): {what} at character {at}")]
    Syntax {
        port: String,
        /// 1-based character position.
        at: usize,
        what: String,
    },
    /// An integer outside its type's range (the value is not shown).
    #[error("{port}: the value given is out of range for {ctype} (allowed: {allowed})")]
    OutOfRange {
        port: String,
        ctype: String,
        allowed: String,
    },
    /// The value's shape (number, list, struct, element count) does not match the type;
    /// `got` says what kind of value was given, not the value.
    #[error("{port}: expected {expected} for {ctype}, got {got}")]
    Shape {
        port: String,
        ctype: String,
        expected: String,
        got: String,
    },
    /// A struct value names a field the type does not have, twice, or leaves one out.
    #[error("{port}: {what} ({ctype} has fields {fields})")]
    Field {
        port: String,
        ctype: String,
        what: String,
        fields: String,
    },
    /// An integer type wider than [`MAX_INT_BITS`].
    #[error("{port}: {ctype} is wider than the {MAX_INT_BITS} bits pgc can take values for")]
    TooWide { port: String, ctype: String },
}

/// An interface that does not match its circuit's layout.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterfaceMismatch {
    #[error("the interface names {ports} {what} ports but the circuit has {values} {what} values")]
    Count {
        what: &'static str,
        ports: usize,
        values: usize,
    },
    #[error(
        "{what} port {name} ({ctype}) is {bits} bits wide but the circuit's {what} value {index} has {width}"
    )]
    Width {
        what: &'static str,
        index: usize,
        name: String,
        ctype: String,
        bits: u64,
        width: u32,
    },
    /// A port type that cannot be read or printed: its width overflows, an integer in it is
    /// wider than [`MAX_INT_BITS`], or an array's elements have no bits.
    /// `problem` starts with the type's C name in parentheses.
    #[error("{what} port {name} {problem}")]
    BadType {
        what: &'static str,
        name: String,
        problem: String,
    },
}

/// Checks that port `i` of `interface` has the width of value `i` of `layout`, for inputs and
/// outputs.
pub fn check_interface(layout: &Layout, interface: &Interface) -> Result<(), InterfaceMismatch> {
    let inputs = interface.inputs.iter().map(|p| (&p.name, &p.ctype));
    let outputs = interface.outputs.iter().map(|p| (&p.name, &p.ctype));
    check_ports("input", inputs, &layout.input_widths)?;
    check_ports("output", outputs, &layout.output_widths)
}

fn check_ports<'a>(
    what: &'static str,
    ports: impl ExactSizeIterator<Item = (&'a String, &'a CType)>,
    widths: &[u32],
) -> Result<(), InterfaceMismatch> {
    if ports.len() != widths.len() {
        return Err(InterfaceMismatch::Count {
            what,
            ports: ports.len(),
            values: widths.len(),
        });
    }
    for (index, ((name, ctype), &width)) in ports.zip(widths).enumerate() {
        let bits = check_type(ctype).map_err(|problem| InterfaceMismatch::BadType {
            what,
            name: name.clone(),
            problem: format!("({}): {problem}", ctype.c_name()),
        })?;
        if bits != width as u64 {
            return Err(InterfaceMismatch::Width {
                what,
                index,
                name: name.clone(),
                ctype: ctype.c_name(),
                bits,
                width,
            });
        }
    }
    Ok(())
}

/// The bit width of a port's type, if every value of it can be parsed and printed: the
/// width fits in a `u64` (computed with checked arithmetic: nested array lengths multiply),
/// every integer is at most [`MAX_INT_BITS`] wide, and no array has elements of no bits
/// (printing `int0_t[4294967295]` would write billions of elements for a 0-bit value).
/// With these, printing a value takes time and memory in proportion to its bits.
fn check_type(ctype: &CType) -> Result<u64, String> {
    match ctype {
        CType::Bool => Ok(1),
        CType::Int { char: true, .. } if !ctype.is_char() => {
            Err("a char that is not 8 bits and signed (as char is on x86-64)".into())
        }
        CType::Int { bits, .. } => {
            if *bits > MAX_INT_BITS {
                Err(format!(
                    "an integer of {bits} bits, wider than the {MAX_INT_BITS} bits pgc can \
                     read and print"
                ))
            } else {
                Ok(*bits as u64)
            }
        }
        CType::Float { bits } => {
            if float_text::layout(*bits).is_none() {
                Err(format!(
                    "a floating-point type of {bits} bits (only 32-bit float and 64-bit \
                     double exist)"
                ))
            } else {
                Ok(*bits as u64)
            }
        }
        CType::Array { elem, len } => {
            let elem_bits = check_type(elem)?;
            if elem_bits == 0 && *len > 0 {
                return Err(format!(
                    "an array of {len} elements of no bits ({})",
                    elem.c_name()
                ));
            }
            elem_bits.checked_mul(*len as u64).ok_or_else(|| {
                format!("{len} elements of {elem_bits} bits: the width overflows 64 bits")
            })
        }
        CType::Struct { name, fields } => fields.iter().try_fold(0u64, |sum, (field, t)| {
            let bits = check_type(t).map_err(|e| format!("field {field}: {e}"))?;
            sum.checked_add(bits).ok_or_else(|| {
                format!("struct {name} is wider than 2^64 bits (its widths overflow)")
            })
        }),
    }
}

/// Parses `text` as a value of `ctype` for the port (or element) named `port`, and returns
/// its bits in port order (see the [module docs](self) for the notation).
pub fn parse_port_value(text: &str, ctype: &CType, port: &str) -> Result<Vec<bool>, TypedError> {
    let node = TextParser::new(text, port, Notation::Argument).parse()?;
    encode(&node, ctype, port)
}

/// Converts a JSON value (as in `--inputs FILE.json`) of `ctype` for the port named `port`
/// into its bits in port order.
pub fn json_port_value(
    value: &serde_json::Value,
    ctype: &CType,
    port: &str,
) -> Result<Vec<bool>, TypedError> {
    let node = from_json(value, port)?;
    encode(&node, ctype, port)
}

/// Formats a port's bits as a value of `ctype` in the text notation (decimal integers,
/// signed per type; `[…]` for arrays; `{field: …}` for structs).
///
/// # Panics
/// If `bits.len()` differs from `ctype.bit_width()`, or an integer is wider than
/// [`MAX_INT_BITS`] (interfaces from the compiler never have either).
pub fn format_port_value(bits: &[bool], ctype: &CType) -> String {
    let mut out = String::new();
    let mut rest = check_width(bits, ctype);
    write_text(&mut rest, ctype, &mut out);
    out
}

/// A port's bits as JSON: integers (exact up to 64 bits, decimal strings beyond), nested
/// lists for arrays, objects for structs; `_Bool` as 0 or 1.
///
/// # Panics
/// As [`format_port_value`].
pub fn port_value_json(bits: &[bool], ctype: &CType) -> serde_json::Value {
    let mut rest = check_width(bits, ctype);
    to_json(&mut rest, ctype)
}

fn check_width<'a>(bits: &'a [bool], ctype: &CType) -> &'a [bool] {
    assert_eq!(
        bits.len() as u64,
        ctype.bit_width(),
        "a value of {} needs {} bits, got {}",
        ctype.c_name(),
        ctype.bit_width(),
        bits.len()
    );
    bits
}

// ---------------------------------------------------------------------------------------
// The untyped value tree both notations parse into.

#[derive(Clone, Debug)]
enum Node {
    Num(Num),
    /// A number only a float can take: text-notation `1.5`, `1e3`, `0x1p3`, `inf`, `-nan`
    /// (already checked to parse).
    Real(String),
    /// A JSON number that is not an integer (serde_json rounds it correctly to a double).
    JsonReal(f64),
    Bool(bool),
    /// A string literal `"…"`: its bytes (escapes resolved).
    Text(Vec<u8>),
    /// `[a, b]` or `{a, b}`, or a JSON list.
    Seq(Vec<Node>),
    /// `{x: a, y: b}`, or a JSON object.
    Named(Vec<(String, Node)>),
}

#[derive(Clone, Debug)]
struct Num {
    negative: bool,
    magnitude: u128,
    hex: bool,
    /// As the user wrote it, for errors.
    text: String,
}

impl Num {
    /// A character constant (`'a'`), which only integer types take.
    fn is_character(&self) -> bool {
        self.text.starts_with('\'')
    }
}

impl Node {
    /// What kind of value this is, for errors: its shape and size, never its content.
    fn describe(&self) -> String {
        match self {
            Node::Num(n) if n.is_character() => "a character".into(),
            Node::Num(n) if n.negative => "a negative number".into(),
            Node::Num(_) | Node::Real(_) | Node::JsonReal(_) => "a number".into(),
            Node::Bool(_) => "true or false".into(),
            Node::Text(bytes) if bytes.len() == 1 => "a string of 1 byte".into(),
            Node::Text(bytes) => format!("a string of {} bytes", bytes.len()),
            Node::Seq(v) => format!("a list of {} element(s)", v.len()),
            Node::Named(f) => format!("a struct value with {} field(s)", f.len()),
        }
    }
}

/// Where the text notation is being read, for hints that fit it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Notation {
    /// A `NAME=VALUE` argument, typed into a shell.
    Argument,
    /// A string inside JSON (an inputs file, a Python value).
    JsonString,
}

/// `c` for an error: punctuation as itself (it is the notation's, `,` `]` `:`), letters,
/// digits and anything else by kind only, since they are the user's secret value.
fn shown_char(c: char) -> String {
    if c.is_ascii_punctuation() {
        format!("'{c}'")
    } else if c.is_alphabetic() {
        "a letter".into()
    } else if c.is_numeric() {
        "a digit".into()
    } else if c.is_whitespace() {
        "a space".into()
    } else {
        "a character".into()
    }
}

fn from_json(value: &serde_json::Value, port: &str) -> Result<Node, TypedError> {
    use serde_json::Value;
    Ok(match value {
        Value::Bool(b) => Node::Bool(*b),
        Value::Number(n) => {
            let text = n.to_string();
            let (negative, magnitude) = if let Some(u) = n.as_u64() {
                (false, u as u128)
            } else if let Some(i) = n.as_i64() {
                (i < 0, i.unsigned_abs() as u128)
            } else if let Some(v) = n.as_f64() {
                return Ok(Node::JsonReal(v));
            } else {
                return Err(TypedError::Syntax {
                    port: port.into(),
                    at: 1,
                    what: "not a number pgc can read".into(),
                });
            };
            Node::Num(Num {
                negative,
                magnitude,
                hex: false,
                text,
            })
        }
        Value::String(s) => match TextParser::new(s, port, Notation::JsonString).parse() {
            Ok(node) => node,
            // A JSON string that begins with a word and is not `true`, `false` or a float
            // word is text, as a JSON user writes it ("kitten" for a char array): JSON
            // already quoted it, so asking for quotes inside the quotes would mislead.
            Err(_)
                if s.trim_start()
                    .starts_with(|c: char| c.is_alphabetic() || c == '_') =>
            {
                Node::Text(s.as_bytes().to_vec())
            }
            Err(e) => return Err(e),
        },
        Value::Array(items) => Node::Seq(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| from_json(v, &format!("{port}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Node::Named(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), from_json(v, &format!("{port}.{k}"))?)))
                .collect::<Result<_, TypedError>>()?,
        ),
        Value::Null => {
            return Err(TypedError::Shape {
                port: port.into(),
                ctype: "this port".into(),
                expected: "a value".into(),
                got: "null".into(),
            });
        }
    })
}

/// Recursive-descent parser of the text notation.
struct TextParser<'a> {
    chars: Vec<char>,
    pos: usize,
    port: &'a str,
    notation: Notation,
}

/// Deepest nesting accepted, so hostile input cannot overflow the stack.
const MAX_DEPTH: usize = 64;

impl<'a> TextParser<'a> {
    fn new(text: &str, port: &'a str, notation: Notation) -> Self {
        TextParser {
            chars: text.chars().collect(),
            pos: 0,
            port,
            notation,
        }
    }

    fn error(&self, what: impl Into<String>) -> TypedError {
        TypedError::Syntax {
            port: self.port.into(),
            at: self.pos + 1,
            what: what.into(),
        }
    }

    fn parse(mut self) -> Result<Node, TypedError> {
        let node = self.value(0)?;
        self.skip_space();
        if self.pos < self.chars.len() {
            return Err(self.error(format!("unexpected {}", shown_char(self.chars[self.pos]))));
        }
        Ok(node)
    }

    fn skip_space(&mut self) {
        while self.chars.get(self.pos).is_some_and(|c| c.is_whitespace()) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_space();
        self.chars.get(self.pos).copied()
    }

    fn value(&mut self, depth: usize) -> Result<Node, TypedError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("nested more than {MAX_DEPTH} levels deep")));
        }
        match self.peek() {
            None => Err(self.error(if self.pos == 0 {
                "no value"
            } else {
                "the value ends early"
            })),
            Some('[') => {
                self.pos += 1;
                self.list(']', depth)
            }
            Some('{') => {
                self.pos += 1;
                self.list('}', depth)
            }
            Some(c) if c == '-' || c == '.' || c.is_ascii_digit() => self.number(),
            Some('"') => self.string(),
            Some('\'') => self.character(),
            Some(c) if c.is_alphabetic() || c == '_' => {
                let word = self.word();
                match word.as_str() {
                    "true" => Ok(Node::Bool(true)),
                    "false" => Ok(Node::Bool(false)),
                    w if is_float_word(w) => Ok(Node::Real(word)),
                    _ => {
                        self.pos -= word.chars().count();
                        Err(self.error(match self.notation {
                            // The shell takes the quotes off `name="kitten"`.
                            Notation::Argument => {
                                "a word is not a value (text goes in double quotes, and in a \
                                 shell the whole argument in single quotes too, as in \
                                 'name=\"text\"')"
                            }
                            // JSON already quotes it: asking for quotes would mislead.
                            Notation::JsonString => {
                                "a word inside a JSON string is not a value (write the list or \
                                 struct as JSON itself, [\"text\", ...] or {\"field\": \
                                 \"text\"}, where a string that starts with a letter is text)"
                            }
                        }))
                    }
                }
            }
            Some(c) => Err(self.error(format!("unexpected {}", shown_char(c)))),
        }
    }

    /// `"…"` at the cursor: its bytes as UTF-8 with escapes resolved.
    fn string(&mut self) -> Result<Node, TypedError> {
        self.pos += 1;
        let bytes = self.quoted_bytes('"')?;
        Ok(Node::Text(bytes))
    }

    /// `'c'` at the cursor: one byte, as the type's bit pattern (like a hexadecimal value).
    fn character(&mut self) -> Result<Node, TypedError> {
        let start = self.pos;
        self.pos += 1;
        let bytes = self.quoted_bytes('\'')?;
        let text: String = self.chars[start..self.pos].iter().collect();
        if bytes.len() != 1 {
            self.pos = start;
            return Err(self.error(format!(
                "a character constant holds one byte, this one holds {} (a string goes in \
                 double quotes)",
                bytes.len()
            )));
        }
        Ok(Node::Num(Num {
            negative: false,
            magnitude: bytes[0] as u128,
            hex: true,
            text,
        }))
    }

    /// The bytes up to the closing `close` (consumed), escapes resolved.
    fn quoted_bytes(&mut self, close: char) -> Result<Vec<u8>, TypedError> {
        let mut bytes = Vec::new();
        loop {
            let Some(&c) = self.chars.get(self.pos) else {
                return Err(self.error(format!("missing the closing {close}")));
            };
            self.pos += 1;
            if c == close {
                return Ok(bytes);
            }
            if c != '\\' {
                let mut utf8 = [0u8; 4];
                bytes.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                continue;
            }
            let escape_at = self.pos - 1;
            let byte = match self.chars.get(self.pos).copied() {
                Some('n') => b'\n',
                Some('t') => b'\t',
                Some('r') => b'\r',
                Some('0') => 0,
                Some('\\') => b'\\',
                Some('\'') => b'\'',
                Some('"') => b'"',
                Some('x') => {
                    let digits: String = self.chars[self.pos + 1..]
                        .iter()
                        .take(2)
                        .take_while(|d| d.is_ascii_hexdigit())
                        .collect();
                    if digits.is_empty() {
                        self.pos = escape_at;
                        return Err(self.error("\\x needs one or two hexadecimal digits"));
                    }
                    self.pos += digits.len();
                    u8::from_str_radix(&digits, 16).expect("two hexadecimal digits fit a byte")
                }
                other => {
                    self.pos = escape_at;
                    return Err(self.error(match other {
                        Some(e) => format!(
                            "unknown escape \\{e} (known: \\n \\t \\r \\0 \\\\ \\' \\\" \\xHH)"
                        ),
                        None => format!("missing the closing {close}"),
                    }));
                }
            };
            self.pos += 1;
            bytes.push(byte);
        }
    }

    fn word(&mut self) -> String {
        let start = self.pos;
        while self
            .chars
            .get(self.pos)
            .is_some_and(|c| c.is_alphanumeric() || *c == '_')
        {
            self.pos += 1;
        }
        self.chars[start..self.pos].iter().collect()
    }

    /// Elements up to `close`; named (`name: v`, `.name = v`) only between braces.
    fn list(&mut self, close: char, depth: usize) -> Result<Node, TypedError> {
        let mut items = Vec::new();
        let mut named: Vec<(String, Node)> = Vec::new();
        loop {
            if self.peek() == Some(close) {
                self.pos += 1;
                break;
            }
            if close == '}' {
                let name = self.field_name()?;
                if (name.is_some() && !items.is_empty()) || (name.is_none() && !named.is_empty()) {
                    return Err(
                        self.error("mixed named and positional fields (all fields named, or none)")
                    );
                }
                if let Some(name) = name {
                    let value = self.value(depth + 1)?;
                    named.push((name, value));
                    if !self.separator(close)? {
                        break;
                    }
                    continue;
                }
            }
            items.push(self.value(depth + 1)?);
            if !self.separator(close)? {
                break;
            }
        }
        Ok(if named.is_empty() {
            Node::Seq(items)
        } else {
            Node::Named(named)
        })
    }

    /// After an element: `,` (then more, or the closing bracket) or the closing bracket.
    /// Returns whether the list goes on.
    fn separator(&mut self, close: char) -> Result<bool, TypedError> {
        match self.peek() {
            Some(',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Ok(false)
            }
            Some(c) => Err(self.error(format!(
                "expected ',' or '{close}', found {}",
                shown_char(c)
            ))),
            None => Err(self.error(format!("missing '{close}'"))),
        }
    }

    /// `name:`, `name =`, `.name =` or `.name:` ahead: consumes it and returns the name;
    /// otherwise consumes nothing.
    fn field_name(&mut self) -> Result<Option<String>, TypedError> {
        let start = self.pos;
        let dotted = self.peek() == Some('.');
        if dotted {
            self.pos += 1;
        }
        let first = self.chars.get(self.pos).copied();
        if !first.is_some_and(|c| c.is_alphabetic() || c == '_') {
            if dotted {
                return Err(self.error("expected a field name after '.'"));
            }
            self.pos = start;
            return Ok(None);
        }
        let name = self.word();
        match self.peek() {
            Some(':') | Some('=') => {
                self.pos += 1;
                Ok(Some(name))
            }
            _ if dotted => Err(self.error(format!("expected '=' after .{name}"))),
            _ => {
                self.pos = start;
                Ok(None)
            }
        }
    }

    fn number(&mut self) -> Result<Node, TypedError> {
        let start = self.pos;
        let negative = self.chars[self.pos] == '-';
        if negative {
            self.pos += 1;
        }
        let hex = self.chars.get(self.pos) == Some(&'0')
            && matches!(self.chars.get(self.pos + 1), Some('x') | Some('X'));
        if hex {
            self.pos += 2;
        }
        let radix = if hex { 16 } else { 10 };
        let digits_start = self.pos;
        // A float's exponent sign follows its `e` (decimal) or `p` (hexadecimal).
        let exponent_mark = |c: char| {
            if hex {
                matches!(c, 'p' | 'P')
            } else {
                matches!(c, 'e' | 'E')
            }
        };
        while let Some(&c) = self.chars.get(self.pos) {
            let sign_of_exponent = matches!(c, '+' | '-')
                && self.pos > digits_start
                && exponent_mark(self.chars[self.pos - 1]);
            if !(c.is_alphanumeric() || c == '_' || c == '.' || sign_of_exponent) {
                break;
            }
            self.pos += 1;
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        let digits = &self.chars[digits_start..self.pos];
        let bad = |p: &Self, what: &str| {
            let mut e = p.error(what);
            if let TypedError::Syntax { at, .. } = &mut e {
                *at = start + 1;
            }
            e
        };
        let body: String = digits.iter().collect();
        let is_float = is_float_word(&body)
            || digits.contains(&'.')
            || digits.iter().any(|&c| exponent_mark(c));
        if is_float {
            // Checked here for the syntax; rounded to the port's width when typed.
            if float_text::parse_float(&text, 64).is_none() {
                return Err(bad(self, "not a number"));
            }
            return Ok(Node::Real(text));
        }
        if digits.is_empty() {
            return Err(bad(self, "a number needs digits"));
        }
        if digits[0] == '_' || digits[digits.len() - 1] == '_' {
            return Err(bad(self, "'_' may only separate digits"));
        }
        let mut magnitude: u128 = 0;
        for (k, &c) in digits.iter().enumerate() {
            if c == '_' {
                continue;
            }
            let Some(d) = c.to_digit(radix) else {
                let mut e = self.error(format!(
                    "{} in a {} number",
                    shown_char(c),
                    if hex { "hexadecimal" } else { "decimal" }
                ));
                if let TypedError::Syntax { at, .. } = &mut e {
                    *at = digits_start + k + 1;
                }
                return Err(e);
            };
            magnitude = magnitude
                .checked_mul(radix as u128)
                .and_then(|m| m.checked_add(d as u128))
                .ok_or_else(|| {
                    bad(
                        self,
                        &format!("a number larger than any supported type ({MAX_INT_BITS} bits)"),
                    )
                })?;
        }
        Ok(Node::Num(Num {
            negative,
            magnitude,
            hex,
            text,
        }))
    }
}

// ---------------------------------------------------------------------------------------
// Typing: tree + CType -> bits.

fn encode(node: &Node, ctype: &CType, port: &str) -> Result<Vec<bool>, TypedError> {
    // The width is not trusted for the reservation (the type may not have been checked).
    let mut bits = Vec::with_capacity(ctype.bit_width().min(1 << 16) as usize);
    encode_into(node, ctype, port, &mut bits)?;
    Ok(bits)
}

fn shape(port: &str, ctype: &CType, expected: String, node: &Node) -> TypedError {
    TypedError::Shape {
        port: port.into(),
        ctype: ctype.c_name(),
        expected,
        got: node.describe(),
    }
}

fn encode_into(
    node: &Node,
    ctype: &CType,
    port: &str,
    bits: &mut Vec<bool>,
) -> Result<(), TypedError> {
    match ctype {
        CType::Bool => {
            let value = match node {
                Node::Bool(b) => *b,
                Node::Num(n) if !n.negative && n.magnitude <= 1 => n.magnitude == 1,
                Node::Num(_) => {
                    return Err(TypedError::OutOfRange {
                        port: port.into(),
                        ctype: ctype.c_name(),
                        allowed: "true, false, 0 or 1".into(),
                    });
                }
                _ => return Err(shape(port, ctype, "true, false, 0 or 1".into(), node)),
            };
            bits.push(value);
        }
        CType::Int {
            bits: width,
            signed,
            ..
        } => {
            if let Node::JsonReal(_) = node {
                return Err(TypedError::Syntax {
                    port: port.into(),
                    at: 1,
                    what: "not an integer (write integers beyond 64 bits as strings, \
                           e.g. \"0x…\")"
                        .into(),
                });
            }
            let Node::Num(n) = node else {
                let expected = if *width == 8 {
                    "an integer or a character like 'a'"
                } else {
                    "an integer"
                };
                return Err(shape(port, ctype, expected.into(), node));
            };
            let pattern = int_pattern(n, *width, *signed, ctype, port)?;
            bits.extend((0..*width).map(|j| (pattern >> j) & 1 == 1));
        }
        CType::Float { bits: width } => {
            let pattern = float_pattern(node, *width, ctype, port)?;
            bits.extend((0..*width).map(|j| (pattern >> j) & 1 == 1));
        }
        CType::Array { elem, len } => {
            let expected = || format!("a list of {len} element(s)");
            if let (Node::Text(bytes), CType::Int { bits: 8, .. }) = (node, &**elem) {
                if bytes.len() > *len as usize {
                    let expected = format!("a string of at most {len} byte(s)");
                    return Err(shape(port, ctype, expected, node));
                }
                // Padded with zero bytes, as `char s[N] = "…"` pads in C.
                let padded = bytes.iter().copied().chain(std::iter::repeat(0));
                for byte in padded.take(*len as usize) {
                    bits.extend((0..8).map(|j| (byte >> j) & 1 == 1));
                }
                return Ok(());
            }
            let Node::Seq(items) = node else {
                return Err(shape(port, ctype, expected(), node));
            };
            if items.len() != *len as usize {
                return Err(shape(port, ctype, expected(), node));
            }
            for (i, item) in items.iter().enumerate() {
                encode_into(item, elem, &format!("{port}[{i}]"), bits)?;
            }
        }
        CType::Struct { fields, .. } => {
            let field_list = || {
                fields
                    .iter()
                    .map(|(name, t)| format!("{name}: {}", t.c_name()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let field_error = |what: String| TypedError::Field {
                port: port.into(),
                ctype: ctype.c_name(),
                what,
                fields: field_list(),
            };
            match node {
                Node::Seq(items) => {
                    if items.len() != fields.len() {
                        return Err(shape(
                            port,
                            ctype,
                            format!("{} field value(s) in declaration order", fields.len()),
                            node,
                        ));
                    }
                    for (item, (name, t)) in items.iter().zip(fields) {
                        encode_into(item, t, &format!("{port}.{name}"), bits)?;
                    }
                }
                Node::Named(given) => {
                    for (name, _) in given {
                        if !fields.iter().any(|(f, _)| f == name) {
                            return Err(field_error(format!("no field named '{}'", quoted(name))));
                        }
                    }
                    for (name, t) in fields {
                        let mut matching = given.iter().filter(|(g, _)| g == name);
                        let Some((_, value)) = matching.next() else {
                            return Err(field_error(format!("field '{name}' is missing")));
                        };
                        if matching.next().is_some() {
                            return Err(field_error(format!("field '{name}' is given twice")));
                        }
                        encode_into(value, t, &format!("{port}.{name}"), bits)?;
                    }
                }
                _ => {
                    return Err(shape(
                        port,
                        ctype,
                        "a struct value like {field: value, ...}".into(),
                        node,
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The `width`-bit two's-complement pattern of `n`, after checking its range.
fn int_pattern(
    n: &Num,
    width: u32,
    signed: bool,
    ctype: &CType,
    port: &str,
) -> Result<u128, TypedError> {
    if width > MAX_INT_BITS {
        return Err(TypedError::TooWide {
            port: port.into(),
            ctype: ctype.c_name(),
        });
    }
    let all_ones = if width == 0 {
        0
    } else {
        u128::MAX >> (MAX_INT_BITS - width)
    };
    // Largest magnitude of a negative value; largest non-negative decimal value.
    let (neg_limit, pos_limit) = match (signed, width) {
        (_, 0) => (0, 0),
        (true, w) => (1u128 << (w - 1), (1u128 << (w - 1)) - 1),
        (false, _) => (0, all_ones),
    };
    let fits = if n.negative {
        n.magnitude <= neg_limit
    } else if n.hex {
        n.magnitude <= all_ones
    } else {
        n.magnitude <= pos_limit
    };
    if !fits {
        let allowed = if signed && width > 0 {
            format!(
                "-{neg_limit} to {pos_limit}, or a bit pattern 0x0 to {:#x}",
                all_ones
            )
        } else {
            format!("0 to {pos_limit} (or 0x0 to {all_ones:#x})")
        };
        return Err(TypedError::OutOfRange {
            port: port.into(),
            ctype: ctype.c_name(),
            allowed,
        });
    }
    let pattern = if n.negative {
        n.magnitude.wrapping_neg()
    } else {
        n.magnitude
    };
    Ok(pattern & all_ones)
}

/// `inf`, `infinity` and `nan` in any case: words only a float can take.
fn is_float_word(w: &str) -> bool {
    matches!(w.to_ascii_lowercase().as_str(), "inf" | "infinity" | "nan")
}

/// The `width`-bit IEEE-754 pattern of a float port's value: a hexadecimal integer is the
/// pattern itself, any other number is rounded to nearest, ties to even.
fn float_pattern(node: &Node, width: u32, ctype: &CType, port: &str) -> Result<u64, TypedError> {
    if float_text::layout(width).is_none() {
        return Err(TypedError::Shape {
            port: port.into(),
            ctype: ctype.c_name(),
            expected: "a floating-point type of 32 or 64 bits".into(),
            got: format!("one of {width} bits"),
        });
    }
    let all_ones = u64::MAX >> (64 - width);
    let sign = 1u64 << (width - 1);
    let out_of_range = |allowed: String| TypedError::OutOfRange {
        port: port.into(),
        ctype: ctype.c_name(),
        allowed,
    };
    Ok(match node {
        Node::Num(n) if n.is_character() => {
            return Err(shape(port, ctype, "a number".into(), node));
        }
        Node::Num(n) if n.hex => {
            if n.negative || n.magnitude > all_ones as u128 {
                return Err(out_of_range(format!(
                    "a bit pattern 0x0 to {all_ones:#x}, or a number like 1.5 or 0x1.8p0"
                )));
            }
            n.magnitude as u64
        }
        Node::Num(n) => {
            // `as` rounds integers to nearest, ties to even; `-0` is negative zero, as
            // `strtod` reads it.
            let magnitude = if width == 32 {
                (n.magnitude as f32).to_bits() as u64
            } else {
                (n.magnitude as f64).to_bits()
            };
            magnitude | if n.negative { sign } else { 0 }
        }
        Node::Real(text) => float_text::parse_float(text, width)
            .ok_or_else(|| out_of_range("a floating-point number".into()))?,
        Node::JsonReal(v) => {
            if width == 32 {
                (*v as f32).to_bits() as u64
            } else {
                v.to_bits()
            }
        }
        _ => {
            return Err(shape(
                port,
                ctype,
                "a number (1.5, -0.0, 1e-3, inf, nan, or a bit pattern 0x…)".into(),
                node,
            ));
        }
    })
}

// ---------------------------------------------------------------------------------------
// Bits -> text / JSON.

/// Takes the next `width` bits (at most 64) as a float's pattern.
fn take_float(rest: &mut &[bool], width: u32) -> u64 {
    let (now, later) = rest.split_at(width as usize);
    *rest = later;
    now.iter()
        .enumerate()
        .fold(0u64, |v, (j, &b)| v | (b as u64) << j)
}

/// Takes the next `width` bits as an integer of the given signedness: (negative, magnitude).
fn take_int(rest: &mut &[bool], width: u32, signed: bool) -> (bool, u128) {
    assert!(
        width <= MAX_INT_BITS,
        "integers wider than {MAX_INT_BITS} bits cannot be formatted"
    );
    let (now, later) = rest.split_at(width as usize);
    *rest = later;
    let mut v: u128 = 0;
    for (j, &b) in now.iter().enumerate() {
        v |= (b as u128) << j;
    }
    if signed && width > 0 && now[width as usize - 1] {
        if width < MAX_INT_BITS {
            v |= u128::MAX << width; // sign-extend
        }
        (true, v.wrapping_neg())
    } else {
        (false, v)
    }
}

fn write_text(rest: &mut &[bool], ctype: &CType, out: &mut String) {
    match ctype {
        CType::Bool => {
            let (now, later) = rest.split_at(1);
            *rest = later;
            out.push(if now[0] { '1' } else { '0' });
        }
        CType::Int { bits, signed, .. } if !ctype.is_char() => {
            let (negative, magnitude) = take_int(rest, *bits, *signed);
            let sign = if negative { "-" } else { "" };
            let _ = write!(out, "{sign}{magnitude}");
        }
        CType::Int { .. } => {
            out.push('\'');
            write_char(take_byte(rest), '\'', out);
            out.push('\'');
        }
        CType::Float { bits } => {
            let pattern = take_float(rest, *bits);
            out.push_str(&float_text::format_float(pattern, *bits));
        }
        CType::Array { elem, len } if elem.is_char() => {
            let bytes: Vec<u8> = (0..*len).map(|_| take_byte(rest)).collect();
            // Trailing zero bytes are left out: the string reads back padded with them, as
            // `char s[N] = "…"` pads, so `char name[16]` holding "bob" prints as "bob".
            let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            out.push('"');
            for &b in &bytes[..end] {
                write_char(b, '"', out);
            }
            out.push('"');
        }
        CType::Array { elem, len } => {
            out.push('[');
            for i in 0..*len {
                if i > 0 {
                    out.push_str(", ");
                }
                write_text(rest, elem, out);
            }
            out.push(']');
        }
        CType::Struct { fields, .. } => {
            out.push('{');
            for (i, (name, t)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{name}: ");
                write_text(rest, t, out);
            }
            out.push('}');
        }
    }
}

/// Takes the next 8 bits as a byte.
fn take_byte(rest: &mut &[bool]) -> u8 {
    take_int(rest, 8, false).1 as u8
}

/// One byte inside a character constant or string delimited by `quote`, as the text
/// notation reads it back: printable ASCII as itself, `\n`, `\t`, `\r`, `\0`, `\\` and
/// the delimiter escaped, any other byte (control characters, bytes of UTF-8 beyond ASCII)
/// as `\xHH`, so that output never writes control characters to a terminal.
fn write_char(byte: u8, quote: char, out: &mut String) {
    match byte {
        b'\n' => out.push_str("\\n"),
        b'\t' => out.push_str("\\t"),
        b'\r' => out.push_str("\\r"),
        0 => out.push_str("\\0"),
        b'\\' => out.push_str("\\\\"),
        b if b as char == quote => {
            out.push('\\');
            out.push(quote);
        }
        b' '..=b'~' => out.push(byte as char),
        _ => {
            let _ = write!(out, "\\x{byte:02x}");
        }
    }
}

fn to_json(rest: &mut &[bool], ctype: &CType) -> serde_json::Value {
    use serde_json::Value;
    match ctype {
        CType::Bool => {
            let (now, later) = rest.split_at(1);
            *rest = later;
            Value::from(now[0] as u8)
        }
        CType::Int { bits, signed, .. } => {
            let (negative, magnitude) = take_int(rest, *bits, *signed);
            if !negative && let Ok(u) = u64::try_from(magnitude) {
                Value::from(u)
            } else if negative && magnitude <= 1u128 << 63 {
                Value::from((magnitude as i128).wrapping_neg() as i64)
            } else {
                Value::from(format!("{}{magnitude}", if negative { "-" } else { "" }))
            }
        }
        CType::Float { bits } => {
            let pattern = take_float(rest, *bits);
            float_json(pattern, *bits)
        }
        CType::Array { elem, len } => {
            Value::Array((0..*len).map(|_| to_json(rest, elem)).collect())
        }
        CType::Struct { fields, .. } => Value::Object(
            fields
                .iter()
                .map(|(name, t)| (name.clone(), to_json(rest, t)))
                .collect(),
        ),
    }
}

/// A float as JSON: a number that reads back to the same bits when finite, else the text
/// notation as a string (`"inf"`, `"-nan"`, `"0x7fc00001"`).
fn float_json(pattern: u64, width: u32) -> serde_json::Value {
    use serde_json::Value;
    let text = float_text::format_float(pattern, width);
    let value = if width == 32 {
        let v = f32::from_bits(pattern as u32);
        // The double nearest the float's shortest decimal prints as that decimal; keep it
        // only if it rounds back to the float (else the float's exact value, which does).
        text.parse::<f64>()
            .ok()
            .filter(|d| (*d as f32).to_bits() == v.to_bits())
            .unwrap_or(v as f64)
    } else {
        f64::from_bits(pattern)
    };
    match serde_json::Number::from_f64(value) {
        Some(n) if value.is_finite() => Value::Number(n),
        _ => Value::String(text),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_json_string_of_words_is_text() {
        let text = CType::Array {
            elem: Box::new(CType::CHAR),
            len: 8,
        };
        let json = |v: &str| serde_json::from_str::<serde_json::Value>(v).unwrap();
        let bits = json_port_value(&json("\"kitten\""), &text, "name").unwrap();
        assert_eq!(bits, parse_port_value("\"kitten\"", &text, "name").unwrap());
        // Notation inside a JSON string still reads as notation, and its errors stay.
        let quoted = json_port_value(&json("\"\\\"kitten\\\"\""), &text, "name").unwrap();
        assert_eq!(bits, quoted);
        let e = json_port_value(&json("\"[1, 2\""), &text, "name").unwrap_err();
        assert!(e.to_string().contains("cannot read"), "{e}");
        // Words for a number are text, refused by the type, not by the notation.
        let e = json_port_value(&json("\"seven\""), &CType::int(32, true), "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("got a string of 5 bytes"), "{e}");
        assert!(!e.contains("double quotes") && !e.contains("seven"), "{e}");
        // A word inside notation inside a JSON string: the hint is about JSON, not quotes
        // (JSON already quoted it), and the word is not shown.
        let e = json_port_value(
            &json("\"[kitten, puppy]\""),
            &array(text.clone(), 2),
            "names",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "names: cannot read the value given (not shown): a word inside a JSON string is \
             not a value (write the list or struct as JSON itself, [\"text\", ...] or \
             {\"field\": \"text\"}, where a string that starts with a letter is text) at \
             character 2"
        );
        // ... and the JSON the hint asks for reads.
        let listed = json_port_value(
            &json("[\"kitten\", \"puppy\"]"),
            &array(text.clone(), 2),
            "n",
        );
        assert!(listed.is_ok(), "{listed:?}");
        let long = json_port_value(&json("\"kittens!!\""), &text, "name").unwrap_err();
        assert!(long.to_string().contains("9 bytes"), "{long}");
    }

    use super::*;
    use serde_json::json;

    fn int(bits: u32, signed: bool) -> CType {
        CType::int(bits, signed)
    }
    fn array(elem: CType, len: u32) -> CType {
        CType::Array {
            elem: Box::new(elem),
            len,
        }
    }
    fn point() -> CType {
        CType::Struct {
            name: "point".into(),
            fields: vec![
                ("x".into(), int(8, true)),
                ("y".into(), array(int(4, false), 2)),
            ],
        }
    }
    fn lsb(bits: &[bool]) -> u128 {
        bits.iter()
            .enumerate()
            .map(|(i, &b)| (b as u128) << i)
            .sum()
    }
    fn round_trip(text: &str, t: &CType) -> String {
        let bits = parse_port_value(text, t, "P").unwrap();
        assert_eq!(bits.len() as u64, t.bit_width());
        format_port_value(&bits, t)
    }

    #[test]
    fn integers_decimal_hex_negative() {
        let i32t = int(32, true);
        assert_eq!(lsb(&parse_port_value("5000", &i32t, "P").unwrap()), 5000);
        assert_eq!(
            lsb(&parse_port_value("-1", &i32t, "P").unwrap()),
            0xffff_ffff
        );
        assert_eq!(round_trip("-2147483648", &i32t), "-2147483648");
        assert_eq!(round_trip("2147483647", &i32t), "2147483647");
        assert_eq!(round_trip("0xffffffff", &i32t), "-1");
        assert_eq!(round_trip("0x8000_0000", &i32t), "-2147483648");
        assert_eq!(round_trip("-0x10", &i32t), "-16");
        assert_eq!(round_trip("  42 ", &i32t), "42");
        let u64t = int(64, false);
        assert_eq!(
            round_trip("18446744073709551615", &u64t),
            "18446744073709551615"
        );
        assert_eq!(
            round_trip("0xFFFF_FFFF_FFFF_FFFF", &u64t),
            "18446744073709551615"
        );
        assert_eq!(round_trip("-0", &u64t), "0");
        let i64t = int(64, true);
        assert_eq!(
            round_trip("-9223372036854775808", &i64t),
            "-9223372036854775808"
        );
        let u128t = int(128, false);
        let max = u128::MAX.to_string();
        assert_eq!(round_trip(&max, &u128t), max);
        assert_eq!(
            round_trip(&i128::MIN.to_string(), &int(128, true)),
            i128::MIN.to_string()
        );
        assert_eq!(round_trip("-1", &int(1, true)), "-1");
        assert_eq!(round_trip("0", &int(1, true)), "0");
    }

    #[test]
    fn range_errors_name_port_value_and_range() {
        let e = parse_port_value("3000000000", &int(32, true), "INPUT_A_income")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "INPUT_A_income: the value given is out of range for int32_t (allowed: \
             -2147483648 to 2147483647, or a bit pattern 0x0 to 0xffffffff)"
        );
        let e = parse_port_value("-1", &int(8, false), "INPUT_B_x")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "INPUT_B_x: the value given is out of range for uint8_t (allowed: 0 to 255 (or \
             0x0 to 0xff))"
        );
        for (text, t) in [
            ("256", int(8, false)),
            ("0x100", int(8, false)),
            ("128", int(8, true)),
            ("-129", int(8, true)),
            ("-0x81", int(8, true)),
            ("2", CType::Bool),
            ("-1", CType::Bool),
            ("1", int(0, false)),
        ] {
            assert!(
                matches!(
                    parse_port_value(text, &t, "P"),
                    Err(TypedError::OutOfRange { .. })
                ),
                "{text} for {}",
                t.c_name()
            );
        }
        let huge = "9".repeat(60);
        let e = parse_port_value(&huge, &int(32, false), "P").unwrap_err();
        assert!(matches!(e, TypedError::Syntax { .. }), "{e}");
        assert!(e.to_string().len() < 200, "{e}");
        let e = parse_port_value("1", &int(256, false), "P").unwrap_err();
        assert!(matches!(e, TypedError::TooWide { .. }), "{e}");
    }

    #[test]
    fn bools() {
        for (text, v) in [
            ("true", true),
            ("false", false),
            ("1", true),
            ("0", false),
            ("0x1", true),
        ] {
            assert_eq!(parse_port_value(text, &CType::Bool, "P").unwrap(), [v]);
        }
        assert_eq!(format_port_value(&[true], &CType::Bool), "1");
        assert_eq!(port_value_json(&[false], &CType::Bool), json!(0));
        let e = parse_port_value("true", &int(8, true), "P").unwrap_err();
        assert!(e.to_string().contains("expected an integer"), "{e}");
        assert!(parse_port_value("truth", &CType::Bool, "P").is_err());
    }

    #[test]
    fn arrays_nested_and_shape_errors() {
        let v = array(int(8, true), 3);
        assert_eq!(round_trip("[1, -2, 3]", &v), "[1, -2, 3]");
        assert_eq!(round_trip("{1,-2,3,}", &v), "[1, -2, 3]");
        let bits = parse_port_value("[1,2,3]", &v, "P").unwrap();
        assert_eq!(lsb(&bits), 1 | 2 << 8 | 3 << 16, "element 0 first");
        let m = array(array(int(16, false), 2), 2);
        assert_eq!(round_trip("[[1,2],[3,4]]", &m), "[[1, 2], [3, 4]]");
        let bits = parse_port_value("[[1,2],[3,4]]", &m, "P").unwrap();
        assert_eq!(lsb(&bits), 1 | 2 << 16 | 3 << 32 | 4 << 48, "row-major");

        let e = parse_port_value("[1,2]", &v, "INPUT_A_v")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "INPUT_A_v: expected a list of 3 element(s) for int8_t[3], got a list of 2 element(s)"
        );
        let e = parse_port_value("[[1,2],[3]]", &m, "INPUT_B_m")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("INPUT_B_m[1]: expected a list of 2 element(s) for uint16_t[2]"),
            "{e}"
        );
        let e = parse_port_value("[[1,2],[3,70000]]", &m, "INPUT_B_m")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("INPUT_B_m[1][1]: the value given is out of range for uint16_t"),
            "{e}"
        );
        let e = parse_port_value("5", &v, "P").unwrap_err().to_string();
        assert!(e.contains("got a number"), "{e}");
        assert_eq!(round_trip("[]", &array(int(8, true), 0)), "[]");
    }

    #[test]
    fn structs_named_positional_and_errors() {
        let p = point();
        assert_eq!(p.bit_width(), 16);
        for text in [
            "{x: -3, y: [1, 15]}",
            "{.y = {1, 15}, .x = -3}",
            "{-3, [1, 0xf]}",
            "{ y = [1,15], x : -3 }",
        ] {
            assert_eq!(round_trip(text, &p), "{x: -3, y: [1, 15]}", "{text}");
        }
        let bits = parse_port_value("{x: 1, y: [2, 3]}", &p, "P").unwrap();
        assert_eq!(
            lsb(&bits),
            1 | 2 << 8 | 3 << 12,
            "fields in declaration order"
        );
        let e = parse_port_value("{x: 1}", &p, "INPUT_A_p")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "INPUT_A_p: field 'y' is missing (struct point has fields x: int8_t, y: uint4_t[2])"
        );
        let e = parse_port_value("{x: 1, y: [1, 2], z: 3}", &p, "P")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no field named 'z'"), "{e}");
        let e = parse_port_value("{x: 1, x: 2, y: [1, 2]}", &p, "P")
            .unwrap_err()
            .to_string();
        assert!(e.contains("field 'x' is given twice"), "{e}");
        let e = parse_port_value("{x: 1, y: [1, 16]}", &p, "INPUT_A_p")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("INPUT_A_p.y[1]: the value given is out of range"),
            "{e}"
        );
        let e = parse_port_value("{x: 1, [1, 2]}", &p, "P")
            .unwrap_err()
            .to_string();
        assert!(e.contains("all fields named, or none"), "{e}");
        let e = parse_port_value("[1, [1, 2]]", &p, "P");
        assert!(e.is_ok(), "positional struct in brackets is fine: {e:?}");
    }

    #[test]
    fn characters_and_strings() {
        let u8t = int(8, false);
        let i8t = int(8, true);
        assert_eq!(round_trip("'a'", &u8t), "97");
        assert_eq!(round_trip("'\\n'", &i8t), "10");
        assert_eq!(
            round_trip("'\\xff'", &i8t),
            "-1",
            "a character is a bit pattern"
        );
        assert_eq!(round_trip("'\\''", &u8t), "39");
        assert_eq!(round_trip("'\"'", &u8t), "34");
        assert_eq!(round_trip("'A'", &int(32, true)), "65");
        let text = array(u8t.clone(), 8);
        assert_eq!(
            round_trip("\"kitten\"", &text),
            "[107, 105, 116, 116, 101, 110, 0, 0]",
            "padded with zero bytes"
        );
        assert_eq!(
            round_trip("\"a\\\"\\\\\\0\\x41\\t\"", &array(i8t.clone(), 6)),
            "[97, 34, 92, 0, 65, 9]"
        );
        assert_eq!(
            round_trip("[\"ab\", \"c\"]", &array(array(u8t.clone(), 2), 2)),
            "[[97, 98], [99, 0]]"
        );
        assert_eq!(
            round_trip("\"é\"", &array(u8t.clone(), 2)),
            "[195, 169]",
            "UTF-8 bytes"
        );
        let bits = json_port_value(&serde_json::json!("\"hi\""), &text, "P").unwrap();
        assert_eq!(lsb(&bits), 104 | 105 << 8);

        let e = parse_port_value("\"kittens\"", &array(u8t.clone(), 6), "INPUT_A_text")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "INPUT_A_text: expected a string of at most 6 byte(s) for uint8_t[6], \
             got a string of 7 bytes"
        );
        let e = parse_port_value("\"ab\"", &array(int(16, false), 2), "P")
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected a list of 2 element(s)"), "{e}");
        let e = parse_port_value("\"a\"", &u8t, "P")
            .unwrap_err()
            .to_string();
        assert!(e.contains("an integer or a character like 'a'"), "{e}");
        let e = parse_port_value("'a'", &CType::Float { bits: 32 }, "P")
            .unwrap_err()
            .to_string();
        assert!(e.contains("got a character"), "{e}");
        // On the command line the shell removes the quotes of name="kitten": the hint says
        // how to keep them, and does not repeat the word.
        let e = parse_port_value("kitten", &text, "P")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "P: cannot read the value given (not shown): a word is not a value (text goes in \
             double quotes, and in a shell the whole argument in single quotes too, as in \
             'name=\"text\"') at character 1"
        );
        for (bad, at) in [
            ("'ab'", 1),
            ("''", 1),
            ("'é'", 1),
            ("\"abc", 5),
            ("'a", 3),
            ("\"a\\qb\"", 3),
            ("\"\\x\"", 2),
            ("\"\\", 2),
        ] {
            match parse_port_value(bad, &text, "P") {
                Err(TypedError::Syntax { at: got, .. }) => assert_eq!(got, at, "{bad:?}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn chars_print_as_characters_and_strings() {
        let c = CType::CHAR;
        assert_eq!(round_trip("'a'", &c), "'a'");
        assert_eq!(round_trip("97", &c), "'a'");
        assert_eq!(round_trip("-1", &c), "'\\xff'", "a char prints as its byte");
        assert_eq!(round_trip("0", &c), "'\\0'");
        assert_eq!(round_trip("'\\''", &c), "'\\''");
        assert_eq!(
            round_trip("'\"'", &c),
            "'\"'",
            "a double quote needs no escape"
        );
        assert_eq!(round_trip("'\\\\'", &c), "'\\\\'");
        assert_eq!(round_trip("'\\x7f'", &c), "'\\x7f'");
        assert_eq!(
            round_trip("'\\x1b'", &c),
            "'\\x1b'",
            "no raw escape reaches a terminal"
        );
        let word = array(c.clone(), 8);
        assert_eq!(
            round_trip("\"kitten\"", &word),
            "\"kitten\"",
            "trailing zero bytes are left out"
        );
        assert_eq!(round_trip("\"\"", &word), "\"\"");
        assert_eq!(
            round_trip("[107, 0, 116, 0, 0, 0, 0, 0]", &word),
            "\"k\\0t\"",
            "inner zero bytes stay"
        );
        assert_eq!(
            round_trip("\"a\\\"'\\\\\\n\\t\\r\"", &word),
            "\"a\\\"'\\\\\\n\\t\\r\""
        );
        assert_eq!(
            round_trip("\"é\\x01\\xff\"", &word),
            "\"\\xc3\\xa9\\x01\\xff\"",
            "bytes beyond printable ASCII as \\xHH"
        );
        // Every byte prints as text that reads back to itself, alone and in a string.
        for b in 0..=255u8 {
            let bits: Vec<bool> = (0..8).map(|j| (b >> j) & 1 == 1).collect();
            let text = format_port_value(&bits, &c);
            assert_eq!(parse_port_value(&text, &c, "P").unwrap(), bits, "{text}");
            let mut row = bits.clone();
            row.extend((0..8).map(|j| (b'x' >> j) & 1 == 1));
            let two = array(c.clone(), 2);
            let text = format_port_value(&row, &two);
            assert_eq!(parse_port_value(&text, &two, "P").unwrap(), row, "{text}");
        }
        // More dimensions: row by row; in a struct: as a field.
        assert_eq!(
            round_trip("[\"ab\", \"c\"]", &array(array(c.clone(), 2), 2)),
            "[\"ab\", \"c\"]"
        );
        let person = CType::Struct {
            name: "person".into(),
            fields: vec![
                ("name".into(), array(c.clone(), 4)),
                ("grade".into(), c.clone()),
                ("age".into(), int(8, true)),
            ],
        };
        assert_eq!(
            round_trip("{name: \"bob\", grade: 'B', age: 'B'}", &person),
            "{name: \"bob\", grade: 'B', age: 66}"
        );
        // int8_t/uint8_t stay numbers; JSON keeps numbers for char too.
        assert_eq!(round_trip("\"hi\"", &array(int(8, true), 2)), "[104, 105]");
        assert_eq!(round_trip("\"hi\"", &array(int(8, false), 2)), "[104, 105]");
        let bits = parse_port_value("\"hi\"", &word, "P").unwrap();
        assert_eq!(
            port_value_json(&bits, &word),
            json!([104, 105, 0, 0, 0, 0, 0, 0])
        );
        assert_eq!(
            port_value_json(&parse_port_value("'\\xff'", &c, "P").unwrap(), &c),
            json!(-1)
        );
        // Errors name the type as char.
        let e = parse_port_value("\"kittens\"", &array(c.clone(), 6), "INPUT_A_text")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "INPUT_A_text: expected a string of at most 6 byte(s) for char[6], \
             got a string of 7 bytes"
        );
        let e = parse_port_value("200", &c, "INPUT_B_c")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the value given is out of range for char"),
            "{e}"
        );
    }

    #[test]
    fn a_char_flag_on_another_integer_is_refused() {
        let crafted = |bits, signed| CType::Int {
            bits,
            signed,
            char: true,
        };
        assert!(check_type(&CType::CHAR).is_ok());
        for (bits, signed) in [(8, false), (16, true), (32, false)] {
            let t = crafted(bits, signed);
            assert!(!t.is_char());
            assert!(
                check_type(&t)
                    .unwrap_err()
                    .contains("a char that is not 8 bits")
            );
            // Printing never treats it as a char, so it still reads back.
            let bits = vec![true; bits as usize];
            let text = format_port_value(&bits, &t);
            assert_eq!(parse_port_value(&text, &t, "P").unwrap(), bits, "{text}");
        }
    }

    #[test]
    fn syntax_errors_point_at_the_character() {
        let t = array(int(8, true), 2);
        for (text, at) in [
            ("[1 2]", 4),
            ("[1,", 4),
            ("", 1),
            // At the character that is not a digit.
            ("12z", 3),
            ("0x", 1),
            ("1__", 1),
            ("[1, 2]]", 7),
            ("abc", 1),
            ("{.=1}", 3),
            ("@", 1),
            ("[1;2]", 3),
        ] {
            match parse_port_value(text, &t, "P") {
                Err(TypedError::Syntax { at: got, .. }) => assert_eq!(got, at, "{text:?}"),
                other => panic!("{text:?}: {other:?}"),
            }
        }
        let deep = "[".repeat(10_000);
        assert!(matches!(
            parse_port_value(&deep, &t, "P"),
            Err(TypedError::Syntax { .. })
        ));
    }

    /// Input values are secret: no error shows a value or any run of its letters and digits,
    /// from the text notation or from JSON.
    #[test]
    fn errors_never_show_the_value() {
        let t = int(32, true);
        let bytes = array(int(8, false), 2);
        let cases: [(&str, &CType); 11] = [
            ("12abc", &t),
            ("98765432109876543210", &t),
            ("0x1234567890", &t),
            ("[77, 999]", &bytes),
            ("'xy'", &int(8, false)),
            ("\"secret\"", &t),
            ("qwerty", &t),
            ("{a: 4321}", &t),
            ("1.25e999x", &t),
            ("[66, 1q]", &bytes),
            ("[\"hunter2\", 5]", &bytes),
        ];
        for (text, ctype) in cases {
            let errors = [
                parse_port_value(text, ctype, "P").unwrap_err().to_string(),
                json_port_value(&serde_json::Value::String(text.into()), ctype, "P")
                    .unwrap_err()
                    .to_string(),
            ];
            for e in errors {
                for piece in text
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|p| p.len() >= 2)
                {
                    assert!(!e.contains(piece), "{text:?} shows {piece:?}: {e}");
                }
            }
        }
    }

    #[test]
    fn json_values() {
        let i64t = int(64, true);
        let bits = json_port_value(&json!(-5), &i64t, "P").unwrap();
        assert_eq!(format_port_value(&bits, &i64t), "-5");
        let bits = json_port_value(&json!("0xffffffffffffffff"), &i64t, "P").unwrap();
        assert_eq!(port_value_json(&bits, &i64t), json!(-1));
        let u64t = int(64, false);
        let bits = json_port_value(&json!(u64::MAX), &u64t, "P").unwrap();
        assert_eq!(port_value_json(&bits, &u64t), json!(u64::MAX));
        let bits = json_port_value(&json!(i64::MIN), &i64t, "P").unwrap();
        assert_eq!(port_value_json(&bits, &i64t), json!(i64::MIN));
        let e = json_port_value(&json!(1.5), &i64t, "INPUT_A_x")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("INPUT_A_x: ") && e.contains("not an integer"),
            "{e}"
        );
        assert!(json_port_value(&json!(null), &i64t, "P").is_err());

        let m = array(array(int(8, false), 2), 2);
        let bits = json_port_value(&json!([[1, 2], ["0x3", 4]]), &m, "P").unwrap();
        assert_eq!(port_value_json(&bits, &m), json!([[1, 2], [3, 4]]));
        let e = json_port_value(&json!([[1, 2], [3, 400]]), &m, "P")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("P[1][1]: the value given is out of range"),
            "{e}"
        );

        let p = point();
        let bits = json_port_value(&json!({"y": [1, 2], "x": -1}), &p, "P").unwrap();
        assert_eq!(port_value_json(&bits, &p), json!({"x": -1, "y": [1, 2]}));
        let bits = json_port_value(&json!([-1, [1, 2]]), &p, "P").unwrap();
        assert_eq!(format_port_value(&bits, &p), "{x: -1, y: [1, 2]}");
        assert!(json_port_value(&json!(true), &CType::Bool, "P").unwrap()[0]);

        let big = int(100, true);
        let bits = parse_port_value(&format!("-{}", 1u128 << 99), &big, "P").unwrap();
        assert_eq!(
            port_value_json(&bits, &big),
            json!(format!("-{}", 1u128 << 99))
        );
    }

    #[test]
    fn floats_text_json_and_bit_patterns() {
        let f = CType::Float { bits: 32 };
        let d = CType::Float { bits: 64 };
        let pattern = |text: &str, t: &CType| lsb(&parse_port_value(text, t, "P").unwrap());
        assert_eq!(pattern("1.5", &f), 0x3fc0_0000);
        assert_eq!(
            pattern("0x3fc00000", &f),
            0x3fc0_0000,
            "hex is the bit pattern"
        );
        assert_eq!(
            pattern("0x1.8p0", &f),
            0x3fc0_0000,
            "unless it is a hex float"
        );
        assert_eq!(pattern("-0.0", &d), 1 << 63);
        assert_eq!(pattern("-0", &d), 1 << 63, "as strtod reads it");
        assert_eq!(pattern("0", &d), 0);
        assert_eq!(pattern("16777217", &f), 16777216f32.to_bits() as u128);
        assert_eq!(pattern("-inf", &f), 0xff80_0000);
        assert_eq!(pattern("Infinity", &d), 0x7ff0_0000_0000_0000);
        assert_eq!(pattern("nan", &f), 0x7fc0_0000);
        assert_eq!(pattern("-NaN", &d), 0xfff8_0000_0000_0000);
        assert_eq!(pattern("1e-45", &f), 1, "the smallest subnormal");
        assert_eq!(pattern(".5", &d), 0.5f64.to_bits() as u128);
        assert_eq!(pattern("1e+2", &d), 100f64.to_bits() as u128);
        for (text, t) in [
            ("0.1", &f),
            ("-0.0", &d),
            ("1e300", &d),
            ("inf", &f),
            ("-nan", &d),
            ("0x7fc00001", &f),
            ("0x7ff0000000000001", &d),
            ("3.4028235e38", &f),
            ("5e-324", &d),
            ("[1.5, -2.0]", &array(f.clone(), 2)),
        ] {
            assert_eq!(round_trip(text, t), text, "{}", t.c_name());
        }
        assert_eq!(round_trip("2.5", &f), "2.5");
        assert_eq!(round_trip("1", &d), "1.0");
        for (text, t) in [("0x1ffffffff", &f), ("-0x1", &d)] {
            assert!(
                matches!(
                    parse_port_value(text, t, "P"),
                    Err(TypedError::OutOfRange { .. })
                ),
                "{text}"
            );
        }
        for text in ["1.5.5", "1e", "0x1.8", "infx", "-", "1.5f", "1_0.5"] {
            assert!(
                matches!(
                    parse_port_value(text, &d, "P"),
                    Err(TypedError::Syntax { .. })
                ),
                "{text}"
            );
        }
        let e = parse_port_value("1.5", &int(32, true), "INPUT_A_x")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "INPUT_A_x: expected an integer for int32_t, got a number"
        );
        let e = parse_port_value("true", &d, "P").unwrap_err().to_string();
        assert!(e.contains("expected a number"), "{e}");

        // JSON: numbers, and strings for what JSON numbers cannot say.
        let bits = json_port_value(&json!(0.1), &f, "P").unwrap();
        assert_eq!(lsb(&bits), 0.1f32.to_bits() as u128);
        assert_eq!(port_value_json(&bits, &f), json!(0.1));
        let bits = json_port_value(&json!(-2), &d, "P").unwrap();
        assert_eq!(port_value_json(&bits, &d), json!(-2.0));
        let bits = json_port_value(&json!(-0.0), &d, "P").unwrap();
        assert_eq!(lsb(&bits), 1 << 63);
        assert_eq!(port_value_json(&bits, &d).to_string(), "-0.0");
        let bits = json_port_value(&json!(1e300), &f, "P").unwrap();
        assert_eq!(port_value_json(&bits, &f), json!("inf"));
        let bits = json_port_value(&json!("-nan"), &d, "P").unwrap();
        assert_eq!(port_value_json(&bits, &d), json!("-nan"));
        let bits = json_port_value(&json!("0x7fc00001"), &f, "P").unwrap();
        assert_eq!(port_value_json(&bits, &f), json!("0x7fc00001"));
        // A JSON number for a double is rounded correctly (serde_json's float_roundtrip).
        for text in [
            "2.2250738585072011e-308",
            "1.00000000000000011102230246251565404236316680908203126",
            "9007199254740993.0",
            "4.9406564584124654e-324",
        ] {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            let bits = json_port_value(&value, &d, "P").unwrap();
            assert_eq!(
                lsb(&bits),
                text.parse::<f64>().unwrap().to_bits() as u128,
                "{text}"
            );
        }
        // Every float pattern class reads back from its own JSON.
        for p in [
            0u64,
            1,
            0x8000_0001,
            0x0080_0000,
            0x7f7f_ffff,
            0x3dcc_cccd,
            0x4b80_0001,
            0x7f80_0000,
            0xffc0_0000,
            0x7fa0_0000,
        ] {
            let bits: Vec<bool> = (0..32).map(|j| (p >> j) & 1 == 1).collect();
            let j = port_value_json(&bits, &f);
            assert_eq!(json_port_value(&j, &f, "P").unwrap(), bits, "{j}");
            let t = format_port_value(&bits, &f);
            assert_eq!(parse_port_value(&t, &f, "P").unwrap(), bits, "{t}");
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for (t, w) in [(&f, 32), (&d, 64)] {
                let bits: Vec<bool> = (0..w).map(|j| (x >> j) & 1 == 1).collect();
                let j = port_value_json(&bits, t);
                let back = json_port_value(&serde_json::from_str(&j.to_string()).unwrap(), t, "P");
                assert_eq!(back.unwrap(), bits, "{j}");
                let text = format_port_value(&bits, t);
                assert_eq!(parse_port_value(&text, t, "P").unwrap(), bits, "{text}");
            }
        }
        assert!(check_type(&CType::Float { bits: 16 }).is_err());
        assert_eq!(check_type(&d), Ok(64));
    }

    #[test]
    fn interface_check() {
        use crate::ports::{InputPort, OutputPort, Owner, Visibility};
        let layout = Layout {
            num_wires: 80,
            input_widths: vec![32, 32],
            output_widths: vec![1],
            output_wires: vec![79],
        };
        let mut iface = Interface {
            inputs: vec![
                InputPort {
                    name: "INPUT_A_x".into(),
                    owner: Owner::A,
                    ctype: int(32, true),
                },
                InputPort {
                    name: "INPUT_B_y".into(),
                    owner: Owner::B,
                    ctype: int(32, true),
                },
            ],
            outputs: vec![OutputPort {
                name: "OUTPUT_r".into(),
                visibility: Visibility::Both,
                ctype: CType::Bool,
            }],
        };
        check_interface(&layout, &iface).unwrap();
        iface.inputs[1].ctype = int(16, true);
        let e = check_interface(&layout, &iface).unwrap_err().to_string();
        assert_eq!(
            e,
            "input port INPUT_B_y (int16_t) is 16 bits wide but the circuit's input value 1 has 32"
        );
        iface.outputs.clear();
        iface.inputs[1].ctype = int(32, true);
        let e = check_interface(&layout, &iface).unwrap_err().to_string();
        assert!(e.contains("0 output ports but the circuit has 1"), "{e}");
    }
}
