//! Inputs and outputs of compiled programs by name: `NAME=VALUE` arguments, `--inputs
//! FILE.json`, and typed output lines / JSON objects.

use std::path::Path;

use anyhow::{Context, Result, bail};
use pgc_circuit::typed::{format_port_value, json_port_value, parse_port_value, port_value_json};
use pgc_circuit::{InputPort, Interface, Owner, Visibility};
use pgc_protocol::Party;
use serde_json::{Map, Value};

/// Whose inputs a command gathers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// One party's own inputs (`run`, and `--a`/`--b` of `local`).
    Party(Party),
    /// Every input (`eval`, and `--inputs` of `local`).
    All,
}

impl Scope {
    fn covers(self, owner: Owner) -> bool {
        match self {
            Scope::All => true,
            Scope::Party(p) => party_of(owner) == p,
        }
    }
}

pub fn party_of(owner: Owner) -> Party {
    match owner {
        Owner::A => Party::A,
        Owner::B => Party::B,
    }
}

/// Input value owners of a typed circuit, in circuit order.
pub fn owners(iface: &Interface) -> Vec<Party> {
    iface.inputs.iter().map(|p| party_of(p.owner)).collect()
}

/// Output visibilities of a typed circuit, in circuit order.
pub fn visibility(iface: &Interface) -> Vec<Visibility> {
    iface.outputs.iter().map(|p| p.visibility).collect()
}

fn describe(port: &InputPort) -> String {
    format!(
        "{} ({}) of party {}",
        port.name,
        port.ctype.c_name(),
        party_of(port.owner).letter()
    )
}

/// How a command asks for an input: the flag that gives a value of `owner`'s inputs.
pub type FlagFor<'a> = &'a dyn Fn(Owner) -> &'static str;

/// Finds the input port `name` (full, or without its `INPUT_A_`/`INPUT_B_` prefix) among the
/// ports in `scope`.
fn resolve(iface: &Interface, scope: Scope, name: &str, flag_for: FlagFor) -> Result<usize> {
    let list = || expected_list(iface, scope, flag_for);
    if let Some(i) = iface.inputs.iter().position(|p| p.name == name) {
        let p = &iface.inputs[i];
        if !scope.covers(p.owner) {
            bail!(
                "{} is an input of party {}; each party gives only its own inputs (this one's: {})",
                p.name,
                party_of(p.owner).letter(),
                list()
            );
        }
        return Ok(i);
    }
    let matching: Vec<usize> = (0..iface.inputs.len())
        .filter(|&i| iface.inputs[i].short_name() == name)
        .collect();
    let mine: Vec<usize> = matching
        .iter()
        .copied()
        .filter(|&i| scope.covers(iface.inputs[i].owner))
        .collect();
    match (mine.as_slice(), matching.as_slice()) {
        ([i], _) => Ok(*i),
        ([], []) => bail!(
            "the program has no input named '{name}'; it expects {}",
            list()
        ),
        ([], [i, ..]) => {
            let p = &iface.inputs[*i];
            bail!(
                "'{name}' is {}, an input of party {}; each party gives only its own inputs \
                 (this one's: {})",
                p.name,
                party_of(p.owner).letter(),
                list()
            )
        }
        (several, _) => bail!(
            "'{name}' is ambiguous: it could be {}; use the full name",
            several
                .iter()
                .map(|&i| iface.inputs[i].name.as_str())
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    }
}

/// The name to give `port` by: its short name, unless another port in `scope` shares it
/// (`pgc eval`'s INPUT_A_x and INPUT_B_x), then the full name.
fn name_to_give<'a>(iface: &Interface, scope: Scope, port: &'a InputPort) -> &'a str {
    let sharing = iface
        .inputs
        .iter()
        .filter(|q| scope.covers(q.owner) && q.short_name() == port.short_name())
        .count();
    if sharing > 1 {
        &port.name
    } else {
        port.short_name()
    }
}

fn expected_list(iface: &Interface, scope: Scope, flag_for: FlagFor) -> String {
    let ports: Vec<String> = iface
        .inputs
        .iter()
        .filter(|p| scope.covers(p.owner))
        .map(|p| {
            format!(
                "{} {}=VALUE ({})",
                flag_for(p.owner),
                name_to_give(iface, scope, p),
                p.ctype.c_name()
            )
        })
        .collect();
    if ports.is_empty() {
        "no inputs".into()
    } else {
        ports.join(", ")
    }
}

/// Bytes per input bit an inputs file read from a device or a pipe may take (a `true, ` per
/// bit of a `_Bool` array, pretty-printed, is 14).
const INPUTS_FILE_BYTES_PER_BIT: u64 = 64;
/// Bytes an inputs file read from a device or a pipe may take beyond its values.
const INPUTS_FILE_SLACK_BYTES: u64 = 1 << 20;

/// Values gathered so far, by input port.
pub struct Gathered<'a> {
    iface: &'a Interface,
    values: Vec<Option<Vec<bool>>>,
    from_command_line: Vec<bool>,
}

impl<'a> Gathered<'a> {
    pub fn new(iface: &'a Interface) -> Self {
        Gathered {
            iface,
            values: vec![None; iface.inputs.len()],
            from_command_line: vec![false; iface.inputs.len()],
        }
    }

    /// Adds `NAME=VALUE` arguments for the ports in `scope`. A value given on the command
    /// line replaces one from `--inputs`; giving the same input twice is an error.
    pub fn add_assignments(
        &mut self,
        items: &[String],
        scope: Scope,
        flag: &str,
        flag_for: FlagFor,
    ) -> Result<()> {
        for item in items {
            let Some((name, text)) = item.split_once('=') else {
                // The argument may be a bare value (`--a 5000`): shown only if it is one of
                // the program's input names, since values are secret.
                let is_a_name = self
                    .iface
                    .inputs
                    .iter()
                    .any(|p| p.name == item.trim() || p.short_name() == item.trim());
                let shown = if is_a_name {
                    format!(" {item}")
                } else {
                    " (the argument, not shown in case it is a value)".into()
                };
                bail!(
                    "{flag}{shown}: a compiled program takes inputs as NAME=VALUE; it expects {}",
                    expected_list(self.iface, scope, flag_for)
                );
            };
            let i = resolve(self.iface, scope, name.trim(), flag_for)
                .with_context(|| format!("{flag} {name}=…"))?;
            let port = &self.iface.inputs[i];
            if self.from_command_line[i] {
                bail!("{flag}: input {} is given twice", port.name);
            }
            self.values[i] = Some(parse_port_value(text, &port.ctype, &port.name)?);
            self.from_command_line[i] = true;
        }
        Ok(())
    }

    /// Adds the values of a JSON file: an object keyed by input name (full or short), values
    /// numbers, strings (`"0xff"`, `"-5"`), lists for arrays, objects for structs.
    pub fn add_file(&mut self, path: &Path, scope: Scope, flag_for: FlagFor) -> Result<()> {
        let text = pgc_circuit::limits::read_text_file(path, self.inputs_file_bound())
            .with_context(|| format!("cannot read inputs file {}", path.display()))?;
        let json = match serde_json::from_slice::<NoDuplicateKeys>(&text) {
            Ok(json) => json.0,
            // A key twice is JSON, just not an inputs file.
            Err(e) if e.is_data() => bail!("{}: {e}", path.display()),
            Err(e) => return Err(e).context(format!("{} is not valid JSON", path.display())),
        };
        let origin = path.display().to_string();
        self.add_json(&json, scope, &origin, flag_for)
    }

    /// The most bytes read from an inputs file that is a device or a pipe: what the
    /// program's inputs can take written out generously (a JSON value per bit, indented:
    /// 64 bytes per input bit), plus 1 MiB for names and layout.
    fn inputs_file_bound(&self) -> u64 {
        let bits: u64 = self
            .iface
            .inputs
            .iter()
            .map(|p| p.ctype.bit_width())
            .fold(0, u64::saturating_add);
        bits.saturating_mul(INPUTS_FILE_BYTES_PER_BIT)
            .saturating_add(INPUTS_FILE_SLACK_BYTES)
    }

    /// Adds the values of a JSON object keyed by input name, as [`add_file`] reads them
    /// (Python dictionaries arrive this way); `origin` names where it came from, for errors.
    ///
    /// [`add_file`]: Gathered::add_file
    pub fn add_json(
        &mut self,
        json: &Value,
        scope: Scope,
        origin: &str,
        flag_for: FlagFor,
    ) -> Result<()> {
        let Value::Object(map) = json else {
            bail!(
                "{origin}: expected a JSON object keyed by input name, e.g. {{\"income\": 5000}}"
            );
        };
        // The key that gave each input, so that a short and a full name of one input
        // (`income` and `INPUT_A_income`) are refused rather than one silently winning.
        let mut given_by: Vec<Option<&str>> = vec![None; self.iface.inputs.len()];
        for (name, value) in map {
            let i = resolve(self.iface, scope, name, flag_for)
                .with_context(|| format!("{origin}: key \"{name}\""))?;
            let port = &self.iface.inputs[i];
            if let Some(first) = given_by[i].replace(name) {
                bail!(
                    "{origin}: keys \"{first}\" and \"{name}\" both give input {}",
                    port.name
                );
            }
            if !self.from_command_line[i] {
                let bits = json_port_value(value, &port.ctype, &port.name)
                    .with_context(|| format!("in {origin}"))?;
                self.values[i] = Some(bits);
            }
        }
        Ok(())
    }

    /// The values of the ports in `scope`, in circuit order; every one must be given.
    pub fn finish(&self, scope: Scope, flag_for: FlagFor) -> Result<Vec<Vec<bool>>> {
        let missing: Vec<String> = self
            .iface
            .inputs
            .iter()
            .zip(&self.values)
            .filter(|(p, v)| scope.covers(p.owner) && v.is_none())
            .map(|(p, _)| {
                format!(
                    "missing input {} (give it with {} {}=VALUE)",
                    describe(p),
                    flag_for(p.owner),
                    name_to_give(self.iface, scope, p)
                )
            })
            .collect();
        if !missing.is_empty() {
            bail!("{}", missing.join("\n       "));
        }
        Ok(self
            .iface
            .inputs
            .iter()
            .zip(&self.values)
            .filter(|(p, _)| scope.covers(p.owner))
            .map(|(_, v)| v.clone().expect("checked above"))
            .collect())
    }
}

/// Typed outputs as `NAME = VALUE` lines, leaving out outputs this party may not see.
pub fn output_lines(iface: &Interface, outputs: &[Option<Vec<bool>>]) -> Vec<String> {
    iface
        .outputs
        .iter()
        .zip(outputs)
        .filter_map(|(p, bits)| {
            bits.as_ref()
                .map(|b| format!("{} = {}", p.name, format_port_value(b, &p.ctype)))
        })
        .collect()
}

/// Typed outputs as a JSON object keyed by output name, leaving out outputs this party may
/// not see.
pub fn outputs_json(iface: &Interface, outputs: &[Option<Vec<bool>>]) -> Value {
    let mut map = Map::new();
    for (p, bits) in iface.outputs.iter().zip(outputs) {
        if let Some(b) = bits {
            map.insert(p.name.clone(), port_value_json(b, &p.ctype));
        }
    }
    Value::Object(map)
}

/// Names of the outputs this party does not see (for a note).
pub fn hidden_outputs(iface: &Interface, outputs: &[Option<Vec<bool>>]) -> Vec<String> {
    iface
        .outputs
        .iter()
        .zip(outputs)
        .filter(|(_, b)| b.is_none())
        .map(|(p, _)| p.name.clone())
        .collect()
}

pub fn visibility_name(v: Visibility) -> &'static str {
    match v {
        Visibility::Both => "both",
        Visibility::A => "A",
        Visibility::B => "B",
    }
}

/// The interface as JSON for `info --json` and `compile --json`.
pub fn interface_json(iface: &Interface) -> (Value, Value) {
    let inputs = iface
        .inputs
        .iter()
        .map(|p| {
            serde_json::json!({
                "name": p.name,
                "short_name": p.short_name(),
                "owner": party_of(p.owner).letter().to_string(),
                "type": p.ctype.c_name(),
                "bits": p.ctype.bit_width(),
            })
        })
        .collect();
    let outputs = iface
        .outputs
        .iter()
        .map(|p| {
            serde_json::json!({
                "name": p.name,
                "revealed_to": visibility_name(p.visibility),
                "type": p.ctype.c_name(),
                "bits": p.ctype.bit_width(),
            })
        })
        .collect();
    (Value::Array(inputs), Value::Array(outputs))
}

/// The interface as lines for people (`info`, `compile`).
pub fn interface_lines(iface: &Interface) -> Vec<String> {
    let mut lines = Vec::new();
    for p in &iface.inputs {
        lines.push(format!(
            "input        {} {}  (party {})",
            p.ctype.c_name(),
            p.name,
            party_of(p.owner).letter()
        ));
    }
    for p in &iface.outputs {
        let who = match p.visibility {
            Visibility::Both => "revealed to both",
            Visibility::A => "revealed to party A only",
            Visibility::B => "revealed to party B only",
        };
        lines.push(format!(
            "output       {} {}  ({who})",
            p.ctype.c_name(),
            p.name
        ));
    }
    lines
}

/// A JSON value read like [`Value`], but an object with a key twice is an error: serde_json
/// keeps the last silently, so `{"income": 5000, "income": 7000}` in an inputs file would
/// run on a value the user may not have meant.
struct NoDuplicateKeys(Value);

impl<'de> serde::Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicateKeysVisitor)
    }
}

struct NoDuplicateKeysVisitor;

impl<'de> serde::de::Visitor<'de> for NoDuplicateKeysVisitor {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys(Value::from(v)))
    }
    fn visit_string<E>(self, v: String) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys(Value::Null))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> Result<NoDuplicateKeys, A::Error> {
        let mut items = Vec::new();
        while let Some(NoDuplicateKeys(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(NoDuplicateKeys(Value::Array(items)))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> Result<NoDuplicateKeys, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let NoDuplicateKeys(v) = map.next_value()?;
            if out.insert(key.clone(), v).is_some() {
                return Err(serde::de::Error::custom(format!(
                    "key \"{key}\" appears twice"
                )));
            }
        }
        Ok(NoDuplicateKeys(Value::Object(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgc_circuit::{CType, OutputPort};

    fn iface() -> Interface {
        let i32t = CType::int(32, true);
        Interface {
            inputs: vec![
                InputPort {
                    name: "INPUT_A_income".into(),
                    owner: Owner::A,
                    ctype: i32t.clone(),
                },
                InputPort {
                    name: "INPUT_B_income".into(),
                    owner: Owner::B,
                    ctype: i32t.clone(),
                },
                InputPort {
                    name: "INPUT_B_v".into(),
                    owner: Owner::B,
                    ctype: CType::Array {
                        elem: Box::new(CType::int(8, false)),
                        len: 2,
                    },
                },
            ],
            outputs: vec![
                OutputPort {
                    name: "OUTPUT_result".into(),
                    visibility: Visibility::Both,
                    ctype: i32t.clone(),
                },
                OutputPort {
                    name: "OUTPUT_A_secret".into(),
                    visibility: Visibility::A,
                    ctype: i32t,
                },
            ],
        }
    }

    fn local_flags(o: Owner) -> &'static str {
        match o {
            Owner::A => "--a",
            Owner::B => "--b",
        }
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_short_full_and_errors() {
        let iface = iface();
        let b = Scope::Party(Party::B);
        let mut g = Gathered::new(&iface);
        g.add_assignments(
            &strings(&["income=-7", "INPUT_B_v=[1, 0xff]"]),
            b,
            "--b",
            &local_flags,
        )
        .unwrap();
        let vals = g.finish(b, &local_flags).unwrap();
        assert_eq!(vals.len(), 2);
        assert_eq!(
            vals[0],
            parse_port_value("-7", &iface.inputs[1].ctype, "x").unwrap()
        );

        let e = g
            .finish(Scope::Party(Party::A), &local_flags)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "missing input INPUT_A_income (int32_t) of party A (give it with --a income=VALUE)"
        );
        let mut g = Gathered::new(&iface);
        let e = g
            .add_assignments(&strings(&["INPUT_A_income=1"]), b, "--b", &local_flags)
            .unwrap_err();
        assert!(
            format!("{e:#}").contains("INPUT_A_income is an input of party A"),
            "{e:#}"
        );
        let e = g
            .add_assignments(&strings(&["v=[1,2]", "v=[1,2]"]), b, "--b", &local_flags)
            .unwrap_err();
        assert!(format!("{e:#}").contains("given twice"), "{e:#}");
        let mut g = Gathered::new(&iface);
        let e = g
            .add_assignments(&strings(&["income=1"]), Scope::All, "--input", &local_flags)
            .unwrap_err();
        assert!(
            format!("{e:#}").contains("ambiguous: it could be INPUT_A_income or INPUT_B_income"),
            "{e:#}"
        );
        let e = g
            .add_assignments(&strings(&["nope=1"]), Scope::All, "--input", &local_flags)
            .unwrap_err();
        assert!(format!("{e:#}").contains("no input named 'nope'"), "{e:#}");
        let e = g
            .add_assignments(&strings(&["5"]), Scope::All, "--input", &local_flags)
            .unwrap_err();
        assert!(format!("{e:#}").contains("NAME=VALUE"), "{e:#}");
        let e = g
            .add_assignments(&strings(&["v=[1]"]), Scope::All, "--input", &local_flags)
            .unwrap_err();
        assert!(
            format!("{e:#}").contains("INPUT_B_v: expected a list of 2"),
            "{e:#}"
        );
    }

    #[test]
    fn json_file_and_command_line_override() {
        let iface = iface();
        let dir = std::env::temp_dir().join(format!("pgc-typed-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("in.json");
        std::fs::write(
            &file,
            r#"{"INPUT_A_income": 10, "INPUT_B_income": "0x10", "v": [3, 4]}"#,
        )
        .unwrap();
        let mut g = Gathered::new(&iface);
        g.add_assignments(&strings(&["v=[5,6]"]), Scope::All, "--input", &local_flags)
            .unwrap();
        g.add_file(&file, Scope::All, &local_flags).unwrap();
        let vals = g.finish(Scope::All, &local_flags).unwrap();
        let show = |i: usize| format_port_value(&vals[i], &iface.inputs[i].ctype);
        assert_eq!(
            (show(0), show(1), show(2)),
            ("10".into(), "16".into(), "[5, 6]".into())
        );

        std::fs::write(&file, r#"{"income": 1}"#).unwrap();
        let mut g = Gathered::new(&iface);
        g.add_file(&file, Scope::Party(Party::A), &local_flags)
            .unwrap();
        assert_eq!(
            g.finish(Scope::Party(Party::A), &local_flags)
                .unwrap()
                .len(),
            1
        );
        std::fs::write(&file, "[1, 2]").unwrap();
        let e = g
            .add_file(&file, Scope::All, &local_flags)
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected a JSON object"), "{e}");

        // One input given twice, by one key (at any depth) or by its short and full names,
        // is refused: JSON readers keep the last value silently.
        for (text, expected) in [
            (
                r#"{"income": 1, "income": 2}"#,
                "key \"income\" appears twice at line 1",
            ),
            (
                r#"{"income": 1, "v": [1, {"x": 1, "x": 2}]}"#,
                "key \"x\" appears twice",
            ),
            (
                r#"{"income": 1, "INPUT_A_income": 2}"#,
                "keys \"INPUT_A_income\" and \"income\" both give input INPUT_A_income",
            ),
        ] {
            std::fs::write(&file, text).unwrap();
            let e = Gathered::new(&iface)
                .add_file(&file, Scope::Party(Party::A), &local_flags)
                .unwrap_err();
            assert!(format!("{e:#}").contains(expected), "{text}: {e:#}");
        }
        // Nested values read as serde_json reads them.
        let text = r#"{"a": [1, -2, 3.5, "s", true, null, {"b": 18446744073709551615}]}"#;
        let strict: NoDuplicateKeys = serde_json::from_str(text).unwrap();
        assert_eq!(strict.0, serde_json::from_str::<Value>(text).unwrap());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn outputs_leave_out_what_a_party_may_not_see() {
        let iface = iface();
        let bits = |v: i32| (0..32).map(|i| (v >> i) & 1 == 1).collect::<Vec<bool>>();
        let outs = [Some(bits(-3)), None];
        assert_eq!(output_lines(&iface, &outs), ["OUTPUT_result = -3"]);
        assert_eq!(
            outputs_json(&iface, &outs),
            serde_json::json!({"OUTPUT_result": -3})
        );
        assert_eq!(hidden_outputs(&iface, &outs), ["OUTPUT_A_secret"]);
    }
}
