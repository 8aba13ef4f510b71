"""Repeat reads: a read of r is a repeat if r was read before; classes changed / visible / evicted."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replay.simulator.arrays import ACCESS_CODE, TOOL_CALL, RunArrays

CHANGED, VISIBLE, EVICTED = 0, 1, 2


@dataclass(frozen=True)
class ReadEvents:
    """One row per repeat read: the call, the earlier read's result, the request that decided the call."""

    call: np.ndarray
    prev_result: np.ndarray
    decide: np.ndarray     # request index whose view the model saw when it issued the call
    changed: np.ndarray    # bool: r written between the two reads
    tokens: np.ndarray     # real tokens of the repeat read's result (the cost of reading again)
    max_reads: int         # most reads of one resource in the run


def read_events(run: RunArrays) -> ReadEvents:
    """All repeat reads of the run's reference stream (recorded actions stay fixed)."""
    calls = np.flatnonzero((run.kind == TOOL_CALL) & (run.resource >= 0))
    last_read: dict[int, int] = {}
    last_write: dict[int, int] = {}
    counts: dict[int, int] = {}
    out: list[tuple[int, int, int, bool, int]] = []
    for c in calls:
        r, acc, res = int(run.resource[c]), int(run.access[c]), int(run.pair[c])
        if acc == ACCESS_CODE["write"]:
            last_write[r] = c
        elif acc == ACCESS_CODE["read"] and res >= 0:
            counts[r] = counts.get(r, 0) + 1
            if r in last_read:
                prev = last_read[r]
                decide = int(np.searchsorted(run.req_end, c, side="right")) - 1
                if decide >= 0 and prev < run.req_end[decide]:  # else concurrent: the model never saw it
                    out.append((c, prev, decide, last_write.get(r, -1) > prev, int(run.tokens[res])))
            last_read[r] = res
    cols = list(zip(*out, strict=False)) if out else [(), (), (), (), ()]
    types = (np.int64,) * 3 + (bool, np.int64)
    return ReadEvents(*(np.array(col, dtype=dt) for col, dt in zip(cols, types, strict=True)),
                      max_reads=max(counts.values(), default=0))


def classify(events: ReadEvents, prev_intact: np.ndarray) -> np.ndarray:
    """Class per event given whether the earlier output was intact in the deciding view."""
    return np.where(events.changed, CHANGED, np.where(prev_intact, VISIBLE, EVICTED))


def summarise(events: ReadEvents, classes: np.ndarray) -> dict[str, int]:
    out: dict[str, int] = {"max_reads_one_resource": events.max_reads}
    for name, code in (("changed", CHANGED), ("visible", VISIBLE), ("evicted", EVICTED)):
        sel = classes == code
        out[f"repeat_{name}"] = int(sel.sum())
        out[f"repeat_{name}_tokens"] = int(events.tokens[sel].sum())
    return out
