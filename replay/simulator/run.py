"""The loop: for each request, step the policy, charge the cache, count. Raw counters out, ratios derived later."""

from __future__ import annotations

import math

import numpy as np

from replay.metrics.composition import ToolComposition
from replay.metrics.cost import output_cost, prompt_cost, summary_cost
from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.metrics.repeat_reads import classify, read_events, summarise
from replay.metrics.runs import run_row
from replay.model import KINDS
from replay.policies.base import Budget, Policy
from replay.policies.view import ORIGINAL, View
from replay.simulator.arrays import TOOL_RESULT, RunArrays
from replay.simulator.billing import Billing, billing_for
from replay.simulator.caches import CacheModel

REQUEST_COLUMNS = ("k", "step", "items", "prompt_tokens", "est_tokens", "overflow", "near_miss", "emergency",
                   "summarised", "trimmed_tokens", "cached_tokens", "written_tokens", "summary_tokens",
                   "recorded_prompt", "recorded_cache_read") + tuple(f"tok_{k}" for k in KINDS)


class PolicyResultError(TypeError):
    """A policy returned something other than one View for the request asked."""


def _check(view: object, k: int, end: int) -> View:
    if not isinstance(view, View):
        raise PolicyResultError(f"request {k}: policy returned {type(view).__name__}, expected View")
    if view.k != k or view.end != end:
        raise PolicyResultError(f"request {k}: view is for request {view.k} with {view.end} items, expected {end}")
    return view


def simulate_run(run: RunArrays, policy: Policy, cache: CacheModel | None, budget: Budget | None = None,
                 near_margin: float = 0.05, pricing: Pricing = DEFAULT_PRICING, overhead: int = 0,
                 warm: bool | int = False, tail: int = 0) -> tuple[dict[str, np.ndarray], dict]:
    """Replay one run under ``policy``; return per-request columns and one run row of raw counters.

    ``cache``: the cache model for this run, None for its provider's own (replay.simulator.billing);
    ``pricing``: where prices come from (genai-prices, a price file, overrides);

    ``overhead``: tokens the log does not hold (harness system prompt, tool schemas) sent before item 0;
    ``warm``: tokens already cached when the run starts, from the start of the prompt (e.g. a subagent after its
    parent, or the harness prefix other sessions keep warm): True for all of ``overhead``, or how many tokens;
    ``tail``: tokens the log does not hold that the harness sends after the last cache breakpoint (never cached)."""
    return _simulate(run, policy, cache, budget, near_margin, pricing, overhead, warm, None, tail)


def simulate_run_by_tool(run: RunArrays, policy: Policy, cache: CacheModel | None, budget: Budget | None = None,
                         near_margin: float = 0.05, pricing: Pricing = DEFAULT_PRICING, overhead: int = 0,
                         warm: bool | int = False, tail: int = 0
                         ) -> tuple[dict[str, np.ndarray], dict, ToolComposition]:
    """:func:`simulate_run` (same columns and run row) plus the window composition by tool and part."""
    by_tool = ToolComposition(run)
    cols, row = _simulate(run, policy, cache, budget, near_margin, pricing, overhead, warm, by_tool, tail)
    return cols, row, by_tool


def _simulate(run: RunArrays, policy: Policy, cache: CacheModel | None, budget: Budget | None, near_margin: float,
              pricing: Pricing, overhead: int, warm: bool | int,
              by_tool: ToolComposition | None, tail: int = 0) -> tuple[dict[str, np.ndarray], dict]:
    budget = budget or Budget()
    policy.reset(run, budget)
    bill = billing_for(run.model, cache, pricing, run.cache_ttl)
    cache = bill.cache
    cache.reset(bill.model)
    warm_tokens = overhead if warm is True else int(warm)
    if warm_tokens > 0:  # cached from the start of the prompt: the overhead, then the run's leading items
        full = overhead + np.concatenate([[0], np.cumsum(run.tokens)])
        p = int(np.searchsorted(full, warm_tokens, side="right")) - 1
        cache.entries = [[p, int(full[p]) if p > 0 else warm_tokens, np.inf]]  # p 0: part of the first item
    m = run.n_requests
    cols = {c: np.zeros(m, dtype=np.int64) for c in REQUEST_COLUMNS}
    events = read_events(run)
    intact = np.ones(len(events.call), dtype=bool)
    order = np.argsort(events.decide, kind="stable")
    bounds = np.searchsorted(events.decide[order], np.arange(m + 1))
    errors = np.flatnonzero(run.is_error & (run.kind == TOOL_RESULT))
    err_hidden = np.zeros(len(errors), dtype=bool)
    full_cum = np.concatenate([[0], np.cumsum(policy.ftok[ORIGINAL])])  # the history as this policy sees it
    composition = np.zeros((m, len(KINDS)))
    for k in range(m):
        end = int(run.req_end[k])
        view = _check(policy.step(k), k, end)
        cum = view.cumulative() + overhead
        prompt = view.prompt_tokens + overhead + tail
        ts = float(run.req_ts[k])
        cached, written = cache.request(view, cum, ts, min(run.first_body, end))
        ev = order[bounds[k]:bounds[k + 1]]
        if len(ev):
            intact[ev] = view.forms[events.prev_result[ev]] == ORIGINAL
        live = errors[errors < end]
        err_hidden[:len(live)] |= view.forms[live] != ORIGINAL
        comp = np.bincount(run.kind[:end], weights=view.seg_tokens, minlength=len(KINDS))
        if by_tool is not None:
            by_tool.add(view, end, prompt)
        window = view.window or budget.window  # the serving model's window (a failover may shrink it)
        row = (k, int(run.req_step[k]), end, prompt, view.est_tokens, prompt + budget.reserve > window,
               prompt + budget.reserve > window * (1 - near_margin), view.emergency, view.summarised,
               int(full_cum[end] - view.seg_tokens.sum()), cached, written,
               view.summary_tokens if view.summary_at >= 0 else 0, run.rec_prompt[k], run.rec_cache_read[k])
        for c, v in zip(REQUEST_COLUMNS, row, strict=False):
            cols[c][k] = v
        composition[k] = comp
    for i, kind in enumerate(KINDS):
        cols[f"tok_{kind}"] = composition[:, i].astype(np.int64)
    cols["tok_summary"] += cols["summary_tokens"]  # the policy's own summary is part of the window too
    cols["near_miss"] &= ~cols["overflow"].astype(bool)
    reads = summarise(events, classify(events, intact))
    r = bill.rates
    uncached = cols["prompt_tokens"] - cols["cached_tokens"] - cols["written_tokens"]
    cost = prompt_cost(int(uncached.sum()), int(cols["cached_tokens"].sum()), int(cols["written_tokens"].sum()),
                       r.input, r.cache_read, r.cache_write)
    summ = np.flatnonzero(cols["summarised"])
    history = int(cols["prompt_tokens"][summ[summ > 0] - 1].sum())
    s_cost = summary_cost(history, int(cols["summary_tokens"][summ].sum()), r.input, r.output,
                          r.cache_read if summary_hits_cache(policy) else None)
    out = recorded_output(run)
    o_cost = output_cost(out["output_tokens"], r.output)
    extra = {**reads, "evicted_failures": int(err_hidden.sum()),
             "evicted_failure_tokens": int(run.tokens[errors[err_hidden]].sum()),
             **cost_columns(bill, cost, s_cost, o_cost), **out, "token_source": run.token_source,
             "window": budget.window, "reserve": budget.reserve}
    return cols, run_row(run.run_id, cols, extra)


OUTPUT_KINDS = np.array([KINDS.index(k) for k in ("assistant_text", "reasoning", "tool_call")])


def recorded_output(run: RunArrays) -> dict:
    """The run's output tokens: recorded per request (``requests.output_tokens``); a request without a record
    counts the assistant items it produced (text, reasoning, calls appended at the next step).
    ``output_source``: recorded, items or mixed."""
    rec = run.rec_output if len(run.rec_output) == run.n_requests else np.full(run.n_requests, -1)
    known = rec >= 0
    total = int(rec[known].sum())
    if not known.all():
        produced = np.isin(run.kind, OUTPUT_KINDS)
        by_step = np.bincount(run.step[produced], weights=run.tokens[produced], minlength=run.n_requests + 1)
        idx = run.req_step[~known] + 1
        total += int(by_step[idx[idx < len(by_step)]].sum())
    source = "recorded" if known.all() else "items" if not known.any() else "mixed"
    return {"output_tokens": total, "output_source": source}


def summary_hits_cache(policy: Policy) -> bool:
    """Whether the policy's summarisation calls read the cached prefix (a policy says so with a
    ``summary_reads_cache`` attribute; by default they are uncached: no tools, a different prefix)."""
    return bool(getattr(policy, "summary_reads_cache", False))


def cost_columns(bill: Billing, prompt_usd: float, summary_usd: float, output_usd: float) -> dict:
    """Run-row cost columns: the total and its parts, the rates charged, where prices came from (NaN costs:
    an unknown price)."""
    r = bill.rates
    money = {"cost_usd": prompt_usd + summary_usd + output_usd, "prompt_cost_usd": prompt_usd,
             "summary_cost_usd": summary_usd, "output_cost_usd": output_usd, "price_per_mtok": r.input,
             "output_per_mtok": r.output, "cache_read_per_mtok": r.cache_read, "cache_write_per_mtok": r.cache_write}
    return {**{k: nan_to_none(float(v)) for k, v in money.items()}, "price_source": bill.price_source,
            "model": bill.model, "cache_model": bill.cache.name, "cache_ttl": getattr(bill.cache, "ttl", None),
            "billing_note": bill.note}


def nan_to_none(x: float) -> float | None:
    return None if isinstance(x, float) and math.isnan(x) else x
