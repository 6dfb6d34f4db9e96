void mpc_main(double INPUT_A_x, double INPUT_A_y, double INPUT_B_x, double INPUT_B_y, _Bool *OUTPUT_near)
{
    double dx = INPUT_A_x - INPUT_B_x;
    double dy = INPUT_A_y - INPUT_B_y;
    *OUTPUT_near = dx * dx + dy * dy < (double)1000.0 * (double)1000.0;
}
