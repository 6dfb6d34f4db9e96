// The AES S-box (FIPS-197, Figure 7) applied to A's key byte XOR B's plaintext byte: one
// byte of AES' first AddRoundKey and SubBytes. The table is a case statement, which Yosys
// turns into a ROM; pgc reads a ROM through a one-hot decoder of the index (about one AND
// per entry), each output bit the XOR of the entries where it is set.
module aes_sbox (
    input  [7:0] INPUT_A_key,
    input  [7:0] INPUT_B_plain,
    output reg [7:0] OUTPUT_sub
);
  wire [7:0] x = INPUT_A_key ^ INPUT_B_plain;
  always @* begin
    case (x)
      8'h00: OUTPUT_sub = 8'h63; 8'h01: OUTPUT_sub = 8'h7c; 8'h02: OUTPUT_sub = 8'h77; 8'h03: OUTPUT_sub = 8'h7b;
      8'h04: OUTPUT_sub = 8'hf2; 8'h05: OUTPUT_sub = 8'h6b; 8'h06: OUTPUT_sub = 8'h6f; 8'h07: OUTPUT_sub = 8'hc5;
      8'h08: OUTPUT_sub = 8'h30; 8'h09: OUTPUT_sub = 8'h01; 8'h0a: OUTPUT_sub = 8'h67; 8'h0b: OUTPUT_sub = 8'h2b;
      8'h0c: OUTPUT_sub = 8'hfe; 8'h0d: OUTPUT_sub = 8'hd7; 8'h0e: OUTPUT_sub = 8'hab; 8'h0f: OUTPUT_sub = 8'h76;
      8'h10: OUTPUT_sub = 8'hca; 8'h11: OUTPUT_sub = 8'h82; 8'h12: OUTPUT_sub = 8'hc9; 8'h13: OUTPUT_sub = 8'h7d;
      8'h14: OUTPUT_sub = 8'hfa; 8'h15: OUTPUT_sub = 8'h59; 8'h16: OUTPUT_sub = 8'h47; 8'h17: OUTPUT_sub = 8'hf0;
      8'h18: OUTPUT_sub = 8'had; 8'h19: OUTPUT_sub = 8'hd4; 8'h1a: OUTPUT_sub = 8'ha2; 8'h1b: OUTPUT_sub = 8'haf;
      8'h1c: OUTPUT_sub = 8'h9c; 8'h1d: OUTPUT_sub = 8'ha4; 8'h1e: OUTPUT_sub = 8'h72; 8'h1f: OUTPUT_sub = 8'hc0;
      8'h20: OUTPUT_sub = 8'hb7; 8'h21: OUTPUT_sub = 8'hfd; 8'h22: OUTPUT_sub = 8'h93; 8'h23: OUTPUT_sub = 8'h26;
      8'h24: OUTPUT_sub = 8'h36; 8'h25: OUTPUT_sub = 8'h3f; 8'h26: OUTPUT_sub = 8'hf7; 8'h27: OUTPUT_sub = 8'hcc;
      8'h28: OUTPUT_sub = 8'h34; 8'h29: OUTPUT_sub = 8'ha5; 8'h2a: OUTPUT_sub = 8'he5; 8'h2b: OUTPUT_sub = 8'hf1;
      8'h2c: OUTPUT_sub = 8'h71; 8'h2d: OUTPUT_sub = 8'hd8; 8'h2e: OUTPUT_sub = 8'h31; 8'h2f: OUTPUT_sub = 8'h15;
      8'h30: OUTPUT_sub = 8'h04; 8'h31: OUTPUT_sub = 8'hc7; 8'h32: OUTPUT_sub = 8'h23; 8'h33: OUTPUT_sub = 8'hc3;
      8'h34: OUTPUT_sub = 8'h18; 8'h35: OUTPUT_sub = 8'h96; 8'h36: OUTPUT_sub = 8'h05; 8'h37: OUTPUT_sub = 8'h9a;
      8'h38: OUTPUT_sub = 8'h07; 8'h39: OUTPUT_sub = 8'h12; 8'h3a: OUTPUT_sub = 8'h80; 8'h3b: OUTPUT_sub = 8'he2;
      8'h3c: OUTPUT_sub = 8'heb; 8'h3d: OUTPUT_sub = 8'h27; 8'h3e: OUTPUT_sub = 8'hb2; 8'h3f: OUTPUT_sub = 8'h75;
      8'h40: OUTPUT_sub = 8'h09; 8'h41: OUTPUT_sub = 8'h83; 8'h42: OUTPUT_sub = 8'h2c; 8'h43: OUTPUT_sub = 8'h1a;
      8'h44: OUTPUT_sub = 8'h1b; 8'h45: OUTPUT_sub = 8'h6e; 8'h46: OUTPUT_sub = 8'h5a; 8'h47: OUTPUT_sub = 8'ha0;
      8'h48: OUTPUT_sub = 8'h52; 8'h49: OUTPUT_sub = 8'h3b; 8'h4a: OUTPUT_sub = 8'hd6; 8'h4b: OUTPUT_sub = 8'hb3;
      8'h4c: OUTPUT_sub = 8'h29; 8'h4d: OUTPUT_sub = 8'he3; 8'h4e: OUTPUT_sub = 8'h2f; 8'h4f: OUTPUT_sub = 8'h84;
      8'h50: OUTPUT_sub = 8'h53; 8'h51: OUTPUT_sub = 8'hd1; 8'h52: OUTPUT_sub = 8'h00; 8'h53: OUTPUT_sub = 8'hed;
      8'h54: OUTPUT_sub = 8'h20; 8'h55: OUTPUT_sub = 8'hfc; 8'h56: OUTPUT_sub = 8'hb1; 8'h57: OUTPUT_sub = 8'h5b;
      8'h58: OUTPUT_sub = 8'h6a; 8'h59: OUTPUT_sub = 8'hcb; 8'h5a: OUTPUT_sub = 8'hbe; 8'h5b: OUTPUT_sub = 8'h39;
      8'h5c: OUTPUT_sub = 8'h4a; 8'h5d: OUTPUT_sub = 8'h4c; 8'h5e: OUTPUT_sub = 8'h58; 8'h5f: OUTPUT_sub = 8'hcf;
      8'h60: OUTPUT_sub = 8'hd0; 8'h61: OUTPUT_sub = 8'hef; 8'h62: OUTPUT_sub = 8'haa; 8'h63: OUTPUT_sub = 8'hfb;
      8'h64: OUTPUT_sub = 8'h43; 8'h65: OUTPUT_sub = 8'h4d; 8'h66: OUTPUT_sub = 8'h33; 8'h67: OUTPUT_sub = 8'h85;
      8'h68: OUTPUT_sub = 8'h45; 8'h69: OUTPUT_sub = 8'hf9; 8'h6a: OUTPUT_sub = 8'h02; 8'h6b: OUTPUT_sub = 8'h7f;
      8'h6c: OUTPUT_sub = 8'h50; 8'h6d: OUTPUT_sub = 8'h3c; 8'h6e: OUTPUT_sub = 8'h9f; 8'h6f: OUTPUT_sub = 8'ha8;
      8'h70: OUTPUT_sub = 8'h51; 8'h71: OUTPUT_sub = 8'ha3; 8'h72: OUTPUT_sub = 8'h40; 8'h73: OUTPUT_sub = 8'h8f;
      8'h74: OUTPUT_sub = 8'h92; 8'h75: OUTPUT_sub = 8'h9d; 8'h76: OUTPUT_sub = 8'h38; 8'h77: OUTPUT_sub = 8'hf5;
      8'h78: OUTPUT_sub = 8'hbc; 8'h79: OUTPUT_sub = 8'hb6; 8'h7a: OUTPUT_sub = 8'hda; 8'h7b: OUTPUT_sub = 8'h21;
      8'h7c: OUTPUT_sub = 8'h10; 8'h7d: OUTPUT_sub = 8'hff; 8'h7e: OUTPUT_sub = 8'hf3; 8'h7f: OUTPUT_sub = 8'hd2;
      8'h80: OUTPUT_sub = 8'hcd; 8'h81: OUTPUT_sub = 8'h0c; 8'h82: OUTPUT_sub = 8'h13; 8'h83: OUTPUT_sub = 8'hec;
      8'h84: OUTPUT_sub = 8'h5f; 8'h85: OUTPUT_sub = 8'h97; 8'h86: OUTPUT_sub = 8'h44; 8'h87: OUTPUT_sub = 8'h17;
      8'h88: OUTPUT_sub = 8'hc4; 8'h89: OUTPUT_sub = 8'ha7; 8'h8a: OUTPUT_sub = 8'h7e; 8'h8b: OUTPUT_sub = 8'h3d;
      8'h8c: OUTPUT_sub = 8'h64; 8'h8d: OUTPUT_sub = 8'h5d; 8'h8e: OUTPUT_sub = 8'h19; 8'h8f: OUTPUT_sub = 8'h73;
      8'h90: OUTPUT_sub = 8'h60; 8'h91: OUTPUT_sub = 8'h81; 8'h92: OUTPUT_sub = 8'h4f; 8'h93: OUTPUT_sub = 8'hdc;
      8'h94: OUTPUT_sub = 8'h22; 8'h95: OUTPUT_sub = 8'h2a; 8'h96: OUTPUT_sub = 8'h90; 8'h97: OUTPUT_sub = 8'h88;
      8'h98: OUTPUT_sub = 8'h46; 8'h99: OUTPUT_sub = 8'hee; 8'h9a: OUTPUT_sub = 8'hb8; 8'h9b: OUTPUT_sub = 8'h14;
      8'h9c: OUTPUT_sub = 8'hde; 8'h9d: OUTPUT_sub = 8'h5e; 8'h9e: OUTPUT_sub = 8'h0b; 8'h9f: OUTPUT_sub = 8'hdb;
      8'ha0: OUTPUT_sub = 8'he0; 8'ha1: OUTPUT_sub = 8'h32; 8'ha2: OUTPUT_sub = 8'h3a; 8'ha3: OUTPUT_sub = 8'h0a;
      8'ha4: OUTPUT_sub = 8'h49; 8'ha5: OUTPUT_sub = 8'h06; 8'ha6: OUTPUT_sub = 8'h24; 8'ha7: OUTPUT_sub = 8'h5c;
      8'ha8: OUTPUT_sub = 8'hc2; 8'ha9: OUTPUT_sub = 8'hd3; 8'haa: OUTPUT_sub = 8'hac; 8'hab: OUTPUT_sub = 8'h62;
      8'hac: OUTPUT_sub = 8'h91; 8'had: OUTPUT_sub = 8'h95; 8'hae: OUTPUT_sub = 8'he4; 8'haf: OUTPUT_sub = 8'h79;
      8'hb0: OUTPUT_sub = 8'he7; 8'hb1: OUTPUT_sub = 8'hc8; 8'hb2: OUTPUT_sub = 8'h37; 8'hb3: OUTPUT_sub = 8'h6d;
      8'hb4: OUTPUT_sub = 8'h8d; 8'hb5: OUTPUT_sub = 8'hd5; 8'hb6: OUTPUT_sub = 8'h4e; 8'hb7: OUTPUT_sub = 8'ha9;
      8'hb8: OUTPUT_sub = 8'h6c; 8'hb9: OUTPUT_sub = 8'h56; 8'hba: OUTPUT_sub = 8'hf4; 8'hbb: OUTPUT_sub = 8'hea;
      8'hbc: OUTPUT_sub = 8'h65; 8'hbd: OUTPUT_sub = 8'h7a; 8'hbe: OUTPUT_sub = 8'hae; 8'hbf: OUTPUT_sub = 8'h08;
      8'hc0: OUTPUT_sub = 8'hba; 8'hc1: OUTPUT_sub = 8'h78; 8'hc2: OUTPUT_sub = 8'h25; 8'hc3: OUTPUT_sub = 8'h2e;
      8'hc4: OUTPUT_sub = 8'h1c; 8'hc5: OUTPUT_sub = 8'ha6; 8'hc6: OUTPUT_sub = 8'hb4; 8'hc7: OUTPUT_sub = 8'hc6;
      8'hc8: OUTPUT_sub = 8'he8; 8'hc9: OUTPUT_sub = 8'hdd; 8'hca: OUTPUT_sub = 8'h74; 8'hcb: OUTPUT_sub = 8'h1f;
      8'hcc: OUTPUT_sub = 8'h4b; 8'hcd: OUTPUT_sub = 8'hbd; 8'hce: OUTPUT_sub = 8'h8b; 8'hcf: OUTPUT_sub = 8'h8a;
      8'hd0: OUTPUT_sub = 8'h70; 8'hd1: OUTPUT_sub = 8'h3e; 8'hd2: OUTPUT_sub = 8'hb5; 8'hd3: OUTPUT_sub = 8'h66;
      8'hd4: OUTPUT_sub = 8'h48; 8'hd5: OUTPUT_sub = 8'h03; 8'hd6: OUTPUT_sub = 8'hf6; 8'hd7: OUTPUT_sub = 8'h0e;
      8'hd8: OUTPUT_sub = 8'h61; 8'hd9: OUTPUT_sub = 8'h35; 8'hda: OUTPUT_sub = 8'h57; 8'hdb: OUTPUT_sub = 8'hb9;
      8'hdc: OUTPUT_sub = 8'h86; 8'hdd: OUTPUT_sub = 8'hc1; 8'hde: OUTPUT_sub = 8'h1d; 8'hdf: OUTPUT_sub = 8'h9e;
      8'he0: OUTPUT_sub = 8'he1; 8'he1: OUTPUT_sub = 8'hf8; 8'he2: OUTPUT_sub = 8'h98; 8'he3: OUTPUT_sub = 8'h11;
      8'he4: OUTPUT_sub = 8'h69; 8'he5: OUTPUT_sub = 8'hd9; 8'he6: OUTPUT_sub = 8'h8e; 8'he7: OUTPUT_sub = 8'h94;
      8'he8: OUTPUT_sub = 8'h9b; 8'he9: OUTPUT_sub = 8'h1e; 8'hea: OUTPUT_sub = 8'h87; 8'heb: OUTPUT_sub = 8'he9;
      8'hec: OUTPUT_sub = 8'hce; 8'hed: OUTPUT_sub = 8'h55; 8'hee: OUTPUT_sub = 8'h28; 8'hef: OUTPUT_sub = 8'hdf;
      8'hf0: OUTPUT_sub = 8'h8c; 8'hf1: OUTPUT_sub = 8'ha1; 8'hf2: OUTPUT_sub = 8'h89; 8'hf3: OUTPUT_sub = 8'h0d;
      8'hf4: OUTPUT_sub = 8'hbf; 8'hf5: OUTPUT_sub = 8'he6; 8'hf6: OUTPUT_sub = 8'h42; 8'hf7: OUTPUT_sub = 8'h68;
      8'hf8: OUTPUT_sub = 8'h41; 8'hf9: OUTPUT_sub = 8'h99; 8'hfa: OUTPUT_sub = 8'h2d; 8'hfb: OUTPUT_sub = 8'h0f;
      8'hfc: OUTPUT_sub = 8'hb0; 8'hfd: OUTPUT_sub = 8'h54; 8'hfe: OUTPUT_sub = 8'hbb; 8'hff: OUTPUT_sub = 8'h16;
    endcase
  end
endmodule
