/* Yao's millionaires' problem: two people learn which of them is richer and nothing else.
 *
 *   pgc local examples/millionaires.c --a income=5000 --b income=7000
 *
 * Party A supplies INPUT_A_income, party B supplies INPUT_B_income; both learn
 * OUTPUT_result (1 if A is richer, 0 otherwise). Compiles with gcc as well.
 */
void mpc_main(int INPUT_A_income, int INPUT_B_income, int *OUTPUT_result)
{
    *OUTPUT_result = INPUT_A_income > INPUT_B_income;
}
