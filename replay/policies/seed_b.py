"""Seed policy B: a sectioned budget, window - reply reserve, rebuilt before every request (as seed write-up 002).

Sections mapped onto RunArrays (kinds from replay.model.KINDS; a turn is the items sharing ``run.turn``, which
readers advance at each user message; the current turn is the turn of the newest item):

==================  ============================================================================  ==========
section             items                                                                         evicted
==================  ============================================================================  ==========
system              ``system``                                                                    never
memory              ``attachment`` whose tool name mentions memory (Claude Code nested_memory)    never
tools               ``tool_defs``                                                                 never
new message         ``user_text`` and ``image`` of the current turn                               never
attachments         other ``attachment`` items of the current turn                                4th: fair shares
summary             the policy's rolling summary of dropped turns (one segment)                   3rd
carried context     ``summary`` items in the log and attachments carried from earlier turns       2nd
history             every other item of the turns before the current one                          1st: whole turns
current tool loop   calls, results, assistant text and reasoning of the current turn              5th: markers
==================  ============================================================================  ==========

History is rebuilt every request: of the history turns that used tools, the last ``tool_turns`` keep their
call/result pairs with each result capped at ``tool_cap`` tokens; older ones keep their calls with a marker for
each result (``older_results=keep`` leaves them whole). The current turn is not touched while it fits.

Only when the estimate exceeds the budget, sections are evicted in the written order: oldest whole history turns
(never leaving the kept history starting on an assistant turn, i.e. a turn whose first item is model output),
folded into the rolling summary (``summary_tokens``, at most what it replaces); carried context, oldest first;
the summary; attachments of the current turn trimmed to max-min fair shares; then in-turn omission: results of
the current turn, oldest first, become markers (their calls kept), only as many as needed, never the newest
step's results (parallel siblings included); last, those newest results are shortened to fair shares of what is
left. Turn eviction is durable (the summary rolls); trims and markers are a request-time view, recomputed every
request, so they go when room returns, and the cache is charged only from the first position that changed.

``rebuild=every_request`` restores the earlier per-request marking: caps on the results of the last ``tool_turns``
requests and markers on all older results, current turn included, on every request, budget or not.

Failover: from request ``failover_at_request`` the model serving the request has ``failover_window`` tokens
(when smaller); the budget is that window - reserve, and the view carries the window so that overflow is judged
against the model that serves the request.
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
    S_EMERGENCY,
    S_END,
    S_K,
    S_POLICY,
    S_SUM_AT,
    S_SUM_EST,
    S_SUM_ID,
    S_TOT_EST,
    S_TOT_TOK,
    S_WINDOW,
    TF_MEMORY,
    clear_summary,
    drop,
    est_of,
    est_total,
    last_result,
    prefix_end,
    set_cost,
    set_form,
    set_summary,
    text_cost,
)
from replay.policies.seed_c import NO_KEY, nth_largest
from replay.policies.space import Knob
from replay.policies.view import DROPPED, OMITTED, ORIGINAL, SHRUNK, SPILLED
from replay.run_arrays import KIND_CODE, TOOL_CALL, TOOL_RESULT

MARKER = "[Output of {tool} call {call_id} omitted]"
CAPPED = "[... output capped at {cap} tokens]"
PREFIX, MEMORY, ATTACH, CARRIED, TEXT, OTHER = range(6)
ASSISTANT = tuple(KIND_CODE[k] for k in ("assistant_text", "reasoning", "tool_call", "tool_result"))
PREFIX_KINDS = (KIND_CODE["system"], KIND_CODE["tool_defs"])
TEXT_KINDS = (KIND_CODE["user_text"], KIND_CODE["image"])
SUMMARY, ATTACHMENT = KIND_CODE["summary"], KIND_CODE["attachment"]


@dataclass(frozen=True)
class SeedBConfig(PolicyConfig):
    """A sectioned budget rebuilt every request: whole old turns fold into a rolling summary, older tool
    results become markers, only when over budget; the project's seed policy B (seed write-up 002)."""

    kind = "seed_b"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    tool_turns: int = knob(3, 0, 100_000, "newest history turns that used tools rebuilt as call/result pairs")
    tool_cap: int = knob(1_500, 0, 10_000_000, "cap per rebuilt result, tokens (0: no cap)")
    older_results: Literal["omit", "keep"] = knob("omit", doc="results of older tool turns: markers (omit) or whole")
    rebuild: Literal["history", "every_request"] = knob(
        "history",
        doc="history: caps and markers on the turns before the current one (the design); every_request: "
        "on the last tool_turns requests' results and older ones every request, current turn included",
    )
    summary_tokens: int = knob(1_000, 0, 1_000_000, "rolling summary of dropped turns, tokens")
    marker: str = knob(MARKER, doc="marker for an omitted result ({tool}, {call_id})")
    failover_window: int = knob(0, 0, 100_000_000, "window after failover, tokens (0: no failover)")
    failover_at_request: int = knob(0, 0, 100_000_000, "first request served on the failover window")


(
    P_TOOL_TURNS,
    P_TOOL_CAP,
    P_KEEP_OLDER,
    P_EVERY_REQUEST,
    P_SUMMARY_TOKENS,
    P_MARKER_CHARS,
    P_FAILOVER_WINDOW,
    P_FAILOVER_AT,
) = range(P_POLICY, P_POLICY + 8)
# aux rows: section per item; (real, est) of a result capped at tool_cap; the item's form when the request began
# (valid from the request's first rebuilt position on); the newest result at or before the item (-1: none); the
# largest key (turn, or step with rebuild=every_request) of the results up to the item (NONE: none)
A_SECTION, A_CAP_TOK, A_CAP_EST, A_BEFORE, A_PREV_RESULT, A_TOP_KEY = range(6)
NONE = -NO_KEY - 1
# scalars: estimate folded into the rolling summary so far; the previous request's current-turn start, end of the
# rebuilt results and threshold key; whether results' keys never decrease with position; positions below which no
# item can be history again / carried context / a live result; whether markers of the current turn are deferred
(
    S_FOLDED,
    S_PREV_CS,
    S_PREV_HI,
    S_PREV_FIRST,
    S_ORDERED,
    S_HISTORY_FROM,
    S_CARRIED_FROM,
    S_RESULTS_FROM,
    S_DEFERRED,
) = range(S_POLICY, S_POLICY + 9)


class SeedB(CompiledPolicy):
    name = "seed_b"
    Config = SeedBConfig
    config: SeedBConfig  # PolicyBase.__init__ checks the instance is a Config
    space = (
        Knob("tool_turns", 1, 8, 3, integer=True, weight=2, step=1),
        Knob("tool_cap", 0.005, 0.05, 0.0115, integer=True, relative=True, weight=2),
        Knob("summary_tokens", 500, 3000, 1000, integer=True, weight=1),
    )

    def knobs(self, p: np.ndarray, budget) -> None:
        c = self.config
        p[P_TOOL_TURNS], p[P_TOOL_CAP], p[P_KEEP_OLDER] = c.tool_turns, c.tool_cap, c.older_results == "keep"
        p[P_EVERY_REQUEST], p[P_SUMMARY_TOKENS] = c.rebuild == "every_request", c.summary_tokens
        p[P_MARKER_CHARS], p[P_FAILOVER_WINDOW] = len(c.marker) + 16, c.failover_window
        p[P_FAILOVER_AT] = c.failover_at_request

    def tool_flags(self, tool_names: tuple[str, ...]) -> np.ndarray:
        """Memory attachments (Claude Code nested_memory): a tool name mentioning memory."""
        return np.array([TF_MEMORY if "memory" in n.lower() else 0 for n in tool_names], dtype=np.int8)


@compiled(borrowed=True)
def setup(p, r, st):
    """Marker and capped-result costs; the section of every item; where results are and their running top key."""
    estimator = int(p[P_ESTIMATOR])
    marker, cap = np.int64(p[P_MARKER_CHARS]), np.int64(p[P_TOOL_CAP])
    key = r.step if p[P_EVERY_REQUEST] > 0 else r.turn
    prev, top, ordered = -1, NONE, True
    for q in range(len(r.kind)):
        if r.kind[q] == TOOL_RESULT:
            ordered &= key[q] >= top
            prev, top = q, max(top, np.int64(key[q]))
        st.aux[A_PREV_RESULT, q], st.aux[A_TOP_KEY, q] = prev, top
        t, c, k = r.tokens[q], r.chars[q], r.kind[q]
        st.ftok[OMITTED, q], st.fest[OMITTED, q] = text_cost(t, c, 0, marker, estimator)
        st.aux[A_CAP_TOK, q], st.aux[A_CAP_EST, q] = st.ftok[ORIGINAL, q], st.fest[ORIGINAL, q]
        if cap > 0:
            kept = np.int64(np.ceil(cap * c / max(t, 1)))
            st.aux[A_CAP_TOK, q], st.aux[A_CAP_EST, q] = text_cost(t, c, kept, len(CAPPED), estimator)
        sec = OTHER
        if k in PREFIX_KINDS:
            sec = PREFIX
        elif k in TEXT_KINDS:
            sec = TEXT
        elif k == SUMMARY:
            sec = CARRIED
        elif k == ATTACHMENT:
            sec = MEMORY if r.tflag[q] & TF_MEMORY else ATTACH
        st.aux[A_SECTION, q] = sec
    st.s[S_ORDERED], st.s[S_PREV_FIRST] = ordered, NO_KEY


# -- every request ---------------------------------------------------------------------------------------------------
@compiled(inline="always")
def window_of(p, st):
    """The window of the model serving this request: the log's where it names one (``S_WINDOW`` as the loop set
    it), else the budget's; from ``failover_at_request`` on at most ``failover_window``."""
    w, fw = st.s[S_WINDOW] if st.s[S_WINDOW] > 0 else p[P_WINDOW], p[P_FAILOVER_WINDOW]
    return min(w, fw) if fw > 0 and st.s[S_K] >= p[P_FAILOVER_AT] else w


@compiled(inline="always")
def shorten(st, before, q, tok, est):
    """Shorten q to (tok, est). Kept as it was in the previous view if that was shortened and no longer; else the
    new length takes the other rendering, so that a changed item is a changed segment."""
    prev = before[q]
    if (prev == SHRUNK or prev == SPILLED) and st.fest[prev, q] <= est:
        set_form(st, q, prev)
        return
    form = SPILLED if prev == SHRUNK else SHRUNK
    set_cost(st, form, q, min(tok, st.ftok[ORIGINAL, q]), est)
    set_form(st, q, form)


@compiled(inline="always")
def cap(p, st, before, q):
    """Result q capped at ``tool_cap`` (one already below it stays whole)."""
    if p[P_TOOL_CAP] > 0 and st.aux[A_CAP_EST, q] < st.fest[ORIGINAL, q]:
        shorten(st, before, q, st.aux[A_CAP_TOK, q], st.aux[A_CAP_EST, q])


@compiled(inline="always")
def omit(st, q):
    """Item q becomes a marker if it is there and the marker saves; the estimate saved."""
    if st.forms[q] == DROPPED:
        return 0
    gain = est_of(st, q) - st.fest[OMITTED, q]
    if gain <= 0:
        return 0
    set_form(st, q, OMITTED)
    return gain


@compiled(inline="always")
def newest_keys(r, st, key, lo, hi, n, live):
    """``nth_largest`` of the results' ``key`` over [lo, hi) (live ones only if ``live``) when keys never decrease
    with position: from the newest result back, one look per distinct key (its first result is where the running
    top key reaches it); results below S_RESULTS_FROM are all dropped."""
    if n <= 0:
        return NO_KEY
    prev, top = st.aux[A_PREV_RESULT], st.aux[A_TOP_KEY]
    low = max(lo, st.s[S_RESULTS_FROM]) if live else lo
    upper, found = NO_KEY, 0
    q = prev[hi - 1] if hi > 0 else -1
    while q >= low:
        if live and st.forms[q] == DROPPED:
            q = prev[q - 1] if q > 0 else -1
            continue
        upper = key[q]
        found += 1
        if found == n:
            break
        start = np.searchsorted(top[: q + 1], upper)
        q = prev[start - 1] if start > 0 else -1
    return upper


@compiled(inline="always")
def threshold(p, r, st, lo, hi):
    """The oldest key whose results are recent: the ``tool_turns``-th newest turn that used tools over the live
    history [lo, hi), or with ``rebuild=every_request`` the ``tool_turns``-th newest step over all results."""
    every = p[P_EVERY_REQUEST] > 0
    key = r.step if every else r.turn
    n = np.int64(p[P_TOOL_TURNS])
    if not st.s[S_ORDERED]:
        return nth_largest(r, st, key, lo, hi, n, True, not every)
    if not every:
        end, q = st.s[S_END], st.s[S_RESULTS_FROM]
        while q < end and ((r.kind[q] != TOOL_RESULT) | (st.forms[q] == DROPPED)):
            q += 1
        st.s[S_RESULTS_FROM] = q
    return newest_keys(r, st, key, lo, hi, n, not every)


@compiled(inline="always")
def rebuild_history(p, r, st, before, start, cs, first):
    """History results from ``start`` on: those of the last ``tool_turns`` history turns that used tools (turn at
    least ``first``) capped; older ones markers."""
    omit_older = p[P_KEEP_OLDER] == 0
    for q in range(start, cs):
        if r.kind[q] != TOOL_RESULT or st.forms[q] == DROPPED:
            continue
        if r.turn[q] >= first:
            cap(p, st, before, q)
        elif omit_older:
            omit(st, q)


@compiled(inline="always")
def rebuild_every_request(p, r, st, before, start, last, first):
    """The earlier marking, for results from ``start`` up to the newest one (``last``, left whole): the last
    ``tool_turns`` requests' results (step at least ``first``) capped, older results marked (or, with
    ``older_results=keep``, left capped), every request and in the current turn too."""
    turns = np.int64(p[P_TOOL_TURNS])
    omit_older = p[P_KEEP_OLDER] == 0
    for q in range(start, last):
        if r.kind[q] != TOOL_RESULT or st.forms[q] == DROPPED:
            continue
        recent = r.step[q] >= first
        if omit_older:
            if recent:
                cap(p, st, before, q)
            else:
                omit(st, q)
        elif turns > 0 or recent:  # an older result was capped while it was recent, and stays so
            cap(p, st, before, q)


@compiled(inline="always")
def defer(st, q, sign):
    """Count marker q of the current turn as its original (sign 1) in the totals, or stop doing so (sign -1): the
    in-turn markers of the last request mostly come back, and setting them back and forth would cost a change each."""
    s = st.s
    s[S_TOT_EST] += sign * (st.fest[ORIGINAL, q] - st.fest[OMITTED, q])
    s[S_TOT_TOK] += sign * (st.ftok[ORIGINAL, q] - st.ftok[OMITTED, q])


@compiled(inline="always")
def release(r, st, lo, kept_to, newest):
    """Deferred markers that in_turn did not keep (from ``kept_to`` on, and the newest step's) become originals."""
    s = st.s
    if s[S_DEFERRED] == 0:
        return
    forms, step = st.forms, r.step
    for q in range(lo, s[S_END]):
        if (forms[q] == OMITTED) & ((q >= kept_to) | (step[q] == newest)):
            defer(st, q, -1)
            set_form(st, q, ORIGINAL)
    s[S_DEFERRED] = 0


@compiled(inline="always")
def rebuild(p, r, st, lo, cs):
    """The request-time view before any eviction, recomputed only from the first position it can differ at.

    Below that position every live item already has the form the whole recomputation would give it: a result that
    was rebuilt last request, in a section (recent or older) that has not changed and outside last request's current
    turn (which the budget may have reshaped), keeps the marker or cap it got (capping a capped result changes
    nothing), and nothing else there ever leaves its original form. From that position on the items start over from
    their original form, as the whole view used to; their forms at the start of the request are kept in the
    A_BEFORE row. The current turn's markers (``rebuild=history``) only count as original (``defer``) until in_turn
    or ``release`` settles them. Returns that position."""
    s = st.s
    end = s[S_END]
    every = p[P_EVERY_REQUEST] > 0
    hi = cs
    if every:
        last = last_result(r, lo, end)
        hi = last if last >= 0 else lo
    first = threshold(p, r, st, lo, end if every else cs)
    start = min(s[S_PREV_CS], cs, s[S_PREV_HI], hi)
    if first != s[S_PREV_FIRST]:
        start = min(start, np.searchsorted(st.aux[A_TOP_KEY, :end], min(first, s[S_PREV_FIRST])))
    s[S_PREV_CS], s[S_PREV_HI], s[S_PREV_FIRST] = cs, hi, first
    forms, before = st.forms, st.aux[A_BEFORE]
    turn_from = max(lo, cs)
    deferred = not every
    for q in range(start, end):
        form = forms[q]
        before[q] = form
        if deferred & (form == OMITTED) & (q >= turn_from):
            defer(st, q, 1)
        elif (form != DROPPED) & (form != ORIGINAL):
            set_form(st, q, ORIGINAL)
    s[S_DEFERRED] = deferred
    if every:
        rebuild_every_request(p, r, st, before, max(lo, start), hi, first)
    else:
        rebuild_history(p, r, st, before, max(lo, start), cs, first)
    return start


# -- only when over budget -------------------------------------------------------------------------------------------
@compiled(inline="always")
def in_history(r, st, q, cs):
    """Item q (before the current turn at cs) is live history: user text or other, not a call answered in the
    current turn."""
    sec = st.aux[A_SECTION, q]
    return (st.forms[q] != DROPPED) & ((sec == TEXT) | (sec == OTHER)) & ~((r.kind[q] == TOOL_CALL) & (r.pair[q] >= cs))


@compiled(inline="always")
def first_history(r, st, lo, cs):
    """First live history position in [lo, cs); cs when none. Items below S_HISTORY_FROM are dropped or of a section
    that is never history, so the search starts there."""
    h = max(lo, st.s[S_HISTORY_FROM])
    while h < cs:
        sec = st.aux[A_SECTION, h]
        if (st.forms[h] != DROPPED) & ((sec == TEXT) | (sec == OTHER)):
            break
        h += 1
    st.s[S_HISTORY_FROM] = h
    for q in range(h, cs):
        if in_history(r, st, q, cs):
            return q
    return cs


@compiled(borrowed=True)
def safe(r, st, at):
    """Move a summary position back until no live call/result pair straddles it. Below S_HISTORY_FROM every call
    and result is dropped (a drop is for good; other items have no partner), so the search starts there."""
    while True:
        moved = at
        for q in range(min(st.s[S_HISTORY_FROM], at), at):
            if st.forms[q] != DROPPED and r.pair[q] >= at:
                moved = q
                break
        if moved == at:
            return at
        at = moved


@compiled(inline="always")
def evict_turns(p, r, st, lo, cs, limit):
    """Drop oldest whole turns until the estimate (with the grown summary) fits; never start on an assistant."""
    s = st.s
    size_cap = np.int64(p[P_SUMMARY_TOKENS])
    folded0 = s[S_FOLDED]
    folded, base = folded0, (s[S_SUM_EST] if s[S_SUM_AT] >= 0 else 0)
    while True:
        h = first_history(r, st, lo, cs)
        if h == cs:
            break
        grown = min(size_cap, folded) - base
        assistant_first = folded > folded0 and r.kind[h] in ASSISTANT
        if est_total(st) - limit + grown <= 0 and not assistant_first:
            break
        turn = r.turn[h]
        for q in range(h, cs):
            if r.turn[q] == turn and in_history(r, st, q, cs):
                folded += est_of(st, q)
        for q in range(h, cs):
            if r.turn[q] == turn and in_history(r, st, q, cs):
                drop(r, st, q)
    if folded > folded0:
        s[S_FOLDED] = folded
        size = min(size_cap, folded)
        dropped_from = s[S_DIRTY]  # the request's end compares the summary itself
        set_summary(st, safe(r, st, first_history(r, st, lo, cs)), size, size)
        s[S_DIRTY] = dropped_from


@compiled(inline="always")
def shared(kind, steps, st, q, step):
    """Item q is one ``fair_share`` divides among: a live attachment (``step`` NONE), or a result of step ``step``
    (a dropped one too, at its cost of 0)."""
    if step == NONE:
        return (st.aux[A_SECTION, q] == ATTACH) & (st.forms[q] != DROPPED)
    return (kind[q] == TOOL_RESULT) & (steps[q] == step)


@compiled(borrowed=True)
def fair_share(kind, steps, st, before, lo, hi, step, limit):
    """Shorten the ``shared`` items of [lo, hi) to max-min fair shares of what the other sections leave. The
    estimates are walked in ascending order one distinct value at a time (as many scans as values; there are few
    items), which gives the share a sorted copy would. Takes the run's kind and step arrays, not the Run: a struct
    argument is copied on every call."""
    m = total = 0
    first, last = hi, lo
    for q in range(lo, hi):
        if shared(kind, steps, st, q, step):
            m += 1
            total += est_of(st, q)
            first, last = min(first, q), q
    if m == 0:
        return
    lo, hi = first, last + 1
    avail = max(total - (est_total(st) - limit), 0)
    below, share, i, prev = 0, 0, 0, -1
    while i < m:
        value, count = NO_KEY, 0
        for q in range(lo, hi):
            if shared(kind, steps, st, q, step):
                e = est_of(st, q)
                if (e > prev) & (e < value):
                    value, count = e, 1
                elif e == value:
                    count += 1
        if below + value * (m - i) > avail:
            share = (avail - below) // (m - i)
            break
        below += value * count
        i += count
        share = prev = value
    for q in range(lo, hi):
        if shared(kind, steps, st, q, step) & (est_of(st, q) > share):
            ratio = st.ftok[ORIGINAL, q] / max(st.fest[ORIGINAL, q], 1)
            est = max(share, st.fest[OMITTED, q])  # never shorter than a marker's wording
            tok = min(max(np.int64(np.ceil(share * ratio)), st.ftok[OMITTED, q]), st.ftok[ORIGINAL, q])
            shorten(st, before, q, tok, est)


@compiled(inline="always")
def in_turn(p, r, st, before, lo, cs, limit):
    """Results of the current turn become markers, oldest first, as many as needed, never the newest step's
    (parallel siblings together); then the newest step's are shortened to fair shares."""
    s = st.s
    s[S_EMERGENCY] = 1
    end = s[S_END]
    lo = max(lo, cs)
    last = last_result(r, lo, end)
    if last < 0:
        return
    newest = r.step[last]
    need = est_total(st) - limit
    saved, kept_to = 0, end
    forms, fest, kind, step = st.forms, st.fest, r.kind, r.step
    deferred = s[S_DEFERRED] > 0
    for q in range(lo, end):
        if (kind[q] == TOOL_RESULT) & (step[q] != newest):
            form = forms[q]
            if deferred & (form == OMITTED):  # a marker again
                saved += fest[ORIGINAL, q] - fest[OMITTED, q]
                defer(st, q, -1)
            elif (form != DROPPED) & (fest[form, q] > fest[OMITTED, q]):
                saved += omit(st, q)
            if saved >= need:
                kept_to = q + 1
                break
    release(r, st, lo, kept_to, newest)
    if est_total(st) - limit > 0:
        fair_share(r.kind, r.step, st, before, lo, end, newest, limit)


@compiled(inline="always")
def drop_carried(r, st, lo, cs, limit):
    """Carried context, oldest first, while over budget: ``summary`` items and attachments of earlier turns; True
    once the view fits. Items below S_CARRIED_FROM are dropped or never carried context."""
    s = st.s
    end = s[S_END]
    c = max(lo, s[S_CARRIED_FROM])
    while c < end:
        sec = st.aux[A_SECTION, c]
        if (st.forms[c] != DROPPED) & ((sec == CARRIED) | (sec == ATTACH)):
            break
        c += 1
    s[S_CARRIED_FROM] = c
    for q in range(c, end):
        sec = st.aux[A_SECTION, q]
        if (st.forms[q] != DROPPED) & ((sec == CARRIED) | ((sec == ATTACH) & (q < cs))):
            if est_total(st) <= limit:
                return True
            set_form(st, q, DROPPED)
    return False


@compiled(inline="always")
def fit(p, r, st, before, lo, cs, limit):
    """Evict in the written order while over budget: history turns, carried context, the summary, the current
    turn's attachments (fair shares), then in-turn markers. Only drops mark the view dirty here: the trims and
    markers of the current turn are compared with ``before`` at the end of the request, the summary too."""
    evict_turns(p, r, st, lo, cs, limit)
    if drop_carried(r, st, lo, cs, limit):
        return
    dropped_from = st.s[S_DIRTY]
    if est_total(st) > limit and st.s[S_SUM_AT] >= 0:
        clear_summary(st)
        st.s[S_FOLDED] = 0
    if est_total(st) > limit:
        fair_share(r.kind, r.step, st, before, max(lo, cs), st.s[S_END], NONE, limit)
    if est_total(st) > limit:
        in_turn(p, r, st, before, lo, cs, limit)
    st.s[S_DIRTY] = dropped_from


@compiled(inline="always")
def settle(st, before, start, dirty, sum_at, sum_id):
    """The view is charged as rewritten from the first position whose form really changed (or where the summary
    moved), as if the whole view had been compared: below ``start`` only drops change forms, and they marked
    S_DIRTY; from ``start`` on the forms are compared with ``before``."""
    s = st.s
    d = min(dirty, s[S_DIRTY])
    for q in range(start, min(d, s[S_END])):
        if before[q] != st.forms[q]:
            d = q
            break
    if s[S_SUM_AT] != sum_at or s[S_SUM_ID] != sum_id:
        if sum_at >= 0:
            d = min(d, sum_at)
        if s[S_SUM_AT] >= 0:
            d = min(d, s[S_SUM_AT])
    s[S_DIRTY] = d


@compiled(borrowed=True)
def decide(p, r, st):
    """Trims and markers are a request-time view: every request starts from the whole live history (recomputed
    from the first position where that can change anything, see ``rebuild``)."""
    s = st.s
    end = s[S_END]
    if end == 0:
        return
    window = np.int64(window_of(p, st))
    s[S_WINDOW] = window
    limit = window - np.int64(p[P_RESERVE])
    dirty, sum_at, sum_id = s[S_DIRTY], s[S_SUM_AT], s[S_SUM_ID]
    lo = prefix_end(r, st)
    cs = np.searchsorted(r.turn[:end], r.turn[end - 1], side="left")  # the current turn's first position
    start = rebuild(p, r, st, lo, cs)
    s[S_DIRTY] = end
    if est_total(st) > limit:
        fit(p, r, st, st.aux[A_BEFORE], lo, cs, limit)
    dropped_from = s[S_DIRTY]
    release(r, st, max(lo, cs), 0, NO_KEY)
    s[S_DIRTY] = dropped_from
    settle(st, st.aux[A_BEFORE], start, dirty, sum_at, sum_id)


POLICIES = [SeedB]
