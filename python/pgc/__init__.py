"""pgc: secure two-party computation from Python.

Two parties, each holding private data, compute a function of both inputs and learn only
the result. Write the function in C (inputs named ``INPUT_A_x`` / ``INPUT_B_x``, outputs
``OUTPUT_x``), as a Verilog design, or hand over a Bristol Fashion circuit; pgc compiles it
to a Boolean circuit and runs it with Yao's garbled circuits (or GMW) between the parties.

    import pgc

    c = pgc.compile('''
        void mpc_main(int INPUT_A_income, int INPUT_B_income, int *OUTPUT_richer) {
            *OUTPUT_richer = INPUT_A_income > INPUT_B_income;
        }''')
    print(c.inputs, c.and_gates)
    print(pgc.local(c, a={"income": 5000}, b={"income": 7000}))   # {'OUTPUT_richer': 0}

On two machines each party calls :func:`run` with only its own inputs (see its doc for the
keys that protect the connection). What each party learns: the outputs revealed to it and
nothing else about the other's inputs, provided both run pgc unmodified (semi-honest
security); against a peer that may not, both pass ``security="malicious"`` (cut-and-choose)
or ``"dual-execution"``.

This is the same engine as the ``pgc`` command (the ``pgc-engine`` crate): the same
compile cache, checks and error messages.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Union

from . import _native
from ._native import CompileError, PgcError, ProtocolError

__all__ = [
    "Circuit",
    "CompileError",
    "Outputs",
    "PgcError",
    "Port",
    "ProtocolError",
    "compile",
    "gpu",
    "gpu_problem",
    "local",
    "new_secret",
    "run",
]

__version__: str = _native.version()

PathLike = Union[str, "os.PathLike[str]"]
Inputs = Union[Mapping[str, Any], Sequence[Any], None]


class Port:
    """One input or output of a circuit.

    Attributes:
        name: the full name (``INPUT_A_income``, ``OUTPUT_result``); for Bristol circuits
            ``input I`` / ``output I``.
        short_name: the name without its ``INPUT_A_``/``INPUT_B_`` prefix (inputs only).
        owner: ``"A"`` or ``"B"`` for inputs of compiled programs, else ``None``.
        revealed_to: ``"both"``, ``"A"`` or ``"B"`` for outputs of compiled programs.
        type: the C type (``int32_t``, ``char[8]``, ``uint32_t[16]``, ``struct point``),
            ``None`` for Bristol. Integers go by their ``stdint.h`` names (``int`` is
            ``int32_t``, ``unsigned char`` is ``uint8_t``), plain ``char`` as ``char``; a
            ``char`` output's values are numbers, as for ``int8_t``.
        bits: the width in bits.
    """

    __slots__ = ("name", "short_name", "owner", "revealed_to", "type", "bits")

    def __init__(self, d: Mapping[str, Any]):
        self.name: str = d["name"]
        self.short_name: str = d.get("short_name", d["name"])
        self.owner: Optional[str] = d.get("owner")
        self.revealed_to: Optional[str] = d.get("revealed_to")
        self.type: Optional[str] = d.get("type")
        self.bits: int = d["bits"]

    def __repr__(self) -> str:
        who = f", owner={self.owner!r}" if self.owner else ""
        who += f", revealed_to={self.revealed_to!r}" if self.revealed_to else ""
        return f"Port({self.name!r}, type={self.type!r}, bits={self.bits}{who})"


class Outputs(dict):
    """A run's outputs by name (a ``dict``), with both parties' statistics in ``stats``
    (bytes sent and received, time, AND gates per second; the same figures as
    ``pgc local --json``)."""

    stats: Dict[str, Any]


class OutputList(list):
    """A Bristol circuit's output values in circuit order (a ``list`` of ints), with the
    run's statistics in ``stats``."""

    stats: Dict[str, Any]


class Circuit:
    """A circuit ready to run: a compiled C program or Verilog design, a ``.pgc`` file, a
    Bristol file or a built-in circuit. Made by :func:`compile`."""

    def __init__(self, native: Any, spec: str):
        self._native = native
        self._spec = spec
        d = native.describe()
        self.inputs: List[Port] = [Port(p) for p in d["inputs"]]
        """The inputs, in circuit order."""
        self.outputs: List[Port] = [Port(p) for p in d["outputs"]]
        """The outputs, in circuit order."""
        self.and_gates: int = d["and_gates"]
        """AND gates: what the protocols pay for (XOR gates are free)."""
        self.gates: int = d["gates"]
        """All gates."""
        self.regions: List[Dict[str, int]] = d["regions"]
        """The parallel regions the compiler found (independent loop iterations or calls):
        source line, instances, AND gates per instance and in all."""
        self.kind: str = d["kind"]
        """How it is held: ``memory``, ``compact`` (functions stored once, expanded while
        running), ``streamed`` (read from its file at every pass) or ``generated``."""
        self.typed: bool = d["typed"]
        """Whether inputs and outputs have names and C types (compiled programs)."""
        self._depth: Optional[int] = None

    @property
    def path(self) -> str:
        """The file (or ``builtin:NAME``) the circuit was opened from."""
        return self._spec

    @property
    def depth(self) -> Optional[int]:
        """The AND depth: the most AND gates on any path from an input to an output (what
        GMW's rounds follow). ``None`` for compact, streamed and generated circuits."""
        if self._depth is None:
            self._depth = self._native.and_depth()
        return self._depth

    def save(self, path: PathLike) -> None:
        """Writes the circuit as a ``.pgc`` file (as ``pgc compile`` does), which
        :func:`compile`, :func:`run` and the ``pgc`` command open without compiling."""
        self._native.save(os.fspath(path))

    def to_bristol(self, path: PathLike) -> None:
        """Writes the circuit in Bristol Fashion (for other tools). Only circuits held in
        memory; compile with ``compact="never"`` for a large program."""
        self._native.to_bristol(os.fspath(path))

    def eval(self, a: Inputs = None, b: Inputs = None, **inputs: Any) -> Any:
        """Evaluates the circuit in the clear on both parties' inputs: a check of what it
        computes, with no protocol and no privacy.

        ``a`` and ``b`` are as for :func:`local`; inputs may also be given as keywords.
        Returns every output (a dict by name; for Bristol circuits a list of ints, where
        ``a`` and ``b`` are value lists whose concatenation is in circuit order).
        """
        if inputs:
            if not self.typed:
                raise ValueError("a Bristol circuit's inputs have no names: give a=[...], b=[...]")
            owner = {p.name: p.owner for p in self.inputs}
            short = {p.short_name: p.owner for p in self.inputs}
            a, b = dict(a or {}), dict(b or {})
            for name, value in inputs.items():
                who = owner.get(name) or short.get(name)
                (a if who == "A" else b)[name] = value
        out = self._native.eval(a, b)
        if self.typed:
            return _typed_outputs(self, out, Outputs)
        return _bristol_outputs(out, OutputList)

    def __repr__(self) -> str:
        return (
            f"Circuit({self._spec!r}, inputs={[p.name for p in self.inputs]}, "
            f"outputs={[p.name for p in self.outputs]}, and_gates={self.and_gates})"
        )


_SOURCE_HINT = re.compile(r"[\n;{}()]")


def _source_file(source: str) -> str:
    """A C or Verilog source given as text, written once to pgc's cache directory (named by
    its hash, so the compile cache finds it again)."""
    is_verilog = re.search(r"\bmodule\b", source) is not None and "endmodule" in source
    suffix = ".v" if is_verilog else ".c"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    folder = Path(base) / "pgc" / "python-sources"
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.blake2b(source.encode(), digest_size=16).hexdigest()
    path = folder / f"{digest}{suffix}"
    if not path.exists():
        tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
        tmp.write_text(source)
        os.replace(tmp, path)
    return str(path)


def compile(
    source_or_path: Union[str, "os.PathLike[str]", Circuit],
    *,
    defines: Union[Mapping[str, Any], Sequence[str], None] = None,
    include_dirs: Optional[Sequence[PathLike]] = None,
    optimize: str = "size",
    entry: Optional[str] = None,
    compact: str = "auto",
    verilog_flow: Optional[str] = None,
    cache: bool = True,
    format: Optional[str] = None,
    bit_order: Optional[str] = None,
    verbose: bool = False,
) -> Circuit:
    """Opens a computation: compiles a C program (``.c``) or Verilog design (``.v``, through
    Yosys), or reads a ``.pgc`` file, a Bristol file, or ``builtin:NAME``
    (``builtin:millionaires``, ``builtin:aes128``, ``builtin:random:WIDTHxDEPTH``).

    Args:
        source_or_path: a path, ``builtin:NAME``, or C (or Verilog) source text.
        defines: preprocessor macros, ``{"N": 16}`` or ``["N=16", "DEBUG"]`` (as ``-D``).
        include_dirs: directories to search for ``#include`` files (as ``-I``).
        optimize: ``"size"`` (fewest AND gates) or ``"depth"`` (least AND depth, for GMW).
        entry: the function (Verilog: top module) to compile; default ``mpc_main``.
        compact: ``"auto"`` (compact above 2^25 gates), ``"always"`` or ``"never"``: store
            functions called many times once and expand them while running.
        verilog_flow: ``"words"`` (default) or ``"gates"``.
        cache: use the compile cache (``$XDG_CACHE_HOME/pgc``) as the command does.
        format: Bristol files: ``"bristol-fashion"`` or ``"bristol"`` (default: detected).
        bit_order: Bristol files: ``"lsb0"`` (default) or ``"msb0"``.
        verbose: notes and progress on stderr, as the command prints them.

    Raises:
        CompileError: the program does not compile (``file``, ``line``, ``col`` say where).
        PgcError: the file cannot be read or is not a circuit.
    """
    if isinstance(source_or_path, Circuit):
        return source_or_path
    spec = os.fspath(source_or_path)
    if (
        not spec.startswith("builtin:")
        and not os.path.exists(spec)
        and _SOURCE_HINT.search(spec)
    ):
        spec = _source_file(spec)
    if isinstance(defines, Mapping):
        define_list = [k if v is None else f"{k}={v}" for k, v in defines.items()]
    else:
        define_list = list(defines or [])
    native = _native.open_circuit(
        spec,
        define_list,
        [os.fspath(d) for d in include_dirs or []],
        optimize,
        entry,
        compact,
        verilog_flow,
        cache,
        format,
        bit_order,
        not verbose,
    )
    return Circuit(native, spec)


class _Engine(NamedTuple):
    """How a run uses this machine and the link (``device``, ``garbling``, ``rate_limit``,
    ``latency``), passed to the native module as one value."""

    device: str
    garbling: str
    rate_limit: Optional[float]
    latency: Optional[float]


def local(
    circuit: Union[Circuit, PathLike],
    a: Inputs = None,
    b: Inputs = None,
    *,
    parallel: str = "auto",
    threads: Optional[int] = None,
    protocol: str = "yao",
    security: str = "semi-honest",
    stat_sec: Optional[int] = None,
    timeout: float = 60.0,
    insecure_plaintext: bool = False,
    inputs_of_a: Optional[Sequence[int]] = None,
    device: str = "cpu",
    garbling: str = "half-gates",
    rate_limit: Optional[float] = None,
    latency: Optional[float] = None,
    verbose: bool = False,
) -> Any:
    """Runs both parties in this process (over loopback TCP, TLS with fresh keys): what
    ``pgc local`` does, to try a computation or measure it.

    Args:
        circuit: a :class:`Circuit`, or anything :func:`compile` opens.
        a: party A's inputs: a dict by name, with or without the ``INPUT_A_`` prefix
            (``{"income": 5000}``); values are ints, bools, floats, lists or NumPy arrays
            for C arrays (``bytes`` for arrays of 8-bit integers), dicts for structs, or
            strings in ``--input``'s notation (``"0xff"``, ``'"kitten"'``, ``"'a'"``), or
            text where a string starts with a letter (``"kitten"``), as in ``--inputs``
            JSON files. For a Bristol circuit, a list of ints.
        b: party B's inputs, the same way.
        parallel: ``"auto"``, ``"none"``, ``"fgp"``, ``"cgp"`` or ``"ipp"`` (as
            ``--parallel``).
        threads: worker threads per party (default: half the cores each).
        protocol: ``"yao"``, ``"gmw"`` or ``"auto"``.
        security: ``"semi-honest"``, ``"malicious"`` or ``"dual-execution"``.
        stat_sec: with ``security="malicious"``, a cheat succeeds with probability at most
            2^-stat_sec (default 40).
        timeout: seconds to wait for each message before giving up.
        insecure_plaintext: plain TCP between the two parties (to compare speeds).
        inputs_of_a: Bristol circuits: which input values (by position) are A's.
        device: where garbling and evaluation run: ``"cpu"`` (the default), ``"gpu"``
            (an NVIDIA GPU: needs the package built with the ``gpu`` feature, the
            driver and NVRTC; semi-honest Yao on the sequential gate stream, so
            ``parallel="none"``; an error naming what is missing otherwise) or
            ``"auto"`` (the GPU where it can take the run, else the CPU). The GPU
            writes the CPU engine's tables bit for bit, so the peer need not know.
        garbling: ``"half-gates"`` (the default, 32 bytes per AND) or
            ``"three-halves"`` (≈ 24.6 bytes per AND for 1.5× the hashing: for runs
            the link limits; semi-honest Yao, sequential, CPU only). Both parties must
            choose the same; it is checked at the handshake.
        rate_limit: cap what each party sends at this many megabits per second (to try
            a WAN on one machine; as ``--rate-limit``).
        latency: delay what each party sends by this many milliseconds (as
            ``--latency``).
        verbose: notes, progress and statistics on stderr, as the command prints them.

    Returns:
        :class:`Outputs` (a dict by output name; arrays as NumPy arrays when NumPy is
        installed) or, for a Bristol circuit, :class:`OutputList`; ``.stats`` holds both
        parties' figures.

    Raises:
        ValueError: an input is missing, unknown, or does not fit its C type.
        ProtocolError: the run failed (a detected cheat, a timeout).
        KeyboardInterrupt: Ctrl-C; the run's connections are closed first.
    """
    c = compile(circuit)
    out, stats = _native.local(
        c._native,
        a,
        b,
        parallel,
        threads,
        timeout,
        not verbose,
        protocol,
        security,
        stat_sec,
        insecure_plaintext,
        list(inputs_of_a) if inputs_of_a is not None else None,
        _Engine(device, garbling, rate_limit, latency),
    )
    return _result(c, out, stats)


def run(
    circuit: Union[Circuit, PathLike],
    party: str,
    *,
    listen: Optional[str] = None,
    connect: Optional[str] = None,
    inputs: Inputs = None,
    peer_key: Optional[str] = None,
    key: Optional[PathLike] = None,
    psk: Optional[PathLike] = None,
    insecure_plaintext: bool = False,
    parallel: str = "auto",
    threads: Optional[int] = None,
    protocol: str = "yao",
    security: str = "semi-honest",
    stat_sec: Optional[int] = None,
    timeout: float = 60.0,
    inputs_of_a: Optional[Sequence[int]] = None,
    device: str = "cpu",
    garbling: str = "half-gates",
    rate_limit: Optional[float] = None,
    latency: Optional[float] = None,
    verbose: bool = False,
) -> Any:
    """Runs one party of a computation with a peer on another machine (``pgc run``).

    Both parties open the same program with the same options and give only their own
    inputs. Party ``"a"`` garbles, ``"b"`` evaluates (under GMW both do the same work).

    The connection is TLS 1.3 with the peer authenticated: give ``peer_key`` (the other
    party's fingerprint from ``pgc keygen``; this party's key is ``key`` or the default
    ``~/.config/pgc/identity.pem``), or ``psk`` (a shared secret file from
    :func:`new_secret` or ``pgc keygen --secret``, copied to both over a safe channel), or
    ``insecure_plaintext=True`` to run unprotected. TLS keeps everything sent confidential
    and unaltered; it does not hide how much is sent or when.

    Args:
        circuit: a :class:`Circuit`, or anything :func:`compile` opens.
        party: ``"a"`` or ``"b"``.
        listen: wait for the peer on ``"HOST:PORT"`` (e.g. ``"0.0.0.0:7000"``) ...
        connect: ... or connect to it at ``"HOST:PORT"`` (retried until ``timeout``).
        inputs: this party's inputs, as for :func:`local`.
        Others: as for :func:`local`.

    Returns:
        The outputs revealed to this party (:class:`Outputs`, or :class:`OutputList` for
        Bristol circuits), with this party's statistics in ``.stats``.

    Raises:
        ValueError: an input is missing, unknown, belongs to the other party, or does not
            fit its C type.
        ProtocolError: the peer left, timed out, runs something else, or was caught
            cheating.
        PgcError: no key given, or other setup problems (the message says which).
        KeyboardInterrupt: Ctrl-C; the connection is closed first.
    """
    c = compile(circuit)
    out, stats = _native.run(
        c._native,
        party,
        listen,
        connect,
        inputs,
        peer_key,
        os.fspath(key) if key is not None else None,
        os.fspath(psk) if psk is not None else None,
        insecure_plaintext,
        parallel,
        threads,
        timeout,
        not verbose,
        protocol,
        security,
        stat_sec,
        list(inputs_of_a) if inputs_of_a is not None else None,
        _Engine(device, garbling, rate_limit, latency),
    )
    return _result(c, out, stats)


def gpu() -> Optional[str]:
    """The GPU that ``device="gpu"`` would use (its name, memory and driver), or ``None``
    where there is none usable; :func:`gpu_problem` says why."""
    usable, text = _native.gpu_probe()
    return text if usable else None


def gpu_problem() -> Optional[str]:
    """Why ``device="gpu"`` cannot run here (no GPU support in this build, no NVIDIA
    driver, no NVRTC, no GPU), or ``None`` where it can."""
    usable, text = _native.gpu_probe()
    return None if usable else text


def new_secret(path: PathLike, *, overwrite: bool = False) -> None:
    """Writes a fresh random 256-bit shared secret to ``path`` (readable by the owner
    only), for ``run(..., psk=path)``; copy the same file to the other party over a safe
    channel. Same as ``pgc keygen --secret``: ``psk`` takes only such a file, the
    directory of ``path`` must exist, and an existing file is replaced only with
    ``overwrite=True``."""
    _native.new_secret(os.fspath(path), overwrite)


# ---------------------------------------------------------------------------------------
# Outputs as Python values

_NUMPY_DTYPES = {
    "_Bool": "bool",
    "bool": "bool",
    "char": "int8",
    "signed char": "int8",
    "unsigned char": "uint8",
    "short": "int16",
    "unsigned short": "uint16",
    "int": "int32",
    "unsigned int": "uint32",
    "unsigned": "uint32",
    "long": "int64",
    "unsigned long": "uint64",
    "long long": "int64",
    "unsigned long long": "uint64",
    "float": "float32",
    "double": "float64",
}
for _bits in (8, 16, 32, 64):
    _NUMPY_DTYPES[f"int{_bits}_t"] = f"int{_bits}"
    _NUMPY_DTYPES[f"uint{_bits}_t"] = f"uint{_bits}"


def _as_array(value: Any, ctype: Optional[str]) -> Any:
    """An array output as a NumPy array of its C element type, where NumPy is installed and
    the elements are numbers (arrays of structs stay lists)."""
    if not isinstance(value, list) or ctype is None or "[" not in ctype:
        return value
    try:
        import numpy
    except ImportError:
        return value
    dtype = _NUMPY_DTYPES.get(ctype.split("[", 1)[0].strip())
    if dtype is None:
        return value
    return numpy.array(value, dtype=dtype)


def _result(c: Circuit, out: Any, stats: Dict[str, Any]) -> Any:
    result = _typed_outputs(c, out, Outputs) if c.typed else _bristol_outputs(out, OutputList)
    result.stats = stats
    return result


def _typed_outputs(c: Circuit, out: Mapping[str, Any], cls: type) -> Any:
    types = {p.name: p.type for p in c.outputs}
    return cls({k: _as_array(v, types.get(k)) for k, v in out.items()})


def _bristol_outputs(out: Sequence[str], cls: type) -> Any:
    return cls(int(v, 16) for v in out)
