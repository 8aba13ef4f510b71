"""Belady oracle: within the common budget (window - reserve), evict the item needed farthest in the future.

"Needed" follows the repeat-read classification (``replay.metrics.repeat_reads``): an output is needed at request
d when a later repeat read decided at d re-reads its content unchanged. Every item kind can be evicted (a pasted
user message too) except the harness prefix and the newest request's own new items; an evicted item becomes an
omitted marker of 0 tokens and stays evicted. Items never needed again go first, largest first.

The candidates are kept in a binary heap ordered by that rule, so a request costs what it adds, evicts and what
changes need: O(log n) each, where n is the number of original items in the view. That logarithm is the one
superlinear factor (a strict eviction order over a changing set cannot be kept in less); n is at most the view's
items, not the history's.

With items of unequal sizes this is a heuristic, not the least possible count: ``replay.metrics.oracle_bound``
gives the provable bound (LP relaxation, integral optimum) that Belady is reported beside.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replay.jit import compiled
from replay.policies.base import CompiledPolicy
from replay.policies.config import PolicyConfig
from replay.policies.kernel import P_RESERVE, P_WINDOW, S_K, S_POLICY, S_TOT_TOK, set_form
from replay.policies.view import OMITTED, ORIGINAL

NEVER = np.iinfo(np.int64).max
# the eviction heap orders items by one int64 key per place, (next need << 32) | tokens (larger goes first), so a
# comparison reads two neighbouring keys and not each item's need and size; a need never comes (NEVER) is KEY_NEVER
KEY_NEVER = (1 << 31) - 1
KEY_TOKENS = 1 << 32
# scalars: first repeat read decided at this request or later; items in the eviction heap; items offered to it so far
(S_NEXT_READ, S_HEAP_N, S_OFFERED) = range(S_POLICY, S_POLICY + 3)
# aux rows: per item its next need (a request, NEVER none); per repeat read the next unchanged one of its item;
# per item its first unchanged repeat read (setup only); the eviction heap (items by place); per item its place in
# the heap (-1: not in it); the heap's keys by place
(A_NEXT, A_CHAIN, A_LATER, A_HEAP, A_PLACE, A_KEY) = range(6)


@dataclass(frozen=True)
class OracleConfig(PolicyConfig):
    """No knobs: the budget is the simulation's (window - reserve), the same as the policies it is compared to."""

    kind = "oracle"


class Oracle(CompiledPolicy):
    name = "oracle"
    Config = OracleConfig
    config: OracleConfig  # PolicyBase.__init__ checks the instance is a Config


@compiled(borrowed=True)
def setup(p, r, st):
    """An omitted item costs nothing. Next needs: per item the request of its first unchanged repeat read (NEVER
    if none), and per repeat read the next unchanged one of the same item (-1 none); a repeat read is decided by
    one read call, so there are fewer of them than items."""
    big = len(r.req_end) >= KEY_NEVER
    for q in range(len(r.tokens)):
        big |= r.tokens[q] >= KEY_TOKENS
    if big:
        raise ValueError("oracle: a run of 2**31 requests or an item of 2**32 tokens is past its heap keys")
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
    st.aux[A_PLACE, :] = -1


@compiled(borrowed=True)
def key_of(st, q):
    """Item q's heap key: farther next need (never needed: farthest), then larger, goes first."""
    need = st.aux[A_NEXT, q]
    return (KEY_NEVER if need == NEVER else need) * KEY_TOKENS + st.ftok[ORIGINAL, q]


@compiled(borrowed=True)
def goes_before(heap, keys, i, j):
    """The item at place i of the heap goes before the one at place j: larger key, then older."""
    return (keys[i] > keys[j]) | ((keys[i] == keys[j]) & (heap[i] < heap[j]))


@compiled(borrowed=True)
def heap_put(st, i, q, key):
    """Item q with ``key`` at place i of the heap."""
    st.aux[A_HEAP, i] = q
    st.aux[A_KEY, i] = key
    st.aux[A_PLACE, q] = i


@compiled(borrowed=True)
def sift_up(st, i):
    """Move the item at place i up while it goes before its parent."""
    heap, keys = st.aux[A_HEAP], st.aux[A_KEY]
    q, key = heap[i], keys[i]
    while i > 0:
        parent = (i - 1) // 2
        if not ((key > keys[parent]) | ((key == keys[parent]) & (q < heap[parent]))):
            break
        heap_put(st, i, heap[parent], keys[parent])
        i = parent
    heap_put(st, i, q, key)


@compiled(borrowed=True)
def sift_down(st, i):
    """Move the item at place i down while a child goes before it."""
    heap, keys, n = st.aux[A_HEAP], st.aux[A_KEY], st.s[S_HEAP_N]
    q, key = heap[i], keys[i]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n:
            if goes_before(heap, keys, child + 1, child):
                child += 1
        if not ((keys[child] > key) | ((keys[child] == key) & (heap[child] < q))):
            break
        heap_put(st, i, heap[child], keys[child])
        i = child
    heap_put(st, i, q, key)


@compiled(borrowed=True)
def heap_push(st, q):
    n = st.s[S_HEAP_N]
    st.s[S_HEAP_N] = n + 1
    heap_put(st, n, q, key_of(st, q))
    sift_up(st, n)


@compiled(borrowed=True)
def heap_pop(st):
    """The item that goes first, out of the heap."""
    heap = st.aux[A_HEAP]
    top = heap[0]
    st.aux[A_PLACE, top] = -1
    n = st.s[S_HEAP_N] - 1
    st.s[S_HEAP_N] = n
    if n > 0:
        heap_put(st, 0, heap[n], st.aux[A_KEY, n])
        sift_down(st, 0)
    return top


@compiled(borrowed=True)
def expire_needs(r, st):
    """Repeat reads decided before this request no longer need their items: each such item's next need moves to
    its next unchanged repeat read."""
    k, e = st.s[S_K], st.s[S_NEXT_READ]
    while e < len(r.rr_decide) and r.rr_decide[e] < k:
        if not r.rr_changed[e]:
            later = st.aux[A_CHAIN, e]
            q = r.rr_prev[e]
            st.aux[A_NEXT, q] = r.rr_decide[later] if later >= 0 else NEVER
            place = st.aux[A_PLACE, q]
            if place >= 0:  # a later need only moves an item towards eviction
                st.aux[A_KEY, place] = key_of(st, q)
                sift_up(st, place)
        e += 1
    st.s[S_NEXT_READ] = e


@compiled(borrowed=True)
def decide(p, r, st):
    """Over the budget by real tokens: omit original items before this request's new ones, farthest next need
    first (never needed: first), then largest, then oldest, until the view fits. Items join the heap once an
    earlier request's (never the prefix); one no longer original when it comes up (the server dropped it) is
    passed over."""
    expire_needs(r, st)
    k = st.s[S_K]
    newest = r.req_end[k - 1] if k > 0 else 0  # this request's new items stay
    for q in range(max(st.s[S_OFFERED], r.first_body), newest):
        heap_push(st, q)
    st.s[S_OFFERED] = max(st.s[S_OFFERED], newest)
    excess = st.s[S_TOT_TOK] - np.int64(p[P_WINDOW] - p[P_RESERVE])
    if excess <= 0:
        return
    saved = 0
    while st.s[S_HEAP_N] > 0:
        q = heap_pop(st)
        if st.forms[q] != ORIGINAL:
            continue
        saved += st.ftok[ORIGINAL, q]
        set_form(st, q, OMITTED)
        if saved >= excess:
            return


POLICIES = [Oracle]
