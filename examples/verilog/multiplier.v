// Products: the full 32-bit product of two unsigned 16-bit numbers, and the 32-bit
// (truncated) product of two signed 32-bit numbers.
module multiplier (
    input  [15:0] INPUT_A_x,
    input  [15:0] INPUT_B_y,
    input  signed [31:0] INPUT_A_u,
    input  signed [31:0] INPUT_B_v,
    output [31:0] OUTPUT_wide,
    output signed [31:0] OUTPUT_product
);
  assign OUTPUT_wide = INPUT_A_x * INPUT_B_y;
  assign OUTPUT_product = INPUT_A_u * INPUT_B_v;
endmodule
