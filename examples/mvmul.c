/* MVMul, the seed paper's matrix-vector benchmark (as in learning-with-errors encryption): a
 * MVMUL_M x MVMUL_K matrix times a MVMUL_K-vector, 16 x 16 by 16 with 64-bit integers.
 *
 *   pgc local examples/mvmul.c -D MVMUL_M=2 -D MVMUL_K=2 --a matrix=[[1,2],[3,4]] --b vector=[5,6]
 *
 * Party A holds the matrix, party B the vector; both learn OUTPUT_product (products and sums
 * wrap modulo 2^64).
 */
#include <stdint.h>

#ifndef MVMUL_M
#define MVMUL_M 16
#endif
#ifndef MVMUL_K
#define MVMUL_K 16
#endif

void mpc_main(int64_t INPUT_A_matrix[MVMUL_M][MVMUL_K], int64_t INPUT_B_vector[MVMUL_K],
              int64_t OUTPUT_product[MVMUL_M])
{
    for (int row = 0; row < MVMUL_M; row++) {
        int64_t sum = 0;
        for (int col = 0; col < MVMUL_K; col++)
            sum += INPUT_A_matrix[row][col] * INPUT_B_vector[col];
        OUTPUT_product[row] = sum;
    }
}
