"""pgc from Python, notebook style: compile a program, look at it, check it in the clear,
run it securely (both parties in this process), and compare with plain Python.

    pip install ./python        # from a pgc checkout (needs a Rust toolchain)
    python examples/python/quickstart.py

The test suite runs this file (python/tests/test_examples.py).
"""

import random

import numpy as np

import pgc

# %% A private dot product: party A holds one vector, party B the other; both learn only
# the sum of products.
dot = pgc.compile(
    """
    #include <stdint.h>
    #define N 8
    void mpc_main(int32_t INPUT_A_x[N], int32_t INPUT_B_y[N], int64_t *OUTPUT_dot) {
        int64_t sum = 0;
        for (int i = 0; i < N; i++)
            sum += (int64_t)INPUT_A_x[i] * INPUT_B_y[i];
        *OUTPUT_dot = sum;
    }
    """
)
print(dot)
for port in dot.inputs + dot.outputs:
    print("  ", port)
print(f"{dot.and_gates} AND gates, AND depth {dot.depth}")

# %% Inputs: NumPy arrays or lists; names with or without the INPUT_A_/INPUT_B_ prefix.
rng = random.Random(7)
x = np.array([rng.randint(-1000, 1000) for _ in range(8)], dtype=np.int32)
y = [rng.randint(-1000, 1000) for _ in range(8)]
expected = int(np.dot(x.astype(np.int64), np.array(y, dtype=np.int64)))

clear = dot.eval(a={"x": x}, b={"y": y})  # no privacy: a check of the circuit
secure = pgc.local(dot, a={"x": x}, b={"INPUT_B_y": y})  # Yao's protocol, both parties here
print("cleartext:", clear["OUTPUT_dot"], " secure:", secure["OUTPUT_dot"], " numpy:", expected)
assert clear["OUTPUT_dot"] == secure["OUTPUT_dot"] == expected

# %% What the run cost: each party's bytes and time.
stats = secure.stats
print("party A sent", stats["a"]["bytes_sent"], "bytes; protocol:", stats["protocol"])

# %% The same computation under GMW, and against a cheating peer (cut-and-choose, small
# statistical security to keep the example quick).
gmw = pgc.local(dot, a={"x": x}, b={"y": y}, protocol="gmw")
malicious = pgc.local(dot, a={"x": x}, b={"y": y}, security="malicious", stat_sec=8)
assert gmw["OUTPUT_dot"] == malicious["OUTPUT_dot"] == expected

# %% Array outputs come back as NumPy arrays of the C element type.
add = pgc.compile(
    "void mpc_main(int INPUT_A_a[4], int INPUT_B_b[4], int OUTPUT_s[4]) {"
    "  for (int i = 0; i < 4; i++) OUTPUT_s[i] = INPUT_A_a[i] + INPUT_B_b[i]; }"
)
s = pgc.local(add, a={"a": [1, 2, 3, 4]}, b={"b": np.arange(4)})["OUTPUT_s"]
print("element-wise sum:", s, s.dtype)
assert list(s) == [1, 3, 5, 7]
