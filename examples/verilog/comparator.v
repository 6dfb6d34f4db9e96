// Signed and unsigned comparisons of two 32-bit numbers (the millionaires' problem and more).
module comparator (
    input  signed [31:0] INPUT_A_x,
    input  signed [31:0] INPUT_B_y,
    output OUTPUT_less,           // x < y as signed numbers
    output OUTPUT_less_unsigned,  // x < y as unsigned numbers
    output OUTPUT_equal
);
  assign OUTPUT_less = INPUT_A_x < INPUT_B_y;
  assign OUTPUT_less_unsigned = $unsigned(INPUT_A_x) < $unsigned(INPUT_B_y);
  assign OUTPUT_equal = INPUT_A_x == INPUT_B_y;
endmodule
