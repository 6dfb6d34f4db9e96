//! Yosys' JSON netlist (`write_json`, Yosys manual "write_json"): the parts pgc reads, and
//! helpers for its bit vectors, parameters and `src` positions.
//!
//! Objects whose order matters (ports in declaration order, cells for a deterministic gate
//! order) are read into vectors of pairs, in the order Yosys wrote them.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};

use crate::SourcePos;

/// A JSON object as its (key, value) pairs, in file order.
#[derive(Debug)]
pub struct Ordered<T>(pub Vec<(String, T)>);

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Ordered(Vec::new())
    }
}

impl<T> Ordered<T> {
    pub fn get(&self, key: &str) -> Option<&T> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct PairsVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for PairsVisitor<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some((k, v)) = map.next_entry::<String, T>()? {
                    pairs.push((k, v));
                }
                Ok(Ordered(pairs))
            }
        }
        d.deserialize_map(PairsVisitor(PhantomData))
    }
}

#[derive(Debug, Deserialize)]
pub struct Design {
    #[serde(default)]
    pub modules: Ordered<Module>,
}

#[derive(Debug, Deserialize)]
pub struct Module {
    #[serde(default)]
    pub attributes: Ordered<serde_json::Value>,
    #[serde(default)]
    pub ports: Ordered<Port>,
    #[serde(default)]
    pub cells: Ordered<Cell>,
    #[serde(default)]
    pub netnames: Ordered<NetName>,
}

#[derive(Debug, Deserialize)]
pub struct Port {
    pub direction: String,
    pub bits: Vec<BitRef>,
    /// 1 for `input signed [..]` (Yosys writes it only when set).
    #[serde(default)]
    pub signed: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
pub struct Cell {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub parameters: Ordered<serde_json::Value>,
    #[serde(default)]
    pub attributes: Ordered<serde_json::Value>,
    #[serde(default)]
    pub connections: Ordered<Vec<BitRef>>,
}

#[derive(Debug, Deserialize)]
pub struct NetName {
    #[serde(default)]
    pub attributes: Ordered<serde_json::Value>,
}

/// One bit of a connection: a net number, or a constant `"0"`, `"1"`, `"x"`, `"z"`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum BitRef {
    Net(u64),
    Const(String),
}

/// A parameter value as bits, least significant first: Yosys writes constants as strings
/// of `0 1 x z`, most significant first (or, with `-compat-int`, small ones as numbers).
/// Undefined bits (`x`, `z`) read as 0. `None` if the value is not a bit vector.
pub fn param_bits(v: &serde_json::Value) -> Option<Vec<bool>> {
    match v {
        serde_json::Value::Number(n) => {
            let x = n.as_i64()?;
            Some((0..64).map(|i| (x >> i) & 1 == 1).collect())
        }
        serde_json::Value::String(s) => {
            if s.is_empty() || !s.bytes().all(|c| matches!(c, b'0' | b'1' | b'x' | b'z')) {
                return None;
            }
            Some(s.bytes().rev().map(|c| c == b'1').collect())
        }
        _ => None,
    }
}

/// A parameter as an unsigned integer (`None` if it is not a bit vector or exceeds 63 bits).
pub fn param_uint(v: &serde_json::Value) -> Option<u64> {
    if let serde_json::Value::Number(n) = v {
        return n.as_u64();
    }
    let bits = param_bits(v)?;
    let mut x = 0u64;
    for (i, &b) in bits.iter().enumerate() {
        if b {
            if i >= 63 {
                return None;
            }
            x |= 1 << i;
        }
    }
    Some(x)
}

/// A parameter as a signed integer: its bit vector in two's complement (Yosys writes
/// integer parameters such as a memory's `OFFSET` as 32 bits).
pub fn param_int(v: &serde_json::Value) -> Option<i64> {
    if let serde_json::Value::Number(n) = v {
        return n.as_i64();
    }
    let bits = param_bits(v)?;
    let n = bits.len();
    if n > 64 {
        // Wider than 64 bits: only values that fit (sign extension of bit 63) are accepted.
        let top = bits[63];
        if bits[64..].iter().any(|&b| b != top) {
            return None;
        }
    }
    let mut x = 0i64;
    for (i, &b) in bits.iter().take(64).enumerate() {
        if b {
            x |= 1 << i;
        }
    }
    if n < 64 && bits[n - 1] {
        x |= -1i64 << n;
    }
    Some(x)
}

/// Whether a JSON flag (`"signed": 1`, a parameter `"1"` or `"00…01"`) is set.
pub fn flag_set(v: Option<&serde_json::Value>) -> bool {
    match v {
        None => false,
        Some(v) => param_uint(v).is_some_and(|x| x != 0),
    }
}

/// The first position of a Yosys `src` attribute: `file:line.col-line.col`, several joined by
/// `|` after merging, or `file:line` alone. `rename` maps the file Yosys read to the name the
/// user knows.
pub fn src_pos(src: &str, rename: &dyn Fn(&str) -> String) -> Option<SourcePos> {
    let first = src.split('|').next()?;
    let (file, rest) = first.rsplit_once(':')?;
    let start = rest.split('-').next()?;
    let (line, col) = match start.split_once('.') {
        Some((l, c)) => (l.parse().ok()?, c.parse().ok()?),
        None => (start.parse().ok()?, 1),
    };
    Some(SourcePos {
        file: rename(file),
        line,
        col,
    })
}

/// The `src` attribute of an attribute list, if it has one.
pub fn src_attr(attrs: &Ordered<serde_json::Value>) -> Option<&str> {
    attrs.get("src").and_then(|v| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parameters_read_as_bits_and_integers() {
        assert_eq!(
            param_uint(&json!("00000000000000000000000000100000")),
            Some(32)
        );
        assert_eq!(param_uint(&json!(17)), Some(17));
        assert_eq!(
            param_int(&json!("11111111111111111111111111111110")),
            Some(-2)
        );
        assert_eq!(param_bits(&json!("1x0")), Some(vec![false, false, true]));
        assert_eq!(param_bits(&json!("$mem name")), None);
        assert!(flag_set(Some(&json!("1"))));
        assert!(!flag_set(Some(&json!("00000000000000000000000000000000"))));
        assert!(!flag_set(None));
    }

    #[test]
    fn src_positions() {
        let same = |f: &str| f.to_string();
        let p = src_pos("dir/a b.v:12.3-12.40|x.v:1.1-1.2", &same).unwrap();
        assert_eq!((p.file.as_str(), p.line, p.col), ("dir/a b.v", 12, 3));
        let p = src_pos("a.v:7", &same).unwrap();
        assert_eq!((p.line, p.col), (7, 1));
        assert!(src_pos("nothing", &same).is_none());
    }

    #[test]
    fn objects_keep_their_order() {
        let o: Ordered<u32> = serde_json::from_str(r#"{"z": 1, "a": 2, "m": 3}"#).unwrap();
        let keys: Vec<&str> = o.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["z", "a", "m"]);
        assert_eq!(o.get("a"), Some(&2));
    }
}
