int mult(int a, int b)
{
    return a * b;
}
void mpc_main(void)
{
    int INPUT_A_a[4], INPUT_B_b[4];
    int res = 0;
    int i;
    for (i = 0; i < 4; i++)
        res += mult(INPUT_A_a[i], INPUT_B_b[i]);
    int OUTPUT_res = res;
}
