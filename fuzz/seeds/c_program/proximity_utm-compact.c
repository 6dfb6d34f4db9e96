/*
 * Private proximity testing with UTM coordinates (Demmler et al., CCS 2015, §6, after
 * Šeděnka and Gasti 2014): are A and B within EPSILON metres of each other?
 *
 * Each party holds a position in the same UTM zone (easting, northing in metres). Both learn
 * one bit: (x_A - x_B)^2 + (y_A - y_B)^2 < EPSILON^2 — 2 squarings, 3 additions and 1
 * comparison in floating point (REAL: double by default, -D REAL=float for binary32).
 *
 *   pgc local examples/proximity_utm.c --a x=448251.9 --a y=5411932.7 --b x=448900.0 --b y=5412100.0
 */
#ifndef REAL
#define REAL double
#endif
#ifndef EPSILON
#define EPSILON 1000.0 /* metres */
#endif

void mpc_main(REAL INPUT_A_x, REAL INPUT_A_y, REAL INPUT_B_x, REAL INPUT_B_y, _Bool *OUTPUT_near)
{
    REAL dx = INPUT_A_x - INPUT_B_x;
    REAL dy = INPUT_A_y - INPUT_B_y;
    *OUTPUT_near = dx * dx + dy * dy < (REAL)EPSILON * (REAL)EPSILON;
}
