// The C twin of adder.v (same ports, same function), to compare circuits.
#include <stdint.h>
void adder(uint32_t INPUT_A_x, uint32_t INPUT_B_y, uint32_t *OUTPUT_sum) {
  *OUTPUT_sum = INPUT_A_x + INPUT_B_y;
}
