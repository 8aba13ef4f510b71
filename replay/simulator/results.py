"""Simulate many runs and store the results (simulations, sim_runs, sim_requests, sim_composition) in DuckDB."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import duckdb
import numpy as np
import polars as pl

from replay.metrics.composition import empty as composition_frame
from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.policies import Budget
from replay.policies.base import AnyPolicy
from replay.run_arrays import RunArrays
from replay.simulator.caches import AUTO, CacheModel
from replay.simulator.own_window import OwnWindows
from replay.simulator.run import simulate_run_by_tool


@dataclass
class Simulation:
    """The outcome of one policy configuration over a set of runs."""

    sim_id: str
    policy: str
    config: dict
    cache_model: str
    tokenizer_id: str | None
    budget: Budget
    runs: pl.DataFrame
    requests: pl.DataFrame
    token_sources: list[str] = field(default_factory=list)
    composition: pl.DataFrame = field(default_factory=composition_frame)  # by run, tool and part (args/result)


def sim_id_for(
    config: dict,
    cache: str,
    tokenizer_id: str | None,
    budget: Budget,
    run_ids: list[str],
    pricing: Pricing = DEFAULT_PRICING,
    own: bool = False,
) -> str:
    """Deterministic id: same config over the same runs gives the same id (re-running replaces it); ``own``: runs
    replayed on their harness's own window (replay.simulator.own_window)."""
    parts: list = [config, cache, tokenizer_id, budget.window, budget.reserve, sorted(run_ids)]
    if pricing != DEFAULT_PRICING:
        parts.append(pricing.key())
    if own:
        parts.append("own windows")
    key = json.dumps(parts, sort_keys=True)
    return hashlib.blake2b(key.encode(), digest_size=8).hexdigest()


def simulate_many(
    runs: list[RunArrays],
    policy: AnyPolicy,
    cache: CacheModel | None,
    budget: Budget,
    tokenizer_id: str | None = None,
    pricing: Pricing = DEFAULT_PRICING,
    own: OwnWindows | None = None,
) -> Simulation:
    """Run ``policy`` over every run (each under its provider's cache model when ``cache`` is None); frames of
    per-run and per-request rows. ``own``: a run replayed on its harness's own policy takes its own window
    (replay.simulator.own_window), else ``budget`` holds for every request."""
    config = policy.config.as_dict()
    cache_name = AUTO if cache is None else cache.name
    sid = sim_id_for(config, cache_name, tokenizer_id, budget, [r.run_id for r in runs], pricing, own is not None)
    run_rows, req_frames, comp_frames = [], [], []
    for loaded in runs:
        run, pol, bud = (loaded, policy, budget) if own is None else own.settings(loaded, policy, budget)
        cols, row, by_tool = simulate_run_by_tool(run, pol, cache, bud, pricing=pricing)
        comp_frames.append(by_tool.frame())
        run_rows.append({"sim_id": sid, **row})
        frame = pl.DataFrame(
            {
                k: v.astype(bool) if k in ("overflow", "near_miss", "emergency", "summarised") else v
                for k, v in cols.items()
            }
        )
        req_frames.append(frame.with_columns(pl.lit(sid).alias("sim_id"), pl.lit(run.run_id).alias("run_id")))
    runs_df = pl.DataFrame(run_rows, infer_schema_length=None) if run_rows else pl.DataFrame()
    reqs_df = pl.concat(req_frames) if req_frames else pl.DataFrame()
    comp_df = pl.concat(comp_frames) if comp_frames else composition_frame()
    return Simulation(
        sid,
        policy.name,
        config,
        cache_name,
        tokenizer_id,
        budget,
        runs_df,
        reqs_df,
        sorted({r.token_source for r in runs}),
        comp_df.with_columns(pl.lit(sid).alias("sim_id")),
    )


def store_simulation(con: duckdb.DuckDBPyConnection, sim: Simulation) -> None:
    """Replace any earlier result with the same sim_id, in one transaction."""
    con.execute("BEGIN")
    try:
        for table in ("simulations", "sim_runs", "sim_requests", "sim_composition"):
            con.execute(f"DELETE FROM {table} WHERE sim_id = ?", [sim.sim_id])
        con.execute(
            "INSERT INTO simulations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                sim.sim_id,
                sim.policy,
                json.dumps(sim.config, sort_keys=True),
                sim.cache_model,
                sim.tokenizer_id,
                ",".join(sim.token_sources),
                sim.budget.window,
                sim.budget.reserve,
                sim.runs.height,
                datetime.now(UTC).replace(tzinfo=None),
            ],
        )
        for table, df in (("sim_runs", sim.runs), ("sim_requests", sim.requests), ("sim_composition", sim.composition)):
            if df.height:
                cols = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
                arrow = df.select(cols).to_arrow()  # noqa: F841 (read by DuckDB's replacement scan)
                quoted = ", ".join(f'"{c}"' for c in cols)
                con.execute(f"INSERT INTO {table} ({quoted}) SELECT {quoted} FROM arrow")
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


def totals(sim: Simulation) -> dict:
    """Corpus-level counters (sums) and the hit rate with the right denominator."""
    df = sim.runs
    if not df.height:
        return {}
    s: dict[str, Any] = {
        c: int(df[c].sum())
        for c in (
            "requests",
            "overflow_incidents",
            "summaries",
            "prompt_tokens",
            "cached_tokens",
            "uncached_tokens",
            "repeat_evicted",
        )
    }
    s["cache_hit_rate"] = s["cached_tokens"] / s["prompt_tokens"] if s["prompt_tokens"] else 0.0
    s |= cost_totals(df)
    return s


def cost_totals(df: pl.DataFrame) -> dict:
    """Total cost over the priced runs, and how many runs have no price (their cost is unknown, not 0)."""
    cost = df["cost_usd"].cast(pl.Float64).fill_nan(None)
    return {"cost_usd": float(np.round(float(cost.sum() or 0.0), 4)), "unpriced_runs": cost.null_count()}


def billing_warnings(df: pl.DataFrame) -> list[str]:
    """One line per model that has no price or no cache model (the run rows' ``billing_note``), with its run
    count: the cost of those runs is unknown (left out of totals) or uncached."""
    if "billing_note" not in df.columns or not df.height:
        return []
    notes = (
        df.filter(pl.col("billing_note") != "")
        .group_by("model", "billing_note")
        .len()
        .sort("model", "billing_note", nulls_last=True)
    )
    return [f"WARNING: {'no model name' if m is None else m} ({n} run(s)): {note}" for m, note, n in notes.iter_rows()]


def billing_lines(df: pl.DataFrame) -> list[str]:
    """What the cost total covers (the unpriced runs by model, and how to price them), then the models priced
    uncached for want of a cache model: short lines for the warnings under a table."""
    from replay.metrics.coverage import cover_of_frame

    if not df.height:
        return []
    lines = cover_of_frame(df).lines()
    if "billing_note" in df.columns:
        uncached = df.filter(pl.col("billing_note").str.contains("no cache model for"))
        if uncached.height:
            models = uncached.group_by("model").len().sort("model", nulls_last=True)
            names = ", ".join(f"{m or 'no model named'} ({n})" for m, n in models.iter_rows())
            lines.append(
                f"no cache model for the provider of {uncached.height} runs, priced uncached: {names}; "
                "--cache NAME chooses one"
            )
    return lines


def totals_line(sim: Simulation) -> str:
    """The corpus totals in one sentence, the cost with the runs it covers."""
    from replay.metrics.coverage import cover_of_frame

    s = totals(sim)
    if not s:
        return "no runs"
    return (
        f"{s['requests']:,} requests, {s['overflow_incidents']:,} overflow incidents, {s['summaries']:,} summaries, "
        f"{s['prompt_tokens']:,} prompt tokens ({s['cache_hit_rate']:.1%} cached), {s['repeat_evicted']:,} repeat "
        f"reads evicted; cost ${s['cost_usd']:,.2f} over {cover_of_frame(sim.runs).label()}"
    )


def composition_totals(sim: Simulation) -> pl.DataFrame:
    """Window composition by tool over all runs: tokens per (tool, part), share of all prompt tokens, largest first."""
    total = int(sim.runs["prompt_tokens"].sum()) if sim.runs.height else 0
    df = sim.composition
    if not df.height:
        return df.select("tool", "part", "tokens", "share")
    return (
        df.group_by("tool", "part")
        .agg(pl.col("tokens").sum())
        .with_columns((pl.col("tokens") / total if total else pl.lit(0.0)).alias("share"))
        .sort(["tokens", "tool", "part"], descending=[True, False, False])
    )
