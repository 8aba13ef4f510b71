"""The table `replay sweep` ends with: one row per point, its knobs and its metrics summed over the runs, computed
by DuckDB over the stored rows (a sweep of millions of rows is never loaded)."""

from __future__ import annotations

import duckdb
import polars as pl

from replay.metrics.coverage import CostCover, cover_of
from replay.sweeps.results import query_frame, quote, sweep_columns

# the runs whose cost is known wherever they ran without an error (one parameter: the sweep id)
PRICED = (
    "SELECT run_id FROM sweep_results WHERE sweep_id = ? GROUP BY run_id HAVING count(*) FILTER "
    "(WHERE error IS NULL AND (cost_usd IS NULL OR isnan(cost_usd))) = 0"
)
SUMS = ("overflow_incidents", "repeat_evicted", "emergencies")


def point_summary(con: duckdb.DuckDBPyConnection, sweep_id: str) -> pl.DataFrame:
    """Per point: the knobs that vary (``param_`` dropped), overflow incidents, cost (USD over the runs priced at
    every point, so points compare; :func:`price_cover` says which those are; null when none is), cache hit rate
    (cached / prompt tokens), summaries per 100 requests, repeat evictions (each over the
    runs without an error), runs with an error; cheapest first."""
    cols = set(sweep_columns(con, sweep_id))
    where = "FROM sweep_results WHERE sweep_id = ?"
    candidates = sorted(c for c in cols if c.startswith("param_"))
    params: list[str] = []
    if candidates:  # a knob varies when it takes two values (null counts as one)
        distinct = con.execute(
            "SELECT "
            + ", ".join(f"count(DISTINCT {quote(c)}) + (count(*) > count({quote(c)}))::INT" for c in candidates)
            + f" {where}",
            [sweep_id],
        ).fetchone()
        params = [c for c, n in zip(candidates, distinct or (), strict=True) if n > 1]
    ok = "FILTER (WHERE error IS NULL)"
    aggs = [f"any_value({quote(c)}) AS {quote(c[6:])}" for c in params]
    aggs += [f"sum({c}) {ok} AS {c}" for c in SUMS if c in cols]
    args = [sweep_id]
    if "cost_usd" in cols:
        aggs.append(f"sum(cost_usd) FILTER (WHERE error IS NULL AND run_id IN ({PRICED})) AS cost_usd")
        args.insert(0, sweep_id)
    if {"cached_tokens", "prompt_tokens"} <= cols:
        aggs.append(f"sum(cached_tokens) {ok} / sum(prompt_tokens) {ok} AS cache_hit_rate")
    if {"summaries", "requests"} <= cols:
        aggs.append(f"100 * sum(summaries) {ok} / sum(requests) {ok} AS summaries_per_100")
    aggs += ["count(error) AS errors", "point_id"]
    order = [f"{c} NULLS LAST" for c in ("cost_usd", "overflow_incidents") if c in cols] + ["point_id"]
    return query_frame(con, f"SELECT {', '.join(aggs)} {where} GROUP BY point_id ORDER BY {', '.join(order)}", args)


def price_cover(con: duckdb.DuckDBPyConnection, sweep_id: str) -> CostCover:
    """The runs of a sweep whose cost is known at every point (the ones :func:`point_summary` sums), and the
    others by model."""
    cols = set(sweep_columns(con, sweep_id))
    if "cost_usd" not in cols:
        return CostCover(0, 0)
    model = "model" if "model" in cols else "NULL"
    rows = con.execute(
        f"SELECT run_id, any_value({model}), run_id IN ({PRICED}) FROM sweep_results WHERE sweep_id = ? "
        "GROUP BY run_id",
        [sweep_id, sweep_id],
    ).fetchall()
    return cover_of((m, 0.0 if priced else None) for _, m, priced in rows)
