"""How `replay tune` chooses among swept points, apart from how it reports them: aggregate each point over its
runs, gate it against the defaults (`replay check`'s default gate), keep the zero- (else fewest-) overflow points,
take the Pareto front over (summaries per 100 requests, cache hit rate, evicted repeat reads, cost), pick one.

Recommendation rule (RULE): among the front, the lowest total cost; points within COST_TIE (0.5%) of that cost
count as tied and the highest cache hit rate wins, then the fewest summaries per 100 requests, then the fewest
evicted repeat reads; points equal on all of these (a knob with no effect on the corpus) go to the safer value
(the larger emergency margin, Knob.prefer), then the point id (so the choice is deterministic).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import polars as pl

from replay.errors import ReplayError
from replay.metrics.coverage import CostCover
from replay.policies import policy_class
from replay.sweeps.pareto import Objective, pareto_front
from replay.sweeps.spec import SweepSpec

OBJECTIVES: tuple[Objective, ...] = (
    ("summaries_per_100", "min"),
    ("cache_hit_rate", "max"),
    ("repeat_evicted", "min"),
    ("cost_usd", "min"),
)


COST_TIE = 0.005


RULE = (
    "lowest total cost on the front; within 0.5% of it, highest cache hit rate, then fewest summaries "
    "per 100 requests, then fewest evicted repeat reads, then the safer knob value (larger margin)"
)


SUMS = (
    "requests",
    "prompt_tokens",
    "cached_tokens",
    "written_tokens",
    "summaries",
    "overflow_incidents",
    "emergencies",
    "near_misses",
    "repeat_evicted",
    "repeat_evicted_tokens",
    "evicted_failures",
    "cost_usd",
)


def aggregate_points(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per sweep point over all its runs: counters summed, ratios recomputed from the sums.

    Adds ``runs``, ``runs_with_overflow`` and ``errors`` (runs whose simulation failed); parameter columns keep
    their names without the ``param_`` prefix."""
    if frame.is_empty():
        return pl.DataFrame()
    if "error" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, dtype=pl.Utf8).alias("error"))
    ok = pl.col("error").is_null()
    sums = [pl.col(c).filter(ok).sum().alias(c) for c in SUMS if c in frame.columns]
    params = [c for c in frame.columns if c.startswith("param_")]
    agg = frame.group_by("point_id").agg(
        pl.len().alias("runs"),
        (~ok).sum().alias("errors"),
        (pl.col("overflow_incidents").filter(ok) > 0).sum().alias("runs_with_overflow"),
        *(
            [pl.col("cost_usd").filter(ok).cast(pl.Float64).fill_nan(None).null_count().alias("unpriced_runs")]
            if "cost_usd" in frame.columns
            else []
        ),
        *sums,
        *[pl.col(p).first().alias(p[6:]) for p in params],
    )
    return agg.with_columns(
        pl.when(pl.col("prompt_tokens") > 0)
        .then(pl.col("cached_tokens") / pl.col("prompt_tokens"))
        .otherwise(0.0)
        .alias("cache_hit_rate"),
        pl.when(pl.col("requests") > 0)
        .then(100 * pl.col("summaries") / pl.col("requests"))
        .otherwise(0.0)
        .alias("summaries_per_100"),
    ).sort("point_id")


def feasible(points: pl.DataFrame) -> tuple[pl.DataFrame, bool]:
    """(points to choose from, True if they have zero overflow incidents on the corpus).

    Points whose simulation errored on any run are never chosen. When no point is free of overflow, the ones
    with the fewest incidents are returned and the flag is False: the caller must say so."""
    clean = points.filter(pl.col("errors") == 0) if "errors" in points.columns else points
    if clean.is_empty():
        raise ReplayError("tune: every sweep point failed to simulate; see the error column of sweep_results")
    zero = clean.filter(pl.col("overflow_incidents") == 0)
    if zero.height:
        return zero, True
    fewest = clean["overflow_incidents"].min()
    return clean.filter(pl.col("overflow_incidents") == fewest), False


def front(points: pl.DataFrame, objectives: tuple[Objective, ...] = OBJECTIVES) -> pl.DataFrame:
    """The non-dominated points, cheapest first."""
    return pareto_front(points, objectives).filter(pl.col("on_front")).drop("on_front").sort(["cost_usd", "point_id"])


def recommend(
    front_df: pl.DataFrame, cost_tie: float = COST_TIE, prefer: dict[str, str] | None = None
) -> dict[str, Any]:
    """One point from the front by RULE; ``prefer`` maps a knob to "high"/"low" for exact ties."""
    if front_df.is_empty():
        raise ReplayError("tune: the Pareto front is empty; nothing to recommend")
    cheapest = cast(float, front_df["cost_usd"].min())
    near = front_df.filter(pl.col("cost_usd") <= cheapest * (1 + cost_tie) + 1e-12)
    keys = ["cache_hit_rate", "summaries_per_100", "repeat_evicted", "cost_usd"]
    desc = [True, False, False, False]
    for knob, side in (prefer or {}).items():
        if knob in near.columns:
            keys.append(knob)
            desc.append(side == "high")
    best = near.sort([*keys, "point_id"], descending=[*desc, False])
    return best.row(0, named=True)


def gate(frame: pl.DataFrame, defaults: pl.DataFrame) -> pl.DataFrame:
    """Per point: does it pass `replay check`'s default gate against the defaults (same runs, same metrics, same
    tolerances: replay.sweeps.gate)? Columns point_id, gate_ok, gate_blockers ("" when it passes) and
    gate_tol (the `--tol metric=value` options under which check would pass it)."""
    import math

    from replay.sweeps.gate import METRICS, compare, worsening

    ok = pl.col("error").is_null() if "error" in frame.columns else pl.lit(True)
    base = defaults.filter(ok) if "error" in defaults.columns else defaults
    need = [*METRICS, "summaries", "requests", "cached_tokens", "prompt_tokens"]  # the rates' sums
    cols = ["run_id", *dict.fromkeys(m for m in need if m in frame.columns and m in base.columns)]
    rows = []
    for (pid,), df in frame.partition_by("point_id", as_dict=True).items():
        if "error" in df.columns and df["error"].is_not_null().any():
            rows.append({"point_id": pid, "gate_ok": False, "gate_blockers": "simulation error", "gate_tol": ""})
            continue
        res = compare(base.select(cols), df.select(cols))
        blockers = [f"{r['metric']} {_worse(r)}" for r in res.metrics.filter(pl.col("regressed")).iter_rows(named=True)]
        need_tol = {r["metric"]: r["worse_by"] for r in res.metrics.filter(pl.col("regressed")).iter_rows(named=True)}
        bad_runs = res.runs.filter(pl.col("regressed"))
        for metric in bad_runs["metric"].unique(maintain_order=True).to_list():
            bad = bad_runs.filter(pl.col("metric") == metric)
            blockers.append(f"{metric} up in {bad.height} run(s)")
            worst = max(worsening(metric, b, c) for b, c in bad.select("baseline", "candidate").iter_rows())
            need_tol[metric] = max(need_tol.get(metric, 0.0), worst)
        tol = " ".join(f"--tol {m}={math.ceil(v * 100 - 1e-9) / 100:g}" for m, v in need_tol.items())
        rows.append({"point_id": pid, "gate_ok": not blockers, "gate_blockers": "; ".join(blockers), "gate_tol": tol})
    return pl.DataFrame(
        rows, schema={"point_id": pl.Utf8, "gate_ok": pl.Boolean, "gate_blockers": pl.Utf8, "gate_tol": pl.Utf8}
    )


def _worse(r: dict[str, Any]) -> str:
    if r["metric"] in ("cache_hit_rate",):
        return f"{100 * r['worse_by']:+.1f} points worse"
    return f"{100 * r['worse_by']:+.0f}% worse"


def overflowing_runs(frame: pl.DataFrame, point: str | None = None) -> list[tuple[str, int]]:
    """(run_id, overflow incidents) of the runs that overflow at ``point`` (all rows when None), most first."""
    df = frame if point is None else frame.filter(pl.col("point_id") == point)
    df = df.filter(pl.col("overflow_incidents") > 0).sort(["overflow_incidents", "run_id"], descending=[True, False])
    return [(r, int(n)) for r, n in df.select("run_id", "overflow_incidents").iter_rows()]


@dataclass
class TuneResult:
    """What `replay tune` found and chose (the report is replay.sweeps.tune_report)."""

    spec: SweepSpec
    points: pl.DataFrame  # every point, aggregated, with gate_ok / feasible / on_front / recommended flags
    front: pl.DataFrame  # the Pareto front among the feasible points
    recommended: dict[str, Any]  # the chosen point's aggregated row (point_id "defaults" when none passed)
    params: dict[str, Any]  # the chosen point's exact parameters (window and reserve included)
    zero_overflow: bool  # False: the recommendation overflows (no candidate was free of overflow)
    defaults: dict[str, Any] | None = None
    unfittable: dict[str, int] = field(default_factory=dict)  # run -> tokens it must send that no policy trims
    files: dict[str, Path] = field(default_factory=dict)
    seconds: float = 0.0
    computed: int = 0
    gate_passed: bool = True  # False: no swept point passes check's gate; the defaults are recommended
    why: str = ""  # why no swept point passes (empty when one does)
    choice: str = ""  # when none passes: what was recommended instead, and the --tol that would accept it
    best_swept: dict[str, Any] | None = None  # the rule's choice among all swept points (the one shown if none passes)
    overflowing: list[tuple[str, int]] = field(default_factory=list)  # the recommendation's overflowing runs
    default_overflowing: list[tuple[str, int]] = field(default_factory=list)  # the defaults' overflowing runs
    warnings: list[str] = field(default_factory=list)  # settings that cannot fit the window (fit_warnings)
    cost_cover: CostCover = field(default_factory=lambda: CostCover(0, 0))  # the runs the costs are summed over
    nearest: dict[str, Any] | None = None  # when none passes: the point nearest to passing (nearest_to_passing)


def _prefer(policy: str) -> dict[str, str]:
    return {k.name: k.prefer for k in policy_class(policy).space if k.prefer}


def choose(pool: pl.DataFrame, policy: str) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any], bool]:
    """(feasible points, their front, the rule's choice, zero overflow?) among ``pool``."""
    feas, zero = feasible(pool)
    fr = front(feas)
    return feas, fr, recommend(fr, prefer=_prefer(policy)), zero


def gate_excess(tol_text: str) -> dict[str, float]:
    """Per gated metric a point fails, how far past its default tolerance it is (from the point's ``gate_tol``,
    the `--tol metric=value` options check would need)."""
    from replay.sweeps.gate import METRICS

    out = {}
    for opt in (tol_text or "").split("--tol "):
        if "=" in opt:
            metric, value = opt.strip().split("=", 1)
            out[metric] = float(value) - METRICS[metric][2]
    return out


def nearest_to_passing(points: pl.DataFrame) -> dict[str, Any] | None:
    """The swept point nearest to passing the gate: the fewest gate rules failed, then the least total excess
    over their tolerances, then the fewest overflow incidents, then the lowest cost (None: no point ran)."""
    clean = points.filter(pl.col("errors") == 0) if "errors" in points.columns else points
    if clean.is_empty() or "gate_tol" not in clean.columns:
        return None
    ranked = []
    for row in clean.iter_rows(named=True):
        excess = gate_excess(row["gate_tol"])
        cost = row["cost_usd"] if row["cost_usd"] is not None else float("inf")
        ranked.append(((len(excess), sum(excess.values()), row["overflow_incidents"], cost, row["point_id"]), row))
    return min(ranked, key=lambda kv: kv[0])[1]


def why_none(points: pl.DataFrame, defaults: dict[str, Any] | None) -> str:
    """A sentence: why no swept point passes the gate (the blockers, by how many points they stop)."""
    counts: dict[str, int] = {}
    for text in points["gate_blockers"].to_list():
        for b in filter(None, (text or "").split("; ")):
            key = b.split(" ")[0] + (" (per run)" if " run(s)" in b else "")
            counts[key] = counts.get(key, 0) + 1
    top = ", ".join(f"{k} in {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:4])
    fewest = int(cast(int, points["overflow_incidents"].min())) if points.height else 0
    text = (
        f"no swept point passes `replay check`'s default gate against the defaults (of {points.height} points, "
        f"regressed: {top})"
    )
    if defaults is not None:
        d_over = int(defaults["overflow_incidents"])
        if fewest > d_over:
            text += f"; every point overflows more than the defaults ({fewest:,} at best vs {d_over:,})"
        elif fewest > 0:
            text += f"; every point still overflows ({fewest:,} at best; the defaults {d_over:,})"
    return text


def unfittable(runs: list, window: int | None, reserve: int | None) -> dict[str, int]:
    """Runs whose harness prefix (the leading system and tool-schema items no policy trims) plus the reserve
    exceeds the window: they overflow under every policy at this window."""
    if not window:
        return {}
    out = {}
    for r in runs:
        floor = int(r.tokens[: r.first_body].sum())
        if floor + (reserve or 0) > window:
            out[r.run_id] = floor
    return out
