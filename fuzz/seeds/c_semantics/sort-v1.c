void mpc_main(int INPUT_A_values[8], int INPUT_B_values[8],
              int OUTPUT_sorted[2 * 8])
{
    int v[2 * 8];
    for (int i = 0; i < 8; i++) {
        v[i] = INPUT_A_values[i];
        v[8 + i] = INPUT_B_values[i];
    }
    for (int pass = 0; pass < 2 * 8 - 1; pass++) {
        for (int j = 0; j < 2 * 8 - 1 - pass; j++) {
            if (v[j] > v[j + 1]) {
                int t = v[j];
                v[j] = v[j + 1];
                v[j + 1] = t;
            }
        }
    }
    for (int i = 0; i < 2 * 8; i++)
        OUTPUT_sorted[i] = v[i];
}
