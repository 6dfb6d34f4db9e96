// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) of B's 32-bit word, least
// significant byte first, continuing from A's running CRC value (0xFFFFFFFF to start; the
// result is not inverted). All XOR: no AND gates.
module crc32 (
    input  [31:0] INPUT_A_crc,
    input  [31:0] INPUT_B_data,
    output [31:0] OUTPUT_crc
);
  integer i;
  reg [31:0] c;
  always @* begin
    c = INPUT_A_crc;
    for (i = 0; i < 32; i = i + 1)
      c = (c >> 1) ^ ((c[0] ^ INPUT_B_data[i]) ? 32'hEDB88320 : 32'h0);
  end
  assign OUTPUT_crc = c;
endmodule
