"""Sweeps: points, validation, parallel equals serial, resume, Ray, kill-and-resume."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from replay.errors import ReplayError
from replay.sweeps import from_dict, run_sweep
from replay.sweeps.results import sweep_frame
from tests.sweeps.kill import kill_at_commit

SHORT = "%short%"


def spec(grid: dict, **sweep) -> object:
    return from_dict(
        {
            "sweep": {"policy": "seed_a", "runs": SHORT, "batch": 2, **sweep},
            "fixed": {"window": 60000, "reserve": 8000},
            "grid": grid,
        }
    )


def test_grid_is_cartesian_and_ids_stable() -> None:
    s = spec({"protect": [12000, 20000], "summary_at": [30000, 40000, 50000]})
    assert len(s.points()) == 6
    assert s.sweep_id == spec({"summary_at": [30000, 40000, 50000], "protect": [12000, 20000]}).sweep_id


def test_random_search_is_seeded_and_bounded() -> None:
    doc = {
        "sweep": {"policy": "seed_a", "mode": "random", "samples": 20, "seed": 3},
        "random": {
            "summary_at": {"low": 20000, "high": 90000},
            "tail_fraction": {"low": 0.05, "high": 0.3},
            "wording": ["[cleared {tool}]", "[old output of {tool} {call_id} removed]"],
        },
    }
    a, b = from_dict(doc).points(), from_dict(doc).points()
    assert a == b and len(a) == 20
    assert all(20000 <= p["summary_at"] <= 90000 and isinstance(p["summary_at"], int) for p in a)
    assert {p["wording"] for p in a} == set(doc["random"]["wording"])


def test_unknown_parameter_fails_before_work(sample_db) -> None:
    with pytest.raises(ReplayError, match="unknown parameter"):
        run_sweep(sample_db, spec({"no_such_knob": [1, 2]}), executor="serial", progress=False)
    with pytest.raises(ReplayError, match="unknown keys"):
        from_dict({"sweep": {"policy": "seed_a", "colour": 1}, "grid": {}})


def test_pool_equals_serial_and_rerun_skips(sample_db, tmp_path: Path) -> None:
    grid = {"protect": [4000, 20000], "summary_at": [20000, 40000]}
    serial = run_sweep(sample_db, spec(grid, name="a"), executor="serial", progress=False)
    pooled = run_sweep(sample_db, spec(grid, name="b"), executor="local", workers=2, out_dir=tmp_path, progress=False)
    cols = ["point_id", "run_id", "prompt_tokens", "cached_tokens", "summaries", "overflow_incidents"]
    a = sweep_frame(sample_db, serial.sweep_id).select(cols).sort(["point_id", "run_id"])
    b = sweep_frame(sample_db, pooled.sweep_id).select(cols).sort(["point_id", "run_id"])
    assert a.height == 4 * 2 and a.equals(b)
    assert pooled.parquet and pooled.parquet.exists()
    again = run_sweep(sample_db, spec(grid, name="a"), executor="local", progress=False)
    assert (again.skipped, again.computed) == (4, 0)
    frame = sweep_frame(sample_db, serial.sweep_id)
    assert {"param_protect", "param_summary_at", "param_window", "config"} <= set(frame.columns)
    assert '"protect": 4000' in frame["config"][0] or '"protect": 20000' in frame["config"][0]


def test_ray_local_mode(sample_db, monkeypatch) -> None:
    pytest.importorskip("ray", reason="ray is not installed (pip install 'replay[ray]')")
    monkeypatch.setenv("REPLAY_RAY_LOCAL", "1")
    grid = {"protect": [4000, 20000]}
    ray_out = run_sweep(sample_db, spec(grid, name="ray"), executor="ray", progress=False, workers=1)
    ser_out = run_sweep(sample_db, spec(grid, name="ser"), executor="serial", progress=False)
    cols = ["point_id", "run_id", "prompt_tokens", "cached_tokens"]
    assert (
        sweep_frame(sample_db, ray_out.sweep_id)
        .select(cols)
        .sort(cols[:2])
        .equals(sweep_frame(sample_db, ser_out.sweep_id).select(cols).sort(cols[:2]))
    )


def test_kill_and_resume(sample_db_path: Path, tmp_path: Path) -> None:
    import shutil

    db = tmp_path / "k.duckdb"
    shutil.copy(sample_db_path, db)
    grid = tmp_path / "grid.toml"
    grid.write_text(
        '[sweep]\npolicy = "seed_a"\nruns = "%short%"\nbatch = 2\n[fixed]\nwindow = 60000\n'
        "[grid]\nprotect = [2000, 4000, 6000, 8000, 10000, 12000, 14000, 16000, 18000, 20000]\n"
        "summary_at = [20000, 25000, 30000, 35000]\n"
    )
    cmd = [
        sys.executable,
        "-m",
        "replay",
        "sweep",
        str(grid),
        "--db",
        str(db),
        "--executor",
        "serial",
        "--out",
        str(tmp_path / "out"),
    ]
    assert kill_at_commit(cmd, "committed 4/") == -signal.SIGKILL, "the sweep finished before it could be killed"
    from replay.store import open_store
    from replay.sweeps import load_spec

    con = open_store(db)
    first = sweep_frame(con, load_spec(grid).sweep_id)
    done_before = first["point_id"].n_unique()
    assert 4 <= done_before < 40
    outcome = run_sweep(con, load_spec(grid), executor="serial", progress=False)
    assert outcome.skipped == done_before and outcome.computed == 40 - done_before
    final = sweep_frame(con, outcome.sweep_id)
    assert final["point_id"].n_unique() == 40 and final.height == 40 * 2
    kept = final.join(first.select("point_id", "run_id", "session", "computed_at"), on=["point_id", "run_id"])
    assert kept.height == first.height
    assert (kept["session"] == kept["session_right"]).all() and (kept["computed_at"] == kept["computed_at_right"]).all()


def test_points_are_recomputed_when_runs_are_added(sample_db, corpus: Path) -> None:
    from replay.ingest import ingest

    s = spec({"protect": [4000, 8000]}, name="grow", runs="%")
    first = run_sweep(sample_db, s, executor="serial", progress=False)
    ingest(sample_db, [corpus / "mini-swe-agent"])
    again = run_sweep(sample_db, s, executor="serial", progress=False)
    assert again.runs > first.runs and (again.skipped, again.computed) == (0, 2)
    frame = sweep_frame(sample_db, again.sweep_id)
    assert frame.height == 2 * again.runs and frame.select("point_id", "run_id").is_unique().all()


def test_local_runs_a_small_shard_here_and_a_big_one_on_the_pool(sample_db, monkeypatch) -> None:
    """Starting the pool costs seconds: a shard whose points come to little work runs in this process (the same
    rows), one over ``IN_PROCESS`` request-configurations starts the pool."""
    from replay.sweeps import executors

    started: list[int] = []
    real_start = executors.Pool._start

    def start(self, policy: str, n: int):
        started.append(n)
        return real_start(self, policy, n)

    monkeypatch.setattr(executors.Pool, "_start", start)
    grid = {"protect": [4000, 20000], "summary_at": [20000, 40000]}
    serial = run_sweep(sample_db, spec(grid, name="s"), executor="serial", progress=False)
    shard_requests = sweep_frame(sample_db, serial.sweep_id)["requests"].sum() // 4  # one point's
    monkeypatch.setattr(executors, "IN_PROCESS", 4 * shard_requests)  # the four points exactly fit
    small = run_sweep(sample_db, spec(grid, name="small"), executor="local", workers=2, progress=False)
    assert started == []
    monkeypatch.setattr(executors, "IN_PROCESS", 4 * shard_requests - 1)
    big = run_sweep(sample_db, spec(grid, name="big"), executor="local", workers=2, progress=False)
    assert started == [2]
    cols = ["point_id", "run_id", "prompt_tokens", "cached_tokens", "summaries", "overflow_incidents"]
    frames = [
        sweep_frame(sample_db, o.sweep_id).select(cols).sort(["point_id", "run_id"]) for o in (serial, small, big)
    ]
    assert frames[0].height == 8 and frames[0].equals(frames[1]) and frames[0].equals(frames[2])
    # a policy written in Python is kept on the pool however small: its code may exit or crash its process
    monkeypatch.setattr(executors, "IN_PROCESS", 1 << 62)
    python = spec({"keep": [1, 2]}, name="py", policy="examples.policies.keep_recent:KeepRecent")
    run_sweep(sample_db, python, executor="local", workers=2, progress=False)
    assert started == [2, 2]
