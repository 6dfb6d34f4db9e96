"""pgc.run between two Python processes, Ctrl-C, and the notebook-style example."""

import json
import os
import runpy
import signal
import socket
import subprocess
import sys
import time

import pgc

PARTY = """
import json, sys, pgc
party, role, addr, psk, value = sys.argv[1:6]
kwargs = {role: addr}
out = pgc.run("examples/millionaires.c", party, inputs={"income": int(value)}, psk=psk,
              timeout=30, **kwargs)
print(json.dumps({"outputs": dict(out), "sent": out.stats["bytes_sent"]}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_parties_in_two_processes(root, tmp_path):
    secret = tmp_path / "shared.psk"
    pgc.new_secret(secret)
    addr = f"127.0.0.1:{free_port()}"
    env = dict(os.environ)

    def party(name, role, value):
        return subprocess.Popen(
            [sys.executable, "-c", PARTY, name, role, addr, str(secret), str(value)],
            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )

    a = party("a", "listen", 9000)
    b = party("b", "connect", 7000)
    results = []
    for p in (a, b):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    for r in results:
        assert r["outputs"] == {"OUTPUT_result": 1}
        assert r["sent"] > 0


WAITER = """
import sys, pgc
try:
    pgc.run("examples/millionaires.c", "a", listen="127.0.0.1:0", inputs={"income": 1},
            insecure_plaintext=True, timeout=600)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_ends_a_waiting_run(root):
    p = subprocess.Popen(
        [sys.executable, "-c", WAITER], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(2.0)  # compiled and listening by now (the cache is warm from other tests or not)
    assert p.poll() is None, p.communicate()
    start = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert "interrupted" in out, err
    assert time.monotonic() - start < 10


def test_quickstart_example_runs(root, monkeypatch):
    monkeypatch.chdir(root)
    runpy.run_path(str(root / "examples/python/quickstart.py"), run_name="__main__")


LOCAL_RUN = """
import pgc
c = pgc.compile("builtin:random:20000x20000")  # 400 M AND gates: far longer than the test
print("started", flush=True)
try:
    pgc.local(c, a=[0], b=[0])
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_ends_a_local_run_under_way(root):
    p = subprocess.Popen(
        [sys.executable, "-c", LOCAL_RUN], cwd=root, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    assert p.stdout.readline().strip() == "started"
    time.sleep(1.5)  # both parties garbling and evaluating by now
    start = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert "interrupted" in out, (out, err)
    assert time.monotonic() - start < 10
