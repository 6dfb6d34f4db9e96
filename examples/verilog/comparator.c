// The C twin of comparator.v.
#include <stdint.h>
void comparator(int32_t INPUT_A_x, int32_t INPUT_B_y, _Bool *OUTPUT_less,
                _Bool *OUTPUT_less_unsigned, _Bool *OUTPUT_equal) {
  *OUTPUT_less = INPUT_A_x < INPUT_B_y;
  *OUTPUT_less_unsigned = (uint32_t)INPUT_A_x < (uint32_t)INPUT_B_y;
  *OUTPUT_equal = INPUT_A_x == INPUT_B_y;
}
