"""Shared fixtures: the repository root, the externally authored circuits, a fresh cache."""

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def shared_circuits() -> Path:
    env = os.environ.get("PGC_SHARED_CIRCUITS")
    return Path(env) if env else ROOT.parent / "shared" / "circuits"


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def vectors():
    path = shared_circuits() / "vectors.json"
    if not path.exists():
        pytest.fail(f"{path} not found (set PGC_SHARED_CIRCUITS)")
    return shared_circuits(), json.loads(path.read_text())["circuits"]


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """Each test session compiles into its own cache (never the user's)."""
    cache = tmp_path_factory.getbasetemp() / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
