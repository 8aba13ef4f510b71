"""The regression gate: simulate baseline and candidate over the same runs; per-metric and per-run deltas.

A metric regresses when it worsens (in its bad direction) by more than its tolerance: relative to the
baseline for counts and costs (0.05 = 5%), absolute for rates (0.01 = one point of hit rate).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.sweeps.adapter import evaluate_runs, resolve
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
    runs: pl.DataFrame     # run_id, metric, baseline, candidate, delta, regressed

    @property
    def regressed(self) -> bool:
        return bool(self.metrics["regressed"].any() or self.runs["regressed"].any())


def worsening(metric: str, base: float, cand: float) -> float:
    direction, kind, _ = METRICS[metric]
    w = cand - base if direction == "up" else base - cand
    return w / max(abs(base), 1.0) if kind == "rel" else w


def simulate_all(pf: PolicyFile, runs: list, pricing: Pricing = DEFAULT_PRICING) -> pl.DataFrame:
    return evaluate_runs(runs, resolve(pf.name, pf.params, pf.cache, pricing))


def _aggregate(df: pl.DataFrame, metric: str) -> float:
    if metric == "cache_hit_rate":
        return float(df["cached_tokens"].sum() / max(df["prompt_tokens"].sum(), 1))
    if metric == "summaries_per_100":
        return float(100 * df["summaries"].sum() / max(df["requests"].sum(), 1))
    return float(df[metric].sum())


def compare(base: pl.DataFrame, cand: pl.DataFrame, tolerances: dict[str, float] | None = None) -> CheckResult:
    """Deltas of every gated metric, overall and per run."""
    tol = {m: spec[2] for m, spec in METRICS.items()} | (tolerances or {})
    rows = []
    for m in METRICS:
        if m not in base.columns or m not in cand.columns:
            continue
        b, c = _aggregate(base, m), _aggregate(cand, m)
        rows.append({"metric": m, "baseline": b, "candidate": c, "delta": c - b, "tolerance": tol[m],
                     "worse_by": worsening(m, b, c), "regressed": worsening(m, b, c) > tol[m] + 1e-12})
    joined = base.join(cand, on="run_id", suffix="_cand")
    per_run = []
    for m in PER_RUN:
        for rid, b, c in joined.select("run_id", m, f"{m}_cand").iter_rows():
            w = worsening(m, float(b), float(c))
            per_run.append({"run_id": rid, "metric": m, "baseline": float(b), "candidate": float(c),
                            "delta": float(c - b), "regressed": m != "repeat_evicted" and w > tol[m] + 1e-12})
    return CheckResult(pl.DataFrame(rows), pl.DataFrame(per_run, schema={
        "run_id": pl.Utf8, "metric": pl.Utf8, "baseline": pl.Float64, "candidate": pl.Float64,
        "delta": pl.Float64, "regressed": pl.Boolean}))


def _num(x: float) -> str:
    return f"{x:,.4g}" if abs(x) < 10 else f"{x:,.0f}"


def markdown(result: CheckResult, base: PolicyFile, cand: PolicyFile, n_runs: int) -> str:
    """A PR-ready report: verdict, metric table, runs that changed."""
    verdict = "❌ **regression**" if result.regressed else "✅ **no regression**"
    out = [f"## replay check: {verdict}", "",
           f"Baseline `{base.path or base.name}` vs candidate `{cand.path or cand.name}` over {n_runs} recorded runs. "
           "Replay is counterfactual: the recorded actions stay fixed, so these are cost and exposure "
           "figures, not solve rates.", "",
           "| metric | baseline | candidate | delta | tolerance | status |", "|---|---:|---:|---:|---:|---|"]
    for r in result.metrics.iter_rows(named=True):
        status = "regressed" if r["regressed"] else "ok"
        out.append(f"| {r['metric']} | {_num(r['baseline'])} | {_num(r['candidate'])} | {_num(r['delta'])} "
                   f"| {r['tolerance']:g} | {status} |")
    changed = result.runs.filter(pl.col("delta") != 0)
    if changed.height:
        out += ["", "### Runs that changed", "", "| run | metric | baseline | candidate | delta | gate |",
                "|---|---|---:|---:|---:|---|"]
        for r in changed.sort(["regressed", "delta"], descending=True).head(40).iter_rows(named=True):
            gate = "regressed" if r["regressed"] else ""
            out.append(f"| {r['run_id']} | {r['metric']} | {_num(r['baseline'])} | {_num(r['candidate'])} "
                       f"| {_num(r['delta'])} | {gate} |")
    return "\n".join(out) + "\n"
