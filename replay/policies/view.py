"""The view V_k a policy sends: item forms over the history plus at most one summary segment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

# Forms an item can take in a view. DROPPED items are absent (summarised or dropped).
ORIGINAL, PLACEHOLDER, SHRUNK, SPILLED, OMITTED, DROPPED = range(6)
N_FORMS = 6
FORM_NAMES: tuple[str, ...] = ("original", "placeholder", "shrunk", "spilled", "omitted", "dropped")
SegmentKind = Literal["original", "placeholder", "shrunk", "spilled", "omitted", "summary"]


@dataclass(frozen=True, slots=True)
class Segment:
    """One piece of the prompt: an item in some form, or the summary (item -1)."""

    kind: SegmentKind
    item: int
    tokens: int  # real (or the run's token source)
    est: int  # by the policy's estimator


@dataclass(frozen=True, slots=True, eq=False)
class View:
    """V_k. ``seg_tokens``/``seg_est`` are per history position under its form (0 when dropped).

    The summary segment sits before item ``summary_at`` (-1: none). ``dirty_from`` is the first
    position that differs from the policy's previous view: everything before it is a shared prefix.
    """

    k: int
    end: int
    forms: np.ndarray
    seg_tokens: np.ndarray
    seg_est: np.ndarray
    summary_at: int
    summary_id: int
    summary_tokens: int
    summary_est: int
    dirty_from: int
    emergency: bool = False
    summarised: bool = False
    window: int = 0  # the context window of the model serving this request (0: the budget's; a failover may shrink it)

    @property
    def prompt_tokens(self) -> int:
        return int(self.seg_tokens.sum()) + (self.summary_tokens if self.summary_at >= 0 else 0)

    @property
    def est_tokens(self) -> int:
        return int(self.seg_est.sum()) + (self.summary_est if self.summary_at >= 0 else 0)

    def cumulative(self) -> np.ndarray:
        """cum[p] = real tokens of the prefix before position p (summary counted when summary_at < p)."""
        cum = np.zeros(self.end + 1, dtype=np.int64)
        np.cumsum(self.seg_tokens, out=cum[1:])
        if self.summary_at >= 0:
            cum[self.summary_at + 1 :] += self.summary_tokens
        return cum

    def segments(self) -> list[Segment]:
        """The view as segments in prompt order."""
        out: list[Segment] = []
        for p in range(self.end):
            if p == self.summary_at:
                out.append(Segment("summary", -1, self.summary_tokens, self.summary_est))
            f = int(self.forms[p])
            if f != DROPPED:
                out.append(Segment(FORM_NAMES[f], p, int(self.seg_tokens[p]), int(self.seg_est[p])))  # type: ignore[arg-type]  # f != DROPPED: a SegmentKind name
        if self.summary_at >= self.end:
            out.append(Segment("summary", -1, self.summary_tokens, self.summary_est))
        return out

    def keys(self) -> list[tuple]:
        """Segment identities in order (their chained hashes define the cacheable prefix)."""
        keys: list[tuple] = []
        for p in range(self.end):
            if p == self.summary_at:
                keys.append(("S", self.summary_id))
            if self.forms[p] != DROPPED:
                keys.append((p, int(self.forms[p])))
        if self.summary_at >= self.end:
            keys.append(("S", self.summary_id))
        return keys


def shared_prefix_tokens(prev: View | None, cur: View) -> int:
    """Tokens of the longest shared prefix of two views, by comparing segment identities (the slow, sure way)."""
    if prev is None:
        return 0
    total = 0
    for (a, b), seg in zip(zip(prev.keys(), cur.keys(), strict=False), cur.segments(), strict=False):
        if a != b:
            break
        total += seg.tokens
    return total
