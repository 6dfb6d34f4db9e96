/* RSA-style modular exponentiation at toy key sizes: base^exponent mod modulus on numbers of
 * RSA_BITS bits (16 by default; 32, 64 and 128 are the benchmark sizes), the textbook
 * square-and-multiply circuit.
 *
 *   pgc local examples/modexp.c --a base=[42] --a modulus=[65521] --b exponent=[65519]
 *
 * (42^(p-2) mod p is the inverse of 42 mod the prime p = 65521: 63961). Larger keys, e.g.
 * `pgc compile --stats examples/modexp.c -D RSA_BITS=64`, take numbers as uint32_t limbs,
 * least significant first: `--a base=[low,high]`.
 *
 * Party A holds the message (base) and the public modulus, party B the private exponent (an
 * RSA signing key, say); both learn OUTPUT_result = base^exponent mod modulus. Every number
 * is LIMBS = RSA_BITS/32 (rounded up) uint32_t limbs; bits at and above RSA_BITS are ignored
 * (for 16 bits, the top half of the one limb). The result is exact for every base and
 * exponent when the modulus is at least 1 (RSA has base < modulus, which is not needed here);
 * a zero modulus gives a meaningless result.
 *
 * The exponent's bits are secret, so every one of the RSA_BITS rounds squares AND multiplies
 * (2 * RSA_BITS calls of mulmod) and keeps the product or the square by an oblivious select.
 * mulmod is a schoolbook multiplication with 64-bit partial products followed by shift-and-
 * subtract long division, one product bit per reduce_step call: calls of the same shape that
 * pgc can compile once and repeat.
 */
#include <stdint.h>

#ifndef RSA_BITS
#define RSA_BITS 16
#endif
#if RSA_BITS < 2 || RSA_BITS > 4096
#error "RSA_BITS must be between 2 and 4096"
#endif

#define LIMBS ((RSA_BITS + 31) / 32)
/* How many bits of the top limb belong to the number (32 when RSA_BITS is a multiple of 32). */
#define TOP_BITS (RSA_BITS - 32 * (LIMBS - 1))
#define TOP_MASK (0xffffffffu >> (32 - TOP_BITS))

static void copy_number(const uint32_t from[LIMBS], uint32_t to[LIMBS])
{
    for (int k = 0; k < LIMBS; k++)
        to[k] = from[k];
}

/* One step of long division by m: next = (2 * rem + bit) mod m, given rem < m. Doubling may
 * carry out of RSA_BITS bits (`carry`); then the value is certainly at least m. */
static void reduce_step(const uint32_t rem[LIMBS], uint32_t bit, const uint32_t m[LIMBS],
                        uint32_t next[LIMBS])
{
    uint32_t carry = rem[LIMBS - 1] >> (TOP_BITS - 1);
    uint32_t doubled[LIMBS];
    for (int k = LIMBS - 1; k > 0; k--)
        doubled[k] = (rem[k] << 1) | (rem[k - 1] >> 31);
    doubled[0] = (rem[0] << 1) | bit;
    doubled[LIMBS - 1] &= TOP_MASK;

    /* doubled - m limb by limb, and whether it borrowed (doubled < m, ignoring the carry).
     * The borrow from the limb below enters as the lowest bit of one 33-bit subtraction,
     * 2 * doubled[k] - (2 * m[k] + borrow): a single subtraction per limb instead of two. */
    uint32_t difference[LIMBS];
    uint32_t borrow = 0;
    for (int k = 0; k < LIMBS; k++) {
        uint64_t t = ((uint64_t)doubled[k] << 1) - (((uint64_t)m[k] << 1) | borrow);
        difference[k] = (uint32_t)(t >> 1);
        borrow = (uint32_t)(t >> 33) & 1u;
    }
    /* All ones when the subtraction is kept: a select without a secret branch. The kept
     * difference is below m, so it fits in RSA_BITS bits even after a carry. */
    uint32_t keep = 0u - (carry | (borrow ^ 1u));
    for (int k = 0; k < LIMBS; k++)
        next[k] = doubled[k] ^ ((doubled[k] ^ difference[k]) & keep);
    next[LIMBS - 1] &= TOP_MASK;
}

/* out = a * b mod m, for a, b < 2^RSA_BITS and m >= 1 (out must not be a, b or m). */
static void mulmod(const uint32_t a[LIMBS], const uint32_t b[LIMBS], const uint32_t m[LIMBS],
                   uint32_t out[LIMBS])
{
    uint32_t product[2 * LIMBS] = {0};
    for (int i = 0; i < LIMBS; i++) {
        uint32_t carry = 0;
        for (int j = 0; j < LIMBS; j++) {
            uint64_t t = (uint64_t)a[i] * b[j] + product[i + j] + carry;
            product[i + j] = (uint32_t)t;
            carry = (uint32_t)(t >> 32);
        }
        product[i + LIMBS] = carry;
    }
    /* The product has at most 2 * RSA_BITS bits: feed them to the division from the top. */
    uint32_t rem[LIMBS] = {0};
    for (int bit = 2 * RSA_BITS - 1; bit >= 0; bit--) {
        uint32_t next[LIMBS];
        reduce_step(rem, (product[bit / 32] >> (bit % 32)) & 1u, m, next);
        copy_number(next, rem);
    }
    copy_number(rem, out);
}

void mpc_main(const uint32_t INPUT_A_base[LIMBS], const uint32_t INPUT_A_modulus[LIMBS],
              const uint32_t INPUT_B_exponent[LIMBS], uint32_t OUTPUT_result[LIMBS])
{
    uint32_t base[LIMBS], modulus[LIMBS];
    copy_number(INPUT_A_base, base);
    copy_number(INPUT_A_modulus, modulus);
    base[LIMBS - 1] &= TOP_MASK;
    modulus[LIMBS - 1] &= TOP_MASK;

    /* Left to right over the exponent's bits: result = result^2, times base where the bit is
     * set. The first squaring reduces the starting 1 mod m. */
    uint32_t result[LIMBS] = {1};
    for (int bit = RSA_BITS - 1; bit >= 0; bit--) {
        uint32_t operand[LIMBS], squared[LIMBS], multiplied[LIMBS];
        copy_number(result, operand); /* mulmod's operands never alias each other */
        mulmod(result, operand, modulus, squared);
        mulmod(squared, base, modulus, multiplied);
        uint32_t take = 0u - ((INPUT_B_exponent[bit / 32] >> (bit % 32)) & 1u);
        for (int k = 0; k < LIMBS; k++)
            result[k] = squared[k] ^ ((squared[k] ^ multiplied[k]) & take);
    }
    copy_number(result, OUTPUT_result);
}
