"""Chart data: each function returns a tidy polars frame that a renderer in replay.reports.plots draws."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import polars as pl

from replay.metrics.coverage import unknown_cost
from replay.model import KINDS
from replay.run_arrays import RunArrays
from replay.sweeps.adapter import policy_fields, split_params
from replay.sweeps.results import query_frame


def prompt_series(
    run: RunArrays, policies: dict[str, tuple[str, dict[str, Any]]], cache: str = "anthropic"
) -> pl.DataFrame:
    """Per request and policy label: prompt tokens, whether a summary fired, overflow; one run."""
    from replay.policies import Budget, make_policy
    from replay.simulator.caches import make_cache
    from replay.simulator.run import simulate_run

    frames = []
    for label, (name, params) in policies.items():
        budget, cache_params, pol = split_params(params, policy_fields(name))
        cols, _ = simulate_run(run, make_policy(name, pol), make_cache(cache, **cache_params), budget=Budget(**budget))
        frames.append(
            pl.DataFrame(
                {
                    "policy": label,
                    "k": cols["k"],
                    "prompt_tokens": cols["prompt_tokens"],
                    "summarised": cols["summarised"].astype(bool),
                    "overflow": cols["overflow"].astype(bool),
                    **{f"tok_{k}": cols[f"tok_{k}"] for k in KINDS},
                }
            )
        )
    return pl.concat(frames)


def composition(series: pl.DataFrame, policy: str) -> pl.DataFrame:
    """Window composition by item kind per request (long format: k, kind, tokens), kinds that ever appear."""
    df = series.filter(pl.col("policy") == policy)
    kinds = [k for k in KINDS if df[f"tok_{k}"].sum() > 0]
    return df.select("k", *[pl.col(f"tok_{k}").alias(k) for k in kinds]).unpivot(
        index="k", variable_name="kind", value_name="tokens"
    )


def param_curve(frame: pl.DataFrame, param: str, metrics: list[str]) -> pl.DataFrame:
    """Aggregate a sweep over runs per value of ``param``: sums of counters, ratios recomputed from sums; cost over
    the runs priced at every point (coverage.cover_of_rows names them)."""
    col = f"param_{param}"
    unknown: pl.Series | list[str] = (
        frame.filter(unknown_cost())["run_id"].unique() if "cost_usd" in frame.columns else []
    )
    sums = [
        pl.col(c).filter(~pl.col("run_id").is_in(list(unknown))).sum() if c == "cost_usd" else pl.col(c).sum()
        for c in (
            "prompt_tokens",
            "cached_tokens",
            "summaries",
            "requests",
            "overflow_incidents",
            "repeat_evicted",
            "cost_usd",
            "near_misses",
            "emergencies",
            "evicted_failures",
        )
        if c in frame.columns
    ]
    out = frame.filter(pl.col("error").is_null()).group_by(col).agg(sums).sort(col)
    out = out.with_columns(
        (pl.col("cached_tokens") / pl.col("prompt_tokens")).alias("cache_hit_rate"),
        (100 * pl.col("summaries") / pl.col("requests")).alias("summaries_per_100"),
    )
    return out.rename({col: param}).select(param, *[m for m in metrics if m in out.columns])


def point_table(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per sweep point: its params and metrics aggregated over runs."""
    params = [c for c in frame.columns if c.startswith("param_")]
    agg = param_curve(
        frame.rename({"point_id": "param_point_id"}),
        "point_id",
        ["cache_hit_rate", "summaries_per_100", "repeat_evicted", "cost_usd", "overflow_incidents"],
    )
    first = frame.group_by("point_id").agg([pl.col(p).first().alias(p[6:]) for p in params])
    return agg.join(first, on="point_id")


def pareto_mask(df: pl.DataFrame, minimise: Sequence[str], maximise: Sequence[str] = ()) -> np.ndarray:
    """True for rows no other row dominates (<= on every minimised, >= on every maximised, < or > on one)."""
    x = np.column_stack(
        [df[c].to_numpy().astype(float) for c in minimise] + [-df[c].to_numpy().astype(float) for c in maximise]
    )
    keep = np.ones(len(x), dtype=bool)
    for i in range(len(x)):
        dominated = (x <= x[i]).all(axis=1) & (x < x[i]).any(axis=1)
        keep[i] = not dominated.any()
    return keep


def repeat_reads(con: duckdb.DuckDBPyConnection, pattern: str | None = None) -> pl.DataFrame:
    """Reads per (run, resource) for resources read at least once: the repeat-read histogram's data."""
    where = "AND (run_id LIKE ?)" if pattern else ""
    return query_frame(
        con,
        f"""SELECT run_id, resource, count(*) AS reads FROM items
        WHERE kind = 'tool_call' AND access = 'read' AND resource IS NOT NULL {where}
        GROUP BY ALL ORDER BY reads DESC""",
        [pattern] if pattern else [],
    )
