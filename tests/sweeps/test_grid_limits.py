"""Sweeps are sized before they run: a grid past max_points is refused with its count in one line, points are
generated lazily and streamed to the executor, and --workers is capped by the cores and the memory."""

from __future__ import annotations

import tracemalloc
from itertools import islice
from pathlib import Path

import pytest

from replay.errors import ReplayError
from replay.sweeps import executors, from_dict, run_sweep
from replay.sweeps.spec import MAX_POINTS, load_spec, point_id
from replay.worker_limits import cap_workers, usable_cores


def big_grid(size: int = 40, **sweep) -> dict:
    """A grid of size**6 points over seed_a's knobs (40**6: the grid that once took 6 GB in 32 s)."""
    grid = {
        "protect": [8000 + 100 * i for i in range(size)],
        "summary_at": [30000 + 100 * i for i in range(size)],
        "reclaim_floor": [0.01 * (i + 1) for i in range(size)],
        "tail_fraction": [0.005 * (i + 1) for i in range(size)],
        "tail_messages": list(range(size)),
        "summary_tokens": [1000 + 10 * i for i in range(size)],
    }
    return {
        "sweep": {"policy": "seed_a", "runs": "%short%", **sweep},
        "fixed": {"window": 60000, "reserve": 8000},
        "grid": grid,
    }


def peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_40_to_the_6_grid_is_refused_with_its_count_before_any_point_is_built():
    def load():
        with pytest.raises(ReplayError) as exc:
            from_dict(big_grid(), "big.toml")
        text = str(exc.value)
        assert "4,096,000,000 points (40 protect x 40 reclaim_floor" in text and f"limit of {MAX_POINTS:,}" in text
        assert 'narrow the [grid] lists or use mode = "random" (no sweep holds more than 2,147,483,647)' in text
        assert "\n" not in text

    assert peak_bytes(load) < 2**20


def test_max_points_raises_or_lowers_the_limit(tmp_path: Path):
    small = {"sweep": {"policy": "seed_a"}, "grid": {"protect": [1, 2, 3], "summary_at": [40000, 50000]}}
    assert from_dict(small).n_points == 6
    with pytest.raises(ReplayError, match=r"6 points \(3 protect x 2 summary_at\), over the limit of 5 points"):
        from_dict({**small, "sweep": {"policy": "seed_a", "max_points": 5}})
    with pytest.raises(ReplayError, match=r"max_points = 0: expected a whole number, 1 to 2,147,483,647"):
        from_dict({**small, "sweep": {"policy": "seed_a", "max_points": 0}})
    with pytest.raises(
        ReplayError,
        match=r"729,000,000 points .* or raise the limit with max_points = 729000000 in "
        r"\[sweep\] \(or --max-points 729000000\)",
    ):
        from_dict(big_grid(size=30))
    path = tmp_path / "s.toml"
    path.write_text('[sweep]\npolicy = "seed_a"\nmax_points = 5\n[grid]\nprotect = [1, 2, 3]\nsummary_at = [1, 2]\n')
    with pytest.raises(ReplayError, match="over the limit of 5"):
        load_spec(path)
    assert load_spec(path, max_points=6).n_points == 6  # --max-points wins over the file
    with pytest.raises(ReplayError, match="over the limit of 4"):
        load_spec(path, max_points=4)
    random = {
        "sweep": {"policy": "seed_a", "mode": "random", "samples": 50, "max_points": 10},
        "random": {"protect": {"low": 1.0, "high": 9.0}},
    }
    with pytest.raises(ReplayError, match="samples = 50, over the limit of 10 points; draw fewer samples"):
        from_dict(random)
    random["random"] = {"protect": {"low": 1, "high": 9}}  # 9 integers: the sweep has 9 points, within the limit
    assert from_dict(random).n_points == 9


def test_max_points_does_not_change_the_sweep_id():
    small = {"sweep": {"policy": "seed_a"}, "grid": {"protect": [1, 2]}}
    assert from_dict(small).sweep_id == from_dict({**small, "sweep": {"policy": "seed_a", "max_points": 9}}).sweep_id


def test_points_are_generated_lazily_in_the_same_order():
    spec = from_dict(big_grid(size=30, max_points=30**6))
    first = peak_bytes(lambda: list(islice(spec.iter_points(), 1000)))
    assert first < 4 * 2**20  # a thousand points, not four billion
    small = from_dict(big_grid(size=3))
    assert small.n_points == 3**6 == len(small.points()) == len({point_id(p) for p in small.points()})
    first_two = [
        {
            "window": 60000,
            "reserve": 8000,
            "protect": 8000,
            "reclaim_floor": 0.01,
            "summary_at": 30000,
            "summary_tokens": 1000,
            "tail_fraction": 0.005,
            "tail_messages": m,
        }
        for m in (0, 1)
    ]
    assert small.points()[:2] == first_two  # names sorted, the last varying fastest
    random = from_dict(
        {
            "sweep": {"policy": "seed_a", "mode": "random", "samples": 40, "seed": 3},
            "random": {"protect": {"low": 1, "high": 30, "int": True}},
        }
    )
    drawn = random.points()  # 30 values: 40 samples give the 30 distinct points, each once
    assert len(drawn) == len({point_id(p) for p in drawn}) == random.n_points == 30 and drawn == random.points()
    one = from_dict(
        {
            "sweep": {"policy": "seed_a", "mode": "random", "samples": 1_000_000, "max_points": 10**6},
            "random": {"protect": [8000], "summary_at": [60000, 60000]},
        }
    )
    assert one.n_points == 1 and one.points() == [{"protect": 8000, "summary_at": 60000}]  # the space is exhausted


def fake_executor(pulled: list[int], stop_after: int | None = None):
    """An executor that computes nothing (one error-free row per run) and records how many tasks it had pulled."""

    class Fake(executors.Executor):
        def map(self, ctx, tasks):
            for i, (pid, params) in enumerate(tasks, start=1):
                pulled.append(i)
                yield (
                    pid,
                    [
                        {
                            "sweep_id": ctx.sweep_id,
                            "point_id": pid,
                            "session": ctx.session,
                            "run_id": r.run_id,
                            **{f"param_{k}": v for k, v in params.items()},
                            "error": None,
                            "overflow_incidents": 0,
                        }
                        for r in ctx.runs
                    ],
                )
                if stop_after and i == stop_after:
                    return

    return Fake


def test_the_runner_streams_a_huge_grid_and_resumes(sample_db, monkeypatch):
    """A 729-million-point grid (limit raised) runs its first points with memory bounded by the batch: nothing
    iterates the whole grid (validation takes one point per shape of types)."""
    pulled: list[int] = []
    monkeypatch.setitem(executors.EXECUTORS, "serial", fake_executor(pulled, stop_after=50))
    spec = from_dict(big_grid(size=30, max_points=30**6, batch=8))
    out = run_sweep(sample_db, spec, executor="serial", progress=False)
    assert out.computed == 50 and out.points == 50 and pulled[-1] == 50
    stored = sample_db.execute("SELECT count(DISTINCT point_id) FROM sweep_results").fetchone()[0]
    assert stored == 50  # six batches of 8 and the last 2
    pulled.clear()
    again = run_sweep(sample_db, spec, executor="serial", progress=False)
    assert again.skipped == 50 and again.computed == 50  # the next 50, the first 50 skipped
    assert sample_db.execute("SELECT n_points FROM sweeps").fetchone()[0] == 30**6


def test_a_pool_takes_tasks_a_window_at_a_time(monkeypatch):
    """The pool never pulls the whole task stream: at most two windows ahead of the results it yielded."""
    pulled = []

    def tasks():
        for i in range(10_000):
            pulled.append(i)
            yield f"{i:016x}", {}

    class Pool:  # the pool's contract, in this process: imap_unordered over a list of (shard file, task)
        def __init__(self, *args, **kwargs) -> None:
            pass

        def terminate(self) -> None:
            pass

        def join(self) -> None:
            pass

        def imap_unordered(self, fn, chunks, chunksize=1):
            return Results([[(pid, []) for _, (pid, _) in chunk] for chunk in chunks])

    class Results:  # multiprocessing's result iterator: next() with a timeout
        def __init__(self, rows: list) -> None:
            self.rows = iter(rows)

        def next(self, timeout: float | None = None):
            return next(self.rows)

    class Ctx:
        def Pool(self, *args, **kwargs):  # noqa: N802 - multiprocessing's name
            return Pool()

        def Value(self, *args):  # noqa: N802 - multiprocessing's name
            return multiprocessing.Value(*args)

        def set_forkserver_preload(self, names) -> None:
            pass

    import multiprocessing

    monkeypatch.setattr(multiprocessing, "get_context", lambda method: Ctx())
    monkeypatch.setattr(executors, "warm_up", lambda policy: None)
    ctx = executors.Context("sid", "seed_a", "auto", "session", ())
    with executors.Pool(workers=2) as pool:
        results = pool.map(ctx, tasks())
        window = executors.WINDOW * 2
        for n, _ in enumerate(results, start=1):
            assert len(pulled) <= n + 2 * window
    assert len(pulled) == 10_000


def test_workers_are_capped_by_cores_and_memory(monkeypatch):
    import replay.worker_limits as res

    monkeypatch.setattr(res, "usable_cores", lambda: 2)
    monkeypatch.setattr(res, "available_memory", lambda: 3 * 2**30)
    assert res.cap_workers(64, per_worker=200 * 2**20) == (2, "--workers 64: using 2 workers (2 usable cores)")
    assert res.cap_workers(0, per_worker=200 * 2**20) == (2, None)
    assert res.cap_workers(2) == (2, None) and res.cap_workers(1) == (1, None)
    n, why = res.cap_workers(64, per_worker=2 * 2**30)  # 3 GB free, 2 GB a worker: one
    assert n == 1 and why == (
        "--workers 64: using 1 worker (2 usable cores, 3.0 GB memory available at about 2,048 MB per worker)"
    )
    n, why = res.cap_workers(0, per_worker=2 * 2**30)
    assert n == 1 and why.startswith("--workers 0 (all 2 cores): using 1 worker")
    for bad in (-1, -64):
        with pytest.raises(ReplayError, match=f"--workers {bad}: give 0"):
            res.cap_workers(bad)


def test_the_real_machine_caps_too():
    n, why = cap_workers(10**6)
    assert 1 <= n <= usable_cores() and why and "--workers 1000000: using" in why
    assert 1 <= cap_workers(0)[0] <= usable_cores()


def test_the_sweep_command_says_when_workers_are_lowered_and_refuses_negatives(sample_store, tmp_path):
    import subprocess
    import sys

    grid = tmp_path / "g.toml"
    grid.write_text(
        '[sweep]\npolicy = "seed_a"\nruns = "%short-1%"\n[fixed]\nwindow = 60000\n[grid]\nprotect = [8000, 12000]\n'
    )
    cmd = [sys.executable, "-m", "replay", "sweep", str(grid), "--db", str(sample_store), "--out", str(tmp_path)]
    low = subprocess.run([*cmd, "--workers", "-3"], capture_output=True, text=True, timeout=300)
    assert low.returncode == 2 and low.stderr.strip().splitlines() == [
        "error: --workers -3: give 0 (as many as the cores and memory allow) or a positive number of worker processes"
    ]
    many = subprocess.run([*cmd, "--workers", "64"], capture_output=True, text=True, timeout=300)
    assert many.returncode == 0, many.stderr
    assert f"--workers 64: using {min(2, usable_cores())} workers" in many.stderr or usable_cores() == 1


def test_tune_refuses_a_grid_size_past_the_limit_before_laying_it_out(sample_store):
    from typer.testing import CliRunner

    from replay.cli import app

    for points in ("0", "99999999999"):
        res = CliRunner().invoke(
            app,
            [
                "tune",
                "-t",
                "o200k",
                "--window",
                "100000",
                "--reserve",
                "1000",
                "--points",
                points,
                "--db",
                str(sample_store),
            ],
        )
        assert isinstance(res.exception, ReplayError)
        assert str(res.exception).startswith(f"--points {int(points):,}: give 1 to {MAX_POINTS:,}")
