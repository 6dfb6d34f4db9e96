/* Median of the union of two private sorted lists. Party A and party B each hold MEDIAN_N
 * ints sorted in ascending order (16 by default); both learn OUTPUT_median, the lower median
 * of all 2 * MEDIAN_N values (the MEDIAN_N-th smallest), and nothing else.
 *
 *   pgc local examples/median.c -D MEDIAN_N=4 --a list=[1,5,9,13] --b list=[2,3,20,30]
 *
 * (the union is 1 2 3 5 9 13 20 30; the median is 5). The program walks the two lists like the
 * merge step of merge sort, reading them at secret positions; it never indexes past the end
 * because after s < MEDIAN_N steps neither position exceeds s. Unsorted lists give the
 * MEDIAN_N-th value of that merge walk, not an error.
 */
#include <stdint.h>

#ifndef MEDIAN_N
#define MEDIAN_N 16
#endif

void mpc_main(int32_t INPUT_A_list[MEDIAN_N], int32_t INPUT_B_list[MEDIAN_N],
              int32_t *OUTPUT_median)
{
    int i = 0, j = 0;
    int32_t last = 0;
    for (int step = 0; step < MEDIAN_N; step++) {
        int32_t a = INPUT_A_list[i];
        int32_t b = INPUT_B_list[j];
        if (a <= b) {
            last = a;
            i++;
        } else {
            last = b;
            j++;
        }
    }
    *OUTPUT_median = last;
}
