// 16x16-bit multiply-accumulate with a comparison: B's accumulator plus the product of A's
// and B's 16-bit factors, and whether the sum exceeds A's threshold.
module mac (
    input  [15:0] INPUT_A_x,
    input  [15:0] INPUT_B_y,
    input  [31:0] INPUT_B_acc,
    input  [31:0] INPUT_A_threshold,
    output [31:0] OUTPUT_sum,
    output OUTPUT_over
);
  wire [31:0] sum = INPUT_B_acc + INPUT_A_x * INPUT_B_y;
  assign OUTPUT_sum = sum;
  assign OUTPUT_over = sum > INPUT_A_threshold;
endmodule
