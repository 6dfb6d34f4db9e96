//! Types, declarations and initializers.

use std::collections::HashMap;
use std::rc::Rc;

use lang_c::ast::*;
use lang_c::span::{Node, Span};
use pgc_circuit::Lit;

use crate::lower::{
    Binding, Lowerer, PendingOutput, Place, Ptr, R, Val, VarId, input_owner, output_visibility,
};
use crate::types::{FieldDecl, FloatTy, IntTy, Ty, layout_record};

/// The largest variable, in bits. Large variables are stored in 8 bytes per 32 bits while
/// their bits are constants or runs of consecutive wires (see [`crate::bits`]): 256 MiB at
/// most; what does not pack is bounded separately.
const MAX_OBJECT_BITS: u64 = 1 << 30;
/// The largest struct, in bits: a struct is read and written whole, literal by literal.
const MAX_STRUCT_BITS: u64 = 1 << 27;

/// (name, type, span) of a parameter.
pub type Param = (Option<String>, Ty, Span);

impl<'a> Lowerer<'a> {
    /// The base type named by a list of type specifiers.
    pub fn base_type(&mut self, specs: &[&'a Node<TypeSpecifier>], span: Span) -> R<Ty> {
        let (
            mut longs,
            mut short,
            mut char_,
            mut int,
            mut signed,
            mut unsigned,
            mut bool_,
            mut void,
        ) = (0, false, false, false, false, false, false, false);
        let mut other: Option<Ty> = None;
        let mut floating: Option<(FloatTy, Span)> = None;
        let mut first_long: Option<Span> = None;
        for s in specs {
            match &s.node {
                TypeSpecifier::Void => void = true,
                TypeSpecifier::Char => char_ = true,
                TypeSpecifier::Short => short = true,
                TypeSpecifier::Int => int = true,
                TypeSpecifier::Long => {
                    longs += 1;
                    first_long.get_or_insert(s.span);
                }
                TypeSpecifier::Signed => signed = true,
                TypeSpecifier::Unsigned => unsigned = true,
                TypeSpecifier::Bool => bool_ = true,
                TypeSpecifier::Float => floating = Some((FloatTy::Float, s.span)),
                TypeSpecifier::Double => floating = Some((FloatTy::Double, s.span)),
                TypeSpecifier::TS18661Float(t) => {
                    return self.err(
                        s.span,
                        format!(
                            "the type _Float{}{} is not supported (use float or double)",
                            t.width,
                            if t.format == TS18661FloatFormat::BinaryExtended {
                                "x"
                            } else {
                                ""
                            }
                        ),
                    );
                }
                TypeSpecifier::Complex => {
                    return self.err(s.span, "complex numbers are not supported");
                }
                TypeSpecifier::Atomic(_) => return self.err(s.span, "_Atomic is not supported"),
                TypeSpecifier::TypeOf(_) => return self.err(s.span, "typeof is not supported"),
                TypeSpecifier::Struct(st) => other = Some(self.struct_type(st)?),
                TypeSpecifier::Enum(en) => other = Some(self.enum_type(en)?),
                TypeSpecifier::TypedefName(id) => {
                    let name = &id.node.name;
                    match self.lookup(name, id.span)? {
                        Binding::Typedef(Ok(t)) => other = Some(t),
                        Binding::Typedef(Err(why)) => {
                            return self
                                .err(id.span, format!("type `{name}` cannot be used: {why}"));
                        }
                        _ => return self.err(id.span, format!("`{name}` is not a type")),
                    }
                }
            }
        }
        if let Some(t) = other {
            return Ok(t);
        }
        if let Some((f, fspan)) = floating {
            if f == FloatTy::Double && longs > 0 {
                // At whichever of `long` and `double` comes first.
                let at = first_long
                    .filter(|l| l.start < fspan.start)
                    .unwrap_or(fspan);
                return self.err(
                    at,
                    "long double is not supported: on x86-64 it is the x87 80-bit extended \
                     format, which pgc does not implement (use double)",
                );
            }
            if longs > 0 || short || char_ || int || signed || unsigned || bool_ || void {
                return self.err(
                    fspan,
                    format!(
                        "`{}` cannot be combined with integer type specifiers",
                        f.name()
                    ),
                );
            }
            return Ok(Ty::Float(f));
        }
        if void {
            return Ok(Ty::Void);
        }
        if bool_ {
            return Ok(Ty::Int(IntTy::BOOL));
        }
        // Plain `char` (neither `signed` nor `unsigned` said) is a type of its own in C; its
        // ports are `char`, while `signed char` and `unsigned char` (`int8_t` and `uint8_t`
        // in the C library) are `int8_t` and `uint8_t`.
        if char_ && !signed && !unsigned && !short && !int && longs == 0 {
            return Ok(Ty::Int(IntTy::CHAR));
        }
        let bits = if char_ {
            8
        } else if short {
            16
        } else if longs > 0 {
            64
        } else if int || signed || unsigned {
            32
        } else {
            return self.err(span, "declaration without a type");
        };
        Ok(Ty::Int(IntTy::new(bits, !unsigned)))
    }

    fn struct_type(&mut self, st: &'a Node<StructType>) -> R<Ty> {
        let is_union = st.node.kind.node == StructKind::Union;
        let keyword = if is_union { "union" } else { "struct" };
        let tag = st.node.identifier.as_ref().map(|i| i.node.name.clone());
        let Some(decls) = &st.node.declarations else {
            let Some(tag) = tag else {
                return self.err(st.span, format!("{keyword} without a name or fields"));
            };
            return match self.struct_tags.get(&tag) {
                Some(Ok(d)) if d.is_union != is_union => self.err(
                    st.span,
                    format!("`{tag}` is a {} tag, not a {keyword} tag", d.keyword()),
                ),
                Some(Ok(d)) => Ok(Ty::Struct(d.clone())),
                Some(Err(why)) => {
                    self.err(st.span, format!("{keyword} {tag} cannot be used: {why}"))
                }
                None => self.err(st.span, format!("{keyword} {tag} is not defined")),
            };
        };
        let mut fields: Vec<FieldDecl> = Vec::new();
        for d in decls {
            let StructDeclaration::Field(f) = &d.node else {
                continue;
            };
            let specs = qualifier_type_specs(&f.node.specifiers);
            let base = self.base_type(&specs, f.span)?;
            if f.node.declarators.is_empty() {
                // `struct { union { int a; float b; }; int c; }`: C11's anonymous members.
                // (A nested `struct t { … };` with a tag only declares the tag.)
                let anonymous = specs.iter().any(|t| {
                    matches!(&t.node, TypeSpecifier::Struct(inner)
                        if inner.node.identifier.is_none() && inner.node.declarations.is_some())
                });
                if anonymous {
                    return self.err(
                        f.span,
                        "anonymous struct and union members are not supported (give the member a name)",
                    );
                }
                continue;
            }
            for sd in &f.node.declarators {
                let (name, ty, at) = match &sd.node.declarator {
                    Some(decl) => {
                        let (name, ty, _) = self.derive(base.clone(), decl)?;
                        (name, ty, decl.span)
                    }
                    None => (None, base.clone(), sd.span),
                };
                if let Some(n) = &name
                    && fields.iter().any(|f| f.name.as_ref() == Some(n))
                {
                    return self.err(at, format!("duplicate member `{n}`"));
                }
                if ty.contains_pointer() {
                    return self.err(
                        at,
                        format!(
                            "{keyword} fields may not be pointers (pointers exist only at compile time)"
                        ),
                    );
                }
                if matches!(ty, Ty::Void) {
                    return self.err(at, "a field cannot be void");
                }
                let width = match &sd.node.bit_width {
                    Some(bw) => Some(self.bit_field_width(name.as_deref(), &ty, bw, at)?),
                    None => None,
                };
                if is_union
                    && width.is_none()
                    && !ty.image_exact()
                    && let Some(n) = &name
                {
                    return self.err(
                        at,
                        format!(
                            "union member `{n}` has type {}, whose bits pgc does not keep where \
                             gcc's memory keeps them (a _Bool is one bit, a struct has no \
                             padding in the circuit), so reading another member after writing \
                             it could differ from gcc; such union members are not supported",
                            ty.name()
                        ),
                    );
                }
                if name.is_none() && width.is_none() {
                    continue; // `int;`: declares nothing (gcc warns)
                }
                fields.push(FieldDecl { name, ty, width });
            }
        }
        let name = tag
            .clone()
            .unwrap_or_else(|| format!("<anonymous at {}>", self.map.pos(st.span.start).line));
        let def = Rc::new(layout_record(name, is_union, fields));
        if def.bits > MAX_STRUCT_BITS {
            return self.err(
                st.span,
                format!(
                    "{keyword} `{}` of {} bits is too large: a {keyword} is copied whole on assignment, so it may have up to 2^27 bits",
                    def.name, def.bits
                ),
            );
        }
        if let Some(tag) = tag {
            self.struct_tags.insert(tag, Ok(def.clone()));
        }
        Ok(Ty::Struct(def))
    }

    /// The width of a bit-field, checked as gcc checks it.
    fn bit_field_width(
        &mut self,
        name: Option<&str>,
        ty: &Ty,
        bw: &'a Node<Expression>,
        at: Span,
    ) -> R<u32> {
        let what = match name {
            Some(n) => format!("bit-field `{n}`"),
            None => "an unnamed bit-field".to_string(),
        };
        let Ty::Int(t) = ty else {
            return self.err(
                at,
                format!(
                    "{what} has type {}: a bit-field must have an integer type",
                    ty.name()
                ),
            );
        };
        let w = self.const_int(bw)?;
        if w < 0 {
            return self.err(bw.span, format!("{what} has a negative width ({w})"));
        }
        if w > t.bits as i128 {
            return self.err(
                bw.span,
                format!(
                    "the width of {what} ({w}) exceeds its type ({}, {} bits)",
                    t.name(),
                    t.bits
                ),
            );
        }
        if w == 0 && name.is_some() {
            return self.err(bw.span, format!("{what} has zero width"));
        }
        Ok(w as u32)
    }

    fn enum_type(&mut self, en: &'a Node<EnumType>) -> R<Ty> {
        let tag = en.node.identifier.as_ref().map(|i| i.node.name.clone());
        if en.node.enumerators.is_empty() {
            // `enum e v;`: the type the definition of `e` gave.
            let Some(tag) = tag else {
                return self.err(en.span, "enum without a name or constants");
            };
            return match self.enum_tags.get(&tag) {
                Some(&signed) => Ok(Ty::Int(IntTy::new(32, signed))),
                None => self.err(en.span, format!("enum {tag} is not defined")),
            };
        }
        let mut next: i128 = 0;
        let mut any_negative = false;
        for e in &en.node.enumerators {
            if let Some(x) = &e.node.expression {
                next = self.const_int(x)?;
            }
            any_negative |= next < 0;
            self.bind(
                e.node.identifier.node.name.clone(),
                Binding::Const(IntTy::INT, next),
            );
            next += 1;
        }
        // gcc gives an enum without negative values the type unsigned int.
        if let Some(tag) = tag {
            self.enum_tags.insert(tag, any_negative);
        }
        Ok(Ty::Int(IntTy::new(32, any_negative)))
    }

    /// Applies a declarator to a base type: (name, type, function parameters if a function).
    pub fn derive(
        &mut self,
        base: Ty,
        d: &'a Node<Declarator>,
    ) -> R<(Option<String>, Ty, Option<&'a FunctionDeclarator>)> {
        let mut ty = base;
        let mut func = None;
        let (prefix, suffix): (Vec<_>, Vec<_>) = d
            .node
            .derived
            .iter()
            .partition(|x| matches!(x.node, DerivedDeclarator::Pointer(_)));
        for _ in &prefix {
            ty = Ty::Pointer(Box::new(ty));
        }
        for x in suffix.iter().rev() {
            match &x.node {
                DerivedDeclarator::Array(a) => {
                    let n = match &a.node.size {
                        ArraySize::VariableExpression(e) | ArraySize::StaticExpression(e) => {
                            let n = self.const_int(e)?;
                            if n <= 0 {
                                return self
                                    .err(e.span, format!("array size must be positive, not {n}"));
                            }
                            if n > (1 << 32) {
                                return self.err(e.span, format!("array size {n} is too large"));
                            }
                            n as u64
                        }
                        ArraySize::Unknown => 0, // completed by the initializer or adjusted to a pointer
                        ArraySize::VariableUnknown => {
                            return self.err(x.span, "variable-length arrays are not supported");
                        }
                    };
                    ty = Ty::Array(Box::new(ty), n);
                    if ty.bits() > MAX_OBJECT_BITS {
                        let what = match &d.node.kind.node {
                            DeclaratorKind::Identifier(id) => format!("`{}`", id.node.name),
                            _ => "an array".to_string(),
                        };
                        return self.err(
                            x.span,
                            format!(
                                "{what} ({}) of {} bits is too large: pgc keeps one circuit wire per bit, up to 2^30 bits per object",
                                ty.name(),
                                ty.bits()
                            ),
                        );
                    }
                }
                DerivedDeclarator::Function(f) => {
                    func = Some(&f.node);
                    // The declared return type; parameters are read by the caller.
                }
                DerivedDeclarator::KRFunction(_) => {
                    // `f()` — an old-style empty parameter list.
                }
                DerivedDeclarator::Block(_) => return self.err(x.span, "blocks are not supported"),
                DerivedDeclarator::Pointer(_) => unreachable!("partitioned"),
            }
        }
        match &d.node.kind.node {
            DeclaratorKind::Identifier(id) => Ok((Some(id.node.name.clone()), ty, func)),
            DeclaratorKind::Abstract => Ok((None, ty, func)),
            DeclaratorKind::Declarator(inner) => {
                let (n, t, f) = self.derive(ty, inner)?;
                Ok((n, t, f.or(func)))
            }
        }
    }

    fn decl_specs(
        &mut self,
        specs: &'a [Node<DeclarationSpecifier>],
        span: Span,
    ) -> R<(Ty, bool, bool, bool)> {
        let mut typedef = false;
        let mut is_static = false;
        let mut is_extern = false;
        let mut ts = Vec::new();
        for s in specs {
            match &s.node {
                DeclarationSpecifier::StorageClass(c) => match c.node {
                    StorageClassSpecifier::Typedef => typedef = true,
                    StorageClassSpecifier::Static => is_static = true,
                    StorageClassSpecifier::Extern => is_extern = true,
                    _ => {}
                },
                DeclarationSpecifier::TypeSpecifier(t) => ts.push(t),
                _ => {}
            }
        }
        let base = self.base_type(&ts, span)?;
        Ok((base, typedef, is_static, is_extern))
    }

    /// Name, return type and parameters of a function definition.
    pub fn function_signature(
        &mut self,
        f: &'a Node<FunctionDefinition>,
    ) -> R<(String, Ty, Vec<Param>)> {
        let (base, ..) = self.decl_specs(&f.node.specifiers, f.span)?;
        let (name, ty, func) = self.derive(base, &f.node.declarator)?;
        let name = name.unwrap_or_default();
        let mut params = Vec::new();
        if let Some(fd) = func {
            for p in &fd.parameters {
                let ts = declaration_type_specs(&p.node.specifiers);
                let base = self.base_type(&ts, p.span)?;
                let (pname, pty) = match &p.node.declarator {
                    Some(d) => {
                        let (n, t, _) = self.derive(base, d)?;
                        (n, t)
                    }
                    None => (None, base),
                };
                if matches!(pty, Ty::Void) && pname.is_none() && fd.parameters.len() == 1 {
                    break; // f(void)
                }
                // Array parameters are pointers in C — except for the entry's ports, whose
                // size is their type; keep the array type and let the caller decide.
                params.push((pname, pty, p.span));
            }
            if fd.ellipsis == Ellipsis::Some {
                return self.err(f.span, "variadic functions are not supported");
            }
        }
        // Non-entry callers adjust arrays to pointers.
        Ok((name, ty, params))
    }

    /// Adjusts an array parameter type to a pointer (C's rule for non-entry functions).
    pub fn adjust_param(ty: Ty) -> Ty {
        match ty {
            Ty::Array(e, _) => Ty::Pointer(e),
            t => t,
        }
    }

    /// A declaration inside a function (or a global being materialized with `global` set).
    pub fn declare(&mut self, d: &'a Node<Declaration>, global: bool) -> R<()> {
        if d.node.declarators.is_empty() {
            // `struct s { … };` or `enum { … };`: defines tags/constants only.
            self.decl_specs(&d.node.specifiers, d.span)?;
            return Ok(());
        }
        for init in &d.node.declarators {
            self.declare_one(d, init, global)?;
        }
        Ok(())
    }

    pub fn declare_one(
        &mut self,
        d: &'a Node<Declaration>,
        init: &'a Node<InitDeclarator>,
        global: bool,
    ) -> R<()> {
        let (base, typedef, is_static, is_extern) = self.decl_specs(&d.node.specifiers, d.span)?;
        let (name, mut ty, func) = self.derive(base, &init.node.declarator)?;
        let Some(name) = name else { return Ok(()) };
        let span = init.node.declarator.span;
        if typedef {
            self.bind(name, Binding::Typedef(Ok(ty)));
            return Ok(());
        }
        if func.is_some() || is_extern {
            return Ok(()); // a prototype or an extern declaration: nothing to create
        }
        if matches!(ty, Ty::Void) {
            return self.err(span, format!("variable `{name}` declared void"));
        }
        // Complete `T x[] = {…}` from the initializer.
        if let (Ty::Array(e, 0), Some(i)) = (&ty, &init.node.initializer) {
            let n = match (&i.node, string_initializer(e, i)) {
                // `char s[] = "abc"` (or `{"abc"}`) has the string's length, its zero included.
                (_, Some(s)) => crate::strings::string_literal_bytes(&s.node)
                    .map_err(|m| self.error(s.span, m))?
                    .len() as u64,
                (Initializer::List(items), None) => self.list_length_of(e, items)?,
                (Initializer::Expression(_), None) => {
                    return self.err(i.span, "an array needs a brace-enclosed initializer");
                }
            };
            ty = Ty::Array(e.clone(), n);
        }
        if let Ty::Array(_, 0) = ty {
            return self.err(span, format!("array `{name}` needs a size"));
        }
        let in_entry = self.call_stack.len() == 1 && !global;
        if let Some(owner) = input_owner(&name) {
            if !in_entry {
                return self.err(
                    span,
                    format!("input `{name}` must be declared in the entry function"),
                );
            }
            if !self.port_decls.insert(span.start) {
                return self.err(span, format!("input `{name}` is declared inside a loop"));
            }
            if self.cur != Lit::TRUE {
                return self.err(
                    span,
                    format!("input `{name}` is declared under a condition"),
                );
            }
            if let Some(i) = &init.node.initializer {
                return self.err(i.span, format!("input `{name}` cannot have an initializer: its value comes from party {owner:?}"));
            }
            let v = self.new_input(&name, owner, ty, span)?;
            self.bind(name, Binding::Var(v));
            return Ok(());
        }
        if is_static
            && !global
            && let Some(&v) = self.statics.get(&span.start)
        {
            self.bind(name, Binding::Var(v));
            return Ok(());
        }
        let var = if let Ty::Pointer(_) = ty {
            self.new_var(ty.clone(), vec![])
        } else {
            if ty.contains_pointer() {
                return self.err(span, "arrays of pointers are not supported");
            }
            self.zero_var(ty.clone())
        };
        if is_static && !global {
            self.statics.insert(span.start, var);
            self.pin_var(var);
        }
        if let Some(vis) = output_visibility(&name)
            && in_entry
        {
            if !self.port_decls.insert(span.start) {
                return self.err(span, format!("output `{name}` is declared inside a loop"));
            }
            if ty.ctype().is_none() {
                return self.err(
                    span,
                    format!(
                        "output `{name}` has type {}, which a port cannot have",
                        ty.name()
                    ),
                );
            }
            if self.outputs.iter().any(|o| o.name == name) {
                return self.err(span, format!("output `{name}` is declared twice"));
            }
            self.check_port_bits(&name, &ty, span)?;
            self.pin_var(var);
            self.outputs.push(PendingOutput {
                name: name.clone(),
                var,
                visibility: vis,
                ty: ty.clone(),
            });
        }
        self.bind(name, Binding::Var(var));
        let Some(i) = &init.node.initializer else {
            return Ok(());
        };
        if is_static && !global {
            // A static local is initialized once, before the program runs: not on the path
            // condition of the first execution that reaches its declaration, which may be a
            // secret one (the variable would stay zero on the other paths, and every later
            // execution skips the initializer).
            let paths = self.take_path_state();
            let r = self.initialize_var(var, ty, i);
            self.restore_path_state(paths);
            return r;
        }
        self.initialize_var(var, ty, i)
    }

    /// Runs the initializer of the new variable `var` of type `ty`.
    fn initialize_var(&mut self, var: VarId, ty: Ty, i: &'a Node<Initializer>) -> R<()> {
        if let Ty::Pointer(_) = ty {
            let Initializer::Expression(e) = &i.node else {
                return self.err(i.span, "a pointer needs an expression initializer");
            };
            let v = self.eval_rvalue(e)?;
            let Val::Ptr(p) = v else {
                return self.err(e.span, "initializer is not a pointer");
            };
            return self.write_ptr(var, p, e.span);
        }
        let place = Place::whole(var, ty);
        self.initialize(&place, i)
    }

    /// The length a list gives an array of unknown size `T a[] = {…}` (of elements `elem`).
    pub(crate) fn list_length_of(
        &mut self,
        elem: &Ty,
        items: &'a [Node<InitializerListItem>],
    ) -> R<u64> {
        if let [one] = items
            && one.node.designation.is_empty()
            && let Some(s) = string_initializer(elem, &one.node.initializer)
        {
            // `{"abc"}` for an array of char: the string's length, its zero included.
            return crate::strings::string_literal_bytes(&s.node)
                .map(|b| b.len() as u64)
                .map_err(|m| self.error(s.span, m));
        }
        let saved = self.enter(Lit::FALSE);
        let probe = Place::whole(usize::MAX, Ty::Array(Box::new(elem.clone()), 0));
        let r = self.run_list(probe, items, true);
        self.restore(saved);
        r
    }

    /// Writes the bytes of string literal `s` into the `char` array at `place` (C11 §6.7.9
    /// ¶14): the terminating zero only if there is room for it, the rest stays zero.
    fn initialize_from_string(&mut self, place: &Place, s: &'a Node<StringLiteral>) -> R<()> {
        let Ty::Array(_, n) = place.ty else {
            unreachable!("a string initializes an array")
        };
        let mut bytes =
            crate::strings::string_literal_bytes(&s.node).map_err(|m| self.error(s.span, m))?;
        if bytes.len() as u64 > n + 1 {
            return self.err(
                s.span,
                format!(
                    "this string has {} characters, more than the array's {n}",
                    bytes.len() - 1
                ),
            );
        }
        bytes.truncate(n as usize);
        let p = Place {
            ty: Ty::Array(Box::new(Ty::Int(IntTy::CHAR)), bytes.len() as u64),
            ..place.clone()
        };
        self.write_place(&p, &crate::strings::byte_bits(&bytes));
        Ok(())
    }

    /// Runs an initializer into a place (the variable is already zeroed).
    pub(crate) fn initialize(&mut self, place: &Place, init: &'a Node<Initializer>) -> R<()> {
        if let Ty::Array(e, _) = &place.ty
            && let Some(s) = string_initializer(e, init)
        {
            return self.initialize_from_string(place, s);
        }
        match &init.node {
            Initializer::Expression(e) => {
                if let Expression::StringLiteral(_) = &e.node {
                    return self.err(
                        e.span,
                        format!(
                            "a string literal initializes only an array of char, not {}",
                            place.ty.name()
                        ),
                    );
                }
                let v = self.eval_deferred(e)?;
                let bits = self.convert_val(v, &place.ty, e.span)?;
                self.write_place(place, &bits);
                Ok(())
            }
            Initializer::List(items) => self.initialize_list(place, items, init.span),
        }
    }

    /// Runs a brace-enclosed list into `place` (zero where the list says nothing).
    pub(crate) fn initialize_list(
        &mut self,
        place: &Place,
        items: &'a [Node<InitializerListItem>],
        span: Span,
    ) -> R<()> {
        if let Ty::Int(_) | Ty::Float(_) = place.ty {
            // `int x = { 5 };`
            return match items {
                [one] if one.node.designation.is_empty() => {
                    self.initialize(place, &one.node.initializer)
                }
                [one] => self.err(one.span, "a designator in the initializer of a scalar"),
                _ => self.err(span, "too many initializers for a scalar"),
            };
        }
        if let Ty::Array(e, _) = &place.ty
            && let [one] = items
            && one.node.designation.is_empty()
            && let Some(s) = string_initializer(e, &one.node.initializer)
        {
            // `(char[]){"abc"}`: the braces of `char s[] = {"abc"}`.
            return self.initialize_from_string(place, s);
        }
        self.run_list(place.clone(), items, false).map(|_| ())
    }

    /// Places a brace list's items as C11 6.7.9 ¶17–20 says: each item initializes the next
    /// subobject in order, descending into aggregates whose braces are left out (`int
    /// a[2][2] = {1, 2, 3, 4}`) unless the item is a whole struct or union of that type
    /// (`{s, 1}`) or a string for a `char` array; a designation (`.a[1] =`, `[2].f =`)
    /// moves the position, and the items after it go on from the subobject after the one
    /// it named (`{.a[1] = 1, 2}` gives `a[2] = 2`). A braced item initializes its
    /// subobject whole, anew if it was before (its members it does not name are zero, C11
    /// ¶19), and so does a union member (the union's other bytes zero, as gcc does).
    ///
    /// With `measure` set, `place` is an array of unknown length: nothing is evaluated or
    /// written, and the result is the number of elements the list gives it.
    fn run_list(
        &mut self,
        place: Place,
        items: &'a [Node<InitializerListItem>],
        measure: bool,
    ) -> R<u64> {
        // The aggregates the position lies in, outermost first: (aggregate, its member the
        // next item initializes).
        let top_len = if measure {
            u64::MAX
        } else {
            member_count(&place.ty)
        };
        let mut stack: Vec<(Place, u64, u64)> = vec![(place, 0, top_len)];
        let mut length = 0u64;
        // The member each union (by its bit offset) was last initialized through: a
        // designator that names another one starts the union afresh, as gcc does.
        let mut union_members: HashMap<u64, u64> = HashMap::new();
        for it in items {
            if let [first, rest @ ..] = it.node.designation.as_slice() {
                stack.truncate(1);
                let k = self.designator_member(&stack[0].0, first, measure)?;
                stack[0].1 = k;
                for d in rest {
                    let (agg, k, _) = stack.last().expect("the outer list");
                    if !measure
                        && is_union(&agg.ty)
                        && union_members.insert(agg.off, *k) != Some(*k)
                    {
                        let zeros = vec![Lit::FALSE; agg.ty.bits() as usize];
                        self.write_place(agg, &zeros);
                    }
                    let sub = nth_member(agg, *k);
                    let j = self.designator_member(&sub, d, false)?;
                    let n = member_count(&sub.ty);
                    stack.push((sub, j, n));
                }
            } else {
                // Leave the aggregates the previous items filled.
                while let Some((_, k, n)) = stack.last()
                    && k >= n
                    && stack.len() > 1
                {
                    stack.pop();
                    advance(&mut stack);
                }
                if stack[0].1 >= stack[0].2 {
                    return self.err(it.span, "too many initializers");
                }
            }
            // Descend (brace elision) until the item fits the subobject at the position.
            loop {
                let (agg, k, n) = stack.last().expect("the outer list");
                if k >= n {
                    // A designated aggregate's elided members ran out (`{.p = 1, 2, 3}`
                    // with two members in `p`): the item goes on after it.
                    return self.err(it.span, "too many initializers");
                }
                let sub = if measure && stack.len() == 1 {
                    let Ty::Array(e, _) = &agg.ty else {
                        unreachable!("measuring an array")
                    };
                    agg.inner(0, (**e).clone())
                } else {
                    nth_member(agg, *k)
                };
                let fits = match &it.node.initializer.node {
                    Initializer::List(_) => true,
                    Initializer::Expression(e) => match &sub.ty {
                        Ty::Int(_) | Ty::Float(_) => true,
                        Ty::Array(el, _) => string_initializer(el, &it.node.initializer).is_some(),
                        Ty::Struct(_) => {
                            !matches!(e.node, Expression::StringLiteral(_))
                                && self.type_of(e)? == sub.ty
                        }
                        Ty::Void | Ty::Pointer(_) => true,
                    },
                };
                if !fits {
                    let n = member_count(&sub.ty);
                    stack.push((sub, 0, n));
                    continue;
                }
                if !measure {
                    if is_union(&agg.ty) {
                        union_members.insert(agg.off, *k);
                        let zeros = vec![Lit::FALSE; agg.ty.bits() as usize];
                        self.write_place(agg, &zeros);
                    } else if matches!(it.node.initializer.node, Initializer::List(_))
                        && matches!(sub.ty, Ty::Array(..) | Ty::Struct(_))
                    {
                        let zeros = vec![Lit::FALSE; sub.ty.bits() as usize];
                        self.write_place(&sub, &zeros);
                    }
                    self.initialize(&sub, &it.node.initializer)?;
                }
                break;
            }
            length = length.max(stack[0].1 + 1);
            advance(&mut stack);
        }
        Ok(length)
    }

    /// The member of `agg` a designator names (checked against its bounds, except the
    /// outer array's while `measure`-ing it).
    fn designator_member(&mut self, agg: &Place, d: &'a Node<Designator>, measure: bool) -> R<u64> {
        match (&d.node, &agg.ty) {
            (Designator::Index(e), Ty::Array(_, n)) => {
                let k = self.const_int(e)?;
                if k < 0 || (!measure && k >= *n as i128) || k >= 1 << 32 {
                    return self.err(
                        d.span,
                        format!("designator index {k} is outside the array's {n} elements"),
                    );
                }
                Ok(k as u64)
            }
            (Designator::Member(m), Ty::Struct(s)) => {
                match s.fields.iter().position(|(n, _, _)| *n == m.node.name) {
                    Some(p) => Ok(p as u64),
                    None => self.err(
                        m.span,
                        format!("{} {} has no field `{}`", s.keyword(), s.name, m.node.name),
                    ),
                }
            }
            (Designator::Range(_), _) => self.err(
                d.span,
                "range designators (`[a ... b] =`, a gcc extension) are not supported",
            ),
            _ => self.err(d.span, "designator does not fit the initialized type"),
        }
    }

    /// Registers the top-level declarations of the translation unit.
    pub fn collect_globals(&mut self, unit: &'a TranslationUnit) -> R<()> {
        for ext in &unit.0 {
            match &ext.node {
                ExternalDeclaration::FunctionDefinition(f) => {
                    let name = function_name(&f.node.declarator.node);
                    if let Some(name) = name
                        && self.functions.insert(name.clone(), f).is_some()
                    {
                        return self.err(f.span, format!("function `{name}` is defined twice"));
                    }
                }
                ExternalDeclaration::Declaration(d) => {
                    let system = self.map.is_system(d.span.start);
                    let is_typedef = d.node.specifiers.iter().any(|s| {
                        matches!(&s.node, DeclarationSpecifier::StorageClass(c) if c.node == StorageClassSpecifier::Typedef)
                    });
                    if is_typedef || d.node.declarators.is_empty() {
                        // Types are resolved now; one that uses something unsupported (a
                        // float in a system header) is an error only where it is used.
                        match self.declare(d, true) {
                            Ok(()) => {}
                            Err(e) if system || is_typedef => {
                                for init in &d.node.declarators {
                                    if let Some(n) = declarator_name(&init.node.declarator.node) {
                                        self.bind(n, Binding::Typedef(Err(e.to_string())));
                                    }
                                }
                            }
                            Err(e) => return Err(e),
                        }
                        continue;
                    }
                    for init in &d.node.declarators {
                        if let Some(n) = declarator_name(&init.node.declarator.node) {
                            self.pending_globals.insert(n, (d, init));
                        }
                    }
                }
                ExternalDeclaration::StaticAssert(a) => self.static_assert(a)?,
            }
        }
        Ok(())
    }

    /// The struct-member layout of a place's type: (bit offset, type) of each direct member.
    pub fn member_place(&self, place: &Place, name: &str, span: Span) -> R<Place> {
        let Ty::Struct(s) = &place.ty else {
            return self.err(
                span,
                format!("member `{name}` of something that is not a struct or union"),
            );
        };
        let Some((_, t, off)) = s.fields.iter().find(|(n, _, _)| n == name) else {
            return self.err(
                span,
                format!("{} {} has no field `{name}`", s.keyword(), s.name),
            );
        };
        Ok(place.inner(*off, t.clone()))
    }

    /// The place a pointer points to (its first element).
    pub fn deref(&self, p: &Ptr, span: Span) -> R<Place> {
        if p.count == 0 {
            return self.err(span, "dereferencing a pointer past the end of its array");
        }
        Ok(Place {
            var: p.var,
            off: p.off,
            dyns: vec![],
            ty: p.elem.clone(),
            run: p.count,
        })
    }
}

/// How many members an aggregate has (for the position in a brace list): an array's
/// elements, a struct's or union's named fields; a scalar none.
fn member_count(ty: &Ty) -> u64 {
    match ty {
        Ty::Array(_, n) => *n,
        Ty::Struct(s) => s.fields.len() as u64,
        _ => 0,
    }
}

/// Member `k` of the aggregate at `agg`.
fn nth_member(agg: &Place, k: u64) -> Place {
    match &agg.ty {
        Ty::Array(e, _) => agg.inner(k * e.bits(), (**e).clone()),
        Ty::Struct(s) => {
            let (_, t, off) = &s.fields[k as usize];
            agg.inner(*off, t.clone())
        }
        _ => unreachable!("a member of a scalar"),
    }
}

fn is_union(ty: &Ty) -> bool {
    matches!(ty, Ty::Struct(s) if s.is_union)
}

/// Moves the innermost position of a brace list on past the member just initialized (past
/// all of a union's: it takes one).
fn advance(stack: &mut [(Place, u64, u64)]) {
    let (agg, k, n) = stack.last_mut().expect("the outer list");
    if is_union(&agg.ty) {
        *k = *n;
    } else {
        *k += 1;
    }
}

/// The type specifiers among a type name's or field's specifiers and qualifiers.
pub fn qualifier_type_specs(specs: &[Node<SpecifierQualifier>]) -> Vec<&Node<TypeSpecifier>> {
    specs
        .iter()
        .filter_map(|s| match &s.node {
            SpecifierQualifier::TypeSpecifier(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// The type specifiers among a declaration's specifiers.
pub fn declaration_type_specs(specs: &[Node<DeclarationSpecifier>]) -> Vec<&Node<TypeSpecifier>> {
    specs
        .iter()
        .filter_map(|s| match &s.node {
            DeclarationSpecifier::TypeSpecifier(t) => Some(t),
            _ => None,
        })
        .collect()
}

pub fn declarator_name(d: &Declarator) -> Option<String> {
    match &d.kind.node {
        DeclaratorKind::Identifier(id) => Some(id.node.name.clone()),
        DeclaratorKind::Declarator(inner) => declarator_name(&inner.node),
        DeclaratorKind::Abstract => None,
    }
}

pub fn function_name(d: &Declarator) -> Option<String> {
    declarator_name(d)
}

/// The string literal that initializes an array of `elem`, if `init` is one (`"abc"` or
/// `{"abc"}`) and `elem` is a character type (any 8-bit integer but `_Bool`: `char`,
/// `signed char`, `unsigned char` and their `stdint.h` names).
fn string_initializer<'a>(
    elem: &Ty,
    init: &'a Node<Initializer>,
) -> Option<&'a Node<StringLiteral>> {
    if !matches!(elem, Ty::Int(t) if t.bits == 8 && !t.is_bool) {
        return None;
    }
    let e = match &init.node {
        Initializer::Expression(e) => e,
        Initializer::List(items) => match items.as_slice() {
            [one] if one.node.designation.is_empty() => match &one.node.initializer.node {
                Initializer::Expression(e) => e,
                Initializer::List(_) => return None,
            },
            _ => return None,
        },
    };
    match &e.node {
        Expression::StringLiteral(s) => Some(s),
        _ => None,
    }
}
