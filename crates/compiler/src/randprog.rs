//! Random C programs for differential testing against gcc (test support, hidden from docs).
//!
//! [`generate`] turns a seed into a small, deterministic C program in the compiler's subset:
//! inputs of every integer type (`INPUT_A_*`, `INPUT_B_*`: scalars, arrays, structs), outputs
//! through pointer, array and struct parameters (`OUTPUT_*`, sometimes `OUTPUT_A_*` and
//! `OUTPUT_B_*`) or the return value, or, in CBMC-GC's original style, inputs and outputs
//! declared as locals of the entry; expressions over all C integer operators (arithmetic,
//! division and modulo, shifts, bitwise, logical, comparisons, casts, `?:`, comma, `sizeof`),
//! compound assignments and `++`/`--`; nested `if`/`else` and `switch`; bounded
//! `for`/`while`/`do` loops with counters of several types and `break`/`continue`/`return`
//! under secret conditions; one- and two-dimensional arrays, structs and arrays of structs
//! read and written at secret indices; global lookup tables and variables; and helper
//! functions (pure ones inside expressions; ones taking arrays, element pointers, struct
//! pointers or two-dimensional arrays, keeping `static` state, or returning structs as
//! statements). `randprog/wide.rs` adds side effects inside expressions (short-circuit and `?:`
//! operands, commas, `switch` conditions, call arguments), local pointers and `static` locals;
//! loops may also stop on a secret condition and leave their counter readable after them.
//! `randprog/more.rs` adds enums, typedefs, every form of integer constant, `sizeof` of
//! variables and unevaluated expressions, case labels as constant expressions, declarations
//! that shadow, designated struct initializers, a struct nesting the program's struct,
//! members of struct values and triangular loop nests. Blocks of their own write a union
//! through some members and read it through others, and update a struct of bit-fields.
//!
//! Every program is free of behaviour gcc leaves undefined even with `-fwrapv`: divisors are
//! guarded against 0 and against `MIN / -1`, shift counts are masked below the promoted width,
//! left shifts of signed values go through the unsigned type, array indices are masked, reduced
//! or clamped into range, every variable is initialised, and loops have constant bounds with
//! counters the body never writes. (The oracle tests also run the programs under UBSan.)
//!
//! [`floats::generate`] makes programs over `float` and `double` the same way.

use std::fmt::Write;

use pgc_circuit::{CType, InputPort, Interface, OutputPort, Owner, Visibility};

pub mod floats;
mod more;
pub mod ranged;
mod wide;

/// SplitMix64, so a program is a pure function of its seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `percent` / 100.
    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// The C integer types, as gcc has them on x86-64 (`char` signed, `long` 64 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntTy {
    Bool,
    Char,
    SChar,
    UChar,
    Short,
    UShort,
    Int,
    UInt,
    Long,
    ULong,
    LLong,
    ULLong,
}

impl IntTy {
    pub const ALL: [IntTy; 12] = [
        IntTy::Bool,
        IntTy::Char,
        IntTy::SChar,
        IntTy::UChar,
        IntTy::Short,
        IntTy::UShort,
        IntTy::Int,
        IntTy::UInt,
        IntTy::Long,
        IntTy::ULong,
        IntTy::LLong,
        IntTy::ULLong,
    ];

    /// Value bits (`_Bool` has one).
    pub fn bits(self) -> u32 {
        match self {
            IntTy::Bool => 1,
            IntTy::Char | IntTy::SChar | IntTy::UChar => 8,
            IntTy::Short | IntTy::UShort => 16,
            IntTy::Int | IntTy::UInt => 32,
            IntTy::Long | IntTy::ULong | IntTy::LLong | IntTy::ULLong => 64,
        }
    }

    pub fn signed(self) -> bool {
        matches!(
            self,
            IntTy::Char | IntTy::SChar | IntTy::Short | IntTy::Int | IntTy::Long | IntTy::LLong
        )
    }

    /// Conversion rank (C11 6.3.1.1).
    fn rank(self) -> u8 {
        match self {
            IntTy::Bool => 0,
            IntTy::Char | IntTy::SChar | IntTy::UChar => 1,
            IntTy::Short | IntTy::UShort => 2,
            IntTy::Int | IntTy::UInt => 3,
            IntTy::Long | IntTy::ULong => 4,
            IntTy::LLong | IntTy::ULLong => 5,
        }
    }

    /// The integer promotions.
    pub fn promote(self) -> IntTy {
        if self.rank() < 3 { IntTy::Int } else { self }
    }

    fn to_unsigned(self) -> IntTy {
        match self {
            IntTy::Int => IntTy::UInt,
            IntTy::Long => IntTy::ULong,
            IntTy::LLong => IntTy::ULLong,
            t => t,
        }
    }

    /// The usual arithmetic conversions of two (any) integer types.
    pub fn usual(a: IntTy, b: IntTy) -> IntTy {
        let (a, b) = (a.promote(), b.promote());
        if a == b {
            return a;
        }
        if a.signed() == b.signed() {
            return if a.rank() >= b.rank() { a } else { b };
        }
        let (s, u) = if a.signed() { (a, b) } else { (b, a) };
        if u.rank() >= s.rank() {
            u
        } else if s.bits() > u.bits() {
            s
        } else {
            s.to_unsigned()
        }
    }

    /// A spelling of the type (several for most, including the `stdint.h` names).
    fn spell(self, rng: &mut Rng) -> &'static str {
        let names: &[&'static str] = match self {
            IntTy::Bool => &["_Bool"],
            IntTy::Char => &["char"],
            IntTy::SChar => &["signed char", "int8_t"],
            IntTy::UChar => &["unsigned char", "uint8_t"],
            IntTy::Short => &["short", "int16_t", "short int"],
            IntTy::UShort => &["unsigned short", "uint16_t"],
            IntTy::Int => &["int", "int32_t", "signed"],
            IntTy::UInt => &["unsigned", "uint32_t", "unsigned int"],
            IntTy::Long => &["long", "int64_t"],
            IntTy::ULong => &["unsigned long", "uint64_t"],
            IntTy::LLong => &["long long"],
            IntTy::ULLong => &["unsigned long long"],
        };
        names[rng.below(names.len() as u64) as usize]
    }

    /// The port type a variable of this type gets.
    pub fn ctype(self) -> CType {
        match self {
            IntTy::Bool => CType::Bool,
            // Plain `char` is a port type of its own; `signed char` is `int8_t`.
            IntTy::Char => CType::CHAR,
            t => CType::int(t.bits(), t.signed()),
        }
    }

    /// The most negative value of a promoted signed type, as a C expression of that type.
    fn min_expr(self) -> &'static str {
        match self {
            IntTy::Int => "(-2147483647 - 1)",
            IntTy::Long => "(-9223372036854775807L - 1)",
            IntTy::LLong => "(-9223372036854775807LL - 1)",
            _ => unreachable!("min_expr of a type that is not a promoted signed type"),
        }
    }

    /// The unsigned type a left shift of a value of this promoted type goes through.
    fn unsigned_spelling(self) -> &'static str {
        match self.promote() {
            IntTy::Int | IntTy::UInt => "unsigned",
            IntTy::Long | IntTy::ULong => "unsigned long",
            _ => "unsigned long long",
        }
    }

    fn plain_spelling(self) -> &'static str {
        match self {
            IntTy::Bool => "_Bool",
            IntTy::Char => "char",
            IntTy::SChar => "signed char",
            IntTy::UChar => "unsigned char",
            IntTy::Short => "short",
            IntTy::UShort => "unsigned short",
            IntTy::Int => "int",
            IntTy::UInt => "unsigned",
            IntTy::Long => "long",
            IntTy::ULong => "unsigned long",
            IntTy::LLong => "long long",
            IntTy::ULLong => "unsigned long long",
        }
    }
}

/// Size knobs. The defaults keep a program around 20–60 lines, quick for gcc and pgc alike.
#[derive(Clone, Debug)]
pub struct Config {
    /// Statements in the entry, counting nested ones.
    pub main_statements: u32,
    /// Statements in each helper.
    pub helper_statements: u32,
    pub max_helpers: u32,
    /// Expression depth.
    pub max_expr_depth: u32,
    /// Block nesting (if/switch/loops).
    pub max_nesting: u32,
    /// Iterations of one loop.
    pub max_loop_iterations: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            main_statements: 12,
            helper_statements: 4,
            max_helpers: 3,
            max_expr_depth: 3,
            max_nesting: 3,
            max_loop_iterations: 4,
        }
    }
}

impl Config {
    /// The default, or, with `PGC_RANDPROG_LARGE=1` in the environment, programs about three
    /// times as long, with more helpers and one more level of nesting (for campaigns: the
    /// tests' own runs stay small). Loops keep their iteration count, which the tests'
    /// unroll limit assumes.
    pub fn from_env() -> Config {
        let large = std::env::var("PGC_RANDPROG_LARGE").is_ok_and(|v| v.trim() == "1");
        if !large {
            return Config::default();
        }
        Config {
            main_statements: 36,
            helper_statements: 10,
            max_helpers: 5,
            max_expr_depth: 3,
            max_nesting: 4,
            max_loop_iterations: 4,
        }
    }
}

/// A generated program: its text, entry function, and the interface the compiler should give
/// it (ports in parameter order).
#[derive(Clone, Debug)]
pub struct RandomProgram {
    pub seed: u64,
    pub source: String,
    pub entry: String,
    /// The entry's parameter names in order.
    pub params: Vec<String>,
    pub interface: Interface,
}

/// Generates the program for `seed`. All its global names start with `prefix` (a C
/// identifier), so that many programs can share one C file.
pub fn generate(seed: u64, prefix: &str, cfg: &Config) -> RandomProgram {
    let mut g = Gen {
        rng: Rng::new(seed ^ 0x005e_ed0f_c0de),
        cfg: cfg.clone(),
        prefix: prefix.to_string(),
        strukt: None,
        globals: Vec::new(),
        scopes: Vec::new(),
        helpers: Vec::new(),
        fresh: 0,
        index_nesting: 0,
        budget: 0,
        out: String::new(),
        indent: 0,
        in_pure: false,
        statics: 0,
        enum_def: None,
        typedefs: Vec::new(),
        struct_alias: None,
        counters: Vec::new(),
        outer: None,
        in_value_member: false,
    };
    g.program(seed)
}

#[derive(Clone, Debug, PartialEq)]
enum Shape {
    Scalar,
    Array(u32),
    Array2(u32, u32),
    /// A value of the program's struct type.
    Struct,
    StructArray(u32),
    /// A value of the struct type that nests the program's struct (`randprog/more.rs`).
    Outer,
}

impl Shape {
    /// Whether a value of the program's struct type is in it (itself, an element, a member).
    fn holds_struct(&self) -> bool {
        matches!(self, Shape::Struct | Shape::StructArray(_) | Shape::Outer)
    }
}

#[derive(Clone, Debug)]
struct Var {
    /// How to name it in an expression (`v3`, `(*OUTPUT_r0)`, `a1`).
    access: String,
    /// The element type (unused for struct shapes).
    ty: IntTy,
    shape: Shape,
    writable: bool,
    /// A pointer parameter standing for an array (`T *a` pointing at two or more elements):
    /// also read and written as `*a` and `*(a + 1)`.
    pointer: bool,
    /// An object of the function itself that no pointer names (a local, a parameter passed
    /// by value): the only kind an expression may modify as a side effect, since a write
    /// through an alias would be unsequenced with a read of the same object by name.
    owned: bool,
}

impl Var {
    fn new(access: String, ty: IntTy, shape: Shape, writable: bool) -> Var {
        Var {
            access,
            ty,
            shape,
            writable,
            pointer: false,
            owned: false,
        }
    }

    fn owned(self) -> Var {
        Var {
            owned: true,
            ..self
        }
    }
}

/// The program's struct type: fields are scalars or short arrays.
#[derive(Clone, Debug)]
struct StructDef {
    name: String,
    fields: Vec<(String, IntTy, Option<u32>)>,
}

impl StructDef {
    fn ctype(&self) -> CType {
        CType::Struct {
            name: self.name.clone(),
            fields: self
                .fields
                .iter()
                .map(|(n, t, len)| {
                    let ct = match len {
                        None => t.ctype(),
                        Some(len) => CType::Array {
                            elem: Box::new(t.ctype()),
                            len: *len,
                        },
                    };
                    (n.clone(), ct)
                })
                .collect(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum HelperParam {
    Scalar(IntTy),
    Array(IntTy, u32),
    Pointer(IntTy),
    /// `T *a` pointing at two or more elements of an array.
    ElementPointer(IntTy),
    /// `T a[r][c]`, `T a[][c]` or `T (*a)[c]`.
    Array2(IntTy, u32, u32),
    Struct,
    StructPointer,
}

#[derive(Clone, Debug)]
struct Helper {
    name: String,
    /// `None`: returns the struct type.
    ret: Option<IntTy>,
    params: Vec<HelperParam>,
    /// Callable inside expressions: returns an integer, takes values only, writes no global.
    pure: bool,
    /// May change state that outlives a call (a global, a `static` local), itself or through
    /// a helper it may call: a pure helper must not call it, or two calls of the pure one in
    /// one expression, evaluated in an unspecified order, could see different states.
    stateful: bool,
}

/// Where a statement is: what `break`/`continue`/`return` may do there.
#[derive(Clone, Copy, Debug)]
struct Ctx {
    in_loop: bool,
    in_switch: bool,
    nesting: u32,
    /// The function's return type: `None` for `void`, `Some(None)` for the struct type.
    ret: Option<Option<IntTy>>,
}

struct Gen {
    rng: Rng,
    cfg: Config,
    prefix: String,
    strukt: Option<StructDef>,
    globals: Vec<Var>,
    scopes: Vec<Vec<Var>>,
    helpers: Vec<Helper>,
    fresh: u32,
    /// How many index expressions are being generated inside each other (kept small, or an
    /// index could hold an array read whose index holds another, and so on).
    index_nesting: u32,
    budget: u32,
    out: String,
    indent: usize,
    /// Generating a pure helper (called inside expressions, where two calls are evaluated
    /// in an unspecified order): no `static` locals.
    in_pure: bool,
    /// `static` locals declared so far.
    statics: u32,
    enum_def: Option<more::EnumDef>,
    /// `typedef` names of integer types.
    typedefs: Vec<(String, IntTy)>,
    /// A `typedef` name of the struct type.
    struct_alias: Option<String>,
    /// Counters of the loops around the statement being generated (each a constant in an
    /// iteration, so a bound for an inner loop), with the most each holds in the body.
    counters: Vec<(String, u32)>,
    /// The struct type nesting the program's struct, if any.
    outer: Option<more::OuterDef>,
    /// Generating a member of a struct value (which does not nest).
    in_value_member: bool,
}

impl Gen {
    fn program(&mut self, seed: u64) -> RandomProgram {
        let _ = writeln!(
            self.out,
            "/* pgc random program, seed {seed} */\n#include <stdint.h>\n"
        );
        if self.rng.percent(35) {
            self.struct_definition();
            if self.rng.percent(40) {
                self.outer_definition();
            }
        }
        if self.rng.percent(30) {
            self.enum_definition();
        }
        if self.rng.percent(30) {
            self.typedef_definitions();
        }
        let n_globals = if self.rng.percent(30) {
            1 + self.rng.below(2)
        } else {
            0
        };
        for _ in 0..n_globals {
            self.global();
        }
        if !self.globals.is_empty() {
            self.out.push('\n');
        }
        let n_helpers = self.rng.below(self.cfg.max_helpers as u64 + 1);
        for _ in 0..n_helpers {
            self.helper();
        }
        let mut p = self.entry();
        p.seed = seed;
        p
    }

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

    fn declare(&mut self, v: Var) {
        self.scopes.last_mut().expect("a scope").push(v);
    }

    fn any_type(&mut self) -> IntTy {
        // Favour the common types a little; every type stays likely.
        if self.rng.percent(30) {
            *self
                .rng
                .pick(&[IntTy::Int, IntTy::UInt, IntTy::Long, IntTy::UChar])
        } else {
            *self.rng.pick(&IntTy::ALL)
        }
    }

    fn array_len(&mut self) -> u32 {
        *self.rng.pick(&[2, 3, 4, 4, 5, 8])
    }

    fn struct_spelling(&mut self) -> String {
        if let Some(alias) = &self.struct_alias
            && self.rng.percent(50)
        {
            return alias.clone();
        }
        format!(
            "struct {}",
            self.strukt.as_ref().expect("a struct type").name
        )
    }

    // ---- file scope -----------------------------------------------------------------------

    fn struct_definition(&mut self) {
        let name = format!("{}_s", self.prefix);
        let n = 2 + self.rng.below(2);
        let mut fields = Vec::new();
        let mut text = format!("struct {name} {{");
        for i in 0..n {
            let t = self.any_type();
            let len = if self.rng.percent(30) {
                Some(2 + self.rng.below(2) as u32)
            } else {
                None
            };
            let fname = format!("f{i}");
            match len {
                None => text.push_str(&format!(" {} {fname};", t.spell(&mut self.rng))),
                Some(l) => text.push_str(&format!(" {} {fname}[{l}];", t.spell(&mut self.rng))),
            }
            fields.push((fname, t, len));
        }
        text.push_str(" };\n");
        self.out.push_str(&text);
        self.strukt = Some(StructDef { name, fields });
    }

    /// A constant initializer for a scalar: literals only.
    fn constant(&mut self) -> String {
        match self.rng.below(4) {
            0 => format!("-{}", self.rng.below(100)),
            1 => format!("0x{:x}u", self.rng.next_u64() >> 40),
            _ => self.rng.below(20).to_string(),
        }
    }

    fn global(&mut self) {
        let t = self.any_type();
        let sp = t.spell(&mut self.rng);
        let name = format!("{}_g{}", self.prefix, self.globals.len());
        match self.rng.below(3) {
            0 => {
                // A lookup table, the typical CBMC-GC global.
                let len = self.array_len();
                let items: Vec<String> = (0..len).map(|_| self.constant()).collect();
                self.out.push_str(&format!(
                    "static const {sp} {name}[{len}] = {{{}}};\n",
                    items.join(", ")
                ));
                self.globals
                    .push(Var::new(name, t, Shape::Array(len), false));
            }
            1 => {
                let len = self.array_len();
                // All elements, the first few (the rest zero) or none (all zero).
                let k = match self.rng.below(4) {
                    0 => 0,
                    1 => 1 + self.rng.below(len as u64) as u32,
                    _ => len,
                };
                let items: Vec<String> = (0..k).map(|_| self.constant()).collect();
                if k == 0 {
                    self.out.push_str(&format!("{sp} {name}[{len}];\n"));
                } else {
                    self.out
                        .push_str(&format!("{sp} {name}[{len}] = {{{}}};\n", items.join(", ")));
                }
                self.globals
                    .push(Var::new(name, t, Shape::Array(len), true));
            }
            _ => {
                if self.rng.percent(20) {
                    self.out.push_str(&format!("static {sp} {name};\n"));
                } else {
                    let c = self.constant();
                    self.out.push_str(&format!("static {sp} {name} = {c};\n"));
                }
                self.globals.push(Var::new(name, t, Shape::Scalar, true));
            }
        }
    }

    /// The globals as a scope; `writable` false makes them read-only in a pure helper.
    fn global_scope(&self, writable: bool) -> Vec<Var> {
        self.globals
            .iter()
            .map(|g| Var {
                writable: g.writable && writable,
                ..g.clone()
            })
            .collect()
    }

    // ---- functions ------------------------------------------------------------------------

    fn helper(&mut self) {
        let name = format!("{}_f{}", self.prefix, self.helpers.len());
        let has_struct = self.strukt.is_some();
        let ret = if has_struct && self.rng.percent(15) {
            None
        } else {
            Some(self.any_type())
        };
        let mut params = Vec::new();
        let n = if self.rng.percent(12) {
            4 + self.rng.below(5)
        } else {
            1 + self.rng.below(3)
        };
        for _ in 0..n {
            if has_struct && self.rng.percent(15) {
                params.push(HelperParam::Struct);
            } else {
                let t = self.any_type();
                params.push(HelperParam::Scalar(t));
            }
        }
        match self.rng.below(10) {
            0 | 1 => {
                let len = self.array_len();
                let t = self.any_type();
                params.push(HelperParam::Array(t, len));
            }
            2 => {
                let t = self.any_type();
                params.push(HelperParam::Pointer(t));
            }
            3 => {
                let t = self.any_type();
                params.push(HelperParam::ElementPointer(t));
            }
            4 if has_struct => params.push(HelperParam::StructPointer),
            5 => {
                let (r, c) = *self.rng.pick(&[(2, 2), (2, 3), (3, 2)]);
                let t = self.any_type();
                params.push(HelperParam::Array2(t, r, c));
            }
            _ => {}
        }
        // State kept from call to call.
        let has_static = self.rng.percent(20);
        let pure = ret.is_some()
            && !has_static
            && params
                .iter()
                .all(|p| matches!(p, HelperParam::Scalar(_) | HelperParam::Struct));
        let mut scope = Vec::new();
        let mut decls = Vec::new();
        for (i, p) in params.iter().enumerate() {
            let pname = format!("a{i}");
            match p {
                HelperParam::Scalar(t) => {
                    decls.push(format!("{} {pname}", self.spelling(*t)));
                    scope.push(Var::new(pname, *t, Shape::Scalar, true).owned());
                }
                HelperParam::Array(t, len) => {
                    decls.push(format!("{} {pname}[{len}]", self.spelling(*t)));
                    scope.push(Var::new(pname, *t, Shape::Array(*len), true));
                }
                HelperParam::Pointer(t) => {
                    decls.push(format!("{} *{pname}", t.spell(&mut self.rng)));
                    scope.push(Var::new(format!("(*{pname})"), *t, Shape::Scalar, true));
                }
                HelperParam::ElementPointer(t) => {
                    decls.push(format!("{} *{pname}", t.spell(&mut self.rng)));
                    let mut v = Var::new(pname, *t, Shape::Array(2), true);
                    v.pointer = true;
                    scope.push(v);
                }
                HelperParam::Array2(t, r, c) => {
                    let sp = t.spell(&mut self.rng);
                    decls.push(match self.rng.below(3) {
                        0 => format!("{sp} {pname}[{r}][{c}]"),
                        1 => format!("{sp} {pname}[][{c}]"),
                        _ => format!("{sp} (*{pname})[{c}]"),
                    });
                    scope.push(Var::new(pname, *t, Shape::Array2(*r, *c), true));
                }
                HelperParam::Struct => {
                    decls.push(format!("{} {pname}", self.struct_spelling()));
                    scope.push(Var::new(pname, IntTy::Int, Shape::Struct, true).owned());
                }
                HelperParam::StructPointer => {
                    decls.push(format!("{} *{pname}", self.struct_spelling()));
                    scope.push(Var::new(
                        format!("(*{pname})"),
                        IntTy::Int,
                        Shape::Struct,
                        true,
                    ));
                }
            }
        }
        let ret_spelling = match ret {
            Some(t) => self.spelling(t),
            None => self.struct_spelling(),
        };
        let _ = writeln!(
            self.out,
            "static {ret_spelling} {name}({})\n{{",
            decls.join(", ")
        );
        self.scopes = vec![self.global_scope(!pure), scope];
        self.indent = 1;
        self.in_pure = pure;
        let statics_before = self.statics;
        if has_static {
            self.static_declaration();
        }
        self.budget = self.cfg.helper_statements;
        let ctx = Ctx {
            in_loop: false,
            in_switch: false,
            nesting: 1,
            ret: Some(ret),
        };
        while self.budget > 0 {
            self.statement(ctx);
        }
        let e = self.return_value(ret);
        self.line(&format!("return {e};"));
        self.out.push_str("}\n\n");
        self.scopes.clear();
        self.in_pure = false;
        let stateful = self.statics > statics_before
            || self.globals.iter().any(|g| g.writable)
            || self.helpers.iter().any(|h| h.stateful);
        // Only now callable: no recursion.
        self.helpers.push(Helper {
            name,
            ret,
            params,
            pure,
            stateful,
        });
    }

    /// A value to return: an expression, or a struct variable (declared here if none).
    fn return_value(&mut self, ret: Option<IntTy>) -> String {
        match ret {
            Some(_) => self.expr(self.cfg.max_expr_depth).0,
            None => self.struct_value(),
        }
    }

    /// A struct-typed expression: a visible struct variable or array element, or a fresh one.
    fn struct_value(&mut self) -> String {
        let candidates: Vec<Var> = self
            .visible()
            .into_iter()
            .filter(|v| v.shape.holds_struct())
            .collect();
        if candidates.is_empty() || self.rng.percent(20) {
            return self.fresh_struct_var();
        }
        let v = self.rng.pick(&candidates).clone();
        self.struct_subobject(&v, false)
    }

    /// Declares a new initialized struct variable and returns its name.
    fn fresh_struct_var(&mut self) -> String {
        let name = self.name("v");
        let init = self.struct_initializer();
        let sp = self.struct_spelling();
        self.line(&format!("{sp} {name} = {init};"));
        self.declare(Var::new(name.clone(), IntTy::Int, Shape::Struct, true).owned());
        name
    }

    /// A writable struct whose address may be taken: a variable, or an array element at a
    /// constant index (an address at a secret index is outside the subset).
    fn struct_at_public_place(&mut self) -> String {
        let candidates: Vec<Var> = self
            .visible()
            .into_iter()
            .filter(|v| v.writable && v.shape.holds_struct())
            .collect();
        if candidates.is_empty() {
            return self.fresh_struct_var();
        }
        let v = self.rng.pick(&candidates).clone();
        self.struct_subobject(&v, true)
    }

    fn struct_initializer(&mut self) -> String {
        if let Some(init) = self.struct_initializer_designated() {
            return init;
        }
        let fields = self.strukt.as_ref().expect("a struct type").fields.clone();
        let items: Vec<String> = fields
            .iter()
            .map(|(_, _, len)| match len {
                None => self.expr(1).0,
                Some(l) => {
                    let xs: Vec<String> = (0..*l).map(|_| self.expr(1).0).collect();
                    format!("{{{}}}", xs.join(", "))
                }
            })
            .collect();
        format!("{{{}}}", items.join(", "))
    }

    /// Assignments giving every part of an output a value (so early returns leave it defined).
    fn initialise_output(&mut self, v: &Var) {
        match v.shape {
            Shape::Scalar => {
                let (e, _) = self.expr(2);
                self.line(&format!("{} = {e};", v.access));
            }
            Shape::Array(len) => {
                let (e, _) = self.expr(2);
                let i = self.name("k");
                self.line(&format!(
                    "for (int {i} = 0; {i} < {len}; {i}++) {}[{i}] = ({e}) + {i};",
                    v.access
                ));
            }
            Shape::Struct => {
                let fields = self.strukt.as_ref().expect("a struct type").fields.clone();
                for (f, _, len) in fields {
                    match len {
                        None => {
                            let (e, _) = self.expr(2);
                            self.line(&format!("{}.{f} = {e};", v.access));
                        }
                        Some(l) => {
                            for k in 0..l {
                                let (e, _) = self.expr(1);
                                self.line(&format!("{}.{f}[{k}] = {e};", v.access));
                            }
                        }
                    }
                }
            }
            Shape::Array2(..) | Shape::StructArray(_) | Shape::Outer => {
                unreachable!("outputs are scalars, arrays or structs")
            }
        }
    }

    fn entry(&mut self) -> RandomProgram {
        let entry = format!("{}_main", self.prefix);
        // CBMC-GC's original style declares inputs and outputs as locals of the entry.
        let local_style = self.rng.percent(15);
        let ret = if self.rng.percent(20) {
            Some(self.any_type())
        } else {
            None
        };
        let mut decls = Vec::new();
        let mut names = Vec::new();
        let mut interface = Interface::default();
        let mut scope = Vec::new();
        for owner in [Owner::A, Owner::B] {
            let n = 1 + self.rng.below(3);
            for i in 0..n {
                let t = self.any_type();
                let letter = if owner == Owner::A { 'A' } else { 'B' };
                let name = format!("INPUT_{letter}_x{i}");
                let spelling = t.spell(&mut self.rng);
                let roll = self.rng.below(100);
                let (decl, shape, ctype) = if roll < 15 {
                    let len = self.array_len();
                    (
                        format!("{spelling} {name}[{len}]"),
                        Shape::Array(len),
                        CType::Array {
                            elem: Box::new(t.ctype()),
                            len,
                        },
                    )
                } else if roll < 25 && self.strukt.is_some() {
                    (
                        format!("{} {name}", self.struct_spelling()),
                        Shape::Struct,
                        self.strukt.as_ref().map(StructDef::ctype).expect("struct"),
                    )
                } else if roll < 30 && self.outer.is_some() {
                    (
                        format!("{} {name}", self.outer_spelling()),
                        Shape::Outer,
                        self.outer_ctype(),
                    )
                } else {
                    (format!("{spelling} {name}"), Shape::Scalar, t.ctype())
                };
                decls.push(decl);
                interface.inputs.push(InputPort {
                    name: name.clone(),
                    owner,
                    ctype,
                });
                scope.push(Var::new(name.clone(), t, shape, self.rng.percent(30)).owned());
                names.push(name);
            }
        }
        let n_out = 1 + self.rng.below(3);
        let mut outputs = Vec::new();
        let mut output_ports = Vec::new();
        for i in 0..n_out {
            let t = self.any_type();
            let (prefix, visibility) = match self.rng.below(8) {
                0 => ("OUTPUT_A_", Visibility::A),
                1 => ("OUTPUT_B_", Visibility::B),
                _ => ("OUTPUT_", Visibility::Both),
            };
            let name = format!("{prefix}r{i}");
            let spelling = t.spell(&mut self.rng);
            let roll = self.rng.below(100);
            let (var, ctype) = if roll < 20 {
                let len = self.array_len();
                decls.push(format!("{spelling} {name}[{len}]"));
                (
                    Var::new(name.clone(), t, Shape::Array(len), true),
                    CType::Array {
                        elem: Box::new(t.ctype()),
                        len,
                    },
                )
            } else if roll < 30 && self.strukt.is_some() {
                let sp = self.struct_spelling();
                let access = if local_style {
                    decls.push(format!("{sp} {name}"));
                    name.clone()
                } else {
                    decls.push(format!("{sp} *{name}"));
                    format!("(*{name})")
                };
                (
                    Var::new(access, t, Shape::Struct, true),
                    self.strukt.as_ref().map(StructDef::ctype).expect("struct"),
                )
            } else if local_style {
                decls.push(format!("{spelling} {name}"));
                (Var::new(name.clone(), t, Shape::Scalar, true), t.ctype())
            } else {
                decls.push(format!("{spelling} *{name}"));
                (
                    Var::new(format!("(*{name})"), t, Shape::Scalar, true),
                    t.ctype(),
                )
            };
            output_ports.push(OutputPort {
                name: name.clone(),
                visibility,
                ctype,
            });
            names.push(name);
            outputs.push(var);
        }
        let ret_spelling = match ret {
            Some(t) => t.spell(&mut self.rng),
            None => "void",
        };
        self.scopes = vec![self.global_scope(true)];
        if local_style {
            let _ = writeln!(self.out, "{ret_spelling} {entry}(void)\n{{");
            self.indent = 1;
            // Inputs first, then outputs, all at the top of the body.
            for d in &decls {
                self.line(&format!("{d};"));
            }
            names.clear();
        } else {
            let _ = writeln!(self.out, "{ret_spelling} {entry}({})\n{{", decls.join(", "));
            self.indent = 1;
        }
        self.scopes.push(scope);
        // pgc reports the entry's return value as `OUTPUT_return`, after the parameters'
        // outputs and before output locals.
        if let Some(t) = ret {
            let port = OutputPort {
                name: "OUTPUT_return".into(),
                visibility: Visibility::Both,
                ctype: t.ctype(),
            };
            if local_style {
                interface.outputs.push(port);
                interface.outputs.extend(output_ports);
            } else {
                interface.outputs.extend(output_ports);
                interface.outputs.push(port);
            }
        } else {
            interface.outputs.extend(output_ports);
        }
        for v in &outputs {
            self.initialise_output(v);
        }
        for v in outputs {
            self.declare(v);
        }
        self.budget = self.cfg.main_statements;
        let ctx = Ctx {
            in_loop: false,
            in_switch: false,
            nesting: 1,
            ret: ret.map(Some),
        };
        while self.budget > 0 {
            self.statement(ctx);
        }
        if ret.is_some() {
            let e = self.return_value(ret);
            self.line(&format!("return {e};"));
        }
        self.out.push_str("}\n");
        RandomProgram {
            seed: 0,
            source: std::mem::take(&mut self.out),
            entry,
            params: names,
            interface,
        }
    }

    // ---- statements -----------------------------------------------------------------------

    fn block(&mut self, ctx: Ctx, max_statements: u32) {
        self.scopes.push(Vec::new());
        self.indent += 1;
        let n = 1 + self.rng.below(max_statements.max(1) as u64) as u32;
        for _ in 0..n {
            if self.budget == 0 {
                break;
            }
            self.statement(ctx);
        }
        self.indent -= 1;
        self.scopes.pop();
    }

    fn statement(&mut self, ctx: Ctx) {
        self.budget = self.budget.saturating_sub(1);
        let nest_ok = ctx.nesting < self.cfg.max_nesting;
        loop {
            match self.rng.below(28) {
                0..=2 => return self.declaration(),
                3..=5 => return self.assignment(),
                6 => return self.compound_assignment(),
                7 => return self.increment(),
                8..=9 => return self.array_store(),
                10..=11 if nest_ok => return self.if_statement(ctx),
                12 if nest_ok => return self.switch_statement(ctx),
                13..=14 if nest_ok => return self.loop_statement(ctx),
                15 if ctx.in_loop || ctx.in_switch => {
                    let c = self.cond();
                    // Inside a switch, `break` leaves the switch and `continue` the loop
                    // around it.
                    let jump = if ctx.in_loop && self.rng.percent(50) {
                        "continue"
                    } else {
                        "break"
                    };
                    return self.line(&format!("if ({c}) {jump};"));
                }
                16 if self.rng.percent(40) => {
                    let c = self.cond();
                    return match ctx.ret {
                        None => self.line(&format!("if ({c}) return;")),
                        Some(ret) => {
                            let e = self.return_value(ret);
                            self.line(&format!("if ({c}) return {e};"))
                        }
                    };
                }
                // A call statement, if there is a helper to call.
                17 if self.helper_statement() => return,
                18 => return self.post_increment_copy(),
                19 if self.strukt.is_some() && self.struct_assignment() => return,
                20 | 21 => return self.side_effect_statement(),
                22 if nest_ok => return self.side_effect_if(ctx),
                23 if self.pointer_declaration() => return,
                24 if !self.in_pure && self.rng.percent(50) => return self.static_declaration(),
                25 if nest_ok && self.rng.percent(50) => return self.bare_block(ctx),
                26 => return self.multi_declaration(),
                27 => return self.scratch_union_or_bit_fields(),
                _ => {}
            }
        }
    }

    fn declaration(&mut self) {
        if self.outer.is_some() && self.rng.percent(10) {
            return self.outer_declaration();
        }
        if self.strukt.is_some() && self.rng.percent(12) {
            let name = self.name("v");
            let sp = self.struct_spelling();
            if self.rng.percent(60) {
                let init = self.struct_initializer();
                self.line(&format!("{sp} {name} = {init};"));
                self.declare(Var::new(name, IntTy::Int, Shape::Struct, true).owned());
            } else {
                let len = 2 + self.rng.below(2) as u32;
                let mut items: Vec<String> = (0..len).map(|_| self.struct_initializer()).collect();
                if self.rng.percent(25) {
                    // Designated elements; the others zero.
                    let k = self.rng.below(len as u64);
                    items = vec![format!("[{k}] = {}", items[0])];
                    if self.rng.percent(50) {
                        // Another element: how much of an element given whole a later
                        // designator of one of its fields keeps is a fine point of C.
                        let j = (k + 1 + self.rng.below(len as u64 - 1)) % len as u64;
                        let (e, _) = self.expr(1);
                        let f = self.strukt.as_ref().expect("a struct type").fields[0].clone();
                        items.push(match f.2 {
                            None => format!("[{j}].{} = {e}", f.0),
                            Some(_) => format!("[{j}].{}[0] = {e}", f.0),
                        });
                    }
                }
                self.line(&format!("{sp} {name}[{len}] = {{{}}};", items.join(", ")));
                self.declare(Var::new(name, IntTy::Int, Shape::StructArray(len), true).owned());
            }
            return;
        }
        let t = self.any_type();
        let spelling = self.spelling(t);
        match self.rng.below(10) {
            0..=6 => {
                let (e, _) = self.expr(self.cfg.max_expr_depth);
                let name = self.decl_name(&e);
                self.line(&format!("{spelling} {name} = {e};"));
                self.declare(Var::new(name, t, Shape::Scalar, true).owned());
            }
            7..=8 => {
                let len = self.array_len();
                let (size, init) = self.array_initializer(len);
                let name = self.decl_name(&init);
                self.line(&format!("{spelling} {name}[{size}] = {init};"));
                self.declare(Var::new(name, t, Shape::Array(len), true).owned());
            }
            _ => {
                let (r, c) = *self.rng.pick(&[(2, 2), (2, 3), (3, 2)]);
                let init = match self.rng.below(4) {
                    // Brace elision: the elements row after row, the last ones zero.
                    0 => {
                        let k = 1 + self.rng.below((r * c) as u64) as u32;
                        let items: Vec<String> = (0..k).map(|_| self.expr(1).0).collect();
                        format!("{{{}}}", items.join(", "))
                    }
                    // Some rows, each with some elements.
                    1 => {
                        let rr = 1 + self.rng.below(r as u64) as u32;
                        let mut rows = Vec::new();
                        for _ in 0..rr {
                            let k = 1 + self.rng.below(c as u64) as u32;
                            let items: Vec<String> = (0..k).map(|_| self.expr(1).0).collect();
                            rows.push(format!("{{{}}}", items.join(", ")));
                        }
                        format!("{{{}}}", rows.join(", "))
                    }
                    _ => {
                        let mut rows = Vec::new();
                        for _ in 0..r {
                            let items: Vec<String> = (0..c).map(|_| self.expr(1).0).collect();
                            rows.push(format!("{{{}}}", items.join(", ")));
                        }
                        format!("{{{}}}", rows.join(", "))
                    }
                };
                let name = self.decl_name(&init);
                self.line(&format!("{spelling} {name}[{r}][{c}] = {init};"));
                self.declare(Var::new(name, t, Shape::Array2(r, c), true).owned());
            }
        }
    }

    /// The size to write in an array's declaration (empty: taken from the initializer) and
    /// an initializer for `len` elements: all of them, the first few (the rest zero), or
    /// some by designators.
    fn array_initializer(&mut self, len: u32) -> (String, String) {
        match self.rng.below(6) {
            0 => {
                let k = 1 + self.rng.below(len as u64) as u32;
                let items: Vec<String> = (0..k).map(|_| self.expr(1).0).collect();
                (len.to_string(), format!("{{{}}}", items.join(", ")))
            }
            1 => {
                let mut items = Vec::new();
                for k in 0..len {
                    if self.rng.percent(50) {
                        items.push(format!("[{k}] = {}", self.expr(1).0));
                    }
                }
                // Designators in any order; a later one for the same element wins.
                if items.len() > 1 && self.rng.percent(50) {
                    items.swap(0, 1);
                }
                if items.is_empty() {
                    items.push("0".to_string());
                }
                (len.to_string(), format!("{{{}}}", items.join(", ")))
            }
            2 => {
                let items: Vec<String> = (0..len).map(|_| self.expr(1).0).collect();
                (String::new(), format!("{{{}}}", items.join(", ")))
            }
            _ => {
                let items: Vec<String> = (0..len).map(|_| self.expr(1).0).collect();
                (len.to_string(), format!("{{{}}}", items.join(", ")))
            }
        }
    }

    /// A writable lvalue: a scalar variable, an array element at a (possibly secret) index,
    /// or a struct field.
    /// A block with a union written through some members and read through others, or a
    /// struct of bit-fields (one wider than `int`) initialized, updated and read, its result
    /// stored into a scalar.
    fn scratch_union_or_bit_fields(&mut self) {
        let Some((lv, _)) = self.lvalue() else {
            return self.declaration();
        };
        let (a, _) = self.expr(2);
        let (b, _) = self.expr(2);
        let name = format!("{}_scratch", self.prefix);
        let text = if self.rng.percent(50) {
            let k = self.rng.below(4);
            let j = self.rng.below(2);
            format!(
                "{{ union {{ unsigned int w; unsigned short h[2]; signed char b[4]; int i; }} {name}; \
                 {name}.w = {a}; {name}.b[{k}] = {b}; {lv} = {name}.h[{j}] + {name}.i % 1000; }}"
            )
        } else {
            format!(
                "{{ struct {{ unsigned a : 3; int b : 5; unsigned long c : 40; }} {name} = {{ {a}, {b}, {b} }}; \
                 {name}.b += {a}; {name}.c -= {b}; {name}.a++; \
                 {lv} = {name}.a + {name}.b * 7 + (int)({name}.c >> 20); }}"
            )
        };
        self.line(&text);
    }

    fn lvalue(&mut self) -> Option<(String, IntTy)> {
        let vars: Vec<Var> = self.visible().into_iter().filter(|v| v.writable).collect();
        if vars.is_empty() {
            return None;
        }
        let v = self.rng.pick(&vars).clone();
        Some(self.access(&v))
    }

    /// Text that reads or writes one scalar of `v` (an element, a field), and its type.
    fn access(&mut self, v: &Var) -> (String, IntTy) {
        match v.shape {
            Shape::Scalar => (v.access.clone(), v.ty),
            Shape::Array(len) => {
                if v.pointer && self.rng.percent(40) {
                    let k = self.rng.below(len as u64);
                    let text = if k == 0 {
                        format!("(*{})", v.access)
                    } else {
                        format!("(*({} + {k}))", v.access)
                    };
                    return (text, v.ty);
                }
                let i = self.index(len);
                (format!("{}[{i}]", v.access), v.ty)
            }
            Shape::Array2(r, c) => {
                let i = self.index(r);
                let j = self.index(c);
                (format!("{}[{i}][{j}]", v.access), v.ty)
            }
            Shape::Struct => {
                let base = v.access.clone();
                self.field(&base)
            }
            Shape::StructArray(len) => {
                let i = self.index(len);
                let base = format!("{}[{i}]", v.access);
                self.field(&base)
            }
            Shape::Outer => self.outer_access(&v.access),
        }
    }

    /// A scalar inside the struct value `base`: a field or a field's element.
    fn field(&mut self, base: &str) -> (String, IntTy) {
        let fields = self.strukt.as_ref().expect("a struct type").fields.clone();
        let (f, t, len) = self.rng.pick(&fields).clone();
        // `(*p).f` is also written `p->f`.
        let member = match base.strip_prefix("(*").and_then(|b| b.strip_suffix(')')) {
            Some(p) if self.rng.percent(50) => format!("{p}->{f}"),
            _ => format!("{base}.{f}"),
        };
        match len {
            None => (member, t),
            Some(l) => {
                let i = self.index(l);
                (format!("{member}[{i}]"), t)
            }
        }
    }

    fn assignment(&mut self) {
        if let Some((lv, _)) = self.lvalue() {
            let (e, _) = self.expr(self.cfg.max_expr_depth);
            self.line(&format!("{lv} = {e};"));
        } else {
            self.declaration();
        }
    }

    /// `s = t;` for whole structs (or struct array elements); false if there is no target.
    fn struct_assignment(&mut self) -> bool {
        let targets: Vec<Var> = self
            .visible()
            .into_iter()
            .filter(|v| v.writable && v.shape.holds_struct())
            .collect();
        if targets.is_empty() {
            return false;
        }
        let t = self.rng.pick(&targets).clone();
        if t.shape == Shape::Outer && self.rng.percent(30) {
            return self.outer_assignment(&t);
        }
        let lhs = self.struct_subobject(&t, false);
        let rhs = if self.rng.percent(25) {
            let c = self.cond();
            let a = self.struct_value();
            let b = self.struct_value();
            format!("({c}) ? {a} : {b}")
        } else {
            self.struct_value()
        };
        self.line(&format!("{lhs} = {rhs};"));
        true
    }

    fn compound_assignment(&mut self) {
        let Some((lv, t)) = self.lvalue() else {
            return self.declaration();
        };
        let (e, te) = self.expr(2);
        let op = *self
            .rng
            .pick(&["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"]);
        let line = match op {
            "/" | "%" => {
                let divisor = guarded_divisor(&lv, &e, IntTy::usual(t, te));
                format!("{lv} {op}= {divisor};")
            }
            "<<" => {
                let p = t.promote();
                let count = format!("({e}) & {}", p.bits() - 1);
                if p.signed() {
                    format!(
                        "{lv} = ({})(({})({lv}) << ({count}));",
                        t.plain_spelling(),
                        t.unsigned_spelling()
                    )
                } else {
                    format!("{lv} <<= ({count});")
                }
            }
            ">>" => format!("{lv} >>= ({e}) & {};", t.promote().bits() - 1),
            _ => format!("{lv} {op}= {e};"),
        };
        self.line(&line);
    }

    fn increment(&mut self) {
        let Some((lv, t)) = self.lvalue() else {
            return self.declaration();
        };
        if t == IntTy::Bool {
            // `++`/`--` on `_Bool` is legal C but obscure; assign instead.
            return self.line(&format!("{lv} = !{lv};"));
        }
        let form = *self.rng.pick(&["{}++;", "++{};", "{}--;", "--{};"]);
        self.line(&form.replace("{}", &lv));
    }

    /// `v = w++;` and friends: a side effect inside an expression, on two distinct scalars.
    fn post_increment_copy(&mut self) {
        let scalars: Vec<Var> = self
            .visible()
            .into_iter()
            .filter(|v| v.writable && v.shape == Shape::Scalar && v.ty != IntTy::Bool)
            .collect();
        if scalars.len() < 2 {
            return self.increment();
        }
        let a = self.rng.below(scalars.len() as u64) as usize;
        let mut b = self.rng.below(scalars.len() as u64 - 1) as usize;
        if b >= a {
            b += 1;
        }
        let form = *self.rng.pick(&["{w}++", "++{w}", "{w}--", "--{w}"]);
        let rhs = form.replace("{w}", &scalars[b].access);
        self.line(&format!("{} = {rhs};", scalars[a].access));
    }

    fn array_store(&mut self) {
        let arrays: Vec<Var> = self
            .visible()
            .into_iter()
            .filter(|v| v.writable && v.shape != Shape::Scalar)
            .collect();
        if arrays.is_empty() {
            return self.declaration();
        }
        let v = self.rng.pick(&arrays).clone();
        let (lv, _) = self.access(&v);
        let (e, _) = self.expr(2);
        let op = *self.rng.pick(&["", "", "+", "^", "-"]);
        self.line(&format!("{lv} {op}= {e};"));
    }

    fn if_statement(&mut self, ctx: Ctx) {
        let c = self.cond();
        let inner = Ctx {
            nesting: ctx.nesting + 1,
            ..ctx
        };
        self.line(&format!("if ({c}) {{"));
        self.block(inner, 3);
        if self.rng.percent(50) {
            if self.rng.percent(30) && ctx.nesting + 1 < self.cfg.max_nesting {
                let c2 = self.cond();
                self.line(&format!("}} else if ({c2}) {{"));
                self.block(inner, 2);
            }
            self.line("} else {");
            self.block(inner, 3);
        }
        self.line("}");
    }

    fn switch_statement(&mut self, ctx: Ctx) {
        let e = match self.side_effect_expr() {
            // The controlling expression may modify a variable the cases then read.
            Some((e, _)) if self.rng.percent(20) => e,
            _ => self.expr(2).0,
        };
        let scrutinee = match self.rng.below(3) {
            0 => format!("({e}) & 7"),
            1 => format!("({e}) % 5"),
            _ => e,
        };
        self.line(&format!("switch ({scrutinee}) {{"));
        let mut labels: Vec<i64> = vec![0, 1, 2, 3, 4, 5, 7, -1, -4, 100];
        let n = 1 + self.rng.below(4);
        let inner = Ctx {
            in_switch: true,
            nesting: ctx.nesting + 1,
            ..ctx
        };
        // `default` anywhere among the cases (falling through into the next one, too).
        let default_at = if self.rng.percent(60) {
            Some(self.rng.below(n + 1))
        } else {
            None
        };
        for c in 0..n + u64::from(default_at.is_some()) {
            let head = if default_at == Some(c) {
                "default".to_string()
            } else {
                let k = self.rng.below(labels.len() as u64) as usize;
                let label = labels.swap_remove(k);
                format!("case {}", self.case_label(label))
            };
            self.line(&format!("{head}: {{"));
            self.block(inner, 2);
            if self.rng.percent(75) {
                self.line("} break;");
            } else {
                self.line("} /* falls through */");
            }
        }
        self.line("}");
    }

    fn loop_statement(&mut self, ctx: Ctx) {
        let n = 1 + self.rng.below(self.cfg.max_loop_iterations as u64) as u32;
        let inner = Ctx {
            in_loop: true,
            in_switch: false,
            nesting: ctx.nesting + 1,
            ret: ctx.ret,
        };
        let i = self.name("i");
        // Counters of several types; every one holds 0 ..= 2n.
        let ct = *self.rng.pick(&[
            IntTy::Int,
            IntTy::Int,
            IntTy::UInt,
            IntTy::UChar,
            IntTy::Short,
            IntTy::Long,
            IntTy::ULLong,
        ]);
        let cs = ct.spell(&mut self.rng);
        let counter = Var::new(i.clone(), ct, Shape::Scalar, false);
        let form = self.rng.below(9);
        // A counter declared before the loop stays visible after it (read only): after a
        // secret `break` it holds a secret value.
        let before = form >= 4 || self.rng.percent(20);
        if before {
            self.declare(counter);
        } else {
            self.scopes.push(vec![counter]);
        }
        let decl = if before {
            if form < 4 {
                self.line(&format!("{cs} {i};"));
            }
            String::new()
        } else {
            format!("{cs} ")
        };
        // Forms 6 to 8 also stop on a secret condition (which may read the counter and what
        // the body writes): the loop then runs its last iterations on secret paths.
        let bound = |this: &mut Gen, b: String| -> String {
            let c = this.cond();
            if this.rng.percent(50) {
                format!("{b} && ({c})")
            } else {
                format!("({c}) && {b}")
            }
        };
        // While the body is generated, an inner loop may run up to this loop's counter.
        let most = match form {
            0 | 1 => n - 1,
            3 => 2 * n - 2,
            _ => n,
        };
        self.counters.push((i.clone(), most));
        match form {
            0 | 1 => {
                // A triangular nest: the bound is an enclosing loop's counter, at most
                // `max_loop_iterations` iterations still (the tests' unroll limit lets a loop
                // under a secret condition run only that many).
                let max = self.cfg.max_loop_iterations;
                let mut bounds = Vec::new();
                for (o, most) in &self.counters[..self.counters.len() - 1] {
                    for k in 0..2 {
                        if most + k <= max {
                            bounds.push(match k {
                                0 => format!("{i} < {o}"),
                                _ if self.rng.percent(50) => format!("{i} <= {o}"),
                                _ => format!("{i} < {o} + 1"),
                            });
                        }
                    }
                }
                let limit = if !bounds.is_empty() && self.rng.percent(35) {
                    self.rng.pick(&bounds).clone()
                } else {
                    format!("{i} < {n}")
                };
                // A second variable declared in the header and stepped after a comma.
                let (mut init, mut step) = (String::new(), String::new());
                if !before && self.rng.percent(20) {
                    let k = self.name("v");
                    let c = self.constant();
                    let op = *self.rng.pick(&["+", "-", "^", "*"]);
                    let by = 1 + self.rng.below(5);
                    init = format!(", {k} = {c}");
                    step = format!(", {k} {op}= {by}");
                    self.declare(Var::new(k, ct, Shape::Scalar, true).owned());
                }
                self.line(&format!(
                    "for ({decl}{i} = 0{init}; {limit}; {i}++{step}) {{"
                ));
                self.block(inner, 3);
                self.line("}");
            }
            2 => {
                self.line(&format!("for ({decl}{i} = {n}; {i} > 0; --{i}) {{"));
                self.block(inner, 3);
                self.line("}");
            }
            3 => {
                self.line(&format!(
                    "for ({decl}{i} = 0; {i} < {}; {i} += 2) {{",
                    2 * n
                ));
                self.block(inner, 3);
                self.line("}");
            }
            4 | 7 => {
                // The counter moves first, so `continue` cannot skip it.
                self.line(&format!("{cs} {i} = 0;"));
                let mut c = format!("{i} < {n}");
                if form == 7 {
                    c = bound(self, c);
                }
                self.line(&format!("while ({c}) {{"));
                self.indent += 1;
                self.line(&format!("{i}++;"));
                self.indent -= 1;
                self.block(inner, 3);
                self.line("}");
            }
            6 => {
                self.line(&format!("{cs} {i} = 0;"));
                let c = bound(self, format!("{i} < {n}"));
                self.line(&format!("for (; {c}; {i}++) {{"));
                self.block(inner, 3);
                self.line("}");
            }
            _ => {
                self.line(&format!("{cs} {i} = 0;"));
                self.line("do {");
                self.indent += 1;
                self.line(&format!("{i} += 1;"));
                self.indent -= 1;
                self.block(inner, 3);
                let mut c = format!("{i} < {n}");
                if form == 8 {
                    c = bound(self, c);
                }
                self.line(&format!("}} while ({c});"));
            }
        }
        self.counters.pop();
        if !before {
            self.scopes.pop();
        }
    }

    /// An array variable of element type `t` with at least `min_len` elements to pass to a
    /// helper, declared here if none is visible; returns the argument text.
    fn array_argument(&mut self, t: IntTy, len: u32, exact: bool) -> String {
        let fits: Vec<Var> = self
            .visible()
            .into_iter()
            .filter(|v| {
                v.writable
                    && v.ty == t
                    && match v.shape {
                        Shape::Array(l) => l == len || (!exact && l >= len),
                        Shape::Array2(_, c) => !exact && c >= len,
                        _ => false,
                    }
            })
            .collect();
        if fits.is_empty() {
            let name = self.name("v");
            let items: Vec<String> = (0..len).map(|_| self.expr(1).0).collect();
            let sp = t.spell(&mut self.rng);
            self.line(&format!("{sp} {name}[{len}] = {{{}}};", items.join(", ")));
            self.declare(Var::new(name.clone(), t, Shape::Array(len), true).owned());
            return name;
        }
        let v = self.rng.pick(&fits).clone();
        match v.shape {
            // A row of a two-dimensional array, at a public index.
            Shape::Array2(r, _) => format!("{}[{}]", v.access, self.rng.below(r as u64)),
            Shape::Array(l) if !exact => {
                // A pointer into the array, with room for `len` elements after it.
                let k = self.rng.below((l - len + 1) as u64);
                match self.rng.below(3) {
                    0 if k == 0 => v.access,
                    1 => format!("{} + {k}", v.access),
                    _ => format!("&{}[{k}]", v.access),
                }
            }
            _ => v.access,
        }
    }

    /// A two-dimensional array of `r` rows of `c` elements of type `t` to pass to a helper,
    /// declared here if none is visible.
    fn array2_argument(&mut self, t: IntTy, r: u32, c: u32) -> String {
        let fits: Vec<Var> = self
            .visible()
            .into_iter()
            .filter(|v| v.writable && v.ty == t && v.shape == Shape::Array2(r, c))
            .collect();
        if fits.is_empty() || self.rng.percent(20) {
            let name = self.name("v");
            let mut rows = Vec::new();
            for _ in 0..r {
                let items: Vec<String> = (0..c).map(|_| self.expr(1).0).collect();
                rows.push(format!("{{{}}}", items.join(", ")));
            }
            let sp = t.spell(&mut self.rng);
            self.line(&format!("{sp} {name}[{r}][{c}] = {{{}}};", rows.join(", ")));
            self.declare(Var::new(name.clone(), t, Shape::Array2(r, c), true).owned());
            return name;
        }
        self.rng.pick(&fits).access.clone()
    }

    /// A call of a helper that cannot sit inside an expression (it takes arrays or pointers,
    /// writes globals, or returns a struct); false if there is none to call.
    fn helper_statement(&mut self) -> bool {
        let impure: Vec<Helper> = self
            .helpers
            .iter()
            .filter(|h| !h.pure && (!self.in_pure || !h.stateful))
            .cloned()
            .collect();
        if impure.is_empty() {
            return false;
        }
        let h = self.rng.pick(&impure).clone();
        let mut args = Vec::new();
        for p in &h.params {
            match p {
                HelperParam::Scalar(_) => args.push(self.expr(2).0),
                HelperParam::Struct => args.push(self.struct_value()),
                HelperParam::Array(t, len) => args.push(self.array_argument(*t, *len, true)),
                HelperParam::ElementPointer(t) => args.push(self.array_argument(*t, 2, false)),
                HelperParam::Array2(t, r, c) => args.push(self.array2_argument(*t, *r, *c)),
                HelperParam::Pointer(t) => {
                    let fits: Vec<Var> = self
                        .visible()
                        .into_iter()
                        .filter(|v| {
                            v.writable
                                && v.ty == *t
                                && v.shape == Shape::Scalar
                                && !v.access.starts_with("(*")
                        })
                        .collect();
                    let target = if fits.is_empty() {
                        let name = self.name("v");
                        let (e, _) = self.expr(1);
                        let sp = t.spell(&mut self.rng);
                        self.line(&format!("{sp} {name} = {e};"));
                        self.declare(Var::new(name.clone(), *t, Shape::Scalar, true).owned());
                        name
                    } else {
                        self.rng.pick(&fits).access.clone()
                    };
                    args.push(format!("&{target}"));
                }
                HelperParam::StructPointer => {
                    let s = self.struct_at_public_place();
                    args.push(format!("&{s}"));
                }
            }
        }
        // An argument that modifies an owned variable no other argument names.
        let scalar_args: Vec<usize> = (0..h.params.len())
            .filter(|&k| matches!(h.params[k], HelperParam::Scalar(_)))
            .collect();
        let mut modified = None;
        if !scalar_args.is_empty()
            && self.rng.percent(20)
            && let Some((e, base)) = self.side_effect_expr()
        {
            let k = *self.rng.pick(&scalar_args);
            if !args
                .iter()
                .enumerate()
                .any(|(j, a)| j != k && wide::mentions(a, &base))
            {
                args[k] = e;
                modified = Some(base);
            }
        }
        let call = format!("{}({})", h.name, args.join(", "));
        // Assign the result to a variable the call does not touch (by name: conservative).
        let global_prefix = format!("{}_g", self.prefix);
        let touches = |lv: &str| {
            modified.as_ref().is_some_and(|b| wide::mentions(lv, b))
                || args.iter().any(|a| {
                    let name: String = a
                        .trim_start_matches('&')
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    !name.is_empty() && lv.contains(&name)
                })
                || lv.contains(&global_prefix)
        };
        match h.ret {
            None => {
                let targets: Vec<Var> = self
                    .visible()
                    .into_iter()
                    .filter(|v| v.writable && v.shape == Shape::Struct && !touches(&v.access))
                    .collect();
                if targets.is_empty() || self.rng.percent(20) {
                    self.line(&format!("{call};"));
                } else {
                    let t = self.rng.pick(&targets).access.clone();
                    self.line(&format!("{t} = {call};"));
                }
            }
            Some(_) => match self.lvalue() {
                Some((lv, _)) if self.rng.percent(70) && !touches(&lv) => {
                    self.line(&format!("{lv} = {call};"))
                }
                _ => self.line(&format!("{call};")),
            },
        }
        true
    }

    // ---- expressions ----------------------------------------------------------------------

    /// The variables in scope, an inner one hiding an outer one of the same name.
    fn visible(&self) -> Vec<Var> {
        let mut seen = std::collections::HashSet::new();
        let mut out: Vec<Var> = Vec::new();
        for v in self.scopes.iter().rev().flat_map(|s| s.iter().rev()) {
            if seen.insert(v.access.as_str()) {
                out.push(v.clone());
            }
        }
        out.reverse();
        out
    }

    fn cond(&mut self) -> String {
        let (e, _) = self.expr(2);
        e
    }

    /// An index into `0..len`: constant, masked, reduced or clamped.
    fn index(&mut self, len: u32) -> String {
        if self.index_nesting >= 2 {
            return self.rng.below(len as u64).to_string();
        }
        self.index_nesting += 1;
        let i = self.index_inner(len);
        self.index_nesting -= 1;
        i
    }

    fn index_inner(&mut self, len: u32) -> String {
        // A loop counter (a constant in each iteration, so a loop indexing by it can be
        // stored once in compact compilation).
        let counters: Vec<Var> = self
            .visible()
            .into_iter()
            .filter(|v| {
                v.access.len() > 1
                    && v.access.starts_with('i')
                    && v.access[1..].bytes().all(|b| b.is_ascii_digit())
            })
            .collect();
        if !counters.is_empty() && self.rng.percent(30) {
            let i = self.rng.pick(&counters).access.clone();
            let k = self.rng.below(3);
            return if k == 0 {
                format!("({i}) % {len}")
            } else {
                format!("({i} + {k}) % {len}")
            };
        }
        match self.rng.below(8) {
            0 => self.rng.below(len as u64).to_string(),
            1..=3 if len.is_power_of_two() => {
                let (e, _) = self.expr(1);
                format!("({e}) & {}", len - 1)
            }
            1..=4 => {
                let (e, _) = self.expr(1);
                format!("(unsigned)({e}) % {len}u")
            }
            _ => {
                let (e, _) = self.leaf();
                format!("({e}) >= 0 && ({e}) < {len} ? ({e}) : {}", len - 1)
            }
        }
    }

    fn literal(&mut self) -> (String, IntTy) {
        match self.rng.below(14) {
            0..=5 => (self.rng.below(10).to_string(), IntTy::Int),
            6 => {
                let c = b'0' + self.rng.below(75) as u8;
                let c = if c == b'\\' || c == b'\'' { b'x' } else { c };
                (format!("'{}'", c as char), IntTy::Int)
            }
            7 => ((self.rng.next_u64() >> 33).to_string(), IntTy::Int),
            8 => (format!("0x{:x}u", self.rng.next_u64() >> 32), IntTy::UInt),
            9 => {
                let v = self.rng.next_u64() >> 1;
                if self.rng.percent(50) {
                    (format!("{v}L"), IntTy::Long)
                } else {
                    (format!("{v}LL"), IntTy::LLong)
                }
            }
            10 => {
                let v = self.rng.next_u64();
                if self.rng.percent(50) {
                    (format!("0x{v:x}UL"), IntTy::ULong)
                } else {
                    (format!("{v}ULL"), IntTy::ULLong)
                }
            }
            11 => (format!("{}u", self.rng.below(40)), IntTy::UInt),
            _ => self.more_literal(),
        }
    }

    fn leaf(&mut self) -> (String, IntTy) {
        let vars = self.visible();
        if vars.is_empty() || self.rng.percent(25) {
            return self.literal();
        }
        let v = self.rng.pick(&vars).clone();
        if v.shape.holds_struct() && !self.in_value_member && self.rng.percent(15) {
            return self.value_member();
        }
        self.access(&v)
    }

    fn expr(&mut self, depth: u32) -> (String, IntTy) {
        if depth == 0 || self.rng.percent(25) {
            return self.leaf();
        }
        let d = depth - 1;
        match self.rng.below(27) {
            0..=2 => {
                let op = *self.rng.pick(&["+", "-", "*"]);
                self.binary(op, d)
            }
            3..=4 => {
                let op = *self.rng.pick(&["&", "|", "^"]);
                self.binary(op, d)
            }
            5..=6 => {
                let op = *self.rng.pick(&["/", "%"]);
                let (a, ta) = self.expr(d.min(1));
                let (b, tb) = self.expr(d.min(1));
                let t = IntTy::usual(ta, tb);
                (format!("(({a}) {op} {})", guarded_divisor(&a, &b, t)), t)
            }
            7..=8 => {
                let (a, ta) = self.expr(d);
                let (b, _) = self.expr(d.min(1));
                let p = ta.promote();
                let count = format!("(({b}) & {})", p.bits() - 1);
                if self.rng.percent(50) {
                    (format!("(({a}) >> {count})"), p)
                } else if p.signed() {
                    (
                        format!(
                            "(({})(({})({a}) << {count}))",
                            p.plain_spelling(),
                            p.unsigned_spelling()
                        ),
                        p,
                    )
                } else {
                    (format!("(({a}) << {count})"), p)
                }
            }
            9..=11 => {
                let op = *self.rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
                let (a, _) = self.expr(d);
                let (b, _) = self.expr(d);
                (format!("(({a}) {op} ({b}))"), IntTy::Int)
            }
            12..=13 => {
                let op = *self.rng.pick(&["&&", "||"]);
                let (a, _) = self.expr(d);
                let (b, _) = self.expr(d);
                (format!("(({a}) {op} ({b}))"), IntTy::Int)
            }
            14..=15 => {
                let (a, ta) = self.expr(d);
                match self.rng.below(4) {
                    0 => (format!("(~({a}))"), ta.promote()),
                    1 => (format!("(-({a}))"), ta.promote()),
                    2 => (format!("(!({a}))"), IntTy::Int),
                    _ => (format!("(+({a}))"), ta.promote()),
                }
            }
            16..=17 => {
                let t = self.any_type();
                let sp = self.spelling(t);
                let (a, _) = self.expr(d);
                (format!("(({sp})({a}))"), t)
            }
            18..=19 => {
                let (c, _) = self.expr(d);
                let (a, ta) = self.expr(d);
                let (b, tb) = self.expr(d);
                (format!("(({c}) ? ({a}) : ({b}))"), IntTy::usual(ta, tb))
            }
            20..=21 => self.call(d),
            22 => {
                let t = self.any_type();
                (format!("((int)sizeof({}))", self.spelling(t)), IntTy::Int)
            }
            23 => {
                // The comma operator: the left side is evaluated (no effect) and dropped. Its
                // left side is a variable: gcc 12 crashes (an internal compiler error in
                // gimplify_expr) converting a comma of two constants to `_Bool`.
                let vars = self.visible();
                if vars.is_empty() {
                    return self.leaf();
                }
                let v = self.rng.pick(&vars).clone();
                let (a, _) = self.access(&v);
                let (b, tb) = self.expr(d);
                (format!("(({a}), ({b}))"), tb)
            }
            24 => self.builtin_call(d),
            25 => self.sizeof_expr(d),
            _ => self.leaf(),
        }
    }

    fn binary(&mut self, op: &str, d: u32) -> (String, IntTy) {
        let (a, ta) = self.expr(d);
        let (b, tb) = self.expr(d);
        (format!("(({a}) {op} ({b}))"), IntTy::usual(ta, tb))
    }

    fn call(&mut self, d: u32) -> (String, IntTy) {
        // A helper taking a struct needs a struct variable in scope (no compound literals:
        // pgc does not take them).
        let have_struct = self.visible().iter().any(|v| v.shape.holds_struct());
        let pure: Vec<Helper> = self
            .helpers
            .iter()
            .filter(|h| h.pure && (have_struct || !h.params.contains(&HelperParam::Struct)))
            .cloned()
            .collect();
        if pure.is_empty() {
            return self.leaf();
        }
        let h = self.rng.pick(&pure).clone();
        let args: Vec<String> = h
            .params
            .iter()
            .map(|p| match p {
                HelperParam::Struct => self.struct_value_pure(),
                _ => self.expr(d.min(1)).0,
            })
            .collect();
        (
            format!("{}({})", h.name, args.join(", ")),
            h.ret.expect("pure helpers return integers"),
        )
    }

    /// A struct value inside an expression: an existing variable only (declaring one would
    /// emit a statement in the middle of an expression; `call` checks there is one).
    fn struct_value_pure(&mut self) -> String {
        let candidates: Vec<Var> = self
            .visible()
            .into_iter()
            .filter(|v| v.shape.holds_struct())
            .collect();
        let v = self.rng.pick(&candidates).clone();
        self.struct_subobject(&v, false)
    }
}

/// `b`, made safe as the divisor of `a` in type `t`: never 0, and never -1 when `a` is the
/// most negative value of a signed `t` (both trap on x86-64, even with `-fwrapv`).
fn guarded_divisor(a: &str, b: &str, t: IntTy) -> String {
    if t.signed() {
        format!(
            "((({b}) == 0 || (({b}) == -1 && ({a}) == {})) ? 1 : ({b}))",
            t.min_expr()
        )
    } else {
        format!("(({b}) == 0 ? 1 : ({b}))")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usual_arithmetic_conversions_follow_c11() {
        use IntTy::*;
        assert_eq!(IntTy::usual(UChar, Short), Int);
        assert_eq!(IntTy::usual(Int, UInt), UInt);
        assert_eq!(IntTy::usual(UInt, Long), Long);
        assert_eq!(IntTy::usual(ULong, LLong), ULLong);
        assert_eq!(IntTy::usual(Long, LLong), LLong);
        assert_eq!(IntTy::usual(Bool, Bool), Int);
        assert_eq!(IntTy::usual(ULong, Int), ULong);
    }

    #[test]
    fn generation_is_deterministic_and_varied() {
        let cfg = Config::default();
        let a = generate(7, "p", &cfg);
        let b = generate(7, "p", &cfg);
        assert_eq!(a.source, b.source);
        let c = generate(8, "p", &cfg);
        assert_ne!(a.source, c.source);
        assert!(a.source.contains(" p_main("));
    }

    #[test]
    fn features_appear_across_seeds() {
        let cfg = Config::default();
        let all: String = (0..500)
            .map(|s| generate(s, &format!("p{s}"), &cfg).source)
            .collect();
        for feature in [
            "continue;",
            "break;",
            "return",
            "switch (",
            "while (",
            "do {",
            "struct p",
            "->",
            "static const",
            " / ",
            " % ",
            " << ",
            " >> ",
            "++",
            "--",
            "][",
            "INPUT_A_x0;",
            "OUTPUT_A_",
            "OUTPUT_B_",
            "+ 1)",
            "sizeof",
            "? (",
            // The constructs of `wide`.
            " && (v",
            ") || (",
            "++) ",
            "), (",
            " = &v",
            "*p",
            "[0] = ",
            "static ",
            "__builtin_popcount",
            "__builtin_parity",
            "(*a",
            "[][",
            ") ? v",
            "; i",
            ") && i",
            // The constructs of `more`.
            "enum p",
            "typedef ",
            "_st ",
            "'\\377'",
            "sizeof(",
            "sizeof v",
            "_Alignof(",
            "default: {",
            "case (char)",
            "{.f",
            "[1] = {",
            "++, v",
            " < i",
            "_o { ",
            "struct p",
            ".m1.f",
            ")).f",
            // Unions and bit-fields.
            "_scratch.b[",
            "int b : 5;",
        ] {
            assert!(all.contains(feature), "no program has {feature:?}");
        }
    }
}
