//! Word-level building blocks over any [`Gates`] implementation: arithmetic, comparisons,
//! shifts, multiplexers and decoders on words of [`Lit`]s, least significant bit first.
//!
//! Binary operations take operands of equal width `n` (the caller extends first) and
//! panic otherwise (a programming error, not an input error). Arithmetic wraps modulo 2^n.
//! Constant bits fold: e.g. multiplying or dividing by a constant costs only the gates the
//! constant needs.
//!
//! Each block has a size-optimal variant (fewest ANDs: ripple-carry adders, schoolbook
//! multiplication over only the bits of the truncated product, restoring division over only
//! the significant bits of the partial remainder) and, when [`Gates::optimize_for`] is
//! [`OptimizeFor::Depth`], a low-AND-depth variant (Sklansky parallel-prefix adders, tree
//! comparators, Dadda-tree multiplication). Counts for 32 and 64 bits: `cargo run -p
//! pgc-circuit --release --example block_costs`.
//!
//! Defined results where C leaves behaviour undefined or the hardware traps:
//! - division by zero: unsigned `x / 0 = 2^n - 1` and `x % 0 = x`; signed `x / 0 = -1` and
//!   `x % 0 = x` (as RISC-V does);
//! - signed overflow `INT_MIN / -1 = INT_MIN` and `INT_MIN % -1 = 0` (wrapping);
//! - shifts by `n` or more use the amount modulo `n` (x86 masks the amount this way for 32-
//!   and 64-bit operands);
//! - out-of-range secret indices: [`mux_tree`] yields zero, [`decoder`] selects nothing.
//!
//! IEEE-754 binary32/binary64 floating point, bit-exact with x86-64 SSE2, is in [`float`].

use std::collections::VecDeque;

pub mod float;

use crate::netlist::{Gates, Lit, OptimizeFor};

fn check_widths(op: &str, a: &[Lit], b: &[Lit]) {
    assert_eq!(
        a.len(),
        b.len(),
        "blocks::{op}: operands of {} and {} bits (extend to equal width first)",
        a.len(),
        b.len()
    );
}

fn depth_mode<G: Gates + ?Sized>(g: &G) -> bool {
    g.optimize_for() == OptimizeFor::Depth
}

// ---- Constants, extension, bitwise ----

/// The low `width` bits of `value` as constants (bits past 128 are zero).
pub fn constant_word(value: u128, width: usize) -> Vec<Lit> {
    (0..width)
        .map(|i| Lit::constant(i < 128 && (value >> i) & 1 == 1))
        .collect()
}

/// The value of a word whose bits are all constant, if they are (bits past 128 ignored).
pub fn word_constant(a: &[Lit]) -> Option<u128> {
    let mut v = 0u128;
    for (i, l) in a.iter().enumerate() {
        let bit = l.as_const()?;
        if bit && i < 128 {
            v |= 1 << i;
        }
    }
    Some(v)
}

/// `a` zero-extended (or truncated) to `width` bits.
pub fn zero_extend(a: &[Lit], width: usize) -> Vec<Lit> {
    let mut v: Vec<Lit> = a.iter().copied().take(width).collect();
    v.resize(width, Lit::FALSE);
    v
}

/// `a` sign-extended (or truncated) to `width` bits; an empty `a` extends with zeros.
pub fn sign_extend(a: &[Lit], width: usize) -> Vec<Lit> {
    let sign = a.last().copied().unwrap_or(Lit::FALSE);
    let mut v: Vec<Lit> = a.iter().copied().take(width).collect();
    v.resize(width, sign);
    v
}

/// Bitwise `!a` (free).
pub fn not_word(a: &[Lit]) -> Vec<Lit> {
    a.iter().map(|&x| !x).collect()
}

/// Bitwise `a & b`.
pub fn and_word<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    check_widths("and_word", a, b);
    a.iter().zip(b).map(|(&x, &y)| g.and(x, y)).collect()
}

/// Bitwise `a | b`.
pub fn or_word<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    check_widths("or_word", a, b);
    a.iter().zip(b).map(|(&x, &y)| g.or(x, y)).collect()
}

/// Bitwise `a ^ b` (free).
pub fn xor_word<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    check_widths("xor_word", a, b);
    a.iter().zip(b).map(|(&x, &y)| g.xor(x, y)).collect()
}

/// `if sel { t } else { f }`, one AND per bit.
pub fn mux_word<G: Gates + ?Sized>(g: &mut G, sel: Lit, t: &[Lit], f: &[Lit]) -> Vec<Lit> {
    check_widths("mux_word", t, f);
    t.iter().zip(f).map(|(&x, &y)| g.mux(sel, x, y)).collect()
}

/// XOR of all bits (free); false for an empty word.
pub fn xor_reduce<G: Gates + ?Sized>(g: &mut G, a: &[Lit]) -> Lit {
    a.iter().fold(Lit::FALSE, |acc, &x| g.xor(acc, x))
}

/// Balanced tree of ANDs: `n - 1` ANDs, depth `ceil(log2 n)`; true for an empty word.
pub fn and_reduce<G: Gates + ?Sized>(g: &mut G, a: &[Lit]) -> Lit {
    let mut level: Vec<Lit> = a.to_vec();
    if level.is_empty() {
        return Lit::TRUE;
    }
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|p| {
                if p.len() == 2 {
                    g.and(p[0], p[1])
                } else {
                    p[0]
                }
            })
            .collect();
    }
    level[0]
}

/// Whether any bit is set (the C truth value of a word): `n - 1` ANDs, logarithmic depth.
pub fn or_reduce<G: Gates + ?Sized>(g: &mut G, a: &[Lit]) -> Lit {
    !and_reduce(g, &not_word(a))
}

// ---- Addition and subtraction ----

/// `c ^ ((x ^ c) & (y ^ c))`: the carry of `x + y + c`, one AND.
fn carry<G: Gates + ?Sized>(g: &mut G, x: Lit, y: Lit, c: Lit) -> Lit {
    let xc = g.xor(x, c);
    let yc = g.xor(y, c);
    let t = g.and(xc, yc);
    g.xor(c, t)
}

/// Full adder: (sum, carry), one AND.
fn full_add<G: Gates + ?Sized>(g: &mut G, x: Lit, y: Lit, c: Lit) -> (Lit, Lit) {
    let xy = g.xor(x, y);
    let s = g.xor(xy, c);
    (s, carry(g, x, y, c))
}

/// Prefix groups are (generate, kill): a group's carry out is 1 if it generates, 0 if it
/// kills, and its carry in otherwise (propagate = neither, free from the two since they
/// exclude each other). Combining `hi` (more significant) with `lo` costs two ANDs, like
/// the usual (generate, propagate) form, but a constant operand bit gives a constant kill
/// (`x + 1` never kills), so groups above a constant carry fold away.
fn combine<G: Gates + ?Sized>(
    g: &mut G,
    hi: (Lit, Lit),
    lo: (Lit, Lit),
    need_kill: bool,
) -> (Lit, Lit) {
    let propagate = !g.xor(hi.0, hi.1);
    // Generate and kill of `hi` exclude propagate, so the ORs are XORs. A constant lower
    // group is folded here: `hi.0 ^ propagate` is `!hi.1`, which the gate builder cannot
    // see through.
    let through = |g: &mut G, own: Lit, other: Lit, low: Lit| match low.as_const() {
        Some(true) => !other,
        Some(false) => own,
        None => {
            let t = g.and(propagate, low);
            g.xor(own, t)
        }
    };
    let generate = through(g, hi.0, hi.1, lo.0);
    let kill = if need_kill {
        through(g, hi.1, hi.0, lo.1)
    } else {
        Lit::FALSE
    };
    (generate, kill)
}

/// Bit (generate, kill) pairs with the carry-in folded into bit 0 (whose kill is then never
/// needed).
fn generate_kill<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit], cin: Lit) -> Vec<(Lit, Lit)> {
    let mut gk: Vec<(Lit, Lit)> = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| {
            let generate = g.and(x, y);
            let propagate = g.xor(x, y);
            // !(x | y), where x | y = generate ^ propagate.
            (generate, !g.xor(generate, propagate))
        })
        .collect();
    if let Some(first) = gk.first_mut() {
        let propagate = !g.xor(first.0, first.1);
        let t = g.and(propagate, cin);
        *first = (g.xor(first.0, t), Lit::FALSE);
    }
    gk
}

/// Sklansky parallel prefix: afterwards `gp[i].0` is the carry out of bits `0..=i`.
fn sklansky<G: Gates + ?Sized>(g: &mut G, gp: &mut [(Lit, Lit)]) {
    let n = gp.len();
    let mut d = 0;
    while (1usize << d) < n {
        for i in 0..n {
            if (i >> d) & 1 == 1 {
                let j = ((i >> d) << d) - 1;
                // Once a group reaches bit 0 its kill is never read again.
                let need_p = (i >> (d + 1)) != 0;
                gp[i] = combine(g, gp[i], gp[j], need_p);
            }
        }
        d += 1;
    }
}

/// `a + b + cin` over `n` bits, and the carry out if asked for.
fn add_core<G: Gates + ?Sized>(
    g: &mut G,
    a: &[Lit],
    b: &[Lit],
    cin: Lit,
    want_carry: bool,
) -> (Vec<Lit>, Lit) {
    let n = a.len();
    if n == 0 {
        return (Vec::new(), cin);
    }
    if depth_mode(g) {
        // Carries into bits 1..n come from prefixes of bits 0..n-1 (and 0..n for carry out).
        let m = if want_carry { n } else { n - 1 };
        let mut gp = generate_kill(g, &a[..m], &b[..m], cin);
        sklansky(g, &mut gp);
        let mut sum = Vec::with_capacity(n);
        for i in 0..n {
            let c = if i == 0 { cin } else { gp[i - 1].0 };
            let p = g.xor(a[i], b[i]);
            sum.push(g.xor(p, c));
        }
        let cout = if want_carry { gp[n - 1].0 } else { Lit::FALSE };
        (sum, cout)
    } else {
        let mut c = cin;
        let mut sum = Vec::with_capacity(n);
        for i in 0..n {
            let p = g.xor(a[i], b[i]);
            sum.push(g.xor(p, c));
            if i + 1 < n || want_carry {
                c = carry(g, a[i], b[i], c);
            }
        }
        (sum, if want_carry { c } else { Lit::FALSE })
    }
}

/// Only the carry out of `a + b + cin`: a ripple chain of `n` ANDs, or with
/// [`OptimizeFor::Depth`] a balanced tree of generate/kill pairs (about `3n` ANDs,
/// depth `ceil(log2 n) + 1`).
fn carry_out<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit], cin: Lit) -> Lit {
    if a.is_empty() {
        return cin;
    }
    if depth_mode(g) {
        let gp = generate_kill(g, a, b, cin);
        // Pairs of adjacent groups, least significant first; a group containing bit 0
        // never needs its kill.
        let mut level: Vec<((Lit, Lit), bool)> = gp
            .into_iter()
            .enumerate()
            .map(|(i, x)| (x, i == 0))
            .collect();
        while level.len() > 1 {
            level = level
                .chunks(2)
                .map(|p| {
                    if p.len() == 2 {
                        let has_bit0 = p[0].1;
                        (combine(g, p[1].0, p[0].0, !has_bit0), has_bit0)
                    } else {
                        p[0]
                    }
                })
                .collect();
        }
        level[0].0.0
    } else {
        let mut c = cin;
        for (&x, &y) in a.iter().zip(b) {
            c = carry(g, x, y, c);
        }
        c
    }
}

/// `a + b` modulo 2^n: `n - 1` ANDs (ripple carry) or, with [`OptimizeFor::Depth`], a
/// Sklansky adder of depth `ceil(log2(n - 1)) + 1`.
pub fn add<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    check_widths("add", a, b);
    add_core(g, a, b, Lit::FALSE, false).0
}

/// `a + b + cin` and the carry out (`n` ANDs with ripple carry).
pub fn add_with_carry<G: Gates + ?Sized>(
    g: &mut G,
    a: &[Lit],
    b: &[Lit],
    cin: Lit,
) -> (Vec<Lit>, Lit) {
    check_widths("add_with_carry", a, b);
    add_core(g, a, b, cin, true)
}

/// `a - b` modulo 2^n (`a + !b + 1`): `n - 1` ANDs, or a Sklansky subtractor.
pub fn sub<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    check_widths("sub", a, b);
    add_core(g, a, &not_word(b), Lit::TRUE, false).0
}

/// `a - b` and whether no borrow occurred (`a >= b` unsigned).
pub fn sub_with_borrow<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> (Vec<Lit>, Lit) {
    check_widths("sub_with_borrow", a, b);
    add_core(g, a, &not_word(b), Lit::TRUE, true)
}

/// `-a` modulo 2^n (`!a + 1`): `n - 2` ANDs.
pub fn neg<G: Gates + ?Sized>(g: &mut G, a: &[Lit]) -> Vec<Lit> {
    let zero = vec![Lit::FALSE; a.len()];
    sub(g, &zero, a)
}

/// `if s { -x } else { x }`, as `(x ^ s) + s`: `n - 1` ANDs.
pub fn negate_if<G: Gates + ?Sized>(g: &mut G, s: Lit, x: &[Lit]) -> Vec<Lit> {
    let flipped: Vec<Lit> = x.iter().map(|&b| g.xor(b, s)).collect();
    let zero = vec![Lit::FALSE; x.len()];
    add_core(g, &flipped, &zero, s, false).0
}

/// `|a|` of a signed word, as an unsigned word of the same width (`|INT_MIN| = 2^(n-1)`).
pub fn abs<G: Gates + ?Sized>(g: &mut G, a: &[Lit]) -> Vec<Lit> {
    match a.last() {
        Some(&s) => negate_if(g, s, a),
        None => Vec::new(),
    }
}

// ---- Comparisons ----

/// `a < b` unsigned: the borrow of `a - b`; `n` ANDs, or a tree of depth
/// `ceil(log2 n) + 1` with [`OptimizeFor::Depth`].
pub fn lt_unsigned<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Lit {
    check_widths("lt_unsigned", a, b);
    !carry_out(g, a, &not_word(b), Lit::TRUE)
}

/// `a <= b` unsigned.
pub fn le_unsigned<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Lit {
    !lt_unsigned(g, b, a)
}

/// `a > b` unsigned.
pub fn gt_unsigned<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Lit {
    lt_unsigned(g, b, a)
}

/// `a >= b` unsigned.
pub fn ge_unsigned<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Lit {
    !lt_unsigned(g, a, b)
}

/// Flips the sign bit (free), mapping two's-complement order onto unsigned order.
fn bias(a: &[Lit]) -> Vec<Lit> {
    let mut v = a.to_vec();
    if let Some(s) = v.last_mut() {
        *s = !*s;
    }
    v
}

/// `a < b` signed (two's complement): same cost as [`lt_unsigned`].
pub fn lt_signed<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Lit {
    check_widths("lt_signed", a, b);
    lt_unsigned(g, &bias(a), &bias(b))
}

/// `a <= b` signed.
pub fn le_signed<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Lit {
    !lt_signed(g, b, a)
}

/// `a > b` signed.
pub fn gt_signed<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Lit {
    lt_signed(g, b, a)
}

/// `a >= b` signed.
pub fn ge_signed<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Lit {
    !lt_signed(g, a, b)
}

/// `a == b`: `n - 1` ANDs in a tree.
pub fn eq<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Lit {
    check_widths("eq", a, b);
    let d = xor_word(g, a, b);
    !or_reduce(g, &d)
}

/// `a != b`.
pub fn ne<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Lit {
    !eq(g, a, b)
}

// ---- Column compression (multiplication, population count) ----

/// Sums weighted bits: `cols[c]` holds bits of weight 2^c; returns the sum modulo
/// 2^cols.len(). Constant-true bits are added up as a number first, so they cost at most
/// one bit per column. Full and half adders column by column (one AND each), or with
/// [`OptimizeFor::Depth`] a Dadda tree and one parallel-prefix adder: the carry-save
/// network adder that sums many words (or many products' [`product_columns`]) at once.
pub fn sum_columns<G: Gates + ?Sized>(g: &mut G, cols: Vec<Vec<Lit>>) -> Vec<Lit> {
    let queues = prepare_columns(cols);
    if depth_mode(g) {
        dadda(g, queues)
    } else {
        serial_columns(g, queues)
    }
}

/// The first stages of [`sum_columns`]' Dadda tree: columns of at most `height` bits (but
/// the top one, whose carries fall outside the width) with the same sum modulo
/// 2^cols.len(), by the very gates `sum_columns` makes with [`OptimizeFor::Depth`], so a
/// sum of these columns with others shares them with the sum of these alone. `height` is
/// best one of [`dadda_heights`]; columns already that low are only prepared (duplicate
/// bits moved up, constants added up).
pub fn compress_columns<G: Gates + ?Sized>(
    g: &mut G,
    cols: Vec<Vec<Lit>>,
    height: usize,
) -> Vec<Vec<Lit>> {
    let mut queues = prepare_columns(cols);
    let Some(top) = queues.len().checked_sub(1) else {
        return Vec::new();
    };
    let max_height = queues[..top].iter().map(VecDeque::len).max().unwrap_or(0);
    for &d in dadda_heights(max_height).iter().rev() {
        if d < height {
            break;
        }
        queues = dadda_stage(g, queues, d);
    }
    queues.into_iter().map(Vec::from).collect()
}

/// Duplicate literals in a column moved up, complementary pairs and constant-true bits
/// counted as a number added back at most one bit per column.
fn prepare_columns(mut cols: Vec<Vec<Lit>>) -> Vec<VecDeque<Lit>> {
    let width = cols.len();
    // x + x = 2x: a literal twice in a column moves once to the next column, and x + !x = 1.
    // A square has every cross product a_i·a_j twice (structural hashing makes them one
    // literal), so this halves its adders.
    for c in 0..width {
        let col = std::mem::take(&mut cols[c]);
        let mut first_at: std::collections::HashMap<Lit, usize> = std::collections::HashMap::new();
        let mut kept: Vec<Option<Lit>> = Vec::with_capacity(col.len());
        let mut doubled = Vec::new();
        let mut ones = 0;
        for l in col {
            if l.as_const().is_some() {
                kept.push(Some(l));
                continue;
            }
            match first_at.remove(&l.positive()) {
                Some(i) => {
                    let other = kept[i].take().expect("kept until paired");
                    if other == l {
                        doubled.push(l);
                    } else {
                        ones += 1;
                    }
                }
                None => {
                    first_at.insert(l.positive(), kept.len());
                    kept.push(Some(l));
                }
            }
        }
        cols[c] = kept
            .into_iter()
            .flatten()
            .chain(std::iter::repeat_n(Lit::TRUE, ones))
            .collect();
        if c + 1 < width {
            cols[c + 1].extend(doubled);
        }
    }
    // Move the constants out: count the true bits per column, then propagate.
    let mut queues: Vec<VecDeque<Lit>> = Vec::with_capacity(width);
    let mut counts = vec![0u64; width];
    for (c, col) in cols.into_iter().enumerate() {
        let mut q = VecDeque::new();
        for l in col {
            match l.as_const() {
                Some(true) => counts[c] += 1,
                Some(false) => {}
                None => q.push_back(l),
            }
        }
        queues.push(q);
    }
    for c in 0..width {
        if counts[c] & 1 == 1 {
            queues[c].push_back(Lit::TRUE);
        }
        if c + 1 < width {
            counts[c + 1] += counts[c] / 2;
        }
    }
    queues
}

/// Reduces each column to one bit, least significant column first, with full and half
/// adders (one AND each) in first-in-first-out order; the top column only XORs (its
/// carries would fall outside the width).
fn serial_columns<G: Gates + ?Sized>(g: &mut G, mut cols: Vec<VecDeque<Lit>>) -> Vec<Lit> {
    let width = cols.len();
    let mut out = Vec::with_capacity(width);
    for c in 0..width {
        let mut q = std::mem::take(&mut cols[c]);
        if c + 1 == width {
            let bits: Vec<Lit> = q.into_iter().collect();
            out.push(xor_reduce(g, &bits));
            break;
        }
        while q.len() >= 3 {
            let (x, y, z) = (q.pop_front(), q.pop_front(), q.pop_front());
            let (s, cy) = full_add(g, x.unwrap(), y.unwrap(), z.unwrap());
            q.push_back(s);
            cols[c + 1].push_back(cy);
        }
        if q.len() == 2 {
            let (x, y) = (q[0], q[1]);
            cols[c + 1].push_back(g.and(x, y));
            q.clear();
            q.push_back(g.xor(x, y));
        }
        out.push(q.pop_front().unwrap_or(Lit::FALSE));
    }
    out
}

/// Dadda reduction: stages with target heights ..., 13, 9, 6, 4, 3, 2, each using the
/// fewest full and half adders (one AND each, all of one stage in parallel) that bring
/// every column, counting the carries it receives in the same stage, down to the target;
/// then a parallel-prefix adder on the two remaining rows. The top column only XORs.
fn dadda<G: Gates + ?Sized>(g: &mut G, mut cols: Vec<VecDeque<Lit>>) -> Vec<Lit> {
    let width = cols.len();
    if width == 0 {
        return Vec::new();
    }
    let top = width - 1;
    let max_height = cols[..top].iter().map(VecDeque::len).max().unwrap_or(0);
    for &d in dadda_heights(max_height).iter().rev() {
        cols = dadda_stage(g, cols, d);
    }
    let top_bits: Vec<Lit> = std::mem::take(&mut cols[top]).into_iter().collect();
    let top_sum = xor_reduce(g, &top_bits);
    let mut x: Vec<Lit> = Vec::with_capacity(width);
    let mut y: Vec<Lit> = Vec::with_capacity(width);
    for col in &cols[..top] {
        debug_assert!(
            col.len() <= 2,
            "Dadda stages leave at most two bits per column"
        );
        x.push(col.front().copied().unwrap_or(Lit::FALSE));
        y.push(col.get(1).copied().unwrap_or(Lit::FALSE));
    }
    x.push(top_sum);
    y.push(Lit::FALSE);
    add_core(g, &x, &y, Lit::FALSE, false).0
}

/// The heights Dadda's stages reduce columns to, below `max_height`, ascending: 2, 3, 4,
/// 6, 9, 13, 19, … (each 3/2 of the one before); one stage (one AND of depth) per height.
pub fn dadda_heights(max_height: usize) -> Vec<usize> {
    let mut heights = vec![2usize];
    while *heights.last().expect("nonempty") < max_height {
        let d = *heights.last().expect("nonempty");
        heights.push(d * 3 / 2);
    }
    heights.pop();
    heights
}

/// One Dadda stage: the fewest full and half adders that bring every column but the top
/// one, counting the carries it receives in this stage, down to `d` bits.
fn dadda_stage<G: Gates + ?Sized>(
    g: &mut G,
    mut cols: Vec<VecDeque<Lit>>,
    d: usize,
) -> Vec<VecDeque<Lit>> {
    let width = cols.len();
    let top = width - 1;
    let mut next: Vec<VecDeque<Lit>> = vec![VecDeque::new(); width];
    next[top] = std::mem::take(&mut cols[top]);
    let mut carries_in = 0;
    for c in 0..top {
        let mut bits = std::mem::take(&mut cols[c]);
        let mut height = bits.len() + carries_in;
        let mut carries_out = 0;
        while height > d && bits.len() >= 2 {
            if height - d >= 2 && bits.len() >= 3 {
                let (x, y, z) = (bits.pop_front(), bits.pop_front(), bits.pop_front());
                let (s, cy) = full_add(g, x.unwrap(), y.unwrap(), z.unwrap());
                next[c].push_back(s);
                next[c + 1].push_back(cy);
                height -= 2;
            } else {
                let (x, y) = (bits.pop_front().unwrap(), bits.pop_front().unwrap());
                next[c].push_back(g.xor(x, y));
                next[c + 1].push_back(g.and(x, y));
                height -= 1;
            }
            carries_out += 1;
        }
        next[c].extend(bits);
        carries_in = carries_out;
    }
    next
}

/// Non-adjacent form of `value` over `width` bits: signed digits (position, negative?)
/// with no two adjacent nonzero, the fewest nonzero digits of any signed-binary form.
/// Digits at `width` or above are dropped (they vanish modulo 2^width).
fn naf(mut value: u128, width: usize) -> Vec<(usize, bool)> {
    let mut digits = Vec::new();
    let mut pos = 0;
    while value != 0 && pos < width {
        if value & 1 == 1 {
            if value & 2 == 2 {
                digits.push((pos, true));
                value = value.wrapping_add(1);
            } else {
                digits.push((pos, false));
                value -= 1;
            }
        }
        value >>= 1;
        pos += 1;
    }
    digits
}

/// The fewest low bits `m >= 1` of which `a` is the sign extension (its top `len - m + 1`
/// bits are the same literal); `a.len()` if none, 0 for an empty word.
fn signed_width(a: &[Lit]) -> usize {
    let Some(&top) = a.last() else {
        return 0;
    };
    let mut m = a.len();
    while m > 1 && a[m - 2] == top {
        m -= 1;
    }
    m
}

/// Partial-product columns of `a * b` modulo 2^width (`a`, `b` zero-extended to `width`),
/// to be summed by [`sum_columns`] (alone: [`mul`]; with other addends: a multiply-add in
/// one carry-save tree). Sign-extended operands cost only their significant bits, and a
/// constant operand only its signed digits.
pub fn product_columns<G: Gates + ?Sized>(
    g: &mut G,
    a: &[Lit],
    b: &[Lit],
    width: usize,
) -> Vec<Vec<Lit>> {
    let mut cols: Vec<Vec<Lit>> = vec![Vec::new(); width];
    // A fully constant operand with a sparser signed-digit form: sum of +-(a << k).
    let (var, konst) = if word_constant(a).is_some() && word_constant(b).is_none() {
        (b, a)
    } else {
        (a, b)
    };
    if konst.len() <= 128
        && let Some(value) = word_constant(konst)
    {
        let digits = naf(value, width);
        if digits.len() < value.count_ones() as usize {
            for (k, negative) in digits {
                // -(x << k) = ((!x) << k) + 2^k modulo 2^width, x zero-extended.
                for (c, col) in cols.iter_mut().enumerate().skip(k) {
                    let x = var.get(c - k).copied().unwrap_or(Lit::FALSE);
                    col.push(if negative { !x } else { x });
                }
                if negative {
                    cols[k].push(Lit::TRUE);
                }
            }
            return cols;
        }
    }
    // Operands that are sign extensions of narrower words (C's promotions, e.g. a `long`
    // product of two `int`s): with a = a_u - s_a 2^ma (a_u the low ma bits unsigned, s_a
    // its top bit) and likewise b,
    //   a b = a_u b_u - s_a b_u 2^ma - s_b a_u 2^mb + s_a s_b 2^(ma+mb),
    // which needs about ma * mb partial products instead of width^2 / 2. Zero-extended
    // operands are the case s = 0, where the correction terms fold away.
    let (a, b) = (zero_extend(a, width), zero_extend(b, width));
    let (ma, mb) = (signed_width(&a), signed_width(&b));
    for (i, &x) in a[..ma].iter().enumerate() {
        for (j, &y) in b[..mb].iter().enumerate() {
            if i + j < width {
                let p = g.and(x, y);
                if p != Lit::FALSE {
                    cols[i + j].push(p);
                }
            }
        }
    }
    if ma == 0 || mb == 0 {
        return cols;
    }
    let (sa, sb) = (a[ma - 1], b[mb - 1]);
    // -(s * v << shift), v zero-extended: ((!(s & v)) << shift) + 2^shift.
    let mut subtract_row = |g: &mut G, s: Lit, v: &[Lit], shift: usize| {
        if shift >= width || s == Lit::FALSE {
            return;
        }
        for (c, col) in cols.iter_mut().enumerate().skip(shift) {
            let x = v.get(c - shift).copied().unwrap_or(Lit::FALSE);
            col.push(!g.and(s, x));
        }
        cols[shift].push(Lit::TRUE);
    };
    subtract_row(g, sa, &b[..mb], ma);
    subtract_row(g, sb, &a[..ma], mb);
    if ma + mb < width {
        let p = g.and(sa, sb);
        cols[ma + mb].push(p);
    }
    cols
}

/// `a * b` modulo 2^n (the C product of equal-width operands). Schoolbook over only the
/// `n(n+1)/2` partial products of the truncated result, summed column by column:
/// `n(n+1)/2 + (n-1)(n-2)/2` ANDs (993 for 32 bits, 4033 for 64). With
/// [`OptimizeFor::Depth`] a Dadda tree and a Sklansky adder. A constant operand costs
/// only its nonzero digits (in non-adjacent form where that is sparser, e.g. `x * -1`
/// costs `n - 2` ANDs). Karatsuba is not used: for truncated products it is larger.
pub fn mul<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    check_widths("mul", a, b);
    let cols = product_columns(g, a, b, a.len());
    sum_columns(g, cols)
}

/// The full `2n`-bit product of unsigned `a` and `b`.
pub fn mul_wide_unsigned<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    check_widths("mul_wide_unsigned", a, b);
    let cols = product_columns(g, a, b, 2 * a.len());
    sum_columns(g, cols)
}

/// The full `2n`-bit product of signed `a` and `b` (sign-extend, then truncated product).
pub fn mul_wide_signed<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> Vec<Lit> {
    check_widths("mul_wide_signed", a, b);
    let n = 2 * a.len();
    mul(g, &sign_extend(a, n), &sign_extend(b, n))
}

/// Number of set bits, `ceil(log2(n + 1))` bits wide: a tree of full adders (about
/// `n - 1` ANDs).
pub fn popcount<G: Gates + ?Sized>(g: &mut G, a: &[Lit]) -> Vec<Lit> {
    let width = (usize::BITS - a.len().leading_zeros()) as usize;
    if width == 0 {
        return Vec::new();
    }
    // First-in-first-out full adders over inputs of equal depth already form a balanced
    // tree, so this is also the low-depth variant (a Dadda tree and final adder cost more
    // ANDs and no less depth here).
    let mut cols: Vec<VecDeque<Lit>> = vec![VecDeque::new(); width];
    cols[0] = a.iter().copied().filter(|&l| l != Lit::FALSE).collect();
    let ones = a.iter().filter(|&&l| l == Lit::TRUE).count();
    cols[0].retain(|&l| l != Lit::TRUE);
    // Constant-true bits: add their count as a constant number.
    for (c, col) in cols.iter_mut().enumerate() {
        if (ones >> c) & 1 == 1 {
            col.push_back(Lit::TRUE);
        }
    }
    serial_columns(g, cols)
}

// ---- Division ----

/// Unsigned restoring division; returns (quotient, remainder, divisor != 0).
///
/// At step `t` the partial remainder has only `t + 1` significant bits, so only those are
/// compared and subtracted; the divisor's higher bits enter through one shared suffix-OR.
/// The remainder is also kept below the divisor's highest possibly-set bit, which makes
/// division by a constant (or a narrow secret) cheap.
fn udivrem_core<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> (Vec<Lit>, Vec<Lit>, Lit) {
    let n = a.len();
    if n == 0 {
        return (Vec::new(), Vec::new(), Lit::FALSE);
    }
    // higher[t] = OR of b[t+1..n]: whether b exceeds every (t+1)-bit value.
    let mut higher = vec![Lit::FALSE; n];
    for t in (0..n - 1).rev() {
        higher[t] = g.or(higher[t + 1], b[t + 1]);
    }
    let nonzero = g.or(higher[0], b[0]);
    // Remainders stay below b, so they fit in top + 1 bits (top = b's highest bit that is
    // not constant zero).
    let Some(top) = b.iter().rposition(|&l| l != Lit::FALSE) else {
        // Division by the constant 0.
        return (vec![Lit::TRUE; n], a.to_vec(), Lit::FALSE);
    };
    let cap = top + 1;
    let mut q = vec![Lit::FALSE; n];
    let mut r: Vec<Lit> = Vec::new();
    // While the dividend's bits are constant zeros (e.g. a zero- or sign-extended narrower
    // value), the partial remainder stays 0 and the quotient bit is whether b = 0.
    let leading_zeros = a.iter().rev().take_while(|&&l| l == Lit::FALSE).count();
    for t in 0..leading_zeros {
        q[n - 1 - t] = !nonzero;
    }
    for t in leading_zeros..n {
        let mut shifted = Vec::with_capacity(r.len() + 1);
        shifted.push(a[n - 1 - t]);
        shifted.extend_from_slice(&r);
        let w = shifted.len();
        let (diff, no_borrow) = sub_with_borrow(g, &shifted, &b[..w]);
        let fits = g.and(no_borrow, !higher[w - 1]);
        q[n - 1 - t] = fits;
        r = mux_word(g, fits, &diff, &shifted);
        r.truncate(cap);
    }
    let mut r = zero_extend(&r, n);
    if cap < n && word_constant(b).is_none() {
        // The truncation assumed r < b, false when b = 0, where the remainder must be a.
        r = mux_word(g, nonzero, &r, a);
    }
    (q, r, nonzero)
}

/// Unsigned `(a / b, a % b)`. `x / 0 = 2^n - 1`, `x % 0 = x`. Costs at most
/// `n(n+1) + 2n - 3` ANDs (4285 for 64 bits; the quotient alone `n` fewer after dead-gate
/// elimination); a constant divisor much less.
pub fn udivrem<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> (Vec<Lit>, Vec<Lit>) {
    check_widths("udivrem", a, b);
    let (q, r, _) = udivrem_core(g, a, b);
    (q, r)
}

/// Signed `(a / b, a % b)` with C semantics: the quotient truncated toward zero, the
/// remainder with the sign of the dividend. `x / 0 = -1`, `x % 0 = x`,
/// `INT_MIN / -1 = INT_MIN`, `INT_MIN % -1 = 0`. Division of absolute values plus four
/// conditional negations: at most 4539 ANDs for 64 bits.
pub fn sdivrem<G: Gates + ?Sized>(g: &mut G, a: &[Lit], b: &[Lit]) -> (Vec<Lit>, Vec<Lit>) {
    check_widths("sdivrem", a, b);
    let (Some(&sa), Some(&sb)) = (a.last(), b.last()) else {
        return (Vec::new(), Vec::new());
    };
    let ua = abs(g, a);
    let ub = abs(g, b);
    let (uq, ur, nonzero) = udivrem_core(g, &ua, &ub);
    let signs_differ = g.xor(sa, sb);
    // With b = 0 the unsigned quotient is all ones, which is already -1.
    let negate_q = g.and(signs_differ, nonzero);
    (negate_if(g, negate_q, &uq), negate_if(g, sa, &ur))
}

// ---- Shifts ----

/// The amount reduced modulo `n`, as `ceil(log2 n)` bits.
fn shift_amount<G: Gates + ?Sized>(g: &mut G, amount: &[Lit], n: usize) -> Vec<Lit> {
    let stages = (usize::BITS - (n.max(1) - 1).leading_zeros()) as usize;
    let amount_can_reach_n = amount.len() >= usize::BITS as usize || (1usize << amount.len()) > n;
    if n.is_power_of_two() || !amount_can_reach_n {
        return zero_extend(amount, stages);
    }
    let divisor = constant_word(n as u128, amount.len());
    let (_, r) = udivrem(g, amount, &divisor);
    zero_extend(&r, stages)
}

/// Barrel shifter: stage `s` moves by 2^s where amount bit `s` is set; `fill` for bits
/// shifted in (None: the bit of the word itself, for rotations; unused here).
fn barrel<G: Gates + ?Sized>(
    g: &mut G,
    a: &[Lit],
    amount: &[Lit],
    left: bool,
    fill: Lit,
) -> Vec<Lit> {
    let n = a.len();
    let bits = shift_amount(g, amount, n);
    let mut v = a.to_vec();
    for (s, &sel) in bits.iter().enumerate() {
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
    v
}

/// `a << (amount mod n)`: `n * ceil(log2 n)` ANDs at most; a constant amount is free.
pub fn shl<G: Gates + ?Sized>(g: &mut G, a: &[Lit], amount: &[Lit]) -> Vec<Lit> {
    barrel(g, a, amount, true, Lit::FALSE)
}

/// Logical `a >> (amount mod n)`.
pub fn lshr<G: Gates + ?Sized>(g: &mut G, a: &[Lit], amount: &[Lit]) -> Vec<Lit> {
    barrel(g, a, amount, false, Lit::FALSE)
}

/// Arithmetic `a >> (amount mod n)` (copies of the sign bit shift in).
pub fn ashr<G: Gates + ?Sized>(g: &mut G, a: &[Lit], amount: &[Lit]) -> Vec<Lit> {
    let sign = a.last().copied().unwrap_or(Lit::FALSE);
    barrel(g, a, amount, false, sign)
}

// ---- Secret indices ----

/// `elems[index]` for a secret `index` (unsigned, any width): a tree of multiplexers,
/// `(len - 1) * w` ANDs, plus `w` ANDs and an index comparison when some index value is out
/// of range (`len` not a power of two, or `index` wider than needed); out-of-range indices
/// yield all-zero. Empty `elems` give an empty word.
///
/// # Panics
/// If the elements differ in width.
pub fn mux_tree<G: Gates + ?Sized>(g: &mut G, index: &[Lit], elems: &[Vec<Lit>]) -> Vec<Lit> {
    let Some(first) = elems.first() else {
        return Vec::new();
    };
    let w = first.len();
    assert!(
        elems.iter().all(|e| e.len() == w),
        "blocks::mux_tree: elements differ in width"
    );
    let len = elems.len();
    let k = (usize::BITS - (len - 1).leading_zeros()) as usize;
    let mut level: Vec<Vec<Lit>> = elems.to_vec();
    for s in 0..k {
        let sel = index.get(s).copied().unwrap_or(Lit::FALSE);
        level = level
            .chunks(2)
            .map(|p| {
                if p.len() == 2 {
                    mux_word(g, sel, &p[1], &p[0])
                } else {
                    p[0].clone()
                }
            })
            .collect();
    }
    let picked = level.pop().expect("one element left");
    let every_index_valid = index.len() <= k && (len.is_power_of_two() || index.len() < k);
    let all_reachable_valid = index.len() < usize::BITS as usize && (1usize << index.len()) <= len;
    if every_index_valid || all_reachable_valid {
        return picked;
    }
    let iw = index.len().max(k + 1);
    let valid = lt_unsigned(g, &zero_extend(index, iw), &constant_word(len as u128, iw));
    picked.iter().map(|&x| g.and(valid, x)).collect()
}

/// One-hot decoding of a secret unsigned `index` (any width) into `n` selection bits:
/// bit `i` is `index == i`; all false if `index >= n`. About `n + O(sqrt n)` ANDs plus the
/// zero test of index bits that only out-of-range values use.
pub fn decoder<G: Gates + ?Sized>(g: &mut G, index: &[Lit], n: usize) -> Vec<Lit> {
    let reachable = if index.len() >= usize::BITS as usize {
        usize::MAX
    } else {
        1usize << index.len()
    };
    let mut out = decode_prefix(g, index, n.min(reachable));
    out.resize(n, Lit::FALSE);
    out
}

/// `[index == 0, .., index == m - 1]` with `m <= 2^index.len()`.
fn decode_prefix<G: Gates + ?Sized>(g: &mut G, bits: &[Lit], m: usize) -> Vec<Lit> {
    if m == 0 {
        return Vec::new();
    }
    if m == 1 {
        return vec![!or_reduce(g, bits)];
    }
    if bits.len() == 1 {
        return vec![!bits[0], bits[0]];
    }
    // Bits needed for 0..m; any wider bits belong to the upper half and so reach the zero
    // test at the top of the recursion, shared by all outputs.
    let k = (usize::BITS - (m - 1).leading_zeros()) as usize;
    let l = k.div_ceil(2);
    let lo = decode_prefix(g, &bits[..l], m.min(1 << l));
    let hi = decode_prefix(g, &bits[l..], m.div_ceil(1 << l));
    (0..m)
        .map(|j| g.and(hi[j >> l], lo[j & ((1 << l) - 1)]))
        .collect()
}
