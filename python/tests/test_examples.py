"""Every kind of example program through the Python API: random inputs made from the
ports' C types, the secure run against the cleartext evaluation."""

import math
import random
import re
import shutil

import pytest

import pgc

EXAMPLES = [
    ("examples/auction.c", {"AUCTION_A": 2, "AUCTION_B": 2}),
    ("examples/dot_product.c", {"N": 3}),
    ("examples/hamming.c", {"HAMMING_WORDS": 2}),
    ("examples/median.c", {"MEDIAN_N": 4}),
    ("examples/mvmul.c", {"MVMUL_M": 2, "MVMUL_K": 2}),
    ("examples/edit_distance.c", {"EDIT_LEN": 4}),
    ("examples/proximity_ecef.c", {}),
    ("examples/verilog/adder.v", {}),
]


def random_value(ctype: str, bits: int, rng: random.Random):
    dims = [int(d) for d in re.findall(r"\[(\d+)\]", ctype)]
    base = ctype.split("[", 1)[0].strip()
    count = math.prod(dims) if dims else 1
    width = bits // count

    def scalar():
        if base in ("float", "double"):
            return rng.uniform(-1e3, 1e3)
        if base in ("_Bool", "bool"):
            return rng.random() < 0.5
        if base.startswith("u") or base.startswith("unsigned"):
            return rng.randrange(0, 2**width)
        return rng.randrange(-(2 ** (width - 1)), 2 ** (width - 1))

    def build(level):
        if level == len(dims):
            return scalar()
        return [build(level + 1) for _ in range(dims[level])]

    return build(0)


@pytest.mark.parametrize("path, defines", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_example_runs_like_its_cleartext(root, path, defines):
    if path.endswith(".v") and shutil.which("yosys") is None:
        pytest.skip("Verilog needs Yosys (apt-get install yosys)")
    c = pgc.compile(root / path, defines=defines)
    rng = random.Random(path)
    for _ in range(2):
        a, b = {}, {}
        for p in c.inputs:
            (a if p.owner == "A" else b)[p.name] = random_value(p.type, p.bits, rng)
        want = c.eval(a=a, b=b)
        got = pgc.local(c, a=a, b=b)
        assert got.keys() == want.keys()
        for name in want:
            w, g = want[name], got[name]
            assert (g == w).all() if hasattr(g, "all") else g == w, name
