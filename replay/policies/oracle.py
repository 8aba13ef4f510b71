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


@dataclass(frozen=True)
class OracleConfig(PolicyConfig):
    """No knobs: the budget is the simulation's (window - reserve), the same as the policies it is compared to."""

    kind = "oracle"


class Oracle(CompiledPolicy):
    name = "oracle"
    Config = OracleConfig


@compiled
def setup(p, r, st):
    """An omitted item costs nothing."""
    st.ftok[OMITTED, :] = 0
    st.fest[OMITTED, :] = 0


@compiled
def next_needs(r, first, lo, hi):
    """Per position in [lo, hi): the next request (from repeat read ``first`` on) whose unchanged repeat read
    needs it intact, NEVER if none."""
    out = np.full(hi - lo, NEVER, np.int64)
    for e in range(first, len(r.rr_decide)):
        q = r.rr_prev[e]
        if not r.rr_changed[e] and lo <= q < hi:
            out[q - lo] = min(out[q - lo], r.rr_decide[e])
    return out


@compiled
def decide(p, r, st):
    """Over the budget by real tokens: omit original items before this request's new ones, farthest next need
    first (never needed: first), then largest, then oldest, until the view fits."""
    k, s = st.s[S_K], st.s
    first = s[S_NEXT_READ]
    while first < len(r.rr_decide) and r.rr_decide[first] < k:
        first += 1
    s[S_NEXT_READ] = first
    excess = s[S_TOT_TOK] - np.int64(p[P_WINDOW] - p[P_RESERVE])
    if excess <= 0:
        return
    lo, newest = prefix_end(r, st), r.req_end[k - 1] if k > 0 else 0  # this request's new items stay
    n = 0
    for q in range(lo, newest):
        n += st.forms[q] == ORIGINAL
    if n == 0:
        return
    pos = np.empty(n, np.int64)
    n = 0
    for q in range(lo, newest):
        if st.forms[q] == ORIGINAL:
            pos[n] = q
            n += 1
    need = next_needs(r, first, lo, newest)[pos - lo]
    by_size = np.argsort(-st.ftok[ORIGINAL, pos], kind="mergesort")  # stable: largest first, then oldest
    order = pos[by_size][np.argsort(-need[by_size], kind="mergesort")]
    saved = 0
    for q in order:
        saved += st.ftok[ORIGINAL, q]
        set_form(st, q, OMITTED)
        if saved >= excess:
            break


POLICIES = [Oracle]
