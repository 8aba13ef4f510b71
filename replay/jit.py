"""The one decorator compiled code uses: numba's njit with an on-disk cache keyed by the compiled sources.

Numba checks only a function's own file when it reuses a cached compilation, so a kernel that calls policy code in
other modules could run stale machine code after those modules changed. The cache directory therefore carries a
hash of every source file that compiled code lives in (``replay/jit_sources``); set ``NUMBA_CACHE_DIR`` to choose
the place yourself.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from functools import cache
from pathlib import Path

import numba
from numba import njit

PACKAGE = Path(__file__).resolve().parent
COMPILED_SOURCES = ("policies", "simulator/kernels")


@cache
def source_hash() -> str:
    """Hash of every source file compiled code lives in and of the folder they are in (what the on-disk cache is
    keyed by): numba finds a cached compilation by its source file's path, so a second checkout of the same code
    compiles again, and must say so (``replay.simulator.kernels.compiling``'s markers carry this hash)."""
    digest = hashlib.sha256(str(PACKAGE).encode())
    for folder in COMPILED_SOURCES:
        for path in sorted((PACKAGE / folder).glob("*.py")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _writable(folder: Path) -> bool:
    """Whether files can be made in ``folder`` (made if missing)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def _cache_dir() -> str:
    """$XDG_CACHE_HOME (or ~/.cache)/replay/numba/<sources hash>; where that cannot be written (a read-only home),
    the same under the system's temporary folder, said once on stderr."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    first = base / "replay" / "numba" / source_hash()
    if _writable(first):
        return str(first)
    fallback = Path(tempfile.gettempdir()) / f"replay-numba-{os.getuid()}" / source_hash()
    sys.stderr.write(
        f"note: {first} cannot be written; compiled code is cached in {fallback} instead "
        "(set NUMBA_CACHE_DIR to choose)\n"
    )
    return str(fallback)


if not os.environ.get("NUMBA_CACHE_DIR"):
    numba.config.CACHE_DIR = _cache_dir()  # type: ignore[attr-defined]  # numba.config sets its names at run time


def compiled(fn=None, *, borrowed: bool = False, internal: bool = False, **options):
    """``njit(cache=True)``; ``@compiled``, ``@compiled(inline="always")``, ``@compiled(internal=True)`` or
    ``@compiled(borrowed=True)``.

    ``internal``: called from compiled code only, so numba makes it no entry point from Python (no CPython or C
    wrapper: unboxing a Run's ~40 arrays and boxing what it returns is code numba would type, optimise and emit
    for nothing; calling it from Python fails).

    ``borrowed``: compiled without reference counting (numba's NRT off), so the arrays it is passed, and those of
    the structs it is passed, are borrowed for the call. Numba otherwise increfs and decrefs every one of them on
    each call and at every inlined helper taking them (a Run is some 25 arrays: ~50 atomic operations), which was
    most of the per-request cost of the policies. Such a function must not allocate an array, return one or keep
    one beyond the call (compilation fails on an allocation); what it calls is compiled as that callee says. It is
    called from compiled code only: numba makes it no entry point from Python (unboxing its arguments, a Run's ~40
    arrays, there was a tenth of a policy's compile time)."""
    options["_nrt"] = not borrowed  # explicit: numba's callees otherwise inherit it from their caller
    if borrowed or internal:
        options.update(no_cpython_wrapper=True, no_cfunc_wrapper=True)
    if fn is None:
        return lambda f: njit(cache=True, **options)(f)
    return njit(cache=True, **options)(fn)
