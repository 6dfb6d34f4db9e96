//! String literals and character constants: their bytes as gcc on x86-64 stores them (the
//! execution character set UTF-8), escapes decoded as C11 §6.4.4.4 and §6.4.5 say (the
//! parser refuses the universal character names `\u`, `\U` and gcc's `\e` before they
//! get here). A
//! literal is a `char` array with a terminating zero (§6.4.5 ¶6); adjacent literals are one
//! (the parser hands them over as pieces). Wide literals (`L`, `u`, `U`) are refused: their
//! elements are not `char`.

use std::collections::{HashMap, HashSet};

use lang_c::ast::StringLiteral;
use lang_c::span::Node;
use pgc_circuit::Lit;

use crate::lower::{Lowerer, Place, R, VarId};
use crate::types::{IntTy, Ty};

/// The variables holding the program's string literals: one per literal in the source, made
/// when it is first evaluated and kept for the whole compilation (a literal has static
/// storage, §6.4.5 ¶6). Its bits are constants, so templates may read it like any constant;
/// writing into it is refused (undefined in C: gcc's program would crash).
#[derive(Default)]
pub struct StringLiterals {
    by_node: HashMap<usize, VarId>,
    vars: HashSet<VarId>,
}

impl StringLiterals {
    pub fn is_literal(&self, var: VarId) -> bool {
        !self.vars.is_empty() && self.vars.contains(&var)
    }
}

impl<'a> Lowerer<'a> {
    /// The place of a string literal: a `char` array of its bytes and the terminating zero.
    pub(crate) fn string_literal(&mut self, s: &'a Node<StringLiteral>) -> R<Place> {
        let key = s as *const Node<StringLiteral> as usize;
        let var = match self.string_literals.by_node.get(&key) {
            Some(&v) => v,
            None => {
                let bytes = string_literal_bytes(&s.node).map_err(|m| self.error(s.span, m))?;
                let ty = Ty::Array(Box::new(Ty::Int(IntTy::CHAR)), bytes.len() as u64);
                let v = self.new_var(ty, byte_bits(&bytes));
                self.string_literals.by_node.insert(key, v);
                self.string_literals.vars.insert(v);
                v
            }
        };
        Ok(Place::whole(var, self.vars[var].ty.clone()))
    }
}

/// Bytes as constant bits, each byte least significant bit first.
pub fn byte_bits(bytes: &[u8]) -> Vec<Lit> {
    bytes
        .iter()
        .flat_map(|&b| (0..8).map(move |i| Lit::constant((b >> i) & 1 == 1)))
        .collect()
}

/// The bytes of a string literal given as the parser's pieces (`"ab"`, `u8"c"`, …), with
/// the terminating zero.
pub fn string_literal_bytes(pieces: &[String]) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    for piece in pieces {
        let body = piece.strip_prefix("u8").unwrap_or(piece);
        let Some(inner) = body.strip_prefix('"').and_then(|b| b.strip_suffix('"')) else {
            let prefix: String = piece.chars().take_while(|&c| c != '"').collect();
            return Err(format!(
                "wide string literals ({prefix}\"…\") are not supported: only `char` strings \
                 (\"…\" or u8\"…\")"
            ));
        };
        decode_escapes(inner, &mut bytes)?;
    }
    bytes.push(0);
    Ok(bytes)
}

/// The value of a character constant such as `'a'`, `'\n'`, `'\x41'` or `'\101'`: one byte
/// (`None` for wide or multi-character constants, whose values are not a `char`'s).
pub fn char_constant_byte(s: &str) -> Option<u8> {
    let inner = s.strip_prefix('\'')?.strip_suffix('\'')?;
    let mut bytes = Vec::new();
    decode_escapes(inner, &mut bytes).ok()?;
    match bytes.as_slice() {
        [b] => Some(*b),
        _ => None,
    }
}

/// Appends the bytes of the text between the quotes of a literal: other characters as
/// their UTF-8 bytes, escapes decoded; an escape C does not define or whose value does not
/// fit a byte is an error (gcc only warns, and then stores something else than written).
fn decode_escapes(inner: &str, out: &mut Vec<u8>) -> Result<(), String> {
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let Some(e) = chars.next() else {
            return Err("a string ends in a lone backslash".into());
        };
        let simple = match e {
            'n' => Some(b'\n'),
            't' => Some(b'\t'),
            'r' => Some(b'\r'),
            'a' => Some(7),
            'b' => Some(8),
            'f' => Some(12),
            'v' => Some(11),
            '\\' | '\'' | '"' | '?' => Some(e as u8),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            continue;
        }
        match e {
            '0'..='7' => {
                // One to three octal digits.
                let mut v = e.to_digit(8).expect("octal");
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                let b = u8::try_from(v)
                    .map_err(|_| format!("the octal escape \\{v:o} is larger than a byte"))?;
                out.push(b);
            }
            'x' => {
                // Every hex digit that follows belongs to the escape.
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_hexdigit()) {
                    digits.push(*d);
                    chars.next();
                }
                if digits.is_empty() {
                    return Err("\\x needs hexadecimal digits".into());
                }
                let b = u32::from_str_radix(&digits, 16)
                    .ok()
                    .and_then(|v| u8::try_from(v).ok())
                    .ok_or_else(|| format!("the hex escape \\x{digits} is larger than a byte"))?;
                out.push(b);
            }
            other => return Err(format!("\\{other} is not an escape sequence of C")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(pieces: &[&str]) -> Result<Vec<u8>, String> {
        string_literal_bytes(&pieces.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn escapes_and_pieces_give_gccs_bytes() {
        assert_eq!(lit(&["\"ab\""]).unwrap(), b"ab\0");
        assert_eq!(lit(&["\"a\"", "u8\"b\"", "\"\""]).unwrap(), b"ab\0");
        assert_eq!(
            lit(&[r#""\n\t\r\a\b\f\v\\\'\"\?""#]).unwrap(),
            b"\n\t\r\x07\x08\x0c\x0b\\'\"?\0"
        );
        // Octal takes at most three digits; hex takes every hex digit.
        assert_eq!(lit(&[r#""\1234\0x\x41g""#]).unwrap(), b"\x534\0xAg\0");
        assert_eq!(lit(&[r#""\x00041""#]).unwrap(), b"A\0");
        // Other characters as their UTF-8 bytes.
        assert_eq!(lit(&["\"é😀\""]).unwrap(), "é😀\0".as_bytes());
    }

    #[test]
    fn what_gcc_would_store_differently_is_refused() {
        for (text, says) in [
            (r#""\400""#, "octal escape \\400"),
            (r#""\x100""#, "hex escape \\x100"),
            (r#""\x""#, "\\x needs"),
            (r#""\q""#, "\\q is not an escape"),
        ] {
            let e = lit(&[text]).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        for wide in ["L\"a\"", "u\"a\"", "U\"a\""] {
            let e = lit(&["\"x\"", wide]).unwrap_err();
            assert!(e.contains("wide string literals"), "{wide}: {e}");
        }
    }

    #[test]
    fn character_constants_are_one_byte() {
        assert_eq!(char_constant_byte("'a'"), Some(b'a'));
        assert_eq!(char_constant_byte(r"'\n'"), Some(b'\n'));
        assert_eq!(char_constant_byte(r"'\x41'"), Some(b'A'));
        assert_eq!(char_constant_byte(r"'\101'"), Some(b'A'));
        assert_eq!(char_constant_byte(r"'\0'"), Some(0));
        assert_eq!(char_constant_byte(r"'\377'"), Some(255));
        assert_eq!(char_constant_byte("'ab'"), None);
        assert_eq!(char_constant_byte("'é'"), None);
        assert_eq!(char_constant_byte("L'a'"), None);
    }
}
