#!/usr/bin/env bash
# The Python API reference, from the package's docstrings, as HTML in docs/python/
# (pdoc). Builds the package into python/.venv first, as scripts/test.sh does.
#
#   bash scripts/python_docs.sh && xdg-open docs/python/pgc.html
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv python/.venv
# shellcheck disable=SC1091
. python/.venv/bin/activate
python -m pip install --quiet --disable-pip-version-check 'maturin>=1.9.4,<2' pdoc
(cd python && maturin develop --quiet)
pdoc --docformat google -o docs/python pgc
echo "wrote docs/python/pgc.html"
