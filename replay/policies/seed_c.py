"""Seed policy C: three layers (spill at the source, markers only when over budget, a durable summary).

Layer 1 caps an oversized output the moment it arrives: a result whose estimate exceeds ``spill_tokens``
becomes a preview of ``preview_chars`` plus a pointer to the full output (SPILLED). It only ever touches items
new since the previous request, so it never rewrites a prefix that was already sent.

Layer 2 is a request-time view: before every request the markers are recomputed from the unmarked history, and
only when the estimate exceeds the budget (window - reserve) do older results become pointer markers (OMITTED),
oldest first and only as many as needed; when room returns (a summary, or a smaller newest output) the markers
that are no longer needed go, and the cache is charged only from the first position that changed. The current
turn (the items appended since the previous request: the latest model response and its tool results,
``protect_turns`` of them) is protected, and failed results (``run.is_error``) are never withheld.

Layer 3 fires when the history still overflows after every marker: everything before a recent tail is
replaced by a durable summary (rolling: a later overflow folds more into it). Failed results and their calls
stay verbatim. If the normal tail (``tail_fraction`` of the budget) is still too large, the tail shrinks to the
protected turn. Markers are then applied inside the tail too.

Cost per request: what changed (the new items, the markers from where marking stopped, the protected turns) and a
tail walk that stops at ``S_FOLD_FROM``, before which nothing is shown that a summary folds, so a summary that
would fold nothing scans no history. Two paths still grow with the history, each bounded: a run whose steps ever
decrease finds its protected turns by a scan of the history (``protect_turns`` x items per request; every reader
gives sorted steps, which walk back over those turns only), and a request at which the server drops an item of an
earlier turn (``gone_at``) revisits the markers from that item on (items, on such requests only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.jit import compiled
from replay.policies.base import CompiledPolicy
from replay.policies.config import PolicyConfig, knob
from replay.policies.kernel import (
    P_ESTIMATOR,
    P_POLICY,
    P_RESERVE,
    P_WINDOW,
    S_DIRTY,
    S_END,
    S_POLICY,
    S_PREV_END,
    S_SUM_AT,
    S_SUM_EST,
    drop,
    est_of,
    est_total,
    pair_safe_start,
    pinned,
    prefix_end,
    set_form,
    set_summary,
    text_cost,
)
from replay.policies.space import Knob
from replay.policies.view import DROPPED, OMITTED, ORIGINAL, SPILLED
from replay.run_arrays import TOOL_RESULT

MARKER = "[Output of {tool} call {call_id} withheld; full output at {pointer}]"
POINTER = "[Output truncated to a preview; full output at {pointer}]"
POINTER_CHARS = 40  # a spill path or id, e.g. .spill/<run>/<call_id>.txt
SPILL_WORDING = len(POINTER) + POINTER_CHARS
NO_KEY = np.iinfo(np.int64).max  # nth_largest: no such key


@dataclass(frozen=True)
class SeedCConfig(PolicyConfig):
    """Three layers: an oversized output spilled to a preview when it arrives, older results marked only when
    over budget, a durable summary; the project's seed policy C."""

    kind = "seed_c"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    spill_tokens: int = knob(10_000, 0, 10_000_000, "outputs estimated above this are spilled at the source (0: off)")
    preview_chars: int = knob(2_000, 0, 1_000_000, "preview kept of a spilled output, characters")
    spill_errors: bool = knob(False, doc="also spill failed outputs (default: failures are never withheld)")
    marker: str = knob(MARKER, doc="marker for a withheld output ({tool}, {call_id}, {pointer})")
    protect_turns: int = knob(1, 1, 100_000, "newest turns (model response plus its results) never withheld")
    summary_tokens: int = knob(2_000, 0, 1_000_000, "size of the durable summary (at most what it replaces)")
    tail_fraction: float = knob(0.25, 0.0, 1.0, "recent tail kept verbatim after a summary, fraction of the budget")


(
    P_SPILL_TOKENS,
    P_PREVIEW_CHARS,
    P_SPILL_ERRORS,
    P_MARKER_CHARS,
    P_PROTECT_TURNS,
    P_SUMMARY_TOKENS,
    P_TAIL_FRACTION,
) = range(P_POLICY, P_POLICY + 7)
A_SPILLABLE = 0  # aux row: 1 where a result is spilled on arrival (and a marker goes back to SPILLED)
A_SAVING = 1  # aux row, set on arrival: what a marker saves on a successful result (0: never withheld)
A_MARKED = 2  # aux row: 1 while the item shows a marker
A_KEPT_BY = 3  # aux row: the first failed result whose call the item is (the run's length: none)
S_SUMMARY_SIZE = S_POLICY  # the rolling summary's size
S_STEPS_SORTED = S_POLICY + 1  # 1 when the run's steps never decrease
S_MARKS = S_POLICY + 2  # markers in the view
S_SAVED = S_POLICY + 3  # estimate the markers save
S_MARKED_TO = S_POLICY + 4  # the markers are every withholdable result from the prefix's end to this position
S_FOLD_FROM = S_POLICY + 5  # every item before it still shown is one any summary reaching it keeps


class SeedC(CompiledPolicy):
    name = "seed_c"
    Config = SeedCConfig
    config: SeedCConfig  # PolicyBase.__init__ checks the instance is a Config
    space = (
        Knob("spill_tokens", 0.02, 0.15, 0.077, integer=True, relative=True, weight=2, usable=True),
        Knob("preview_chars", 500, 4000, 2000, integer=True, weight=1.5),
        Knob("tail_fraction", 0.1, 0.5, 0.25, weight=1.5),
        Knob("protect_turns", 1, 3, 1, integer=True, weight=1, step=1),
    )

    def limits(self, window: int) -> list[tuple[str, float]]:
        return [("spill_tokens", self.config.spill_tokens)] if self.config.spill_tokens else []

    def knobs(self, p: np.ndarray, budget) -> None:
        c = self.config
        p[P_SPILL_TOKENS], p[P_PREVIEW_CHARS], p[P_SPILL_ERRORS] = c.spill_tokens, c.preview_chars, c.spill_errors
        p[P_MARKER_CHARS], p[P_PROTECT_TURNS] = len(c.marker) + POINTER_CHARS, c.protect_turns
        p[P_SUMMARY_TOKENS], p[P_TAIL_FRACTION] = c.summary_tokens, c.tail_fraction


@compiled(borrowed=True)
def setup(p, r, st):
    """Spilled (preview plus pointer) and marker costs; which results spill on arrival; which calls a summary
    keeps."""
    estimator = int(p[P_ESTIMATOR])
    preview, marker = np.int64(p[P_PREVIEW_CHARS]), np.int64(p[P_MARKER_CHARS])
    threshold = np.int64(p[P_SPILL_TOKENS])
    errors_too = p[P_SPILL_ERRORS] > 0
    n = len(r.kind)
    for q in range(n):
        t, c = r.tokens[q], r.chars[q]
        st.ftok[SPILLED, q], st.fest[SPILLED, q] = text_cost(t, c, min(c, preview), SPILL_WORDING, estimator)
        st.ftok[OMITTED, q], st.fest[OMITTED, q] = text_cost(t, c, 0, marker, estimator)
        st.aux[A_SPILLABLE, q] = (
            (r.kind[q] == TOOL_RESULT)
            & (threshold > 0)
            & (st.fest[ORIGINAL, q] > threshold)
            & (st.fest[SPILLED, q] < st.fest[ORIGINAL, q])
            & (errors_too | ~r.is_error[q])
        )
    kept_by = st.aux[A_KEPT_BY]
    kept_by[:] = n
    for e in range(r.first_body, n):
        call = r.pair[e]
        if (r.kind[e] == TOOL_RESULT) & r.is_error[e] & (call >= 0) & (call < n):
            kept_by[call] = min(kept_by[call], e)
    st.s[S_STEPS_SORTED] = 1
    for q in range(1, n):
        if r.step[q] < r.step[q - 1]:
            st.s[S_STEPS_SORTED] = 0


@compiled(borrowed=True)
def limit(p):
    return p[P_WINDOW] - p[P_RESERVE]


@compiled(borrowed=True)
def nth_largest(r, st, key, lo, hi, n, results, live):
    """The n-th largest distinct ``key`` over [lo, hi) (only tool results if ``results``, only items not dropped if
    ``live``); the smallest when there are fewer; NO_KEY when n is 0 or there is none."""
    upper = NO_KEY
    any_kind, any_form = not results, not live
    for _ in range(n):
        best, found = 0, False
        for q in range(lo, hi):
            if (
                (key[q] < upper)
                & ((not found) | (key[q] > best))
                & (any_kind | (r.kind[q] == TOOL_RESULT))
                & (any_form | (st.forms[q] != DROPPED))
            ):
                best, found = key[q], True
        if not found:
            break
        upper = best
    return upper


@compiled(borrowed=True)
def protected_from(p, r, st):
    """First position of the protected newest turns (items sharing the newest ``protect_turns`` steps); with sorted
    steps a walk back over those turns."""
    end, turns = st.s[S_END], np.int64(p[P_PROTECT_TURNS])
    if st.s[S_STEPS_SORTED] and end > 0 and turns > 0:
        q, seen = end - 1, 1
        while q > 0:
            if r.step[q - 1] != r.step[q]:
                if seen == turns:
                    break
                seen += 1
            q -= 1
        return q
    first = nth_largest(r, st, r.step, 0, end, turns, False, False)
    return np.searchsorted(r.step[:end], first, side="left")


@compiled(borrowed=True)
def arrive(r, st):
    """Results new since the previous request that are spillable and still original are spilled (never a prefix
    already sent); what a marker would save on each new item: a successful result shown whole or spilled whose
    marker is smaller, else 0."""
    for q in range(st.s[S_PREV_END], st.s[S_END]):
        spillable = st.aux[A_SPILLABLE, q] != 0
        if spillable & (st.forms[q] == ORIGINAL):
            set_form(st, q, SPILLED)
        saving = st.fest[SPILLED if spillable else ORIGINAL, q] - st.fest[OMITTED, q]
        withholdable = (r.kind[q] == TOOL_RESULT) & ~r.is_error[q] & (saving > 0)
        st.aux[A_SAVING, q] = saving if withholdable else 0


@compiled(inline="always")
def unmarked(st, q):
    """Item q no longer counts as a marker (it is restored or dropped)."""
    if st.aux[A_MARKED, q]:
        st.aux[A_MARKED, q] = 0
        st.s[S_MARKS] -= 1
        st.s[S_SAVED] -= st.aux[A_SAVING, q]


@compiled(borrowed=True)
def release(st, q):
    """Marker q goes back to the unmarked form (spilled or original)."""
    set_form(st, q, SPILLED if st.aux[A_SPILLABLE, q] else ORIGINAL)
    unmarked(st, q)


@compiled(borrowed=True)
def forget_gone(st, lo):
    """Markers from ``lo`` on that the server dropped since the previous view no longer count."""
    for q in range(lo, st.s[S_MARKED_TO]):
        if (st.aux[A_MARKED, q] != 0) & (st.forms[q] == DROPPED):
            unmarked(st, q)


@compiled(borrowed=True)
def remark(p, r, st, lo, guard):
    """Markers on the oldest withholdable results in [lo, guard), only as many as the view is over by (none when
    it fits), as marking from scratch would place them: the markers are every withholdable result in
    [lo, S_MARKED_TO), so the previous view's stay, the newest go while the rest still suffice, or more follow.
    Each form set here is a real change from the previous view (or lies after a position a summary dropped)."""
    s = st.s
    marked, saving = st.aux[A_MARKED], st.aux[A_SAVING]
    guard = max(guard, lo)
    x = max(s[S_MARKED_TO], lo)
    while x > guard:  # the protected turns start earlier than before
        x -= 1
        if marked[x]:
            release(st, x)
    need = est_total(st) + s[S_SAVED] - limit(p)
    while s[S_MARKS] > 0:
        while marked[x - 1] == 0:
            x -= 1
        if s[S_SAVED] - saving[x - 1] < need:
            break
        x -= 1
        release(st, x)
    while (s[S_SAVED] < need) & (x < guard):
        if (saving[x] > 0) & (st.forms[x] != DROPPED):
            set_form(st, x, OMITTED)
            marked[x] = 1
            s[S_MARKS] += 1
            s[S_SAVED] += saving[x]
        x += 1
    s[S_MARKED_TO] = x


@compiled(borrowed=True)
def tail_from(r, st, guard, tokens, floor):
    """Start of a verbatim tail of about ``tokens`` (never after ``guard``), not splitting a pair; ``floor`` when the
    tail would start at or before ``floor`` (the walk back stops there: at most the tail's items after ``floor``)."""
    end = st.s[S_END]
    acc = 0
    start = end
    for q in range(end - 1, floor - 1, -1):
        acc += est_of(st, q)
        if acc > tokens:
            break
        start = q
    start = min(start, guard)
    return floor if start <= floor else pair_safe_start(r, st, start)


@compiled(inline="always")
def folds(r, st, q, start):
    """Item q goes into a summary standing before ``start``: it is shown and is neither a failed result nor the
    call of one before ``start``."""
    kept = ((r.kind[q] == TOOL_RESULT) & r.is_error[q]) | (st.aux[A_KEPT_BY, q] < start)
    return (st.forms[q] != DROPPED) & ~kept


@compiled(borrowed=True)
def forget(r, st, q):
    """Drop item q with its partner (``kernel.drop``); a marker among them no longer counts; harness prefix stays."""
    if pinned(r, q):
        return
    unmarked(st, q)
    partner = r.pair[q]
    if 0 <= partner < st.s[S_END]:
        unmarked(st, partner)
    drop(r, st, q)


@compiled(borrowed=True)
def summarise(p, r, st, lo, guard, tokens):
    """Everything in [lo, tail) but failed results and their calls folds into the rolling summary, if that saves;
    whether it did. Only [S_FOLD_FROM, tail) is visited: before S_FOLD_FROM nothing is still shown but what every
    summary keeps (failed results, and calls whose failed result is before any tail, since a tail never starts
    between a call and its result), so a tail starting at or before it folds nothing and costs no scan."""
    s = st.s
    first = max(s[S_FOLD_FROM], lo)
    start = tail_from(r, st, guard, tokens, first)
    if start <= first:
        return False  # nothing before the tail folds: what is still shown before S_FOLD_FROM is kept
    folded = gone = 0
    for q in range(first, start):
        if folds(r, st, q, start):
            folded += est_of(st, q)
            gone += 1
    if gone == 0:
        s[S_FOLD_FROM] = max(s[S_FOLD_FROM], start)
        return False
    size = min(np.int64(p[P_SUMMARY_TOKENS]), s[S_SUMMARY_SIZE] + folded)
    if size >= folded + (s[S_SUM_EST] if s[S_SUM_AT] >= 0 else 0):
        return False  # a summary would not save anything
    for q in range(first, start):
        if folds(r, st, q, start):
            forget(r, st, q)
    s[S_FOLD_FROM] = max(s[S_FOLD_FROM], start)
    s[S_SUMMARY_SIZE] = size
    set_summary(st, start, size, size)
    return True


@compiled(borrowed=True)
def fit(p, r, st):
    """Markers outside the protected turns; while still over, a summary before a tail (the normal one, then the
    protected turns only), after which only the markers still needed stay."""
    lo, guard = prefix_end(r, st), protected_from(p, r, st)
    remark(p, r, st, lo, guard)
    for i in range(2):
        if est_total(st) <= limit(p):
            return
        if summarise(p, r, st, lo, guard, p[P_TAIL_FRACTION] * limit(p) if i == 0 else 0.0):
            remark(p, r, st, lo, guard)


@compiled(borrowed=True)
def decide(p, r, st):
    """The request-time view, kept up to date rather than rebuilt: spill the new results, then markers (and a
    summary) only while over budget. Every form changed is one that differs from the previous view, so the cache
    is charged only from the first real change."""
    s = st.s
    end, gone_from = s[S_END], s[S_DIRTY]  # the server's drops since the previous view are at or after gone_from
    if end > s[S_PREV_END]:
        arrive(r, st)
    if gone_from < s[S_MARKED_TO]:
        forget_gone(st, gone_from)
    if end > 0 and (s[S_MARKS] > 0 or est_total(st) > limit(p)):  # else the view stays as it is
        fit(p, r, st)


POLICIES = [SeedC]
