#define EDIT_LEN 6
/* Edit (Levenshtein) distance between two private strings: the fewest single-character
 * insertions, deletions and substitutions that turn one into the other.
 *
 *   pgc local examples/edit_distance.c -D EDIT_LEN=7 --a 'text="kitten"' --b 'text="sitting"'
 *
 * ("kitten" vs "sitting": distance 3; a string shorter than EDIT_LEN is padded with zero
 * bytes, as a C initializer pads it). Party A holds a
 * string of EDIT_LEN characters (16 by default), party B another; both learn OUTPUT_distance.
 * The dynamic-programming table keeps one row and uses uint8_t cells (distances never exceed
 * EDIT_LEN, at most 255), which keeps the circuit small.
 */
#include <stdint.h>

#ifndef EDIT_LEN
#define EDIT_LEN 16
#endif

static uint8_t min3(uint8_t x, uint8_t y, uint8_t z)
{
    uint8_t m = x < y ? x : y;
    return m < z ? m : z;
}

void mpc_main(uint8_t INPUT_A_text[EDIT_LEN], uint8_t INPUT_B_text[EDIT_LEN], int *OUTPUT_distance)
{
    /* row[j] = distance between the first i characters of A's text and the first j of B's. */
    uint8_t row[EDIT_LEN + 1];
    for (int j = 0; j <= EDIT_LEN; j++)
        row[j] = (uint8_t)j;
    for (int i = 1; i <= EDIT_LEN; i++) {
        uint8_t diagonal = row[0]; /* the previous row's row[j - 1] */
        row[0] = (uint8_t)i;
        for (int j = 1; j <= EDIT_LEN; j++) {
            uint8_t above = row[j];
            uint8_t substitute = diagonal + (INPUT_A_text[i - 1] != INPUT_B_text[j - 1]);
            row[j] = min3(above + 1, row[j - 1] + 1, substitute);
            diagonal = above;
        }
    }
    *OUTPUT_distance = row[EDIT_LEN];
}
