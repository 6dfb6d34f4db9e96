//! Coarse-grained parallelism (USENIX Sec 2015 §4.4): which `for` loops may become parallel
//! regions, and how their reductions are rewritten.
//!
//! Independence itself is checked on the circuit as it is built (the netlist builder sees
//! every gate an iteration makes and notices one that reads a gate of an earlier
//! iteration), which is exact: it follows pointers, inlined calls and secret control flow
//! the way the program really runs. What the source must tell is which variables are
//! *reductions*: a variable only ever updated as `v op= e` (or `v = v op e`, `v++`, or the
//! min/max forms `if (e < v) v = e;`) carries a value from one iteration to the next, but
//! because the operator is associative and commutative each iteration may start from the
//! operator's identity and the partial results be combined afterwards (in a balanced tree).

use lang_c::ast::*;
use lang_c::span::{Node, Span};
use lang_c::visit::{self, Visit};

/// The associative, commutative operators a reduction may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RedOp {
    /// `+=`, `-=`, `++`, `--` (subtraction adds the negation).
    Add,
    Mul,
    And,
    Or,
    Xor,
    Min,
    Max,
}

impl RedOp {
    pub fn name(self) -> &'static str {
        match self {
            RedOp::Add => "+",
            RedOp::Mul => "*",
            RedOp::And => "&",
            RedOp::Or => "|",
            RedOp::Xor => "^",
            RedOp::Min => "min",
            RedOp::Max => "max",
        }
    }

    /// The operator an OpenMP `reduction(op:…)` clause names.
    pub fn from_clause(s: &str) -> Option<RedOp> {
        Some(match s {
            "+" | "-" => RedOp::Add,
            "*" => RedOp::Mul,
            "&" => RedOp::And,
            "|" => RedOp::Or,
            "^" => RedOp::Xor,
            "min" => RedOp::Min,
            "max" => RedOp::Max,
            _ => return None,
        })
    }
}

/// A `#pragma omp parallel for` found in the preprocessed text.
#[derive(Clone, Debug)]
pub struct OmpPragma {
    /// Offset of the pragma line in the preprocessed text.
    pub offset: usize,
    /// Offset just past the pragma line.
    pub end: usize,
    /// `reduction(op: a, b)` clauses.
    pub reductions: Vec<(RedOp, String)>,
}

/// Removes `#pragma` lines from preprocessed text (the C parser does not take them),
/// keeping every other byte's offset; returns the `omp parallel for` pragmas. Other
/// pragmas are ignored, as a C compiler ignores pragmas it does not know. Errors name a
/// malformed `omp parallel for` clause (offset, message).
pub fn take_pragmas(text: &mut String) -> Result<Vec<OmpPragma>, (usize, String)> {
    let mut found = Vec::new();
    let mut blank: Vec<(usize, usize)> = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim_start();
        let Some(rest) = trimmed.strip_prefix('#') else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(body) = rest.strip_prefix("pragma") else {
            continue;
        };
        blank.push((start, offset));
        let words: String = body.trim().to_string();
        let mut tokens = words.split_whitespace();
        if tokens.next() != Some("omp") {
            continue;
        }
        let directive: Vec<&str> = words.split_whitespace().skip(1).take(2).collect();
        if directive != ["parallel", "for"] {
            continue;
        }
        let clauses = words.split_once("for").map(|(_, c)| c.trim()).unwrap_or("");
        let reductions = parse_clauses(clauses).map_err(|m| (start, m))?;
        found.push(OmpPragma {
            offset: start,
            end: offset,
            reductions,
        });
    }
    // SAFETY-free byte surgery: replace each pragma line (ASCII-only prefix up to the
    // newline) by spaces; multi-byte characters in it become spaces byte by byte, which
    // keeps the string valid UTF-8 since every replaced byte becomes ASCII.
    let mut bytes = std::mem::take(text).into_bytes();
    for (s, e) in blank {
        for b in &mut bytes[s..e] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }
    *text = String::from_utf8(bytes).expect("ASCII replacement keeps UTF-8 valid");
    Ok(found)
}

/// Parses the clauses after `omp parallel for`: `reduction(op: list)`, and tolerates the
/// scheduling clauses that do not change meaning (`schedule(…)`, `num_threads(…)`,
/// `private(…)`, `shared(…)`, `default(…)`, `firstprivate(…)`, `nowait`).
fn parse_clauses(s: &str) -> Result<Vec<(RedOp, String)>, String> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let name_end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..name_end];
        rest = rest[name_end..].trim_start();
        if name.is_empty() {
            return Err(format!(
                "#pragma omp parallel for: cannot read the clause at `{rest}`"
            ));
        }
        let args = if let Some(r) = rest.strip_prefix('(') {
            let close = r.find(')').ok_or_else(|| {
                format!("#pragma omp parallel for: `{name}(` has no closing parenthesis")
            })?;
            let a = &r[..close];
            rest = r[close + 1..].trim_start();
            Some(a)
        } else {
            None
        };
        rest = rest.trim_start_matches(',').trim_start();
        match (name, args) {
            ("reduction", Some(a)) => {
                let (op, vars) = a.split_once(':').ok_or_else(|| {
                    format!("#pragma omp parallel for: reduction({a}) needs `op: variables`")
                })?;
                let op = RedOp::from_clause(op.trim()).ok_or_else(|| {
                    format!(
                        "#pragma omp parallel for: reduction operator `{}` is not supported (use + - * & | ^ min max)",
                        op.trim()
                    )
                })?;
                for v in vars.split(',') {
                    let v = v.trim();
                    if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        return Err(format!(
                            "#pragma omp parallel for: `{v}` in reduction({a}) is not a variable name"
                        ));
                    }
                    out.push((op, v.to_string()));
                }
            }
            (
                "schedule" | "num_threads" | "private" | "shared" | "default" | "firstprivate"
                | "lastprivate",
                Some(_),
            )
            | ("nowait", None) => {}
            _ => {
                return Err(format!(
                    "#pragma omp parallel for: clause `{name}` is not supported"
                ));
            }
        }
    }
    Ok(out)
}

/// A reduction statement found in a loop body.
#[derive(Clone, Debug)]
pub struct ReductionUse<'a> {
    pub var: String,
    pub op: RedOp,
    /// For min/max: the address of the `if` statement and the compared expression `e`
    /// (whose type the lowering checks equals the variable's).
    pub minmax: Option<(usize, &'a Node<Expression>)>,
}

/// The reductions of a loop: for each variable name whose every occurrence in `parts`
/// (the body, the condition and the step) lies in reduction statements of one operator,
/// that operator. `text` is the preprocessed source (to compare expressions).
pub fn find_reductions<'a>(
    text: &str,
    body: &'a Node<Statement>,
    header: &[&'a Node<Expression>],
) -> Vec<(String, RedOp, Vec<ReductionUse<'a>>)> {
    let mut finder: Finder<'_, 'a> = Finder {
        text,
        uses: Vec::new(),
        accounted: Vec::new(),
        occurrences: Vec::new(),
    };
    finder.visit_statement(&body.node, &body.span);
    for e in header {
        finder.visit_expression(&e.node, &e.span);
    }
    let mut names: Vec<&String> = finder.uses.iter().map(|u| &u.var).collect();
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for name in names {
        let uses: Vec<ReductionUse> = finder
            .uses
            .iter()
            .filter(|u| &u.var == name)
            .cloned()
            .collect();
        let op = uses[0].op;
        if uses.iter().any(|u| u.op != op) {
            continue;
        }
        let total = finder.occurrences.iter().filter(|(n, _)| n == name).count();
        let accounted = finder.accounted.iter().filter(|(n, _)| n == name).count();
        if total == accounted {
            out.push((name.clone(), op, uses));
        }
    }
    out
}

/// `if (e < v) v = e;` and the other min/max spellings that a reduction may use: the
/// variable's name, min or max, and `e` (side-effect free, not mentioning `v`).
pub(crate) fn minmax_statement<'a>(
    text: &str,
    i: &'a IfStatement,
) -> Option<(String, RedOp, &'a Node<Expression>)> {
    let finder: Finder<'_, 'a> = Finder {
        text,
        uses: Vec::new(),
        accounted: Vec::new(),
        occurrences: Vec::new(),
    };
    finder.minmax(i)
}

struct Finder<'t, 'a> {
    text: &'t str,
    uses: Vec<ReductionUse<'a>>,
    /// Identifier occurrences (name, offset) that reduction statements account for.
    accounted: Vec<(String, usize)>,
    /// Every identifier occurrence (name, offset).
    occurrences: Vec<(String, usize)>,
}

fn ident(e: &Node<Expression>) -> Option<&str> {
    match &e.node {
        Expression::Identifier(id) => Some(&id.node.name),
        _ => None,
    }
}

/// Whether `e` may be evaluated once more without changing anything (no assignment,
/// increment or call).
pub(crate) fn side_effect_free(e: &Node<Expression>) -> bool {
    struct Pure(bool);
    impl<'ast> Visit<'ast> for Pure {
        fn visit_binary_operator_expression(
            &mut self,
            b: &'ast BinaryOperatorExpression,
            span: &'ast Span,
        ) {
            use BinaryOperator::*;
            if matches!(
                b.operator.node,
                Assign
                    | AssignMultiply
                    | AssignDivide
                    | AssignModulo
                    | AssignPlus
                    | AssignMinus
                    | AssignShiftLeft
                    | AssignShiftRight
                    | AssignBitwiseAnd
                    | AssignBitwiseXor
                    | AssignBitwiseOr
            ) {
                self.0 = false;
            }
            visit::visit_binary_operator_expression(self, b, span);
        }
        fn visit_unary_operator_expression(
            &mut self,
            u: &'ast UnaryOperatorExpression,
            span: &'ast Span,
        ) {
            use UnaryOperator::*;
            if matches!(
                u.operator.node,
                PostIncrement | PostDecrement | PreIncrement | PreDecrement
            ) {
                self.0 = false;
            }
            visit::visit_unary_operator_expression(self, u, span);
        }
        fn visit_call_expression(&mut self, c: &'ast CallExpression, span: &'ast Span) {
            self.0 = false;
            visit::visit_call_expression(self, c, span);
        }
    }
    let mut p = Pure(true);
    p.visit_expression(&e.node, &e.span);
    p.0
}

/// Whether identifier `name` occurs in `e`.
fn mentions(e: &Node<Expression>, name: &str) -> bool {
    struct Mentions<'n>(&'n str, bool);
    impl<'ast> Visit<'ast> for Mentions<'_> {
        fn visit_identifier(&mut self, id: &'ast Identifier, _: &'ast Span) {
            if id.name == self.0 {
                self.1 = true;
            }
        }
    }
    let mut m = Mentions(name, false);
    m.visit_expression(&e.node, &e.span);
    m.1
}

impl<'t, 'a> Finder<'t, 'a> {
    fn squeeze(&self, span: &Span) -> String {
        self.text
            .get(span.start..span.end)
            .unwrap_or("")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect()
    }

    /// `v op= e`, `v = v op e`, `v = e op v`, `v++` and friends.
    fn update(&self, e: &Node<Expression>) -> Option<(String, RedOp, usize)> {
        use BinaryOperator as B;
        match &e.node {
            Expression::UnaryOperator(u) => {
                let op = &u.node.operator.node;
                if matches!(
                    op,
                    UnaryOperator::PostIncrement
                        | UnaryOperator::PostDecrement
                        | UnaryOperator::PreIncrement
                        | UnaryOperator::PreDecrement
                ) {
                    let v = ident(&u.node.operand)?;
                    return Some((v.to_string(), RedOp::Add, u.node.operand.span.start));
                }
                None
            }
            Expression::BinaryOperator(b) => {
                let v = ident(&b.node.lhs)?;
                let at = b.node.lhs.span.start;
                let compound = match b.node.operator.node {
                    B::AssignPlus | B::AssignMinus => Some(RedOp::Add),
                    B::AssignMultiply => Some(RedOp::Mul),
                    B::AssignBitwiseAnd => Some(RedOp::And),
                    B::AssignBitwiseOr => Some(RedOp::Or),
                    B::AssignBitwiseXor => Some(RedOp::Xor),
                    _ => None,
                };
                if let Some(op) = compound {
                    return (!mentions(&b.node.rhs, v)).then(|| (v.to_string(), op, at));
                }
                if b.node.operator.node != B::Assign {
                    return None;
                }
                let Expression::BinaryOperator(r) = &b.node.rhs.node else {
                    return None;
                };
                let op = match r.node.operator.node {
                    B::Plus => RedOp::Add,
                    B::Multiply => RedOp::Mul,
                    B::BitwiseAnd => RedOp::And,
                    B::BitwiseOr => RedOp::Or,
                    B::BitwiseXor => RedOp::Xor,
                    B::Minus => {
                        // v = v - e only (not e - v).
                        return (ident(&r.node.lhs) == Some(v) && !mentions(&r.node.rhs, v))
                            .then(|| (v.to_string(), RedOp::Add, at));
                    }
                    _ => return None,
                };
                let other = if ident(&r.node.lhs) == Some(v) {
                    &r.node.rhs
                } else if ident(&r.node.rhs) == Some(v) {
                    &r.node.lhs
                } else {
                    return None;
                };
                (!mentions(other, v)).then(|| (v.to_string(), op, at))
            }
            _ => None,
        }
    }

    /// `if (e < v) v = e;` and the other min/max spellings (no else).
    fn minmax(&self, i: &'a IfStatement) -> Option<(String, RedOp, &'a Node<Expression>)> {
        use BinaryOperator as B;
        if i.else_statement.is_some() {
            return None;
        }
        let assign = match &i.then_statement.node {
            Statement::Expression(Some(e)) => e,
            Statement::Compound(items) if items.len() == 1 => match &items[0].node {
                BlockItem::Statement(s) => match &s.node {
                    Statement::Expression(Some(e)) => e,
                    _ => return None,
                },
                _ => return None,
            },
            _ => return None,
        };
        let Expression::BinaryOperator(a) = &assign.node else {
            return None;
        };
        if a.node.operator.node != B::Assign {
            return None;
        }
        let v = ident(&a.node.lhs)?;
        let value = &a.node.rhs;
        let Expression::BinaryOperator(c) = &i.condition.node else {
            return None;
        };
        // Normalize to `x REL y`; min when the assigned value is the smaller side.
        let (less, greater) = match c.node.operator.node {
            B::Less | B::LessOrEqual => (&c.node.lhs, &c.node.rhs),
            B::Greater | B::GreaterOrEqual => (&c.node.rhs, &c.node.lhs),
            _ => return None,
        };
        let same = |x: &Node<Expression>| self.squeeze(&x.span) == self.squeeze(&value.span);
        let op = if ident(greater) == Some(v) && same(less) {
            RedOp::Min
        } else if ident(less) == Some(v) && same(greater) {
            RedOp::Max
        } else {
            return None;
        };
        if mentions(value, v) || !side_effect_free(value) {
            return None;
        }
        Some((v.to_string(), op, value))
    }
}

impl<'a> Visit<'a> for Finder<'_, 'a> {
    fn visit_identifier(&mut self, id: &'a Identifier, span: &'a Span) {
        self.occurrences.push((id.name.clone(), span.start));
    }

    fn visit_statement(&mut self, s: &'a Statement, span: &'a Span) {
        match s {
            Statement::Expression(Some(e)) => {
                if let Some((v, op, at)) = self.update(e) {
                    self.accounted.push((v.clone(), at));
                    if let Expression::BinaryOperator(b) = &e.node
                        && b.node.operator.node == BinaryOperator::Assign
                        && let Expression::BinaryOperator(r) = &b.node.rhs.node
                    {
                        // `v = v op e`: the second `v` is accounted for too.
                        for side in [&r.node.lhs, &r.node.rhs] {
                            if ident(side) == Some(v.as_str()) {
                                self.accounted.push((v.clone(), side.span.start));
                            }
                        }
                    }
                    self.uses.push(ReductionUse {
                        var: v,
                        op,
                        minmax: None,
                    });
                }
            }
            Statement::If(i) => {
                if let Some((v, op, value)) = self.minmax(&i.node) {
                    // Both occurrences of v (condition and assignment) are accounted for.
                    struct Collect<'n>(&'n str, Vec<usize>);
                    impl<'b> Visit<'b> for Collect<'_> {
                        fn visit_identifier(&mut self, id: &'b Identifier, span: &'b Span) {
                            if id.name == self.0 {
                                self.1.push(span.start);
                            }
                        }
                    }
                    let mut c = Collect(&v, Vec::new());
                    c.visit_if_statement(&i.node, &i.span);
                    for at in c.1 {
                        self.accounted.push((v.clone(), at));
                    }
                    self.uses.push(ReductionUse {
                        var: v,
                        op,
                        minmax: Some((&i.node as *const IfStatement as usize, value)),
                    });
                }
            }
            _ => {}
        }
        visit::visit_statement(self, s, span);
    }
}
