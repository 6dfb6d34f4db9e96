/* Edit (Levenshtein) distance as a textbook writes it: the whole dynamic-programming table
 * of `int` cells filled by one inline double loop, no helper function, no hand-picked widths.
 *
 *   pgc local examples/edit_distance_textbook.c -D EDIT_LEN=7 --a 'a="kitten"' --b 'b="sitting"'
 *
 * ("kitten" vs "sitting": distance 3; a string shorter than EDIT_LEN is padded with zero
 * bytes, as a C initializer pads it). Party A holds a string of EDIT_LEN bytes (16 by
 * default), party B another of the same length; both learn OUTPUT_distance. Every cell is an
 * `int`, yet its value never exceeds EDIT_LEN: pgc's value-range analysis finds that and does
 * the cell's additions and comparisons over only the bits that can be nonzero (see
 * docs/c-subset.md, "Value ranges"; `pgc compile --stats` reports what it saved).
 */
#ifndef EDIT_LEN
#define EDIT_LEN 16
#endif

int mpc_main(char INPUT_A_a[EDIT_LEN], char INPUT_B_b[EDIT_LEN])
{
    int d[EDIT_LEN + 1][EDIT_LEN + 1];
    for (int i = 0; i <= EDIT_LEN; i++)
        d[i][0] = i;
    for (int j = 0; j <= EDIT_LEN; j++)
        d[0][j] = j;
    for (int i = 1; i <= EDIT_LEN; i++) {
        for (int j = 1; j <= EDIT_LEN; j++) {
            int cost = INPUT_A_a[i - 1] == INPUT_B_b[j - 1] ? 0 : 1;
            int best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best)
                best = d[i - 1][j - 1] + cost;
            d[i][j] = best;
        }
    }
    return d[EDIT_LEN][EDIT_LEN];
}
