"""Per run under one policy setting: the repeat counts and loop episodes, from the views ``replay show`` and
``simulate`` charge (``replay.simulator.run.charged_views``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from replay.behaviour.loops import Episode, episodes, sentence
from replay.behaviour.mech import mech
from replay.behaviour.pressure import working_set
from replay.behaviour.repeats import RepeatCalls, hidden_at_decide, repeat_calls
from replay.policies.base import AnyPolicy, Budget
from replay.policies.view import View
from replay.readers.tool_targets import EDITOR_TOOLS
from replay.run_arrays import ACCESS_CODE, RunArrays
from replay.simulator.billing import billing_for
from replay.simulator.run import charged_views

VISIBLE_SHARE = 0.1  # "visible at keep_last >= N": the smallest N hiding at most this share of an episode's repeats
KNOBS = ("keep_last", "n")  # the window knob: masking's keep_last, last_n's n
RUN_COLUMNS = (
    "run_id",
    "requests",
    "repeats",
    "stale_repeats",
    "blind_repeats",
    "loop_episodes",
    "pressured_requests",
    "mech_requests",
    "mech_prompt_tokens",
    "blind_uses",
    "loop_exposure",
    "summaries",
)
EPISODE_COLUMNS = (
    "run_id",
    "episode",
    "first_call",
    "calls",
    "repeats",
    "distinct_calls",
    "period",
    "hidden_share",
    "visible_at",
    "sentence",
)


def views(run: RunArrays, policy: AnyPolicy, budget: Budget) -> Iterator[View]:
    """Each request's view under ``policy`` as simulate and show see it (the run's own provider cache)."""
    bill = billing_for(run.model, None, recorded_ttl=run.cache_ttl, fit=run.cache_fit)
    steps, _ = charged_views(run, policy, budget, bill)
    return (view for view, _, _ in steps)


def blind(run: RunArrays, events: RepeatCalls, policy: AnyPolicy, budget: Budget) -> np.ndarray:
    """Per repeat: unchanged, and its earlier identical result hidden by the policy at the deciding request."""
    return events.stale & hidden_at_decide(events, views(run, policy, budget))


def tool_labels(run: RunArrays, events: RepeatCalls) -> list[str]:
    read = ACCESS_CODE["read"]
    out = []
    for c in events.calls.tolist():
        name = run.tool_names[run.tool[c]] if run.tool[c] >= 0 else "call"
        out.append("view" if name in EDITOR_TOOLS and run.access[c] == read else name)
    return out


def window_knob(policy: AnyPolicy) -> str | None:
    """The policy's knob that counts kept tool results, if it has one."""
    return next((k for k in KNOBS if isinstance(getattr(policy.config, k, None), int)), None)


def visible_at(
    run: RunArrays, events: RepeatCalls, ep: Episode, policy: AnyPolicy, budget: Budget, limit: int
) -> int | None:
    """The smallest window knob setting (``keep_last``, ``n``) above the policy's own that hides at most
    ``VISIBLE_SHARE`` of the episode's repeats; None when the policy has no such knob or no setting up to ``limit``
    does."""
    knob = window_knob(policy)
    if knob is None:
        return None
    for n in range(getattr(policy.config, knob) + 1, limit + 1):
        other = type(policy)(dataclasses.replace(policy.config, **{knob: n}))
        if blind(run, events, other, budget)[ep.repeat_rows].mean() <= VISIBLE_SHARE:
            return n
    return None


def behaviour(run: RunArrays, policy: AnyPolicy, budget: Budget) -> tuple[dict, list[dict]]:
    """(run row, episode rows) of ``run`` under ``policy``."""
    events = repeat_calls(run)
    hidden = blind(run, events, policy, budget)
    eps = episodes(events, tool_labels(run, events))
    knob = window_knob(policy)
    window = getattr(policy.config, knob) if knob else None
    rows = []
    for i, ep in enumerate(eps):
        share = float(hidden[ep.repeat_rows].mean())
        at = visible_at(run, events, ep, policy, budget, limit=4 * ep.period + 8) if share > VISIBLE_SHARE else None
        rows.append(
            dict(
                zip(
                    EPISODE_COLUMNS,
                    (
                        run.run_id,
                        i,
                        int(events.calls[ep.first]),
                        ep.calls,
                        ep.repeats,
                        ep.distinct,
                        ep.period,
                        round(share, 4),
                        at,
                        sentence(ep, share, window, at, knob or "keep_last"),
                    ),
                    strict=True,
                )
            )
        )
    stale = int(events.stale.sum())
    ws = working_set(run, views(run, policy, budget))
    rereads = mech(run, lambda r: views(r, policy, budget))
    values = (run.run_id, run.n_requests, len(events.call), stale, int(hidden.sum()), len(eps), int(ws.pressured.sum()))
    exposure = (int(ws.blind.sum()), round(ws.loop_exposure, 6), ws.summaries)
    row = dict(zip(RUN_COLUMNS, (*values, rereads.requests, rereads.prompt_tokens, *exposure), strict=True))
    return row, rows
