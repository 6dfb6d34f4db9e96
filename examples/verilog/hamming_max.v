// 32-bit Hamming distance plus maximum: how many bits of A's and B's words differ, and the
// larger of the two words (unsigned).
module hamming_max (
    input  [31:0] INPUT_A_x,
    input  [31:0] INPUT_B_y,
    output [7:0]  OUTPUT_distance,
    output [31:0] OUTPUT_max
);
  wire [31:0] diff = INPUT_A_x ^ INPUT_B_y;
  integer i;
  reg [7:0] count;
  always @* begin
    count = 0;
    for (i = 0; i < 32; i = i + 1)
      count = count + diff[i];
  end
  assign OUTPUT_distance = count;
  assign OUTPUT_max = INPUT_A_x > INPUT_B_y ? INPUT_A_x : INPUT_B_y;
endmodule
