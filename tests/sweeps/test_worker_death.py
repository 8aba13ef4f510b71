"""A pool worker that dies mid-point (a policy that exits, a crash in compiled code, the OOM killer) fails the sweep
with one message; before, the pool started a new worker and waited for the lost point forever."""

from __future__ import annotations

import multiprocessing as mp
import os
import time

import pytest

from replay.errors import ReplayError
from replay.sweeps.executors import Pool, _init


def _point(chunk: list[int]) -> list[int]:
    if 3 in chunk:
        os._exit(7)  # as a policy calling sys.exit in a worker, or a segfault, ends the process
    return chunk


def _pool(n: int) -> Pool:
    ex = Pool(n)
    context = mp.get_context("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")
    ex.started, ex.size = context.Value("i", 0), n
    ex.pool = context.Pool(n, initializer=_init, initargs=(ex.started,))
    return ex


def test_a_dead_worker_fails_the_sweep_instead_of_hanging():
    ex = _pool(2)
    start = time.monotonic()
    with pytest.raises(ReplayError, match="worker process died"):
        list(ex._watched(ex.pool.imap_unordered(_point, [[0, 1], [2, 3], [4, 5]])))
    assert time.monotonic() - start < 60 and ex.pool is None  # closed: no worker left behind


def test_healthy_workers_give_every_result():
    ex = _pool(2)
    try:
        assert sorted(ex._watched(ex.pool.imap_unordered(_point, [[0, 1], [2], [4, 5]]))) == [0, 1, 2, 4, 5]
    finally:
        ex.close()
