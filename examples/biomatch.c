/* BioMatch, the seed paper's biometric-matching benchmark: the minimum squared Euclidean
 * distance between one sample and a database of templates,
 *     min over j of  sum over i < D of (sample[i] - db[j][i])^2,
 * with the seed's parameters n = 512 templates of degree d = 4 and 64-bit integers.
 *
 *   pgc local examples/biomatch.c -D BIOMATCH_N=2 --a db=[[1,2,3,4],[9,9,9,9]] --b sample=[1,2,3,5]
 *
 * Party A holds the database (as in the seed's Table 2: 131K input bits for A, 256 for B),
 * party B the sample; both learn OUTPUT_min_dist. Arithmetic wraps modulo 2^64 like gcc
 * -fwrapv, so keep values small enough for the squares to fit if the distance matters.
 */
#include <stdint.h>

#ifndef BIOMATCH_N
#define BIOMATCH_N 512
#endif
#ifndef BIOMATCH_D
#define BIOMATCH_D 4
#endif

void mpc_main(int64_t INPUT_A_db[BIOMATCH_N][BIOMATCH_D], int64_t INPUT_B_sample[BIOMATCH_D],
              int64_t *OUTPUT_min_dist)
{
    int64_t best = INT64_MAX;
    for (int j = 0; j < BIOMATCH_N; j++) {
        int64_t dist = 0;
        for (int i = 0; i < BIOMATCH_D; i++) {
            int64_t diff = INPUT_B_sample[i] - INPUT_A_db[j][i];
            dist += diff * diff;
        }
        if (dist < best)
            best = dist;
    }
    *OUTPUT_min_dist = best;
}
