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
    S_END,
    S_POLICY,
    S_PREV_END,
    S_SUM_AT,
    S_SUM_EST,
    drop,
    est_of,
    est_total,
    pair_safe_start,
    prefix_end,
    request_time_begin,
    request_time_end,
    set_form,
    set_summary,
    text_cost,
)
from replay.policies.view import DROPPED, OMITTED, ORIGINAL, SPILLED
from replay.simulator.arrays import TOOL_RESULT

MARKER = "[Output of {tool} call {call_id} withheld; full output at {pointer}]"
POINTER = "[Output truncated to a preview; full output at {pointer}]"
POINTER_CHARS = 40  # a spill path or id, e.g. .spill/<run>/<call_id>.txt
SPILL_WORDING = len(POINTER) + POINTER_CHARS
NO_KEY = np.iinfo(np.int64).max  # nth_largest: no such key


@dataclass(frozen=True)
class SeedCConfig(PolicyConfig):
    """Seed policy C."""

    kind = "seed_c"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    spill_tokens: int = knob(10_000, 0, 10_000_000, "outputs estimated above this are spilled at the source (0: off)")
    preview_chars: int = knob(2_000, 0, 1_000_000, "preview kept of a spilled output, characters")
    spill_errors: bool = knob(False, doc="also spill failed outputs (default: failures are never withheld)")
    marker: str = knob(MARKER, doc="marker for a withheld output ({tool}, {call_id}, {pointer})")
    protect_turns: int = knob(1, 1, 100_000, "newest turns (model response plus its results) never withheld")
    summary_tokens: int = knob(2_000, 0, 1_000_000, "size of the durable summary (at most what it replaces)")
    tail_fraction: float = knob(0.25, 0.0, 1.0, "recent tail kept verbatim after a summary, fraction of the budget")


(P_SPILL_TOKENS, P_PREVIEW_CHARS, P_SPILL_ERRORS, P_MARKER_CHARS, P_PROTECT_TURNS, P_SUMMARY_TOKENS,
 P_TAIL_FRACTION) = range(P_POLICY, P_POLICY + 7)
A_SPILLABLE = 0  # aux row: 1 where a result is spilled on arrival (and a marker goes back to SPILLED)
S_SUMMARY_SIZE = S_POLICY  # the rolling summary's size
S_MARKED_FROM = S_POLICY + 1  # no marker before this position (the run's length: none)


class SeedC(CompiledPolicy):
    name = "seed_c"
    Config = SeedCConfig

    def knobs(self, p: np.ndarray, budget) -> None:
        c = self.config
        p[P_SPILL_TOKENS], p[P_PREVIEW_CHARS], p[P_SPILL_ERRORS] = c.spill_tokens, c.preview_chars, c.spill_errors
        p[P_MARKER_CHARS], p[P_PROTECT_TURNS] = len(c.marker) + POINTER_CHARS, c.protect_turns
        p[P_SUMMARY_TOKENS], p[P_TAIL_FRACTION] = c.summary_tokens, c.tail_fraction


@compiled
def setup(p, r, st):
    """Spilled (preview plus pointer) and marker costs; which results spill on arrival."""
    estimator = int(p[P_ESTIMATOR])
    preview, marker = np.int64(p[P_PREVIEW_CHARS]), np.int64(p[P_MARKER_CHARS])
    threshold = np.int64(p[P_SPILL_TOKENS])
    n = len(r.kind)
    for q in range(n):
        t, c = r.tokens[q], r.chars[q]
        st.ftok[SPILLED, q], st.fest[SPILLED, q] = text_cost(t, c, min(c, preview), SPILL_WORDING, estimator)
        st.ftok[OMITTED, q], st.fest[OMITTED, q] = text_cost(t, c, 0, marker, estimator)
        st.aux[A_SPILLABLE, q] = (r.kind[q] == TOOL_RESULT and threshold > 0 and st.fest[ORIGINAL, q] > threshold
                                  and st.fest[SPILLED, q] < st.fest[ORIGINAL, q]
                                  and (p[P_SPILL_ERRORS] > 0 or not r.is_error[q]))
    st.s[S_MARKED_FROM] = n


@compiled
def limit(p):
    return p[P_WINDOW] - p[P_RESERVE]


@compiled
def nth_largest(r, st, key, lo, hi, n, results, live):
    """The n-th largest distinct ``key`` over [lo, hi) (only tool results if ``results``, only items not dropped if
    ``live``); the smallest when there are fewer; NO_KEY when n is 0 or there is none."""
    upper = NO_KEY
    for _ in range(n):
        best, found = 0, False
        for q in range(lo, hi):
            if (key[q] < upper and (not found or key[q] > best) and (not results or r.kind[q] == TOOL_RESULT)
                    and (not live or st.forms[q] != DROPPED)):
                best, found = key[q], True
        if not found:
            break
        upper = best
    return upper


@compiled
def protected_from(p, r, st):
    """First position of the protected newest turns (items sharing the newest ``protect_turns`` steps)."""
    end = st.s[S_END]
    first = nth_largest(r, st, r.step, 0, end, np.int64(p[P_PROTECT_TURNS]), False, False)
    return np.searchsorted(r.step[:end], first, side="left")


@compiled
def withholdable(r, st, q):
    """A successful result shown whole or spilled whose marker is smaller."""
    form = st.forms[q]
    return ((r.kind[q] == TOOL_RESULT) & ~r.is_error[q] & ((form == ORIGINAL) | (form == SPILLED))
            & (st.fest[OMITTED, q] < est_of(st, q)))


@compiled
def mark(p, r, st, lo, hi):
    """Replace results in [lo, hi) by markers, oldest first, only as many as needed."""
    need = est_total(st) - limit(p)
    if need <= 0:
        return
    saved = 0
    for q in range(lo, hi):
        if withholdable(r, st, q):
            saved += est_of(st, q) - st.fest[OMITTED, q]
            set_form(st, q, OMITTED)
            st.s[S_MARKED_FROM] = min(st.s[S_MARKED_FROM], q)
            if saved >= need:
                return


@compiled
def unmark(r, st):
    """Every marker back to its unmarked form (spilled or original); the request-time view charges only real
    changes."""
    end = st.s[S_END]
    for q in range(st.s[S_MARKED_FROM], end):
        if st.forms[q] == OMITTED:
            set_form(st, q, SPILLED if st.aux[A_SPILLABLE, q] else ORIGINAL)
    st.s[S_MARKED_FROM] = len(st.forms)


@compiled
def tail_from(r, st, guard, tokens):
    """Start of a verbatim tail of about ``tokens`` (never after ``guard``), not splitting a pair."""
    end = st.s[S_END]
    acc = 0
    start = end
    for q in range(end - 1, -1, -1):
        acc += est_of(st, q)
        if acc > tokens:
            break
        start = q
    return pair_safe_start(r, st, min(start, guard))


@compiled
def summarise(p, r, st, lo, guard, tokens):
    """Everything in [lo, tail) but failed results and their calls folds into the rolling summary, if that saves;
    whether it did."""
    start = tail_from(r, st, guard, tokens)
    if start <= lo:
        return False
    keep = np.zeros(start - lo, np.bool_)
    for q in range(lo, start):
        if r.kind[q] == TOOL_RESULT and r.is_error[q]:
            keep[q - lo] = True
            call = r.pair[q]
            if lo <= call < start:
                keep[call - lo] = True
    folded = gone = 0
    for q in range(lo, start):
        if not keep[q - lo] and st.forms[q] != DROPPED:
            folded += est_of(st, q)
            gone += 1
    if gone == 0:
        return False
    s = st.s
    size = min(np.int64(p[P_SUMMARY_TOKENS]), s[S_SUMMARY_SIZE] + folded)
    if size >= folded + (s[S_SUM_EST] if s[S_SUM_AT] >= 0 else 0):
        return False  # a summary would not save anything
    for q in range(lo, start):
        if not keep[q - lo] and st.forms[q] != DROPPED:
            drop(r, st, q)
    s[S_SUMMARY_SIZE] = size
    set_summary(st, start, size, size)
    return True


@compiled
def fit(p, r, st):
    """Markers outside the protected turns; while still over, a summary before a tail (the normal one, then the
    protected turns only), after which only the markers still needed come back."""
    lo, guard = prefix_end(r, st), protected_from(p, r, st)
    mark(p, r, st, lo, guard)
    for i in range(2):
        if est_total(st) <= limit(p):
            return
        if summarise(p, r, st, lo, guard, p[P_TAIL_FRACTION] * limit(p) if i == 0 else 0.0):
            unmark(r, st)  # the summary made room: only the markers still needed come back
            mark(p, r, st, lo, guard)  # (without a summary they would come back as they are)


@compiled
def spill(r, st):
    """Results new since the previous request that are spillable and still original are spilled."""
    for q in range(st.s[S_PREV_END], st.s[S_END]):
        if st.aux[A_SPILLABLE, q] and st.forms[q] == ORIGINAL:
            set_form(st, q, SPILLED)


@compiled
def decide(p, r, st):
    end = st.s[S_END]
    if end > st.s[S_PREV_END]:
        spill(r, st)
    if end > 0 and (st.s[S_MARKED_FROM] < end or est_total(st) > limit(p)):  # else the view stays as it is
        before, dirty, sum_at, sum_id = request_time_begin(st)
        unmark(r, st)
        if est_total(st) > limit(p):
            fit(p, r, st)
        request_time_end(st, before, dirty, sum_at, sum_id)


POLICIES = [SeedC]
