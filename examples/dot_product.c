/* Dot product of two private vectors, the seed paper's Listing 2 in CBMC-GC style: inputs and
 * the output are locals, named by the INPUT_A_ / INPUT_B_ / OUTPUT_ convention.
 *
 *   pgc local examples/dot_product.c -D N=4 --a a=[1,2,3,4] --b b=[5,6,7,8]
 *
 * Party A holds vector a, party B vector b (N ints each, 100 by default); both learn
 * OUTPUT_res = sum of a[i] * b[i] (wrapping on overflow like gcc -fwrapv).
 */
#ifndef N
#define N 100
#endif

int mult(int a, int b)
{
    return a * b;
}

void mpc_main(void)
{
    int INPUT_A_a[N], INPUT_B_b[N];
    int res = 0;
    int i;
    for (i = 0; i < N; i++)
        res += mult(INPUT_A_a[i], INPUT_B_b[i]);
    int OUTPUT_res = res;
}
