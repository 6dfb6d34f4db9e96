// The C twin of crc32.v.
#include <stdint.h>
void crc32(uint32_t INPUT_A_crc, uint32_t INPUT_B_data, uint32_t *OUTPUT_crc) {
  uint32_t c = INPUT_A_crc;
  for (int i = 0; i < 32; i++)
    c = (c >> 1) ^ (((c ^ (INPUT_B_data >> i)) & 1) ? 0xEDB88320u : 0);
  *OUTPUT_crc = c;
}
