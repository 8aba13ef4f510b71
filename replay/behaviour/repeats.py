"""Identical repeat calls: a tool call with the same tool, resource, access and shown part (line range, or the
normalised command) as an earlier call whose result the model had in its history when it issued this one.

Built on ``replay.metrics.repeat_reads``: the same spans and the same deciding request; what differs is that the
earlier call must be identical, not merely overlapping."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from replay.metrics.repeat_reads import spans
from replay.policies.view import ORIGINAL, View
from replay.run_arrays import ACCESS_CODE, TOOL_CALL, RunArrays

WRITE = ACCESS_CODE["write"]
CallKey = tuple[int, int, int, tuple[int, int, str | None]]  # tool, resource, access, span


@dataclass(frozen=True)
class RepeatCalls:
    """One row per identical repeat call; ``calls``/``keys`` index every keyed call of the run, in order."""

    calls: np.ndarray  # positions of the run's keyed tool calls (with a resource and a result)
    keys: np.ndarray  # per keyed call: the id of its identical-call class
    call: np.ndarray  # the repeat call's position
    prev_call: np.ndarray  # the earlier identical call's position
    prev_result: np.ndarray  # the earlier call's result position
    decide: np.ndarray  # the request whose view the model saw when it issued the call
    changed: np.ndarray  # bool: the resource was written between the earlier result and this call

    @property
    def stale(self) -> np.ndarray:
        """Repeats whose earlier result is unchanged."""
        return ~self.changed


def call_key(run: RunArrays, span: list[tuple[int, int, str | None]], c: int) -> CallKey:
    return (int(run.tool[c]), int(run.resource[c]), int(run.access[c]), span[c])


def repeat_calls(run: RunArrays) -> RepeatCalls:
    """Every identical repeat call of the run's recorded stream: the earlier call is the latest identical one whose
    result was in the history of the deciding request (a parallel sibling's result was not)."""
    span = spans(run)
    calls = np.flatnonzero((run.kind == TOOL_CALL) & (run.resource >= 0) & (run.pair >= 0))
    ids: dict[CallKey, int] = {}
    seen_by_key: dict[int, list[tuple[int, int]]] = {}  # key id -> [(result position, call position)]
    last_write: dict[int, int] = {}
    keys = np.zeros(len(calls), dtype=np.int64)
    rows: list[tuple[int, int, int, int, bool]] = []
    for i, c in enumerate(calls.tolist()):
        key = ids.setdefault(call_key(run, span, c), len(ids))
        keys[i] = key
        r, res = int(run.resource[c]), int(run.pair[c])
        decide = int(np.searchsorted(run.req_end, c, side="right")) - 1
        seen = int(run.req_end[decide]) if decide >= 0 else 0
        prev = next(((p, pc) for p, pc in reversed(seen_by_key.get(key, [])) if p < seen), None)
        if prev is not None:
            rows.append((c, prev[1], prev[0], decide, last_write.get(r, -1) > prev[0]))
        if int(run.access[c]) == WRITE:
            last_write[r] = c
        seen_by_key.setdefault(key, []).append((res, c))
    cols = list(zip(*rows, strict=True)) if rows else [(), (), (), (), ()]
    types = (np.int64,) * 4 + (bool,)
    return RepeatCalls(calls, keys, *(np.array(col, dtype=dt) for col, dt in zip(cols, types, strict=True)))


def hidden_at_decide(events: RepeatCalls, views: Iterable[View]) -> np.ndarray:
    """Per repeat: whether the view of its deciding request showed the earlier result in another form than the
    original (placeholder, shrunk, dropped, summarised). ``views``: one per request, in order."""
    out = np.zeros(len(events.call), dtype=bool)
    order = np.argsort(events.decide, kind="stable")
    bounds = np.searchsorted(events.decide[order], np.arange(len(events.decide) and int(events.decide.max()) + 2))
    for k, view in enumerate(views):
        if k + 1 >= len(bounds):
            break
        ev = order[bounds[k] : bounds[k + 1]]
        if len(ev):
            out[ev] = view.forms[events.prev_result[ev]] != ORIGINAL
    return out
