#!/usr/bin/env bash
# The whole test suite: the Rust workspace, then the Python package (built into a virtual
# environment under python/.venv and tested with pytest). What the README and .ci/run call.
#
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh --python   # only the Python package's tests
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" != "--python" ]; then
  cargo test --workspace
fi

# A virtual environment of its own: the package, maturin to build it, pytest and NumPy.
python3 -m venv python/.venv
# shellcheck disable=SC1091
. python/.venv/bin/activate
python -m pip install --quiet --disable-pip-version-check 'maturin>=1.9.4,<2' pytest numpy
# Built in place (a debug build of the extension, sharing target/ with cargo test).
(cd python && maturin develop --quiet)
python -m pytest -q python/tests
