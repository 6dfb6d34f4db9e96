/*
 * Private proximity testing with Earth-centred, Earth-fixed coordinates (Demmler et al.,
 * CCS 2015, §6, after Šeděnka and Gasti 2014): are A and B within EPSILON metres of each
 * other along the Earth's surface (a sphere of radius R)?
 *
 * Each party turns its own latitude and longitude into a point (x, y, z) on the sphere
 * locally — no secret is involved, so no circuit is needed for the trigonometry; the gcc
 * build of this file does it (below). The circuit compares the squared chord between the
 * points with the squared chord of an arc of EPSILON metres, 4 R^2 a_eps with
 * a_eps = tan^2(eps/2R) / (1 + tan^2(eps/2R)) = sin^2(eps/2R): 3 squarings, 5 additions and
 * 1 comparison (REAL: double by default, -D REAL=float for binary32).
 *
 *   gcc -D PREPARE_INPUTS -o ecef examples/proximity_ecef.c -lm
 *   ./ecef 49.0069 8.4037        # prints x=… y=… z=… for that party's --a / --b
 *   pgc local examples/proximity_ecef.c --a x=… --a y=… --a z=… --b x=… --b y=… --b z=…
 */
#ifndef REAL
#define REAL double
#endif
/* 4 R^2 sin^2(EPSILON / 2R) for EPSILON = 1000 m and R = 6,371,000 m; pgc has no sin(), so
 * a different radius is given as this constant (the gcc build prints it: ./ecef --chord M). */
#ifndef CHORD_SQUARED
#define CHORD_SQUARED 999999.9979469308
#endif

void mpc_main(REAL INPUT_A_x, REAL INPUT_A_y, REAL INPUT_A_z,
              REAL INPUT_B_x, REAL INPUT_B_y, REAL INPUT_B_z, _Bool *OUTPUT_near)
{
    REAL dx = INPUT_A_x - INPUT_B_x;
    REAL dy = INPUT_A_y - INPUT_B_y;
    REAL dz = INPUT_A_z - INPUT_B_z;
    *OUTPUT_near = dx * dx + dy * dy + dz * dz < (REAL)CHORD_SQUARED;
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
    if (argc == 3 && strcmp(argv[1], "--chord") == 0) {
        double s = sin(atof(argv[2]) / (2 * EARTH_RADIUS));
        printf("-D CHORD_SQUARED=%.17g\n", 4 * EARTH_RADIUS * EARTH_RADIUS * s * s);
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: %s LATITUDE LONGITUDE (degrees) | --chord METRES\n", argv[0]);
        return 2;
    }
    double lat = atof(argv[1]) * M_PI / 180, lon = atof(argv[2]) * M_PI / 180;
    printf("x=%.17g y=%.17g z=%.17g\n", EARTH_RADIUS * cos(lat) * cos(lon),
           EARTH_RADIUS * cos(lat) * sin(lon), EARTH_RADIUS * sin(lat));
    return 0;
}
#endif
