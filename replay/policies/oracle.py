"""Belady oracle: within the common budget (window - reserve), evict the item needed farthest in the future.

"Needed" follows the repeat-read classification (``replay.metrics.repeat_reads``): an output is needed at request
d when a later repeat read decided at d re-reads its content unchanged. Every item kind can be evicted (a pasted
user message too) except the harness prefix and the newest request's own new items; an evicted item becomes an
omitted marker of 0 tokens and stays evicted. Items never needed again go first, largest first.

With items of unequal sizes this is a heuristic, not the least possible count: ``replay.metrics.oracle_bound``
gives the provable bound (LP relaxation, integral optimum) that Belady is reported beside.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replay.metrics.repeat_reads import read_events
from replay.policies.base import Policy
from replay.policies.config import PolicyConfig
from replay.policies.view import OMITTED, ORIGINAL

NEVER = np.iinfo(np.int64).max


@dataclass(frozen=True)
class OracleConfig(PolicyConfig):
    """No knobs: the budget is the simulation's (window - reserve), the same as the policies it is compared to."""

    kind = "oracle"


def needs(run) -> tuple[np.ndarray, np.ndarray]:
    """(earlier output, deciding request) of every unchanged repeat read, sorted by request."""
    ev = read_events(run)
    keep = ~ev.changed
    order = np.argsort(ev.decide[keep], kind="stable")
    return ev.prev_result[keep][order], ev.decide[keep][order]


class Oracle(Policy):
    name = "oracle"
    Config = OracleConfig

    def setup(self) -> None:
        n = self.run.n_items
        self.define(OMITTED, np.zeros(n, np.int64), np.zeros(n, np.int64))
        self.need_item, self.need_at = needs(self.run)

    def stages(self):
        return [(self.due, self.decide)]

    def total(self) -> int:
        return int(self.ftok[self.forms[:self.end], self.idx[:self.end]].sum())

    def due(self) -> bool:
        return self.total() > self.budget.usable

    def next_need(self) -> np.ndarray:
        """Per history item: the next request (>= this one) whose repeat read needs it intact, NEVER if none."""
        out = np.full(self.end, NEVER, dtype=np.int64)
        lo = int(np.searchsorted(self.need_at, self.k, side="left"))
        items, at = self.need_item[lo:], self.need_at[lo:]
        np.minimum.at(out, items[items < self.end], at[items < self.end])
        return out

    def decide(self) -> None:
        newest = int(self.run.req_end[self.k - 1]) if self.k > 0 else 0  # this request's new items stay
        pos = np.arange(self.prefix_end(), newest)
        pos = pos[self.forms[pos] == ORIGINAL]
        if not len(pos):
            return
        size = self.ftok[ORIGINAL, pos]
        order = pos[np.lexsort((-size, -self.next_need()[pos]))]
        saved = np.cumsum(self.ftok[ORIGINAL, order])
        upto = int(np.searchsorted(saved, self.total() - self.budget.usable, side="left")) + 1
        self.set_forms(order[:upto], OMITTED)


POLICIES = [Oracle]
