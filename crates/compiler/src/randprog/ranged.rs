//! Random dynamic-programming programs for the value-range analysis (test support, hidden
//! from docs).
//!
//! [`generate`] makes a program that fills a two-dimensional table of integer cells in a
//! bounded double loop, each cell from its neighbours, the loop counters, the inputs
//! (masked, reduced, compared or raw) and small constants: through `+ - * / % & >>`,
//! comparisons, `?:`, min/max updates under secret conditions (`if (e < v) v = e;`, also
//! spelled `<=`, `v > e`, … and as `e < v ? e : v`; the range analysis bounds them by the
//! smaller bound),
//! compound assignments, and reads and writes at secret indices. Half the programs are
//! *tame* (only operations that keep cells small and non-negative, so most of their
//! arithmetic narrows); the others also multiply, subtract below zero, shift
//! negative values, truncate to narrow types or overflow (wrapping, as gcc's `-fwrapv` has
//! it), so unsound narrowing would show as a disagreement with gcc. The outer loop's body
//! may run its inner loop over a triangle (`j <= i`), under a secret condition, or add a
//! constant table's entry to each cell: nests whose rows the compiler stores once. In a
//! third of the programs a row is a function (`{prefix}_row`, taking the previous and the
//! current row, the row's index and the inputs by pointer) called once per row of 17 to 22:
//! the compiler stores it once per shape, keyed by its integers' bounds, exact and then
//! rounded, and replays its bounds per call (`crate::compact`).
//!
//! Free of undefined behaviour under `-fwrapv`: divisors and moduli are positive constants,
//! shift counts are constants below 4, indices are reduced into range as unsigned values.

use std::fmt::Write;

use super::{RandomProgram, Rng};
use pgc_circuit::{CType, InputPort, Interface, OutputPort, Owner, Visibility};

/// Integer types of cells and inputs: (spelling, bits, signed).
const TYPES: [(&str, u32, bool); 7] = [
    ("int", 32, true),
    ("unsigned", 32, false),
    ("short", 16, true),
    ("unsigned char", 8, false),
    ("char", 8, true),
    ("long long", 64, true),
    ("unsigned short", 16, false),
];

fn ctype(t: (&str, u32, bool)) -> CType {
    if t.0 == "char" {
        CType::CHAR
    } else {
        CType::int(t.1, t.2)
    }
}

struct Gen {
    rng: Rng,
    /// How min/max comparisons are spelled (strict or not, which operand first), drawn
    /// from a stream of its own so that the programs' structure stays that of the seed.
    spell: Rng,
    /// Only operations that keep values small and non-negative (so most of the program
    /// narrows): no `-`, `*`, `>>` of raw inputs, casts or raw inputs.
    tame: bool,
    cols: u32,
    out: String,
    /// Local scalars of the cell body, readable in expressions.
    locals: Vec<String>,
}

impl Gen {
    /// A small expression of some integer type, at the cell `(i, j)` of the loop.
    fn expr(&mut self, depth: u32) -> String {
        if depth == 0 || self.rng.percent(30) {
            return self.leaf();
        }
        let a = self.expr(depth - 1);
        let choice = if self.tame {
            *self.rng.pick(&[0, 1, 2, 3, 6, 7, 8, 10, 11, 11, 12])
        } else {
            self.rng.below(14)
        };
        match choice {
            0..=3 => format!("({a} + {})", self.expr(depth - 1)),
            4 => format!("({a} - {})", self.expr(depth - 1)),
            5 => format!("({a} * {})", self.leaf()),
            6 => format!("({a} / {})", 1 + self.rng.below(9)),
            7 => format!("({a} % {})", 1 + self.rng.below(9)),
            8 => format!("({a} & {})", self.rng.below(64)),
            9 => format!("({a} >> {})", self.rng.below(4)),
            10 => {
                let b = self.expr(depth - 1);
                let op = *self.rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
                format!("({a} {op} {b})")
            }
            11 => {
                let b = self.expr(depth - 1);
                let op = if self.rng.percent(50) { "<" } else { ">" };
                let (op, first, second) = self.spell_order(op, &a, &b);
                format!("({first} {op} {second} ? {a} : {b})")
            }
            12 => {
                let c = self.condition();
                format!("({c} ? {a} : {})", self.expr(depth - 1))
            }
            _ => {
                let t = *self.rng.pick(&TYPES);
                format!("(({}){a})", t.0)
            }
        }
    }

    /// A neighbour, counter, input, local or constant.
    fn leaf(&mut self) -> String {
        let choice = if self.tame {
            *self.rng.pick(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11])
        } else {
            self.rng.below(12)
        };
        match choice {
            0 => "t[i - 1][j]".into(),
            1 => "t[i][j - 1]".into(),
            2 => "t[i - 1][j - 1]".into(),
            3 => if self.rng.percent(50) { "i" } else { "j" }.into(),
            4 => format!("{}", self.rng.below(6)),
            5 => format!("(INPUT_A_a[i - 1] & {})", self.rng.below(32)),
            // Unsigned, so that the remainder is never negative.
            6 => format!("((unsigned)INPUT_B_b[j - 1] % {}u)", 1 + self.rng.below(7)),
            7 => "(INPUT_A_a[i - 1] == INPUT_B_b[j - 1])".into(),
            8 => "(INPUT_A_a[i - 1] < INPUT_B_b[j - 1])".into(),
            9 => if self.rng.percent(50) {
                "INPUT_A_a[i - 1]"
            } else {
                "INPUT_B_b[j - 1]"
            }
            .into(),
            10 => format!(
                "t[i - 1][(unsigned)INPUT_B_b[j - 1] % {}u]",
                1 + self.rng.below(self.cols as u64)
            ),
            _ => match self.locals.len() {
                0 => "t[i - 1][j]".into(),
                n => self.locals[self.rng.below(n as u64) as usize].clone(),
            },
        }
    }

    /// `a op b` (`op` is `<` or `>`) spelled one of four equivalent-order ways for a min or
    /// max: strict or not (equal operands choose either, the same value), and possibly
    /// mirrored (`b > a` for `a < b`). Returns the operator and the operands in order.
    fn spell_order<'s>(
        &mut self,
        op: &str,
        a: &'s str,
        b: &'s str,
    ) -> (&'static str, &'s str, &'s str) {
        let less = op == "<";
        let strict = self.spell.percent(50);
        let mirrored = self.spell.percent(50);
        let op = match (less != mirrored, strict) {
            (true, true) => "<",
            (true, false) => "<=",
            (false, true) => ">",
            (false, false) => ">=",
        };
        if mirrored { (op, b, a) } else { (op, a, b) }
    }

    fn condition(&mut self) -> String {
        let a = self.leaf();
        let b = self.leaf();
        let op = *self.rng.pick(&["<", "<=", ">", "==", "!="]);
        format!("{a} {op} {b}")
    }

    fn line(&mut self, indent: usize, s: &str) {
        let _ = writeln!(self.out, "{}{s}", "    ".repeat(indent));
    }
}

/// Generates the program for `seed`; its entry is `{prefix}_main`.
pub fn generate(seed: u64, prefix: &str) -> RandomProgram {
    let mut rng = Rng::new(seed ^ 0x0ab9_ed5e_ed01);
    let mut rows = 2 + rng.below(5) as u32;
    // Rows as calls of a function, drawn from a stream of its own (the cells' choices stay
    // those of the seed); enough rows that its exact shapes stop being reused and its calls
    // are keyed by rounded bounds.
    let mut fn_rng = Rng::new(seed ^ 0x00f0_0ca1_1500);
    let row_function = fn_rng.percent(33);
    if row_function {
        rows = 17 + fn_rng.below(6) as u32;
    }
    let cols = 2 + rng.below(5) as u32;
    let cell = *rng.pick(&TYPES);
    let ta = *rng.pick(&TYPES);
    let tb = *rng.pick(&TYPES);
    let mut g = Gen {
        tame: rng.percent(50),
        rng,
        spell: Rng::new(seed ^ 0x5e11_0d3e_0000_0001),
        cols,
        out: String::new(),
        locals: Vec::new(),
    };
    let (la, lb) = (rows - 1, cols - 1);
    let entry = format!("{prefix}_main");
    let row_out = g.rng.percent(40);
    let mut decls = vec![
        format!("{} INPUT_A_a[{la}]", ta.0),
        format!("{} INPUT_B_b[{lb}]", tb.0),
        format!("{} *OUTPUT_corner", cell.0),
        "long long *OUTPUT_total".to_string(),
    ];
    let mut interface = Interface {
        inputs: vec![
            InputPort {
                name: "INPUT_A_a".into(),
                owner: Owner::A,
                ctype: CType::Array {
                    elem: Box::new(ctype(ta)),
                    len: la,
                },
            },
            InputPort {
                name: "INPUT_B_b".into(),
                owner: Owner::B,
                ctype: CType::Array {
                    elem: Box::new(ctype(tb)),
                    len: lb,
                },
            },
        ],
        outputs: vec![
            OutputPort {
                name: "OUTPUT_corner".into(),
                visibility: Visibility::Both,
                ctype: ctype(cell),
            },
            OutputPort {
                name: "OUTPUT_total".into(),
                visibility: Visibility::Both,
                ctype: CType::int(64, true),
            },
        ],
    };
    if row_out {
        decls.push(format!("{} OUTPUT_row[{cols}]", cell.0));
        interface.outputs.push(OutputPort {
            name: "OUTPUT_row".into(),
            visibility: Visibility::Both,
            ctype: CType::Array {
                elem: Box::new(ctype(cell)),
                len: cols,
            },
        });
    }
    let params = interface
        .inputs
        .iter()
        .map(|p| p.name.clone())
        .chain(interface.outputs.iter().map(|p| p.name.clone()))
        .collect();
    let _ = writeln!(g.out, "void {entry}({})\n{{", decls.join(", "));
    g.line(1, &format!("{} t[{rows}][{cols}];", cell.0));
    // How the nest is written, drawn from a stream of its own (the cells' choices stay
    // those of the seed): a triangular inner loop, a constant table read in the cell, a
    // secret condition around the inner loop (each a nest the compiler may store once).
    let mut nest_rng = Rng::new(seed ^ 0x007e_570f_4e57);
    let triangular = rows <= cols && nest_rng.percent(30);
    let table = nest_rng.percent(40);
    // An inner loop under a secret condition may run at most 1/16 of the unroll limit
    // (the random-program tests compile with 64).
    let inner_iterations = if triangular { rows - 1 } else { cols - 1 };
    let guarded = nest_rng.percent(30) && inner_iterations <= 4;
    if triangular || guarded {
        // Cells the nest may leave unwritten are read later.
        g.line(1, &format!("for (int i = 0; i < {rows}; i++)"));
        g.line(2, &format!("for (int j = 0; j < {cols}; j++)"));
        g.line(3, "t[i][j] = 0;");
    }
    if table {
        let weights: Vec<String> = (0..cols).map(|_| nest_rng.below(5).to_string()).collect();
        g.line(1, &format!("int w[{cols}] = {{{}}};", weights.join(", ")));
    }
    // Borders: counters scaled, or inputs reduced, or constants.
    let scale = 1 + g.rng.below(3);
    let border = |g: &mut Gen, var: &str, input: &str, n: u32| match g.rng.below(4) {
        0 => format!("({var} < {n} ? {input}[{var} < {n} ? {var} : 0] & 7 : 0)"),
        1 => format!("{}", g.rng.below(3)),
        _ => format!("{var} * {scale}"),
    };
    let bi = border(&mut g, "i", "INPUT_A_a", la);
    let bj = border(&mut g, "j", "INPUT_B_b", lb);
    g.line(1, &format!("for (int i = 0; i < {rows}; i++)"));
    g.line(2, &format!("t[i][0] = {bi};"));
    g.line(1, &format!("for (int j = 0; j < {cols}; j++)"));
    g.line(2, &format!("t[0][j] = {bj};"));
    g.line(1, &format!("for (int i = 1; i < {rows}; i++) {{"));
    let row_name = format!("{prefix}_row");
    let caller = if row_function {
        let w = if table { ", w" } else { "" };
        g.line(
            2,
            &format!("{row_name}(t[i - 1], t[i], i, INPUT_A_a, INPUT_B_b{w});"),
        );
        g.line(1, "}");
        Some(std::mem::take(&mut g.out))
    } else {
        None
    };
    if guarded {
        g.line(1, "if (INPUT_A_a[i - 1] & 1) {");
    }
    if triangular {
        g.line(2, "for (int j = 1; j <= i; j++) {");
    } else {
        g.line(2, &format!("for (int j = 1; j < {cols}; j++) {{"));
    }
    // The cell: a few locals, then updates of the best one, then the store.
    let nlocals = 1 + g.rng.below(3);
    for k in 0..nlocals {
        let t = if g.rng.percent(70) {
            cell
        } else {
            *g.rng.pick(&TYPES)
        };
        let e = g.expr(2);
        g.line(3, &format!("{} v{k} = {e};", t.0));
        g.locals.push(format!("v{k}"));
    }
    for _ in 0..1 + g.rng.below(4) {
        let v = g.locals[g.rng.below(nlocals) as usize].clone();
        let e = g.expr(2);
        match g.rng.below(5) {
            0 | 1 => {
                let op = if g.rng.percent(70) { "<" } else { ">" };
                let (op, first, second) = g.spell_order(op, &e, &v);
                g.line(3, &format!("if ({first} {op} {second})"));
                g.line(4, &format!("{v} = {e};"));
            }
            2 => g.line(3, &format!("{v} += {e};")),
            3 => {
                let c = g.condition();
                g.line(3, &format!("{v} = {c} ? {e} : {v};"));
            }
            _ => {
                let m = 1 + g.rng.below(cols.min(4) as u64);
                let at = format!("t[i][(unsigned)INPUT_A_a[i - 1] % {m}u]");
                let c = g.condition();
                g.line(3, &format!("if ({c})"));
                g.line(4, &format!("{at} = {e};"));
            }
        }
    }
    let last = g.locals[g.rng.below(nlocals) as usize].clone();
    if table {
        g.line(3, &format!("t[i][j] = {last} + w[j];"));
    } else {
        g.line(3, &format!("t[i][j] = {last};"));
    }
    g.line(2, "}");
    if guarded {
        g.line(1, "}");
    }
    if let Some(caller) = caller {
        // The row's statements as the function's body, over its parameters.
        let body = std::mem::replace(&mut g.out, caller)
            .replace("INPUT_A_a", "in_a")
            .replace("INPUT_B_b", "in_b")
            .replace("t[i - 1][", "prev[")
            .replace("t[i][", "cur[");
        let w = if table {
            format!(", int w[{cols}]")
        } else {
            String::new()
        };
        g.out = format!(
            "static void {row_name}({c} prev[{cols}], {c} cur[{cols}], int i, {ta} in_a[{la}], \
             {tb} in_b[{lb}]{w})\n{{\n{body}}}\n\n{}",
            g.out,
            c = cell.0,
            ta = ta.0,
            tb = tb.0,
        );
    } else {
        g.line(1, "}");
    }
    g.line(
        1,
        &format!("*OUTPUT_corner = t[{}][{}];", rows - 1, cols - 1),
    );
    g.line(1, "long long total = 0;");
    g.line(1, &format!("for (int j = 0; j < {cols}; j++) {{"));
    g.line(2, &format!("total += t[{}][j];", rows - 1));
    if row_out {
        g.line(2, &format!("OUTPUT_row[j] = t[{}][j];", rows - 1));
    }
    g.line(1, "}");
    g.line(1, "*OUTPUT_total = total;");
    g.out.push_str("}\n");
    RandomProgram {
        seed,
        source: g.out,
        entry,
        params,
        interface,
    }
}
