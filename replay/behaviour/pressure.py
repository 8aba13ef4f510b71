"""Working-set pressure, measured on the views a policy gives a run's requests.

- ``pressured``: requests whose view hides the latest read or search result of a resource the run uses again (a
  later tool call names it, however much later). The agent then holds a file it has not finished with only as a
  placeholder.
- ``blind``: requests whose own tool call names a resource whose latest read or search result the view hides. The
  agent acts on (re-reads, searches, edits) a file at the very decision where its last look is out of view.
- ``uses``: requests whose own tool call names a resource it has read or searched before (seen or not).

A loop is a chain of blind uses: the agent re-fetches what it cannot see, and by its next use of that resource the
re-fetched copy is out of view again. ``recurrence`` (blind uses over all uses: the share of the run's revisits
whose gap the view hides) is the chance that a use is blind, so ``loop_exposure`` (blind uses times recurrence)
counts the blind uses expected to recur, assuming successive revisit gaps independent. A window wider
than the run's revisit gaps (results between a look and the next use of the same resource) leaves few blind uses
and fewer recurring ones, whereas a resource read early and edited much later keeps every request in between
``pressured`` at any window shorter than that gap: pressure shows what a policy hides, exposure what it tips."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from replay.policies.view import ORIGINAL, View
from replay.run_arrays import ACCESS_CODE, TOOL_CALL, RunArrays

LOOKS = (ACCESS_CODE["read"], ACCESS_CODE["search"])


@dataclass(frozen=True)
class WorkingSet:
    """Per request of one run under one policy: ``pressured``, ``uses``, ``blind`` (see the module); ``start``:
    the first request whose view hides a read or search result (the run's length when none does); ``summarised``:
    the policy called its summariser before the request (a model call of its own, a step where the harness counts
    it as one: OpenHands' condensation is an agent step)."""

    pressured: np.ndarray
    uses: np.ndarray
    blind: np.ndarray
    start: int
    summarised: np.ndarray | None = None

    @property
    def summaries(self) -> int:
        return 0 if self.summarised is None else int(self.summarised.sum())

    @property
    def recurrence(self) -> float:
        """Share of the run's uses that are blind: of its revisits, those whose gap the view hides (0 without
        uses). Over every use, so a wider window never raises it."""
        used = int(self.uses.sum())
        return float(self.blind.sum() / used) if used else 0.0

    @property
    def loop_exposure(self) -> float:
        """Blind uses expected to recur: ``blind.sum() * recurrence``."""
        return float(self.blind.sum()) * self.recurrence


def looks(run: RunArrays) -> np.ndarray:
    """Positions of read/search calls with a resource and a result."""
    return np.flatnonzero((run.kind == TOOL_CALL) & (run.resource >= 0) & (run.pair >= 0) & np.isin(run.access, LOOKS))


def last_use(run: RunArrays) -> np.ndarray:
    """Per resource id: the position of its last tool call (-1 none)."""
    calls = np.flatnonzero((run.kind == TOOL_CALL) & (run.resource >= 0))
    out = np.full(int(run.resource.max(initial=-1)) + 1, -1, dtype=np.int64)
    np.maximum.at(out, run.resource[calls], calls)
    return out


def working_set(run: RunArrays, views: Iterable[View]) -> WorkingSet:
    """One pass over ``views`` (one per request, in order)."""
    calls = looks(run)
    results = run.pair[calls].astype(np.int64)
    order = np.argsort(results, kind="stable")
    calls, results = calls[order], results[order]
    again = last_use(run)
    used = np.flatnonzero((run.kind == TOOL_CALL) & (run.resource >= 0))
    latest = np.full(len(again), -1, dtype=np.int64)  # per resource: its latest read/search result so far
    n = run.n_requests
    pressed, uses, blind = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    summarised = np.zeros(n, dtype=bool)
    start = n
    i = j = 0
    for k, view in enumerate(views):
        end = int(view.end)
        summarised[k] = view.summarised
        while i < len(results) and results[i] < end:
            latest[run.resource[calls[i]]] = results[i]
            i += 1
        seen = latest[latest >= 0]
        hidden = view.forms[seen] != ORIGINAL
        if start == n and hidden.any():
            start = k
        live = (latest >= 0) & (again >= end)
        pressed[k] = bool((view.forms[latest[live]] != ORIGINAL).any())
        nxt = int(run.req_end[k + 1]) if k + 1 < n else run.n_items
        while j < len(used) and used[j] < end:
            j += 1
        lo = j
        while j < len(used) and used[j] < nxt:
            j += 1
        mine = latest[run.resource[used[lo:j]]]
        mine = mine[mine >= 0]
        uses[k] = bool(len(mine))
        blind[k] = bool((view.forms[mine] != ORIGINAL).any())
    return WorkingSet(pressed, uses, blind, start, summarised)


def pressured(run: RunArrays, views: Iterable[View]) -> np.ndarray:
    """Per request: its view hides the latest read/search result (in its history) of a resource called again after
    the request. ``views``: one per request, in order."""
    return working_set(run, views).pressured
