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
    S_EMERGENCY,
    S_END,
    S_K,
    S_POLICY,
    S_SUM_AT,
    S_SUM_EST,
    S_WINDOW,
    TF_MEMORY,
    clear_summary,
    drop,
    est_of,
    est_total,
    last_result,
    prefix_end,
    request_time_begin,
    request_time_end,
    set_cost,
    set_form,
    set_summary,
    text_cost,
)
from replay.policies.seed_c import nth_largest
from replay.policies.view import DROPPED, OMITTED, ORIGINAL, SHRUNK, SPILLED
from replay.simulator.arrays import KIND_CODE, TOOL_CALL, TOOL_RESULT

MARKER = "[Output of {tool} call {call_id} omitted]"
CAPPED = "[... output capped at {cap} tokens]"
PREFIX, MEMORY, ATTACH, CARRIED, TEXT, OTHER = range(6)
ASSISTANT = tuple(KIND_CODE[k] for k in ("assistant_text", "reasoning", "tool_call", "tool_result"))
PREFIX_KINDS = (KIND_CODE["system"], KIND_CODE["tool_defs"])
TEXT_KINDS = (KIND_CODE["user_text"], KIND_CODE["image"])
SUMMARY, ATTACHMENT = KIND_CODE["summary"], KIND_CODE["attachment"]


@dataclass(frozen=True)
class SeedBConfig(PolicyConfig):
    """Seed policy B."""

    kind = "seed_b"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    tool_turns: int = knob(3, 0, 100_000, "newest history turns that used tools rebuilt as call/result pairs")
    tool_cap: int = knob(1_500, 0, 10_000_000, "cap per rebuilt result, tokens (0: no cap)")
    older_results: Literal["omit", "keep"] = knob("omit", doc="results of older tool turns: markers (omit) or whole")
    rebuild: Literal["history", "every_request"] = knob(
        "history", doc="history: caps and markers on the turns before the current one (the design); every_request: "
                       "on the last tool_turns requests' results and older ones every request, current turn included")
    summary_tokens: int = knob(1_000, 0, 1_000_000, "rolling summary of dropped turns, tokens")
    marker: str = knob(MARKER, doc="marker for an omitted result ({tool}, {call_id})")
    failover_window: int = knob(0, 0, 100_000_000, "window after failover, tokens (0: no failover)")
    failover_at_request: int = knob(0, 0, 100_000_000, "first request served on the failover window")


(P_TOOL_TURNS, P_TOOL_CAP, P_KEEP_OLDER, P_EVERY_REQUEST, P_SUMMARY_TOKENS, P_MARKER_CHARS, P_FAILOVER_WINDOW,
 P_FAILOVER_AT) = range(P_POLICY, P_POLICY + 8)
A_SECTION, A_CAP_TOK, A_CAP_EST = range(3)  # aux rows: section per item, (real, est) of a result capped at tool_cap
S_FOLDED = S_POLICY  # estimate folded into the rolling summary so far


class SeedB(CompiledPolicy):
    name = "seed_b"
    Config = SeedBConfig

    def knobs(self, p: np.ndarray, budget) -> None:
        c = self.config
        p[P_TOOL_TURNS], p[P_TOOL_CAP], p[P_KEEP_OLDER] = c.tool_turns, c.tool_cap, c.older_results == "keep"
        p[P_EVERY_REQUEST], p[P_SUMMARY_TOKENS] = c.rebuild == "every_request", c.summary_tokens
        p[P_MARKER_CHARS], p[P_FAILOVER_WINDOW] = len(c.marker) + 16, c.failover_window
        p[P_FAILOVER_AT] = c.failover_at_request

    def tool_flags(self, tool_names: tuple[str, ...]) -> np.ndarray:
        """Memory attachments (Claude Code nested_memory): a tool name mentioning memory."""
        return np.array([TF_MEMORY if "memory" in n.lower() else 0 for n in tool_names], dtype=np.int8)


@compiled
def setup(p, r, st):
    """Marker and capped-result costs; the section of every item."""
    estimator = int(p[P_ESTIMATOR])
    marker, cap = np.int64(p[P_MARKER_CHARS]), np.int64(p[P_TOOL_CAP])
    for q in range(len(r.kind)):
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


# -- every request ---------------------------------------------------------------------------------------------------
@compiled
def window_of(p, st):
    """The window of the model serving this request."""
    w, fw = p[P_WINDOW], p[P_FAILOVER_WINDOW]
    return min(w, fw) if fw > 0 and st.s[S_K] >= p[P_FAILOVER_AT] else w


@compiled
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


@compiled
def cap(p, st, before, q):
    """Result q capped at ``tool_cap`` (one already below it stays whole)."""
    if p[P_TOOL_CAP] > 0 and st.aux[A_CAP_EST, q] < st.fest[ORIGINAL, q]:
        shorten(st, before, q, st.aux[A_CAP_TOK, q], st.aux[A_CAP_EST, q])


@compiled
def omit(st, q):
    """Item q becomes a marker if it is there and the marker saves; the estimate saved."""
    if st.forms[q] == DROPPED:
        return 0
    gain = est_of(st, q) - st.fest[OMITTED, q]
    if gain <= 0:
        return 0
    set_form(st, q, OMITTED)
    return gain


@compiled
def rebuild_history(p, r, st, before, lo, cs):
    """The last ``tool_turns`` history turns that used tools: results capped; older tool turns: markers."""
    first = nth_largest(r, st, r.turn, lo, cs, np.int64(p[P_TOOL_TURNS]), True, True)
    omit_older = p[P_KEEP_OLDER] == 0
    for q in range(lo, cs):
        if r.kind[q] != TOOL_RESULT or st.forms[q] == DROPPED:
            continue
        if r.turn[q] >= first:
            cap(p, st, before, q)
        elif omit_older:
            omit(st, q)


@compiled
def rebuild_every_request(p, r, st, before, lo):
    """The earlier marking: the last ``tool_turns`` requests' results capped, older results marked (or, with
    ``older_results=keep``, left capped), every request and in the current turn too; only the newest result is
    left whole."""
    end = st.s[S_END]
    last = last_result(r, lo, end)
    if last < 0:
        return
    turns = np.int64(p[P_TOOL_TURNS])
    first = nth_largest(r, st, r.step, lo, end, turns, True, False)
    omit_older = p[P_KEEP_OLDER] == 0
    for q in range(lo, last):
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


# -- only when over budget -------------------------------------------------------------------------------------------
@compiled
def in_history(r, st, q, cs):
    """Item q (before the current turn at cs) is live history: user text or other, not a call answered in the
    current turn."""
    sec = st.aux[A_SECTION, q]
    return (st.forms[q] != DROPPED) & ((sec == TEXT) | (sec == OTHER)) & ~((r.kind[q] == TOOL_CALL) & (r.pair[q] >= cs))


@compiled
def first_history(r, st, lo, cs):
    """First live history position in [lo, cs); cs when none."""
    for q in range(lo, cs):
        if in_history(r, st, q, cs):
            return q
    return cs


@compiled
def safe(r, st, at):
    """Move a summary position back until no live call/result pair straddles it."""
    while True:
        moved = at
        for q in range(at):
            if st.forms[q] != DROPPED and r.pair[q] >= at:
                moved = q
                break
        if moved == at:
            return at
        at = moved


@compiled
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
        set_summary(st, safe(r, st, first_history(r, st, lo, cs)), size, size)


@compiled
def fair_share(st, before, items, limit):
    """Shorten ``items`` to max-min fair shares of what the other sections leave."""
    m = len(items)
    if m == 0:
        return
    cur = np.empty(m, np.int64)
    for i in range(m):
        cur[i] = est_of(st, items[i])
    avail = max(cur.sum() - (est_total(st) - limit), 0)
    srt = np.sort(cur)
    below, share = 0, srt[-1]
    for i in range(m):
        if below + srt[i] * (m - i) > avail:
            share = (avail - below) // (m - i)
            break
        below += srt[i]
    for i in range(m):
        if cur[i] > share:
            q = items[i]
            ratio = st.ftok[ORIGINAL, q] / max(st.fest[ORIGINAL, q], 1)
            est = max(share, st.fest[OMITTED, q])  # never shorter than a marker's wording
            tok = min(max(np.int64(np.ceil(share * ratio)), st.ftok[OMITTED, q]), st.ftok[ORIGINAL, q])
            shorten(st, before, q, tok, est)


@compiled
def current_attachments(st, lo, cs):
    """Live attachments of the current turn (attachments of earlier turns are carried context)."""
    end = st.s[S_END]
    n = 0
    for q in range(max(lo, cs), end):
        n += st.aux[A_SECTION, q] == ATTACH and st.forms[q] != DROPPED
    out = np.empty(n, np.int64)
    n = 0
    for q in range(max(lo, cs), end):
        if st.aux[A_SECTION, q] == ATTACH and st.forms[q] != DROPPED:
            out[n] = q
            n += 1
    return out


@compiled
def in_turn(p, r, st, before, lo, cs, limit):
    """Results of the current turn become markers, oldest first, as many as needed, never the newest step's
    (parallel siblings together); then the newest step's are shortened to fair shares."""
    st.s[S_EMERGENCY] = 1
    end = st.s[S_END]
    lo = max(lo, cs)
    last = last_result(r, lo, end)
    if last < 0:
        return
    newest = r.step[last]
    need = est_total(st) - limit
    saved = 0
    for q in range(lo, end):
        if r.kind[q] == TOOL_RESULT and r.step[q] != newest:
            saved += omit(st, q)
            if saved >= need:
                break
    if est_total(st) - limit > 0:
        n = 0
        for q in range(lo, end):
            n += r.kind[q] == TOOL_RESULT and r.step[q] == newest
        items = np.empty(n, np.int64)
        n = 0
        for q in range(lo, end):
            if r.kind[q] == TOOL_RESULT and r.step[q] == newest:
                items[n] = q
                n += 1
        fair_share(st, before, items, limit)


@compiled
def fit(p, r, st, before, lo, cs, limit):
    """Evict in the written order while over budget: history turns, carried context, the summary, the current
    turn's attachments (fair shares), then in-turn markers."""
    evict_turns(p, r, st, lo, cs, limit)
    for q in range(lo, st.s[S_END]):
        sec = st.aux[A_SECTION, q]
        if st.forms[q] != DROPPED and (sec == CARRIED or sec == ATTACH and q < cs):
            if est_total(st) <= limit:
                return
            set_form(st, q, DROPPED)
    if est_total(st) > limit and st.s[S_SUM_AT] >= 0:
        clear_summary(st)
        st.s[S_FOLDED] = 0
    if est_total(st) > limit:
        fair_share(st, before, current_attachments(st, lo, cs), limit)
    if est_total(st) > limit:
        in_turn(p, r, st, before, lo, cs, limit)


@compiled
def decide(p, r, st):
    """Trims and markers are a request-time view: every request starts from the whole live history."""
    end = st.s[S_END]
    if end == 0:
        return
    window = np.int64(window_of(p, st))
    st.s[S_WINDOW] = window
    limit = window - np.int64(p[P_RESERVE])
    before, dirty, sum_at, sum_id = request_time_begin(st)
    for q in range(end):
        if st.forms[q] != DROPPED:
            set_form(st, q, ORIGINAL)
    lo = prefix_end(r, st)
    cs = np.searchsorted(r.turn[:end], r.turn[end - 1], side="left")  # the current turn's first position
    if p[P_EVERY_REQUEST] > 0:
        rebuild_every_request(p, r, st, before, lo)
    else:
        rebuild_history(p, r, st, before, lo, cs)
    if est_total(st) > limit:
        fit(p, r, st, before, lo, cs, limit)
    request_time_end(st, before, dirty, sum_at, sum_id)


POLICIES = [SeedB]
