"""A finished sweep's Parquet file and the CLI's per-point summary come from DuckDB queries over the stored rows:
they must say what the rows say (checked here against polars over ``sweep_frame``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from replay.reports.sweep_summary import point_summary, price_cover
from replay.sweeps import from_dict, run_sweep
from replay.sweeps.results import sweep_frame


def _sweep(con, tmp_path: Path):
    spec = from_dict(
        {
            "sweep": {"policy": "seed_a", "runs": "%short%", "batch": 2},
            "fixed": {"window": 60000, "reserve": 8000},
            "grid": {"protect": [4000, 20000], "summary_at": [20000, 30000, 40000]},
        }
    )
    return run_sweep(con, spec, executor="serial", out_dir=tmp_path, progress=False)


def test_parquet_holds_the_sweep_rows_in_order(sample_db, tmp_path: Path) -> None:
    out = _sweep(sample_db, tmp_path)
    frame = sweep_frame(sample_db, out.sweep_id)
    written = pl.read_parquet(out.parquet)
    assert frame.height == 6 * out.runs and written.columns == frame.columns
    assert written.equals(frame)
    assert frame.select("point_id", "run_id").equals(frame.select("point_id", "run_id").sort("point_id", "run_id"))


def _expected(frame: pl.DataFrame) -> pl.DataFrame:
    """The summary's definition, written over the whole frame in polars."""
    params = [c for c in frame.columns if c.startswith("param_") and frame[c].n_unique() > 1]
    ok = pl.col("error").is_null()
    aggs = [pl.col(c).first().alias(c[6:]) for c in params]
    aggs += [
        pl.col(c).filter(ok).sum().alias(c)
        for c in ("overflow_incidents", "repeat_evicted", "emergencies")
        if c in frame.columns
    ]
    unknown = frame.filter(ok & (pl.col("cost_usd").is_null() | pl.col("cost_usd").is_nan()))["run_id"].unique()
    aggs.append(pl.col("cost_usd").filter(ok & ~pl.col("run_id").is_in(unknown.implode())).sum().alias("cost_usd"))
    aggs.append(
        (pl.col("cached_tokens").filter(ok).sum() / pl.col("prompt_tokens").filter(ok).sum()).alias("cache_hit_rate")
    )
    aggs.append(
        (100 * pl.col("summaries").filter(ok).sum() / pl.col("requests").filter(ok).sum()).alias("summaries_per_100")
    )
    aggs.append(pl.col("error").is_not_null().sum().alias("errors"))
    return frame.group_by("point_id").agg(aggs).sort(["cost_usd", "overflow_incidents", "point_id"], nulls_last=True)


def test_summary_is_the_rows_summed_per_point(sample_db, tmp_path: Path) -> None:
    out = _sweep(sample_db, tmp_path)
    # one run errors at one point and one run has no price at another: both must show in the summary
    rows = sweep_frame(sample_db, out.sweep_id)
    first, second = rows["point_id"].unique().sort()[:2]
    run = rows["run_id"][0]
    sample_db.execute(
        "UPDATE sweep_results SET error = 'boom' WHERE sweep_id = ? AND point_id = ? AND run_id = ?",
        [out.sweep_id, first, run],
    )
    sample_db.execute(
        "UPDATE sweep_results SET cost_usd = NULL WHERE sweep_id = ? AND point_id = ? AND run_id = ?",
        [out.sweep_id, second, run],
    )
    summary = point_summary(sample_db, out.sweep_id)
    expected = _expected(sweep_frame(sample_db, out.sweep_id))
    assert summary.columns[:2] == ["protect", "summary_at"] and summary.columns[-1] == "point_id"
    assert summary.height == 6
    assert summary.select(expected.columns).equals(expected.cast(summary.select(expected.columns).schema))
    by_point = {r["point_id"]: r for r in summary.to_dicts()}
    # the run unpriced at one point is left out of every point's cost, so the points still compare
    assert by_point[first]["errors"] == 1 and by_point[second]["cost_usd"] is not None
    cover = price_cover(sample_db, out.sweep_id)
    assert cover.priced == out.runs - 1 and cover.total == out.runs and cover.lines()


def test_the_store_works_under_a_memory_limit_and_gets_its_own_back(sample_db, tmp_path: Path) -> None:
    """Without a limit DuckDB keeps every block a sweep writes (up to 80% of RAM) and sorts the export in memory."""
    from replay.store.memory import size_bytes
    from replay.sweeps.runner import DB_MEMORY_MB

    def limit() -> str:
        return sample_db.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]

    sample_db.execute("SET memory_limit = '20GiB'").fetchall()
    seen: list[str] = []
    spec = from_dict(
        {
            "sweep": {"policy": "seed_a", "runs": "%short%", "batch": 1},
            "fixed": {"window": 60000, "reserve": 8000},
            "grid": {"protect": [4000, 20000]},
        }
    )
    run_sweep(sample_db, spec, executor="serial", progress=False, on_commit=lambda *a: seen.append(limit()))
    assert seen and {size_bytes(s) for s in seen} == {DB_MEMORY_MB * 2**20}
    assert limit() == "20.0 GiB"
