#define SORT_N 8
/* Sorting as a textbook writes it: bubble sort of the two parties' numbers together, each
 * pass comparing neighbours and swapping them when they are out of order.
 *
 *   pgc local examples/sort.c -D SORT_N=3 --a values=[7,-2,5] --b values=[0,9,1]
 *
 * (sorted: [-2,0,1,5,7,9]). Party A holds SORT_N ints (16 by default), party B another
 * SORT_N; both learn OUTPUT_sorted, all 2 * SORT_N of them in ascending order. The
 * comparisons and swaps do not depend on the data, so the circuit is (2N)(2N - 1)/2
 * compare-and-swaps: the same network a sorting circuit built by hand would have for bubble
 * sort, one comparator and one conditional swap each.
 */
#ifndef SORT_N
#define SORT_N 16
#endif

void mpc_main(int INPUT_A_values[SORT_N], int INPUT_B_values[SORT_N],
              int OUTPUT_sorted[2 * SORT_N])
{
    int v[2 * SORT_N];
    for (int i = 0; i < SORT_N; i++) {
        v[i] = INPUT_A_values[i];
        v[SORT_N + i] = INPUT_B_values[i];
    }
    for (int pass = 0; pass < 2 * SORT_N - 1; pass++) {
        for (int j = 0; j < 2 * SORT_N - 1 - pass; j++) {
            if (v[j] > v[j + 1]) {
                int t = v[j];
                v[j] = v[j + 1];
                v[j + 1] = t;
            }
        }
    }
    for (int i = 0; i < 2 * SORT_N; i++)
        OUTPUT_sorted[i] = v[i];
}
