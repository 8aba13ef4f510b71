"""Sweep rows of one point over many runs: from the compiled loop (every packed run under the point, as the run rows
``replay.simulator.run.simulate_run`` gives: the same loop, counters only), or run by run (``evaluate_runs``) for a
policy written in Python.

``point_columns`` returns None when the point's policy is written in Python (a user policy by import path): the
caller then simulates each run (the same compiled loop, calling back into Python for each request's decision),
which is much slower and says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from replay.errors import ReplayError
from replay.metrics.prices import Pricing
from replay.policies.base import CompiledPolicy
from replay.policies.kernel import P_NEAR_MARGIN
from replay.run_arrays import RunArrays
from replay.simulator.billing import Billing, billing_for
from replay.simulator.kernels.caches import N_PARAMS as N_CACHE_PARAMS
from replay.simulator.kernels.caches import cache_params
from replay.simulator.kernels.compiling import call_policy_kernel
from replay.simulator.kernels.corpus import corpus_kernel
from replay.simulator.kernels.dispatched import kernel_params
from replay.simulator.kernels.driver import (
    C_CACHED,
    C_PROMPT,
    C_SUM_OUT,
    C_SUM_SENT,
    C_SUM_WRITTEN,
    C_WRITTEN,
    O_CACHED,
    O_CHANGED,
    O_CHANGED_TOK,
    O_EMERGENCY,
    O_EST,
    O_EVICTED,
    O_EVICTED_TOK,
    O_FAILURE_TOK,
    O_FAILURES,
    O_FIRST_SUMMARY,
    O_LAST_SUMMARY,
    O_MAX_PROMPT,
    O_NEAR,
    O_OVERFLOW,
    O_PROMPT,
    O_PROMPT_AFTER_SUMMARY,
    O_SUMMARIES,
    O_TRIMMED,
    O_VISIBLE,
    O_VISIBLE_TOK,
    O_WRITTEN,
)
from replay.simulator.kernels.packed import PackedRuns, pack
from replay.simulator.request_costs import run_costs, summary_costs
from replay.simulator.run_output import summary_hits_cache
from replay.simulator.run_rows import run_columns
from replay.sweeps.adapter import Point, evaluate_point, resolve

NEAR_MARGIN = 0.05  # as replay.simulator.run.simulate_run's default


def point_frame(packed: PackedRuns, point: Point, constants: dict[str, Any] | None = None) -> pl.DataFrame | None:
    """Run rows for one resolved point over every packed run (plus ``constants`` as columns), or None if its
    policy is written in Python."""
    columns = point_columns(packed, point, constants)
    return None if columns is None else columns_frame([columns])


def columns_frame(points: list[dict[str, Any]]) -> pl.DataFrame:
    """One frame from the :func:`point_columns` of several points (same columns): one polars constructor for
    them all, since its per-call overhead is most of the cost at this size. NaN becomes null."""
    first = points[0]
    data = {
        name: (
            np.concatenate([p[name] for p in points])
            if isinstance(first[name], np.ndarray)
            else [v for p in points for v in p[name]]
        )
        for name in first
    }
    # strict=False: a swept knob may mix ints and floats across points (protect = 12,000 tokens or 1/3)
    return pl.DataFrame(
        data, nan_to_null=True, strict=False, schema_overrides={"error": pl.String} if "error" in first else None
    )


def point_columns(packed: PackedRuns, point: Point, constants: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The columns of :func:`point_frame` (numpy arrays and lists, one value per run), or None if the point's
    policy is written in Python; cheap to send between processes and to concatenate over a batch of points."""
    policy = point.policy
    if not isinstance(policy, CompiledPolicy):
        return None
    bills, of_run = run_billing(packed, point)
    budget = point.budget
    p = kernel_params(policy, budget)
    p[P_NEAR_MARGIN] = NEAR_MARGIN
    cps = np.stack([cache_params(b.cache, b.model) for b in bills])[of_run] if bills else np.zeros((0, N_CACHE_PARAMS))
    tflag = packed.tool_flags(policy.tool_flags(packed.tool_names))
    o, charged = call_policy_kernel(corpus_kernel, policy.code, policy.name, p, cps, packed.arrays, tflag)
    o = o.T
    summaries = o[O_SUMMARIES]
    with np.errstate(divide="ignore", invalid="ignore"):
        between = np.where(summaries > 1, (o[O_LAST_SUMMARY] - o[O_FIRST_SUMMARY]) / (summaries - 1), np.nan)
        after = np.where(summaries > 0, o[O_PROMPT_AFTER_SUMMARY] / summaries, np.nan)
    per_run = [bills[i] for i in of_run]
    if packed.request_plan is None:
        raise ReplayError("sweep: the packed runs carry no request plan; build them with pack()")
    req = packed.request_plan
    c = charged.T
    costs = run_costs(
        req, packed.n_runs, per_run, c[C_PROMPT], c[C_CACHED], c[C_WRITTEN], point.pricing
    )  # each request at its own model, day and write durations
    s_cost = summary_costs(
        req,
        packed.n_runs,
        per_run,
        c[C_SUM_SENT],
        c[C_SUM_WRITTEN],
        c[C_SUM_OUT],
        summary_hits_cache(point.policy),
        point.pricing,
    )
    counters = {
        "requests": np.diff(packed.req_off),
        "overflow_incidents": o[O_OVERFLOW],
        "near_misses": o[O_NEAR],
        "emergencies": o[O_EMERGENCY],
        "summaries": summaries,
        "requests_between_summaries": between,
        "tokens_after_summary": after,
        "prompt_tokens": o[O_PROMPT],
        "est_tokens": o[O_EST],
        "cached_tokens": o[O_CACHED],
        "written_tokens": o[O_WRITTEN],
        "trimmed_tokens": o[O_TRIMMED],
        "max_prompt_tokens": o[O_MAX_PROMPT],
        "repeat_changed": o[O_CHANGED],
        "repeat_changed_tokens": o[O_CHANGED_TOK],
        "repeat_visible": o[O_VISIBLE],
        "repeat_visible_tokens": o[O_VISIBLE_TOK],
        "repeat_evicted": o[O_EVICTED],
        "repeat_evicted_tokens": o[O_EVICTED_TOK],
        "evicted_failures": o[O_FAILURES],
        "evicted_failure_tokens": o[O_FAILURE_TOK],
    }
    fixed = {"window": budget.window, "reserve": budget.reserve, **(constants or {})}
    return run_columns(packed.run_ids, counters, per_run, costs, np.asarray(s_cost), packed.static, fixed)


def run_billing(packed: PackedRuns, point: Point) -> tuple[list[Billing], np.ndarray]:
    """The cache model and rates under ``point`` of each distinct (model, recorded TTL) of the packed runs, and
    which one each run has (a named cache model is one instance shared by all, as in simulate_run)."""
    keys, of_run = packed.billing_keys
    bills = [
        billing_for(m, point.cache, point.pricing, ttl)
        if point.cache is not None
        else _own_billing(m, ttl, point.pricing, fit)
        for m, ttl, fit in keys
    ]
    return bills, of_run


_OWN: dict[tuple, tuple[Pricing, Billing]] = {}


def _own_billing(model: str | None, ttl: float | None, pricing: Pricing, fit=None) -> Billing:
    """billing_for under the provider's own cache model (or the run's calibrated one, ``fit``), kept across points
    (a sweep's points share one Pricing object; the kernels only read a Billing): the price look-up cost as much as
    the kernel."""
    key = (model, ttl, fit, id(pricing))
    hit = _OWN.get(key)
    if hit is None or hit[0] is not pricing:
        if len(_OWN) > 4096:
            _OWN.clear()
        hit = _OWN[key] = (pricing, billing_for(model, None, pricing, ttl, fit))
    return hit[1]


def evaluate_runs(runs: list[RunArrays], point: Point) -> pl.DataFrame:
    """One row per run under ``point``: the compiled loop's counters for a built-in policy, request-by-request
    simulation for a policy written in Python."""
    fast = point_frame(pack(runs), point)
    if fast is not None:
        return fast
    return pl.DataFrame([{"run_id": r.run_id, **evaluate_point(r, point)} for r in runs], infer_schema_length=None)


def warm_up(policy_name: str) -> None:
    """Compile (or load from the on-disk cache) the loop ``policy_name`` would use."""
    point_frame(pack([]), resolve(policy_name, {}, "anthropic"))


__all__ = ["columns_frame", "evaluate_runs", "point_columns", "point_frame", "run_billing", "warm_up"]
