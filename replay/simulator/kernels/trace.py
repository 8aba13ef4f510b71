"""One run's per-request views from the compiled loop: the columns and the change log of ``trace_kernel`` turned
back into the View of each request (replay.policies.view)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from replay.policies.base import AnyPolicy, Budget, CompiledPolicy
from replay.policies.kernel import P_NEAR_MARGIN, P_OVERHEAD, SUMMARY_MADE
from replay.policies.python_kernel import PYTHON, hosting
from replay.policies.view import View
from replay.run_arrays import RunArrays
from replay.simulator.caches import CacheModel
from replay.simulator.kernels.caches import cache_params
from replay.simulator.kernels.corpus import trace_kernel
from replay.simulator.kernels.dispatched import kernel_params
from replay.simulator.kernels.driver import (
    T_CACHED,
    T_DIRTY,
    T_EMERGENCY,
    T_SUM_AT,
    T_SUM_EST,
    T_SUM_ID,
    T_SUM_TOK,
    T_SUMMARISED,
    T_WINDOW,
    T_WRITTEN,
)
from replay.simulator.kernels.packed import PackedRuns, pack
from replay.simulator.run_start import split_tail


@dataclass(frozen=True, eq=False)
class Trace:
    """A run under one configuration: per-request ``columns`` (T_*), the change log (request, position, form,
    tokens, estimate), the run's counters (O_*) and the policy's final form costs (``ftok``/``fest``)."""

    run: RunArrays
    columns: np.ndarray
    log: np.ndarray
    counters: np.ndarray
    ftok: np.ndarray
    fest: np.ndarray

    @property
    def cached(self) -> np.ndarray:
        return self.columns[:, T_CACHED]

    @property
    def written(self) -> np.ndarray:
        return self.columns[:, T_WRITTEN]

    def views(self) -> Iterator[View]:
        """V_0, V_1, ... in order."""
        n = self.run.n_items
        forms, tok, est = np.zeros(n, np.int8), np.zeros(n, np.int64), np.zeros(n, np.int64)
        bounds = np.searchsorted(self.log[:, 0], np.arange(self.run.n_requests + 1))
        for k, c in enumerate(self.columns):
            rows = self.log[bounds[k] : bounds[k + 1]]
            at = rows[:, 1]
            forms[at], tok[at], est[at] = rows[:, 2], rows[:, 3], rows[:, 4]
            end = int(self.run.req_end[k])
            yield View(
                k=k,
                end=end,
                forms=forms[:end].copy(),
                seg_tokens=tok[:end].copy(),
                seg_est=est[:end].copy(),
                summary_at=int(c[T_SUM_AT]),
                summary_id=int(c[T_SUM_ID]),
                summary_tokens=int(c[T_SUM_TOK]),
                summary_est=int(c[T_SUM_EST]),
                dirty_from=int(c[T_DIRTY]),
                emergency=bool(c[T_EMERGENCY]),
                summarised=bool(c[T_SUMMARISED] & SUMMARY_MADE),
                window=int(c[T_WINDOW]),
            )


def trace_run(
    run: RunArrays,
    policy: AnyPolicy,
    budget: Budget,
    cache: CacheModel | None = None,
    model: str | None = None,
    near_margin: float = 0.05,
    overhead: int = 0,
) -> Trace:
    """Run ``run`` under ``policy`` (a built-in, or a policy written in Python: the same loop, calling back into it
    for each decision) in the compiled loop, charging ``cache`` (None: no cache) for a run of ``model``;
    ``overhead`` as in replay.simulator.run.simulate_run; the run starts with its own warm prefix and tail
    (``RunArrays.warm``/``tail``), the views' prefix item without the tail."""
    packed = pack([run])
    cp = cache_params(cache if cache is not None else CacheModel(), model)
    if isinstance(policy, CompiledPolicy):
        p = kernel_params(policy, budget)
        tflag = packed.tool_flags(policy.tool_flags(packed.tool_names))
        return _trace(run, packed, policy.code, policy.name, p, cp, tflag, near_margin, overhead)
    with hosting(policy, split_tail(run), budget) as p:  # the policy sees the run as the loop does
        tflag = packed.tool_flags(np.zeros(len(packed.tool_names), dtype=np.int8))
        return _trace(run, packed, PYTHON, "policies written in Python", p, cp, tflag, near_margin, overhead)


def _trace(
    run: RunArrays,
    packed: PackedRuns,
    code: int,
    name: str,
    p: np.ndarray,
    cp: np.ndarray,
    tflag: np.ndarray,
    near_margin: float,
    overhead: int,
) -> Trace:
    p[P_NEAR_MARGIN], p[P_OVERHEAD] = near_margin, overhead
    counters, columns, log, ftok, fest = trace_kernel(code, name, p, cp, packed.arrays, tflag, 0)
    return Trace(run, columns, log, counters, ftok, fest)


@dataclass(frozen=True, eq=False)
class Views:
    """Every request's view of a run under a policy, and the policy's form costs after the last request."""

    views: list[View]
    ftok: np.ndarray
    fest: np.ndarray


def views_of(run: RunArrays, policy: AnyPolicy, budget: Budget) -> Views:
    """The views of ``run`` under ``policy`` (compiled, or a policy written in Python), no cache."""
    trace = trace_run(run, policy, budget)
    return Views(list(trace.views()), trace.ftok, trace.fest)
