"""Seed policy A: two tiers (placeholders under a cache-reclaim floor, then a summary) and an emergency check.

Defaults are the policy as seed write-up 000 ends (after its fixes); ``seed_a_before`` is the same policy with the
settings the write-up started from, so its before/after can be replayed side by side.

Emergency margin. The estimator under-counts: the seed figure is an estimate of 83,000 against 91,000 counted by
the server, so the estimate is short by 8,000 / 91,000 = 8.8% *of the real size*. A margin m therefore bounds the
real size as ``real <= est / (1 - m)`` (83,000 / 0.8 = 103,750 >= 91,000), and the reply reserve is added exactly,
not inflated: the check fires when ``est / (1 - m) + reserve > window``. At 130,000 / 24,576 with m = 0.2 that is
est > 0.8 x 105,424 = 84,339.2: an estimate of 84,340 projects to 105,425 and 105,425 + 24,576 = 130,001 > 130,000
(the seed case), while 84,339 projects to 105,423.75 and passes. The form ``est x (1 + m)`` fires only above
87,853 and covers an under-count of at most m / (1 + m) = 16.7% of the real size, not 20%.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from replay.errors import ReplayError
from replay.jit import compiled
from replay.policies.base import CompiledPolicy
from replay.policies.config import PolicyConfig, knob
from replay.policies.kernel import (
    P_ESTIMATOR,
    P_POLICY,
    P_RESERVE,
    P_WINDOW,
    S_EMERGENCY,
    S_END,
    S_POLICY,
    WRITE,
    completed_write,
    drop,
    est_of,
    est_total,
    last_result,
    pair_safe_start,
    prefix_end,
    set_form,
    set_summary,
    text_cost,
)
from replay.policies.space import Knob
from replay.policies.view import DROPPED, ORIGINAL, PLACEHOLDER, SHRUNK
from replay.run_arrays import KIND_CODE, TOOL_CALL, TOOL_RESULT, RunArrays

WORDING = "[Old tool output of {tool} call {call_id} replaced; first/last characters kept]"
APPLIED = "[applied: {tool} {call_id}]"
# Message groups: model output (a response's text, reasoning and calls, with the results answering them), user side
# (text, images, attachments, carried summaries), the harness prefix.
ASSISTANT_GROUP = tuple(KIND_CODE[k] for k in ("assistant_text", "reasoning", "tool_call", "tool_result"))
PREFIX_GROUP = tuple(KIND_CODE[k] for k in ("system", "tool_defs"))
APPLIED_CHARS = len(APPLIED) + 24


@compiled
def opens_message(kind, req_end):
    """Bool per item: it opens a chat message.

    An assistant message is one response (the items appended between two requests) with its calls; the results
    of those calls go with it. Consecutive user-side items between two requests are one user message."""
    n = len(kind)
    group = np.zeros(n, np.int8)
    for i in range(n):
        if kind[i] in ASSISTANT_GROUP:
            group[i] = 1
        elif kind[i] in PREFIX_GROUP:
            group[i] = 2
    boundary = np.zeros(n + 1, np.bool_)
    for e in req_end:
        boundary[e] = True
    start = np.ones(n, np.bool_)
    for i in range(1, n):
        start[i] = group[i] != group[i - 1] or (boundary[i] and kind[i] != TOOL_RESULT)
    return start


def message_starts(run: RunArrays) -> np.ndarray:
    """:func:`opens_message` of a run."""
    return opens_message(run.kind, run.req_end.astype(np.int64))


@dataclass(frozen=True)
class SeedAConfig(PolicyConfig):
    """Two tiers and an emergency check: old tool outputs become placeholders while the cache's reclaim floor
    allows, then a summary past summary_at; the project's seed policy A as seed write-up 000 ends."""

    kind = "seed_a"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    head_chars: int = knob(240, 0, 100_000, "characters kept from the start of a replaced output")
    tail_chars: int = knob(120, 0, 100_000, "characters kept from the end of a replaced output")
    wording: str = knob(WORDING, doc="placeholder text ({tool}, {call_id})")
    shrink_writes: bool = knob(True, doc="shrink completed, successful write/edit call arguments to an 'applied' note")
    protect: float = knob(
        0, 0.0, 10_000_000, "protected recent range in tokens (e.g. 12000); 0: protect_fraction of the window instead"
    )
    protect_fraction: float = knob(
        1 / 3, 0.0, 1.0, "protected recent range as a fraction of the window, used when protect is 0 (0 and 0: none)"
    )
    reclaim_floor: float = knob(0.125, 0.0, 1.0, "commit a tier-1 pass only if it reclaims this fraction of window")
    summary_at: int = knob(80_000, 1, 10_000_000, "tier 2 fires when the estimate exceeds this")
    tail_messages: int = knob(24, 0, 100_000, "verbatim tail kept after a summary, chat messages (0: no message cap)")
    tail_fraction: float = knob(0.125, 0.0, 1.0, "verbatim tail capped at this fraction of the window (0: no cap)")
    summary_tokens: int = knob(2_000, 0, 1_000_000, "size of a summary")
    task_list_tokens: int = knob(300, 0, 100_000, "task list / notes block re-inserted with the summary")
    margin: float = knob(
        0.2,
        0.0,
        0.95,
        "emergency: the estimate may under-count the real size by this fraction "
        "of it; fires when est / (1 - margin) + reserve > window",
    )

    def validate(self) -> None:
        if 0 < self.protect <= 1:  # a setting from before protect took tokens only
            raise ReplayError(
                f"{self.kind}: protect={self.protect:g} reads as a fraction of the window, but protect is now tokens "
                f"only; write protect_fraction={self.protect:g} (a fraction of the window) or protect=TOKENS"
            )
        if self.tail_messages == 0 and self.tail_fraction == 0:
            raise ReplayError(
                f"{self.kind}: tail_messages=0 and tail_fraction=0 leave the verbatim tail unbounded, "
                "so tier 2 could never summarise; set one of them"
            )


@dataclass(frozen=True)
class SeedABeforeConfig(SeedAConfig):
    """Seed policy A as write-up 000 starts (before its fixes): 12,000-token protected range, a 24-message tail
    with no token cap, a 10% emergency margin."""

    kind = "seed_a_before"
    protect: float = knob(
        12_000, 0.0, 10_000_000, "protected recent range in tokens; 0: protect_fraction of the window instead"
    )
    tail_fraction: float = knob(0.0, 0.0, 1.0, "verbatim tail capped at this fraction of the window (0: no cap)")
    margin: float = knob(
        0.1,
        0.0,
        0.95,
        "emergency: the estimate may under-count the real size by this fraction "
        "of it; fires when est / (1 - margin) + reserve > window",
    )


(
    P_KEEP_CHARS,
    P_WORDING_CHARS,
    P_SHRINK,
    P_PROTECT,
    P_RECLAIM_FLOOR,
    P_SUMMARY_AT,
    P_TAIL_MESSAGES,
    P_TAIL_FRACTION,
    P_SUMMARY_SIZE,
    P_MARGIN,
) = range(P_POLICY, P_POLICY + 10)
A_MESSAGE = 0  # aux row: 1 where an item opens a chat message
# Pointers that keep a request's work to the part of the history that can still change (items' forms only move
# away from ORIGINAL, never back): before S_SETTLED no item can ever be placed or shrunk; before S_SUMMARISED_TO
# every item is dropped (each read as max(pointer, start of the body)).
S_SETTLED, S_SUMMARISED_TO = S_POLICY, S_POLICY + 1


class SeedA(CompiledPolicy):
    name = "seed_a"
    Config = SeedAConfig
    config: SeedAConfig  # PolicyBase.__init__ checks the instance is a Config
    # seed values: summary at 80,000 of 130,000 (0.62 W), protected range a third of the window, tail capped at an
    # eighth, reclaim floor an eighth, 20% margin
    space: ClassVar[tuple[Knob, ...]] = (
        Knob("summary_at", 0.4, 0.9, 0.62, integer=True, relative=True, weight=3, usable=True),
        Knob("protect_fraction", 0.08, 0.34, 0.3333, weight=2),
        Knob("tail_fraction", 0.0625, 0.1875, 0.125, weight=1.5),
        Knob("reclaim_floor", 0.03, 0.15, 0.125, weight=1.5),
        Knob("margin", 0.1, 0.25, 0.2, weight=1.5, prefer="high"),
    )

    def limits(self, window: int) -> list[tuple[str, float]]:
        c = self.config
        if c.protect:
            return [("summary_at", c.summary_at), ("protect", c.protect)]
        return [("summary_at", c.summary_at), ("protect_fraction", c.protect_fraction * window)]

    def knobs(self, p: np.ndarray, budget) -> None:
        c = self.config
        p[P_KEEP_CHARS], p[P_WORDING_CHARS] = c.head_chars + c.tail_chars, len(c.wording) + 24
        # the protected range: tokens (> 0), or a fraction of the window stored negated (<= 0), one slot for both
        protect = c.protect if c.protect else -c.protect_fraction
        p[P_SHRINK], p[P_PROTECT], p[P_RECLAIM_FLOOR] = c.shrink_writes, protect, c.reclaim_floor
        p[P_SUMMARY_AT], p[P_TAIL_MESSAGES], p[P_TAIL_FRACTION] = c.summary_at, c.tail_messages, c.tail_fraction
        p[P_SUMMARY_SIZE], p[P_MARGIN] = c.summary_tokens + c.task_list_tokens, c.margin


@compiled(borrowed=True)
def setup(p, r, st):
    """Placeholder (head and tail kept plus the wording) and shrunk-write ('applied' note) costs; message starts."""
    estimator = int(p[P_ESTIMATOR])
    keep, wording = np.int64(p[P_KEEP_CHARS]), np.int64(p[P_WORDING_CHARS])
    for q in range(len(r.kind)):
        t, c = r.tokens[q], r.chars[q]
        st.ftok[PLACEHOLDER, q], st.fest[PLACEHOLDER, q] = text_cost(t, c, min(c, keep), wording, estimator)
        st.ftok[SHRUNK, q], st.fest[SHRUNK, q] = text_cost(t, c, 0, APPLIED_CHARS, estimator)
    starts = opens_message(r.kind, r.req_end)
    for q in range(len(starts)):  # element by element: an array assigned to a slice compiles numba's shape-error
        st.aux[A_MESSAGE, q] = starts[q]  # formatting, ~2 s of a first compile


@compiled(borrowed=True)
def shrinkable(p, r, st, q):
    """A completed, successful write/edit call (a failed write applied nothing) still original."""
    return (p[P_SHRINK] > 0) & (st.forms[q] == ORIGINAL) & completed_write(r, st, q) & ~r.is_error[max(r.pair[q], 0)]


@compiled(borrowed=True)
def placeable(st, r, q):
    """An original tool result whose placeholder is smaller."""
    return (r.kind[q] == TOOL_RESULT) & (st.forms[q] == ORIGINAL) & (st.fest[PLACEHOLDER, q] < st.fest[ORIGINAL, q])


@compiled(borrowed=True)
def may_gain(p, r, st, q):
    """Item q is placeable or shrinkable now or may become so later (a write call whose result is still to come)."""
    pair = r.pair[q]
    write = (
        (p[P_SHRINK] > 0)
        & (r.kind[q] == TOOL_CALL)
        & (r.access[q] == WRITE)
        & (pair >= 0)
        & ~((pair < st.s[S_END]) & r.is_error[max(pair, 0)])
    )
    return (st.forms[q] == ORIGINAL) & (
        ((r.kind[q] == TOOL_RESULT) & (st.fest[PLACEHOLDER, q] < st.fest[ORIGINAL, q])) | write
    )


@compiled(borrowed=True)
def settled_to(p, r, st, lo):
    """First position (at least ``lo``) from which an item may still be placed or shrunk; moves the pointer on."""
    q, end = max(st.s[S_SETTLED], lo), st.s[S_END]
    while q < end and not may_gain(p, r, st, q):
        q += 1
    st.s[S_SETTLED] = q
    return q


@compiled(borrowed=True)
def tier1(p, r, st, lo):
    """Placeholders outside the protected recent range, committed only when they reclaim the floor."""
    end, window = st.s[S_END], p[P_WINDOW]
    limit = -p[P_PROTECT] * window if p[P_PROTECT] <= 0 else p[P_PROTECT]  # see SeedA.knobs
    # the newest items within the limit; [lo, S_SUMMARISED_TO) is all dropped (costs nothing), so it is counted, not
    # walked: the walk is the live view's length, not the history's
    cut = max(lo, min(st.s[S_SUMMARISED_TO], end))
    acc = inside = 0
    within = True
    for q in range(end - 1, cut - 1, -1):
        acc += est_of(st, q)
        if acc > limit:
            within = False
            break
        inside += 1
    if within:
        inside += cut - lo
        for q in range(lo - 1, -1, -1):
            acc += est_of(st, q)
            if acc > limit:
                break
            inside += 1
    hi = max(end - max(inside, 1), 0)
    lo = settled_to(p, r, st, lo)
    gain = 0
    for q in range(lo, hi):
        if placeable(st, r, q):
            gain += st.fest[ORIGINAL, q] - st.fest[PLACEHOLDER, q]
        elif r.kind[q] == TOOL_CALL and shrinkable(p, r, st, q):
            gain += max(st.fest[ORIGINAL, q] - st.fest[SHRUNK, q], 0)
    if gain > 0 and gain >= p[P_RECLAIM_FLOOR] * window:  # else the pass is undone entirely
        for q in range(lo, hi):
            if placeable(st, r, q):
                set_form(st, q, PLACEHOLDER)
            elif r.kind[q] == TOOL_CALL and shrinkable(p, r, st, q):
                set_form(st, q, SHRUNK)


@compiled(borrowed=True)
def tail_from(p, r, st, lo):
    """Start of the verbatim tail: whole live chat messages, at most ``tail_messages`` of them and at most
    ``tail_fraction`` of the window by estimate (0: that cap is off), at least the newest message; moved back so
    that no call is split from its result."""
    end = st.s[S_END]
    cap_msgs, cap_tok = np.int64(p[P_TAIL_MESSAGES]), p[P_TAIL_FRACTION] * p[P_WINDOW]
    acc = count = 0
    start = lo
    for q in range(end - 1, max(lo, st.s[S_SUMMARISED_TO]) - 1, -1):  # nothing before the pointer is live
        acc += est_of(st, q)
        if not st.aux[A_MESSAGE, q] or st.forms[q] == DROPPED:
            continue
        count += 1
        if count > 1 and (cap_msgs > 0 and count > cap_msgs or cap_tok > 0 and acc > cap_tok):
            break
        start = q
    return pair_safe_start(r, st, start)


@compiled(borrowed=True)
def tier2(p, r, st, lo):
    """Everything before the verbatim tail becomes the summary (with the task list)."""
    start = tail_from(p, r, st, lo)
    if start <= lo:
        return
    for q in range(max(lo, st.s[S_SUMMARISED_TO]), start):
        drop(r, st, q)
    st.s[S_SUMMARISED_TO] = max(st.s[S_SUMMARISED_TO], start)
    size = np.int64(p[P_SUMMARY_SIZE])
    set_summary(st, start, size, size)


@compiled(borrowed=True)
def emergency(p, r, st, lo):
    """Trim inside the protected range too, oldest first, only as needed, never the newest output."""
    st.s[S_EMERGENCY] = 1
    end = st.s[S_END]
    need = est_total(st) - (p[P_WINDOW] - p[P_RESERVE]) * (1 - p[P_MARGIN])
    last = last_result(r, lo, end)
    saved = 0
    for q in range(settled_to(p, r, st, lo), max(last, lo)):
        if placeable(st, r, q):
            saved += st.fest[ORIGINAL, q] - st.fest[PLACEHOLDER, q]
            set_form(st, q, PLACEHOLDER)
            if saved >= need:
                break


@compiled(borrowed=True)
def decide(p, r, st):
    lo = prefix_end(r, st)
    if st.s[S_END] > 0:
        tier1(p, r, st, lo)
    if est_total(st) > p[P_SUMMARY_AT]:
        tier2(p, r, st, lo)
    # the estimate may under-count the real size by ``margin`` of it: fires when est / (1 - m) + reserve > window
    if est_total(st) / (1 - p[P_MARGIN]) + p[P_RESERVE] > p[P_WINDOW]:
        emergency(p, r, st, lo)


class SeedABefore(SeedA):
    """Seed policy A before write-up 000's fixes (see SeedABeforeConfig)."""

    name = "seed_a_before"
    Config = SeedABeforeConfig
    config: SeedABeforeConfig  # PolicyBase.__init__ checks the instance is a Config
    space = ()  # a record of the seed as it started, not a policy to tune


POLICIES = [SeedA, SeedABefore]
