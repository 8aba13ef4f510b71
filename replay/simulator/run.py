"""One run's per-request columns and run row: the views of every request (the compiled loop's trace, for a built-in
policy and a policy written in Python alike), the cache charged, counted. Raw counters out, ratios derived later."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from replay.metrics.composition import ToolComposition
from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.metrics.repeat_reads import classify, read_events, summarise
from replay.model import KINDS
from replay.policies.base import AnyPolicy, Budget
from replay.policies.view import ORIGINAL, View
from replay.run_arrays import TOOL_RESULT, RunArrays
from replay.simulator.billing import Billing, billing_for
from replay.simulator.caches import CacheModel
from replay.simulator.kernels.driver import T_SUM_OUT, T_SUM_READ, T_SUM_WRITE
from replay.simulator.kernels.packed import static_row
from replay.simulator.kernels.trace import Trace, trace_run
from replay.simulator.request_costs import plan, run_costs, summary_costs
from replay.simulator.run_output import summary_hits_cache
from replay.simulator.run_rows import COUNTERS, first_row, run_columns

REQUEST_COLUMNS = (
    "k",
    "step",
    "items",
    "prompt_tokens",
    "est_tokens",
    "overflow",
    "near_miss",
    "emergency",
    "summarised",
    "trimmed_tokens",
    "cached_tokens",
    "written_tokens",
    "summary_tokens",
    "recorded_prompt",
    "recorded_cache_read",
) + tuple(f"tok_{k}" for k in KINDS)


def simulate_run(
    run: RunArrays,
    policy: AnyPolicy,
    cache: CacheModel | None,
    budget: Budget | None = None,
    near_margin: float = 0.05,
    pricing: Pricing = DEFAULT_PRICING,
    overhead: int = 0,
) -> tuple[dict[str, np.ndarray], dict]:
    """Replay one run under ``policy``; return per-request columns and one run row of raw counters.

    ``cache``: the cache model for this run, None for its provider's own (replay.simulator.billing);
    ``pricing``: where prices come from (genai-prices, a price file, overrides);

    ``overhead``: tokens the log does not hold (harness system prompt, tool schemas) sent before item 0.
    The run starts as its log shows (``RunArrays.warm``: tokens already cached, e.g. a sub-agent after its parent;
    ``RunArrays.tail``: tokens sent after the last cache breakpoint, never cached; replay.simulator.run_start)."""
    return _simulate(run, policy, cache, budget, near_margin, pricing, overhead, None)


def simulate_run_by_tool(
    run: RunArrays,
    policy: AnyPolicy,
    cache: CacheModel | None,
    budget: Budget | None = None,
    near_margin: float = 0.05,
    pricing: Pricing = DEFAULT_PRICING,
    overhead: int = 0,
) -> tuple[dict[str, np.ndarray], dict, ToolComposition]:
    """:func:`simulate_run` (same columns and run row) plus the window composition by tool and part."""
    by_tool = ToolComposition(run)
    cols, row = _simulate(run, policy, cache, budget, near_margin, pricing, overhead, by_tool)
    return cols, row, by_tool


def charged_views(
    run: RunArrays,
    policy: AnyPolicy,
    budget: Budget,
    bill: Billing,
    near_margin: float = 0.05,
    overhead: int = 0,
) -> tuple[Iterator[tuple[View, int, int]], np.ndarray]:
    """((view, cached, written) per request, the item costs as the policy sees the history) of ``run`` under
    ``policy`` (built-in or written in Python), charged by ``bill``'s cache model: the compiled loop's trace. The
    run starts with its warm prefix, and its views hold the prefix item without the tail
    (``replay.simulator.run_start.split_tail``)."""
    return _charged(trace_run(run, policy, budget, bill.cache, bill.model, near_margin, overhead))


def _charged(trace: Trace) -> tuple[Iterator[tuple[View, int, int]], np.ndarray]:
    """:func:`charged_views` of a trace."""
    return zip(trace.views(), trace.cached.tolist(), trace.written.tolist(), strict=True), trace.ftok[ORIGINAL]


def _simulate(
    run: RunArrays,
    policy: AnyPolicy,
    cache: CacheModel | None,
    budget: Budget | None,
    near_margin: float,
    pricing: Pricing,
    overhead: int,
    by_tool: ToolComposition | None,
) -> tuple[dict[str, np.ndarray], dict]:
    budget = budget or Budget()
    bill = billing_for(run.model, cache, pricing, run.cache_ttl, run.cache_fit)
    trace = trace_run(run, policy, budget, bill.cache, bill.model, near_margin, overhead)
    steps, seen = _charged(trace)
    tail = run.tail
    m = run.n_requests
    cols = {c: np.zeros(m, dtype=np.int64) for c in REQUEST_COLUMNS}
    events = read_events(run)
    intact = np.ones(len(events.call), dtype=bool)
    order = np.argsort(events.decide, kind="stable")
    bounds = np.searchsorted(events.decide[order], np.arange(m + 1))
    errors = np.flatnonzero(run.is_error & (run.kind == TOOL_RESULT))
    err_hidden = np.zeros(len(errors), dtype=bool)
    full_cum = np.concatenate([[0], np.cumsum(seen)])  # the history as this policy sees it
    composition = np.zeros((m, len(KINDS)))
    for k, (view, cached, written) in enumerate(steps):
        end = view.end
        prompt = view.prompt_tokens + overhead + tail
        ev = order[bounds[k] : bounds[k + 1]]
        if len(ev):
            intact[ev] = view.forms[events.prev_result[ev]] == ORIGINAL
        live = errors[errors < end]
        err_hidden[: len(live)] |= view.forms[live] != ORIGINAL
        comp = np.bincount(run.kind[:end], weights=view.seg_tokens, minlength=len(KINDS))
        if by_tool is not None:
            by_tool.add(view, end, prompt)
        window = view.window or budget.window  # the serving model's window (a failover may shrink it)
        row = (
            k,
            int(run.req_step[k]),
            end,
            prompt,
            view.est_tokens,
            prompt + budget.reserve > window,
            prompt + budget.reserve > window * (1 - near_margin),
            view.emergency,
            view.summarised,
            int(full_cum[end] - view.seg_tokens.sum()),
            cached,
            written,
            view.summary_tokens if view.summary_at >= 0 else 0,
            run.rec_prompt[k],
            run.rec_cache_read[k],
        )
        for c, v in zip(REQUEST_COLUMNS, row, strict=False):
            cols[c][k] = v
        composition[k] = comp
    for i, kind in enumerate(KINDS):
        cols[f"tok_{kind}"] = composition[:, i].astype(np.int64)
    cols["tok_summary"] += cols["summary_tokens"]  # the policy's own summary is part of the window too
    cols["near_miss"] &= ~cols["overflow"].astype(bool)
    reads = summarise(events, classify(events, intact))
    requests = plan([run])
    costs = run_costs(
        requests, 1, [bill], cols["prompt_tokens"], cols["cached_tokens"], cols["written_tokens"], pricing
    )  # each request at its own model, day and write durations
    summ = np.flatnonzero(cols["summarised"])
    t = trace.columns  # the summariser calls' prompts (sent, written) and output, as the policy gives them
    written_call = t[:, T_SUM_WRITE] > 0
    s_cost = summary_costs(
        requests,
        1,
        [bill],
        np.where(written_call, 0, t[:, T_SUM_READ]),
        np.where(written_call, t[:, T_SUM_READ], 0),
        t[:, T_SUM_OUT],
        summary_hits_cache(policy),
        pricing,
    )[0]
    counters = {
        "requests": len(cols["k"]),
        "overflow_incidents": int(cols["overflow"].sum()),
        "near_misses": int(cols["near_miss"].sum()),
        "emergencies": int(cols["emergency"].sum()),
        "summaries": len(summ),
        "requests_between_summaries": float(np.diff(summ).mean()) if len(summ) > 1 else np.nan,
        "tokens_after_summary": float(cols["prompt_tokens"][summ].mean()) if len(summ) else np.nan,
        "prompt_tokens": int(cols["prompt_tokens"].sum()),
        "est_tokens": int(cols["est_tokens"].sum()),
        "cached_tokens": int(cols["cached_tokens"].sum()),
        "written_tokens": int(cols["written_tokens"].sum()),
        "trimmed_tokens": int(cols["trimmed_tokens"].sum()),
        "max_prompt_tokens": int(cols["prompt_tokens"].max(initial=0)),
        **{k: reads[k] for k in COUNTERS[13:19]},  # repeat_changed .. repeat_evicted_tokens
        "evicted_failures": int(err_hidden.sum()),
        "evicted_failure_tokens": int(run.tokens[errors[err_hidden]].sum()),
    }
    static = static_row(run, events.max_reads) | events.same_resource
    columns = run_columns(
        [run.run_id],
        {k: np.array([v]) for k, v in counters.items()},
        [bill],
        costs,
        np.array([s_cost], dtype=np.float64),
        {k: [v] for k, v in static.items()},
        {"window": budget.window, "reserve": budget.reserve},
    )
    return cols, first_row(columns)
