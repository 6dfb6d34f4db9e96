/* Edit (Levenshtein) distance with one function call per row of the table, each calling
 * edit_cell once per cell: nested calls, for the compact executor (`--compact always`),
 * which opens the row calls so that cells of consecutive rows run on different threads
 * (a test program of crates/cli/tests/compact.rs and a benchmark in BENCHMARKS.md; the
 * compiler's own tests cover examples/edit_distance_large.c, which computes the same).
 *
 *   pgc local crates/cli/tests/programs/edit_distance_rows.c -D EDIT_LEN=6 --compact always --a text=[107,105,116,116,101,110] --b text=[115,105,116,116,105,110]
 *
 * ("kitten" vs "sittin": distance 2). The same table as edit_distance_large.c (uint16_t
 * cells, EDIT_LEN up to 65535, one row kept), only the loop over a row is a function that
 * takes the row and B's text by pointer. Each row starts with a different constant
 * (row[0] = i), so the first 16 rows get their own template and later rows share one
 * generic template (docs/c-subset.md, "Functions stored once").
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

/* Row i of the table from row i - 1 (both in `row`), for A's character `a`. */
static void edit_row(uint16_t row[EDIT_LEN + 1], uint16_t i, uint8_t a, uint8_t b[EDIT_LEN])
{
    uint16_t diagonal = row[0]; /* the previous row's row[j - 1] */
    row[0] = i;
    for (int j = 1; j <= EDIT_LEN; j++) {
        uint16_t above = row[j];
        row[j] = edit_cell(above, row[j - 1], diagonal, a, b[j - 1]);
        diagonal = above;
    }
}

void mpc_main(uint8_t INPUT_A_text[EDIT_LEN], uint8_t INPUT_B_text[EDIT_LEN],
              uint16_t *OUTPUT_distance)
{
    /* row[j] = distance between the first i characters of A's text and the first j of B's. */
    uint16_t row[EDIT_LEN + 1];
    for (int j = 0; j <= EDIT_LEN; j++)
        row[j] = (uint16_t)j;
    for (int i = 1; i <= EDIT_LEN; i++)
        edit_row(row, (uint16_t)i, INPUT_A_text[i - 1], INPUT_B_text);
    *OUTPUT_distance = row[EDIT_LEN];
}
