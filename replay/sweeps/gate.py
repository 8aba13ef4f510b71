"""The regression gate: simulate baseline and candidate over the same runs; per-metric and per-run deltas.

A metric regresses when it worsens (in its bad direction) by more than its tolerance: relative to the
baseline for counts and costs (0.05 = 5%), absolute for rates (0.01 = one point of hit rate).

``uncached_tokens`` here is every prompt token not read from the cache, cache writes included (prompt - cached):
the simulator's own ``uncached_tokens`` column leaves writes out, which makes an Anthropic-cached run (every token
not read is written) look almost free of uncached tokens and a gate across cache models meaningless.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import polars as pl

from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.sweeps.adapter import resolve
from replay.sweeps.point_rows import evaluate_runs
from replay.sweeps.policy_file import PolicyFile

# metric -> (worse when it goes "up" or "down", tolerance kind, default tolerance)
METRICS: dict[str, tuple[str, str, float]] = {
    "overflow_incidents": ("up", "rel", 0.0),
    "evicted_failures": ("up", "rel", 0.0),
    "repeat_evicted": ("up", "rel", 0.05),
    "repeat_evicted_tokens": ("up", "rel", 0.05),
    "summaries_per_100": ("up", "rel", 0.10),
    "emergencies": ("up", "rel", 0.0),
    "cache_hit_rate": ("down", "abs", 0.01),
    "cost_usd": ("up", "rel", 0.05),
    "uncached_tokens": ("up", "rel", 0.10),
}
RATES = {"cache_hit_rate", "summaries_per_100"}
PER_RUN = ("overflow_incidents", "evicted_failures", "repeat_evicted")


@dataclass(frozen=True)
class CheckResult:
    metrics: pl.DataFrame  # metric, baseline, candidate, delta, tolerance, regressed
    runs: pl.DataFrame  # run_id, metric, baseline, candidate, delta, regressed

    @property
    def regressed(self) -> bool:
        return bool(self.metrics["regressed"].any() or self.runs["regressed"].any())


def worsening(metric: str, base: float, cand: float) -> float:
    direction, kind, _ = METRICS[metric]
    w = cand - base if direction == "up" else base - cand
    return w / max(abs(base), 1.0) if kind == "rel" else w


def simulate_all(pf: PolicyFile, runs: list, pricing: Pricing = DEFAULT_PRICING) -> pl.DataFrame:
    return evaluate_runs(runs, resolve(pf.name, pf.params, pf.cache, pricing))


def _sum(df: pl.DataFrame, column: str) -> float:
    """A numeric column's total (polars types a sum as any Python value)."""
    return cast(float, df[column].sum())


def _aggregate(df: pl.DataFrame, metric: str) -> float:
    if metric == "cache_hit_rate":
        return float(_sum(df, "cached_tokens") / max(_sum(df, "prompt_tokens"), 1))
    if metric == "uncached_tokens":  # not read from the cache, whatever the cache model (writes included)
        return float(_sum(df, "prompt_tokens") - _sum(df, "cached_tokens"))
    if metric == "summaries_per_100":
        return float(100 * _sum(df, "summaries") / max(_sum(df, "requests"), 1))
    return float(_sum(df, metric))


def compare(base: pl.DataFrame, cand: pl.DataFrame, tolerances: dict[str, float] | None = None) -> CheckResult:
    """Deltas of every gated metric, overall and per run."""
    tol = {m: spec[2] for m, spec in METRICS.items()} | (tolerances or {})
    rows = []
    for m in METRICS:
        if m not in base.columns or m not in cand.columns:
            continue
        b, c = _aggregate(base, m), _aggregate(cand, m)
        rows.append(
            {
                "metric": m,
                "baseline": b,
                "candidate": c,
                "delta": c - b,
                "tolerance": tol[m],
                "worse_by": worsening(m, b, c),
                "regressed": worsening(m, b, c) > tol[m] + 1e-12,
            }
        )
    joined = base.join(cand, on="run_id", suffix="_cand")
    per_run = []
    for m in PER_RUN:
        for rid, b, c in joined.select("run_id", m, f"{m}_cand").iter_rows():
            w = worsening(m, float(b), float(c))
            per_run.append(
                {
                    "run_id": rid,
                    "metric": m,
                    "baseline": float(b),
                    "candidate": float(c),
                    "delta": float(c - b),
                    "regressed": m != "repeat_evicted" and w > tol[m] + 1e-12,
                }
            )
    return CheckResult(
        pl.DataFrame(rows),
        pl.DataFrame(
            per_run,
            schema={
                "run_id": pl.Utf8,
                "metric": pl.Utf8,
                "baseline": pl.Float64,
                "candidate": pl.Float64,
                "delta": pl.Float64,
                "regressed": pl.Boolean,
            },
        ),
    )
