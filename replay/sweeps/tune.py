"""Tune a policy for a new model: sweep its main knobs relative to the window, keep the points with zero overflow,
take the Pareto front over (summaries per 100 requests, cache hit rate, evicted repeat reads, cost), pick one.

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
from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.sweeps.pareto import Objective, pareto_front
from replay.sweeps.policy_file import PolicyFile, dump_policy_file
from replay.sweeps.spec import SweepSpec, from_dict, point_id

OBJECTIVES: tuple[Objective, ...] = (("summaries_per_100", "min"), ("cache_hit_rate", "max"),
                                     ("repeat_evicted", "min"), ("cost_usd", "min"))
COST_TIE = 0.005
RULE = ("lowest total cost on the front; within 0.5% of it, highest cache hit rate, then fewest summaries "
        "per 100 requests, then fewest evicted repeat reads, then the safer knob value (larger margin)")


@dataclass(frozen=True)
class Knob:
    """One tuned parameter: a range [lo, hi] (times the window when ``relative``) and the value used alone."""

    name: str
    lo: float
    hi: float
    mid: float
    integer: bool = False
    relative: bool = False
    weight: float = 1.0   # share of the grid's levels
    step: int = 100       # integer values are rounded to this
    prefer: str = ""      # "high" or "low": the safer side, breaks exact ties between points

    def values(self, levels: int, window: int) -> list[Any]:
        scale = window if self.relative else 1
        raw = [self.mid] if levels == 1 else [self.lo + (self.hi - self.lo) * i / (levels - 1) for i in range(levels)]
        if self.integer:
            out = [int(round(v * scale / self.step) * self.step) for v in raw]
        else:
            out = [round(v * scale, 4) for v in raw]
        return list(dict.fromkeys(out))


# Ranges are relative to the window where the knob is a token count. Seed A's seed values: summary at 80,000 of
# 130,000 (0.62 W), protected range a third of the window, tail capped at an eighth, reclaim floor an eighth,
# 20% margin.
SPACES: dict[str, tuple[Knob, ...]] = {
    "seed_a": (
        Knob("summary_at", 0.4, 0.9, 0.62, integer=True, relative=True, weight=3),
        Knob("protect", 0.08, 0.34, 0.3333, weight=2),  # a fraction of the window (<= 1)
        Knob("tail_fraction", 0.0625, 0.1875, 0.125, weight=1.5),
        Knob("reclaim_floor", 0.03, 0.15, 0.125, weight=1.5),
        Knob("margin", 0.1, 0.25, 0.2, weight=1.5, prefer="high"),
    ),
    "clear_tool_uses": (
        Knob("trigger", 0.3, 0.9, 0.6, integer=True, relative=True, weight=3),
        Knob("keep", 1, 12, 3, integer=True, weight=2, step=1),
        Knob("clear_at_least", 0.0, 0.15, 0.05, integer=True, relative=True, weight=1.5),
    ),
    "auto_compact": (
        Knob("threshold", 0.5, 0.95, 0.85, weight=3),
        Knob("keep_user_tokens", 0.0, 0.15, 0.0, integer=True, relative=True, weight=1.5),
        Knob("summary_tokens", 1000, 6000, 3000, integer=True, weight=1, step=100),
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


def tune_grid(policy: str, window: int, points: int = 96) -> dict[str, list[Any]]:
    """The grid for ``policy`` at ``window`` with at most ``points`` points (knob ranges relative to the window)."""
    if policy not in SPACES:
        raise ReplayError(f"tune: no tuning space for policy {policy!r}; choose one of {', '.join(sorted(SPACES))}")
    if window <= 0:
        raise ReplayError(f"tune: --window must be the model's context window in tokens (> 0), got {window}")
    knobs = SPACES[policy]
    levels = level_counts([k.weight for k in knobs], max(1, points))
    return {k.name: k.values(n, window) for k, n in zip(knobs, levels, strict=True)}


def tune_spec(policy: str, window: int, reserve: int, tokenizer_id: str | None, points: int = 96,
              runs: str | None = None, cache: str = "auto", pricing: Pricing = DEFAULT_PRICING) -> SweepSpec:
    """The sweep `tune` runs: same arguments, same sweep id, so a rerun resumes. ``pricing.model``: the new
    model, whose prices (and cache rules, with cache "auto") every run gets."""
    if window > 0 and not 0 <= reserve < window:
        raise ReplayError(f"tune: --reserve {reserve:,} must be >= 0 and below --window {window:,}; lower the "
                          "reserve or raise the window")
    return from_dict({"sweep": {"policy": policy, "name": f"tune-{policy}", "runs": runs or "",
                                "tokenizer": tokenizer_id or "", "cache": cache, "batch": 8,
                                "price_model": pricing.model or ""},
                      "fixed": {"window": window, "reserve": reserve, **FIXED.get(policy, {})},
                      "grid": tune_grid(policy, window, points), "prices": pricing.table, "price": pricing.sets},
                     where="tune")


def defaults_spec(spec: SweepSpec) -> SweepSpec:
    """One point: the policy's defaults at the same window and reserve (the reference the chart marks)."""
    return from_dict({"sweep": {"policy": spec.policy, "name": f"tune-{spec.policy}-defaults", "runs": spec.runs or "",
                                "tokenizer": spec.tokenizer or "", "cache": spec.cache,
                                "price_model": spec.price_model or ""},
                      "fixed": dict(spec.fixed), "grid": {}, "prices": spec.prices, "price": spec.price}, where="tune")


SUMS = ("requests", "prompt_tokens", "cached_tokens", "written_tokens", "summaries", "overflow_incidents",
        "emergencies", "near_misses", "repeat_evicted", "repeat_evicted_tokens", "evicted_failures", "cost_usd")


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
        pl.len().alias("runs"), (~ok).sum().alias("errors"),
        (pl.col("overflow_incidents").filter(ok) > 0).sum().alias("runs_with_overflow"),
        *([pl.col("cost_usd").filter(ok).cast(pl.Float64).fill_nan(None).null_count().alias("unpriced_runs")]
          if "cost_usd" in frame.columns else []),
        *sums, *[pl.col(p).first().alias(p[6:]) for p in params])
    return agg.with_columns(
        pl.when(pl.col("prompt_tokens") > 0).then(pl.col("cached_tokens") / pl.col("prompt_tokens"))
        .otherwise(0.0).alias("cache_hit_rate"),
        pl.when(pl.col("requests") > 0).then(100 * pl.col("summaries") / pl.col("requests"))
        .otherwise(0.0).alias("summaries_per_100"),
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


def recommend(front_df: pl.DataFrame, cost_tie: float = COST_TIE, prefer: dict[str, str] | None = None
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


@dataclass
class TuneResult:
    spec: SweepSpec
    points: pl.DataFrame          # every point, aggregated, with feasible / on_front / recommended flags
    front: pl.DataFrame           # the Pareto front among the feasible points
    recommended: dict[str, Any]   # the chosen point's aggregated row
    params: dict[str, Any]        # the chosen point's exact parameters (window and reserve included)
    zero_overflow: bool           # False: no point was free of overflow; the recommendation has the fewest
    defaults: dict[str, Any] | None = None
    unfittable: dict[str, int] = field(default_factory=dict)  # run -> tokens it must send that no policy trims
    files: dict[str, Path] = field(default_factory=dict)
    seconds: float = 0.0
    computed: int = 0


def run_tune(con: duckdb.DuckDBPyConnection, spec: SweepSpec, executor: str = "local", workers: int = 0,
             progress: bool = True) -> TuneResult:
    """Run (or resume) the tuning sweep and choose a point; writes nothing."""
    from replay.sweeps import run_sweep
    from replay.sweeps.results import sweep_frame
    from replay.sweeps.runner import load_sweep_runs

    t0 = time.perf_counter()
    runs = load_sweep_runs(con, spec)
    outcome = run_sweep(con, spec, executor=executor, workers=workers, progress=progress, runs=runs)
    points = aggregate_points(sweep_frame(con, outcome.sweep_id))
    if "cost_usd" not in points.columns:  # no run has a price: cost is unknown everywhere, nothing to rank by
        raise ReplayError("tune: no run has a price (their models are unknown to genai-prices); pass --model "
                          "NEW_MODEL, --prices FILE or --price input=.. --price output=..")
    dspec = defaults_spec(spec)
    dout = run_sweep(con, dspec, executor="serial" if len(runs) < 4 else executor, workers=workers,
                     progress=False, runs=runs)
    dflt = aggregate_points(sweep_frame(con, dout.sweep_id))
    pool, zero = feasible(points)
    fr = front(pool)
    rec = recommend(fr, prefer={k.name: k.prefer for k in SPACES.get(spec.policy, ()) if k.prefer})
    by_id = {point_id(p): p for p in spec.points()}
    ids = set(pool["point_id"])
    points = points.with_columns(pl.col("point_id").is_in(list(ids)).alias("feasible"),
                                 pl.col("point_id").is_in(fr["point_id"].to_list()).alias("on_front"),
                                 (pl.col("point_id") == rec["point_id"]).alias("recommended"))
    return TuneResult(spec, points, fr, rec, dict(by_id[rec["point_id"]]), zero,
                      dflt.row(0, named=True) if dflt.height else None, seconds=time.perf_counter() - t0,
                      computed=outcome.computed, unfittable=unfittable(runs, spec.fixed.get("window"),
                                                                       spec.fixed.get("reserve")))


def unfittable(runs: list, window: int | None, reserve: int | None) -> dict[str, int]:
    """Runs whose harness prefix (the leading system and tool-schema items no policy trims) plus the reserve
    exceeds the window: they overflow under every policy at this window."""
    if not window:
        return {}
    out = {}
    for r in runs:
        floor = int(r.tokens[:r.first_body].sum())
        if floor + (reserve or 0) > window:
            out[r.run_id] = floor
    return out


def _fmt_pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def summary_lines(res: TuneResult) -> list[str]:
    """Plain-text findings, also written as the policy file's header."""
    r, s = res.recommended, res.spec
    w, rs = s.fixed.get("window"), s.fixed.get("reserve")
    lines = [f"replay tune: {s.policy} for tokenizer {s.tokenizer or 'chars/4 (estimate)'}, window {w:,}, "
             f"reserve {rs:,}, cache {s.cache}" + (f", priced as {s.price_model}" if s.price_model else ""),
             f"sweep {s.sweep_id}: {res.points.height} points x {int(r['runs'])} runs; "
             f"{int(res.points['feasible'].sum())} points with "
             + ("zero overflow incidents" if res.zero_overflow else "the fewest overflow incidents"),
             f"Pareto front: {res.front.height} points over summaries/100 (min), cache hit rate (max), "
             "evicted repeat reads (min), cost (min)",
             f"rule: {RULE}",
             f"recommended {r['point_id']}: summaries/100 {r['summaries_per_100']:.2f}, cache hit "
             f"{_fmt_pct(r['cache_hit_rate'])}, evicted repeat reads {int(r['repeat_evicted'])}, "
             f"cost ${r['cost_usd']:.2f}, overflow incidents {int(r['overflow_incidents'])}"]
    if r.get("unpriced_runs"):
        lines.append(f"WARNING: {int(r['unpriced_runs'])} run(s) have no price (their model is unknown to "
                     "genai-prices): cost covers the others only; pass --model NEW_MODEL, --prices FILE or --price")
    if not res.zero_overflow:
        lines.append(f"WARNING: no swept point avoids overflow on this corpus; this point still overflows "
                     f"{int(r['overflow_incidents'])} times in {int(r['runs_with_overflow'])} runs. Raise the window, "
                     "lower the reserve, or widen the grid (--points).")
    if res.unfittable:
        names = ", ".join(sorted(res.unfittable)[:5]) + (", ..." if len(res.unfittable) > 5 else "")
        lines.append(f"WARNING: {len(res.unfittable)} run(s) overflow under any policy at this window: the harness "
                     f"prefix they send ({min(res.unfittable.values()):,}-{max(res.unfittable.values()):,} tokens, "
                     f"never trimmed) plus the reserve exceeds it: {names}")
    edges = edge_knobs(res)
    if edges:
        lines.append("note: the recommended point sits at the edge of the swept range for " + ", ".join(edges)
                     + "; the optimum may lie beyond it")
    d = res.defaults
    if d:
        lines.append(f"defaults at this window: summaries/100 {d['summaries_per_100']:.2f}, cache hit "
                     f"{_fmt_pct(d['cache_hit_rate'])}, evicted repeat reads {int(d['repeat_evicted'])}, "
                     f"cost ${d['cost_usd']:.2f}, overflow incidents {int(d['overflow_incidents'])}")
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


def policy_file(res: TuneResult) -> PolicyFile:
    """The recommendation as a policy file `replay simulate`/`replay check` accept."""
    return PolicyFile(name=res.spec.policy, params=dict(res.params), cache=res.spec.cache, runs=res.spec.runs,
                      tokenizer=res.spec.tokenizer)


def front_columns(res: TuneResult) -> list[str]:
    knobs = [k for k in res.spec.swept_names if k in res.front.columns]
    return ["point_id", *knobs, "summaries_per_100", "cache_hit_rate", "repeat_evicted", "cost_usd",
            "overflow_incidents", "runs_with_overflow", "emergencies", "repeat_evicted_tokens"]


def write_outputs(res: TuneResult, out_dir: Path) -> dict[str, Path]:
    """recommended.toml, front.csv/.parquet, points.parquet, front.png/.svg under ``out_dir``."""
    from replay.reports import plots

    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    toml = out_dir / "recommended.toml"
    header = "\n".join([f"written by replay tune, {stamp}", *summary_lines(res)])
    toml.write_text(dump_policy_file(policy_file(res), header), encoding="utf-8")
    fr = res.front.select([c for c in front_columns(res) if c in res.front.columns]).with_columns(
        (pl.col("point_id") == res.recommended["point_id"]).alias("recommended"))
    files = {"policy": toml, "front_csv": out_dir / "front.csv", "front_parquet": out_dir / "front.parquet",
             "points_parquet": out_dir / "points.parquet"}
    fr.write_csv(files["front_csv"])
    fr.write_parquet(files["front_parquet"])
    res.points.write_parquet(files["points_parquet"])
    s = res.spec
    title = (f"replay tune: {s.policy}, tokenizer {s.tokenizer or 'chars/4'}, window {s.fixed['window']:,}, "
             f"reserve {s.fixed['reserve']:,}")
    ax = plots.tune_front(res.points, res.recommended, title, res.defaults, zero_overflow=res.zero_overflow)
    png, svg = plots.save(ax, out_dir, "front")
    files |= {"chart_png": png, "chart_svg": svg}
    res.files = files
    return files


def tune(con: duckdb.DuckDBPyConnection, policy: str, window: int, reserve: int, tokenizer_id: str | None,
         out_dir: Path | None = None, points: int = 96, runs: str | None = None, cache: str = "auto",
         executor: str = "local", workers: int = 0, progress: bool = True,
         pricing: Pricing = DEFAULT_PRICING) -> TuneResult:
    """The whole tuning: sweep (resumable), aggregate, zero-overflow filter, front, recommendation, files."""
    if points < 1:
        raise ReplayError(f"tune: --points must be >= 1, got {points}")
    res = run_tune(con, tune_spec(policy, window, reserve, tokenizer_id, points, runs, cache, pricing), executor,
                   workers, progress)
    if out_dir is not None:
        write_outputs(res, out_dir)
    return res
