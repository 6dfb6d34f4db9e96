// 32-bit adder: A's and B's numbers added modulo 2^32.
module adder (
    input  [31:0] INPUT_A_x,
    input  [31:0] INPUT_B_y,
    output [31:0] OUTPUT_sum
);
  assign OUTPUT_sum = INPUT_A_x + INPUT_B_y;
endmodule
