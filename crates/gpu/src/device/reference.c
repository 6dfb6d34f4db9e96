/* The CPU reference of the GPU kernels: the same per-gate code (halfgates.h) driven level by
 * level with the same indexing as kernels.cu (gate i of a level is record off[L] + i), so
 * that the schedule and the per-gate logic are tested on every machine, and on a GPU the
 * kernels are tested against this. Also the AES tables and key schedule both sides use. */

#include "halfgates.h"

/* The AES S-box, computed: the inverse in GF(2^8) (x^254) followed by the affine map. */
static uint8_t gf_mul(uint8_t a, uint8_t b) {
    uint8_t p = 0;
    for (int i = 0; i < 8; i++) {
        if (b & 1) p ^= a;
        uint8_t hi = a & 0x80;
        a <<= 1;
        if (hi) a ^= 0x1b;
        b >>= 1;
    }
    return p;
}

static uint8_t sbox(uint8_t v) {
    uint8_t inv = 1, base = v;
    /* v^254 = v^(2+4+8+16+32+64+128) */
    for (int bit = 1; bit < 8; bit++) {
        base = gf_mul(base, base);
        inv = gf_mul(inv, base);
    }
    if (v == 0) inv = 0;
    uint8_t s = inv;
    uint8_t r = inv;
    for (int i = 0; i < 4; i++) {
        r = (uint8_t)((r << 1) | (r >> 7));
        s ^= r;
    }
    return s ^ 0x63;
}

/* te[256 r + v] = the MixColumns column of S(v) placed in row r, as a little-endian word:
 * row 0 contributes (2S, S, S, 3S) to rows 0..3; row r is that rotated by r bytes. */
void pgc_aes_tables(uint32_t *te) {
    for (int v = 0; v < 256; v++) {
        uint8_t s = sbox((uint8_t)v);
        uint32_t w = (uint32_t)gf_mul(s, 2) | (uint32_t)s << 8 | (uint32_t)s << 16 |
                     (uint32_t)gf_mul(s, 3) << 24;
        for (int r = 0; r < 4; r++) {
            te[256 * r + v] = r == 0 ? w : (w << (8 * r)) | (w >> (32 - 8 * r));
        }
    }
}

/* The AES-128 key schedule: 44 words, little-endian per column like the blocks. */
void pgc_aes_key_schedule(const uint8_t key[16], uint32_t rk[44]) {
    uint8_t w[176];
    for (int i = 0; i < 16; i++) w[i] = key[i];
    uint8_t rcon = 1;
    for (int i = 16; i < 176; i += 4) {
        uint8_t t[4] = {w[i - 4], w[i - 3], w[i - 2], w[i - 1]};
        if (i % 16 == 0) {
            uint8_t first = t[0];
            t[0] = sbox(t[1]) ^ rcon;
            t[1] = sbox(t[2]);
            t[2] = sbox(t[3]);
            t[3] = sbox(first);
            rcon = gf_mul(rcon, 2);
        }
        for (int k = 0; k < 4; k++) w[i + k] = w[i - 16 + k] ^ t[k];
    }
    for (int i = 0; i < 44; i++) {
        rk[i] = (uint32_t)w[4 * i] | (uint32_t)w[4 * i + 1] << 8 | (uint32_t)w[4 * i + 2] << 16 |
                (uint32_t)w[4 * i + 3] << 24;
    }
}

void pgc_ref_aes(const uint32_t *te, const uint32_t *rk, const pgc_block *in, pgc_block *out) {
    *out = pgc_aes(te, rk, *in);
}

void pgc_ref_tmmo(const uint32_t *te, const uint32_t *rk, const pgc_block *in, uint64_t tweak,
                  pgc_block *out) {
    *out = pgc_tmmo(te, rk, *in, tweak);
}

void pgc_ref_garble_levels(const uint32_t *te, const uint32_t *rk, const uint32_t *gates,
                           const uint32_t *level_offsets, uint32_t levels, pgc_block *labels,
                           pgc_block *tables, const pgc_block *delta, uint64_t and_base) {
    for (uint32_t level = 0; level < levels; level++) {
        const uint32_t *g = gates + 4 * (uint64_t)level_offsets[level];
        uint32_t n = level_offsets[level + 1] - level_offsets[level];
        for (uint32_t i = 0; i < n; i++) {
            const uint32_t *r = g + 4 * (uint64_t)i;
            pgc_garble_gate(te, rk, r[0], r[1], r[2], r[3], labels, tables, *delta, and_base);
        }
    }
}

void pgc_ref_evaluate_levels(const uint32_t *te, const uint32_t *rk, const uint32_t *gates,
                             const uint32_t *level_offsets, uint32_t levels, pgc_block *labels,
                             const pgc_block *tables, uint64_t and_base) {
    for (uint32_t level = 0; level < levels; level++) {
        const uint32_t *g = gates + 4 * (uint64_t)level_offsets[level];
        uint32_t n = level_offsets[level + 1] - level_offsets[level];
        for (uint32_t i = 0; i < n; i++) {
            const uint32_t *r = g + 4 * (uint64_t)i;
            pgc_evaluate_gate(te, rk, r[0], r[1], r[2], r[3], labels, tables, and_base);
        }
    }
}

void pgc_ref_garble_independent(const uint32_t *te, const uint32_t *rk, const uint32_t *gates,
                                uint64_t count, const pgc_block *labels, pgc_block *tables,
                                pgc_block *corrections, const pgc_block *delta,
                                uint64_t and_base) {
    for (uint64_t i = 0; i < count; i++) {
        const uint32_t *r = gates + 4 * i;
        pgc_garble_gate_independent(te, rk, r[0], r[1], r[2], r[3], labels, tables,
                                    corrections, i, *delta, and_base);
    }
}
