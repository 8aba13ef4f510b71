"""A pool worker that dies (a policy that exits, a crash in compiled code, the OOM killer), in a point or between
points, fails what it held with a message and the rest of the sweep runs; before, the pool started a new worker and
waited for the lost point forever, and then a death between points failed the whole sweep."""

from __future__ import annotations

import multiprocessing as mp
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from replay.errors import ReplayError
from replay.sweeps import executors
from replay.sweeps.executors import Context, Pool, _init, _WorkerDied


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


def test_a_dead_worker_stops_the_pool_instead_of_hanging():
    ex = _pool(2)
    with pytest.raises(_WorkerDied):
        list(ex._watched(ex.pool.imap_unordered(_point, [[0, 1], [2, 3], [4, 5]])))
    assert ex.pool is None and ex.deaths == 1  # stopped: no worker left behind, the death counted
    ex.close()


def test_past_the_deaths_allowed_the_sweep_fails_with_one_message():
    ex = _pool(2)
    ex.deaths = executors.MAX_DEATHS
    with pytest.raises(ReplayError, match="worker processes died 9 times"):
        list(ex._watched(ex.pool.imap_unordered(_point, [[0, 1], [2, 3], [4, 5]])))
    assert ex.pool is None and ex.folder is None


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


def _die_once(flag: str) -> None:
    """Unpickled in a pool worker: the first time (the flag file is created), the worker is killed."""
    try:
        os.close(os.open(flag, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return None
    os._exit(9)


class _Trap:
    def __init__(self, flag: str) -> None:
        self.flag = flag

    def __reduce__(self) -> tuple:
        return _die_once, (self.flag,)


@dataclass(frozen=True)
class _TrappedContext(Context):
    """A shard whose loading kills the first worker that loads it: a death between points (no point is computing),
    as the system killing a worker for memory while it reads its shard."""

    trap: object = None


def test_a_worker_dying_between_points_fails_only_what_it_held(sample_store: Path, tmp_path: Path):
    from replay.simulator.load import load_runs
    from replay.store import open_store

    con = open_store(sample_store, read_only=True)
    runs = tuple(load_runs(con))
    con.close()
    ctx = _TrappedContext("sw", "full", "auto", "s1", runs, trap=_Trap(str(tmp_path / "died")))
    tasks = [(f"p{k}", {}) for k in range(6)]
    ex = Pool(2)
    try:
        results = list(ex.map(ctx, tasks))
    finally:
        ex.close()
    assert (tmp_path / "died").exists() and ex.deaths == 1
    assert sorted(pid for pid, _ in results) == [f"p{k}" for k in range(6)]  # every point once, none lost
    errors = {
        pid: {r["error"] for r in rows} if isinstance(rows, list) else set(rows["error"]) for pid, rows in results
    }
    failed = [pid for pid, e in errors.items() if e != {None}]
    assert len(failed) == 1  # one point a worker: the dead worker held one
    (message,) = errors[failed[0]]
    assert "died between points" in message and "the other points ran" in message
