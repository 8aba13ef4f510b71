"""Repeat reads by content: a read is a repeat when it shows content an earlier read of the run already showed.

Same content means the same resource and an overlapping part of it: overlapping line ranges of a file, or the
very same command when the arguments do not say which lines (``replay.readers.tool_targets.read_span``). A read of
another range of the same file is not a repeat. Classes: ``changed`` (the resource was written since the earlier
read: legitimate), ``visible`` (the earlier output was intact in the view that decided the call: redundant),
``evicted`` (it was not: the policy induced the read).

Per-resource counts (any earlier read of the same resource, whatever range) stay beside them as
``repeat_same_resource*``: they do not depend on the policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from replay.readers.tool_targets import END, overlaps
from replay.run_arrays import ACCESS_CODE, TOOL_CALL, RunArrays

CHANGED, VISIBLE, EVICTED = 0, 1, 2
READ, WRITE = ACCESS_CODE["read"], ACCESS_CODE["write"]
RESOURCE_COLUMNS = ("repeat_same_resource", "repeat_same_resource_changed", "repeat_same_resource_tokens")


@dataclass(frozen=True)
class ReadEvents:
    """One row per repeat read: the call, the earlier read's result, the request that decided the call."""

    call: np.ndarray
    prev_result: np.ndarray
    decide: np.ndarray  # request index whose view the model saw when it issued the call
    changed: np.ndarray  # bool: r written between the two reads
    tokens: np.ndarray  # real tokens of the repeat read's result (the cost of reading again)
    max_reads: int  # most reads of one resource in the run
    same_resource: dict[str, int] = field(default_factory=dict)  # RESOURCE_COLUMNS: repeats by resource only


def spans(run: RunArrays) -> list[tuple[int, int, str | None]]:
    """Per item the span its read shows (``RunArrays.read_span``; the whole resource when not recorded)."""
    if run.read_span is None:
        return [(1, END, None)] * run.n_items
    return [(int(lo), int(hi), run.read_keys[k] if k >= 0 else None) for lo, hi, k in run.read_span.tolist()]


def read_events(run: RunArrays) -> ReadEvents:
    """All repeat reads by content of the run's reference stream (recorded actions stay fixed).

    The earlier read is the latest one of the same resource with overlapping content whose output was in the
    history of the deciding request (a parallel sibling's output was not: the model never saw it)."""
    span = spans(run)
    calls = np.flatnonzero((run.kind == TOOL_CALL) & (run.resource >= 0))
    reads: dict[int, list[tuple[int, int]]] = {}  # resource -> [(result position, call position)]
    last_write: dict[int, int] = {}
    counts: dict[int, int] = {}
    out: list[tuple[int, int, int, bool, int]] = []
    for c in calls:
        r, acc, res = int(run.resource[c]), int(run.access[c]), int(run.pair[c])
        if acc == WRITE:
            last_write[r] = c
        elif acc == READ and res >= 0:
            counts[r] = counts.get(r, 0) + 1
            decide = int(np.searchsorted(run.req_end, c, side="right")) - 1
            seen = int(run.req_end[decide]) if decide >= 0 else 0
            prev = next((p for p, pc in reversed(reads.get(r, [])) if p < seen and overlaps(span[pc], span[c])), -1)
            if prev >= 0:
                out.append((c, prev, decide, last_write.get(r, -1) > prev, int(run.tokens[res])))
            reads.setdefault(r, []).append((res, c))
    cols = list(zip(*out, strict=False)) if out else [(), (), (), (), ()]
    types = (np.int64,) * 3 + (bool, np.int64)
    call, prev_result, decided, changed, tokens = (np.array(col, dtype=dt) for col, dt in zip(cols, types, strict=True))
    return ReadEvents(
        call,
        prev_result,
        decided,
        changed,
        tokens,
        max_reads=max(counts.values(), default=0),
        same_resource=same_resource_counts(run),
    )


def same_resource_counts(run: RunArrays) -> dict[str, int]:
    """Repeats by resource alone (any range): the latest earlier read of the resource, if the model saw it."""
    calls = np.flatnonzero((run.kind == TOOL_CALL) & (run.resource >= 0))
    last_read: dict[int, int] = {}
    last_write: dict[int, int] = {}
    n = changed = tokens = 0
    for c in calls:
        r, acc, res = int(run.resource[c]), int(run.access[c]), int(run.pair[c])
        if acc == WRITE:
            last_write[r] = c
        elif acc == READ and res >= 0:
            if r in last_read:
                prev = last_read[r]
                decide = int(np.searchsorted(run.req_end, c, side="right")) - 1
                if decide >= 0 and prev < run.req_end[decide]:
                    n += 1
                    changed += last_write.get(r, -1) > prev
                    tokens += int(run.tokens[res])
            last_read[r] = res
    return dict(zip(RESOURCE_COLUMNS, (n, int(changed), tokens), strict=True))


def classify(events: ReadEvents, prev_intact: np.ndarray) -> np.ndarray:
    """Class per event given whether the earlier output was intact in the deciding view."""
    return np.where(events.changed, CHANGED, np.where(prev_intact, VISIBLE, EVICTED))


def summarise(events: ReadEvents, classes: np.ndarray) -> dict[str, int]:
    out: dict[str, int] = {"max_reads_one_resource": events.max_reads}
    for name, code in (("changed", CHANGED), ("visible", VISIBLE), ("evicted", EVICTED)):
        sel = classes == code
        out[f"repeat_{name}"] = int(sel.sum())
        out[f"repeat_{name}_tokens"] = int(events.tokens[sel].sum())
    return {**out, **events.same_resource}
