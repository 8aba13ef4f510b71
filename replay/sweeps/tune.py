"""Tune a policy for a new model: sweep its main knobs relative to the window, keep the points that pass `replay
check`'s default gate against the policy's defaults (and among them the ones with zero, else the fewest, overflow
incidents), take the Pareto front over (summaries per 100 requests, cache hit rate, evicted repeat reads, cost),
pick one. When no swept point passes the gate, the recommendation is the defaults and the summary says why.

Pure pieces (grid, aggregation, feasibility, recommendation) take and return polars frames; `tune` wires them to
`run_sweep` and writes the outputs. The CLI (`replay tune`) only parses options and prints.

Recommendation rule (RULE): among the front, the lowest total cost; points within COST_TIE (0.5%) of that cost
count as tied and the highest cache hit rate wins, then the fewest summaries per 100 requests, then the fewest
evicted repeat reads; points equal on all of these (a knob with no effect on the corpus) go to the safer value
(the larger emergency margin, Knob.prefer), then the point id (so the choice is deterministic).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from replay.errors import ReplayError
from replay.metrics.coverage import CostCover, cover_of_rows
from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.policies.window_fit import limit_tokens as _limit_tokens
from replay.sweeps.pareto import Objective, pareto_front
from replay.sweeps.policy_file import PolicyFile, dump_policy_file
from replay.sweeps.spec import SweepSpec, from_dict, point_id

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


@dataclass(frozen=True)
class Knob:
    """One tuned parameter: a range [lo, hi] (times the window when ``relative``) and the value used alone."""

    name: str
    lo: float
    hi: float
    mid: float
    integer: bool = False
    relative: bool = False
    weight: float = 1.0  # share of the grid's levels
    step: int = 100  # integer values are rounded to this
    prefer: str = ""  # "high" or "low": the safer side, breaks exact ties between points
    usable: bool = False  # a trigger that must fire below window - reserve: the range is capped there

    def cap(self, window: int, reserve: int) -> float | None:
        """The highest value that still fits (in the knob's unit), or None when the knob has no such limit."""
        if not self.usable or window <= 0:
            return None
        return (window - reserve) if self.relative else (window - reserve) / window

    def bounds(self, window: int, reserve: int = 0) -> tuple[float, float]:
        """(lo, hi) in the knob's own unit (tokens for relative knobs), hi capped at the usable window."""
        scale = window if self.relative else 1
        lo, hi = self.lo * scale, self.hi * scale
        cap = self.cap(window, reserve)
        if cap is not None and hi > cap:
            hi = max(lo, cap * 0.98)  # a trigger right at the limit leaves no room for the next request
        return lo, hi

    def values(self, levels: int, window: int, reserve: int = 0) -> list[Any]:
        lo, hi = self.bounds(window, reserve)
        mid = min(self.mid * (window if self.relative else 1), hi)
        raw = [mid] if levels == 1 else [lo + (hi - lo) * i / (levels - 1) for i in range(levels)]
        if self.integer:
            out = [int(round(v / self.step) * self.step) for v in raw]
            cap = self.cap(window, reserve)
            if cap is not None:
                out = [min(v, int(cap // self.step) * self.step) for v in out]
        else:
            out = [round(v, 4) for v in raw]
        return list(dict.fromkeys(out))


# Ranges are relative to the window where the knob is a token count; triggers (usable=True) are capped just below
# window - reserve. Seed A's seed values: summary at 80,000 of 130,000 (0.62 W), protected range a third of the
# window, tail capped at an eighth, reclaim floor an eighth, 20% margin. Counts of events or results (OpenHands,
# masking, last_n) do not scale with the window; their ranges span the sources' defaults (PEERS.md).
SPACES: dict[str, tuple[Knob, ...]] = {
    "seed_a": (
        Knob("summary_at", 0.4, 0.9, 0.62, integer=True, relative=True, weight=3, usable=True),
        Knob("protect", 0.08, 0.34, 0.3333, weight=2),  # a fraction of the window (<= 1)
        Knob("tail_fraction", 0.0625, 0.1875, 0.125, weight=1.5),
        Knob("reclaim_floor", 0.03, 0.15, 0.125, weight=1.5),
        Knob("margin", 0.1, 0.25, 0.2, weight=1.5, prefer="high"),
    ),
    "seed_b": (
        Knob("tool_turns", 1, 8, 3, integer=True, weight=2, step=1),
        Knob("tool_cap", 0.005, 0.05, 0.0115, integer=True, relative=True, weight=2),
        Knob("summary_tokens", 500, 3000, 1000, integer=True, weight=1),
    ),
    "seed_c": (
        Knob("spill_tokens", 0.02, 0.15, 0.077, integer=True, relative=True, weight=2, usable=True),
        Knob("preview_chars", 500, 4000, 2000, integer=True, weight=1.5),
        Knob("tail_fraction", 0.1, 0.5, 0.25, weight=1.5),
        Knob("protect_turns", 1, 3, 1, integer=True, weight=1, step=1),
    ),
    "clear_tool_uses": (
        Knob("trigger", 0.3, 0.9, 0.6, integer=True, relative=True, weight=3, usable=True),
        Knob("keep", 1, 12, 3, integer=True, weight=2, step=1),
        Knob("clear_at_least", 0.0, 0.15, 0.05, integer=True, relative=True, weight=1.5),
    ),
    "auto_compact": (
        Knob("threshold", 0.5, 0.95, 0.85, weight=3, usable=True),
        Knob("keep_user_tokens", 0.0, 0.15, 0.0, integer=True, relative=True, weight=1.5),
        Knob("summary_tokens", 1000, 6000, 3000, integer=True, weight=1, step=100),
    ),
    "openhands": (
        Knob("max_size", 20, 240, 100, integer=True, weight=3, step=10),
        Knob("keep_first", 1, 4, 1, integer=True, weight=1, step=1),
    ),
    "openhands_tokens": (
        Knob("max_tokens", 0.4, 0.95, 0.7, integer=True, relative=True, weight=3, usable=True),
        Knob("keep_first", 1, 4, 1, integer=True, weight=1, step=1),
    ),
    "openhands_recent": (
        Knob("max_events", 20, 240, 100, integer=True, weight=3, step=10),
        Knob("keep_first", 1, 4, 1, integer=True, weight=1, step=1),
    ),
    "masking": (Knob("keep_last", 1, 30, 10, integer=True, step=1),),
    "last_n": (
        Knob("n", 1, 20, 5, integer=True, weight=2, step=1),
        Knob("polling", 1, 10, 1, integer=True, weight=1, step=1),
    ),
    "drop_oldest": (
        Knob("margin", 0.0, 0.3, 0.1, weight=2, prefer="high"),
        Knob("keep_first", 0, 4, 1, integer=True, weight=1, step=1),
    ),
}
FIXED: dict[str, dict[str, Any]] = {}


def level_counts(weights: list[float], target: int) -> list[int]:
    """Levels per knob whose product stays <= target: repeatedly give a level to the knob with most weight per level."""
    levels = [1] * len(weights)
    product = 1
    while True:
        best = None
        for i, w in enumerate(weights):
            grown = product // levels[i] * (levels[i] + 1)
            if grown <= target and (best is None or w / levels[i] > weights[best] / levels[best]):
                best = i
        if best is None:
            return levels
        product = product // levels[best] * (levels[best] + 1)
        levels[best] += 1


def tune_grid(policy: str, window: int, points: int = 96, reserve: int = 0) -> dict[str, list[Any]]:
    """The grid for ``policy`` at ``window`` with at most ``points`` points (knob ranges relative to the window;
    triggers capped below window - ``reserve``)."""
    if policy not in SPACES:
        raise ReplayError(f"tune: no tuning space for policy {policy!r}; choose one of {', '.join(sorted(SPACES))}")
    if window <= 0:
        raise ReplayError(f"tune: --window must be the model's context window in tokens (> 0), got {window}")
    knobs = SPACES[policy]
    levels = level_counts([k.weight for k in knobs], max(1, points))
    return {k.name: k.values(n, window, reserve) for k, n in zip(knobs, levels, strict=True)}


def fit_warnings(policy: str, window: int, reserve: int, params: dict[str, Any] | None = None) -> list[str]:
    """Warnings, before any sweep, for settings of the policy (its defaults, or ``params``) that cannot fit the
    window: a trigger at or above window - reserve never fires before the prompt overflows."""
    from replay.policies import make_policy

    cfg = make_policy(policy, params or {}).config
    usable = window - reserve
    space = {k.name: k for k in SPACES.get(policy, ())}
    out = []
    for name, tokens in _limit_tokens(policy, cfg, window):
        if tokens < usable:
            continue
        value = getattr(cfg, name)
        shown = f"{value:,}" if isinstance(value, int) else f"{value:g} (= {tokens:,.0f} tokens)"
        if name in space:
            lo, hi = space[name].bounds(window, reserve)
            fmt = "{:,.0f}" if space[name].relative else "{:.3g}"
            fix = f"the sweep takes {name} over {fmt.format(lo)}-{fmt.format(hi)} instead"
        else:
            fix = f"set {name} below it (--set {name}=...)"
        out.append(
            f"WARNING: {policy}'s {'' if params else 'default '}{name} {shown} is at or above window - "
            f"reserve ({usable:,}): at this window it cannot fire before the prompt overflows; {fix}"
        )
    return out


def tune_spec(
    policy: str,
    window: int,
    reserve: int,
    tokenizer_id: str | None,
    points: int = 96,
    runs: str | None = None,
    cache: str = "auto",
    pricing: Pricing = DEFAULT_PRICING,
) -> SweepSpec:
    """The sweep `tune` runs: same arguments, same sweep id, so a rerun resumes. ``pricing.model``: the new
    model, whose prices (and cache rules, with cache "auto") every run gets."""
    if window > 0 and not 0 <= reserve < window:
        raise ReplayError(
            f"tune: --reserve {reserve:,} must be >= 0 and below --window {window:,}; lower the "
            "reserve or raise the window"
        )
    return from_dict(
        {
            "sweep": {
                "policy": policy,
                "name": f"tune-{policy}",
                "runs": runs or "",
                "tokenizer": tokenizer_id or "",
                "cache": cache,
                "batch": 8,
                "price_model": pricing.model or "",
            },
            "fixed": {"window": window, "reserve": reserve, **FIXED.get(policy, {})},
            "grid": tune_grid(policy, window, points, reserve),
            "prices": pricing.table,
            "price": pricing.sets,
        },
        where="tune",
    )


def defaults_spec(spec: SweepSpec) -> SweepSpec:
    """One point: the policy's defaults at the same window and reserve (the reference the chart marks)."""
    return from_dict(
        {
            "sweep": {
                "policy": spec.policy,
                "name": f"tune-{spec.policy}-defaults",
                "runs": spec.runs or "",
                "tokenizer": spec.tokenizer or "",
                "cache": spec.cache,
                "price_model": spec.price_model or "",
            },
            "fixed": dict(spec.fixed),
            "grid": {},
            "prices": spec.prices,
            "price": spec.price,
        },
        where="tune",
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
    cheapest = front_df["cost_usd"].min()
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
    best_swept: dict[str, Any] | None = None  # the rule's choice among all swept points (the one shown if none passes)
    overflowing: list[tuple[str, int]] = field(default_factory=list)  # the recommendation's overflowing runs
    default_overflowing: list[tuple[str, int]] = field(default_factory=list)  # the defaults' overflowing runs
    warnings: list[str] = field(default_factory=list)  # settings that cannot fit the window (fit_warnings)
    cost_cover: CostCover = field(default_factory=lambda: CostCover(0, 0))  # the runs the costs are summed over


TUNE_PRICE_HOW = "price them with --model NEW_MODEL, --prices FILE or --price input=USD --price output=USD (per Mtok)"


def _prefer(policy: str) -> dict[str, str]:
    return {k.name: k.prefer for k in SPACES.get(policy, ()) if k.prefer}


def _choose(pool: pl.DataFrame, policy: str) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any], bool]:
    """(feasible points, their front, the rule's choice, zero overflow?) among ``pool``."""
    feas, zero = feasible(pool)
    fr = front(feas)
    return feas, fr, recommend(fr, prefer=_prefer(policy)), zero


def why_none(points: pl.DataFrame, defaults: dict[str, Any] | None) -> str:
    """A sentence: why no swept point passes the gate (the blockers, by how many points they stop)."""
    counts: dict[str, int] = {}
    for text in points["gate_blockers"].to_list():
        for b in filter(None, (text or "").split("; ")):
            key = b.split(" ")[0] + (" (per run)" if " run(s)" in b else "")
            counts[key] = counts.get(key, 0) + 1
    top = ", ".join(f"{k} in {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:4])
    fewest = int(points["overflow_incidents"].min()) if points.height else 0
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


def run_tune(
    con: duckdb.DuckDBPyConnection, spec: SweepSpec, executor: str = "local", workers: int = 0, progress: bool = True
) -> TuneResult:
    """Run (or resume) the tuning sweep and the defaults, gate every point against the defaults, choose one;
    writes nothing."""
    from replay.sweeps import run_sweep
    from replay.sweeps.results import sweep_frame
    from replay.sweeps.runner import load_sweep_runs

    t0 = time.perf_counter()
    runs = load_sweep_runs(con, spec)
    outcome = run_sweep(con, spec, executor=executor, workers=workers, progress=progress, runs=runs)
    frame = sweep_frame(con, outcome.sweep_id)
    points = aggregate_points(frame)
    if "cost_usd" not in points.columns:  # no run has a price: cost is unknown everywhere, nothing to rank by
        raise ReplayError(
            "tune: no run has a price (their models are unknown to genai-prices); pass --model "
            "NEW_MODEL, --prices FILE or --price input=.. --price output=.."
        )
    dspec = defaults_spec(spec)
    dout = run_sweep(
        con, dspec, executor="serial" if len(runs) < 4 else executor, workers=workers, progress=False, runs=runs
    )
    dframe = sweep_frame(con, dout.sweep_id)
    dflt = aggregate_points(dframe)
    drow = dflt.row(0, named=True) if dflt.height else None
    points = points.join(gate(frame, dframe), on="point_id", how="left").with_columns(
        pl.col("gate_ok").fill_null(False)
    )
    _, best_fr, best, best_zero = _choose(points, spec.policy)
    passed = points.filter(pl.col("gate_ok"))
    by_id = {point_id(p): p for p in spec.points()}
    if passed.height:
        feas, fr, rec, zero = _choose(passed, spec.policy)
        params, why, rec_id = dict(by_id[rec["point_id"]]), "", rec["point_id"]
    else:
        if drow is None:
            raise ReplayError("tune: the defaults gave no result; see the error column of sweep_results")
        why = why_none(points, drow)
        feas = points.filter(pl.col("point_id").is_in(best_fr["point_id"].to_list()))
        if int(best["overflow_incidents"]) < int(drow["overflow_incidents"]):
            # an overflow is a failed request: fewer of them outweighs the gate's softer metrics; say so
            fr, rec, zero, rec_id = best_fr, best, best_zero, best["point_id"]
            params = dict(by_id[rec_id])
            why += (
                f". Recommended instead: the swept point with the fewest overflow incidents "
                f"({int(best['overflow_incidents']):,} vs the defaults' {int(drow['overflow_incidents']):,}); "
                f"it fails the gate on {best['gate_blockers']}; to accept that, gate it with: replay check "
                f"defaults.toml recommended.toml {best['gate_tol']}"
            )
            best = None
        else:
            fr, rec, rec_id = best_fr, {**drow, "point_id": "defaults"}, None
            zero, params = int(drow["overflow_incidents"]) == 0, dict(dspec.fixed)
            why += (
                ". The defaults overflow no more than any swept point: keep them (recommended.toml holds them); "
                "the best swept point is in best_swept.toml"
            )
    points = points.with_columns(
        pl.col("point_id").is_in(feas["point_id"].to_list()).alias("feasible"),
        pl.col("point_id").is_in(fr["point_id"].to_list()).alias("on_front"),
        (pl.col("point_id") == (rec_id or "")).alias("recommended"),
    )
    over = overflowing_runs(frame, rec_id) if rec_id else overflowing_runs(dframe)
    return TuneResult(
        spec,
        points,
        fr,
        rec,
        params,
        zero,
        drow,
        seconds=time.perf_counter() - t0,
        computed=outcome.computed,
        gate_passed=bool(passed.height),
        why=why,
        best_swept=None if passed.height else best,
        overflowing=over,
        default_overflowing=overflowing_runs(dframe),
        warnings=fit_warnings(spec.policy, spec.fixed.get("window", 0), spec.fixed.get("reserve", 0)),
        unfittable=unfittable(runs, spec.fixed.get("window"), spec.fixed.get("reserve")),
        cost_cover=cover_of_rows(frame),
    )


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


def _span(values) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"


def _fmt_pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _metrics(r: dict[str, Any]) -> str:
    return (
        f"summaries/100 {r['summaries_per_100']:.2f}, cache hit {_fmt_pct(r['cache_hit_rate'])}, evicted repeat "
        f"reads {int(r['repeat_evicted'])}, cost ${r['cost_usd']:.2f}, overflow incidents "
        f"{int(r['overflow_incidents'])}"
    )


def named_runs(runs: list[tuple[str, int]], unfit: dict[str, int], top: int = 5) -> str:
    """'run (n), run (n*), ... and k more' (* : the harness prefix alone overflows at this window)."""
    shown = [f"{r} ({n:,}{'*' if r in unfit else ''})" for r, n in runs[:top]]
    more = f" and {len(runs) - top} more" if len(runs) > top else ""
    return ", ".join(shown) + more


def summary_lines(res: TuneResult) -> list[str]:
    """Plain-text findings, also written as the policy file's header."""
    r, s = res.recommended, res.spec
    w, rs = s.fixed.get("window"), s.fixed.get("reserve")
    lines = [
        f"replay tune: {s.policy} for tokenizer {s.tokenizer or 'chars/4 (estimate)'}, window {w:,}, "
        f"reserve {rs:,}, cache {s.cache}" + (f", priced as {s.price_model}" if s.price_model else ""),
        *res.warnings,
        f"sweep {s.sweep_id}: {res.points.height} points x {int(res.points['runs'][0])} runs; "
        f"{int(res.points['gate_ok'].sum())} pass `replay check`'s default gate against the defaults",
        f"Pareto front: {res.front.height} points over summaries/100 (min), cache hit rate (max), "
        "evicted repeat reads (min), cost (min), among "
        + ("the points that pass the gate" if res.gate_passed else "all swept points (none passes the gate)")
        + " with "
        + (
            "zero overflow incidents"
            if (res.best_swept or res.recommended)["overflow_incidents"] == 0
            else "the fewest overflow incidents"
        ),
        f"rule: {RULE}",
    ]
    d = res.defaults
    if d:
        lines.append(f"defaults at this window: {_metrics(d)}")
    if not res.gate_passed:
        lines.append(f"WARNING: {res.why}")
    if r["point_id"] != "defaults":
        lines.append(f"recommended {r['point_id']}: {_metrics(r)}")
        lines.append("  " + ", ".join(f"{k} = {res.params[k]}" for k in s.swept_names if k in res.params))
    else:
        lines.append(f"recommended: the defaults: {_metrics(r)}")
        b = res.best_swept
        if b:
            lines.append(
                f"best swept point {b['point_id']} (best_swept.toml; fails the gate: "
                f"{b.get('gate_blockers') or '?'}): {_metrics(b)}"
            )
    if s.price_model:
        lines.append(
            f"note: the gate priced every run as {s.price_model}; `replay check` prices each run by its own "
            "model (or --prices/--price), so its cost rows can differ from these"
        )
    if r.get("unpriced_runs") or not res.cost_cover.complete:
        lines += [f"WARNING: {line}" for line in res.cost_cover.lines(TUNE_PRICE_HOW)]
    if res.overflowing:
        n = sum(c for _, c in res.overflowing)
        lines.append(
            f"WARNING: the recommendation still overflows {n:,} times in {len(res.overflowing)} run(s): "
            + named_runs(res.overflowing, res.unfittable)
            + (
                " (* : harness prefix alone overflows)"
                if any(x in res.unfittable for x, _ in res.overflowing[:5])
                else ""
            )
        )
    if res.unfittable:
        names = ", ".join(sorted(res.unfittable)[:5]) + (", ..." if len(res.unfittable) > 5 else "")
        lines.append(
            f"WARNING: {len(res.unfittable)} run(s) overflow under any policy at this window: the harness "
            f"prefix they send ({_span(res.unfittable.values())} tokens, "
            f"never trimmed) plus the reserve exceeds it: {names}"
        )
    edges = edge_knobs(res)
    if edges:
        lines.append(
            "note: the recommended point sits at the edge of the swept range for "
            + ", ".join(edges)
            + "; the optimum may lie beyond it"
        )
    return lines


def edge_knobs(res: TuneResult) -> list[str]:
    """Swept knobs (two or more values) whose recommended value is the lowest or highest swept (knobs with a
    tie-break preference, such as the margin, are left out: they often sit at an edge only by that preference)."""
    out = []
    preferred = {k.name for k in SPACES.get(res.spec.policy, ()) if k.prefer}
    for name, values in res.spec.grid.items():
        if len(values) < 2 or name in preferred or name not in res.params:
            continue
        if res.params[name] in (min(values), max(values)):
            side = "low" if res.params[name] == min(values) else "high"
            out.append(f"{name} = {res.params[name]} ({side} end)")
    return out


def policy_file(res: TuneResult, defaults: bool = False, best: bool = False) -> PolicyFile:
    """The recommendation (``defaults``: the policy's defaults at this window and reserve; ``best``: the best
    swept point when none passes the gate) as a policy file `replay simulate --policy-file`, `replay sweep` and
    `replay check` accept."""
    params = dict(res.spec.fixed) if defaults else dict(res.params)
    if best and res.best_swept:
        params = {point_id(p): p for p in res.spec.points()}[res.best_swept["point_id"]]
    return PolicyFile(
        name=res.spec.policy, params=params, cache=res.spec.cache, runs=res.spec.runs, tokenizer=res.spec.tokenizer
    )


def front_columns(res: TuneResult) -> list[str]:
    knobs = [k for k in res.spec.swept_names if k in res.front.columns]
    return [
        "point_id",
        *knobs,
        "summaries_per_100",
        "cache_hit_rate",
        "repeat_evicted",
        "cost_usd",
        "overflow_incidents",
        "runs_with_overflow",
        "emergencies",
        "repeat_evicted_tokens",
        "gate_ok",
    ]


def write_outputs(res: TuneResult, out_dir: Path) -> dict[str, Path]:
    """recommended.toml, defaults.toml (check's baseline), front.csv/.parquet, points.parquet, front.png/.svg
    under ``out_dir``."""
    from replay.reports import plots

    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    toml = out_dir / "recommended.toml"
    header = "\n".join([f"written by replay tune, {stamp}", *summary_lines(res)])
    toml.write_text(dump_policy_file(policy_file(res), header), encoding="utf-8")
    base = out_dir / "defaults.toml"
    base.write_text(
        dump_policy_file(
            policy_file(res, defaults=True),
            f"written by replay tune, {stamp}: "
            f"{res.spec.policy}'s defaults at this window and reserve (the baseline "
            "of: replay check defaults.toml recommended.toml)",
        ),
        encoding="utf-8",
    )
    fr = res.front.select([c for c in front_columns(res) if c in res.front.columns]).with_columns(
        (pl.col("point_id") == res.recommended["point_id"]).alias("recommended")
    )
    if res.best_swept:  # none passed the gate: the rule's choice, for a user who accepts its regressions
        best = out_dir / "best_swept.toml"
        best.write_text(
            dump_policy_file(
                policy_file(res, best=True),
                f"written by replay tune, {stamp}: the best "
                "swept point; it FAILS replay check's default gate against defaults.toml: "
                f"{res.best_swept.get('gate_blockers')}",
            ),
            encoding="utf-8",
        )
    files = {
        "policy": toml,
        "defaults": base,
        "front_csv": out_dir / "front.csv",
        "front_parquet": out_dir / "front.parquet",
        "points_parquet": out_dir / "points.parquet",
    }
    fr.write_csv(files["front_csv"])
    fr.write_parquet(files["front_parquet"])
    res.points.write_parquet(files["points_parquet"])
    s = res.spec
    title = (
        f"replay tune: {s.policy}, tokenizer {s.tokenizer or 'chars/4'}, window {s.fixed['window']:,}, "
        f"reserve {s.fixed['reserve']:,}" + ("" if res.gate_passed else "; no point passes check's gate")
    )
    ax = plots.tune_front(
        res.points,
        res.recommended,
        title,
        res.defaults,
        zero_overflow=res.zero_overflow,
        knobs=[k for k in s.swept_names if k in res.points.columns],
        cost_label=res.cost_cover.label(),
    )
    png, svg = plots.save(ax, out_dir, "front")
    files |= {"chart_png": png, "chart_svg": svg} | (
        {"best_swept": out_dir / "best_swept.toml"} if res.best_swept else {}
    )
    res.files = files
    return files


def tune(
    con: duckdb.DuckDBPyConnection,
    policy: str,
    window: int,
    reserve: int,
    tokenizer_id: str | None,
    out_dir: Path | None = None,
    points: int = 96,
    runs: str | None = None,
    cache: str = "auto",
    executor: str = "local",
    workers: int = 0,
    progress: bool = True,
    pricing: Pricing = DEFAULT_PRICING,
) -> TuneResult:
    """The whole tuning: sweep (resumable), aggregate, zero-overflow filter, front, recommendation, files."""
    if points < 1:
        raise ReplayError(f"tune: --points must be >= 1, got {points}")
    res = run_tune(
        con, tune_spec(policy, window, reserve, tokenizer_id, points, runs, cache, pricing), executor, workers, progress
    )
    if out_dir is not None:
        write_outputs(res, out_dir)
    return res
