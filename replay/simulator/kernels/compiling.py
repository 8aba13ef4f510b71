"""Calling the compiled loop for one policy, and saying so when numba has to compile it first.

numba compiles the loop once per policy code (``replay.simulator.kernels.select``) and keeps it in its on-disk cache
(``replay.jit``: keyed by the compiled sources). The first call for a policy after an install or an upgrade
compiles, which takes a while; that call prints one line on stderr first. Whether the cache holds the loop is
remembered by a marker file beside numba's cache, named by the sources' hash, the entry point and the policy.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numba
from numba import typeof, types
from numba._dispatcher import compute_fingerprint

from replay.jit import source_hash
from replay.policies import policy_class
from replay.policies.dispatch import RECORDED

# seconds to compile one policy's loop, measured on a fresh cache (2 cores, unloaded): per entry point
ESTIMATE_S = {"corpus_kernel": 15, "run_kernel": 12}
_READY: set[tuple[str, int]] = set()
_PENDING: dict[tuple[str, int], subprocess.Popen] = {}  # loops a child process is compiling (compile_in_background)
_SIGNATURES: dict[tuple, tuple] = {}  # (kernel, code, each argument's class and numba fingerprint) -> signature


def ready_dir() -> Path:
    cache_dir = numba.config.CACHE_DIR  # type: ignore[attr-defined]  # numba.config sets its names at run time
    return Path(cache_dir) / "replay-ready"


def marker(entry: str, code: int) -> Path:
    """The file saying that ``entry`` is compiled for policy ``code`` in numba's cache."""
    return ready_dir() / f"{source_hash()}-{entry}-{code}"


def expected(entry: str) -> str:
    """How long a compile of ``entry`` should take: what the last one on this machine took (it is kept beside the
    markers, whatever the sources), else the figure measured on an unloaded 2-core machine."""
    try:
        seconds = float((ready_dir() / f"seconds-{entry}").read_text())
        return f"~{seconds:.0f} s here last time"
    except (OSError, ValueError):
        return f"~{ESTIMATE_S.get(entry, 30)} s on 2 idle cores"


def is_ready(entry: str, code: int) -> bool:
    return (entry, code) in _READY or marker(entry, code).exists()


def call_policy_kernel(kernel, code: int, name: str, *args: Any):
    """``kernel(code, *args)`` for policy ``name``; when that loop is not compiled yet, a line on stderr first
    ("compiling seed_a (once per install, ~31 s here last time)") and the time it took after."""
    entry = kernel.py_func.__name__
    child = _PENDING.pop((entry, code), None)
    if child is not None and child.poll() is None:
        sys.stderr.write(f"waiting for {name}'s loop, compiling in the background ...\n")
        sys.stderr.flush()
        child.wait()  # it has cached the loop (or failed: then it compiles here, saying so below)
    if (entry, code) in _READY:
        return compiled_entry(kernel, code, args)(code, *args)
    cold = not marker(entry, code).exists()
    if cold:
        sys.stderr.write(f"compiling {name} (once per install, {expected(entry)}) ...\n")
        sys.stderr.flush()
    start = time.perf_counter()
    out = compiled_entry(kernel, code, args)(code, *args)
    _READY.add((entry, code))
    if cold:
        took = time.perf_counter() - start
        sys.stderr.write(f"compiled {name} in {took:.0f} s\n")
        try:
            path = marker(entry, code)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
            (path.parent / f"seconds-{entry}").write_text(f"{took:.1f}")
        except OSError:  # a read-only cache: the line is shown again next time, nothing else changes
            pass
    return out


def compiled_entry(kernel, code: int, args: tuple):
    """The machine code of ``kernel`` for exactly these argument types under policy ``code``, loaded from numba's
    on-disk cache or compiled now. Called through the dispatcher, the policy code would be typed as a plain integer
    first: numba would analyse and type the whole loop until its ``literally`` asks for the constant (~0.5 s a
    process), then type the call again on every call (~13 ms); the signature with the constant is given instead.
    The signature is remembered by the arguments' numba fingerprints (what numba's dispatcher keys its own type
    cache on, about a microsecond for the run's tuple where typing it takes half a millisecond)."""
    key = (id(kernel), code, *((type(a), compute_fingerprint(a)) for a in args))
    sig = _SIGNATURES.get(key)
    if sig is None:
        sig = _SIGNATURES[key] = (types.literal(code), *(typeof(a) for a in args))
    cres = kernel.overloads.get(sig)
    return kernel.compile(sig) if cres is None else cres.entry_point


def compile_in_background(names: list[str]) -> subprocess.Popen | None:
    """Start a child process (``replay.simulator.kernels.warm_child``) compiling the per-request loop of those of the
    policies ``names`` not compiled yet, so that a spare core compiles them while this process works on; None when
    every one is compiled or the machine has one core. The child writes numba's on-disk cache, which this process
    then reads."""
    codes = {n: policy_class(n).code for n in names}
    todo = [n for n in names if not is_ready("run_kernel", codes[n]) and ("run_kernel", codes[n]) not in _PENDING]
    if not todo or (os.cpu_count() or 1) < 2:
        return None
    cmd = [sys.executable, "-m", "replay.simulator.kernels.warm_child", *todo]
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _PENDING.update({("run_kernel", codes[n]): child for n in todo})
    return child


def compile_beside_the_fit(name: str) -> None:
    """Before a command that simulates policy ``name`` per request: when the recorded policy's loop, which the
    cache fit runs (``replay.simulator.cache_fit``), is not compiled either, ``name``'s compiles in a child process
    meanwhile (the first call of it waits for that child)."""
    if policy_class(name).code != RECORDED and not is_ready("run_kernel", RECORDED):
        compile_in_background([name])
