// The C twin of hamming_max.v.
#include <stdint.h>
void hamming_max(uint32_t INPUT_A_x, uint32_t INPUT_B_y, uint8_t *OUTPUT_distance,
                 uint32_t *OUTPUT_max) {
  uint32_t diff = INPUT_A_x ^ INPUT_B_y;
  uint8_t count = 0;
  for (int i = 0; i < 32; i++)
    count += (diff >> i) & 1;
  *OUTPUT_distance = count;
  *OUTPUT_max = INPUT_A_x > INPUT_B_y ? INPUT_A_x : INPUT_B_y;
}
