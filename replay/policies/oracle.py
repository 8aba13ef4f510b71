"""Belady oracle: within the common budget (window - reserve), evict the item needed farthest in the future.

"Needed" follows the repeat-read classification (``replay.metrics.repeat_reads``): an output is needed at request
d when a later repeat read decided at d re-reads its content unchanged. Every item kind can be evicted (a pasted
user message too) except the harness prefix and the newest request's own new items; an evicted item becomes an
omitted marker of 0 tokens and stays evicted. Items never needed again go first, largest first.

With items of unequal sizes this is a heuristic, not the least possible count: ``replay.metrics.oracle_bound``
gives the provable bound (LP relaxation, integral optimum) that Belady is reported beside.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replay.jit import compiled
from replay.policies.base import CompiledPolicy
from replay.policies.config import PolicyConfig
from replay.policies.kernel import P_RESERVE, P_WINDOW, S_K, S_POLICY, S_TOT_TOK, prefix_end, set_form
from replay.policies.view import OMITTED, ORIGINAL

NEVER = np.iinfo(np.int64).max
S_NEXT_READ = S_POLICY  # first repeat read decided at this request or later
# aux rows: per item its next need (a request, NEVER none); per repeat read the next unchanged one of its item;
# per item its first unchanged repeat read (setup only)
(A_NEXT, A_CHAIN, A_LATER) = range(3)
SCANS = 4  # eviction picks found by scanning before the rest are sorted


@dataclass(frozen=True)
class OracleConfig(PolicyConfig):
    """No knobs: the budget is the simulation's (window - reserve), the same as the policies it is compared to."""

    kind = "oracle"


class Oracle(CompiledPolicy):
    name = "oracle"
    Config = OracleConfig


@compiled
def setup(p, r, st):
    """An omitted item costs nothing. Next needs: per item the request of its first unchanged repeat read (NEVER
    if none), and per repeat read the next unchanged one of the same item (-1 none); a repeat read is decided by
    one read call, so there are fewer of them than items."""
    st.ftok[OMITTED, :] = 0
    st.fest[OMITTED, :] = 0
    st.aux[A_NEXT, :] = NEVER
    st.aux[A_LATER, :] = -1
    for e in range(len(r.rr_decide) - 1, -1, -1):  # sorted by request: the earliest need ends up in A_NEXT
        if not r.rr_changed[e]:
            q = r.rr_prev[e]
            st.aux[A_CHAIN, e] = st.aux[A_LATER, q]
            st.aux[A_LATER, q] = e
            st.aux[A_NEXT, q] = r.rr_decide[e]


@compiled
def expire_needs(r, st):
    """Repeat reads decided before this request no longer need their items: each such item's next need moves to
    its next unchanged repeat read."""
    k, e = st.s[S_K], st.s[S_NEXT_READ]
    while e < len(r.rr_decide) and r.rr_decide[e] < k:
        if not r.rr_changed[e]:
            later = st.aux[A_CHAIN, e]
            st.aux[A_NEXT, r.rr_prev[e]] = r.rr_decide[later] if later >= 0 else NEVER
        e += 1
    st.s[S_NEXT_READ] = e


@compiled
def evicts_before(st, a, b):
    """Item a goes before item b: farther next need (never needed: first), then larger, then older."""
    na, nb = st.aux[A_NEXT, a], st.aux[A_NEXT, b]
    if na != nb:
        return na > nb
    sa, sb = st.ftok[ORIGINAL, a], st.ftok[ORIGINAL, b]
    return sa > sb if sa != sb else a < b


@compiled
def evict_order(st, lo, hi):
    """Original items in [lo, hi) in eviction order."""
    n = 0
    for q in range(lo, hi):
        n += st.forms[q] == ORIGINAL
    pos = np.empty(n, np.int64)
    n = 0
    for q in range(lo, hi):
        if st.forms[q] == ORIGINAL:
            pos[n] = q
            n += 1
    by_size = np.argsort(-st.ftok[ORIGINAL, pos], kind="mergesort")  # stable: largest first, then oldest
    by_size = pos[by_size]
    return by_size[np.argsort(-st.aux[A_NEXT, by_size], kind="mergesort")]


@compiled
def decide(p, r, st):
    """Over the budget by real tokens: omit original items before this request's new ones, farthest next need
    first (never needed: first), then largest, then oldest, until the view fits. The first few picks are found by
    scanning (most requests need one or two); the rest in one sort."""
    expire_needs(r, st)
    k = st.s[S_K]
    excess = st.s[S_TOT_TOK] - np.int64(p[P_WINDOW] - p[P_RESERVE])
    if excess <= 0:
        return
    lo, newest = prefix_end(r, st), r.req_end[k - 1] if k > 0 else 0  # this request's new items stay
    saved = 0
    for _ in range(SCANS):
        best = -1
        for q in range(lo, newest):
            if st.forms[q] == ORIGINAL and (best < 0 or evicts_before(st, q, best)):
                best = q
        if best < 0:
            return
        saved += st.ftok[ORIGINAL, best]
        set_form(st, best, OMITTED)
        if saved >= excess:
            return
    for q in evict_order(st, lo, newest):
        saved += st.ftok[ORIGINAL, q]
        set_form(st, q, OMITTED)
        if saved >= excess:
            return


POLICIES = [Oracle]
