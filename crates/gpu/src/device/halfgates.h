/* Per-gate half-gates garbling and evaluation, shared by the CUDA kernels (compiled at run
 * time by NVRTC, see kernels.cu) and the CPU reference (compiled by the C compiler through
 * build.rs, see reference.c), so that CI tests on every machine the very code the GPU runs.
 *
 * Conventions are those of pgc_garble (crates/garble/src/lib.rs): Zahur-Rosulek-Evans half
 * gates (EUROCRYPT 2015), the j-th AND gate of the circuit hashes with tweaks 2j (garbler
 * half) and 2j+1 (evaluator half), the hash is TMMO of Guo-Katz-Wang-Yu (S&P 2020, §7.4),
 * H(x, i) = pi(pi(x) ^ i) ^ pi(x), pi = AES-128 under the run's public key.
 *
 * A block is the Rust `Block(u128)`: 16 little-endian bytes, held as four little-endian
 * 32-bit words x (bytes 0-3, holding the point-and-permute bit as its lsb), y, z, w. AES
 * works on those 16 bytes in order (column c = bytes 4c..4c+3 = word c), with "little-endian"
 * T-tables: te[r][v] is the MixColumns column of S(v) in row r, packed as a word whose byte k
 * is row k; te[r] = rotl(te[0], 8r). */

#ifndef PGC_HALFGATES_H
#define PGC_HALFGATES_H

#if defined(__CUDACC__)
#define PGC_FN static __device__ __forceinline__
typedef uint4 pgc_block;
typedef unsigned int pgc_u32;
typedef unsigned long long pgc_u64;
#else
#include <stdint.h>
#define PGC_FN static inline
typedef uint32_t pgc_u32;
typedef uint64_t pgc_u64;
typedef struct {
    pgc_u32 x, y, z, w;
} pgc_block;
#endif

/* Gate records as the scheduler packs them (crates/gpu/src/schedule.rs): a, b, out and
 * `info` = op | (local AND index << 3), the AND index counted from the window's first AND. */
#define PGC_OP_XOR 0u
#define PGC_OP_AND 1u
#define PGC_OP_INV 2u
#define PGC_OP_COPY 3u
#define PGC_OP_CONST 4u

PGC_FN pgc_block pgc_xor(pgc_block a, pgc_block b) {
    pgc_block r;
    r.x = a.x ^ b.x;
    r.y = a.y ^ b.y;
    r.z = a.z ^ b.z;
    r.w = a.w ^ b.w;
    return r;
}

/* `a` if bit, else zero, without a branch. */
PGC_FN pgc_block pgc_select(pgc_block a, pgc_u32 bit) {
    pgc_u32 m = 0u - (bit & 1u);
    pgc_block r;
    r.x = a.x & m;
    r.y = a.y & m;
    r.z = a.z & m;
    r.w = a.w & m;
    return r;
}

PGC_FN pgc_block pgc_zero(void) {
    pgc_block r;
    r.x = 0u;
    r.y = 0u;
    r.z = 0u;
    r.w = 0u;
    return r;
}

#define PGC_B0(v) ((v) & 0xffu)
#define PGC_B1(v) (((v) >> 8) & 0xffu)
#define PGC_B2(v) (((v) >> 16) & 0xffu)
#define PGC_B3(v) ((v) >> 24)

/* The T-table te[0] as the AES code reads it. On the GPU each lane of a warp reads its own
 * copy of te[0]: the kernels stage 32 copies interleaved word by word (entry v of copy l at
 * 32 v + l) and pass each thread `table + lane`, so lane l only ever reads bank l and a
 * warp's 32 lookups never conflict (Tezcan, "Optimization of Advanced Encryption Standard
 * on Graphics Processing Units", IEEE Access 9, 2021, §III: 4 tables with conflicts ran at
 * less than half the speed). te[1..3] are rotations of te[0], so one table is enough. The
 * CPU reference reads the plain table (stride 1). */
#if defined(__CUDACC__)
#define PGC_TE_STRIDE 32u
#else
#define PGC_TE_STRIDE 1u
#endif
#define PGC_TE0(t, v) ((t)[(v) * PGC_TE_STRIDE])
#define PGC_ROTL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))

/* One output column of an inner round: te[0][b0(c0)] ^ te[1][b1(c1)] ^ te[2][b2(c2)] ^
 * te[3][b3(c3)], with te[r] = rotl(te[0], 8r). */
#define PGC_COLUMN(t, c0, c1, c2, c3)                                                    \
    (PGC_TE0(t, PGC_B0(c0)) ^ PGC_ROTL(PGC_TE0(t, PGC_B1(c1)), 8) ^                      \
     PGC_ROTL(PGC_TE0(t, PGC_B2(c2)), 16) ^ PGC_ROTL(PGC_TE0(t, PGC_B3(c3)), 24))

/* AES-128 of one block: te is the table te[0] as above (256 words, strided on the GPU), rk
 * the 44 round-key words (little-endian per column, as the block). */
PGC_FN pgc_block pgc_aes(const pgc_u32 *te, const pgc_u32 *rk, pgc_block in) {
    pgc_u32 s0 = in.x ^ rk[0], s1 = in.y ^ rk[1], s2 = in.z ^ rk[2], s3 = in.w ^ rk[3];
    for (int round = 1; round < 10; round++) {
        const pgc_u32 *k = rk + 4 * round;
        /* ShiftRows: row r of column c comes from column c + r. */
        pgc_u32 n0 = PGC_COLUMN(te, s0, s1, s2, s3) ^ k[0];
        pgc_u32 n1 = PGC_COLUMN(te, s1, s2, s3, s0) ^ k[1];
        pgc_u32 n2 = PGC_COLUMN(te, s2, s3, s0, s1) ^ k[2];
        pgc_u32 n3 = PGC_COLUMN(te, s3, s0, s1, s2) ^ k[3];
        s0 = n0;
        s1 = n1;
        s2 = n2;
        s3 = n3;
    }
    /* Last round: SubBytes and ShiftRows only. Byte 1 of te[0][v] is S(v). */
#define PGC_S(v) ((PGC_TE0(te, v) >> 8) & 0xffu)
    pgc_block out;
    out.x = (PGC_S(PGC_B0(s0)) | PGC_S(PGC_B1(s1)) << 8 | PGC_S(PGC_B2(s2)) << 16 |
             PGC_S(PGC_B3(s3)) << 24) ^ rk[40];
    out.y = (PGC_S(PGC_B0(s1)) | PGC_S(PGC_B1(s2)) << 8 | PGC_S(PGC_B2(s3)) << 16 |
             PGC_S(PGC_B3(s0)) << 24) ^ rk[41];
    out.z = (PGC_S(PGC_B0(s2)) | PGC_S(PGC_B1(s3)) << 8 | PGC_S(PGC_B2(s0)) << 16 |
             PGC_S(PGC_B3(s1)) << 24) ^ rk[42];
    out.w = (PGC_S(PGC_B0(s3)) | PGC_S(PGC_B1(s0)) << 8 | PGC_S(PGC_B2(s1)) << 16 |
             PGC_S(PGC_B3(s2)) << 24) ^ rk[43];
#undef PGC_S
    return out;
}

/* TMMO: H(x, i) = pi(pi(x) ^ i) ^ pi(x), the 64-bit tweak in the low half of the block. */
PGC_FN pgc_block pgc_tmmo(const pgc_u32 *te, const pgc_u32 *rk, pgc_block x, pgc_u64 tweak) {
    pgc_block first = pgc_aes(te, rk, x);
    pgc_block t = first;
    t.x ^= (pgc_u32)tweak;
    t.y ^= (pgc_u32)(tweak >> 32);
    return pgc_xor(pgc_aes(te, rk, t), first);
}

/* Garbling the j-th AND of the circuit with input zero-labels a0, b0 takes four hashes,
 * independent of each other: part 0 H(A0, 2j), 1 H(A1, 2j), 2 H(B0, 2j+1), 3 H(B1, 2j+1).
 * The kernels compute the four parts on four threads and gather them (kernels.cu); the CPU
 * reference computes them in turn. */
#define PGC_GARBLE_PARTS 4u

PGC_FN pgc_block pgc_garble_and_hash(const pgc_u32 *te, const pgc_u32 *rk, pgc_block a0,
                                     pgc_block b0, pgc_block delta, pgc_u64 j, pgc_u32 part) {
    pgc_block x = part < 2u ? a0 : b0;
    if (part & 1u) x = pgc_xor(x, delta);
    return pgc_tmmo(te, rk, x, 2 * j + (part >> 1));
}

/* From the four hashes: writes the AND's two rows [T_G, T_E] to `rows` and returns its
 * output zero-label. */
PGC_FN pgc_block pgc_garble_and_finish(pgc_block h0, pgc_block h1, pgc_block h2, pgc_block h3,
                                       pgc_block a0, pgc_block b0, pgc_block delta,
                                       pgc_block *rows) {
    pgc_u32 pa = a0.x & 1u, pb = b0.x & 1u;
    pgc_block tg = pgc_xor(pgc_xor(h0, h1), pgc_select(delta, pb));
    rows[0] = tg;
    rows[1] = pgc_xor(pgc_xor(h2, h3), a0);
    /* C0 = H(A^{pa}) ^ pa*pb*Delta ^ H(B^{pb}) = (H(A0) ^ pa*T_G) ^ H(B^{pb}). */
    pgc_block hb = pgc_xor(pgc_select(h3, pb), pgc_select(h2, pb ^ 1u));
    return pgc_xor(pgc_xor(h0, pgc_select(tg, pa)), hb);
}

/* The whole AND on one thread. */
PGC_FN pgc_block pgc_garble_and(const pgc_u32 *te, const pgc_u32 *rk, pgc_block a0,
                                pgc_block b0, pgc_block delta, pgc_u64 j, pgc_block *rows) {
    pgc_block h0 = pgc_garble_and_hash(te, rk, a0, b0, delta, j, 0u);
    pgc_block h1 = pgc_garble_and_hash(te, rk, a0, b0, delta, j, 1u);
    pgc_block h2 = pgc_garble_and_hash(te, rk, a0, b0, delta, j, 2u);
    pgc_block h3 = pgc_garble_and_hash(te, rk, a0, b0, delta, j, 3u);
    return pgc_garble_and_finish(h0, h1, h2, h3, a0, b0, delta, rows);
}

/* Evaluating takes two: part 0 H(A, 2j), part 1 H(B, 2j+1). */
#define PGC_EVALUATE_PARTS 2u

PGC_FN pgc_block pgc_evaluate_and_hash(const pgc_u32 *te, const pgc_u32 *rk, pgc_block la,
                                       pgc_block lb, pgc_u64 j, pgc_u32 part) {
    return pgc_tmmo(te, rk, part ? lb : la, 2 * j + part);
}

/* From the two hashes and the AND's rows: its output label. */
PGC_FN pgc_block pgc_evaluate_and_finish(pgc_block ha, pgc_block hb, pgc_block la,
                                         pgc_block lb, const pgc_block *rows) {
    pgc_block c = pgc_xor(ha, pgc_select(rows[0], la.x & 1u));
    c = pgc_xor(c, hb);
    return pgc_xor(c, pgc_select(pgc_xor(rows[1], la), lb.x & 1u));
}

/* One gate of the garbler: `labels` are the zero-labels, `tables` the window's tables (2
 * blocks per AND at its local AND index), `and_base` the circuit-wide index of the window's
 * first AND. */
PGC_FN void pgc_garble_gate(const pgc_u32 *te, const pgc_u32 *rk, pgc_u32 a, pgc_u32 b,
                            pgc_u32 out, pgc_u32 info, pgc_block *labels, pgc_block *tables,
                            pgc_block delta, pgc_u64 and_base) {
    pgc_u32 op = info & 7u;
    if (op == PGC_OP_AND) {
        pgc_u32 local = info >> 3;
        labels[out] = pgc_garble_and(te, rk, labels[a], labels[b], delta, and_base + local,
                                     tables + 2 * (pgc_u64)local);
    } else if (op == PGC_OP_XOR) {
        labels[out] = pgc_xor(labels[a], labels[b]);
    } else if (op == PGC_OP_INV) {
        labels[out] = pgc_xor(labels[a], delta);
    } else if (op == PGC_OP_COPY) {
        labels[out] = labels[a];
    } else {
        /* Constant a (0 or 1): zero-label a*Delta; the evaluator holds the block 0. */
        labels[out] = pgc_select(delta, a);
    }
}

/* One gate of the evaluator: `labels` are the active labels. */
PGC_FN void pgc_evaluate_gate(const pgc_u32 *te, const pgc_u32 *rk, pgc_u32 a, pgc_u32 b,
                              pgc_u32 out, pgc_u32 info, pgc_block *labels,
                              const pgc_block *tables, pgc_u64 and_base) {
    pgc_u32 op = info & 7u;
    if (op == PGC_OP_AND) {
        pgc_u32 local = info >> 3;
        pgc_u64 j = and_base + local;
        pgc_block la = labels[a], lb = labels[b];
        pgc_block ha = pgc_evaluate_and_hash(te, rk, la, lb, j, 0u);
        pgc_block hb = pgc_evaluate_and_hash(te, rk, la, lb, j, 1u);
        labels[out] = pgc_evaluate_and_finish(ha, hb, la, lb, tables + 2 * (pgc_u64)local);
    } else if (op == PGC_OP_XOR) {
        labels[out] = pgc_xor(labels[a], labels[b]);
    } else if (op == PGC_OP_INV || op == PGC_OP_COPY) {
        labels[out] = labels[a];
    } else {
        labels[out] = pgc_zero();
    }
}

/* The seed's scheme (Husted et al., ACSAC 2013, §7.2-7.3), for the measured comparison
 * only (`pgc bench gpu`): every wire's zero-label is drawn up front, so every gate garbles
 * at once, independent of its level; each gate then also sends a correction block that
 * moves its computed output label onto the drawn one (XOR: V = A0 ^ B0 ^ C0; AND: the
 * half-gates output ^ C0). `corrections` has one block per gate, at its index `index`. */
PGC_FN void pgc_garble_gate_independent(const pgc_u32 *te, const pgc_u32 *rk, pgc_u32 a,
                                        pgc_u32 b, pgc_u32 out, pgc_u32 info,
                                        const pgc_block *labels, pgc_block *tables,
                                        pgc_block *corrections, pgc_u64 index,
                                        pgc_block delta, pgc_u64 and_base) {
    pgc_u32 op = info & 7u;
    pgc_block c0 = labels[out];
    pgc_block computed;
    if (op == PGC_OP_AND) {
        pgc_u32 local = info >> 3;
        computed = pgc_garble_and(te, rk, labels[a], labels[b], delta, and_base + local,
                                  tables + 2 * (pgc_u64)local);
    } else if (op == PGC_OP_XOR) {
        computed = pgc_xor(labels[a], labels[b]);
    } else if (op == PGC_OP_INV) {
        computed = pgc_xor(labels[a], delta);
    } else if (op == PGC_OP_COPY) {
        computed = labels[a];
    } else {
        computed = pgc_select(delta, a);
    }
    corrections[index] = pgc_xor(computed, c0);
}

#endif
