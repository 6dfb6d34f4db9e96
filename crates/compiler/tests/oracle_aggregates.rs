//! Unions, bit-fields, compound literals and designators followed by positional items,
//! against gcc on seeded random inputs: union members reinterpret the bytes another member
//! wrote exactly as gcc's x86-64 code reads them (floats included), bit-fields are laid out,
//! truncated and sign-extended as gcc does, and compound literals are objects like declared
//! ones.

mod common;

use common::oracle::{Case, check_case};
use pgc_circuit::OptimizeFor;
use pgc_compiler::Options;

fn check(name: &str, source: &str, inputs: usize, protocol_runs: usize) {
    if !common::gcc_available() {
        return;
    }
    // A seed per program, from its name, so adding a program does not change the others.
    let seed = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    // Both optimization modes: depth mode keeps sums deferred in variables, and a union
    // member may read the bits of a deferred one.
    for optimize in [OptimizeFor::Size, OptimizeFor::Depth] {
        let mut case = Case::text(name, source);
        case.opts = Options {
            unroll_limit: 64,
            optimize,
            ..Options::default()
        };
        check_case(&case, inputs, protocol_runs, seed);
    }
}

/// Writing one member and reading another: float and integer, a wide member read through
/// narrow ones (bytes, halves), a narrow one written into a wide one, `double` halves.
#[test]
fn union_members_reinterpret_the_bytes_as_gcc_does() {
    check(
        "union_punning.c",
        r#"
#include <stdint.h>
union FI { float f; uint32_t u; int32_t i; unsigned char b[4]; uint16_t h[2]; };
union DW { double d; uint64_t q; uint32_t w[2]; int8_t s[8]; float f[2]; };
union W { long l; short s; char c; };

void mpc_main(int INPUT_A_x, int INPUT_B_y, float INPUT_A_f, double INPUT_B_d,
              long OUTPUT_r[13], float *OUTPUT_f, double *OUTPUT_d, float *OUTPUT_g)
{
    union FI a;
    a.f = INPUT_A_f;
    OUTPUT_r[0] = a.u;
    OUTPUT_r[1] = a.b[0] + a.b[3] * 1000;
    OUTPUT_r[2] = a.h[1];
    a.u = INPUT_A_x;
    *OUTPUT_f = a.f;
    a.b[1] = INPUT_B_y;
    OUTPUT_r[3] = a.i;
    union DW d;
    d.d = INPUT_B_d;
    OUTPUT_r[4] = d.w[0];
    OUTPUT_r[5] = d.w[1];
    OUTPUT_r[6] = d.s[7] + d.s[0] * 256;
    d.w[1] = INPUT_A_x;
    *OUTPUT_d = d.d;
    d.q = (uint64_t)INPUT_A_x << 32 | (uint32_t)INPUT_B_y;
    *OUTPUT_g = d.f[1] - d.f[0];
    union W w;
    w.l = (long)INPUT_A_x * INPUT_B_y;
    w.s = INPUT_B_y;
    OUTPUT_r[7] = w.l;
    OUTPUT_r[8] = w.c;
    w.c = -1;
    OUTPUT_r[9] = w.s;
    OUTPUT_r[10] = sizeof(union FI) + 100 * sizeof(union DW) + 10000 * sizeof w;
    a.i = INPUT_B_y;
    a.f += 1.0f;
    OUTPUT_r[11] = a.i;
    union FI copy = a;
    copy.h[0] ^= 0x8001;
    OUTPUT_r[12] = copy.u - a.u;
}
"#,
        60,
        1,
    );
}

/// Unions as members of structs, elements of arrays (at secret indices too), initialized
/// (first member, designated members, nested designators), assigned whole, chosen by `?:`,
/// passed to and returned from functions, through pointers, and as compound literals.
#[test]
fn unions_in_structs_arrays_and_functions() {
    check(
        "union_aggregates.c",
        r#"
union V { int i; unsigned char b[4]; short s; };
struct Tagged { int kind; union V v; char tail; };
union Outer { struct { short lo, hi; } parts; union V inner; unsigned u; };

static union V make(int x) { union V v = { .s = (short)x }; return v; }
static int sum_bytes(union V v) { return v.b[0] + v.b[1] + v.b[2] + v.b[3]; }
static void set_high(union V *p, int x) { p->b[3] = x; }

void mpc_main(int INPUT_A_x, int INPUT_B_y, int OUTPUT_r[14])
{
    union V arr[3] = { { INPUT_A_x }, { .s = INPUT_B_y }, [2].b = { 1, 2, 3 } };
    struct Tagged t = { 1, { .b = { 9, 8 } }, 'z' };
    OUTPUT_r[0] = t.v.i + t.kind + t.tail;
    t.v = arr[INPUT_B_y & 1];
    union V u = make(INPUT_A_x);
    OUTPUT_r[1] = sum_bytes(arr[0]);
    OUTPUT_r[2] = arr[1].i;
    OUTPUT_r[3] = arr[2].i;
    OUTPUT_r[4] = t.v.i + t.kind + t.tail;
    OUTPUT_r[5] = u.i;
    union V c = INPUT_A_x > INPUT_B_y ? arr[0] : u;
    OUTPUT_r[6] = c.i;
    arr[INPUT_A_x & 1].b[2] = 0x7f;
    OUTPUT_r[7] = arr[0].i ^ arr[1].i;
    OUTPUT_r[8] = sizeof(struct Tagged) + 100 * sizeof t.v + 10000 * sizeof(union Outer);
    union V *p = &arr[2];
    p->s = -2;
    set_high(p, INPUT_B_y);
    OUTPUT_r[9] = p->i;
    OUTPUT_r[10] = (union V){ .b = { 1, 1 } }.s;
    union Outer o = { .parts = { INPUT_A_x, INPUT_B_y } };
    OUTPUT_r[11] = o.u;
    o.inner.b[1] = 0;
    OUTPUT_r[12] = o.parts.lo + o.parts.hi;
    union V first = { .i = INPUT_A_x, .b[0] = 5 };
    union V last = { .b = { 1, 2, 3, 4 }, .s = INPUT_B_y };
    OUTPUT_r[13] = first.i + last.i;
}
"#,
        60,
        1,
    );
}

/// Bit-fields: gcc's layout (`sizeof`), unsigned and signed fields (negative values
/// sign-extend), writes that truncate (overflow wraps), compound assignments, `++`/`--`
/// before and after, `_Bool` and wide (`unsigned long : 40`, whose arithmetic gcc does in
/// 40 bits) fields, initializers, and bit-fields in unions and in arrays of structs.
#[test]
fn bit_fields_truncate_and_extend_as_gcc_does() {
    check(
        "bit_fields.c",
        r#"
struct BF {
    unsigned a : 3;
    int b : 5;
    unsigned char c;
    int : 0;
    signed char d : 4;
    unsigned long e : 40;
    long f : 33;
    _Bool g : 1;
    unsigned : 2;
    unsigned short h : 9;
};
struct Small { unsigned char lo : 4, hi : 4; };
union Nibbles { struct Small n; unsigned char byte; };
struct Flags { unsigned on : 1; int level : 3; };

static int packed(struct Small s) { return s.hi * 16 + s.lo; }

void mpc_main(int INPUT_A_x, int INPUT_B_y, long OUTPUT_r[24])
{
    struct BF s = { INPUT_A_x, INPUT_B_y, 7, -3, (unsigned long)INPUT_A_x << 20, INPUT_B_y,
                    INPUT_A_x, 511 };
    OUTPUT_r[0] = s.a;
    OUTPUT_r[1] = s.b;
    OUTPUT_r[2] = s.c + 10 * s.d;
    OUTPUT_r[3] = s.e;
    OUTPUT_r[4] = s.f;
    OUTPUT_r[5] = s.g + 2 * s.h;
    s.a += 5;
    s.b -= INPUT_A_x;
    s.d++;
    OUTPUT_r[6] = s.a * 100 + s.b;
    OUTPUT_r[7] = s.d;
    s.e = s.e * 3 + 1;
    OUTPUT_r[8] = s.e - 2;
    OUTPUT_r[9] = (unsigned)s.b << 28;
    OUTPUT_r[10] = sizeof(struct BF) + 100 * sizeof(struct Small) + 1000 * sizeof(struct Flags);
    OUTPUT_r[11] = s.f + 1;
    s.g = INPUT_B_y;
    s.h = INPUT_A_x;
    OUTPUT_r[12] = s.g + 2 * s.h;
    OUTPUT_r[13] = s.a-- + 10 * (s.e++ & 0xff) + 10000 * --s.b;
    OUTPUT_r[14] = (s.a < 0) + 2 * (s.b < 0) + 4 * (s.d < 0) + 8 * (s.e - 1 > 0) + 16 * (-s.a < 0);
    s.b = INPUT_A_x;
    s.d = INPUT_B_y;
    OUTPUT_r[15] = s.b * 1000 + s.d;
    s.b *= 3;
    s.a <<= 1;
    s.d >>= 1;
    s.h |= INPUT_B_y;
    OUTPUT_r[16] = s.a + 10 * s.b + 1000 * s.d + 100000L * s.h;
    union Nibbles u;
    u.byte = INPUT_A_x;
    OUTPUT_r[17] = u.n.lo + 100 * u.n.hi;
    u.n.hi = INPUT_B_y;
    OUTPUT_r[18] = u.byte + 1000 * packed(u.n);
    struct Flags fl[4] = { { 1, -1 }, [2] = { .level = INPUT_A_x } };
    fl[INPUT_B_y & 3].level += 2;
    fl[1].on = INPUT_A_x & 1;
    OUTPUT_r[19] = fl[0].on + 2 * fl[0].level + 100 * fl[1].on + 1000 * fl[2].level + 10000 * fl[3].level;
    struct BF t = s;
    t.e = -1;
    OUTPUT_r[20] = t.e + s.e;
    OUTPUT_r[21] = INPUT_A_x > 0 ? s.b : s.a;
    OUTPUT_r[22] = s.h / 3 - s.b % 4;
    struct Small sm = { .hi = INPUT_A_x };
    OUTPUT_r[23] = packed(sm);
}
"#,
        80,
        1,
    );
}

/// Compound literals: structs and arrays (length from the list), designators, as
/// rvalues, in assignments, as arguments, address taken, indexed, in a loop (a new object
/// each time), and of scalar type.
#[test]
fn compound_literals_are_objects_like_declared_ones() {
    check(
        "compound_literals.c",
        r#"
struct P { int x, y; };
struct Box { struct P lo, hi; int tag[3]; };

static int area(struct Box b) { return (b.hi.x - b.lo.x) * (b.hi.y - b.lo.y) + b.tag[2]; }
static int sum(const int *a, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
static struct P flip(struct P p) { return (struct P){ p.y, p.x }; }

void mpc_main(int INPUT_A_x, int INPUT_B_y, int OUTPUT_r[12])
{
    struct P p = (struct P){ INPUT_A_x, INPUT_B_y };
    OUTPUT_r[0] = p.x - p.y;
    p = (struct P){ .y = INPUT_A_x };
    OUTPUT_r[1] = p.x * 1000 + p.y;
    OUTPUT_r[2] = area((struct Box){ .hi = { INPUT_A_x, INPUT_B_y }, .tag[2] = 5 });
    OUTPUT_r[3] = sum((int[]){ 1, 2, INPUT_A_x, 4 }, 4) + sizeof((int[]){ 1, 2, 3 });
    int *q = (int[3]){ [1] = INPUT_B_y };
    q[2] = 7;
    OUTPUT_r[4] = q[0] + q[1] + q[2];
    struct P *pp = &(struct P){ 3, 4 };
    pp->x += INPUT_A_x;
    OUTPUT_r[5] = pp->x * pp->y;
    OUTPUT_r[6] = (int[]){ 10, 20, 30, 40 }[INPUT_B_y & 3];
    int acc = 0;
    for (int i = 0; i < 3; i++) {
        int *r = (int[2]){ i, INPUT_A_x };
        r[0] += 1;
        acc += r[0] * r[1];
    }
    OUTPUT_r[7] = acc;
    OUTPUT_r[8] = flip((struct P){ INPUT_A_x, 2 }).x + (int){ INPUT_B_y };
    OUTPUT_r[9] = ((struct P){ 1, 2 }).y + (INPUT_A_x > INPUT_B_y ? (struct P){ 5, 6 } : p).x;
    struct Box b = { (struct P){ 1, 2 }, .hi = (struct P){ INPUT_A_x, 3 } };
    OUTPUT_r[10] = b.lo.x + 10 * b.lo.y + 100 * b.hi.x + 1000 * b.hi.y;
    OUTPUT_r[11] = sizeof((struct P){ 0 }) + sizeof((char[]){ "abc" }) * 100 + (char[]){ "xyz" }[1];
}
"#,
        40,
        1,
    );
}

/// A designator followed by positional items: they go on from the subobject after the one
/// designated, at the depth the designator reached (`{.a[1] = 1, 2}` gives `a[2] = 2`,
/// then the members after `a`), with braces elided; arrays of unknown size take their
/// length from the last element any item reaches.
#[test]
fn positional_items_continue_after_a_designator() {
    check(
        "designator_continuation.c",
        r#"
struct A { int a[3]; int b; int c; };
struct P { int x, y; };
struct Q { struct P p[2]; int z; };

void mpc_main(int INPUT_A_x, int INPUT_B_y, int OUTPUT_r[16])
{
    struct A s = { .a[1] = INPUT_A_x, 2, 3, INPUT_B_y };
    OUTPUT_r[0] = s.a[0] + 10 * s.a[1] + 100 * s.a[2] + 1000 * s.b + 10000 * s.c;
    int m[3][2] = { [1][1] = INPUT_A_x, 5, 6, [0] = { 7 }, 8 };
    OUTPUT_r[1] = m[0][0] + 10 * m[0][1] + 100 * m[1][0] + 1000 * m[1][1];
    OUTPUT_r[2] = m[2][0] + 10 * m[2][1];
    struct Q q = { .p[0].y = INPUT_B_y, 4, 5, .z = 9 };
    OUTPUT_r[3] = q.p[0].x + 10 * q.p[0].y + 100 * q.p[1].x + 1000 * q.p[1].y + 10000 * q.z;
    struct P arr[] = { [1].y = INPUT_A_x, 11, 12 };
    OUTPUT_r[4] = sizeof arr / sizeof arr[0];
    OUTPUT_r[5] = arr[1].y + arr[2].x * 100 + arr[2].y * 1000;
    struct P flat[] = { 1, 2, 3 };
    OUTPUT_r[6] = sizeof flat;
    int z[] = { [3] = 1, 2, [1] = INPUT_B_y };
    OUTPUT_r[7] = sizeof z + 100 * z[1] + 1000 * z[4];
    struct A t = { 1, 2, .b = INPUT_A_x, INPUT_B_y, .a[0] = 6 };
    OUTPUT_r[8] = t.a[0] + 10 * t.a[1] + 100 * t.a[2] + 1000 * t.b + 10000 * t.c;
    struct Q w[] = { { .z = 1 }, [2].p[1] = { 3 }, 4 };
    OUTPUT_r[9] = sizeof w / sizeof w[0] + 10 * w[2].p[1].x + 100 * w[2].z;
    struct Q e = { { { 1, 2 }, [1].y = INPUT_A_x }, 3 };
    OUTPUT_r[10] = e.p[0].x + 10 * e.p[0].y + 100 * e.p[1].x + 1000 * e.p[1].y + 10000 * e.z;
    char s2[2][4] = { [0] = "ab", "x" };
    OUTPUT_r[11] = s2[1][0] + s2[1][1] + s2[0][0];
    struct { int k; char name[4]; int v; } named = { .name = "hi", INPUT_B_y };
    OUTPUT_r[12] = named.name[1] + named.v + named.k;
    OUTPUT_r[13] = 0;
    OUTPUT_r[14] = 0;
    OUTPUT_r[15] = 0;
}
"#,
        30,
        0,
    );
}

/// Brace elision mixed with braces and designators at several depths: scalars filling
/// structs inside arrays inside structs, a string after elided scalars, arrays of unknown
/// size whose elements are filled through elided braces, a designator overridden by the
/// positional item after the next one.
#[test]
fn elided_braces_and_designators_mixed() {
    check(
        "elided_braces.c",
        r#"
struct P { int x, y; };
struct S { struct P p[2]; int a[2][2]; char s[4]; };
long mpc_main(int INPUT_A_x, int INPUT_B_y) {
  struct S s1 = { 1, 2, 3, INPUT_A_x, 5, 6, 7, 8, "ab" };
  struct S s2 = { { {INPUT_B_y}, 2 }, { [1] = 3, 4 }, .s[1] = 'q', 'r' };
  struct S s3 = { .a = 1, 2, INPUT_A_x };
  struct S arr[] = { 1, 2, 3, 4, 5, 6, 7, 8, "xy", 9 };
  struct P ps[] = { {1, 2}, 3, 4, [4] = 5 };
  int m[][3] = { 1, 2, 3, INPUT_B_y };
  struct P q = { .y = INPUT_A_x, .x = 2, 7 };
  long r = 0, k = 1;
#define ADD(v) r += (long)(v) * k; k = k * 3 % 1000003;
  for (int i = 0; i < 2; i++) { ADD(s1.p[i].x) ADD(s1.p[i].y) ADD(s2.p[i].x) ADD(s2.p[i].y) ADD(s3.p[i].x) ADD(s3.p[i].y)
    for (int j = 0; j < 2; j++) { ADD(s1.a[i][j]) ADD(s2.a[i][j]) ADD(s3.a[i][j]) } }
  for (int i = 0; i < 4; i++) { ADD(s1.s[i]) ADD(s2.s[i]) ADD(s3.s[i]) ADD(arr[0].s[i]) }
  ADD(sizeof arr) ADD(arr[1].p[0].x) ADD(arr[1].p[0].y) ADD(sizeof ps) ADD(ps[1].x) ADD(ps[1].y) ADD(ps[4].x)
  ADD(sizeof m) ADD(m[1][0]) ADD(m[1][1]) ADD(q.x) ADD(q.y)
  return r;
}
"#,
        20,
        0,
    );
}

/// Bit-fields as loop counters (the loops unroll on their truncated values), in chained
/// assignments, as arguments, in `switch`, and as operands of `?:` and comparisons whose
/// other operand is negative (a field wider than `int` converts it to its own width).
#[test]
fn bit_fields_as_counters_and_in_conditionals() {
    check(
        "bit_field_counters.c",
        r#"
struct S { unsigned a : 3; int b : 4; unsigned long e : 40; };
static int f(int v) { return v * 2; }
long mpc_main(int INPUT_A_x, int INPUT_B_y) {
  struct S s = { 0 };
  long n = 0;
  for (s.a = 0; s.a < 7; s.a++) n += s.a;
  for (s.b = -8; s.b < 7; s.b += 3) n += s.b * 10;
  s.b = s.a = INPUT_A_x;
  n += s.b * 100 + s.a * 1000 + f(s.b);
  switch (s.a) { case 5: n += 7; break; case 6: n -= 3; break; default: n ^= 1; }
  n += INPUT_B_y > 0 ? s.e : -1;
  n += (INPUT_B_y & 1 ? s.e : 0) == 0;
  n += s.e > -1;
  return n;
}
"#,
        20,
        0,
    );
}
