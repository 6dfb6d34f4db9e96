#define HAMMING_WORDS 4
/* Hamming distance between two private bit strings of HAMMING_WORDS * 32 bits (512 bits by
 * default), e.g. iris codes: the number of positions in which they differ.
 *
 *   pgc local examples/hamming.c -D HAMMING_WORDS=2 --a bits=[0xffffffff,0] --b bits=[0x0000ffff,1]
 *
 * (distance 17). Party A and party B each hold HAMMING_WORDS uint32_t words; both learn
 * OUTPUT_distance. The bit count uses the SWAR population count (pairs, nibbles, bytes), which
 * needs far fewer AND gates than adding the bits one by one.
 */
#include <stdint.h>

#ifndef HAMMING_WORDS
#define HAMMING_WORDS 16
#endif

static uint32_t popcount32(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    x = (x + (x >> 4)) & 0x0f0f0f0fu;
    x = x + (x >> 8);
    x = x + (x >> 16);
    return x & 0x3fu;
}

void mpc_main(uint32_t INPUT_A_bits[HAMMING_WORDS], uint32_t INPUT_B_bits[HAMMING_WORDS],
              uint32_t *OUTPUT_distance)
{
    uint32_t distance = 0;
    for (int w = 0; w < HAMMING_WORDS; w++)
        distance += popcount32(INPUT_A_bits[w] ^ INPUT_B_bits[w]);
    *OUTPUT_distance = distance;
}
