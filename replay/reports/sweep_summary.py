"""The table `replay sweep` ends with: one row per point, its knobs and its metrics summed over the runs."""

from __future__ import annotations

import polars as pl

SUMS = ("overflow_incidents", "repeat_evicted", "emergencies")


def point_summary(frame: pl.DataFrame) -> pl.DataFrame:
    """Per point: the knobs that vary (``param_`` dropped), overflow incidents, cost (USD; null when any run has
    no price), cache hit rate (cached / prompt tokens), summaries per 100 requests, repeat evictions, runs with an
    error; cheapest first."""
    if frame.is_empty():
        return frame
    params = [c for c in frame.columns if c.startswith("param_") and frame[c].n_unique() > 1]
    ok = frame.filter(pl.col("error").is_null()) if "error" in frame.columns else frame
    aggs = [pl.col(c).first().alias(c[6:]) for c in params]
    aggs += [pl.col(c).sum().alias(c) for c in SUMS if c in ok.columns]
    if "cost_usd" in ok.columns:
        aggs.append(pl.when(pl.col("cost_usd").is_null().any()).then(None).otherwise(pl.col("cost_usd").sum())
                    .alias("cost_usd"))
    if {"cached_tokens", "prompt_tokens"} <= set(ok.columns):
        aggs.append((pl.col("cached_tokens").sum() / pl.col("prompt_tokens").sum()).alias("cache_hit_rate"))
    if {"summaries", "requests"} <= set(ok.columns):
        aggs.append((100 * pl.col("summaries").sum() / pl.col("requests").sum()).alias("summaries_per_100"))
    out = ok.group_by("point_id", maintain_order=True).agg(aggs)
    if "error" in frame.columns:
        errors = frame.group_by("point_id").agg(pl.col("error").is_not_null().sum().alias("errors"))
        out = out.join(errors, on="point_id", how="left")
    order = [c for c in ("cost_usd", "overflow_incidents") if c in out.columns]
    out = out.sort(order, nulls_last=True) if order else out
    return out.select([c[6:] for c in params] + [c for c in out.columns if c != "point_id" and
                                                  c not in {p[6:] for p in params}] + ["point_id"])
