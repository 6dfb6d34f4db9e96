//! Random C programs over `float` and `double` (with integers mixed in) for differential
//! testing against gcc (test support, hidden from docs).
//!
//! [`generate`] turns a seed into a small deterministic program: inputs of both floating
//! types (scalars and arrays) and of several integer types, outputs through pointer and
//! array parameters or the return value; expressions over `+ - * /` on floats and mixed
//! operands (C's usual arithmetic conversions), comparisons, `!`, `&&`, `||`, `?:`, unary
//! minus, casts between every type involved, the `<math.h>` built-ins (`sqrt`, `fabs`,
//! `floor`, `ceil`, `trunc`, `nearbyint` and their `f` forms), decimal, `f`-suffixed and
//! hexadecimal literals (special values among them); statements: declarations, assignments,
//! compound assignments, `++`/`--`, `if`/`else` on float conditions, bounded `for` loops
//! that accumulate, and pure helper functions taking and returning floats.
//!
//! The programs are free of undefined behaviour that gcc would exploit or fold differently
//! from the hardware: integer arithmetic never divides (and the oracle uses `-fwrapv`), and a
//! float-to-integer conversion never applies to an expression gcc may fold to a constant,
//! wholly or in an arm of `?:` (gcc folds an out-of-range constant conversion with
//! saturation where x86's `cvttsd2si` gives the "integer indefinite" value pgc computes),
//! and a constant is never subtracted from (gcc folds `0.0 - e` to `-e` where it believes `e`
//! cannot be -0, so `0.0 - (double)0` gives -0 instead of IEEE's +0). NaN payloads and signs
//! may legitimately differ from gcc's (it commutes `+` and `*` at will and folds NaN
//! constants as positive), so float outputs that gcc gives as NaN are compared as "any NaN"
//! (see `tests/random_programs.rs`).

use std::fmt::Write;

use super::{RandomProgram, Rng};
use pgc_circuit::{CType, InputPort, Interface, OutputPort, Owner, Visibility};

/// The types of values in the generated programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum T {
    Float,
    Double,
    Bool,
    UChar,
    Int,
    UInt,
    LLong,
}

impl T {
    const NUMBERS: [T; 7] = [
        T::Float,
        T::Double,
        T::Bool,
        T::UChar,
        T::Int,
        T::UInt,
        T::LLong,
    ];

    fn spelling(self) -> &'static str {
        match self {
            T::Float => "float",
            T::Double => "double",
            T::Bool => "_Bool",
            T::UChar => "unsigned char",
            T::Int => "int",
            T::UInt => "unsigned",
            T::LLong => "long long",
        }
    }

    fn floating(self) -> bool {
        matches!(self, T::Float | T::Double)
    }

    fn ctype(self) -> CType {
        match self {
            T::Float => CType::Float { bits: 32 },
            T::Double => CType::Float { bits: 64 },
            T::Bool => CType::Bool,
            T::UChar => CType::int(8, false),
            T::Int => CType::int(32, true),
            T::UInt => CType::int(32, false),
            T::LLong => CType::int(64, true),
        }
    }

    /// The type of `a op b` for arithmetic operators (C11 6.3.1.8, for these types).
    fn usual(a: T, b: T) -> T {
        match (a, b) {
            (T::Double, _) | (_, T::Double) => T::Double,
            (T::Float, _) | (_, T::Float) => T::Float,
            (T::LLong, _) | (_, T::LLong) => T::LLong,
            (T::UInt, _) | (_, T::UInt) => T::UInt,
            _ => T::Int,
        }
    }
}

/// A generated expression: its text, type, and whether gcc may fold it to a constant, as a
/// whole or in an arm of a `?:` (gcc moves a conversion into the arms of `c ? 1e308 : x`,
/// then folds `(long long)1e308` its own way).
#[derive(Clone, Debug)]
struct E {
    text: String,
    ty: T,
    folds: bool,
}

#[derive(Clone, Debug)]
struct Var {
    /// How to name it in an expression (`v3`, `(*OUTPUT_r0)`).
    access: String,
    ty: T,
    /// `Some(n)`: an array of `n` elements.
    len: Option<u32>,
    writable: bool,
}

struct Helper {
    name: String,
    ret: T,
    params: Vec<T>,
}

/// Size knobs; the defaults keep a program's circuit at a few hundred thousand gates.
#[derive(Clone, Debug)]
pub struct Config {
    pub main_statements: u32,
    pub max_helpers: u32,
    pub max_expr_depth: u32,
    pub max_nesting: u32,
    pub max_loop_iterations: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            main_statements: 8,
            max_helpers: 2,
            max_expr_depth: 3,
            max_nesting: 2,
            max_loop_iterations: 3,
        }
    }
}

/// Generates the float program for `seed`; its global names start with `prefix`.
pub fn generate(seed: u64, prefix: &str, cfg: &Config) -> RandomProgram {
    let mut g = Gen {
        rng: Rng::new(seed ^ 0xf10a_7c0d_e5ee_d000),
        cfg: cfg.clone(),
        prefix: prefix.to_string(),
        scopes: Vec::new(),
        helpers: Vec::new(),
        fresh: 0,
        budget: 0,
        out: String::new(),
        indent: 0,
    };
    let _ = writeln!(
        g.out,
        "/* pgc random float program, seed {seed} */\n#include <math.h>\n"
    );
    for _ in 0..g.rng.below(cfg.max_helpers as u64 + 1) {
        g.helper();
    }
    let mut p = g.entry();
    p.seed = seed;
    p
}

struct Gen {
    rng: Rng,
    cfg: Config,
    prefix: String,
    scopes: Vec<Vec<Var>>,
    helpers: Vec<Helper>,
    fresh: u32,
    budget: u32,
    out: String,
    indent: usize,
}

impl Gen {
    fn name(&mut self, stem: &str) -> String {
        self.fresh += 1;
        format!("{stem}{}", self.fresh)
    }

    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// Mostly floating types; integers for mixing.
    fn any_type(&mut self) -> T {
        if self.rng.percent(65) {
            *self.rng.pick(&[T::Float, T::Double])
        } else {
            *self.rng.pick(&T::NUMBERS)
        }
    }

    fn visible(&self) -> Vec<Var> {
        self.scopes.iter().flatten().cloned().collect()
    }

    // ---- file scope ---------------------------------------------------------------------

    /// A pure helper: scalar parameters, a local or two, a float result.
    fn helper(&mut self) {
        let name = format!("{}_h{}", self.prefix, self.helpers.len());
        let ret = *self.rng.pick(&[T::Float, T::Double, T::Double]);
        let n = 1 + self.rng.below(3) as usize;
        let params: Vec<T> = (0..n).map(|_| self.any_type()).collect();
        let list: Vec<String> = params
            .iter()
            .enumerate()
            .map(|(i, t)| format!("{} p{i}", t.spelling()))
            .collect();
        let _ = writeln!(
            self.out,
            "static {} {name}({})\n{{",
            ret.spelling(),
            list.join(", ")
        );
        self.indent = 1;
        self.scopes = vec![
            params
                .iter()
                .enumerate()
                .map(|(i, t)| Var {
                    access: format!("p{i}"),
                    ty: *t,
                    len: None,
                    writable: true,
                })
                .collect(),
        ];
        self.budget = 2;
        while self.budget > 0 {
            self.statement(self.cfg.max_nesting);
        }
        let e = self.expr_of(ret, self.cfg.max_expr_depth);
        self.line(&format!("return {};", e.text));
        self.out.push_str("}\n\n");
        self.indent = 0;
        self.helpers.push(Helper { name, ret, params });
    }

    fn entry(&mut self) -> RandomProgram {
        let entry = format!("{}_main", self.prefix);
        let mut decls = Vec::new();
        let mut interface = Interface::default();
        let mut scope = Vec::new();
        for owner in [Owner::A, Owner::B] {
            let letter = if owner == Owner::A { 'A' } else { 'B' };
            for i in 0..1 + self.rng.below(3) {
                let t = self.any_type();
                let name = format!("INPUT_{letter}_x{i}");
                let len =
                    (t.floating() && self.rng.percent(20)).then(|| 2 + self.rng.below(3) as u32);
                let ctype = match len {
                    Some(n) => {
                        decls.push(format!("{} {name}[{n}]", t.spelling()));
                        CType::Array {
                            elem: Box::new(t.ctype()),
                            len: n,
                        }
                    }
                    None => {
                        decls.push(format!("{} {name}", t.spelling()));
                        t.ctype()
                    }
                };
                interface.inputs.push(InputPort {
                    name: name.clone(),
                    owner,
                    ctype,
                });
                scope.push(Var {
                    access: name,
                    ty: t,
                    len,
                    writable: self.rng.percent(30),
                });
            }
        }
        let mut outputs = Vec::new();
        for i in 0..1 + self.rng.below(3) {
            let t = self.any_type();
            let (prefix, visibility) = match self.rng.below(8) {
                0 => ("OUTPUT_A_", Visibility::A),
                1 => ("OUTPUT_B_", Visibility::B),
                _ => ("OUTPUT_", Visibility::Both),
            };
            let name = format!("{prefix}r{i}");
            let (var, ctype) = if self.rng.percent(25) {
                let n = 2 + self.rng.below(3) as u32;
                decls.push(format!("{} {name}[{n}]", t.spelling()));
                let ctype = CType::Array {
                    elem: Box::new(t.ctype()),
                    len: n,
                };
                (
                    Var {
                        access: name.clone(),
                        ty: t,
                        len: Some(n),
                        writable: true,
                    },
                    ctype,
                )
            } else {
                decls.push(format!("{} *{name}", t.spelling()));
                (
                    Var {
                        access: format!("(*{name})"),
                        ty: t,
                        len: None,
                        writable: true,
                    },
                    t.ctype(),
                )
            };
            interface.outputs.push(OutputPort {
                name,
                visibility,
                ctype,
            });
            outputs.push(var);
        }
        let ret = self.rng.percent(20).then(|| self.any_type());
        let params: Vec<String> = interface
            .inputs
            .iter()
            .map(|p| p.name.clone())
            .chain(interface.outputs.iter().map(|p| p.name.clone()))
            .collect();
        if let Some(t) = ret {
            interface.outputs.push(OutputPort {
                name: "OUTPUT_return".into(),
                visibility: Visibility::Both,
                ctype: t.ctype(),
            });
        }
        let ret_spelling = ret.map_or("void", T::spelling);
        let _ = writeln!(self.out, "{ret_spelling} {entry}({})\n{{", decls.join(", "));
        self.indent = 1;
        self.scopes = vec![scope];
        // Every output gets a value first, computed from the inputs.
        for v in &outputs {
            for k in 0..v.len.unwrap_or(1) {
                let e = self.expr_of(v.ty, 2);
                let at = if v.len.is_some() {
                    format!("{}[{k}]", v.access)
                } else {
                    v.access.clone()
                };
                self.line(&format!("{at} = {};", e.text));
            }
        }
        self.scopes[0].extend(outputs);
        self.budget = self.cfg.main_statements;
        while self.budget > 0 {
            self.statement(self.cfg.max_nesting);
        }
        if let Some(t) = ret {
            let e = self.expr_of(t, self.cfg.max_expr_depth);
            self.line(&format!("return {};", e.text));
        }
        self.out.push_str("}\n");
        RandomProgram {
            seed: 0,
            source: std::mem::take(&mut self.out),
            entry,
            params,
            interface,
        }
    }

    // ---- statements ---------------------------------------------------------------------

    fn statement(&mut self, nesting: u32) {
        self.budget = self.budget.saturating_sub(1);
        let nested = nesting > 0;
        match self.rng.below(12) {
            0..=2 => self.declaration(),
            3..=5 => self.assignment(),
            6 => self.increment(),
            7..=8 if nested => self.if_statement(nesting),
            9 if nested => self.for_loop(nesting),
            _ => self.assignment(),
        }
    }

    fn declaration(&mut self) {
        let t = self.any_type();
        let name = self.name("v");
        let e = self.expr(self.cfg.max_expr_depth);
        let value = self.convertible(&e, t);
        self.line(&format!("{} {name} = {value};", t.spelling()));
        self.scopes.last_mut().expect("a scope").push(Var {
            access: name,
            ty: t,
            len: None,
            writable: true,
        });
    }

    /// A writable scalar or array element: (text, type).
    fn lvalue(&mut self) -> Option<(String, T)> {
        let vars: Vec<Var> = self.visible().into_iter().filter(|v| v.writable).collect();
        if vars.is_empty() {
            return None;
        }
        let v = self.rng.pick(&vars).clone();
        Some(match v.len {
            None => (v.access, v.ty),
            Some(n) => {
                let k = self.rng.below(n as u64);
                (format!("{}[{k}]", v.access), v.ty)
            }
        })
    }

    fn assignment(&mut self) {
        let Some((lv, t)) = self.lvalue() else {
            return self.declaration();
        };
        let e = self.expr(self.cfg.max_expr_depth);
        if self.rng.percent(40) {
            let op = *self.rng.pick(&["+", "-", "*", "/"]);
            // Integer `/=` by an integer could divide by zero; make the right side a float.
            let rhs = if op == "/" && !t.floating() && !e.ty.floating() {
                format!("({} + 0.5)", e.text)
            } else {
                e.text
            };
            self.line(&format!("{lv} {op}= {rhs};"));
        } else {
            let text = self.convertible(&e, t);
            self.line(&format!("{lv} = {text};"));
        }
    }

    fn increment(&mut self) {
        let Some((lv, _)) = self.lvalue() else {
            return self.declaration();
        };
        let form = *self.rng.pick(&["{}++;", "++{};", "{}--;", "--{};"]);
        self.line(&form.replace("{}", &lv));
    }

    fn block(&mut self, nesting: u32) {
        self.scopes.push(Vec::new());
        self.indent += 1;
        for _ in 0..1 + self.rng.below(3) {
            if self.budget == 0 {
                break;
            }
            self.statement(nesting - 1);
        }
        self.indent -= 1;
        self.scopes.pop();
    }

    fn if_statement(&mut self, nesting: u32) {
        let c = self.condition();
        self.line(&format!("if ({c}) {{"));
        self.block(nesting);
        if self.rng.percent(50) {
            self.line("} else {");
            self.block(nesting);
        }
        self.line("}");
    }

    fn for_loop(&mut self, nesting: u32) {
        let i = self.name("i");
        let n = 1 + self.rng.below(self.cfg.max_loop_iterations as u64);
        self.line(&format!("for (int {i} = 0; {i} < {n}; {i}++) {{"));
        self.scopes.push(vec![Var {
            access: i,
            ty: T::Int,
            len: None,
            writable: false,
        }]);
        // An accumulation is the common case: a sum or product over the iterations.
        if let Some((lv, t)) = self.lvalue()
            && t.floating()
        {
            let e = self.expr(2);
            let op = *self.rng.pick(&["+", "*", "-"]);
            self.indent += 1;
            self.line(&format!("{lv} {op}= {};", e.text));
            self.indent -= 1;
        }
        self.block(nesting);
        self.scopes.pop();
        self.line("}");
    }

    // ---- expressions --------------------------------------------------------------------

    /// A condition: a comparison, a float's truth value, or a logical combination.
    fn condition(&mut self) -> String {
        match self.rng.below(5) {
            0 => self.expr(2).text,
            1 => {
                let (a, b) = (self.condition(), self.expr(1).text);
                let op = *self.rng.pick(&["&&", "||"]);
                format!("({a}) {op} ({b})")
            }
            _ => {
                let (a, b) = (self.expr(2), self.expr(2));
                let op = *self.rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
                format!("({}) {op} ({})", a.text, b.text)
            }
        }
    }

    /// `e` as a value to store in type `t` (C converts implicitly); a float that may fold to
    /// a constant going into an integer is replaced by a variable (see the module docs).
    fn convertible(&mut self, e: &E, t: T) -> String {
        if e.folds && e.ty.floating() && !t.floating() {
            return self.nonconstant_int(t).text;
        }
        e.text.clone()
    }

    /// An expression of type `t` (a cast where needed).
    fn expr_of(&mut self, t: T, depth: u32) -> E {
        let e = self.expr(depth);
        if e.ty == t {
            return e;
        }
        self.cast(e, t)
    }

    fn cast(&mut self, e: E, t: T) -> E {
        if e.folds && e.ty.floating() && !t.floating() {
            return self.nonconstant_int(t);
        }
        E {
            text: format!("({})({})", t.spelling(), e.text),
            ty: t,
            folds: e.folds,
        }
    }

    /// An integer value of type `t` read from a variable (never a constant expression).
    fn nonconstant_int(&mut self, t: T) -> E {
        let vars = self.visible();
        let v = self.rng.pick(&vars).clone();
        let read = match v.len {
            None => v.access,
            Some(n) => format!("{}[{}]", v.access, self.rng.below(n as u64)),
        };
        E {
            text: format!("({})({read})", t.spelling()),
            ty: t,
            folds: false,
        }
    }

    fn literal(&mut self) -> E {
        let (text, ty) = match self.rng.below(12) {
            0 => (
                format!("{}.{}", self.rng.below(20), self.rng.below(100)),
                T::Double,
            ),
            1 => (
                format!("{}.{}f", self.rng.below(20), self.rng.below(1000)),
                T::Float,
            ),
            2 => (
                (*self.rng.pick(&[
                    "0.0",
                    "(-0.0)",
                    "1e308",
                    "1e-310",
                    "0.1",
                    "2.5",
                    "4.9e-324",
                    "1.7976931348623157e308",
                ]))
                .to_string(),
                T::Double,
            ),
            3 => (
                (*self.rng.pick(&[
                    "0.0f",
                    "1e38f",
                    "1e-40f",
                    "0.5f",
                    "3.5f",
                    "16777217.0f",
                    "0x1p-149f",
                ]))
                .to_string(),
                T::Float,
            ),
            4 => (
                format!(
                    "0x{:x}.{:x}p{}",
                    self.rng.below(16),
                    self.rng.below(256),
                    self.rng.below(20) as i64 - 10
                ),
                T::Double,
            ),
            5 => (
                format!(
                    "{}e{}",
                    1 + self.rng.below(9),
                    self.rng.below(40) as i64 - 20
                ),
                T::Double,
            ),
            6 => ("(1.0 / 0.0)".into(), T::Double),
            7 => (self.rng.below(10).to_string(), T::Int),
            _ => (
                format!("{}.{}", self.rng.below(4), self.rng.below(10)),
                T::Double,
            ),
        };
        E {
            text,
            ty,
            folds: true,
        }
    }

    fn leaf(&mut self) -> E {
        let vars = self.visible();
        if vars.is_empty() || self.rng.percent(25) {
            return self.literal();
        }
        let v = self.rng.pick(&vars).clone();
        let text = match v.len {
            None => v.access,
            Some(n) => {
                // A constant index, or a secret one reduced into range.
                if self.rng.percent(70) {
                    format!("{}[{}]", v.access, self.rng.below(n as u64))
                } else {
                    let idx = self.nonconstant_int(T::UInt).text;
                    format!("{}[({idx}) % {n}u]", v.access)
                }
            }
        };
        E {
            text,
            ty: v.ty,
            folds: false,
        }
    }

    fn expr(&mut self, depth: u32) -> E {
        if depth == 0 {
            return self.leaf();
        }
        let d = depth - 1;
        match self.rng.below(20) {
            0..=2 => self.leaf(),
            3..=8 => {
                let (a, b) = (self.expr(d), self.expr(d));
                let both_int = !a.ty.floating() && !b.ty.floating();
                // Integer division could divide by zero: integers only add, subtract, multiply.
                let ops: &[&str] = if both_int {
                    &["+", "-", "*"]
                } else {
                    &["+", "-", "*", "/"]
                };
                let op = *self.rng.pick(ops);
                // gcc -O0 folds `0.0 - e` to `-e` when it thinks `e` cannot be -0 (a
                // converted integer, `fabs`, …), which makes `0.0 - 0.0` give -0: a
                // constant is never the left side of a subtraction from a variable.
                let (a, b) = if op == "-" && a.folds && !b.folds {
                    (b, a)
                } else {
                    (a, b)
                };
                E {
                    text: format!("({} {op} {})", a.text, b.text),
                    ty: T::usual(a.ty, b.ty),
                    folds: a.folds && b.folds,
                }
            }
            9..=10 => {
                let (a, b) = (self.expr(d), self.expr(d));
                let op = *self.rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
                E {
                    text: format!("({} {op} {})", a.text, b.text),
                    ty: T::Int,
                    folds: a.folds && b.folds,
                }
            }
            11 => {
                let a = self.expr(d);
                let text = match self.rng.below(3) {
                    0 => format!("(-({}))", a.text),
                    1 => format!("(!{})", a.text),
                    _ => {
                        let b = self.expr(d);
                        let op = *self.rng.pick(&["&&", "||"]);
                        format!("({} {op} {})", a.text, b.text)
                    }
                };
                let ty = if text.starts_with("(-(") {
                    T::usual(a.ty, T::Int)
                } else {
                    T::Int
                };
                E {
                    text,
                    ty,
                    folds: a.folds,
                }
            }
            12..=13 => {
                let a = self.expr(d);
                let t = *self.rng.pick(&T::NUMBERS);
                self.cast(a, t)
            }
            14..=15 => {
                let a = self.expr(d);
                let f = *self
                    .rng
                    .pick(&["sqrt", "fabs", "floor", "ceil", "trunc", "nearbyint"]);
                let (name, ty) = if self.rng.percent(40) {
                    (format!("{f}f"), T::Float)
                } else {
                    (f.to_string(), T::Double)
                };
                E {
                    text: format!("{name}({})", a.text),
                    ty,
                    folds: a.folds,
                }
            }
            16 => {
                let c = self.condition();
                let (a, b) = (self.expr(d), self.expr(d));
                E {
                    text: format!("(({c}) ? {} : {})", a.text, b.text),
                    ty: T::usual(a.ty, b.ty),
                    folds: a.folds || b.folds,
                }
            }
            17 if !self.helpers.is_empty() => {
                let k = self.rng.below(self.helpers.len() as u64) as usize;
                let params = self.helpers[k].params.clone();
                let args: Vec<String> = params.iter().map(|t| self.expr_of(*t, d).text).collect();
                let h = &self.helpers[k];
                E {
                    text: format!("{}({})", h.name, args.join(", ")),
                    ty: h.ret,
                    folds: false,
                }
            }
            _ => self.leaf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_varied() {
        let cfg = Config::default();
        assert_eq!(generate(3, "q", &cfg).source, generate(3, "q", &cfg).source);
        assert_ne!(generate(3, "q", &cfg).source, generate(4, "q", &cfg).source);
        let all: String = (0..200)
            .map(|s| generate(s, &format!("q{s}"), &cfg).source)
            .collect();
        for feature in [
            "float INPUT_",
            "double INPUT_",
            "sqrtf(",
            "nearbyint(",
            "(float)(",
            "(long long)(",
            "(_Bool)(",
            "0x",
            "f)",
            " / ",
            "for (int",
            "if (",
            "} else {",
            "++",
            "?",
            "static ",
            "return ",
            "] = ",
            " /= ",
        ] {
            assert!(all.contains(feature), "no program has {feature:?}");
        }
    }
}
