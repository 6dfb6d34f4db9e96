//! Constructs the first generator lacked (added after a survey of docs/c-subset.md against
//! its programs): side effects inside expressions (`&&`/`||`/`?:` that assign, the comma
//! operator after an assignment, `x = y = e`, `w++` inside a sum, in `if` conditions too),
//! local pointers to scalars, array elements, rows of two-dimensional arrays and structs,
//! `static` locals, and `__builtin_popcount`/`__builtin_parity`.
//!
//! The rule that keeps them free of undefined behaviour: an expression modifies one object
//! `w` only, an *owned* one (a local or by-value parameter that no pointer names, so no other
//! name can reach it), and every other part of the expression that could be evaluated
//! unsequenced with that write — the assignment's target on the left, the other operand of
//! an arithmetic operator — does not name `w` at all. Parts sequenced before or after it
//! (the left operand of `&&`, `||`, `?:` and the comma) may read it.

use super::{Ctx, Gen, IntTy, Shape, Var};

/// Whether the C text `text` names the identifier `name`.
pub(super) fn mentions(text: &str, name: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| w == name)
}

/// The variable an access names: `v3` for `v3`, `OUTPUT_r0` for `(*OUTPUT_r0)`.
fn base_name(access: &str) -> &str {
    access
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| !w.is_empty())
        .unwrap_or(access)
}

impl Gen {
    /// An owned, writable scalar place to modify inside an expression: its text, type and
    /// the name of the variable it belongs to.
    fn side_effect_place(&mut self) -> Option<(String, IntTy, String)> {
        let vars: Vec<Var> = self
            .visible()
            .into_iter()
            .filter(|v| v.writable && v.owned)
            .collect();
        if vars.is_empty() {
            return None;
        }
        let v = self.rng.pick(&vars).clone();
        let (text, t) = self.access(&v);
        Some((text, t, base_name(&v.access).to_string()))
    }

    /// An expression that modifies `w` (of type `t`) and has a value.
    fn modification(&mut self, w: &str, t: IntTy) -> String {
        match self.rng.below(if t == IntTy::Bool { 2 } else { 3 }) {
            0 => {
                let (e, _) = self.expr(1);
                let op = *self.rng.pick(&["+", "-", "*", "&", "|", "^"]);
                format!("({w} {op}= ({e}))")
            }
            1 => {
                let (e, _) = self.expr(2);
                format!("({w} = ({e}))")
            }
            _ => {
                let form = *self.rng.pick(&["{}++", "++{}", "{}--", "--{}"]);
                format!("({})", form.replace("{}", w))
            }
        }
    }

    /// An expression of any kind that does not name `base` (a literal if none comes).
    fn expr_without(&mut self, depth: u32, base: &str) -> (String, IntTy) {
        for _ in 0..4 {
            let (e, t) = self.expr(depth);
            if !mentions(&e, base) {
                return (e, t);
            }
        }
        self.literal()
    }

    /// An expression modifying one owned variable as a side effect, in one of the forms
    /// that sequence the write (see the module's comment); `None` when nothing is owned.
    /// Returns the expression and the variable's name.
    pub(super) fn side_effect_expr(&mut self) -> Option<(String, String)> {
        let (w, t, base) = self.side_effect_place()?;
        let m = self.modification(&w, t);
        let e = match self.rng.below(6) {
            0 | 1 => {
                let c = self.cond();
                let op = *self.rng.pick(&["&&", "||"]);
                format!("({c}) {op} {m}")
            }
            2 => {
                let c = self.cond();
                let (e, _) = self.expr(2);
                if self.rng.percent(50) {
                    format!("({c}) ? {m} : ({e})")
                } else {
                    format!("({c}) ? ({e}) : {m}")
                }
            }
            3 => {
                // The comma is a sequence point: its right side may read the new value.
                let (e, _) = self.expr(2);
                format!("({m}, ({e}))")
            }
            4 => m,
            _ => {
                let (e, _) = self.expr_without(2, &base);
                let op = *self.rng.pick(&["+", "-", "^", "|", "*", "<", "=="]);
                format!("{m} {op} ({e})")
            }
        };
        Some((e, base))
    }

    /// `x = <expression with a side effect on w>;` (or a declaration initialized so), with
    /// `x` not naming `w`.
    pub(super) fn side_effect_statement(&mut self) {
        let Some((e, base)) = self.side_effect_expr() else {
            return self.assignment();
        };
        for _ in 0..4 {
            let Some((lv, _)) = self.lvalue() else { break };
            if !mentions(&lv, &base) {
                let op = *self.rng.pick(&["", "", "", "+", "^"]);
                return self.line(&format!("{lv} {op}= {e};"));
            }
        }
        let t = self.any_type();
        let sp = self.spelling(t);
        let name = self.decl_name(&e);
        self.line(&format!("{sp} {name} = {e};"));
        self.declare(Var::new(name, t, Shape::Scalar, true).owned());
    }

    /// `if` whose condition has a side effect (so the write itself happens on a secret path
    /// of the condition's own short-circuit evaluation).
    pub(super) fn side_effect_if(&mut self, ctx: Ctx) {
        let Some((e, _)) = self.side_effect_expr() else {
            return self.if_statement(ctx);
        };
        let inner = Ctx {
            nesting: ctx.nesting + 1,
            ..ctx
        };
        self.line(&format!("if ({e}) {{"));
        self.block(inner, 3);
        if self.rng.percent(40) {
            self.line("} else {");
            self.block(inner, 2);
        }
        self.line("}");
    }

    /// `T *p = &x;`, `T *p = a + k;`, `T *p = m[r];`, `T (*p)[c] = m;`, `struct s *p = &s;`:
    /// a pointer to an owned variable, which is then used through the pointer (and the
    /// variable is no longer owned). False if there is nothing to point at.
    pub(super) fn pointer_declaration(&mut self) -> bool {
        let targets: Vec<Var> = self
            .visible()
            .into_iter()
            .filter(|v| v.writable && v.owned && base_name(&v.access) == v.access)
            .collect();
        if targets.is_empty() {
            return false;
        }
        let v = self.rng.pick(&targets).clone();
        let p = self.name("p");
        let constant = self.rng.percent(15);
        let q = if constant { "const " } else { "" };
        let sp = match v.shape {
            Shape::Struct | Shape::StructArray(_) => self.struct_spelling(),
            Shape::Outer => self.outer_spelling(),
            _ => v.ty.spell(&mut self.rng).to_string(),
        };
        let x = &v.access;
        let (decl, var) = match v.shape {
            Shape::Scalar | Shape::Struct | Shape::Outer => (
                format!("{q}{sp} *{p} = &{x};"),
                Var::new(format!("(*{p})"), v.ty, v.shape.clone(), !constant),
            ),
            Shape::Array(len) | Shape::StructArray(len) => {
                let k = self.rng.below(len as u64) as u32;
                let init = match self.rng.below(3) {
                    0 if k == 0 => x.clone(),
                    1 => format!("{x} + {k}"),
                    _ => format!("&{x}[{k}]"),
                };
                let rest = len - k;
                let struct_elems = matches!(v.shape, Shape::StructArray(_));
                let var = if rest == 1 || self.rng.percent(25) {
                    let shape = if struct_elems {
                        Shape::Struct
                    } else {
                        Shape::Scalar
                    };
                    Var::new(format!("(*{p})"), v.ty, shape, !constant)
                } else {
                    let shape = if struct_elems {
                        Shape::StructArray(rest)
                    } else {
                        Shape::Array(rest)
                    };
                    let mut var = Var::new(p.clone(), v.ty, shape, !constant);
                    var.pointer = !struct_elems;
                    var
                };
                (format!("{q}{sp} *{p} = {init};"), var)
            }
            Shape::Array2(r, c) => {
                if self.rng.percent(60) {
                    let row = self.rng.below(r as u64);
                    let mut var = Var::new(p.clone(), v.ty, Shape::Array(c), !constant);
                    var.pointer = true;
                    (format!("{q}{sp} *{p} = {x}[{row}];"), var)
                } else {
                    (
                        format!("{q}{sp} (*{p})[{c}] = {x};"),
                        Var::new(p.clone(), v.ty, Shape::Array2(r, c), !constant),
                    )
                }
            }
        };
        self.line(&decl);
        for scope in &mut self.scopes {
            for w in scope.iter_mut() {
                if w.access == *x {
                    w.owned = false;
                }
            }
        }
        self.declare(var);
        true
    }

    /// `static T v = c;` or `static T v[n];` (zero): initialized once, however often the
    /// block holding it runs.
    pub(super) fn static_declaration(&mut self) {
        self.statics += 1;
        let t = self.any_type();
        let sp = self.spelling(t);
        let name = self.name("v");
        if self.rng.percent(30) {
            let len = self.array_len();
            if self.rng.percent(50) {
                self.line(&format!("static {sp} {name}[{len}];"));
            } else {
                let items: Vec<String> = (0..len).map(|_| self.constant()).collect();
                self.line(&format!(
                    "static {sp} {name}[{len}] = {{{}}};",
                    items.join(", ")
                ));
            }
            self.declare(Var::new(name, t, Shape::Array(len), true).owned());
        } else {
            let c = self.constant();
            self.line(&format!("static {sp} {name} = {c};"));
            self.declare(Var::new(name, t, Shape::Scalar, true).owned());
        }
    }

    /// `__builtin_popcount{,l,ll}(e)` or `__builtin_parity{,l,ll}(e)`: the argument converts
    /// to the unsigned parameter type.
    pub(super) fn builtin_call(&mut self, d: u32) -> (String, IntTy) {
        let f = *self.rng.pick(&[
            "__builtin_popcount",
            "__builtin_popcountl",
            "__builtin_popcountll",
            "__builtin_parity",
            "__builtin_parityl",
            "__builtin_parityll",
        ]);
        let (e, _) = self.expr(d);
        (format!("{f}({e})"), IntTy::Int)
    }
}
