/* Edit (Levenshtein) distance at the seed paper's EDT sizes: the fewest single-character
 * insertions, deletions and substitutions that turn A's string into B's.
 *
 *   pgc local examples/edit_distance_large.c -D EDIT_LEN=7 --a 'text="kitten"' --b 'text="sitting"'
 *
 * ("kitten" vs "sitting": distance 3; a string shorter than EDIT_LEN is padded with zero
 * bytes, as a C initializer pads it). The seed's n x n benchmark sizes are EDIT_LEN = 31, 63,
 * 127, 255, ..., 4095, e.g. `pgc compile --stats examples/edit_distance_large.c -D EDIT_LEN=255`.
 * Party A holds a string of EDIT_LEN bytes (16 by default, at most 65535), party B another of
 * the same length; both learn OUTPUT_distance.
 *
 * Unlike edit_distance.c (uint8_t cells, so at most 255 characters) the cells are uint16_t.
 * One row of the table is kept (memory in proportion to EDIT_LEN), and every one of the
 * EDIT_LEN^2 cells is one call of edit_cell with scalar arguments: calls of the same shape,
 * which pgc can compile once and repeat.
 */
#include <stdint.h>

#ifndef EDIT_LEN
#define EDIT_LEN 16
#endif
#if EDIT_LEN < 1 || EDIT_LEN > 65535
#error "EDIT_LEN must be between 1 and 65535 (distances are uint16_t)"
#endif

/* One cell of the table from its three neighbours: the cell above (delete a's character),
 * the cell to the left (insert b's character) and the diagonal one (keep or substitute). */
static uint16_t edit_cell(uint16_t above, uint16_t left, uint16_t diagonal, uint8_t a, uint8_t b)
{
    uint16_t insert_or_delete = (uint16_t)((above < left ? above : left) + 1);
    uint16_t substitute = (uint16_t)(diagonal + (a != b));
    return substitute < insert_or_delete ? substitute : insert_or_delete;
}

void mpc_main(uint8_t INPUT_A_text[EDIT_LEN], uint8_t INPUT_B_text[EDIT_LEN],
              uint16_t *OUTPUT_distance)
{
    /* row[j] = distance between the first i characters of A's text and the first j of B's. */
    uint16_t row[EDIT_LEN + 1];
    for (int j = 0; j <= EDIT_LEN; j++)
        row[j] = (uint16_t)j;
    for (int i = 1; i <= EDIT_LEN; i++) {
        uint16_t diagonal = row[0]; /* the previous row's row[j - 1] */
        row[0] = (uint16_t)i;
        for (int j = 1; j <= EDIT_LEN; j++) {
            uint16_t above = row[j];
            row[j] = edit_cell(above, row[j - 1], diagonal, INPUT_A_text[i - 1],
                               INPUT_B_text[j - 1]);
            diagonal = above;
        }
    }
    *OUTPUT_distance = row[EDIT_LEN];
}
