void mpc_main(int INPUT_A_income, int INPUT_B_income, int *OUTPUT_result)
{
    *OUTPUT_result = INPUT_A_income > INPUT_B_income;
}
