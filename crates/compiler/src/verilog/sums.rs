//! Sums of many terms: trees of `$add`, `$sub` and `$neg` cells (with `$mul` cells feeding
//! them) whose intermediate results are used only by the next cell of the tree become one
//! multi-operand sum, computed by [`pgc_circuit::blocks::sum_of_products`] in one column
//! compression instead of a chain of carry-propagating adders. An accumulation loop such as
//! `count = count + x[i]` then costs what a population count costs, `acc + a * b` merges
//! the product's final adder with the accumulation, and under `--optimize depth` the depth
//! grows with the logarithm of the number of terms.
//!
//! Merging changes no result: a cell's output joins its reader's sum only where modular
//! arithmetic allows it, that is where the output is at least as wide as the sum at the top
//! of the tree (only its low bits matter), or where the cell's exact value always fits its
//! output width as the reader extends it (so extending the output equals extending each
//! term).

use std::collections::HashMap;

use super::json::{BitRef, Cell, Module, flag_set, param_uint};

/// Which sum cells are computed as part of a larger sum.
#[derive(Debug, Default)]
pub struct SumPlan {
    /// `absorbed[k]`: cell `k`'s result is computed only inside the sum of the cell it feeds.
    pub absorbed: Vec<bool>,
    /// (cell, operand port) → the absorbed cell whose terms that operand stands for.
    pub feeds: HashMap<(usize, &'static str), usize>,
}

/// Cells whose result is a sum of their operands' terms.
fn is_sum(kind: &str) -> bool {
    matches!(kind, "$add" | "$sub" | "$neg")
}

/// A cell's operand ports and whether each is subtracted.
pub fn operand_signs(kind: &str) -> &'static [(&'static str, bool)] {
    match kind {
        "$add" | "$mul" => &[("A", false), ("B", false)],
        "$sub" => &[("A", false), ("B", true)],
        "$neg" => &[("A", true)],
        _ => &[],
    }
}

/// Whether the cell extends its operands by sign (Yosys: both operands signed; for unary
/// cells, A).
pub fn signed(cell: &Cell) -> bool {
    let a = flag_set(cell.parameters.get("A_SIGNED"));
    if cell.kind == "$neg" {
        a
    } else {
        a && flag_set(cell.parameters.get("B_SIGNED"))
    }
}

fn width(cell: &Cell, param: &str) -> Option<usize> {
    param_uint(cell.parameters.get(param)?).and_then(|w| usize::try_from(w).ok())
}

/// The values a `width`-bit number can take; `None` if too wide to reason about.
fn range_of(width: usize, signed: bool) -> Option<(i128, i128)> {
    if width > 120 {
        return None;
    }
    Some(match (width, signed) {
        (0, _) => (0, 0),
        (w, false) => (0, (1i128 << w) - 1),
        (w, true) => (-(1i128 << (w - 1)), (1i128 << (w - 1)) - 1),
    })
}

/// Whether the exact (untruncated) value of cell `c` always fits its output as a reader
/// that extends by sign (`reader_signed`) or by zeros sees it.
fn exact(c: &Cell, reader_signed: bool) -> bool {
    let Some(yw) = width(c, "Y_WIDTH") else {
        return false;
    };
    let s = signed(c);
    let mut ranges = Vec::new();
    for (port, _) in operand_signs(&c.kind) {
        let w = match width(c, &format!("{port}_WIDTH")) {
            Some(w) if w <= yw => w,
            _ => return false,
        };
        match range_of(w, s) {
            Some(r) => ranges.push(r),
            None => return false,
        }
    }
    let value = match (c.kind.as_str(), ranges.as_slice()) {
        ("$add", [a, b]) => Some((a.0 + b.0, a.1 + b.1)),
        ("$sub", [a, b]) => Some((a.0 - b.1, a.1 - b.0)),
        ("$neg", [a]) => Some((-a.1, -a.0)),
        ("$mul", [a, b]) => {
            let corners = [a.0 * b.0, a.0 * b.1, a.1 * b.0, a.1 * b.1];
            Some((
                *corners.iter().min().expect("four"),
                *corners.iter().max().expect("four"),
            ))
        }
        _ => None,
    };
    match (value, range_of(yw, reader_signed)) {
        (Some((lo, hi)), Some((min, max))) => min <= lo && hi <= max,
        _ => false,
    }
}

/// Finds the sum trees of `module` (cells in `module.cells` order).
pub fn plan(module: &Module, outputs_of: &[&[&str]]) -> SumPlan {
    let cells = &module.cells.0;
    // How often each net is read, and by which (cell, port) first.
    let mut readers: HashMap<u64, (u32, usize, &str)> = HashMap::new();
    for (k, (_, cell)) in cells.iter().enumerate() {
        for (port, bits) in &cell.connections.0 {
            if outputs_of[k].contains(&port.as_str()) {
                continue;
            }
            for b in bits {
                if let BitRef::Net(n) = b {
                    readers.entry(*n).or_insert((0, k, port)).0 += 1;
                }
            }
        }
    }
    for (_, port) in &module.ports.0 {
        for b in &port.bits {
            if let BitRef::Net(n) = b {
                // A module output reads it: never merge it away.
                readers.entry(*n).or_insert((0, usize::MAX, "")).0 += 2;
            }
        }
    }
    // The one operand each sum-like cell's result feeds, if it feeds exactly one.
    let mut parent: Vec<Option<(usize, &'static str)>> = vec![None; cells.len()];
    for (k, (_, cell)) in cells.iter().enumerate() {
        if !is_sum(&cell.kind) && cell.kind != "$mul" {
            continue;
        }
        let Some(y) = cell.connections.get("Y") else {
            continue;
        };
        let Some(BitRef::Net(first)) = y.first() else {
            continue;
        };
        let Some(&(_, p, port)) = readers.get(first) else {
            continue;
        };
        if p == usize::MAX || p == k || !is_sum(&cells[p].1.kind) {
            continue;
        }
        let Some(&(port, _)) = operand_signs(&cells[p].1.kind)
            .iter()
            .find(|(q, _)| *q == port)
        else {
            continue;
        };
        let only_reader = y.iter().all(|b| match b {
            BitRef::Net(n) => readers.get(n).is_some_and(|r| r.0 == 1),
            BitRef::Const(_) => false,
        });
        if only_reader && cells[p].1.connections.get(port) == Some(y) {
            parent[k] = Some((p, port));
        }
    }
    let mut children: HashMap<(usize, &'static str), usize> = HashMap::new();
    for (k, p) in parent.iter().enumerate() {
        if let Some(p) = p {
            children.insert(*p, k);
        }
    }
    // From each root (a sum no other sum reads) down, absorb what modular arithmetic allows
    // at the root's width; a sum its reader refuses roots a tree of its own.
    let mut result = SumPlan {
        absorbed: vec![false; cells.len()],
        feeds: HashMap::new(),
    };
    let mut roots: Vec<usize> = (0..cells.len())
        .rev()
        .filter(|&k| is_sum(&cells[k].1.kind) && parent[k].is_none())
        .collect();
    while let Some(r) = roots.pop() {
        let Some(w_root) = width(&cells[r].1, "Y_WIDTH") else {
            continue;
        };
        let mut stack = vec![r];
        while let Some(k) = stack.pop() {
            let cell = &cells[k].1;
            let reader_signed = signed(cell);
            for &(port, _) in operand_signs(&cell.kind) {
                let Some(&c) = children.get(&(k, port)) else {
                    continue;
                };
                let child = &cells[c].1;
                let low_bits_only = width(child, "Y_WIDTH").is_some_and(|w| w >= w_root);
                if low_bits_only || exact(child, reader_signed) {
                    result.absorbed[c] = true;
                    result.feeds.insert((k, port), c);
                    if is_sum(&child.kind) {
                        stack.push(c);
                    }
                } else if is_sum(&child.kind) {
                    roots.push(c);
                }
            }
        }
    }
    result
}
