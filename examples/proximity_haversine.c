/*
 * Private proximity testing with the haversine formula (Demmler et al., CCS 2015, §6, after
 * Šeděnka and Gasti 2014): are A and B within EPSILON metres of each other on a sphere of
 * radius R, accurate at any distance?
 *
 * hav(d/R) = sin^2((lat_B - lat_A)/2) + cos lat_A cos lat_B sin^2((lon_B - lon_A)/2) < a_eps
 * with a_eps = sin^2(eps/2R). Expanding the sines of differences splits every term into a
 * factor only A knows and one only B knows, which each party computes locally from its own
 * coordinates (the gcc build of this file does it, below):
 *   A: a1 = cos^2(latA/2), a2 = 2 cos(latA/2) sin(latA/2), a3 = sin^2(latA/2),
 *      a4 = cos latA sin^2(lonA/2), a5 = 2 cos latA sin(lonA/2) cos(lonA/2),
 *      a6 = cos latA cos^2(lonA/2)
 *   B: b1 = sin^2(latB/2), b2 = sin(latB/2) cos(latB/2), b3 = cos^2(latB/2),
 *      b4 = cos latB cos^2(lonB/2), b5 = cos latB cos(lonB/2) sin(lonB/2),
 *      b6 = cos latB sin^2(lonB/2)
 * and the circuit computes a1 b1 - a2 b2 + a3 b3 + a4 b4 - a5 b5 + a6 b6 < a_eps: 6
 * multiplications, 5 additions and 1 comparison (REAL: double by default, -D REAL=float).
 *
 *   gcc -D PREPARE_INPUTS -o hs examples/proximity_haversine.c -lm
 *   ./hs 49.0069 8.4037 a        # prints party A's --a arguments (b for party B's)
 *   pgc local examples/proximity_haversine.c --a t=[…] --b t=[…]
 */
#ifndef REAL
#define REAL double
#endif
/* sin^2(EPSILON / 2R) for EPSILON = 1000 m, R = 6,371,000 m (./hs --threshold METRES). */
#ifndef A_EPSILON
#define A_EPSILON 6.1592069633415255e-09
#endif

void mpc_main(REAL INPUT_A_t[6], REAL INPUT_B_t[6], _Bool *OUTPUT_near)
{
    REAL h = INPUT_A_t[0] * INPUT_B_t[0] - INPUT_A_t[1] * INPUT_B_t[1]
           + INPUT_A_t[2] * INPUT_B_t[2] + INPUT_A_t[3] * INPUT_B_t[3]
           - INPUT_A_t[4] * INPUT_B_t[4] + INPUT_A_t[5] * INPUT_B_t[5];
    *OUTPUT_near = h < (REAL)A_EPSILON;
}

#ifdef PREPARE_INPUTS
/* What each party computes locally before the run: built only with -D PREPARE_INPUTS. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EARTH_RADIUS 6371000.0

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--threshold") == 0) {
        double s = sin(atof(argv[2]) / (2 * EARTH_RADIUS));
        printf("-D A_EPSILON=%.17g\n", s * s);
        return 0;
    }
    if (argc != 4 || (strcmp(argv[3], "a") != 0 && strcmp(argv[3], "b") != 0)) {
        fprintf(stderr, "usage: %s LATITUDE LONGITUDE a|b (degrees) | --threshold METRES\n",
                argv[0]);
        return 2;
    }
    double lat = atof(argv[1]) * M_PI / 180, lon = atof(argv[2]) * M_PI / 180;
    double sh = sin(lat / 2), ch = cos(lat / 2), so = sin(lon / 2), co = cos(lon / 2);
    double c = cos(lat), t[6];
    if (argv[3][0] == 'a') {
        t[0] = ch * ch; t[1] = 2 * ch * sh; t[2] = sh * sh;
        t[3] = c * so * so; t[4] = 2 * c * so * co; t[5] = c * co * co;
    } else {
        t[0] = sh * sh; t[1] = sh * ch; t[2] = ch * ch;
        t[3] = c * co * co; t[4] = c * co * so; t[5] = c * so * so;
    }
    printf("t=[%.17g,%.17g,%.17g,%.17g,%.17g,%.17g]\n", t[0], t[1], t[2], t[3], t[4], t[5]);
    return 0;
}
#endif
