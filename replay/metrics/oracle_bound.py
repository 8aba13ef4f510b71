"""A provable lower bound on evicted repeat reads at a token budget: the LP relaxation of offline eviction.

What is bounded. The simulator classifies a repeat read e (``replay.metrics.repeat_reads``) as *evicted* when it
is not ``changed`` and its earlier output ``prev_e`` was not intact (form ORIGINAL) in the view of the request
``d_e`` that decided the call. So for any view sequence, evicted = sum over unchanged events of
``1 - keep[prev_e, d_e]``, where ``keep[p, k]`` is 1 when item p is intact in V_k.

Variables. ``x[p, d]`` in [0, 1]: the fraction of item p kept intact in the view of request d, one per distinct
(earlier output, deciding request) pair among the unchanged events. Items that no event needs get no variable:
keeping them only uses room.

Constraints. Per deciding request d: ``sum_p tokens[p] * x[p, d] <= capacity[d] - prefix[d]``. ``capacity[d]`` is
the prompt the view may hold (the budget: window - reserve); ``prefix[d]`` the harness prefix in the history (the
leading system/tool_defs items, ``RunArrays.first_body``, which carry the prefix the log does not hold), which
every policy sends intact. Everything else may be evicted at no cost: a placeholder, summary or marker costs
>= 0 tokens, and any item kind (a 106k pasted user message too) can be dropped, so relaxing them to 0 only
lowers the bound. There is no constraint across requests: a policy may bring an evicted output back (seed C's
markers go when room returns), so what request d keeps does not limit request d+1.

Objective. Minimise ``sum_e (1 - x[prev_e, d_e])``, i.e. maximise the events whose output is kept.

Why it is a bound. Any policy's views that keep the prefix intact and fit ``capacity`` give a 0/1 point of this
program (x = 1 for the needed outputs they keep intact) whose objective is exactly their evicted count; the LP
optimum is <= the integral optimum <= that count. Solved with HiGHS (``scipy.optimize.linprog``); the integral
optimum (``scipy.optimize.milp``) on runs with at most ``EXACT_LIMIT`` variables. The integral optimum is also
attained by a policy (keep exactly the chosen outputs at each request), so it is the least possible count.
Belady (``replay.policies.oracle``: evict the output needed farthest in the future) is reported beside it: a
heuristic whose count is >= the bound.

A policy whose prompt exceeds the budget (an overflow) is not held to it: pass its own per-request prompt as
``capacity`` (``max(budget, prompt)``) to bound it at the room it used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp
from scipy.sparse import csr_array, vstack

from replay.errors import ReplayError
from replay.metrics.repeat_reads import read_events
from replay.run_arrays import RunArrays

EXACT_LIMIT = 20_000  # variables up to which the integral optimum is computed


@dataclass(frozen=True)
class OracleBound:
    """Evicted repeat reads: the LP bound, the integral optimum when computed, and the bound to report."""

    events: int  # unchanged repeat reads (the most that can be evicted)
    lp: float  # LP relaxation optimum
    exact: int | None  # integral optimum (least possible count), None when not computed
    forced: int  # events whose output alone cannot fit the request's room

    @property
    def bound(self) -> int:
        """The integral optimum when known, else the LP optimum rounded up (counts are integers)."""
        return self.exact if self.exact is not None else math.ceil(self.lp - 1e-9)


def policy_tokens(run: RunArrays) -> np.ndarray:
    """Real tokens per item as a policy holds them intact: the harness's recorded-only items cost nothing there."""
    gone = run.events.recorded_only
    return np.where(gone, 0, run.tokens) if gone.any() else run.tokens


def room(run: RunArrays, capacity: int | np.ndarray) -> np.ndarray:
    """Per request: tokens the view may keep besides the harness prefix (never below 0)."""
    cap = np.broadcast_to(np.asarray(capacity, dtype=np.int64), (run.n_requests,))
    prefix_cum = np.concatenate([[0], np.cumsum(policy_tokens(run)[: run.first_body])])
    prefix = prefix_cum[np.minimum(run.req_end, run.first_body)]
    return np.maximum(cap - prefix, 0)


def _variables(
    run: RunArrays, prev: np.ndarray, decide: np.ndarray, restore: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(item, request, events) per variable. With ``restore`` one per needed (output, deciding request) pair;
    without, one per request from the output's arrival to its last need (consecutive per item)."""
    if restore:
        pairs, value = np.unique(np.stack([prev, decide], axis=1), axis=0, return_counts=True)
        return pairs[:, 0], pairs[:, 1], value
    items, inv = np.unique(prev, return_inverse=True)
    first = np.searchsorted(run.req_end, items, side="right")  # first request whose history holds the item
    last = np.zeros(len(items), dtype=np.int64)
    np.maximum.at(last, inv, decide)
    length = last - first + 1
    off = np.concatenate([[0], np.cumsum(length)])
    var_item = np.repeat(items, length)
    var_req = np.arange(off[-1]) - np.repeat(off[:-1], length) + np.repeat(first, length)
    value = np.bincount(off[inv] + decide - first[inv], minlength=off[-1])
    return var_item, var_req, value


def oracle_bound(
    run: RunArrays,
    capacity: int | np.ndarray,
    restore: bool = True,
    exact: bool | None = None,
    time_limit: float = 30.0,
) -> OracleBound:
    """Least evicted repeat reads any view sequence within ``capacity`` prompt tokens per request can have.

    ``capacity``: the budget (window - reserve), or one value per request. ``restore=False``: the bound for
    policies that never bring an evicted output back (each output's intact fraction cannot grow), the classic
    offline eviction problem; a stronger bound that holds for those policies only. ``exact``: solve the integer
    program too (default: when it has at most ``EXACT_LIMIT`` variables; ``time_limit`` seconds, after which the
    LP bound is reported)."""
    ev = read_events(run)
    keep = ~ev.changed & (ev.prev_result >= run.first_body)  # a prefix item is always intact
    n_events = int(keep.sum())
    if n_events == 0:
        return OracleBound(0, 0.0, 0, 0)
    var_item, var_req, value = _variables(run, ev.prev_result[keep], ev.decide[keep], restore)
    size = policy_tokens(run)[var_item].astype(np.float64)
    limit = room(run, capacity)[var_req].astype(np.float64)
    forced = int(value[size > limit].sum())
    upper = np.where(size > limit, 0.0, 1.0)  # an output larger than the room cannot be kept, even in part
    rows, row_of = np.unique(var_req, return_inverse=True)
    n = len(var_item)
    a_cap = csr_array((size, (row_of, np.arange(n))), shape=(len(rows), n))
    b_cap = room(run, capacity)[rows].astype(np.float64)
    blocks, rhs = [a_cap], [b_cap]
    if not restore:  # x[p, k+1] - x[p, k] <= 0
        nxt = np.flatnonzero(var_item[1:] == var_item[:-1])
        m = len(nxt)
        data = np.concatenate([np.ones(m), -np.ones(m)])
        cols = np.concatenate([nxt + 1, nxt])
        blocks.append(csr_array((data, (np.tile(np.arange(m), 2), cols)), shape=(m, n)))
        rhs.append(np.zeros(m))
    a = vstack(blocks, format="csr")
    b = np.concatenate(rhs)
    c = -value.astype(np.float64)
    lp = linprog(c, A_ub=a, b_ub=b, bounds=np.stack([np.zeros(n), upper], 1), method="highs")
    if lp.status != 0:
        raise ReplayError(f"run {run.run_id}: the oracle LP did not solve ({lp.message})")
    best = None
    if exact or (exact is None and n <= EXACT_LIMIT):
        ip = milp(
            c,
            integrality=np.ones(n),
            bounds=Bounds(0, upper),
            constraints=LinearConstraint(a, -np.inf, b),
            options={"time_limit": time_limit},
        )
        if ip.status == 0:
            best = n_events - round(-ip.fun)
        elif ip.status != 1:  # 1: time limit reached, the LP bound stands
            raise ReplayError(f"run {run.run_id}: the oracle integer program did not solve ({ip.message})")
    return OracleBound(n_events, max(n_events + float(lp.fun), 0.0), best, forced)
