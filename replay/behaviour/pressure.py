"""Working-set pressure: requests whose view hides the latest read or search result of a resource the run uses
again (a later tool call names it). The agent then decides without the newest content it fetched of a file it has
not finished with."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from replay.policies.view import ORIGINAL, View
from replay.run_arrays import ACCESS_CODE, TOOL_CALL, RunArrays

LOOKS = (ACCESS_CODE["read"], ACCESS_CODE["search"])


def looks(run: RunArrays) -> np.ndarray:
    """Positions of read/search calls with a resource and a result."""
    return np.flatnonzero((run.kind == TOOL_CALL) & (run.resource >= 0) & (run.pair >= 0) & np.isin(run.access, LOOKS))


def last_use(run: RunArrays) -> np.ndarray:
    """Per resource id: the position of its last tool call (-1 none)."""
    calls = np.flatnonzero((run.kind == TOOL_CALL) & (run.resource >= 0))
    out = np.full(int(run.resource.max(initial=-1)) + 1, -1, dtype=np.int64)
    np.maximum.at(out, run.resource[calls], calls)
    return out


def pressured(run: RunArrays, views: Iterable[View]) -> np.ndarray:
    """Per request: its view hides the latest read/search result (in its history) of a resource called again after
    the request. ``views``: one per request, in order."""
    calls = looks(run)
    results = run.pair[calls].astype(np.int64)
    order = np.argsort(results, kind="stable")
    calls, results = calls[order], results[order]
    again = last_use(run)
    latest = np.full(len(again), -1, dtype=np.int64)  # per resource: its latest read/search result so far
    out = np.zeros(run.n_requests, dtype=bool)
    i = 0
    for k, view in enumerate(views):
        end = int(view.end)
        while i < len(results) and results[i] < end:
            latest[run.resource[calls[i]]] = results[i]
            i += 1
        live = latest[(latest >= 0) & (again >= end)]
        out[k] = bool(len(live)) and bool((view.forms[live] != ORIGINAL).any())
    return out
