"""Compiled twins of the reference simulator for the policies sweeps spend their time on.

``point_frame`` gives, for one sweep point, exactly the run rows ``replay.sweeps.adapter.evaluate_point`` gives,
hundreds of times faster; it returns None when the policy has no compiled twin (the caller falls back to the
reference path). The reference simulator stays the definition: tests compare both on the corpus.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from replay.metrics.cost import prompt_cost, summary_cost
from replay.simulator.kernels.caches import CODES, cache_params
from replay.simulator.kernels.caches import N_PARAMS as N_CACHE_PARAMS
from replay.simulator.kernels.packed import PackedRuns, pack

if TYPE_CHECKING:
    from replay.sweeps.adapter import Point

COMPILED_POLICIES = ("full", "seed_a", "seed_a_before")


def point_frame(packed: PackedRuns, point: Point, constants: dict[str, Any] | None = None) -> pl.DataFrame | None:
    """Run rows for one resolved point over every packed run (plus ``constants`` as columns), or None if its
    policy has no compiled twin. One frame constructor: polars' per-call overhead matters at this size."""
    if point.policy.name not in COMPILED_POLICIES or type(point.cache) not in CODES:
        return None
    from replay.simulator.kernels import seed_a as k

    config, budget, model = point.policy.config, point.budget, point.cache
    model.reset(None)
    p = k.policy_params(config, budget.window, budget.reserve)
    by_model = {m: cache_params(model, m) for m in set(packed.models)}
    cps = np.stack([by_model[m] for m in packed.models]) if packed.n_runs else np.zeros((0, N_CACHE_PARAMS))
    o = k.corpus_kernel(p, cps, packed.item_off, packed.req_off, packed.ev_off, packed.err_off, packed.kind,
                        packed.tokens, packed.chars, packed.access, packed.pair, packed.req_end, packed.req_ts,
                        packed.ev_prev, packed.ev_decide, packed.ev_changed, packed.ev_tokens, packed.err_pos,
                        packed.first_body).T
    n = np.diff(packed.req_off)
    prompt, cached, written, summaries = o[k.O_PROMPT], o[k.O_CACHED], o[k.O_WRITTEN], o[k.O_SUMMARIES]
    uncached = prompt - cached - written
    price = packed.static["price_per_mtok"]
    with np.errstate(divide="ignore", invalid="ignore"):
        between = np.where(summaries > 1, (o[k.O_LAST_SUMMARY] - o[k.O_FIRST_SUMMARY]) / (summaries - 1), np.nan)
        after = np.where(summaries > 0, o[k.O_PROMPT_AFTER_SUMMARY] / summaries, np.nan)
        hit = np.where(prompt > 0, cached / prompt, 0.0)
        per_100 = np.where(n > 0, 100.0 * summaries / n, 0.0)
    s_cost = summary_cost(o[k.O_SUMMARY_HISTORY], o[k.O_SUMMARY_OUT], price, model.read_multiplier)
    fixed = {"cache_model": model.name, "window": budget.window, "reserve": budget.reserve, **(constants or {})}
    return pl.DataFrame({
        "run_id": list(packed.run_ids), "requests": n, "overflow_incidents": o[k.O_OVERFLOW],
        "near_misses": o[k.O_NEAR], "emergencies": o[k.O_EMERGENCY], "summaries": summaries,
        "summaries_per_100": per_100, "requests_between_summaries": between, "tokens_after_summary": after,
        "prompt_tokens": prompt, "est_tokens": o[k.O_EST], "cached_tokens": cached, "written_tokens": written,
        "uncached_tokens": uncached, "cache_hit_rate": hit, "trimmed_tokens": o[k.O_TRIMMED],
        "max_prompt_tokens": o[k.O_MAX_PROMPT],
        "repeat_changed": o[k.O_CHANGED], "repeat_changed_tokens": o[k.O_CHANGED_TOK],
        "repeat_visible": o[k.O_VISIBLE], "repeat_visible_tokens": o[k.O_VISIBLE_TOK],
        "repeat_evicted": o[k.O_EVICTED], "repeat_evicted_tokens": o[k.O_EVICTED_TOK],
        "evicted_failures": o[k.O_FAILURES], "evicted_failure_tokens": o[k.O_FAILURE_TOK],
        "cost_usd": prompt_cost(uncached, cached, written, price, model.read_multiplier, model.write_multiplier)
        + s_cost, "summary_cost_usd": s_cost, **packed.static,
        **{name: [value] * packed.n_runs for name, value in fixed.items()},
    }, nan_to_null=True, schema_overrides={"error": pl.String} if constants and "error" in constants else None)


def warm_up(policy_name: str) -> None:
    """Compile (or load from the on-disk cache) the kernel ``policy_name`` would use."""
    if policy_name in COMPILED_POLICIES:
        from replay.sweeps.adapter import resolve

        point_frame(pack([]), resolve(policy_name, {}, "anthropic"))


__all__ = ["COMPILED_POLICIES", "PackedRuns", "pack", "point_frame", "warm_up"]
