//! Yosys cells onto pgc's gates: each word-level cell becomes the AND-minimal (or, with
//! `--optimize depth`, low-depth) block of [`pgc_circuit::blocks`]; gate-level cells map one
//! to one.
//!
//! Semantics follow Yosys' reference models (`simlib.v` for word-level cells, `simcells.v`
//! for gate-level ones, as shipped with Yosys 0.23): operands are extended to the width the
//! Verilog expression has (the result's width for arithmetic and bitwise cells, the wider
//! operand for comparisons), by sign extension only when the cell's `A_SIGNED` (and
//! `B_SIGNED`, for binary cells) say so, and the result is truncated or zero-extended to
//! `Y_WIDTH`. Where Yosys' models give `x` (an out-of-range part select or memory address,
//! division by zero, a `$pmux` with several selects set), the circuit gives a defined value
//! that is one of the values `x` allows: zero for `x` bits, the building blocks' quotient
//! for division by zero, the XOR of the selected inputs for `$pmux` (which makes the
//! one-hot case free of ORs).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use pgc_circuit::blocks::{
    self, add, and_reduce, constant_word, decoder, eq, lt_signed, lt_unsigned, mul, mux_tree,
    mux_word, negate_if, not_word, or_reduce, sdivrem, sign_extend, sub, udivrem, xor_reduce,
    zero_extend,
};
use pgc_circuit::netlist::{Gates, Lit, NetBuilder};

use super::json::{BitRef, Cell, Module, flag_set, param_bits, param_int, param_uint, src_attr};
use super::sums::{self, SumPlan, operand_signs};
use crate::{CompileError, SourcePos};
use pgc_circuit::blocks::Addend;
use pgc_circuit::limits::group_digits as group;
use pgc_circuit::netlist::NetlistError;

/// Cells that hold state: a combinational circuit cannot have them.
const SEQUENTIAL: &[&str] = &[
    "$ff",
    "$dff",
    "$dffe",
    "$dffsr",
    "$dffsre",
    "$adff",
    "$adffe",
    "$aldff",
    "$aldffe",
    "$sdff",
    "$sdffe",
    "$sdffce",
    "$dlatch",
    "$adlatch",
    "$dlatchsr",
    "$sr",
    "$fsm",
];
const SEQUENTIAL_GATE_PREFIXES: &[&str] = &[
    "$_DFF", "$_SDFF", "$_DLATCH", "$_SR_", "$_FF_", "$_ALDFF", "$_DFFSR",
];

/// The output ports of a cell type pgc maps, or why it does not map it.
fn output_ports(kind: &str) -> Result<&'static [&'static str], String> {
    const Y: &[&str] = &["Y"];
    Ok(match kind {
        "$not" | "$pos" | "$neg" | "$and" | "$or" | "$xor" | "$xnor" | "$add" | "$sub" | "$mul"
        | "$div" | "$mod" | "$divfloor" | "$modfloor" | "$lt" | "$le" | "$gt" | "$ge" | "$eq"
        | "$ne" | "$eqx" | "$nex" | "$shl" | "$shr" | "$sshl" | "$sshr" | "$shift" | "$shiftx"
        | "$logic_not" | "$logic_and" | "$logic_or" | "$reduce_and" | "$reduce_or"
        | "$reduce_xor" | "$reduce_xnor" | "$reduce_bool" | "$mux" | "$pmux" | "$bmux"
        | "$demux" | "$slice" | "$concat" | "$lut" | "$sop" | "$bwmux" | "$bweqx" | "$buf" => Y,
        "$_BUF_" | "$_NOT_" | "$_AND_" | "$_NAND_" | "$_OR_" | "$_NOR_" | "$_XOR_" | "$_XNOR_"
        | "$_ANDNOT_" | "$_ORNOT_" | "$_MUX_" | "$_NMUX_" | "$_AOI3_" | "$_OAI3_" | "$_AOI4_"
        | "$_OAI4_" | "$_MUX4_" | "$_MUX8_" | "$_MUX16_" => Y,
        "$mem" | "$mem_v2" => &["RD_DATA"],
        // Scope markers of newer Yosys versions' `flatten`: no logic.
        "$scopeinfo" => &[],
        _ => return Err(unsupported_reason(kind)),
    })
}

fn unsupported_reason(kind: &str) -> String {
    if SEQUENTIAL.contains(&kind) || SEQUENTIAL_GATE_PREFIXES.iter().any(|p| kind.starts_with(p)) {
        format!(
            "`{kind}` is a flip-flop or latch, but pgc circuits are combinational (one \
             evaluation: no clocks, no state). A latch comes from an always block that leaves \
             a signal unassigned on some path"
        )
    } else if kind.starts_with("$mem") {
        format!("`{kind}`: memories are supported as read-only tables (ROMs) only")
    } else if kind == "$tribuf" || kind == "$_TBUF_" {
        format!("`{kind}`: tri-state buffers are not supported")
    } else if kind == "$pow" {
        "`$pow` (`**`) is supported only where Yosys folds it to a constant or a shift \
         (constant operands, or a power of two as the base)"
            .to_string()
    } else if matches!(
        kind,
        "$assert" | "$assume" | "$live" | "$fair" | "$cover" | "$check" | "$print"
    ) || kind.starts_with("$any")
        || kind.starts_with("$all")
        || kind == "$initstate"
    {
        format!("`{kind}`: verification and simulation cells are not supported")
    } else if !kind.starts_with('$') {
        format!(
            "an instance of module `{kind}`, which Yosys could not flatten (a blackbox or a \
             module without a definition)"
        )
    } else {
        format!("Yosys cell `{kind}` is not supported")
    }
}

/// Maps a flattened module's cells into `g`, given the literals of its input nets; returns
/// the literal of every net a cell drives (with the inputs').
pub struct Mapper<'a> {
    pub g: &'a mut NetBuilder,
    /// Literal of each net bit that has a value (inputs, cell outputs).
    nets: HashMap<u64, Lit>,
    rename: &'a dyn Fn(&str) -> String,
    sums: SumPlan,
    /// Most gates the design may make ([`crate::Options::gate_budget`]); `g` stops there.
    budget: Option<u64>,
    /// Where the gates made so far are reported after each cell.
    progress: Option<Arc<crate::Progress>>,
    /// What [`Mapper::afford`] refused the current cell for, for the error.
    refused: Option<String>,
}

type CellResult<T> = Result<T, String>;

/// How much larger than the gate budget left a block may be before it is refused unbuilt
/// ([`Mapper::afford`]): sizes count partial products, which structural hashing may share
/// (a word of repeated bits), so a block somewhat larger may still fit; past the budget the
/// gates fold away, so building it costs time only.
const AFFORD_FACTOR: u64 = 4;

impl<'a> Mapper<'a> {
    /// A mapper into `g` that stops once `budget` gates are made (see
    /// [`crate::Options::gate_budget`]) and reports the gates made to `progress`.
    pub fn new(
        g: &'a mut NetBuilder,
        rename: &'a dyn Fn(&str) -> String,
        budget: Option<u64>,
        progress: Option<Arc<crate::Progress>>,
    ) -> Mapper<'a> {
        g.set_gate_limit(budget);
        Mapper {
            g,
            nets: HashMap::new(),
            rename,
            sums: SumPlan::default(),
            budget,
            progress,
            refused: None,
        }
    }

    /// Sets the literal of net `net` (an input bit).
    pub fn set_net(&mut self, net: u64, lit: Lit) {
        self.nets.insert(net, lit);
    }

    pub fn has_net(&self, net: u64) -> bool {
        self.nets.contains_key(&net)
    }

    /// The literal of a connection bit: constants `x`/`z` and undriven nets read as 0.
    pub fn lit(&self, b: &BitRef) -> Lit {
        match b {
            BitRef::Net(n) => self.nets.get(n).copied().unwrap_or(Lit::FALSE),
            BitRef::Const(c) => Lit::constant(c == "1"),
        }
    }

    /// A cell's name with the file names in it renamed: Yosys names cells of expressions
    /// `$mul$FILE:LINE$N`, and FILE may be a temporary copy of the design.
    fn shown_name(&self, name: &str) -> String {
        name.split('$')
            .map(|part| match part.rsplit_once(':') {
                Some((file, line)) if !file.is_empty() => {
                    format!("{}:{line}", (self.rename)(file))
                }
                _ => part.to_string(),
            })
            .collect::<Vec<_>>()
            .join("$")
    }

    fn pos(&self, cell: &Cell) -> Option<SourcePos> {
        src_attr(&cell.attributes).and_then(|s| super::json::src_pos(s, self.rename))
    }

    /// Emits every cell of `module` in dependency order.
    pub fn map_cells(&mut self, module: &Module) -> Result<(), CompileError> {
        let cells = &module.cells.0;
        let err = |m: &Mapper, cell: &Cell, message: String| CompileError::Source {
            pos: m.pos(cell),
            message,
        };
        // Which cell drives each net; every net bit has at most one driver.
        let mut driver: HashMap<u64, usize> = HashMap::new();
        let mut outputs_of = Vec::with_capacity(cells.len());
        for (k, (name, cell)) in cells.iter().enumerate() {
            let outs = output_ports(&cell.kind).map_err(|m| err(self, cell, m))?;
            outputs_of.push(outs);
            for port in outs {
                for b in cell.connections.get(port).map_or(&[][..], |v| v.as_slice()) {
                    if let BitRef::Net(n) = b
                        && (driver.insert(*n, k).is_some() || self.nets.contains_key(n))
                    {
                        return Err(err(
                            self,
                            cell,
                            format!(
                                "a signal driven by cell `{name}` ({}) has another driver too",
                                cell.kind
                            ),
                        ));
                    }
                }
            }
        }
        self.sums = sums::plan(module, &outputs_of);
        // Kahn's algorithm over cell-to-cell edges.
        let mut users: Vec<Vec<usize>> = vec![Vec::new(); cells.len()];
        let mut pending = vec![0usize; cells.len()];
        for (k, (_, cell)) in cells.iter().enumerate() {
            let mut deps: Vec<usize> = cell
                .connections
                .0
                .iter()
                .filter(|(port, _)| !outputs_of[k].contains(&port.as_str()))
                .flat_map(|(_, bits)| bits.iter())
                .filter_map(|b| match b {
                    BitRef::Net(n) => driver.get(n).copied(),
                    BitRef::Const(_) => None,
                })
                .collect();
            deps.sort_unstable();
            deps.dedup();
            pending[k] = deps.len();
            for d in deps {
                users[d].push(k);
            }
        }
        let mut ready: Vec<usize> = (0..cells.len())
            .rev()
            .filter(|&k| pending[k] == 0)
            .collect();
        let mut done = 0;
        while let Some(k) = ready.pop() {
            let (name, cell) = &cells[k];
            let made_before = self.g.gates_emitted();
            let cell_err = |m: &mut Mapper, message: String| {
                let name = m.shown_name(name);
                match m.refused.take() {
                    Some(what) => m.over_budget(cell, &name, Some(what), made_before),
                    None => err(m, cell, format!("cell `{name}` ({}): {message}", cell.kind)),
                }
            };
            let outs = if self.sums.absorbed[k] {
                // Computed inside the sum it feeds.
                Vec::new()
            } else if operand_signs(&cell.kind)
                .iter()
                .any(|(port, _)| self.sums.feeds.contains_key(&(k, *port)))
            {
                match self.sum_tree(cells, k) {
                    Ok(y) => vec![y],
                    Err(m) => return Err(cell_err(self, m)),
                }
            } else {
                match self.eval(cell) {
                    Ok(outs) => outs,
                    Err(m) => return Err(cell_err(self, m)),
                }
            };
            if let Some(p) = &self.progress {
                p.gates.store(self.g.gates_emitted(), Ordering::Relaxed);
            }
            if matches!(self.g.error(), Some(NetlistError::GateLimit { .. })) {
                let name = self.shown_name(name);
                return Err(self.over_budget(cell, &name, None, made_before));
            }
            for (port, lits) in outputs_of[k].iter().zip(outs) {
                let bits = cell.connections.get(port).map_or(&[][..], |v| v.as_slice());
                for (b, l) in bits.iter().zip(lits) {
                    if let BitRef::Net(n) = b {
                        self.nets.insert(*n, l);
                    }
                }
            }
            done += 1;
            for &u in users[k].iter().rev() {
                pending[u] -= 1;
                if pending[u] == 0 {
                    ready.push(u);
                }
            }
        }
        if done < cells.len() {
            let (name, cell) = cells
                .iter()
                .zip(&pending)
                .find(|(_, p)| **p > 0)
                .map(|(c, _)| c)
                .expect("a cell is left");
            return Err(err(
                self,
                cell,
                format!(
                    "combinational loop: cell `{name}` ({}) depends on its own output",
                    cell.kind
                ),
            ));
        }
        Ok(())
    }

    /// Refuses a block of `size` (its partial products or bit steps: each at least a gate,
    /// but where operands repeat bits, structural hashing shares many) before it is built,
    /// where that is more than [`AFFORD_FACTOR`] times what the budget has left: quadratic
    /// blocks of words millions of bits wide would otherwise take hours to build even with
    /// every gate past the budget folded away. `what` says what `size` counts, for the
    /// error.
    fn afford(&mut self, size: u64, what: impl FnOnce() -> String) -> CellResult<()> {
        let Some(budget) = self.budget else {
            return Ok(());
        };
        let left = budget.saturating_sub(self.g.gates_emitted());
        if size > left.saturating_mul(AFFORD_FACTOR) {
            self.refused = Some(what());
            return Err(String::new());
        }
        Ok(())
    }

    /// The error for `cell`, which took the design past its gate budget after the cells
    /// before it made `before` gates; `refused` is what [`Mapper::afford`] refused it for,
    /// `None` where it went over while being built.
    fn over_budget(
        &self,
        cell: &Cell,
        name: &str,
        refused: Option<String>,
        before: u64,
    ) -> CompileError {
        let budget = self.budget.unwrap_or(u64::MAX);
        let kind = &cell.kind;
        let message = match refused {
            Some(what) => format!(
                "cell `{name}` ({kind}) {what}, too many for the {} gates left of the \
                 {} this compilation may make",
                group(budget.saturating_sub(before)),
                group(budget)
            ),
            None => format!(
                "cell `{name}` ({kind}) takes the design past the {} gates this \
                 compilation may make ({} made before it)",
                group(budget),
                group(before)
            ),
        };
        CompileError::CellOverBudget {
            pos: self.pos(cell),
            message,
            budget,
        }
    }

    // ---- Reading a cell ----

    fn param(&self, cell: &Cell, name: &str) -> CellResult<u64> {
        let v = cell
            .parameters
            .get(name)
            .ok_or_else(|| format!("parameter {name} is missing"))?;
        param_uint(v).ok_or_else(|| format!("parameter {name} is not a small integer"))
    }

    /// A width (or count) parameter of `cell`. Each describes bits of a port, so it cannot
    /// exceed the bits connected to the cell: a netlist that says otherwise would have the
    /// mapper build words of the declared width (a 2^27-bit product from 16-bit operands),
    /// so it is refused here, before anything of that size is made.
    fn width(&self, cell: &Cell, name: &str) -> CellResult<usize> {
        let w = self.param(cell, name)?;
        let connected: u64 = cell.connections.0.iter().map(|(_, b)| b.len() as u64).sum();
        // SIZE (a memory's word count) is bounded by the table limit where it is used.
        if name != "SIZE" && w > connected {
            return Err(format!(
                "parameter {name} is {w}, more than the {connected} bits connected to the cell"
            ));
        }
        usize::try_from(w).map_err(|_| format!("parameter {name} is too large"))
    }

    fn flag(&self, cell: &Cell, name: &str) -> bool {
        flag_set(cell.parameters.get(name))
    }

    /// Input port `port` of exactly `width` bits.
    fn input(&self, cell: &Cell, port: &str, width: usize) -> CellResult<Vec<Lit>> {
        let bits = cell
            .connections
            .get(port)
            .ok_or_else(|| format!("port {port} is not connected"))?;
        if bits.len() != width {
            return Err(format!(
                "port {port} has {} bits where the cell's parameters say {width}",
                bits.len()
            ));
        }
        Ok(bits.iter().map(|b| self.lit(b)).collect())
    }

    /// Input port `port`, its width given by parameter `width_param`.
    fn input_p(&self, cell: &Cell, port: &str, width_param: &str) -> CellResult<Vec<Lit>> {
        let w = self.width(cell, width_param)?;
        self.input(cell, port, w)
    }

    fn bit(&self, cell: &Cell, port: &str) -> CellResult<Lit> {
        Ok(self.input(cell, port, 1)?[0])
    }

    fn out_width(&self, cell: &Cell, port: &str) -> usize {
        cell.connections.get(port).map_or(0, |v| v.len())
    }

    // ---- Evaluating a cell ----

    /// The sum tree rooted at cell `root` (see [`sums`]) as one multi-operand sum.
    fn sum_tree(&mut self, cells: &[(String, Cell)], root: usize) -> CellResult<Vec<Lit>> {
        let width = self.width(&cells[root].1, "Y_WIDTH")?;
        let mut addends = Vec::new();
        let mut stack = vec![(root, false)];
        while let Some((k, subtract)) = stack.pop() {
            let cell = &cells[k].1;
            let signed = sums::signed(cell);
            if cell.kind == "$mul" {
                let a = self.input_p(cell, "A", "A_WIDTH")?;
                let b = self.input_p(cell, "B", "B_WIDTH")?;
                let (a, b) = (extend(&a, width, signed), extend(&b, width, signed));
                addends.push((Addend::Product(a, b), subtract));
                continue;
            }
            for &(port, negative) in operand_signs(&cell.kind) {
                match self.sums.feeds.get(&(k, port)) {
                    Some(&child) => stack.push((child, subtract ^ negative)),
                    None => {
                        let x = self.input_p(cell, port, &format!("{port}_WIDTH"))?;
                        addends
                            .push((Addend::Word(extend(&x, width, signed)), subtract ^ negative));
                    }
                }
            }
        }
        let n: u64 = addends
            .iter()
            .map(|(x, _)| match x {
                Addend::Product(a, b) => partial_products(a, b, width),
                Addend::Word(_) => 0,
            })
            .fold(0, u64::saturating_add);
        self.afford(n, || {
            format!(
                "sums products of {width}-bit words: {} partial products",
                group(n)
            )
        })?;
        Ok(blocks::sum_of_products(self.g, &addends, width))
    }

    /// The literals of the cell's output ports, in [`output_ports`] order.
    fn eval(&mut self, cell: &Cell) -> CellResult<Vec<Vec<Lit>>> {
        let kind = cell.kind.as_str();
        if kind.starts_with("$_") {
            return Ok(vec![vec![self.gate(cell)?]]);
        }
        let y = match kind {
            "$not" | "$pos" | "$neg" => {
                let yw = self.width(cell, "Y_WIDTH")?;
                let a = self.input_p(cell, "A", "A_WIDTH")?;
                let a = extend(&a, yw, self.flag(cell, "A_SIGNED"));
                match kind {
                    "$not" => not_word(&a),
                    "$pos" => a,
                    _ => blocks::neg(self.g, &a),
                }
            }
            "$and" | "$or" | "$xor" | "$xnor" | "$add" | "$sub" | "$mul" => {
                let yw = self.width(cell, "Y_WIDTH")?;
                let (a, b) = self.operands(cell, yw)?;
                if kind == "$mul" {
                    let n = partial_products(&a, &b, yw);
                    let (aw, bw) = (self.width(cell, "A_WIDTH")?, self.width(cell, "B_WIDTH")?);
                    self.afford(n, || {
                        format!("multiplies {aw} × {bw} bits: {} partial products", group(n))
                    })?;
                }
                let g = &mut *self.g;
                match kind {
                    "$and" => blocks::and_word(g, &a, &b),
                    "$or" => blocks::or_word(g, &a, &b),
                    "$xor" => blocks::xor_word(g, &a, &b),
                    "$xnor" => not_word(&blocks::xor_word(g, &a, &b)),
                    "$add" => add(g, &a, &b),
                    "$sub" => sub(g, &a, &b),
                    _ => mul(g, &a, &b),
                }
            }
            "$div" | "$mod" | "$divfloor" | "$modfloor" => self.division(cell)?,
            "$lt" | "$le" | "$gt" | "$ge" | "$eq" | "$ne" | "$eqx" | "$nex" => {
                let (aw, bw) = (self.width(cell, "A_WIDTH")?, self.width(cell, "B_WIDTH")?);
                let (a, b) = self.operands(cell, aw.max(bw))?;
                let signed = self.flag(cell, "A_SIGNED") && self.flag(cell, "B_SIGNED");
                let g = &mut *self.g;
                let lt = |g: &mut NetBuilder, x: &[Lit], y: &[Lit]| {
                    if signed {
                        lt_signed(g, x, y)
                    } else {
                        lt_unsigned(g, x, y)
                    }
                };
                let r = match kind {
                    "$lt" => lt(g, &a, &b),
                    "$le" => !lt(g, &b, &a),
                    "$gt" => lt(g, &b, &a),
                    "$ge" => !lt(g, &a, &b),
                    "$eq" | "$eqx" => eq(g, &a, &b),
                    _ => !eq(g, &a, &b),
                };
                self.boolean(cell, r)?
            }
            "$logic_not" | "$reduce_and" | "$reduce_or" | "$reduce_bool" | "$reduce_xor"
            | "$reduce_xnor" => {
                let a = self.input_p(cell, "A", "A_WIDTH")?;
                let g = &mut *self.g;
                let r = match kind {
                    "$logic_not" => !or_reduce(g, &a),
                    "$reduce_and" => and_reduce(g, &a),
                    "$reduce_or" | "$reduce_bool" => or_reduce(g, &a),
                    "$reduce_xor" => xor_reduce(g, &a),
                    _ => !xor_reduce(g, &a),
                };
                self.boolean(cell, r)?
            }
            "$logic_and" | "$logic_or" => {
                let a = self.input_p(cell, "A", "A_WIDTH")?;
                let b = self.input_p(cell, "B", "B_WIDTH")?;
                let g = &mut *self.g;
                let (x, y) = (or_reduce(g, &a), or_reduce(g, &b));
                let r = if kind == "$logic_and" {
                    g.and(x, y)
                } else {
                    g.or(x, y)
                };
                self.boolean(cell, r)?
            }
            "$shl" | "$sshl" | "$shr" | "$sshr" | "$shift" | "$shiftx" => self.shift(cell)?,
            "$mux" => {
                let w = self.width(cell, "WIDTH")?;
                let a = self.input(cell, "A", w)?;
                let b = self.input(cell, "B", w)?;
                let s = self.bit(cell, "S")?;
                mux_word(self.g, s, &b, &a)
            }
            "$bwmux" => {
                let w = self.width(cell, "WIDTH")?;
                let a = self.input(cell, "A", w)?;
                let b = self.input(cell, "B", w)?;
                let s = self.input(cell, "S", w)?;
                (0..w).map(|i| self.g.mux(s[i], b[i], a[i])).collect()
            }
            "$bweqx" => {
                let w = self.width(cell, "WIDTH")?;
                let a = self.input(cell, "A", w)?;
                let b = self.input(cell, "B", w)?;
                not_word(&blocks::xor_word(self.g, &a, &b))
            }
            "$buf" => {
                let w = self.width(cell, "WIDTH")?;
                self.input(cell, "A", w)?
            }
            "$pmux" => self.pmux(cell)?,
            "$bmux" => {
                let w = self.width(cell, "WIDTH")?;
                let sw = self.width(cell, "S_WIDTH")?;
                let n = table_len(sw)?;
                let total = w.checked_mul(n).ok_or("too wide")?;
                let a = self.input(cell, "A", total)?;
                let s = self.input(cell, "S", sw)?;
                let elems: Vec<Vec<Lit>> = a.chunks(w.max(1)).map(<[Lit]>::to_vec).collect();
                if w == 0 {
                    Vec::new()
                } else if a.iter().all(|l| l.as_const().is_some()) {
                    let words: Vec<Vec<bool>> = elems
                        .iter()
                        .map(|e| e.iter().map(|l| l.as_const() == Some(true)).collect())
                        .collect();
                    blocks::table_lookup(self.g, &s, &words, w)
                } else {
                    mux_tree(self.g, &s, &elems)
                }
            }
            "$demux" => {
                let w = self.width(cell, "WIDTH")?;
                let sw = self.width(cell, "S_WIDTH")?;
                let n = table_len(sw)?;
                let a = self.input(cell, "A", w)?;
                let s = self.input(cell, "S", sw)?;
                let sel = decoder(self.g, &s, n);
                let mut y = Vec::with_capacity(w * n);
                for &hit in &sel {
                    for &x in &a {
                        y.push(self.g.and(hit, x));
                    }
                }
                y
            }
            "$slice" => {
                let offset = self.width(cell, "OFFSET")?;
                let yw = self.width(cell, "Y_WIDTH")?;
                let a = self.input_p(cell, "A", "A_WIDTH")?;
                (0..yw)
                    .map(|i| {
                        offset
                            .checked_add(i)
                            .and_then(|j| a.get(j).copied())
                            .unwrap_or(Lit::FALSE)
                    })
                    .collect()
            }
            "$concat" => {
                let mut a = self.input_p(cell, "A", "A_WIDTH")?;
                a.extend(self.input_p(cell, "B", "B_WIDTH")?);
                a
            }
            "$lut" => {
                let w = self.width(cell, "WIDTH")?;
                let n = table_len(w)?;
                let a = self.input(cell, "A", w)?;
                let table = cell
                    .parameters
                    .get("LUT")
                    .and_then(param_bits)
                    .ok_or("parameter LUT is missing")?;
                let words: Vec<Vec<bool>> = (0..n)
                    .map(|i| vec![table.get(i).copied().unwrap_or(false)])
                    .collect();
                blocks::table_lookup(self.g, &a, &words, 1)
            }
            "$sop" => {
                let w = self.width(cell, "WIDTH")?;
                let depth = self.width(cell, "DEPTH")?;
                let a = self.input(cell, "A", w)?;
                let table = cell
                    .parameters
                    .get("TABLE")
                    .and_then(param_bits)
                    .ok_or("parameter TABLE is missing")?;
                if depth.checked_mul(2 * w).is_none_or(|n| n > table.len()) {
                    return Err("parameter TABLE is shorter than DEPTH terms".into());
                }
                let mut any = Lit::FALSE;
                for term in 0..depth {
                    let mut lits = Vec::new();
                    for (j, &x) in a.iter().enumerate() {
                        let base = 2 * w * term + 2 * j;
                        if table[base] {
                            lits.push(!x);
                        }
                        if table[base + 1] {
                            lits.push(x);
                        }
                    }
                    let m = and_reduce(self.g, &lits);
                    any = self.g.or(any, m);
                }
                vec![any]
            }
            "$mem" | "$mem_v2" => self.rom(cell)?,
            "$scopeinfo" => return Ok(Vec::new()),
            _ => return Err(unsupported_reason(kind)),
        };
        let yw = self.out_width(cell, "Y");
        if kind != "$mem" && kind != "$mem_v2" && y.len() != yw {
            return Err(format!(
                "port Y has {yw} bits where the cell's parameters say {}",
                y.len()
            ));
        }
        Ok(vec![y])
    }

    /// A and B extended to `width` (by sign only when both are signed, as Verilog does).
    fn operands(&self, cell: &Cell, width: usize) -> CellResult<(Vec<Lit>, Vec<Lit>)> {
        let signed = self.flag(cell, "A_SIGNED") && self.flag(cell, "B_SIGNED");
        let a = self.input_p(cell, "A", "A_WIDTH")?;
        let b = self.input_p(cell, "B", "B_WIDTH")?;
        Ok((extend(&a, width, signed), extend(&b, width, signed)))
    }

    /// A one-bit result zero-extended to `Y_WIDTH`.
    fn boolean(&self, cell: &Cell, r: Lit) -> CellResult<Vec<Lit>> {
        let yw = self.width(cell, "Y_WIDTH")?;
        Ok(zero_extend(&[r], yw))
    }

    fn division(&mut self, cell: &Cell) -> CellResult<Vec<Lit>> {
        let kind = cell.kind.as_str();
        let (aw, bw) = (self.width(cell, "A_WIDTH")?, self.width(cell, "B_WIDTH")?);
        let yw = self.width(cell, "Y_WIDTH")?;
        let w = aw.max(bw).max(yw);
        let signed = self.flag(cell, "A_SIGNED") && self.flag(cell, "B_SIGNED");
        let (a, b) = self.operands(cell, w)?;
        let n = division_steps(&a, &b);
        self.afford(n, || {
            format!(
                "divides {aw} by {bw} bits: {} bit steps of subtract-and-select",
                group(n)
            )
        })?;
        let g = &mut *self.g;
        let (q, r) = if signed {
            sdivrem(g, &a, &b)
        } else {
            udivrem(g, &a, &b)
        };
        let y = match kind {
            "$div" => q,
            "$mod" => r,
            _ if !signed => {
                if kind == "$divfloor" {
                    q
                } else {
                    r
                }
            }
            _ => {
                // Floor differs from truncation where the remainder is nonzero and the
                // operands' signs differ: the quotient is one less, the remainder b more.
                let (sa, sb) = (a.last().copied(), b.last().copied());
                let (Some(sa), Some(sb)) = (sa, sb) else {
                    return Ok(zero_extend(&[], yw));
                };
                let differ = g.xor(sa, sb);
                let nonzero = or_reduce(g, &r);
                let adjust = g.and(differ, nonzero);
                if kind == "$divfloor" {
                    let minus_one = vec![adjust; w];
                    add(g, &q, &minus_one)
                } else {
                    let bb: Vec<Lit> = b.iter().map(|&x| g.and(adjust, x)).collect();
                    add(g, &r, &bb)
                }
            }
        };
        Ok(extend(&y, yw, false))
    }

    fn shift(&mut self, cell: &Cell) -> CellResult<Vec<Lit>> {
        let kind = cell.kind.as_str();
        let yw = self.width(cell, "Y_WIDTH")?;
        let a = self.input_p(cell, "A", "A_WIDTH")?;
        let b = self.input_p(cell, "B", "B_WIDTH")?;
        // The left operand takes the width of the expression (the wider of A and Y), by sign
        // extension if it is signed; `$shiftx` reads `x` (here 0) past A's end.
        let w = a.len().max(yw);
        let a_signed = self.flag(cell, "A_SIGNED") && kind != "$shiftx";
        let ext = extend(&a, w, a_signed);
        let b_signed = self.flag(cell, "B_SIGNED");
        // A stage per amount bit below the width (the higher ones share one multiplexer).
        let stages = b
            .iter()
            .take((usize::BITS - w.leading_zeros()) as usize)
            .filter(|l| l.as_const().is_none())
            .count();
        let n = (w as u64).saturating_mul(stages as u64);
        self.afford(n, || {
            format!(
                "shifts {w} bits in {stages} stages: {} multiplexers",
                group(n)
            )
        })?;
        let g = &mut *self.g;
        let y = match kind {
            "$shl" | "$sshl" => shift_word(g, &ext, &b, true, Lit::FALSE),
            "$shr" => shift_word(g, &ext, &b, false, Lit::FALSE),
            "$sshr" => {
                let fill = if a_signed {
                    ext.last().copied().unwrap_or(Lit::FALSE)
                } else {
                    Lit::FALSE
                };
                shift_word(g, &ext, &b, false, fill)
            }
            // `$shift`, `$shiftx`: right by B, or left by -B where B is signed and negative.
            _ if b_signed && !b.is_empty() => {
                let negative = *b.last().expect("non-empty");
                let magnitude = negate_if(g, negative, &b);
                let right = shift_word(g, &ext, &magnitude, false, Lit::FALSE);
                let left = shift_word(g, &ext, &magnitude, true, Lit::FALSE);
                mux_word(g, negative, &left, &right)
            }
            _ => shift_word(g, &ext, &b, false, Lit::FALSE),
        };
        Ok(zero_extend(&y, yw))
    }

    /// `$pmux`: B's slice `i` where `S[i]` is set, A where none is. Yosys leaves several set
    /// selects undefined, so the slices are XORed (free) instead of ORed.
    fn pmux(&mut self, cell: &Cell) -> CellResult<Vec<Lit>> {
        let w = self.width(cell, "WIDTH")?;
        let sw = self.width(cell, "S_WIDTH")?;
        let a = self.input(cell, "A", w)?;
        let b = self.input(cell, "B", w.checked_mul(sw).ok_or("too wide")?)?;
        let s = self.input(cell, "S", sw)?;
        let g = &mut *self.g;
        let any = or_reduce(g, &s);
        let mut y: Vec<Lit> = a.iter().map(|&x| g.and(!any, x)).collect();
        for (i, &sel) in s.iter().enumerate() {
            for (j, yj) in y.iter_mut().enumerate() {
                let t = g.and(sel, b[i * w + j]);
                *yj = g.xor(*yj, t);
            }
        }
        Ok(y)
    }

    /// A memory without write ports: each asynchronous read port reads the table `INIT`.
    fn rom(&mut self, cell: &Cell) -> CellResult<Vec<Lit>> {
        let id = cell
            .parameters
            .get("MEMID")
            .and_then(|v| v.as_str())
            .unwrap_or("?")
            .trim_start_matches('\\')
            .to_string();
        let refuse = |why: &str| {
            Err(format!(
                "memory `{id}` {why}: pgc supports memories only as read-only tables \
                 (ROMs) read without a clock"
            ))
        };
        if self.param(cell, "WR_PORTS")? != 0 {
            return refuse("is written to");
        }
        let ports = self.width(cell, "RD_PORTS")?;
        let clocked = cell
            .parameters
            .get("RD_CLK_ENABLE")
            .and_then(param_bits)
            .is_some_and(|b| b.iter().any(|&x| x));
        if clocked {
            return refuse("is read on a clock edge");
        }
        if cell
            .parameters
            .get("RD_WIDE_CONTINUATION")
            .and_then(param_bits)
            .is_some_and(|b| b.iter().any(|&x| x))
        {
            return refuse("has wide read ports");
        }
        for reset in ["RD_ARST", "RD_SRST"] {
            if let Some(bits) = cell.connections.get(reset)
                && bits.iter().any(|b| self.lit(b) != Lit::FALSE)
            {
                return refuse("has a read port with a reset");
            }
        }
        let width = self.width(cell, "WIDTH")?;
        let abits = self.width(cell, "ABITS")?;
        let size = self.width(cell, "SIZE")?;
        let offset = cell
            .parameters
            .get("OFFSET")
            .and_then(param_int)
            .unwrap_or(0);
        if size > MAX_TABLE {
            return refuse(&format!("has {size} words (more than {MAX_TABLE})"));
        }
        let init = cell
            .parameters
            .get("INIT")
            .and_then(param_bits)
            .unwrap_or_default();
        let words: Vec<Vec<bool>> = (0..size)
            .map(|k| {
                (0..width)
                    .map(|j| init.get(k * width + j).copied().unwrap_or(false))
                    .collect()
            })
            .collect();
        let addrs = self.input(cell, "RD_ADDR", ports.checked_mul(abits).ok_or("too wide")?)?;
        let mut data = Vec::with_capacity(ports * width);
        for p in 0..ports {
            let mut addr = addrs[p * abits..(p + 1) * abits].to_vec();
            if offset != 0 {
                let off = constant_word(offset as u128, abits);
                addr = sub(self.g, &addr, &off);
            }
            data.extend(blocks::table_lookup(self.g, &addr, &words, width));
        }
        if data.len() != self.out_width(cell, "RD_DATA") {
            return Err("port RD_DATA does not match RD_PORTS * WIDTH".into());
        }
        Ok(data)
    }

    /// A gate-level cell (`$_AND_` …, Yosys' `simcells.v`).
    fn gate(&mut self, cell: &Cell) -> CellResult<Lit> {
        let kind = cell.kind.as_str();
        let p = |m: &Self, port: &str| m.bit(cell, port);
        Ok(match kind {
            "$_BUF_" => p(self, "A")?,
            "$_NOT_" => !p(self, "A")?,
            "$_AND_" | "$_NAND_" | "$_OR_" | "$_NOR_" | "$_XOR_" | "$_XNOR_" | "$_ANDNOT_"
            | "$_ORNOT_" => {
                let (a, b) = (p(self, "A")?, p(self, "B")?);
                let g = &mut *self.g;
                match kind {
                    "$_AND_" => g.and(a, b),
                    "$_NAND_" => !g.and(a, b),
                    "$_OR_" => g.or(a, b),
                    "$_NOR_" => !g.or(a, b),
                    "$_XOR_" => g.xor(a, b),
                    "$_XNOR_" => !g.xor(a, b),
                    "$_ANDNOT_" => g.and(a, !b),
                    _ => g.or(a, !b),
                }
            }
            "$_MUX_" | "$_NMUX_" => {
                let (a, b, s) = (p(self, "A")?, p(self, "B")?, p(self, "S")?);
                let y = self.g.mux(s, b, a);
                if kind == "$_NMUX_" { !y } else { y }
            }
            "$_AOI3_" | "$_OAI3_" => {
                let (a, b, c) = (p(self, "A")?, p(self, "B")?, p(self, "C")?);
                let g = &mut *self.g;
                if kind == "$_AOI3_" {
                    let ab = g.and(a, b);
                    !g.or(ab, c)
                } else {
                    let ab = g.or(a, b);
                    !g.and(ab, c)
                }
            }
            "$_AOI4_" | "$_OAI4_" => {
                let (a, b) = (p(self, "A")?, p(self, "B")?);
                let (c, d) = (p(self, "C")?, p(self, "D")?);
                let g = &mut *self.g;
                if kind == "$_AOI4_" {
                    let (ab, cd) = (g.and(a, b), g.and(c, d));
                    !g.or(ab, cd)
                } else {
                    let (ab, cd) = (g.or(a, b), g.or(c, d));
                    !g.and(ab, cd)
                }
            }
            "$_MUX4_" | "$_MUX8_" | "$_MUX16_" => {
                let (n, sels): (usize, &[&str]) = match kind {
                    "$_MUX4_" => (4, &["S", "T"]),
                    "$_MUX8_" => (8, &["S", "T", "U"]),
                    _ => (16, &["S", "T", "U", "V"]),
                };
                let data: Vec<Vec<Lit>> = (0..n)
                    .map(|i| {
                        let port = ((b'A' + i as u8) as char).to_string();
                        p(self, &port).map(|l| vec![l])
                    })
                    .collect::<CellResult<_>>()?;
                let index: Vec<Lit> = sels.iter().map(|s| p(self, s)).collect::<CellResult<_>>()?;
                mux_tree(self.g, &index, &data)[0]
            }
            _ => return Err(unsupported_reason(kind)),
        })
    }
}

/// Most words a table (ROM, LUT, `$bmux`, `$demux`) may have: its decoder has that many ANDs.
const MAX_TABLE: usize = 1 << 24;

fn table_len(select_bits: usize) -> CellResult<usize> {
    if select_bits >= usize::BITS as usize || (1usize << select_bits) > MAX_TABLE {
        return Err(format!(
            "a table of 2^{select_bits} entries is too large (at most {MAX_TABLE})"
        ));
    }
    Ok(1 << select_bits)
}

/// The partial products of the `width`-bit truncated product of `a` and `b` that are not
/// constant zero, as [`blocks::mul`] forms them: a sign-extended operand counts only its
/// significant bits (its extension costs a row of its own), a constant one of at most 128
/// bits only its signed digits (at most its set bits, so this is counted as 0: the block
/// is linear in `width`).
fn partial_products(a: &[Lit], b: &[Lit], width: usize) -> u64 {
    let constant = |x: &[Lit]| x.iter().all(|l| l.as_const().is_some());
    if (constant(a) && a.len() <= 128) || (constant(b) && b.len() <= 128) {
        return 0;
    }
    let significant = |x: &[Lit]| {
        let x = &x[..x.len().min(width)];
        let mut m = x.len();
        while m > 1 && x[m - 2] == x[m - 1] {
            m -= 1;
        }
        x[..m].to_vec()
    };
    let (a, b) = (significant(a), significant(b));
    // below[k]: b's bits below k that are not constant zero.
    let mut below = Vec::with_capacity(b.len() + 1);
    below.push(0u64);
    for l in &b {
        below.push(below.last().expect("non-empty") + u64::from(*l != Lit::FALSE));
    }
    a.iter()
        .enumerate()
        .filter(|(_, l)| **l != Lit::FALSE)
        .map(|(i, _)| below[(width - i).min(b.len())])
        .fold(0, u64::saturating_add)
}

/// The bit steps of [`blocks::udivrem`] on `a` and `b` (a subtract-and-select per bit of
/// the partial remainder, which is as wide as `b` reaches, per bit of `a` below its
/// constant-zero top).
fn division_steps(a: &[Lit], b: &[Lit]) -> u64 {
    let top = |x: &[Lit]| {
        x.iter()
            .rposition(|&l| l != Lit::FALSE)
            .map_or(0, |p| p + 1)
    };
    let (n, cap) = (top(a) as u64, top(b) as u64);
    // Step t works on min(t + 1, cap) bits.
    let ramp = n.min(cap);
    (ramp * (ramp + 1) / 2).saturating_add((n - ramp).saturating_mul(cap))
}

fn extend(a: &[Lit], width: usize, signed: bool) -> Vec<Lit> {
    if signed {
        sign_extend(a, width)
    } else {
        zero_extend(a, width)
    }
}

/// `a` shifted by the unsigned `amount` (any width), `fill` shifted in; an amount of
/// `a.len()` or more leaves only fill. (Verilog does not reduce the amount modulo the width
/// as C's blocks do, so this is not [`blocks::shl`].) A barrel shifter over the amount's low
/// bits, plus one multiplexer per bit for all of its high bits together.
fn shift_word<G: Gates + ?Sized>(
    g: &mut G,
    a: &[Lit],
    amount: &[Lit],
    left: bool,
    fill: Lit,
) -> Vec<Lit> {
    let n = a.len();
    let mut v = a.to_vec();
    let mut too_far = Vec::new();
    for (s, &sel) in amount.iter().enumerate() {
        if s >= usize::BITS as usize - 1 || (1usize << s) >= n {
            too_far.push(sel);
            continue;
        }
        let dist = 1usize << s;
        v = (0..n)
            .map(|i| {
                let moved = if left {
                    if i >= dist { v[i - dist] } else { Lit::FALSE }
                } else if i + dist < n {
                    v[i + dist]
                } else {
                    fill
                };
                g.mux(sel, moved, v[i])
            })
            .collect();
    }
    let out_of_range = or_reduce(g, &too_far);
    v.iter().map(|&x| g.mux(out_of_range, fill, x)).collect()
}
