"""The compiled ``setup`` and ``decide`` of every policy written in Python: the request loop
(``replay.simulator.kernels.driver``) is compiled once for code ``PYTHON`` with these two, which leave compiled code
(``numba.objmode``) to call the ``Policy`` object's ``attach`` and ``advance``. Everything else a request does (its
items, the orphan and server drops, the view, the cache, the counts) stays the loop's.

The object is found by a handle in the parameter vector (``p[P_HANDLE]``), valid inside :func:`hosting`. An error
raised by the policy is kept, the remaining requests skip it, and :func:`hosting` raises it once the loop returns.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import count

import numpy as np
from numba import objmode

from replay.jit import compiled
from replay.policies.base import Budget, Policy
from replay.policies.kernel import ESTIMATORS, N_PARAMS, P_CODE, P_ESTIMATOR, P_POLICY, P_RESERVE, P_WINDOW, S_K
from replay.run_arrays import RunArrays

PYTHON = -2  # the policy code of every policy written in Python (registered codes count from 0)
P_HANDLE, P_REPLAYS_RECORDED = P_POLICY, P_POLICY + 1


@dataclass(eq=False)
class _Hosted:
    policy: Policy
    run: RunArrays
    budget: Budget
    error: BaseException | None = None


_HOSTED: dict[int, _Hosted] = {}
_HANDLES = count(1)


@contextmanager
def hosting(policy: Policy, run: RunArrays, budget: Budget) -> Iterator[np.ndarray]:
    """The parameter vector that runs ``policy`` on ``run`` (as the loop sees it: its tail split off) in the
    compiled loop while the block lasts; the policy's first error is raised when the block ends."""
    handle = next(_HANDLES)
    hosted = _Hosted(policy, run, budget)
    _HOSTED[handle] = hosted
    p = np.zeros(N_PARAMS, dtype=np.float64)
    p[P_CODE], p[P_WINDOW], p[P_RESERVE] = PYTHON, budget.window, budget.reserve
    p[P_ESTIMATOR] = ESTIMATORS[getattr(policy.config, "estimator", "chars/4")]
    p[P_HANDLE], p[P_REPLAYS_RECORDED] = handle, policy.replays_recorded
    try:
        yield p
    finally:
        del _HOSTED[handle]
    if hosted.error is not None:
        hosted.error.add_note(f"raised by policy {policy.name} (written in Python) on run {run.run_id}")
        raise hosted.error


def _attach(handle: int, forms: np.ndarray, ftok: np.ndarray, fest: np.ndarray) -> None:
    hosted = _HOSTED[handle]
    try:
        hosted.policy.attach(hosted.run, hosted.budget, forms, ftok, fest)
    except BaseException as e:  # noqa: BLE001 - kept and raised by hosting() once the compiled loop returns
        hosted.error = e


def _advance(handle: int, s: np.ndarray) -> None:
    hosted = _HOSTED[handle]
    if hosted.error is not None:
        return
    try:
        hosted.policy.advance(s)
    except BaseException as e:  # noqa: BLE001
        e.add_note(f"at request {int(s[S_K])}")
        hosted.error = e


@compiled
def setup(p, r, st):  # noqa: ARG001 - the driver's signature
    """The policy's ``attach`` (its ``setup``) on the loop's state arrays."""
    handle = np.int64(p[P_HANDLE])
    forms, ftok, fest = st.forms, st.ftok, st.fest
    with objmode():
        _attach(handle, forms, ftok, fest)


@compiled
def decide(p, r, st):  # noqa: ARG001
    """The policy's ``advance`` (its stages) on the loop's scalars."""
    handle = np.int64(p[P_HANDLE])
    s = st.s
    with objmode():
        _advance(handle, s)
