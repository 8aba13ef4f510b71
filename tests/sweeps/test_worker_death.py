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


DYING = """
import ctypes
import os

from examples.policies.keep_recent import KeepRecent


class Dies(KeepRecent):
    name = "dies"

    def due(self):
        if self.config.keep == 3:
            if os.environ["DEATH"] == "exit":
                os._exit(3)  # as sys.exit deep in a library, or the OOM killer
            ctypes.string_at(0)  # a segfault
        return super().due()
"""


@pytest.mark.parametrize("death", ["exit", "segfault"])
def test_a_plugin_that_kills_its_worker_fails_only_its_point(sample_db_path, tmp_path, death):
    """`sweep --executor local` with a policy whose decision exits or segfaults on one point: that point is stored
    with an error saying so, every other point runs, and the command ends (it hung forever, then failed whole)."""
    import subprocess
    import sys
    from pathlib import Path

    import duckdb

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "dying.py").write_text(DYING)
    grid = tmp_path / "grid.toml"
    grid.write_text('[sweep]\npolicy = "dying:Dies"\n[grid]\nkeep = [1, 2, 3, 4, 5, 6]\n')
    db = tmp_path / "s.duckdb"
    db.write_bytes(sample_db_path.read_bytes())
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{root}", "DEATH": death}
    cmd = [sys.executable, "-m", "replay", "sweep", str(grid), "--db", str(db), "--executor", "local"]
    res = subprocess.run(
        [*cmd, "--workers", "2", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=600,
    )
    assert res.returncode == 0 and "Traceback" not in res.stdout + res.stderr, res.stdout + res.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT param_keep, any_value(error) FROM sweep_results GROUP BY ALL ORDER BY param_keep"
        ).fetchall()
    assert [r[0] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert [r[0] for r in rows if r[1]] == [3]
    assert "the worker process died while computing this point" in next(r[1] for r in rows if r[1])
