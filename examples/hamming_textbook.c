/* Hamming distance as a first attempt writes it: XOR the words, then count the differing bits
 * one by one with a shift and a mask. (examples/hamming.c counts them with the SWAR population
 * count instead.)
 *
 *   pgc local examples/hamming_textbook.c -D HAMMING_WORDS=2 --a bits=[0xffffffff,0] --b bits=[0x0000ffff,1]
 *
 * (distance 17). Party A and party B each hold HAMMING_WORDS uint32_t words (16 by default,
 * 512 bits); both learn OUTPUT_distance. The count is a chain of 1-bit additions into a
 * 32-bit counter; pgc's value-range analysis keeps the counter only as wide as the count so
 * far can be (see docs/c-subset.md, "Value ranges").
 */
#include <stdint.h>

#ifndef HAMMING_WORDS
#define HAMMING_WORDS 16
#endif

void mpc_main(uint32_t INPUT_A_bits[HAMMING_WORDS], uint32_t INPUT_B_bits[HAMMING_WORDS],
              uint32_t *OUTPUT_distance)
{
    uint32_t distance = 0;
    for (int w = 0; w < HAMMING_WORDS; w++) {
        uint32_t differ = INPUT_A_bits[w] ^ INPUT_B_bits[w];
        for (int k = 0; k < 32; k++)
            distance += (differ >> k) & 1;
    }
    *OUTPUT_distance = distance;
}
