//! Turns a C program into something gcc can run as the oracle.
//!
//! For each program ("unit") we emit its preprocessed text plus a run function
//! `pgc_oracle_run_N(void)` that declares one variable per entry parameter, fills the
//! `INPUT_` ones from the array `pgc_oracle_input` (leaf `k` of input port `p` at the port's
//! offset + `k`), calls the entry and reports the `OUTPUT_` ones through
//! `pgc_oracle_emit(name, count, values)`. Parameters are declared with the program's own
//! declaration text (qualifiers dropped, and for `T *OUTPUT_x` the `*` dropped so that the
//! variable is the pointee), so types, typedefs and structs are exactly the program's.
//!
//! Programs in the CBMC-GC local style (`int INPUT_A_x;` and `int OUTPUT_y = …;` declared in
//! the entry's body) are rewritten: each input declaration is followed by the code that fills
//! it, and the output locals are reported before every `return` and at the closing brace.
//! The rewrite is done on the parsed program (`lang-c`, spans into the preprocessed text), not
//! by pattern matching, and refuses the shapes it cannot handle faithfully.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use lang_c::ast::{
    BlockItem, Declaration, DeclaratorKind, DerivedDeclarator, ExternalDeclaration, ForInitializer,
    FunctionDefinition, InitDeclarator, ParameterDeclaration, Statement,
};
use lang_c::driver::{Config, parse_preprocessed};
use lang_c::span::{Node, Span};
use lang_c::visit::{self, Visit};
use pgc_circuit::CType;
use pgc_compiler::Compiled;

use super::values::leaves;

/// Where a program's text comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A file on disk (its directory is searched for `#include "…"`).
    File(PathBuf),
    /// Text with a name for messages.
    Text { name: String, text: String },
}

impl Source {
    pub fn name(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Text { name, .. } => name.clone(),
        }
    }

    pub fn text(&self) -> String {
        match self {
            Source::File(p) => std::fs::read_to_string(p)
                .unwrap_or_else(|e| format!("<cannot read {}: {e}>", p.display())),
            Source::Text { text, .. } => text.clone(),
        }
    }
}

/// Runs the system preprocessor the way the oracle build needs it (no line markers).
pub fn preprocess(
    src: &Source,
    defines: &[String],
    include_dirs: &[PathBuf],
    scratch: &Path,
) -> Result<String, String> {
    let path = match src {
        Source::File(p) => p.clone(),
        Source::Text { text, .. } => {
            let p = scratch.join(format!("pp-{}.c", std::process::id()));
            std::fs::write(&p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
            p
        }
    };
    let mut cmd = Command::new("gcc");
    cmd.args(["-E", "-P", "-std=gnu11"]);
    for d in defines {
        cmd.arg(format!("-D{d}"));
    }
    for i in include_dirs {
        cmd.arg("-I").arg(i);
    }
    cmd.arg(&path);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run gcc -E: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "gcc -E failed on {}:\n{}",
            src.name(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|_| "preprocessed text is not UTF-8".to_string())
}

/// How an entry parameter is passed.
#[derive(Clone, Debug)]
enum ParamKind {
    /// `T x`: by value.
    Value,
    /// `T *x` (also `T (*x)[n]`): the variable is the pointee, passed as `&x`. The span is
    /// the `*` (with its qualifiers) to drop from the declaration text.
    Pointer(Span),
    /// `T x[n]`: the variable is the array, passed as `x`.
    Array,
}

struct Param {
    name: String,
    span: Span,
    kind: ParamKind,
}

/// One unit rendered: the program (rewritten if it declares inputs or outputs as locals) and
/// its run function.
pub struct Rendered {
    pub program: String,
    /// Whether `program` differs from the preprocessed text.
    pub rewritten: bool,
    pub run_function: String,
}

/// Renders one unit from its preprocessed text.
pub fn render_unit(index: usize, pre: &str, compiled: &Compiled) -> Result<Rendered, String> {
    let parsed = parse_preprocessed(&Config::with_gcc(), pre.to_string()).map_err(|e| {
        format!(
            "lang-c cannot parse the preprocessed program at line {} column {}",
            e.line, e.column
        )
    })?;
    let entry = parsed
        .unit
        .0
        .iter()
        .find_map(|ext| match &ext.node {
            ExternalDeclaration::FunctionDefinition(f)
                if declarator_name(&f.node.declarator.node.kind.node).as_deref()
                    == Some(compiled.entry_name.as_str()) =>
            {
                Some(f)
            }
            _ => None,
        })
        .ok_or_else(|| format!("no definition of the entry `{}`", compiled.entry_name))?;

    let params = entry_params(&entry.node)?;
    let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
    if names != compiled.entry_params {
        return Err(format!(
            "the entry's parameters are {names:?} but the compiler reports {:?}",
            compiled.entry_params
        ));
    }

    // Input ports: offset of their first leaf in the input array.
    let mut input_offset: HashMap<&str, (usize, &CType)> = HashMap::new();
    let mut off = 0usize;
    for p in &compiled.interface.inputs {
        input_offset.insert(p.name.as_str(), (off, &p.ctype));
        off += leaves(&p.ctype).len();
    }
    let output_type: HashMap<&str, &CType> = compiled
        .interface
        .outputs
        .iter()
        .map(|p| (p.name.as_str(), &p.ctype))
        .collect();

    let mut covered_inputs: Vec<&str> = Vec::new();
    let mut covered_outputs: Vec<&str> = Vec::new();
    for p in &params {
        if input_offset.contains_key(p.name.as_str()) {
            covered_inputs.push(&p.name);
        } else if output_type.contains_key(p.name.as_str()) {
            if matches!(p.kind, ParamKind::Value) {
                return Err(format!(
                    "output parameter `{}` is passed by value: the caller cannot see it",
                    p.name
                ));
            }
            covered_outputs.push(&p.name);
        } else {
            return Err(format!(
                "parameter `{}` is neither an input nor an output port of the compiled program",
                p.name
            ));
        }
    }

    // The local-style rewrite of the entry's body.
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let Statement::Compound(items) = &entry.node.statement.node else {
        return Err("the entry's body is not a block".into());
    };
    let body_span = entry.node.statement.span;
    let top_level: Vec<Span> = items
        .iter()
        .filter_map(|i| match &i.node {
            BlockItem::Declaration(d) => Some(d.span),
            _ => None,
        })
        .collect();
    let mut walk = BodyWalk::default();
    walk.visit_statement(&entry.node.statement.node, &entry.node.statement.span);
    if let Some(name) = walk.for_init_io.first() {
        return Err(format!(
            "`{name}` is declared in a for-loop header; the harness cannot fill or print it there"
        ));
    }
    let mut local_outputs: Vec<(&str, usize)> = Vec::new(); // name, declaration start
    for (span, decl_names) in &walk.declarations {
        let mut fills = String::new();
        for n in decl_names {
            if let Some((off, t)) = input_offset.get(n.as_str()) {
                fills.push_str(&fill_code(n, *off, t));
                covered_inputs.push(input_offset.get_key_value(n.as_str()).unwrap().0);
            } else if let Some((key, _)) = output_type.get_key_value(n.as_str()) {
                if !top_level.contains(span) {
                    return Err(format!(
                        "output local `{n}` is declared in a nested block; the harness prints \
                         outputs at the function's end and cannot see it there"
                    ));
                }
                local_outputs.push((key, span.start));
                covered_outputs.push(key);
            }
        }
        if !fills.is_empty() {
            edits.push((span.end, span.end, format!(" {fills}")));
        }
    }
    let emit_locals: String = local_outputs
        .iter()
        .map(|(n, _)| emit_code(n, output_type[n]))
        .collect();
    if !local_outputs.is_empty() {
        let last_decl = local_outputs.iter().map(|(_, s)| *s).max().unwrap_or(0);
        for r in &walk.returns {
            if r.start < last_decl {
                return Err(
                    "a `return` comes before an output local's declaration; the harness cannot \
                     print that output there"
                        .into(),
                );
            }
            edits.push((r.start, r.start, format!("{{ {emit_locals}")));
            edits.push((r.end, r.end, " }".into()));
        }
        let close = body_span.end - 1;
        if pre.as_bytes().get(close) != Some(&b'}') {
            return Err("cannot find the entry's closing brace".into());
        }
        edits.push((close, close, format!("{emit_locals}\n")));
    }

    for p in &compiled.interface.inputs {
        if !covered_inputs.contains(&p.name.as_str()) {
            return Err(format!(
                "input port `{}` is neither a parameter nor a local of the entry",
                p.name
            ));
        }
    }
    // pgc reports a non-void entry's return value as the output `OUTPUT_return`.
    let return_port = output_type
        .get_key_value("OUTPUT_return")
        .filter(|(k, _)| !covered_outputs.contains(*k))
        .map(|(k, t)| (*k, *t));
    if let Some((k, _)) = return_port {
        covered_outputs.push(k);
    }
    for p in &compiled.interface.outputs {
        if !covered_outputs.contains(&p.name.as_str()) {
            return Err(format!(
                "output port `{}` is neither a parameter nor a top-level local of the entry",
                p.name
            ));
        }
    }

    let rewritten = !edits.is_empty();
    let program = apply_edits(pre, edits);

    // The run function.
    let mut code = format!("\nvoid pgc_oracle_run_{index}(void)\n{{\n");
    for p in &params {
        let mut text = pre[p.span.start..p.span.end].to_string();
        if let ParamKind::Pointer(star) = &p.kind {
            let (s, e) = (star.start - p.span.start, star.end - p.span.start);
            text.replace_range(s..e, &" ".repeat(e - s));
        }
        code.push_str(&format!(
            "    {};\n    __builtin_memset(&{}, 0, sizeof {});\n",
            strip_qualifiers(&text),
            p.name,
            p.name
        ));
    }
    for p in &params {
        if let Some((off, t)) = input_offset.get(p.name.as_str()) {
            code.push_str("    ");
            code.push_str(&fill_code(&p.name, *off, t));
            code.push('\n');
        }
    }
    let args: Vec<String> = params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Pointer(_) => format!("&{}", p.name),
            ParamKind::Value | ParamKind::Array => p.name.clone(),
        })
        .collect();
    let call = format!("{}({})", compiled.entry_name, args.join(", "));
    match return_port {
        // `__typeof__` does not evaluate the call; the declaration's initializer does, once.
        Some((_, t)) => code.push_str(&format!(
            "    __typeof__({call}) pgc_oracle_ret = {call};\n    {}\n",
            emit_code_as("pgc_oracle_ret", "OUTPUT_return", t)
        )),
        None => code.push_str(&format!("    {call};\n")),
    }
    for p in &params {
        if let Some(t) = output_type.get(p.name.as_str()) {
            code.push_str("    ");
            code.push_str(&emit_code(&p.name, t));
            code.push('\n');
        }
    }
    code.push_str("}\n");
    Ok(Rendered {
        program,
        rewritten,
        run_function: code,
    })
}

/// The declarations every unit's code needs, once at the top of the program file.
pub const UNIT_PRELUDE: &str = "extern const unsigned long long *pgc_oracle_input;\n\
     extern void pgc_oracle_emit(const char *name, int count, const unsigned long long *values);\n";

/// The driver: reads `unit count v1 … vcount` records from stdin, runs each in a forked child
/// (so a program's globals start fresh every time and a crash is reported, not fatal), and
/// writes `OUT name v…` lines then `END status` per record.
pub fn driver_c(units: usize) -> String {
    let mut c = String::from(
        "#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n#include <sys/wait.h>\n\
         const unsigned long long *pgc_oracle_input;\n\
         void pgc_oracle_emit(const char *name, int count, const unsigned long long *values)\n{\n\
         \x20   printf(\"OUT %s\", name);\n\
         \x20   for (int i = 0; i < count; i++)\n        printf(\" %llu\", values[i]);\n\
         \x20   printf(\"\\n\");\n}\n",
    );
    for i in 0..units {
        c.push_str(&format!("void pgc_oracle_run_{i}(void);\n"));
    }
    c.push_str("static void (*const pgc_oracle_runs[])(void) = {\n");
    for i in 0..units {
        c.push_str(&format!("    pgc_oracle_run_{i},\n"));
    }
    c.push_str(&format!(
        "}};\n\
         int main(void)\n{{\n\
         \x20   int unit;\n    long count;\n\
         \x20   while (scanf(\"%d %ld\", &unit, &count) == 2) {{\n\
         \x20       if (unit < 0 || unit >= {units} || count < 0) return 2;\n\
         \x20       unsigned long long *vals = malloc(sizeof *vals * (count + 1));\n\
         \x20       for (long k = 0; k < count; k++)\n\
         \x20           if (scanf(\"%llu\", &vals[k]) != 1) return 3;\n\
         \x20       pgc_oracle_input = vals;\n\
         \x20       fflush(stdout);\n\
         \x20       pid_t pid = fork();\n\
         \x20       if (pid == 0) {{\n\
         \x20           alarm(20);\n\
         \x20           pgc_oracle_runs[unit]();\n\
         \x20           fflush(stdout);\n\
         \x20           _exit(0);\n\
         \x20       }}\n\
         \x20       int status = -1;\n\
         \x20       if (pid > 0) waitpid(pid, &status, 0);\n\
         \x20       printf(\"END %d\\n\", status);\n\
         \x20       free(vals);\n\
         \x20   }}\n\
         \x20   return 0;\n}}\n"
    ));
    c
}

fn fill_code(name: &str, offset: usize, t: &CType) -> String {
    leaves(t)
        .iter()
        .enumerate()
        .map(|(k, l)| {
            if l.float {
                // The bit pattern itself (x86-64 is little-endian: a float takes the low 4
                // bytes), NaN payloads included.
                format!(
                    "__builtin_memcpy(&{name}{p}, &pgc_oracle_input[{}], sizeof {name}{p});",
                    offset + k,
                    p = l.path
                )
            } else {
                format!(
                    "{name}{p} = (__typeof__({name}{p}))pgc_oracle_input[{}];",
                    offset + k,
                    p = l.path
                )
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn emit_code(name: &str, t: &CType) -> String {
    emit_code_as(name, name, t)
}

/// Reports the value of the C variable `var` as the output port `name`.
fn emit_code_as(var: &str, name: &str, t: &CType) -> String {
    let ls = leaves(t);
    let mut c = format!("{{ unsigned long long pgc_oracle_v[{}]; ", ls.len());
    for (k, l) in ls.iter().enumerate() {
        if l.float {
            c.push_str(&format!(
                "pgc_oracle_v[{k}] = 0; __builtin_memcpy(&pgc_oracle_v[{k}], &{var}{p}, sizeof {var}{p}); ",
                p = l.path
            ));
        } else {
            c.push_str(&format!(
                "pgc_oracle_v[{k}] = (unsigned long long)({var}{}); ",
                l.path
            ));
        }
    }
    c.push_str(&format!(
        "pgc_oracle_emit(\"{name}\", {}, pgc_oracle_v); }} ",
        ls.len()
    ));
    c
}

fn apply_edits(text: &str, mut edits: Vec<(usize, usize, String)>) -> String {
    // Later positions first so earlier offsets stay valid; at one position, the edit recorded
    // last goes in last (stable sort, then reversed order of application keeps that order).
    edits.sort_by_key(|e| (e.0, e.1));
    let mut out = text.to_string();
    for (start, end, rep) in edits.into_iter().rev() {
        out.replace_range(start..end, &rep);
    }
    out
}

/// Drops type qualifiers and storage classes a local copy of a parameter must not have.
fn strip_qualifiers(text: &str) -> String {
    const DROP: [&str; 7] = [
        "const",
        "volatile",
        "restrict",
        "__restrict",
        "__restrict__",
        "register",
        "__const",
    ];
    let mut out = String::new();
    let mut word = String::new();
    for ch in text.chars().chain(std::iter::once(' ')) {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            word.push(ch);
        } else {
            if !DROP.contains(&word.as_str()) {
                out.push_str(&word);
            }
            word.clear();
            out.push(ch);
        }
    }
    out.pop();
    out
}

fn declarator_name(kind: &DeclaratorKind) -> Option<String> {
    match kind {
        DeclaratorKind::Identifier(id) => Some(id.node.name.clone()),
        DeclaratorKind::Declarator(d) => declarator_name(&d.node.kind.node),
        DeclaratorKind::Abstract => None,
    }
}

fn entry_params(f: &FunctionDefinition) -> Result<Vec<Param>, String> {
    let decl = &f.declarator.node;
    let mut func = None;
    for d in &decl.derived {
        match &d.node {
            DerivedDeclarator::Function(fd) => func = Some(&fd.node.parameters[..]),
            // `f()`: an old-style declaration without parameters.
            DerivedDeclarator::KRFunction(ids) if ids.is_empty() => func = Some(&[][..]),
            _ => {}
        }
    }
    let func =
        func.ok_or("the entry is declared without a prototype (K&R parameters are not supported)")?;
    let mut params = Vec::new();
    for p in func {
        let ParameterDeclaration { declarator, .. } = &p.node;
        let Some(d) = declarator else {
            continue; // `(void)`
        };
        let name = declarator_name(&d.node.kind.node).ok_or("an entry parameter has no name")?;
        params.push(Param {
            kind: param_kind(&d.node)?,
            name,
            span: p.span,
        });
    }
    Ok(params)
}

/// Postfix derivations (arrays) bind tighter than `*`, so the type constructor applied first
/// is in the innermost declarator: an array there makes an array parameter, else one `*`
/// makes a pointer parameter.
fn param_kind(d: &lang_c::ast::Declarator) -> Result<ParamKind, String> {
    if let DeclaratorKind::Declarator(inner) = &d.kind.node {
        return param_kind(&inner.node);
    }
    let arrays = d
        .derived
        .iter()
        .filter(|x| matches!(x.node, DerivedDeclarator::Array(_)))
        .count();
    let pointers: Vec<&Node<DerivedDeclarator>> = d
        .derived
        .iter()
        .filter(|x| matches!(x.node, DerivedDeclarator::Pointer(_)))
        .collect();
    if d.derived
        .iter()
        .any(|x| matches!(x.node, DerivedDeclarator::Function(_)))
    {
        return Err("function-pointer parameters are not supported by the harness".into());
    }
    match (arrays, pointers.len()) {
        (0, 0) => Ok(ParamKind::Value),
        (0, 1) => Ok(ParamKind::Pointer(pointers[0].span)),
        (_, 0) => Ok(ParamKind::Array),
        _ => Err("pointer-to-pointer and array-of-pointer parameters are not supported".into()),
    }
}

/// Collects every declaration (with its declared names) and `return` in the entry's body.
#[derive(Default)]
struct BodyWalk {
    declarations: Vec<(Span, Vec<String>)>,
    returns: Vec<Span>,
    in_for_init: bool,
    for_init_io: Vec<String>,
}

impl<'ast> Visit<'ast> for BodyWalk {
    fn visit_declaration(&mut self, declaration: &'ast Declaration, span: &'ast Span) {
        let names: Vec<String> = declaration
            .declarators
            .iter()
            .filter_map(|d: &Node<InitDeclarator>| {
                declarator_name(&d.node.declarator.node.kind.node)
            })
            .collect();
        if self.in_for_init {
            self.for_init_io.extend(
                names
                    .iter()
                    .filter(|n| n.starts_with("INPUT_") || n.starts_with("OUTPUT_"))
                    .cloned(),
            );
        } else {
            self.declarations.push((*span, names));
        }
        visit::visit_declaration(self, declaration, span);
    }

    fn visit_for_initializer(&mut self, init: &'ast ForInitializer, span: &'ast Span) {
        self.in_for_init = true;
        visit::visit_for_initializer(self, init, span);
        self.in_for_init = false;
    }

    fn visit_statement(&mut self, statement: &'ast Statement, span: &'ast Span) {
        if let Statement::Return(_) = statement {
            self.returns.push(*span);
        }
        visit::visit_statement(self, statement, span);
    }
}
