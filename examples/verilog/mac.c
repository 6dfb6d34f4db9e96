// The C twin of mac.v.
#include <stdint.h>
void mac(uint16_t INPUT_A_x, uint16_t INPUT_B_y, uint32_t INPUT_B_acc,
         uint32_t INPUT_A_threshold, uint32_t *OUTPUT_sum, _Bool *OUTPUT_over) {
  uint32_t sum = INPUT_B_acc + (uint32_t)INPUT_A_x * INPUT_B_y;
  *OUTPUT_sum = sum;
  *OUTPUT_over = sum > INPUT_A_threshold;
}
