/* An LWE sample: b = <a, s> + e mod q, the inner product of a public vector a with a secret
 * vector s plus a small error e, the core step of learning-with-errors encryption.
 *
 *   pgc local examples/lwe_dot.c -D LWE_N=4 --a secret=[1,0,4294967295,2] --b vector=[10,20,30,40] --b error=3
 *
 * (10 - 30 + 80 + 3 = 63). Party A holds the secret s (LWE_N elements, 16 by default, e.g.
 * 256 or 1024 for real parameters); party B holds the vector a (public in LWE, but here B's
 * input, e.g. drawn by B) and the error e, so neither learns the other's part; both learn
 * OUTPUT_sample = b. The modulus is q = 2^LWE_LOG_Q (32 by default, so uint32_t arithmetic
 * wraps exactly mod q; a smaller LWE_LOG_Q such as 16 makes every term narrower): elements
 * are taken mod q.
 *
 * Each term a[i] * s[i] is one call of lwe_term, and the loop is a `+` reduction, so pgc
 * compiles the terms independently of each other and sums them in a balanced tree.
 */
#include <stdint.h>

#ifndef LWE_N
#define LWE_N 16
#endif
#ifndef LWE_LOG_Q
#define LWE_LOG_Q 32
#endif
#if LWE_N < 1
#error "LWE_N must be at least 1"
#endif
#if LWE_LOG_Q < 1 || LWE_LOG_Q > 32
#error "LWE_LOG_Q must be between 1 and 32"
#endif

/* q - 1: reducing mod q = 2^LWE_LOG_Q keeps the low LWE_LOG_Q bits. */
#define LWE_Q_MASK (0xffffffffu >> (32 - LWE_LOG_Q))

static uint32_t lwe_term(uint32_t a, uint32_t s)
{
    return (a * s) & LWE_Q_MASK;
}

void mpc_main(const uint32_t INPUT_A_secret[LWE_N], const uint32_t INPUT_B_vector[LWE_N],
              uint32_t INPUT_B_error, uint32_t *OUTPUT_sample)
{
    uint32_t sum = 0;
    for (int i = 0; i < LWE_N; i++)
        sum += lwe_term(INPUT_B_vector[i], INPUT_A_secret[i]);
    *OUTPUT_sample = (sum + INPUT_B_error) & LWE_Q_MASK;
}
