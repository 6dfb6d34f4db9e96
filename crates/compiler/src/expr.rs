//! Expressions: C's conversions and operators on bit vectors (floating point in
//! [`crate::float`]).

use lang_c::ast::*;
use lang_c::span::{Node, Span};
use pgc_circuit::{Gates, Lit, blocks};

use crate::lower::{Binding, DynIdx, Lowerer, Place, Ptr, R, Val};
use crate::types::{Arith, IntTy, Ty};

/// What an lvalue expression designates.
pub enum Lv {
    Place(Place),
    /// A pointer variable itself (for assignments to pointers).
    PtrVar(usize),
}

impl<'a> Lowerer<'a> {
    /// Evaluates for the value (arrays decay to pointers).
    pub fn eval_rvalue(&mut self, e: &'a Node<Expression>) -> R<Val> {
        self.eval(e)
    }

    /// A number or pointer as a condition (`!= 0`).
    pub fn eval_cond(&mut self, e: &'a Node<Expression>) -> R<Lit> {
        let v = self.eval(e)?;
        self.truth(v, e.span)
    }

    fn truth(&mut self, v: Val, span: Span) -> R<Lit> {
        match v {
            Val::Int(_, bits) => Ok(blocks::or_reduce(&mut self.g, &bits)),
            Val::Float(_, bits) => Ok(self.float_truth(&bits)),
            Val::Ptr(_) => Ok(Lit::TRUE),
            _ => self.err(span, "this value cannot be used as a condition"),
        }
    }

    /// A compile-time integer constant (array sizes, case labels, …).
    pub fn const_int(&mut self, e: &'a Node<Expression>) -> R<i128> {
        let v = self.eval(e)?;
        match v {
            Val::Int(t, bits) => match const_value(t, &bits) {
                Some(k) => Ok(k),
                None => self.err(
                    e.span,
                    "this expression must be a compile-time constant but depends on secret inputs",
                ),
            },
            Val::Float(f, _) => self.err(
                e.span,
                format!("expected an integer constant, not a {}", f.name()),
            ),
            _ => self.err(e.span, "expected an integer constant"),
        }
    }

    /// Converts an integer between types (C's conversion rules: truncation, sign or zero
    /// extension; to `_Bool` compares with zero).
    pub fn convert_bits(&mut self, from: IntTy, bits: &[Lit], to: IntTy) -> Vec<Lit> {
        let settled;
        let bits = if self.deferring() && (to.is_bool || to.bits as usize != bits.len()) {
            // A chain is a value of its own width only.
            settled = self.settle_bits(bits.to_vec());
            &settled[..]
        } else {
            bits
        };
        if to.is_bool {
            if from.is_bool {
                return bits.to_vec();
            }
            return vec![blocks::or_reduce(&mut self.g, bits)];
        }
        let n = to.bits as usize;
        let fill = if from.signed && !from.is_bool {
            *bits.last().unwrap_or(&Lit::FALSE)
        } else {
            Lit::FALSE
        };
        (0..n)
            .map(|i| if i < bits.len() { bits[i] } else { fill })
            .collect()
    }

    /// Converts a value for assignment to an object of type `ty`.
    pub fn convert_val(&mut self, v: Val, ty: &Ty, span: Span) -> R<Vec<Lit>> {
        match (v, ty) {
            (Val::Int(t, bits), Ty::Int(to)) => Ok(self.convert_bits(t, &bits, *to)),
            (Val::Int(t, bits), Ty::Float(to)) => {
                Ok(self.convert_arith(Arith::Int(t), &bits, Arith::Float(*to)))
            }
            (Val::Float(f, bits), want) if want.arith().is_some() => {
                let to = want.arith().expect("checked");
                Ok(self.convert_arith(Arith::Float(f), &bits, to))
            }
            (Val::Float(f, _), want) => self.err(
                span,
                format!(
                    "cannot assign a value of type {} to an object of type {}",
                    f.name(),
                    want.name()
                ),
            ),
            (Val::Agg(t, bits), want) if t == *want => Ok(bits),
            (Val::Agg(t, _), want) => self.err(
                span,
                format!(
                    "cannot assign a value of type {} to an object of type {}",
                    t.name(),
                    want.name()
                ),
            ),
            (Val::Ptr(_), want) => {
                self.err(span, format!("cannot convert a pointer to {}", want.name()))
            }
            (Val::Void, _) => self.err(span, "a void value cannot be used"),
            (Val::Int(t, _), want) => self.err(
                span,
                format!(
                    "cannot assign a value of type {} to an object of type {}",
                    t.name(),
                    want.name()
                ),
            ),
        }
    }

    fn int_of(&self, v: Val, span: Span) -> R<(IntTy, Vec<Lit>)> {
        match v {
            Val::Int(t, b) => Ok((t, b)),
            Val::Ptr(_) => self.err(span, "pointer arithmetic and comparisons other than `+`/`-` with an integer are not supported"),
            Val::Float(f, _) => self.err(span, format!("an operand of type {} where an integer is expected", f.name())),
            Val::Agg(t, _) => self.err(span, format!("an operand of type {} where an integer is expected", t.name())),
            Val::Void => self.err(span, "a void value cannot be used"),
        }
    }

    fn promote(&mut self, t: IntTy, b: Vec<Lit>) -> (IntTy, Vec<Lit>) {
        let p = t.promoted();
        let b = self.convert_bits(t, &b, p);
        (p, b)
    }

    fn int_val(&mut self, t: IntTy, v: i128) -> Val {
        Val::Int(t, self.const_bits(v, t.bits))
    }

    fn bool_val(&self, b: Lit) -> Val {
        let mut bits = vec![Lit::FALSE; 32];
        bits[0] = b;
        Val::Int(IntTy::INT, bits)
    }

    /// Evaluates an lvalue expression.
    pub fn eval_lvalue(&mut self, e: &'a Node<Expression>) -> R<Lv> {
        match &e.node {
            Expression::Identifier(id) => match self.lookup(&id.node.name, id.span)? {
                Binding::Var(v) => {
                    let ty = self.vars[v].ty.clone();
                    if let Ty::Pointer(_) = ty {
                        return Ok(Lv::PtrVar(v));
                    }
                    Ok(Lv::Place(Place::whole(v, ty)))
                }
                _ => self.err(e.span, format!("`{}` is not a variable", id.node.name)),
            },
            Expression::Member(m) => {
                let base = &m.node.expression;
                let place = match m.node.operator.node {
                    MemberOperator::Direct if !names_an_object(base) => {
                        // A member of a struct value (`f(x).b`, `(c ? s : t).a[i]`): C makes
                        // it no lvalue, so it is only read, here from a temporary.
                        let (ty, bits) = match self.eval(base)? {
                            Val::Agg(ty @ Ty::Struct(_), bits) => (ty, bits),
                            _ => {
                                return self.err(
                                    m.span,
                                    "`.` applied to something that is not a struct or union",
                                );
                            }
                        };
                        let var = self.new_var(ty.clone(), bits);
                        Place::whole(var, ty)
                    }
                    MemberOperator::Direct => match self.eval_lvalue(base)? {
                        Lv::Place(p) => p,
                        Lv::PtrVar(_) => {
                            return self.err(m.span, "`.` applied to a pointer (use `->`)");
                        }
                    },
                    MemberOperator::Indirect => {
                        let v = self.eval(&m.node.expression)?;
                        let Val::Ptr(p) = v else {
                            return self
                                .err(m.span, "`->` applied to something that is not a pointer");
                        };
                        self.deref(&p, m.span)?
                    }
                };
                Ok(Lv::Place(self.member_place(
                    &place,
                    &m.node.identifier.node.name,
                    m.node.identifier.span,
                )?))
            }
            Expression::UnaryOperator(u) if u.node.operator.node == UnaryOperator::Indirection => {
                let v = self.eval(&u.node.operand)?;
                let Val::Ptr(p) = v else {
                    return self.err(u.span, "`*` applied to something that is not a pointer");
                };
                Ok(Lv::Place(self.deref(&p, u.span)?))
            }
            Expression::BinaryOperator(b) if b.node.operator.node == BinaryOperator::Index => self
                .index_place(&b.node.lhs, &b.node.rhs, e.span)
                .map(Lv::Place),
            Expression::StringLiteral(s) => self.string_literal(s).map(Lv::Place),
            Expression::CompoundLiteral(c) => self.compound_literal(c).map(Lv::Place),
            _ => self.err(e.span, "expression is not assignable"),
        }
    }

    /// `base[index]` as a place.
    fn index_place(
        &mut self,
        base: &'a Node<Expression>,
        index: &'a Node<Expression>,
        span: Span,
    ) -> R<Place> {
        // C allows `i[a]`; find which side is the array/pointer.
        let (base, index) = if self.is_pointerish(base) {
            (base, index)
        } else {
            (index, base)
        };
        // An array lvalue keeps its place; a pointer value gives its region.
        let (mut place, count, elem) = match self.try_array_place(base)? {
            Some((p, e, n)) => (p, n, e),
            None => {
                let v = self.eval(base)?;
                let Val::Ptr(p) = v else {
                    return self.err(
                        base.span,
                        "subscript of something that is not an array or pointer",
                    );
                };
                (
                    Place {
                        var: p.var,
                        off: p.off,
                        dyns: vec![],
                        ty: p.elem.clone(),
                        run: p.count,
                    },
                    p.count,
                    p.elem,
                )
            }
        };
        let iv = self.eval(index)?;
        let (it, ibits) = self.int_of(iv, index.span)?;
        let stride = elem.bits();
        match const_value(it, &ibits) {
            Some(k) => {
                place.run = count.saturating_sub(k.max(0) as u64).max(1);
                if k < 0 || k as u128 >= count as u128 {
                    return self.err(
                        index.span,
                        format!("index {k} is out of bounds for an array of {count} elements"),
                    );
                }
                place.off += k as u64 * stride;
            }
            None => {
                // Negative indices are huge unsigned values: out of bounds, so they read 0.
                place.run = 1;
                place.dyns.push(DynIdx {
                    index: ibits,
                    stride,
                    count,
                });
            }
        }
        place.ty = elem;
        let _ = span;
        Ok(place)
    }

    fn is_pointerish(&mut self, e: &'a Node<Expression>) -> bool {
        // Cheap syntactic check: integer constants are never the array side.
        !matches!(e.node, Expression::Constant(_))
    }

    /// If `e` designates an array object: its place, element type and length.
    fn try_array_place(&mut self, e: &'a Node<Expression>) -> R<Option<(Place, Ty, u64)>> {
        match &e.node {
            Expression::Identifier(id) => {
                if let Binding::Var(v) = self.lookup(&id.node.name, id.span)?
                    && let Ty::Array(el, n) = self.vars[v].ty.clone()
                {
                    let p = Place::whole(v, Ty::Array(el.clone(), n));
                    return Ok(Some((p, *el, n)));
                }
                Ok(None)
            }
            Expression::BinaryOperator(b) if b.node.operator.node != BinaryOperator::Index => {
                Ok(None)
            }
            Expression::UnaryOperator(u) if u.node.operator.node != UnaryOperator::Indirection => {
                Ok(None)
            }
            Expression::BinaryOperator(_)
            | Expression::UnaryOperator(_)
            | Expression::Member(_)
            | Expression::StringLiteral(_)
            | Expression::CompoundLiteral(_) => match self.eval_lvalue(e)? {
                Lv::Place(p) => match p.ty.clone() {
                    Ty::Array(el, n) => Ok(Some((p, *el, n))),
                    _ => self.err(
                        e.span,
                        "subscript of something that is not an array or pointer",
                    ),
                },
                Lv::PtrVar(_) => Ok(None),
            },
            _ => Ok(None),
        }
    }

    fn read(&mut self, lv: Lv, span: Span) -> R<Val> {
        match lv {
            Lv::PtrVar(v) => match self.vars[v].ptr.clone() {
                Some(p) => Ok(Val::Ptr(p)),
                None => self.err(span, "pointer used before it was given a value"),
            },
            Lv::Place(p) => Ok(match p.ty.clone() {
                Ty::Int(t) => Val::Int(t, self.read_place(&p)),
                Ty::Float(f) => Val::Float(f, self.read_place(&p)),
                Ty::Array(el, n) => {
                    // Arrays decay to a pointer to their first element.
                    if !p.dyns.is_empty() {
                        return self.err(
                            span,
                            "a row selected by a secret index cannot be used as a pointer",
                        );
                    }
                    Val::Ptr(Ptr {
                        var: p.var,
                        off: p.off,
                        elem: *el,
                        count: n,
                    })
                }
                t @ Ty::Struct(_) => Val::Agg(t, self.read_place(&p)),
                Ty::Void | Ty::Pointer(_) => return self.err(span, "this value cannot be read"),
            }),
        }
    }

    fn assign(&mut self, lv: Lv, v: Val, span: Span) -> R<Val> {
        match lv {
            Lv::PtrVar(var) => {
                let Val::Ptr(p) = v else {
                    return self.err(span, "assigning a non-pointer to a pointer");
                };
                self.write_ptr(var, p.clone(), span)?;
                Ok(Val::Ptr(p))
            }
            Lv::Place(p) => {
                if let Ty::Array(..) = p.ty {
                    return self.err(span, "arrays cannot be assigned (assign their elements)");
                }
                if self.string_literals.is_literal(p.var) {
                    return self.err(
                        span,
                        "this writes into a string literal, which C does not allow (gcc's \
                         program would crash); copy it into an array first, e.g. \
                         char s[] = \"…\";",
                    );
                }
                self.check_reduction_store(p.var, &v, span)?;
                let bits = self.convert_val(v, &p.ty, span)?;
                self.write_place(&p, &bits);
                Ok(Val::of(p.ty, bits))
            }
        }
    }

    /// Evaluates an expression with its side effects, its value ready for any use.
    pub fn eval(&mut self, e: &'a Node<Expression>) -> R<Val> {
        let v = self.eval_deferred(e)?;
        Ok(self.settle(v))
    }

    /// [`Self::eval`] where the value may stay a deferred chain (see [`crate::deferred`]):
    /// for operands of associative operators, values stored or returned, values discarded.
    pub fn eval_deferred(&mut self, e: &'a Node<Expression>) -> R<Val> {
        match &e.node {
            Expression::Identifier(id) => match self.lookup(&id.node.name, id.span)? {
                Binding::Const(t, v) => Ok(self.int_val(t, v)),
                Binding::Typedef(_) => {
                    self.err(e.span, format!("`{}` is a type, not a value", id.node.name))
                }
                Binding::Var(_) => {
                    let lv = self.eval_lvalue(e)?;
                    self.read(lv, e.span)
                }
            },
            Expression::Constant(c) => self.constant(c),
            // An array of `char`: read, it decays to a pointer to its first byte.
            Expression::StringLiteral(_) => {
                let lv = self.eval_lvalue(e)?;
                self.read(lv, e.span)
            }
            Expression::Member(_) => {
                let lv = self.eval_lvalue(e)?;
                self.read(lv, e.span)
            }
            Expression::Call(c) => self.eval_call(c),
            Expression::CompoundLiteral(_) => {
                let lv = self.eval_lvalue(e)?;
                self.read(lv, e.span)
            }
            Expression::SizeOfTy(t) => {
                let ty = self.type_name(&t.node.0)?;
                Ok(self.int_val(IntTy::new(64, false), ty.c_size() as i128))
            }
            Expression::SizeOfVal(v) => {
                if let Some(name) = self.bit_field_of(&v.node.0)? {
                    return self.err(
                        e.span,
                        format!(
                            "`sizeof` applied to the bit-field `{name}`, which C does not allow"
                        ),
                    );
                }
                if let Expression::Identifier(id) = &v.node.0.node
                    && let Ok(Binding::Var(var)) = self.lookup(&id.node.name, id.span)
                    && self.array_params.contains(&var)
                {
                    // An array parameter is a pointer (gcc warns, but so it computes).
                    return Ok(self.int_val(IntTy::new(64, false), 8));
                }
                let ty = self.type_of(&v.node.0)?;
                Ok(self.int_val(IntTy::new(64, false), ty.c_size() as i128))
            }
            Expression::AlignOf(t) => {
                let ty = self.type_name(&t.node.0)?;
                Ok(self.int_val(IntTy::new(64, false), ty.c_align() as i128))
            }
            Expression::UnaryOperator(u) => self.unary(u, e),
            Expression::Cast(c) => {
                let ty = self.type_name(&c.node.type_name)?;
                let v = self.eval(&c.node.expression)?;
                match (&ty, v) {
                    (Ty::Void, _) => Ok(Val::Void),
                    (Ty::Int(to), Val::Int(from, bits)) => {
                        Ok(Val::Int(*to, self.convert_bits(from, &bits, *to)))
                    }
                    (Ty::Int(_) | Ty::Float(_), v @ (Val::Int(..) | Val::Float(..))) => {
                        let to = ty.arith().expect("a scalar");
                        let (from, bits) = self.arith_of(v, e.span)?;
                        let out = self.convert_arith(from, &bits, to);
                        Ok(Val::of(ty, out))
                    }
                    (Ty::Pointer(to), Val::Ptr(p)) if **to == p.elem => Ok(Val::Ptr(p)),
                    (Ty::Pointer(_), _) => self.err(e.span, "pointer casts are not supported"),
                    (t, _) => self.err(e.span, format!("cannot cast to {}", t.name())),
                }
            }
            Expression::BinaryOperator(b) => self.binary(b, e),
            Expression::Conditional(c) => {
                if self.deferring()
                    && let Some(v) = self.eval_minmax_conditional(c)?
                {
                    return Ok(v);
                }
                let k = self.eval_cond(&c.node.condition)?;
                if let Some(k) = k.as_const() {
                    let (chosen, other) = if k {
                        (&c.node.then_expression, &c.node.else_expression)
                    } else {
                        (&c.node.else_expression, &c.node.then_expression)
                    };
                    let v = self.eval(chosen)?;
                    // The result has the common type of both operands, even when the
                    // condition is a constant (`0 ? 1u : x` is unsigned).
                    return Ok(match (v, self.type_of(other).ok()) {
                        (Val::Int(t, bits), Some(Ty::Int(o))) => {
                            let ty = IntTy::common(t, o);
                            let bits = self.convert_bits(t, &bits, ty);
                            Val::Int(ty, bits)
                        }
                        (v @ (Val::Int(..) | Val::Float(..)), Some(o)) if o.arith().is_some() => {
                            let (from, bits) = self.arith_of(v, e.span)?;
                            let to = Arith::common(from, o.arith().expect("checked"));
                            let out = self.convert_arith(from, &bits, to);
                            Val::of(to.ty(), out)
                        }
                        (v, _) => v,
                    });
                }
                let ct = self.g.and(self.cur, k);
                let saved = self.enter(ct);
                let t = self.eval(&c.node.then_expression);
                self.restore(saved);
                let t = t?;
                let cf = self.g.and(self.cur, !k);
                let saved = self.enter(cf);
                let f = self.eval(&c.node.else_expression);
                self.restore(saved);
                let f = f?;
                match (t, f) {
                    (Val::Int(tt, tb), Val::Int(ft, fb)) => {
                        let ty = IntTy::common(tt, ft);
                        let ty = if tt.is_bool && ft.is_bool { IntTy::INT } else { ty };
                        let tb = self.convert_bits(tt, &tb, ty);
                        let fb = self.convert_bits(ft, &fb, ty);
                        Ok(Val::Int(ty, self.mux_ranged(k, &tb, &fb)))
                    }
                    (t @ (Val::Int(..) | Val::Float(..)), f @ (Val::Int(..) | Val::Float(..))) => {
                        let (ta, tb) = self.arith_of(t, e.span)?;
                        let (fa, fb) = self.arith_of(f, e.span)?;
                        let ty = Arith::common(ta, fa);
                        let tb = self.convert_arith(ta, &tb, ty);
                        let fb = self.convert_arith(fa, &fb, ty);
                        Ok(Val::of(ty.ty(), blocks::mux_word(&mut self.g, k, &tb, &fb)))
                    }
                    (Val::Agg(tt, tb), Val::Agg(ft, fb)) if tt == ft => {
                        Ok(Val::Agg(tt, blocks::mux_word(&mut self.g, k, &tb, &fb)))
                    }
                    (Val::Ptr(a), Val::Ptr(b)) if a == b => Ok(Val::Ptr(a)),
                    (Val::Void, Val::Void) => Ok(Val::Void),
                    (Val::Ptr(_), Val::Ptr(_)) => {
                        self.err(e.span, "choosing between pointers on a secret condition is not supported (use an index)")
                    }
                    _ => self.err(e.span, "the two branches of `?:` have incompatible types"),
                }
            }
            Expression::Comma(list) => {
                let mut last = Val::Void;
                for x in list.iter() {
                    last = self.eval_deferred(x)?;
                }
                Ok(last)
            }
            Expression::OffsetOf(_) => self.err(e.span, "offsetof is not supported"),
            Expression::VaArg(_) => self.err(e.span, "va_arg is not supported"),
            Expression::Statement(_) => self.err(e.span, "statement expressions are not supported"),
            Expression::GenericSelection(_) => self.err(e.span, "_Generic is not supported"),
        }
    }

    fn constant(&mut self, c: &'a Node<Constant>) -> R<Val> {
        match &c.node {
            Constant::Integer(i) => {
                let Some(v) = integer_constant(i) else {
                    return self.err(c.span, "integer constant is too large for 64 bits");
                };
                let v = v as u128;
                // C11 6.4.4.1: the first type in the list that can represent the value.
                let decimal = i.base == IntegerBase::Decimal;
                let min_long = i.suffix.size != IntegerSize::Int;
                let candidates: &[IntTy] = match (i.suffix.unsigned, decimal) {
                    (true, _) => &[IntTy::new(32, false), IntTy::new(64, false)],
                    (false, true) => &[
                        IntTy::new(32, true),
                        IntTy::new(64, true),
                        IntTy::new(64, false),
                    ],
                    (false, false) => &[
                        IntTy::new(32, true),
                        IntTy::new(32, false),
                        IntTy::new(64, true),
                        IntTy::new(64, false),
                    ],
                };
                let ty = candidates
                    .iter()
                    .copied()
                    .filter(|t| !(min_long && t.bits < 64))
                    .find(|t| v < (1u128 << (t.bits - t.signed as u32)))
                    .unwrap_or(IntTy::new(64, false));
                Ok(self.int_val(ty, v as i128))
            }
            Constant::Character(s) => {
                let v = crate::strings::char_constant_byte(s).ok_or_else(|| {
                    self.error(c.span, format!("unsupported character constant {s}"))
                })?;
                // A character constant has type int; its value is that of a (signed) char.
                Ok(self.int_val(IntTy::INT, v as i8 as i128))
            }
            Constant::Float(f) => self.float_constant(f, c.span),
        }
    }

    fn eval_call(&mut self, c: &'a Node<CallExpression>) -> R<Val> {
        let Expression::Identifier(id) = &c.node.callee.node else {
            return self.err(
                c.node.callee.span,
                "calls through function pointers are not supported",
            );
        };
        let name = id.node.name.as_str();
        if !is_builtin(name) && !self.functions.contains_key(name) {
            return self.err(
                c.span,
                format!(
                    "call to `{name}`, which is not defined in the program (library functions and I/O cannot run inside a circuit{})",
                    crate::float::missing_math_note(name).unwrap_or_default()
                ),
            );
        }
        let mut args = Vec::with_capacity(c.node.arguments.len());
        for a in &c.node.arguments {
            // A parameter may hold a deferred value (`min(m, x)` written as a function).
            let v = if is_builtin(name) {
                self.eval(a)?
            } else {
                self.eval_deferred(a)?
            };
            args.push((v, a.span));
        }
        if let Some(v) = self.builtin(name, &args, c.span)? {
            return Ok(v);
        }
        if let Some(v) = self.call_math(name, &args, c.span)? {
            return Ok(v);
        }
        self.call(name, args, c.span)
    }

    /// gcc builtins that map to building blocks.
    fn builtin(&mut self, name: &str, args: &[(Val, Span)], span: Span) -> R<Option<Val>> {
        let width = match name {
            "__builtin_popcount" | "__builtin_parity" => 32,
            "__builtin_popcountl"
            | "__builtin_popcountll"
            | "__builtin_parityl"
            | "__builtin_parityll" => 64,
            _ => return Ok(None),
        };
        let [(v, aspan)] = args else {
            return self.err(span, format!("{name} takes one argument"));
        };
        let (t, b) = self.int_of(v.clone(), *aspan)?;
        let b = self.convert_bits(t, &b, IntTy::new(width, false));
        if name.contains("parity") {
            let mut p = Lit::FALSE;
            for x in b {
                p = self.g.xor(p, x);
            }
            return Ok(Some(self.bool_val(p)));
        }
        let cnt = blocks::popcount(&mut self.g, &b);
        let out = self.convert_bits(IntTy::new(cnt.len() as u32, false), &cnt, IntTy::INT);
        Ok(Some(Val::Int(IntTy::INT, out)))
    }

    fn unary(&mut self, u: &'a Node<UnaryOperatorExpression>, e: &'a Node<Expression>) -> R<Val> {
        let op = u.node.operator.node.clone();
        let span = e.span;
        match op {
            UnaryOperator::PreIncrement
            | UnaryOperator::PreDecrement
            | UnaryOperator::PostIncrement
            | UnaryOperator::PostDecrement => {
                let lv = self.eval_lvalue(&u.node.operand)?;
                let lv2 = match &lv {
                    Lv::Place(p) => Lv::Place(p.clone()),
                    Lv::PtrVar(v) => Lv::PtrVar(*v),
                };
                let old = self.read(lv, span)?;
                let inc = matches!(
                    op,
                    UnaryOperator::PreIncrement | UnaryOperator::PostIncrement
                );
                let one = self.int_val(IntTy::INT, 1);
                let new = if inc {
                    self.arith(BinaryOperator::Plus, old.clone(), one, span)?
                } else {
                    self.arith(BinaryOperator::Minus, old.clone(), one, span)?
                };
                let stored = self.assign(lv2, new, span)?;
                Ok(
                    if matches!(
                        op,
                        UnaryOperator::PreIncrement | UnaryOperator::PreDecrement
                    ) {
                        stored
                    } else {
                        old
                    },
                )
            }
            UnaryOperator::Address => {
                if let Some(name) = self.bit_field_of(&u.node.operand)? {
                    return self.err(
                        span,
                        format!("the address of the bit-field `{name}` cannot be taken (C does not allow it)"),
                    );
                }
                let lv = self.eval_lvalue(&u.node.operand)?;
                match lv {
                    Lv::Place(p) => {
                        if !p.dyns.is_empty() {
                            return self.err(
                                span,
                                "the address of an element at a secret index cannot be taken",
                            );
                        }
                        Ok(Val::Ptr(Ptr {
                            var: p.var,
                            off: p.off,
                            elem: p.ty,
                            count: p.run,
                        }))
                    }
                    Lv::PtrVar(_) => self.err(span, "pointers to pointers are not supported"),
                }
            }
            UnaryOperator::Indirection => {
                let lv = self.eval_lvalue(e)?;
                self.read(lv, span)
            }
            UnaryOperator::Plus | UnaryOperator::Minus | UnaryOperator::Complement => {
                let v = self.eval(&u.node.operand)?;
                if let Val::Float(f, b) = v {
                    return match op {
                        UnaryOperator::Plus => Ok(Val::Float(f, b)),
                        UnaryOperator::Minus => {
                            Ok(Val::Float(f, pgc_circuit::blocks::float::neg(f.format(), &b)))
                        }
                        _ => self.err(
                            span,
                            format!(
                                "wrong type argument to bit-complement: `~` needs an integer, not a {}",
                                f.name()
                            ),
                        ),
                    };
                }
                let (t, b) = self.int_of(v, span)?;
                let (t, b) = self.promote(t, b);
                let r = match op {
                    UnaryOperator::Plus => b,
                    UnaryOperator::Minus => blocks::neg(&mut self.g, &b),
                    _ => b.iter().map(|x| !*x).collect(),
                };
                Ok(Val::Int(t, r))
            }
            UnaryOperator::Negate => {
                let v = self.eval(&u.node.operand)?;
                let k = self.truth(v, span)?;
                Ok(self.bool_val(!k))
            }
        }
    }

    fn binary(&mut self, b: &'a Node<BinaryOperatorExpression>, e: &'a Node<Expression>) -> R<Val> {
        use BinaryOperator as B;
        let op = b.node.operator.node.clone();
        let span = b.node.operator.span;
        match op {
            B::Index => {
                let lv = self.eval_lvalue(e)?;
                self.read(lv, e.span)
            }
            B::LogicalAnd | B::LogicalOr => {
                let l = self.eval_cond(&b.node.lhs)?;
                let and = op == B::LogicalAnd;
                // Short circuit: the right side runs only where the left did not decide.
                if l.as_const() == Some(!and) {
                    return Ok(self.bool_val(l));
                }
                let guard = if and { l } else { !l };
                let c = self.g.and(self.cur, guard);
                let saved = self.enter(c);
                let r = self.eval_cond(&b.node.rhs);
                self.restore(saved);
                let r = r?;
                let v = if and {
                    self.g.and(l, r)
                } else {
                    self.g.or(l, r)
                };
                Ok(self.bool_val(v))
            }
            B::Assign => {
                let lv = self.eval_lvalue(&b.node.lhs)?;
                let v = self.eval_deferred(&b.node.rhs)?;
                self.assign(lv, v, e.span)
            }
            B::AssignMultiply
            | B::AssignDivide
            | B::AssignModulo
            | B::AssignPlus
            | B::AssignMinus
            | B::AssignShiftLeft
            | B::AssignShiftRight
            | B::AssignBitwiseAnd
            | B::AssignBitwiseXor
            | B::AssignBitwiseOr => {
                let lv = self.eval_lvalue(&b.node.lhs)?;
                let lv2 = match &lv {
                    Lv::Place(p) => Lv::Place(p.clone()),
                    Lv::PtrVar(v) => Lv::PtrVar(*v),
                };
                let old = self.read(lv, e.span)?;
                let r = self.eval_deferred(&b.node.rhs)?;
                let plain = match op {
                    B::AssignMultiply => B::Multiply,
                    B::AssignDivide => B::Divide,
                    B::AssignModulo => B::Modulo,
                    B::AssignPlus => B::Plus,
                    B::AssignMinus => B::Minus,
                    B::AssignShiftLeft => B::ShiftLeft,
                    B::AssignShiftRight => B::ShiftRight,
                    B::AssignBitwiseAnd => B::BitwiseAnd,
                    B::AssignBitwiseXor => B::BitwiseXor,
                    _ => B::BitwiseOr,
                };
                let v = self.arith(plain, old, r, span)?;
                self.assign(lv2, v, e.span)
            }
            _ => {
                // `arith` settles the operands of operators that do not chain.
                let l = self.eval_deferred(&b.node.lhs)?;
                let r = self.eval_deferred(&b.node.rhs)?;
                self.arith(op, l, r, span)
            }
        }
    }

    /// A binary operator on values (not assignments or logical operators).
    pub fn arith(&mut self, op: BinaryOperator, l: Val, r: Val, span: Span) -> R<Val> {
        use BinaryOperator as B;
        // Pointer ± integer.
        if let (Val::Ptr(p), B::Plus | B::Minus) = (&l, &op) {
            let (t, bits) = self.int_of(r, span)?;
            let Some(k) = const_value(t, &bits) else {
                return self.err(span, "pointer arithmetic with a secret offset is not supported (index the array instead)");
            };
            let k = if op == B::Minus { -k } else { k };
            let newcount = p.count as i128 - k;
            let back = p.off as i128 + k * p.elem.bits() as i128;
            if newcount < 0 || back < 0 {
                return self.err(span, "pointer arithmetic leaves the array");
            }
            return Ok(Val::Ptr(Ptr {
                var: p.var,
                off: back as u64,
                elem: p.elem.clone(),
                count: newcount as u64,
            }));
        }
        if let (Val::Int(..), Val::Ptr(_), B::Plus) = (&l, &r, &op) {
            return self.arith(op, r, l, span);
        }
        if matches!(l, Val::Float(..)) || matches!(r, Val::Float(..)) {
            return self.float_arith(op, l, r, span);
        }
        if let (Val::Ptr(a), Val::Ptr(b)) = (&l, &r) {
            if a.var == b.var && a.elem == b.elem {
                let w = a.elem.bits().max(1) as i128;
                let diff = (a.off as i128 - b.off as i128) / w;
                let lt = (a.off < b.off) as i128;
                let eq = (a.off == b.off) as i128;
                let res = match op {
                    B::Minus => return Ok(self.int_val(IntTy::new(64, true), diff)),
                    B::Equals => eq,
                    B::NotEquals => 1 - eq,
                    B::Less => lt,
                    B::Greater => (a.off > b.off) as i128,
                    B::LessOrEqual => lt | eq,
                    B::GreaterOrEqual => (a.off >= b.off) as i128,
                    _ => return self.err(span, "this operator does not apply to pointers"),
                };
                return Ok(self.int_val(IntTy::INT, res));
            }
            return self.err(
                span,
                "comparing pointers into different objects is not supported",
            );
        }
        let (lt, lb) = self.int_of(l, span)?;
        let (rt, rb) = self.int_of(r, span)?;
        let chains = self.deferring()
            && matches!(
                op,
                B::Plus | B::Minus | B::Multiply | B::BitwiseAnd | B::BitwiseOr
            );
        let (lb, rb) = if self.deferring() && !chains {
            (self.settle_bits(lb), self.settle_bits(rb))
        } else {
            (lb, rb)
        };
        if matches!(op, B::ShiftLeft | B::ShiftRight) {
            let (lt, lb) = self.promote(lt, lb);
            let (_, rb) = self.promote(rt, rb);
            let out = match (op, lt.signed) {
                (B::ShiftLeft, _) => blocks::shl(&mut self.g, &lb, &rb),
                (_, true) => blocks::ashr(&mut self.g, &lb, &rb),
                (_, false) => blocks::lshr(&mut self.g, &lb, &rb),
            };
            return Ok(Val::Int(lt, out));
        }
        let ct = IntTy::common(lt, rt);
        let a = self.convert_bits(lt, &lb, ct);
        let b = self.convert_bits(rt, &rb, ct);
        if let Some(v) = const_fold(&op, ct, &a, &b) {
            // Compile-time values (loop counters, indices): skip the gate builders, which
            // would fold every gate one by one.
            return Ok(match v {
                Folded::Int(x) => Val::Int(ct, self.const_bits(x as i128, ct.bits)),
                Folded::Bool(x) => self.bool_val(Lit::constant(x)),
            });
        }
        let (a, b) = if chains {
            if let Some(out) = self.defer_arith(&op, &a, &b) {
                return Ok(Val::Int(ct, out));
            }
            (self.settle_bits(a), self.settle_bits(b))
        } else {
            (a, b)
        };
        if let Some(v) = self.ranged_arith(&op, ct, &a, &b) {
            return Ok(v);
        }
        let g = &mut self.g;
        let out = match op {
            B::Plus => blocks::add(g, &a, &b),
            B::Minus => blocks::sub(g, &a, &b),
            B::Multiply => blocks::mul(g, &a, &b),
            B::Divide | B::Modulo => {
                let (q, r) = if ct.signed {
                    blocks::sdivrem(g, &a, &b)
                } else {
                    blocks::udivrem(g, &a, &b)
                };
                if op == B::Divide { q } else { r }
            }
            B::BitwiseAnd => a.iter().zip(&b).map(|(x, y)| g.and(*x, *y)).collect(),
            B::BitwiseOr => a.iter().zip(&b).map(|(x, y)| g.or(*x, *y)).collect(),
            B::BitwiseXor => a.iter().zip(&b).map(|(x, y)| g.xor(*x, *y)).collect(),
            B::Less | B::Greater | B::LessOrEqual | B::GreaterOrEqual => {
                let (x, y) = if matches!(op, B::Less | B::GreaterOrEqual) {
                    (&a, &b)
                } else {
                    (&b, &a)
                };
                let lt = if ct.signed {
                    blocks::lt_signed(g, x, y)
                } else {
                    blocks::lt_unsigned(g, x, y)
                };
                if !ct.signed {
                    self.note_order(lt, x, y);
                }
                let v = if matches!(op, B::Less | B::Greater) {
                    lt
                } else {
                    !lt
                };
                return Ok(self.bool_val(v));
            }
            B::Equals | B::NotEquals => {
                let eq = blocks::eq(g, &a, &b);
                let v = if op == B::Equals { eq } else { !eq };
                return Ok(self.bool_val(v));
            }
            _ => return self.err(span, "unsupported operator"),
        };
        Ok(Val::Int(ct, out))
    }

    /// The type an expression would have, without running its side effects (it is evaluated
    /// on no path: writes and gates it makes are dead).
    pub fn type_of(&mut self, e: &'a Node<Expression>) -> R<Ty> {
        let saved = self.enter(Lit::FALSE);
        let lvalue = match &e.node {
            Expression::Identifier(id) => {
                matches!(self.lookup(&id.node.name, id.span), Ok(Binding::Var(_)))
            }
            Expression::Member(_)
            | Expression::StringLiteral(_)
            | Expression::CompoundLiteral(_) => true,
            Expression::BinaryOperator(b) => b.node.operator.node == BinaryOperator::Index,
            Expression::UnaryOperator(u) => u.node.operator.node == UnaryOperator::Indirection,
            _ => false,
        };
        let r = (|| {
            if lvalue {
                return Ok(match self.eval_lvalue(e)? {
                    Lv::Place(p) => p.ty,
                    Lv::PtrVar(v) => self.vars[v].ty.clone(),
                });
            }
            Ok(match self.eval_deferred(e)? {
                Val::Int(t, _) => Ty::Int(t),
                Val::Float(f, _) => Ty::Float(f),
                Val::Agg(t, _) => t,
                Val::Ptr(p) => Ty::Pointer(Box::new(p.elem)),
                Val::Void => Ty::Void,
            })
        })();
        self.restore(saved);
        r
    }

    /// The name of the bit-field a member expression (`s.x`, `p->x`) designates, if it does.
    fn bit_field_of(&mut self, e: &'a Node<Expression>) -> R<Option<String>> {
        let Expression::Member(m) = &e.node else {
            return Ok(None);
        };
        let base = self.type_of(&m.node.expression)?;
        let agg = match (&m.node.operator.node, base) {
            (MemberOperator::Direct, t) => t,
            (MemberOperator::Indirect, Ty::Pointer(t)) => *t,
            _ => return Ok(None),
        };
        let name = &m.node.identifier.node.name;
        Ok(match agg {
            Ty::Struct(s) => s
                .fields
                .iter()
                .zip(&s.bit_field)
                .find(|((n, _, _), _)| n == name)
                .filter(|(_, bit_field)| **bit_field)
                .map(|_| name.clone()),
            _ => None,
        })
    }

    /// A compound literal `(T){…}`: a new unnamed object of type `T` (its length taken from
    /// the list for `(int[]){…}`), initialized by the list as a declaration would be, and
    /// designated as an lvalue. Each evaluation makes it anew, as C's block-scoped object is
    /// initialized anew each time the literal is reached.
    fn compound_literal(&mut self, c: &'a Node<CompoundLiteral>) -> R<Place> {
        let mut ty = self.type_name(&c.node.type_name)?;
        let items = &c.node.initializer_list;
        if let Ty::Array(e, 0) = &ty {
            let n = self.list_length_of(e, items)?;
            ty = Ty::Array(e.clone(), n);
        }
        match &ty {
            Ty::Array(_, 0) => {
                return self.err(c.span, "a compound literal of an array of no elements");
            }
            Ty::Void => return self.err(c.span, "a compound literal cannot be void"),
            t if t.contains_pointer() => {
                return self.err(
                    c.span,
                    "compound literals of pointer type are not supported (pointers exist only at compile time)",
                );
            }
            _ => {}
        }
        let var = self.zero_var(ty.clone());
        // Bound in the enclosing block under a name no identifier has, so that it ends
        // with the block as C says (compact compilation then reuses its storage).
        self.bind(format!("(compound literal {var})"), Binding::Var(var));
        let place = Place::whole(var, ty);
        self.initialize_list(&place, items, c.span)?;
        Ok(place)
    }

    pub fn type_name(&mut self, t: &'a Node<TypeName>) -> R<Ty> {
        let specs = crate::decl::qualifier_type_specs(&t.node.specifiers);
        let base = self.base_type(&specs, t.span)?;
        match &t.node.declarator {
            Some(d) => Ok(self.derive(base, d)?.1),
            None => Ok(base),
        }
    }
}

/// Whether an expression designates an object (a name, a member, an element, `*p`), as
/// opposed to computing a value (a call, `?:`, an assignment, a comma).
fn names_an_object(e: &Node<Expression>) -> bool {
    match &e.node {
        Expression::Identifier(_) | Expression::Member(_) | Expression::CompoundLiteral(_) => true,
        Expression::BinaryOperator(b) => b.node.operator.node == BinaryOperator::Index,
        Expression::UnaryOperator(u) => u.node.operator.node == UnaryOperator::Indirection,
        _ => false,
    }
}

fn is_builtin(name: &str) -> bool {
    matches!(
        name,
        "__builtin_popcount"
            | "__builtin_popcountl"
            | "__builtin_popcountll"
            | "__builtin_parity"
            | "__builtin_parityl"
            | "__builtin_parityll"
    ) || crate::float::math_builtin(name).is_some()
}

/// The value of an integer literal (digit separators allowed), if it fits 64 bits.
pub fn integer_constant(i: &Integer) -> Option<u64> {
    let radix = match i.base {
        IntegerBase::Decimal => 10,
        IntegerBase::Octal => 8,
        IntegerBase::Hexadecimal => 16,
        IntegerBase::Binary => 2,
    };
    // Without digit separators (nearly always), parsed in place: subscripts of every loop
    // iteration come here.
    let digits: std::borrow::Cow<str> = if i.number.contains('\'') {
        i.number
            .chars()
            .filter(|c| *c != '\'')
            .collect::<String>()
            .into()
    } else {
        i.number.as_ref().into()
    };
    u64::from_str_radix(if digits.is_empty() { "0" } else { &digits }, radix).ok()
}

/// The value of constant bits, interpreted per the type's signedness.
pub fn const_value(t: IntTy, bits: &[Lit]) -> Option<i128> {
    // Called for every subscript of every loop iteration: 64-bit words, not i128 shifts.
    let mut v: i128 = 0;
    for (k, word) in bits.chunks(64).enumerate() {
        let mut w = 0u64;
        for (i, b) in word.iter().enumerate() {
            w |= (b.as_const()? as u64) << i;
        }
        v |= (w as i128) << (64 * k);
    }
    if t.signed && !t.is_bool && !bits.is_empty() && bits[bits.len() - 1] == Lit::TRUE {
        v -= 1i128 << bits.len();
    }
    Some(v)
}

/// What [`const_fold`] computed.
enum Folded {
    /// The result's bits as an unsigned number.
    Int(u128),
    Bool(bool),
}

/// The value of `a op b` when both operands are constants, for the operators whose circuit
/// is plain two's-complement arithmetic (so folding here gives exactly the circuit's
/// result); `None` otherwise (then the gate builders fold it, e.g. division by zero keeps
/// the circuit's own answer).
fn const_fold(op: &BinaryOperator, ct: IntTy, a: &[Lit], b: &[Lit]) -> Option<Folded> {
    use BinaryOperator as B;
    let value = |bits: &[Lit]| -> Option<u128> {
        let mut v = 0u128;
        for (i, l) in bits.iter().enumerate() {
            if l.as_const()? {
                v |= 1 << i;
            }
        }
        Some(v)
    };
    if ct.bits == 0 || ct.bits > 64 {
        return None;
    }
    let (x, y) = (value(a)?, value(b)?);
    let mask = (1u128 << ct.bits) - 1;
    let signed = |v: u128| -> i128 {
        let shift = 128 - ct.bits;
        ((v << shift) as i128) >> shift
    };
    let less = |p: u128, q: u128| {
        if ct.signed {
            signed(p) < signed(q)
        } else {
            p < q
        }
    };
    Some(match op {
        B::Plus => Folded::Int(x.wrapping_add(y) & mask),
        B::Minus => Folded::Int(x.wrapping_sub(y) & mask),
        B::Multiply => Folded::Int(x.wrapping_mul(y) & mask),
        B::BitwiseAnd => Folded::Int(x & y),
        B::BitwiseOr => Folded::Int(x | y),
        B::BitwiseXor => Folded::Int(x ^ y),
        B::Less => Folded::Bool(less(x, y)),
        B::Greater => Folded::Bool(less(y, x)),
        B::LessOrEqual => Folded::Bool(!less(y, x)),
        B::GreaterOrEqual => Folded::Bool(!less(x, y)),
        B::Equals => Folded::Bool(x == y),
        B::NotEquals => Folded::Bool(x != y),
        _ => return None,
    })
}
