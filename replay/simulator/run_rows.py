"""The run row, built in one place: the sweep's columns over many packed runs (``replay.sweeps.point_rows``) and
``simulate``'s row of one run (``replay.simulator.run``) are the same function of the same per-run counters, so the
two cannot drift apart. Each caller counts its own way (the compiled corpus loop, or the request-by-request
columns); the columns derived from the counters, the costs and the prices are computed here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from replay.simulator.billing import Billing
from replay.simulator.request_costs import RunCosts, billing_note, cost_row

# per-run counters each caller gives, in row order (the derived columns are placed among them)
COUNTERS = (
    "requests",
    "overflow_incidents",
    "near_misses",
    "emergencies",
    "summaries",
    "requests_between_summaries",  # NaN: fewer than two summaries
    "tokens_after_summary",  # NaN: no summary
    "prompt_tokens",
    "est_tokens",
    "cached_tokens",
    "written_tokens",
    "trimmed_tokens",
    "max_prompt_tokens",
    "repeat_changed",
    "repeat_changed_tokens",
    "repeat_visible",
    "repeat_visible_tokens",
    "repeat_evicted",
    "repeat_evicted_tokens",
    "evicted_failures",
    "evicted_failure_tokens",
)
COST_ROW = ("recorded_cost_usd", "written_1h_tokens", "unpriced_requests", "recorded_cost_note")
# the comparison with the recorded bill, like for like (replay.simulator.request_costs.RunCosts)
BILL_ROW = ("billed_cost_usd", "unbilled_summary_cost_usd", "recorded_summary_cost_usd")
RATES = ("input", "output", "cache_read", "cache_write")

Columns = dict[str, Any]  # name -> a numpy array or a list, one value per run


def rate_columns(bills: Sequence[Billing]) -> dict[str, np.ndarray]:
    """Per run, the USD per million tokens it is charged: input, output, cache read and cache write."""
    return {f: np.array([getattr(b.rates, f) for b in bills], dtype=np.float64) for f in RATES}


def run_columns(
    run_ids: Sequence[str],
    counters: Mapping[str, np.ndarray],
    bills: Sequence[Billing],
    costs: RunCosts,
    summary_usd: np.ndarray,
    static: Mapping[str, Any],
    fixed: Mapping[str, Any],
) -> Columns:
    """The run rows as columns: ``counters`` (:data:`COUNTERS`), each run's billing (``bills[i]``), its request
    costs and the USD of its summarisation calls, then the columns that do not depend on the policy (``static``,
    one value per run) and the values every run shares (``fixed``: window, reserve, a sweep's knobs).

    Beside the recorded bill (``recorded_cost_usd``, its summariser calls ``recorded_summary_cost_usd``), what the
    replay charges for what that bill covers (``billed_cost_usd``): its requests with recorded usage, priced as
    the bill prices them, and the summarisation calls when the log records the usage of every summariser call it
    made; otherwise they are ``unbilled_summary_cost_usd``, apart. The server-side iterations the log records beyond
    each request's own (replay.metrics.server_iterations: advisor calls, the executor's further iterations) are no
    call a policy changes: ``cost_usd``, ``billed_cost_usd`` and ``recorded_cost_usd`` all hold them as recorded."""
    c = counters
    n, summaries = c["requests"], c["summaries"]
    prompt, cached, written = c["prompt_tokens"], c["cached_tokens"], c["written_tokens"]
    with np.errstate(divide="ignore", invalid="ignore"):
        hit = np.where(prompt > 0, cached / prompt, 0.0)
        per_100 = np.where(n > 0, 100.0 * summaries / n, 0.0)
    rate = rate_columns(bills)
    p_cost, o_cost = costs.prompt_usd, costs.output_usd
    runs = len(run_ids)
    billed_summaries = np.where(costs.summaries_billed, summary_usd, 0.0)
    return {
        "run_id": list(run_ids),
        **{k: c[k] for k in COUNTERS[:5]},
        "summaries_per_100": per_100,
        **{k: c[k] for k in COUNTERS[5:11]},
        "uncached_tokens": prompt - cached - written,
        "cache_hit_rate": hit,
        **{k: c[k] for k in COUNTERS[11:]},
        "cost_usd": p_cost + summary_usd + o_cost + costs.server_usd,
        "prompt_cost_usd": p_cost,
        "summary_cost_usd": summary_usd,
        "output_cost_usd": o_cost,
        "price_per_mtok": rate["input"],
        "output_per_mtok": rate["output"],
        "cache_read_per_mtok": rate["cache_read"],
        "cache_write_per_mtok": rate["cache_write"],
        "price_source": [b.price_source for b in bills],
        "model": [b.model for b in bills],
        "cache_model": [b.cache.name for b in bills],
        "cache_ttl": [getattr(b.cache, "ttl", None) for b in bills],
        "billing_note": [billing_note(b, why) for b, why in zip(bills, costs.why, strict=True)],
        **{k: [cost_row(costs, i)[k] for i in range(runs)] for k in COST_ROW},
        "billed_cost_usd": np.where(
            np.isnan(costs.recorded_usd), np.nan, costs.billed_usd + billed_summaries + costs.server_usd
        ),
        "unbilled_summary_cost_usd": summary_usd - billed_summaries,
        "recorded_summary_cost_usd": costs.recorded_summary_usd,
        **static,
        **{name: [value] * runs for name, value in fixed.items()},
    }


def first_row(columns: Columns) -> dict[str, Any]:
    """Run 0 of :func:`run_columns` as a row of Python values (NaN as None, as the store keeps it)."""
    return {name: _python(values[0]) for name, values in columns.items()}


def _python(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    return None if isinstance(value, float) and math.isnan(value) else value
