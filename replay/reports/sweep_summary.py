"""The table `replay sweep` ends with: one row per point, its knobs and its metrics summed over the runs, computed
by DuckDB over the stored rows (a sweep of millions of rows is never loaded)."""

from __future__ import annotations

import duckdb
import polars as pl

from replay.sweeps.results import query_frame, quote, sweep_columns

SUMS = ("overflow_incidents", "repeat_evicted", "emergencies")


def point_summary(con: duckdb.DuckDBPyConnection, sweep_id: str) -> pl.DataFrame:
    """Per point: the knobs that vary (``param_`` dropped), overflow incidents, cost (USD; null when any run has
    no price), cache hit rate (cached / prompt tokens), summaries per 100 requests, repeat evictions (each over the
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
    if "cost_usd" in cols:
        aggs.append(
            f"CASE WHEN count(*) FILTER (WHERE error IS NULL AND cost_usd IS NULL) > 0 THEN NULL "
            f"ELSE sum(cost_usd) {ok} END AS cost_usd"
        )
    if {"cached_tokens", "prompt_tokens"} <= cols:
        aggs.append(f"sum(cached_tokens) {ok} / sum(prompt_tokens) {ok} AS cache_hit_rate")
    if {"summaries", "requests"} <= cols:
        aggs.append(f"100 * sum(summaries) {ok} / sum(requests) {ok} AS summaries_per_100")
    aggs += ["count(error) AS errors", "point_id"]
    order = [f"{c} NULLS LAST" for c in ("cost_usd", "overflow_incidents") if c in cols] + ["point_id"]
    return query_frame(
        con, f"SELECT {', '.join(aggs)} {where} GROUP BY point_id ORDER BY {', '.join(order)}", [sweep_id]
    )
