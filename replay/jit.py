"""The one decorator compiled code uses: numba's njit with an on-disk cache keyed by the compiled sources.

Numba checks only a function's own file when it reuses a cached compilation, so a kernel that calls policy code in
other modules could run stale machine code after those modules changed. The cache directory therefore carries a
hash of every source file that compiled code lives in (``replay/jit_sources``); set ``NUMBA_CACHE_DIR`` to choose
the place yourself.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba
from numba import njit

PACKAGE = Path(__file__).resolve().parent
COMPILED_SOURCES = ("policies", "simulator/kernels")


def _source_hash() -> str:
    digest = hashlib.sha256()
    for folder in COMPILED_SOURCES:
        for path in sorted((PACKAGE / folder).glob("*.py")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(base) / "replay" / "numba" / _source_hash())


if not os.environ.get("NUMBA_CACHE_DIR"):
    numba.config.CACHE_DIR = _cache_dir()


def compiled(fn=None, **options):
    """``njit(cache=True)``; ``@compiled`` or ``@compiled(inline="always")``."""
    if fn is None:
        return lambda f: njit(cache=True, **options)(f)
    return njit(cache=True, **options)(fn)
