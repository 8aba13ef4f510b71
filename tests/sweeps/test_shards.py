"""Sweeps stream the store's runs in shards: the same rows as one sweep over all runs in memory, and a kill, a change
of shard size or new runs in the store resume to exactly the rows of a fresh sweep."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from replay.sweeps import from_dict, run_sweep, shards
from replay.sweeps.results import sweep_frame
from replay.sweeps.runner import load_sweep_runs
from tests.sweeps.kill import kill_at_commit
from tests.sweeps.test_ray import differing

GRID = {"protect": [4000, 20000], "summary_at": [30000, 50000]}


def spec(name: str, grid: dict = GRID) -> object:
    return from_dict(
        {
            "sweep": {"policy": "seed_a", "runs": "%", "batch": 3, "name": name},
            "fixed": {"window": 60000, "reserve": 8000},
            "grid": grid,
        }
    )


def test_shards_are_bounded_by_items_and_keep_every_run_once(sample_db) -> None:
    plan = shards.plan(sample_db, "%", 500)
    sizes = dict(sample_db.execute("SELECT run_id, count(*) FROM items GROUP BY run_id").fetchall())
    ids = [r for s in plan for r in s.run_ids]
    assert ids == sorted(sizes) and len(plan) == 5
    assert all(s.items == sum(sizes[r] for r in s.run_ids) for s in plan)
    assert all(s.items <= 500 or len(s.run_ids) == 1 for s in plan)


def _drop_sweeps_unless(con, had: set[str]) -> None:
    """The session's corpus store is shared: leave it as it was (no sweep tables unless it had them)."""
    if "sweep_results" not in had:
        con.execute("DROP TABLE IF EXISTS sweep_results; DROP TABLE IF EXISTS sweeps")


def _tables(con) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


@pytest.fixture(scope="module")
def whole(corpus_db):
    """One sweep over load_runs' runs of the corpus, in memory: (its outcome, its rows), what each executor's
    streamed shards must give (computed once for both executors below)."""
    had = _tables(corpus_db)
    try:
        outcome = run_sweep(
            corpus_db, spec("whole"), executor="serial", progress=False, runs=load_sweep_runs(corpus_db, spec("x"))
        )
        return outcome, sweep_frame(corpus_db, outcome.sweep_id)
    finally:
        _drop_sweeps_unless(corpus_db, had)


@pytest.mark.parametrize(("executor", "workers"), [("serial", 1), ("local", 2)])
def test_streamed_shards_give_the_rows_of_all_runs_in_memory(corpus_db, whole, executor, workers) -> None:
    """On the corpus (fitted prompt models, harness profiles): 6+ shards equal one sweep over load_runs' runs."""
    had = _tables(corpus_db)
    whole_outcome, a = whole
    try:
        assert len(shards.plan(corpus_db, "%", 1500)) >= 6
        streamed = run_sweep(
            corpus_db, spec(f"shards-{executor}"), executor=executor, workers=workers, progress=False, shard_items=1500
        )
        assert (streamed.points, streamed.computed, streamed.runs) == (4, 4, whole_outcome.runs)
        b = sweep_frame(corpus_db, streamed.sweep_id)
        assert a.height == b.height == 4 * whole_outcome.runs and differing(a, b) == []
    finally:
        _drop_sweeps_unless(corpus_db, had)


def test_kill_in_a_later_shard_and_resume(sample_db_path: Path, tmp_path: Path) -> None:
    import shutil

    from replay.store import open_store
    from replay.sweeps import load_spec

    db = tmp_path / "k.duckdb"
    shutil.copy(sample_db_path, db)
    grid = tmp_path / "grid.toml"
    grid.write_text(
        '[sweep]\npolicy = "seed_a"\nbatch = 2\n[fixed]\nwindow = 60000\n'
        "[grid]\nprotect = [2000, 4000, 6000, 8000, 10000]\nsummary_at = [20000, 30000]\n"
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
        "--shard-items",
        "500",
    ]
    assert kill_at_commit(cmd, "committed 14/50 (point, shard) pairs") == -signal.SIGKILL
    con = open_store(db)
    s = load_spec(grid)
    before = sweep_frame(con, s.sweep_id)
    assert 14 <= before.height < 10 * 7  # the first shard (one run) whole, the second in part
    outcome = run_sweep(con, s, executor="serial", progress=False, shard_items=500)
    assert (outcome.points, outcome.skipped, outcome.computed) == (10, 0, 10)  # every point had a shard to do
    final = sweep_frame(con, s.sweep_id)
    kept = final.join(before.select("point_id", "run_id", "computed_at"), on=["point_id", "run_id"])
    assert kept.height == before.height and (kept["computed_at"] == kept["computed_at_right"]).all()
    fresh = run_sweep(
        con,
        from_dict({**_doc(grid), "sweep": {**_doc(grid)["sweep"], "name": "fresh"}}),
        executor="serial",
        progress=False,
    )
    assert final.height == 10 * 7 and differing(final, sweep_frame(con, fresh.sweep_id)) == []


def _doc(grid: Path) -> dict:
    import tomllib

    return tomllib.loads(grid.read_text())


def test_new_shard_size_or_new_runs_resume_to_a_fresh_sweeps_rows(sample_db, corpus: Path) -> None:
    from replay.ingest import ingest

    first = run_sweep(sample_db, spec("grow"), executor="serial", progress=False, shard_items=500)
    one = sample_db.execute("SELECT point_id FROM sweep_results ORDER BY point_id LIMIT 1").fetchone()[0]
    sample_db.execute("DELETE FROM sweep_results WHERE point_id = ? AND run_id LIKE '%long-1'", [one])
    # shards of 800 items put long-1 with dense-1: that point's shard is partial, deleted and computed again
    again = run_sweep(sample_db, spec("grow"), executor="serial", progress=False, shard_items=800)
    assert (again.skipped, again.computed) == (3, 1)
    ingest(sample_db, [corpus / "mini-swe-agent"])
    grown = run_sweep(sample_db, spec("grow"), executor="serial", progress=False, shard_items=800)
    assert grown.runs > first.runs and grown.computed == 4
    fresh = run_sweep(sample_db, spec("fresh"), executor="serial", progress=False)
    a, b = sweep_frame(sample_db, grown.sweep_id), sweep_frame(sample_db, fresh.sweep_id)
    assert a.height == 4 * grown.runs and differing(a, b) == []
