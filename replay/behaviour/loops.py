"""Loop episodes: stretches of a run where the agent cycles through the same few calls, each an unchanged repeat of
an identical earlier call. Found in the recorded actions (the policy does not move them); the policy's view only
says how much of the cycle it hid."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replay.behaviour.repeats import RepeatCalls

MAX_GAP = 1  # other calls allowed between two repeats of one episode
MIN_CYCLES = 2  # an episode repeats its distinct calls at least this many times over
MIN_REPEATS = 10  # and holds at least this many repeats
MIN_PERIOD = 2  # a call repeated straight after itself is a retry, not a cycle


@dataclass(frozen=True)
class Episode:
    """One loop: tool-call indices ``first``..``last`` (into the run's keyed calls)."""

    first: int
    last: int
    calls: int  # keyed calls in the episode
    repeats: int  # unchanged identical repeats among them
    distinct: int  # distinct calls (identical-call classes)
    period: int  # median distance, in calls, from a repeat to its earlier identical call
    tool: str  # the calls' most common tool (an editor's view reads as "view")
    repeat_rows: np.ndarray  # rows of the RepeatCalls table inside the episode


def episodes(events: RepeatCalls, tool_label: list[str]) -> list[Episode]:
    """Maximal stretches of stale repeats (at most ``MAX_GAP`` other calls between two) holding at least
    ``MIN_REPEATS`` repeats, ``MIN_CYCLES`` times as many calls as distinct ones and a period of at least
    ``MIN_PERIOD``. ``tool_label``: per keyed
    call, the word for its tool."""
    index = {int(c): i for i, c in enumerate(events.calls.tolist())}
    stale_rows = np.flatnonzero(events.stale)
    at = np.array([index[int(events.call[r])] for r in stale_rows], dtype=np.int64)
    prev_at = np.array([index[int(events.prev_call[r])] for r in stale_rows], dtype=np.int64)
    out: list[Episode] = []
    start = 0
    for end in range(1, len(at) + 1):
        if end < len(at) and at[end] - at[end - 1] <= MAX_GAP + 1:
            continue
        rows, first, last = stale_rows[start:end], int(at[start]), int(at[end - 1]) if end else 0
        start = end
        if len(rows) < MIN_REPEATS:
            continue
        keys = events.keys[first : last + 1]
        distinct = len(set(keys.tolist()))
        if last - first + 1 < MIN_CYCLES * distinct:
            continue
        gaps = at[np.isin(stale_rows, rows)] - prev_at[np.isin(stale_rows, rows)]
        if int(np.median(gaps)) < MIN_PERIOD:
            continue
        labels = tool_label[first : last + 1]
        out.append(
            Episode(
                first,
                last,
                last - first + 1,
                len(rows),
                distinct,
                int(np.median(gaps)),
                max(set(labels), key=labels.count),
                rows,
            )
        )
    return out


def sentence(
    ep: Episode, hidden_share: float, window: int | None, visible_at: int | None, knob: str = "keep_last"
) -> str:
    """E.g. "9-view cycle, period 9 > window 5; visible at keep_last >= 10"."""
    text = f"{ep.distinct}-{ep.tool} cycle, period {ep.period}"
    if window is not None:
        text += f" {'>' if ep.period > window else '<='} window {window}"
    text += f"; {hidden_share:.0%} hidden"
    if visible_at is not None:
        text += f"; visible at {knob} >= {visible_at}"
    return text
