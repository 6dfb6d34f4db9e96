// The C twin of multiplier.v.
#include <stdint.h>
void multiplier(uint16_t INPUT_A_x, uint16_t INPUT_B_y, int32_t INPUT_A_u, int32_t INPUT_B_v,
                uint32_t *OUTPUT_wide, int32_t *OUTPUT_product) {
  *OUTPUT_wide = (uint32_t)INPUT_A_x * INPUT_B_y;
  *OUTPUT_product = INPUT_A_u * INPUT_B_v;
}
