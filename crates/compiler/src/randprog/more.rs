//! Constructs added in a second survey of docs/c-subset.md against the generator's programs:
//! `enum` types and constants (with and without negative values, so of type `int` or
//! `unsigned int`), `typedef` names for integer and struct types, integer constants of every
//! form C types by their value (unsuffixed hexadecimal and octal ones that are `unsigned int`
//! or `long`, decimal ones past `int`, every suffix) and character constants with escapes
//! (`'\377'` is -1 with gcc's signed `char`), `sizeof` of variables and of expressions whose
//! side effects are never evaluated, `_Alignof`, case labels spelled as constant expressions
//! with `default` anywhere, declarations of several variables (the later ones reading the
//! earlier), inner declarations that shadow outer variables and globals, designated and
//! partial struct initializers, loops whose bound is an enclosing loop's counter, `for`
//! headers declaring two variables with a comma in the step, and bare blocks.

use super::{Gen, IntTy, Shape, Var, wide::mentions};

/// The program's `enum` type.
#[derive(Clone, Debug)]
pub(super) struct EnumDef {
    pub name: String,
    /// Constants and their values.
    pub consts: Vec<(String, i64)>,
    /// Some value is negative: the type is `int` (else `unsigned int`, as gcc has it).
    pub signed: bool,
}

/// The type C gives an unsuffixed hexadecimal or octal constant of value `v`.
fn hex_type(v: u64) -> IntTy {
    if v <= i32::MAX as u64 {
        IntTy::Int
    } else if v <= u32::MAX as u64 {
        IntTy::UInt
    } else if v <= i64::MAX as u64 {
        IntTy::Long
    } else {
        IntTy::ULong
    }
}

impl Gen {
    /// `enum p_e { p_E0 = 3, p_E1, … };` at file scope.
    pub(super) fn enum_definition(&mut self) {
        let name = format!("{}_e", self.prefix);
        let n = 2 + self.rng.below(3);
        let mut consts = Vec::new();
        let mut items = Vec::new();
        let mut next: i64 = 0;
        for k in 0..n {
            let c = format!("{}_E{k}", self.prefix);
            if k == 0 || self.rng.percent(50) {
                next = *self.rng.pick(&[-4, -1, 0, 1, 2, 3, 5, 7, 100, 1000]);
                items.push(format!("{c} = {next}"));
            } else {
                items.push(c.clone());
            }
            consts.push((c, next));
            next += 1;
        }
        let signed = consts.iter().any(|(_, v)| *v < 0);
        self.out
            .push_str(&format!("enum {name} {{ {} }};\n", items.join(", ")));
        self.enum_def = Some(EnumDef {
            name,
            consts,
            signed,
        });
    }

    /// `typedef T p_tK;` for one or two integer types, and sometimes `typedef struct p_s p_st;`.
    pub(super) fn typedef_definitions(&mut self) {
        let n = 1 + self.rng.below(2);
        for k in 0..n {
            let t = self.any_type();
            let name = format!("{}_t{k}", self.prefix);
            let sp = t.spell(&mut self.rng);
            self.out.push_str(&format!("typedef {sp} {name};\n"));
            self.typedefs.push((name, t));
        }
        if let Some(s) = &self.strukt
            && self.rng.percent(50)
        {
            let alias = format!("{}_st", self.prefix);
            self.out
                .push_str(&format!("typedef struct {} {alias};\n", s.name));
            self.struct_alias = Some(alias);
        }
    }

    /// A name for the integer type `t`: a `typedef` of it or the `enum` type where the
    /// program has one, else a C spelling.
    pub(super) fn spelling(&mut self, t: IntTy) -> String {
        if let Some(e) = &self.enum_def
            && t == if e.signed { IntTy::Int } else { IntTy::UInt }
            && self.rng.percent(25)
        {
            return format!("enum {}", e.name);
        }
        if self.rng.percent(30) {
            let mut names: Vec<String> = self
                .typedefs
                .iter()
                .filter(|(_, u)| *u == t)
                .map(|(n, _)| n.clone())
                .collect();
            if let Some(e) = &self.enum_def
                && t == if e.signed { IntTy::Int } else { IntTy::UInt }
            {
                names.push(format!("enum {}", e.name));
            }
            if !names.is_empty() {
                return self.rng.pick(&names).clone();
            }
        }
        t.spell(&mut self.rng).to_string()
    }

    /// The constants `literal` leaves out: enum constants, character escapes, unsuffixed
    /// hexadecimal, octal and long decimal constants, and the other suffixes.
    pub(super) fn more_literal(&mut self) -> (String, IntTy) {
        match self.rng.below(6) {
            0 if self.enum_def.is_some() => {
                let consts = self.enum_def.as_ref().expect("an enum").consts.clone();
                (self.rng.pick(&consts).0.clone(), IntTy::Int)
            }
            0 | 1 => {
                let c = *self.rng.pick(&[
                    "'\\n'", "'\\0'", "'\\377'", "'\\xff'", "'\\x80'", "'\\x7f'", "'\\t'",
                    "'\\\\'", "'\\''", "'\\101'", "'\\200'", "'\\a'",
                ]);
                (c.to_string(), IntTy::Int)
            }
            2 | 3 => {
                let shift = self.rng.below(64) as u32;
                let v = self.rng.next_u64() >> shift;
                let text = if self.rng.percent(50) || v == 0 {
                    format!("0x{v:X}")
                } else {
                    format!("0{v:o}")
                };
                (text, hex_type(v))
            }
            4 => {
                let v = self.rng.next_u64() >> (1 + self.rng.below(40));
                let t = if v <= i32::MAX as u64 {
                    IntTy::Int
                } else {
                    IntTy::Long
                };
                (v.to_string(), t)
            }
            _ => {
                let (suffix, t) = *self.rng.pick(&[
                    ("lu", IntTy::ULong),
                    ("uL", IntTy::ULong),
                    ("llu", IntTy::ULLong),
                    ("Ull", IntTy::ULLong),
                    ("l", IntTy::Long),
                    ("LL", IntTy::LLong),
                ]);
                // Below 2^63, so a decimal `l` constant is `long`.
                let v = self.rng.next_u64() >> (1 + self.rng.below(63));
                (format!("{v}{suffix}"), t)
            }
        }
    }

    /// `sizeof` and `_Alignof` in their forms; `sizeof`'s operand is never evaluated, so
    /// its side effects must not happen. The result is `size_t` (`unsigned long`), or cast.
    pub(super) fn sizeof_expr(&mut self, d: u32) -> (String, IntTy) {
        let text = match self.rng.below(6) {
            0 | 1 => {
                let vars = self.visible();
                if vars.is_empty() {
                    return self.literal();
                }
                let v = self.rng.pick(&vars).clone();
                match v.shape {
                    Shape::Array(_) if !v.pointer && self.rng.percent(50) => {
                        format!("(sizeof {} / sizeof {}[0])", v.access, v.access)
                    }
                    _ if self.rng.percent(50) => format!("sizeof {}", v.access),
                    _ => format!("sizeof({})", v.access),
                }
            }
            2 => {
                let (e, _) = self.expr(d);
                format!("sizeof({e})")
            }
            3 => {
                // A side effect that must not happen.
                let Some((lv, t)) = self.lvalue() else {
                    return self.literal();
                };
                let (e, _) = self.expr(d.min(1));
                if t == IntTy::Bool {
                    format!("sizeof({lv} = ({e}))")
                } else {
                    let form = *self
                        .rng
                        .pick(&["{}++", "--{}", "{} += ({e})", "{} = ({e})"]);
                    format!("sizeof({})", form.replace("{}", &lv).replace("{e}", &e))
                }
            }
            4 if self.strukt.is_some() && self.rng.percent(40) => {
                let sp = self.struct_spelling();
                format!("sizeof({sp})")
            }
            _ => {
                let t = self.any_type();
                let sp = self.spelling(t);
                match self.rng.below(3) {
                    0 => format!("_Alignof({sp})"),
                    1 => format!("sizeof({sp}[3])"),
                    _ => format!("sizeof({sp})"),
                }
            }
        };
        if self.rng.percent(30) {
            (format!("((int){text})"), IntTy::Int)
        } else {
            (format!("({text})"), IntTy::ULong)
        }
    }

    /// A name for a new variable of the innermost scope whose initializer is `init`: fresh,
    /// or sometimes that of a variable (or global) of an enclosing scope, which it then
    /// shadows (never one `init` names: the new variable's scope starts at its declarator,
    /// so `init` would read the new, uninitialized one).
    pub(super) fn decl_name(&mut self, init: &str) -> String {
        if self.rng.percent(12) {
            let global = format!("{}_g", self.prefix);
            let inner: Vec<String> = self
                .scopes
                .last()
                .map(|s| s.iter().map(|v| v.access.clone()).collect())
                .unwrap_or_default();
            let candidates: Vec<String> = self
                .visible()
                .into_iter()
                .map(|v| v.access)
                .filter(|a| {
                    let local = a.len() > 1
                        && a.starts_with('v')
                        && a[1..].bytes().all(|b| b.is_ascii_digit());
                    (local || a.starts_with(&global)) && !inner.contains(a) && !mentions(init, a)
                })
                .collect();
            if !candidates.is_empty() {
                return self.rng.pick(&candidates).clone();
            }
        }
        self.name("v")
    }

    /// `T a = e, b = f(a), …;`: several scalars in one declaration, each initializer seeing
    /// the ones before it.
    pub(super) fn multi_declaration(&mut self) {
        let t = self.any_type();
        let sp = self.spelling(t);
        let n = 2 + self.rng.below(2);
        let mut parts = Vec::new();
        for _ in 0..n {
            if self.rng.percent(20) {
                let len = self.array_len();
                let (size, init) = self.array_initializer(len);
                let name = self.decl_name(&init);
                parts.push(format!("{name}[{size}] = {init}"));
                self.declare(Var::new(name, t, Shape::Array(len), true).owned());
            } else {
                let (e, _) = self.expr(2);
                let name = self.decl_name(&e);
                parts.push(format!("{name} = {e}"));
                self.declare(Var::new(name, t, Shape::Scalar, true).owned());
            }
        }
        self.line(&format!("{sp} {};", parts.join(", ")));
    }

    /// A case label of value `v`, spelled as some constant expression of that value.
    pub(super) fn case_label(&mut self, v: i64) -> String {
        let mut forms = vec![v.to_string()];
        if v >= 0 {
            forms.push(format!("0x{v:x}"));
            forms.push(format!("{} + {}", v / 2, v - v / 2));
            forms.push(format!("(char){}", v + 256));
            if v < 128 {
                forms.push(format!("'\\{v:o}'"));
            }
        } else {
            forms.push(format!("(signed char){}", v + 256));
            forms.push(format!("~{}", -v - 1));
            if v >= -128 {
                // `'\377'` is -1: gcc's `char` is signed.
                forms.push(format!("'\\{:o}'", v + 256));
            }
        }
        if let Some(e) = &self.enum_def {
            forms.extend(
                e.consts
                    .iter()
                    .filter(|(_, c)| *c == v)
                    .map(|(n, _)| n.clone()),
            );
        }
        self.rng.pick(&forms).clone()
    }

    /// A designated (`{.f1 = e, .f0[1] = e}`) or partial (`{e}`, the rest zero) struct
    /// initializer; `None` leaves it to the positional form.
    pub(super) fn struct_initializer_designated(&mut self) -> Option<String> {
        let fields = self.strukt.as_ref().expect("a struct type").fields.clone();
        match self.rng.below(5) {
            0 | 1 => {
                let mut items = Vec::new();
                for (f, _, len) in &fields {
                    if !self.rng.percent(65) {
                        continue;
                    }
                    match len {
                        None => items.push(format!(".{f} = {}", self.expr(1).0)),
                        Some(l) if self.rng.percent(50) => {
                            let k = 1 + self.rng.below(*l as u64);
                            let xs: Vec<String> = (0..k).map(|_| self.expr(1).0).collect();
                            items.push(format!(".{f} = {{{}}}", xs.join(", ")));
                        }
                        Some(l) => {
                            let j = self.rng.below(*l as u64);
                            items.push(format!(".{f}[{j}] = {}", self.expr(1).0));
                        }
                    }
                }
                if items.len() > 1 && self.rng.percent(50) {
                    items.swap(0, 1);
                }
                if items.is_empty() {
                    // Brace elision even where the first field is an array.
                    items.push("0".to_string());
                }
                Some(format!("{{{}}}", items.join(", ")))
            }
            2 => {
                // The first field only, the rest zero.
                let (_, _, len) = &fields[0];
                let first = match len {
                    None => self.expr(1).0,
                    Some(_) => format!("{{{}}}", self.expr(1).0),
                };
                Some(format!("{{{first}}}"))
            }
            _ => None,
        }
    }

    /// `{ … }`: a block of its own (where declarations may shadow).
    pub(super) fn bare_block(&mut self, ctx: super::Ctx) {
        self.line("{");
        self.block(
            super::Ctx {
                nesting: ctx.nesting + 1,
                ..ctx
            },
            3,
        );
        self.line("}");
    }
}

/// A member of the struct type that nests the program's struct.
#[derive(Clone, Debug)]
pub(super) enum Member {
    Scalar(IntTy),
    /// The program's struct.
    Inner,
    /// An array of the program's struct.
    InnerArray(u32),
}

/// `struct p_o { T m0; struct p_s m1; struct p_s m2[2]; }`, members in any order.
#[derive(Clone, Debug)]
pub(super) struct OuterDef {
    pub name: String,
    pub members: Vec<(String, Member)>,
}

impl Gen {
    /// Defines the struct type nesting the program's struct (which must exist).
    pub(super) fn outer_definition(&mut self) {
        let name = format!("{}_o", self.prefix);
        let mut kinds = vec![
            Member::Inner,
            Member::InnerArray(2 + self.rng.below(2) as u32),
        ];
        if self.rng.percent(50) {
            kinds.swap(0, 1);
        }
        kinds.truncate(1 + self.rng.below(2) as usize);
        for _ in 0..1 + self.rng.below(2) {
            let t = self.any_type();
            let at = self.rng.below(kinds.len() as u64 + 1) as usize;
            kinds.insert(at, Member::Scalar(t));
        }
        let inner = self.strukt.as_ref().expect("a struct type").name.clone();
        let mut text = format!("struct {name} {{");
        let mut members = Vec::new();
        for (k, m) in kinds.into_iter().enumerate() {
            let mname = format!("m{k}");
            match &m {
                Member::Scalar(t) => {
                    let sp = t.spell(&mut self.rng);
                    text.push_str(&format!(" {sp} {mname};"));
                }
                Member::Inner => text.push_str(&format!(" struct {inner} {mname};")),
                Member::InnerArray(n) => text.push_str(&format!(" struct {inner} {mname}[{n}];")),
            }
            members.push((mname, m));
        }
        text.push_str(" };\n");
        self.out.push_str(&text);
        self.outer = Some(OuterDef { name, members });
    }

    pub(super) fn outer_spelling(&self) -> String {
        format!(
            "struct {}",
            self.outer.as_ref().expect("an outer struct").name
        )
    }

    pub(super) fn outer_ctype(&self) -> pgc_circuit::CType {
        let o = self.outer.as_ref().expect("an outer struct");
        let inner = self.strukt.as_ref().expect("a struct type").ctype();
        pgc_circuit::CType::Struct {
            name: o.name.clone(),
            fields: o
                .members
                .iter()
                .map(|(n, m)| {
                    let ct = match m {
                        Member::Scalar(t) => t.ctype(),
                        Member::Inner => inner.clone(),
                        Member::InnerArray(len) => pgc_circuit::CType::Array {
                            elem: Box::new(inner.clone()),
                            len: *len,
                        },
                    };
                    (n.clone(), ct)
                })
                .collect(),
        }
    }

    /// `o.m` (or `p->m` for `(*p)`).
    fn outer_member(&mut self, access: &str, m: &str) -> String {
        match access.strip_prefix("(*").and_then(|b| b.strip_suffix(')')) {
            Some(p) if self.rng.percent(50) => format!("{p}->{m}"),
            _ => format!("{access}.{m}"),
        }
    }

    /// A scalar inside the nesting struct `access`: a member, or a field of a struct in it.
    pub(super) fn outer_access(&mut self, access: &str) -> (String, IntTy) {
        let members = self
            .outer
            .as_ref()
            .expect("an outer struct")
            .members
            .clone();
        let (m, kind) = self.rng.pick(&members).clone();
        let base = self.outer_member(access, &m);
        match kind {
            Member::Scalar(t) => (base, t),
            Member::Inner => self.field(&base),
            Member::InnerArray(len) => {
                let i = self.index(len);
                self.field(&format!("{base}[{i}]"))
            }
        }
    }

    /// A value of the program's struct type inside `v` (the variable, an element, a member
    /// of a nesting struct); at a constant index where `public` (to take its address).
    pub(super) fn struct_subobject(&mut self, v: &Var, public: bool) -> String {
        let at = |this: &mut Gen, len: u32| {
            if public {
                this.rng.below(len as u64).to_string()
            } else {
                this.index(len)
            }
        };
        match v.shape {
            Shape::StructArray(len) => {
                let i = at(self, len);
                format!("{}[{i}]", v.access)
            }
            Shape::Outer => {
                let members: Vec<(String, Member)> = self
                    .outer
                    .as_ref()
                    .expect("an outer struct")
                    .members
                    .iter()
                    .filter(|(_, m)| !matches!(m, Member::Scalar(_)))
                    .cloned()
                    .collect();
                let (m, kind) = self.rng.pick(&members).clone();
                let base = self.outer_member(&v.access, &m);
                match kind {
                    Member::InnerArray(len) => {
                        let i = at(self, len);
                        format!("{base}[{i}]")
                    }
                    _ => base,
                }
            }
            _ => v.access.clone(),
        }
    }

    /// `o = p;` or `o = c ? p : q;` for whole nesting structs.
    pub(super) fn outer_assignment(&mut self, target: &Var) -> bool {
        let sources: Vec<String> = self
            .visible()
            .into_iter()
            .filter(|v| v.shape == Shape::Outer)
            .map(|v| v.access)
            .collect();
        let a = self.rng.pick(&sources).clone();
        let rhs = if self.rng.percent(30) {
            let c = self.cond();
            let b = self.rng.pick(&sources).clone();
            format!("({c}) ? {a} : {b}")
        } else {
            a
        };
        self.line(&format!("{} = {rhs};", target.access));
        true
    }

    /// An initializer for the nesting struct: positional, designated (nested designators,
    /// members sometimes initialized twice) or `{0}`.
    pub(super) fn outer_initializer(&mut self) -> String {
        let members = self
            .outer
            .as_ref()
            .expect("an outer struct")
            .members
            .clone();
        let fields = self.strukt.as_ref().expect("a struct type").fields.clone();
        match self.rng.below(5) {
            0 | 1 => {
                let items: Vec<String> = members
                    .iter()
                    .map(|(_, m)| match m {
                        Member::Scalar(_) => self.expr(1).0,
                        Member::Inner => self.struct_initializer(),
                        Member::InnerArray(n) => {
                            let k = 1 + self.rng.below(*n as u64);
                            let xs: Vec<String> =
                                (0..k).map(|_| self.struct_initializer()).collect();
                            format!("{{{}}}", xs.join(", "))
                        }
                    })
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
            2 | 3 => {
                let mut items = Vec::new();
                for (name, m) in &members {
                    if !self.rng.percent(70) {
                        continue;
                    }
                    // A path to one field of an inner struct, or the whole inner struct.
                    let path = match m {
                        Member::Scalar(_) => {
                            items.push(format!(".{name} = {}", self.expr(1).0));
                            continue;
                        }
                        Member::Inner => format!(".{name}"),
                        Member::InnerArray(n) => format!(".{name}[{}]", self.rng.below(*n as u64)),
                    };
                    if self.rng.percent(50) {
                        let init = self.struct_initializer();
                        items.push(format!("{path} = {init}"));
                    } else {
                        let (f, _, len) = self.rng.pick(&fields).clone();
                        let e = self.expr(1).0;
                        match len {
                            None => items.push(format!("{path}.{f} = {e}")),
                            Some(l) => {
                                let j = self.rng.below(l as u64);
                                items.push(format!("{path}.{f}[{j}] = {e}"));
                            }
                        }
                    }
                }
                if items.len() > 1 && self.rng.percent(50) {
                    items.swap(0, 1);
                }
                // A member initialized again: the later brace list initializes all of it.
                if self.rng.percent(20)
                    && let Some((name, Member::Inner)) =
                        members.iter().find(|(_, m)| matches!(m, Member::Inner))
                {
                    let init = self.struct_initializer();
                    items.push(format!(".{name} = {init}"));
                }
                if items.is_empty() {
                    items.push("0".to_string());
                }
                format!("{{{}}}", items.join(", "))
            }
            _ => "{0}".to_string(),
        }
    }

    /// `struct p_o v = …;`
    pub(super) fn outer_declaration(&mut self) {
        let init = self.outer_initializer();
        let name = self.name("v");
        let sp = self.outer_spelling();
        self.line(&format!("{sp} {name} = {init};"));
        self.declare(Var::new(name, IntTy::Int, Shape::Outer, true).owned());
    }
}

impl Gen {
    /// A member of a struct value that is no object: `((c) ? (s) : (t)).f` or
    /// `((s), (t)).f[i]` over struct variables in scope (one must be).
    pub(super) fn value_member(&mut self) -> (String, IntTy) {
        self.in_value_member = true;
        let (c, _) = self.leaf();
        let a = self.struct_value_pure();
        let b = self.struct_value_pure();
        let base = if self.rng.percent(75) {
            format!("(({c}) ? ({a}) : ({b}))")
        } else {
            format!("(({a}), ({b}))")
        };
        let r = self.field(&base);
        self.in_value_member = false;
        r
    }
}
