/* MExp, the seed paper's modular-exponentiation benchmark: MEXP_K = 32 independent modular
 * exponentiations base^exponent mod MEXP_MOD in 32-bit arithmetic, each 32 square-and-multiply
 * iterations (one per exponent bit). As in the seed's Table 2 each party inputs 1K bits.
 *
 *   pgc local examples/mexp.c -D MEXP_K=2 --a base=[3,10] --b exponent=[5,65520]
 *
 * Party A holds the bases (e.g. messages to be blindly signed), party B the exponents (e.g. its
 * private key); both learn OUTPUT_power[k] = base[k]^exponent[k] mod MEXP_MOD. The modulus is
 * public; its default, 65521 (the largest prime below 2^16), keeps every product below 2^32, so
 * all arithmetic stays in uint32_t and the result is exact.
 */
#include <stdint.h>

#ifndef MEXP_K
#define MEXP_K 32
#endif
#ifndef MEXP_MOD
#define MEXP_MOD 65521u
#endif

static uint32_t mulmod(uint32_t x, uint32_t y)
{
    return (x * y) % MEXP_MOD;
}

static uint32_t modexp(uint32_t base, uint32_t exponent)
{
    uint32_t result = 1;
    uint32_t square = base % MEXP_MOD;
    for (int bit = 0; bit < 32; bit++) {
        if (exponent & 1u)
            result = mulmod(result, square);
        square = mulmod(square, square);
        exponent >>= 1;
    }
    return result;
}

void mpc_main(uint32_t INPUT_A_base[MEXP_K], uint32_t INPUT_B_exponent[MEXP_K],
              uint32_t OUTPUT_power[MEXP_K])
{
    for (int k = 0; k < MEXP_K; k++)
        OUTPUT_power[k] = modexp(INPUT_A_base[k], INPUT_B_exponent[k]);
}
