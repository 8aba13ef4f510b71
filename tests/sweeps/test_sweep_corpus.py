"""A 1,000-point sweep over the whole corpus on the process pool: killed midway, resumed, nothing recomputed."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from tests.sweeps.kill import kill_at_commit

GRID = """[sweep]
policy = "seed_a"
batch = 50
[fixed]
window = 130000
reserve = 24576
[grid]
protect = [2000, 4000, 8000, 12000, 16000, 24000, 32000, 43333, 50000, 60000]
summary_at = [40000, 50000, 60000, 70000, 80000, 90000, 100000, 110000, 120000, 125000]
reclaim_floor = [0.0, 0.02, 0.04, 0.0625, 0.08, 0.1, 0.125, 0.15, 0.2, 0.25]
"""


def test_thousand_points_on_the_corpus_resume_after_kill(corpus_db_path: Path, tmp_path: Path) -> None:
    import shutil

    from replay.simulator.load import run_ids
    from replay.store import open_store
    from replay.sweeps import load_spec, run_sweep
    from replay.sweeps.results import sweep_frame

    db = tmp_path / "corpus.duckdb"
    shutil.copy(corpus_db_path, db)  # the whole corpus, ingested once per session
    con = open_store(db)
    n_runs = len(run_ids(con))
    con.close()
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID)
    cmd = [sys.executable, "-m", "replay", "sweep", str(grid), "--db", str(db), "--executor", "local"]
    assert kill_at_commit(cmd, "committed 200/") == -signal.SIGKILL, "the sweep finished before it could be killed"

    con = open_store(db)
    spec = load_spec(grid)
    before = sweep_frame(con, spec.sweep_id)
    done = before["point_id"].n_unique()
    assert 200 <= done < 1000 and before.height == done * n_runs
    outcome = run_sweep(con, spec, executor="local", progress=False)
    assert (outcome.points, outcome.skipped, outcome.computed, outcome.errors) == (1000, done, 1000 - done, 0)
    final = sweep_frame(con, spec.sweep_id)
    assert final.height == 1000 * n_runs and final["point_id"].n_unique() == 1000
    kept = final.join(before.select("point_id", "run_id", "computed_at"), on=["point_id", "run_id"])
    assert kept.height == before.height and (kept["computed_at"] == kept["computed_at_right"]).all()
