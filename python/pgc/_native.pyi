"""Type stubs for the native half of the pgc package (``python/src/lib.rs``). Call the
documented API in ``pgc`` instead; these signatures may change between versions."""

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

class PgcError(Exception):
    """An error from pgc."""

class CompileError(PgcError):
    """A C program or Verilog design that does not compile."""

    file: Optional[str]
    line: Optional[int]
    col: Optional[int]

class ProtocolError(PgcError):
    """A protocol run that failed: the peer, the network, or a detected cheat."""

_Values = Union[Dict[str, Any], Sequence[Any], None]

class NativeCircuit:
    def describe(self) -> Dict[str, Any]: ...
    def and_depth(self) -> Optional[int]: ...
    def eval(self, a: _Values, b: _Values) -> Union[Dict[str, Any], List[str]]: ...
    def save(self, path: str) -> None: ...
    def to_bristol(self, path: str) -> None: ...

def open_circuit(
    spec: str,
    defines: List[str],
    include_dirs: List[str],
    optimize: str,
    entry: Optional[str],
    compact: str,
    verilog_flow: Optional[str],
    use_cache: bool,
    format: Optional[str],
    bit_order: Optional[str],
    quiet: bool,
) -> NativeCircuit: ...
def local(
    circuit: NativeCircuit,
    a: _Values,
    b: _Values,
    parallel: str,
    threads: Optional[int],
    timeout: float,
    quiet: bool,
    protocol: str,
    security: str,
    stat_sec: Optional[int],
    insecure_plaintext: bool,
    inputs_of_a: Optional[List[int]],
    engine: Any,
) -> Tuple[Union[Dict[str, Any], List[str]], Dict[str, Any]]: ...
def run(
    circuit: NativeCircuit,
    party: str,
    listen: Optional[str],
    connect: Optional[str],
    inputs: _Values,
    peer_key: Optional[str],
    key: Optional[str],
    psk: Optional[str],
    insecure_plaintext: bool,
    parallel: str,
    threads: Optional[int],
    timeout: float,
    quiet: bool,
    protocol: str,
    security: str,
    stat_sec: Optional[int],
    inputs_of_a: Optional[List[int]],
    engine: Any,
) -> Tuple[Union[Dict[str, Any], List[str]], Dict[str, Any]]: ...
def new_secret(path: str, overwrite: bool) -> None: ...
def version() -> str: ...
def gpu_probe() -> Tuple[bool, str]: ...
