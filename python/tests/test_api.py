"""The Python API against what nobody here wrote: Python arithmetic as the oracle for C
programs, the shared Bristol circuits' known answers, and the CLI's own error messages."""

import random
import re
import subprocess

import numpy as np
import pytest

import pgc

MILLIONAIRES = "examples/millionaires.c"


def test_compile_describes_the_program(root):
    c = pgc.compile(root / MILLIONAIRES)
    assert [p.name for p in c.inputs] == ["INPUT_A_income", "INPUT_B_income"]
    assert [p.owner for p in c.inputs] == ["A", "B"]
    assert [p.short_name for p in c.inputs] == ["income", "income"]
    assert c.inputs[0].type == "int32_t" and c.inputs[0].bits == 32
    assert [(p.name, p.revealed_to) for p in c.outputs] == [("OUTPUT_result", "both")]
    assert c.typed and c.kind == "memory"
    assert c.and_gates > 0 and c.gates >= c.and_gates
    assert 0 < c.depth <= c.and_gates
    assert c.regions == []
    assert "INPUT_A_income" in repr(c)
    assert pgc.compile(c) is c


def test_regions_are_reported(root):
    c = pgc.compile(root / "examples/hamming.c", defines={"HAMMING_WORDS": 4})
    assert c.regions, "the hamming loop is a parallel region"
    assert all(r["instances"] >= 1 and r["and_gates"] > 0 for r in c.regions)


def test_source_text_compiles_and_runs():
    c = pgc.compile(
        "void mpc_main(int INPUT_A_x, int INPUT_B_y, int *OUTPUT_m) {"
        " *OUTPUT_m = INPUT_A_x < INPUT_B_y ? INPUT_A_x : INPUT_B_y; }"
    )
    assert c.path.endswith(".c")
    assert pgc.local(c, a={"x": -5}, b={"y": 3}) == {"OUTPUT_m": -5}


def test_local_matches_python_and_eval(root):
    c = pgc.compile(root / MILLIONAIRES)
    rng = random.Random(1)
    for _ in range(4):
        x, y = rng.randint(-(2**31), 2**31 - 1), rng.randint(-(2**31), 2**31 - 1)
        want = {"OUTPUT_result": int(x > y)}
        assert c.eval(a={"income": x}, b={"income": y}) == want
        # Names with or without the prefix, as on the command line.
        got = pgc.local(c, a={"INPUT_A_income": x}, b={"income": y})
        assert got == want
        assert set(got.stats) == {"a", "b", "protocol", "security"}
        assert got.stats["a"]["bytes_sent"] > 0


def test_numpy_inputs_and_array_outputs():
    c = pgc.compile(
        "#include <stdint.h>\n"
        "void mpc_main(int16_t INPUT_A_v[5], uint8_t INPUT_B_w[5], int32_t OUTPUT_p[5],"
        " int32_t *OUTPUT_sum) {\n"
        "  int32_t s = 0;\n"
        "  for (int i = 0; i < 5; i++) { OUTPUT_p[i] = INPUT_A_v[i] * INPUT_B_w[i]; s += OUTPUT_p[i]; }\n"
        "  *OUTPUT_sum = s;\n}\n"
    )
    v = np.array([-300, 7, 0, 32767, -32768], dtype=np.int16)
    w = np.array([255, 2, 9, 1, 1], dtype=np.uint8)
    want = v.astype(np.int32) * w.astype(np.int32)
    out = pgc.local(c, a={"v": v}, b={"w": w})
    assert isinstance(out["OUTPUT_p"], np.ndarray) and out["OUTPUT_p"].dtype == np.int32
    assert np.array_equal(out["OUTPUT_p"], want)
    assert out["OUTPUT_sum"] == int(want.sum())
    # NumPy scalars and tuples work too.
    out = pgc.local(c, a={"v": tuple(np.int16(1) for _ in range(5))}, b={"w": [np.uint8(3)] * 5})
    assert out["OUTPUT_sum"] == 15


def test_text_as_bytes_and_strings():
    c = pgc.compile(
        "#include <stdint.h>\n"
        "void mpc_main(char INPUT_A_s[8], uint8_t INPUT_B_t[8], char INPUT_B_c, int *OUTPUT_same) {\n"
        "  int n = 0;\n"
        "  for (int i = 0; i < 8; i++) n += INPUT_A_s[i] == (char)INPUT_B_t[i];\n"
        "  *OUTPUT_same = n * 1000 + INPUT_B_c;\n}\n"
    )
    # bytes/bytearray give one element per byte; a quoted string is C's initializer text,
    # padded with zero bytes; 'c' is a character.
    out = pgc.local(c, a={"s": b"kitten\0\0"}, b={"t": '"sitten"', "c": "'a'"})
    assert out == {"OUTPUT_same": 7 * 1000 + 97}
    out = pgc.local(c, a={"s": bytearray(b"abcdefgh")}, b={"t": list(b"abcdefgX"), "c": 0})
    assert out == {"OUTPUT_same": 7000}
    # char is named as such, apart from uint8_t; a char output is numbers, as int8_t's are.
    assert [p.type for p in c.inputs] == ["char[8]", "uint8_t[8]", "char"]
    echo = pgc.compile("void mpc_main(char INPUT_A_s[4], char OUTPUT_s[4]) {\n"
                       "  for (int i = 0; i < 4; i++) OUTPUT_s[i] = INPUT_A_s[i];\n}\n")
    assert echo.outputs[0].type == "char[4]"
    out = pgc.local(echo, a={"s": '"hi"'}, b={})
    assert list(out["OUTPUT_s"]) == [104, 105, 0, 0]
    # A string that starts with a letter is text, as in JSON input files.
    out = pgc.local(c, a={"s": "kitten"}, b={"t": '"kitten"', "c": 0})
    assert out == {"OUTPUT_same": 8000}
    with pytest.raises(ValueError, match="9 bytes"):
        pgc.local(c, a={"s": "kittens!!"}, b={"t": [0] * 8, "c": 0})


def test_structs_and_bools():
    c = pgc.compile(
        "#include <stdbool.h>\n"
        "struct pt { int x; int y; };\n"
        "void mpc_main(struct pt INPUT_A_p, struct pt INPUT_B_q, bool INPUT_B_flip,"
        " struct pt *OUTPUT_s) {\n"
        "  OUTPUT_s->x = INPUT_A_p.x + INPUT_B_q.x;\n"
        "  OUTPUT_s->y = INPUT_B_flip ? -(INPUT_A_p.y + INPUT_B_q.y) : INPUT_A_p.y + INPUT_B_q.y;\n}\n"
    )
    out = pgc.local(c, a={"p": {"x": 1, "y": 2}}, b={"q": {"x": 10, "y": 20}, "flip": True})
    assert out == {"OUTPUT_s": {"x": 11, "y": -22}}


@pytest.mark.parametrize("name", ["bristol_fashion/adder64.txt", "bristol_fashion/aes_128.txt"])
def test_shared_bristol_vectors(vectors, name):
    folder, circuits = vectors
    entry = circuits[name]
    c = pgc.compile(folder / name)
    assert not c.typed and len(c.inputs) == 2
    for v in entry["vectors"][:2]:
        want = [int(o, 16) for o in v["outputs"]]
        # Values as hex strings or ints; value 0 is A's, the rest B's.
        assert pgc.local(c, a=[v["inputs"][0]], b=[int(v["inputs"][1], 16)]) == want
        assert c.eval(a=[v["inputs"][0]], b=[v["inputs"][1]]) == want


def test_save_and_bristol_round_trip(root, tmp_path):
    c = pgc.compile(root / MILLIONAIRES)
    c.save(tmp_path / "m.pgc")
    again = pgc.compile(tmp_path / "m.pgc")
    assert [p.name for p in again.inputs] == [p.name for p in c.inputs]
    assert pgc.local(again, a={"income": 9}, b={"income": 3}) == {"OUTPUT_result": 1}
    c.to_bristol(tmp_path / "m.txt")
    bristol = pgc.compile(tmp_path / "m.txt")
    assert bristol.and_gates == c.and_gates
    assert pgc.local(bristol, a=[9], b=[3]) == [1]
    # The CLI reads what Python wrote.
    exe = root / "target" / "debug" / "pgc"
    if exe.exists():
        out = subprocess.run(
            [exe, "eval", tmp_path / "m.pgc", "--input", "INPUT_A_income=1", "--input", "INPUT_B_income=2"],
            capture_output=True, text=True, check=True,
        )
        assert "OUTPUT_result = 0" in out.stdout


@pytest.mark.parametrize(
    "options",
    [
        {"protocol": "gmw"},
        {"security": "malicious", "stat_sec": 4},
        {"security": "dual-execution"},
        {"parallel": "none", "insecure_plaintext": True},
    ],
)
def test_protocols_and_levels(root, options):
    c = pgc.compile(root / MILLIONAIRES)
    assert pgc.local(c, a={"income": 7}, b={"income": 5}, **options) == {"OUTPUT_result": 1}


def test_compile_error_says_where():
    with pytest.raises(pgc.CompileError) as e:
        pgc.compile("void mpc_main(int INPUT_A_x, int *OUTPUT_y) {\n  *OUTPUT_y = INPUT_A_x + ;\n}\n")
    assert e.value.line == 2 and e.value.col > 1
    assert e.value.file.endswith(".c")
    assert "2:" in str(e.value)
    assert isinstance(e.value, pgc.PgcError)


@pytest.mark.parametrize(
    "a, b, message",
    [
        ({}, {"income": 1}, "missing input INPUT_A_income"),
        ({"income": 1, "wealth": 2}, {"income": 1}, "no input named 'wealth'"),
        ({"income": 2**40}, {"income": 1}, "out of range for int32_t"),
        ({"income": "lots"}, {"income": 1}, "got a string of 4 bytes"),
        ({"income": "[1, 2"}, {"income": 1}, "cannot read"),
        ({"INPUT_B_income": 1}, {"income": 1}, "an input of party B"),
        ({"income": object()}, {"income": 1}, "cannot use a object"),
        ({"income": None}, {"income": 1}, "None is not an input value"),
    ],
)
def test_bad_inputs_are_value_errors(root, a, b, message):
    c = pgc.compile(root / MILLIONAIRES)
    with pytest.raises(ValueError, match=message):
        pgc.local(c, a=a, b=b)


def test_input_values_are_not_echoed_in_errors(root):
    # Inputs are the parties' secrets: errors name the input and its type, not the value.
    c = pgc.compile(root / MILLIONAIRES)
    for bad, said in [("12abc", "character 3"), ("[4321, 5", "cannot read"),
                      (98765432109, "out of range for int32_t")]:
        with pytest.raises(ValueError) as e:
            pgc.local(c, a={"income": bad}, b={"income": 1})
        message = str(e.value)
        assert "INPUT_A_income" in message and said in message, message
        for piece in ("12abc", "4321", "98765432109"):
            assert piece not in message, message


def test_bad_options_and_files(root, tmp_path):
    c = pgc.compile(root / MILLIONAIRES)
    with pytest.raises(ValueError, match="parallel="):
        pgc.local(c, a={"income": 1}, b={"income": 2}, parallel="sideways")
    with pytest.raises(pgc.PgcError, match="cannot read circuit file"):
        pgc.compile(tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("2 5\n1 1\n1 1\n2 1 0 1 4 AND\n")
    with pytest.raises(pgc.PgcError):
        pgc.compile(bad)
    with pytest.raises(ValueError, match="give exactly one of listen"):
        pgc.run(c, "a", inputs={"income": 1}, insecure_plaintext=True)
    with pytest.raises(pgc.PgcError, match="--peer-key"):
        pgc.run(c, "a", connect="127.0.0.1:9", inputs={"income": 1}, timeout=1)


def test_unreachable_peer_is_a_protocol_error(root):
    c = pgc.compile(root / MILLIONAIRES)
    with pytest.raises(pgc.ProtocolError, match="nobody accepted"):
        pgc.run(c, "b", connect="127.0.0.1:1", inputs={"income": 1}, insecure_plaintext=True, timeout=1)


def test_engine_options(root):
    c = pgc.compile(root / MILLIONAIRES)
    inputs = {"a": {"income": 7}, "b": {"income": 5}}
    # auto finds no usable GPU here (or uses one): the result is the same either way.
    assert pgc.local(c, **inputs, device="auto", parallel="none") == {"OUTPUT_result": 1}
    three = pgc.local(c, **inputs, garbling="three-halves", insecure_plaintext=True)
    assert three == {"OUTPUT_result": 1}
    half = pgc.local(c, **inputs, insecure_plaintext=True)
    assert three.stats["a"]["bytes_sent"] < half.stats["a"]["bytes_sent"]
    shaped = pgc.local(c, **inputs, rate_limit=1000.0, latency=1.0, insecure_plaintext=True)
    assert shaped == {"OUTPUT_result": 1}


def test_bad_engine_options(root):
    c = pgc.compile(root / MILLIONAIRES)
    inputs = {"a": {"income": 7}, "b": {"income": 5}}
    with pytest.raises(ValueError, match="device="):
        pgc.local(c, **inputs, device="tpu")
    with pytest.raises(ValueError, match="garbling="):
        pgc.local(c, **inputs, garbling="quarter-gates")
    with pytest.raises(ValueError, match="rate_limit must be a positive number"):
        pgc.local(c, **inputs, rate_limit=-1.0)
    with pytest.raises(ValueError, match="latency must be"):
        pgc.local(c, **inputs, latency=float("nan"))
    with pytest.raises(pgc.PgcError, match="three-halves|garbling"):
        pgc.local(c, **inputs, garbling="three-halves", security="malicious")
    problem = pgc.gpu_problem()
    assert (problem is None) == (pgc.gpu() is not None)
    if problem is not None:
        # The error names what is missing, as gpu_problem() does.
        with pytest.raises(pgc.PgcError, match=re.escape(problem[:40])):
            pgc.local(c, **inputs, device="gpu", parallel="none")
