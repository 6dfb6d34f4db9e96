//! Loading the circuit a command names: a Bristol file or a built-in circuit.

use std::path::Path;

use anyhow::{Context, Result, bail};
use pgc_circuit::analysis::{assign_slots, levelize};
use pgc_circuit::bristol::{Format, read_circuit_file};
use pgc_circuit::generate::RandomLayered;
use pgc_circuit::value::BitOrder;
use pgc_circuit::{Circuit, Gate, GateSource, Layout, builder};
use pgc_protocol::Party;

/// A circuit ready to run: held in memory, or generated gate by gate as it is consumed.
pub enum Loaded {
    Memory(Circuit),
    Generated(RandomLayered),
}

impl GateSource for Loaded {
    fn layout(&self) -> &Layout {
        match self {
            Loaded::Memory(c) => c.layout(),
            Loaded::Generated(g) => g.layout(),
        }
    }
    fn gate_count(&self) -> u64 {
        match self {
            Loaded::Memory(c) => c.gate_count(),
            Loaded::Generated(g) => g.gate_count(),
        }
    }
    fn and_count(&self) -> u64 {
        match self {
            Loaded::Memory(c) => GateSource::and_count(c),
            Loaded::Generated(g) => g.and_count(),
        }
    }
    fn fingerprint(&self) -> [u8; 32] {
        match self {
            Loaded::Memory(c) => c.fingerprint(),
            Loaded::Generated(g) => g.fingerprint(),
        }
    }
    fn for_each_chunk<E>(&self, f: &mut dyn FnMut(&[Gate]) -> Result<(), E>) -> Result<(), E> {
        match self {
            Loaded::Memory(c) => c.for_each_chunk(f),
            Loaded::Generated(g) => g.for_each_chunk(f),
        }
    }
}

/// The names `builtin:NAME` accepts, for help and errors.
pub const BUILTINS: &str = "builtin:millionaires (32-bit, A's value > B's value), \
    builtin:aes128 (input 0 key, input 1 plaintext), builtin:random:WIDTHxDEPTH (generated \
    layered circuit, WIDTH ANDs per level)";

/// Reads a circuit file or builds a built-in circuit, as given (file order, no rewriting).
pub fn load_raw(spec: &str, format: Option<Format>) -> Result<Loaded> {
    if let Some(name) = spec.strip_prefix("builtin:") {
        return builtin(name);
    }
    let path = Path::new(spec);
    let c = read_circuit_file(path, format)?;
    Ok(Loaded::Memory(c))
}

/// Loads a circuit prepared for garbling: AND gates grouped by level (so they are garbled in
/// batches) and wires packed into reusable slots (so label memory is the peak live wires).
pub fn load_for_run(spec: &str, format: Option<Format>) -> Result<Loaded> {
    Ok(match load_raw(spec, format)? {
        Loaded::Memory(c) => {
            let leveled = levelize(&c).with_context(|| format!("preparing {spec}"))?;
            Loaded::Memory(assign_slots(&leveled))
        }
        g => g,
    })
}

fn builtin(name: &str) -> Result<Loaded> {
    if let Some(dims) = name.strip_prefix("random:") {
        let parse = || -> Option<(u32, u32)> {
            let (w, d) = dims.split_once('x')?;
            Some((w.parse().ok()?, d.parse().ok()?))
        };
        let Some((width, depth)) = parse().filter(|&(w, d)| w > 0 && d > 0) else {
            bail!(
                "builtin:random:{dims}: expected WIDTHxDEPTH with positive numbers, e.g. builtin:random:4096x1000"
            );
        };
        return Ok(Loaded::Generated(RandomLayered::new(width, depth, 1)?));
    }
    Ok(Loaded::Memory(match name {
        "millionaires" => builder::millionaires_circuit(32),
        "aes128" => builder::aes::aes128_circuit(),
        _ => bail!("unknown built-in circuit '{name}'; there are {BUILTINS}"),
    }))
}

/// Owner of each input value: `--inputs-of-a` if given, else value 0 is A's and the rest B's.
pub fn owners(layout: &Layout, inputs_of_a: Option<&[usize]>) -> Result<Vec<Party>> {
    let n = layout.input_widths.len();
    let mut owners = vec![Party::B; n];
    match inputs_of_a {
        None => {
            if n > 0 {
                owners[0] = Party::A;
            }
        }
        Some(list) => {
            for &i in list {
                if i >= n {
                    bail!(
                        "--inputs-of-a names input value {i}, but the circuit has {n} input value(s) (numbered from 0)"
                    );
                }
                owners[i] = Party::A;
            }
        }
    }
    Ok(owners)
}

/// Parses input values given on the command line against the widths they must have.
pub fn parse_values(
    texts: &[String],
    widths: &[u32],
    order: BitOrder,
    who: &str,
) -> Result<Vec<Vec<bool>>> {
    if texts.len() != widths.len() {
        let list = widths
            .iter()
            .map(|w| format!("{w}"))
            .collect::<Vec<_>>()
            .join(", ");
        bail!(
            "{who} must give {} input value(s) (of {} bits), but {} were given",
            widths.len(),
            if list.is_empty() { "0".into() } else { list },
            texts.len()
        );
    }
    texts
        .iter()
        .zip(widths)
        .enumerate()
        .map(|(i, (t, &w))| {
            pgc_circuit::value::parse_value(t, w, order)
                .with_context(|| format!("{who}'s input value {}", i + 1))
        })
        .collect()
}
