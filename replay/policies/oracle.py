"""Belady oracle: under a token budget, evict the tool output needed farthest in the future.

With equal-sized outputs this gives the least possible ``evicted`` repeat reads (classic paging optimality);
with unequal sizes it is the Belady heuristic, still the reference real policies are measured against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replay.policies.base import Policy
from replay.policies.config import PolicyConfig, knob
from replay.policies.view import OMITTED, ORIGINAL
from replay.simulator.arrays import ACCESS_CODE, TOOL_CALL, TOOL_RESULT

NEVER = np.iinfo(np.int64).max


@dataclass(frozen=True)
class OracleConfig(PolicyConfig):
    """Keep every view within ``budget`` real tokens, evicting outputs by farthest next read."""

    kind = "oracle"
    budget: int = knob(100_000, 0, 100_000_000, "prompt token budget")


def next_use(run) -> np.ndarray:
    """Per item: position of the next read call of the same resource, NEVER if none or a write comes first."""
    out = np.full(run.n_items, NEVER, dtype=np.int64)
    upcoming: dict[int, int] = {}
    for p in range(run.n_items - 1, -1, -1):
        r = int(run.resource[p])
        if r < 0:
            continue
        if run.kind[p] == TOOL_RESULT and run.access[p] == ACCESS_CODE["read"]:
            out[p] = upcoming.get(r, NEVER)
        elif run.kind[p] == TOOL_CALL:
            if run.access[p] == ACCESS_CODE["read"]:
                upcoming[r] = p
            elif run.access[p] == ACCESS_CODE["write"]:
                upcoming.pop(r, None)
    return out


class Oracle(Policy):
    name = "oracle"
    Config = OracleConfig

    def setup(self) -> None:
        self.define(OMITTED, np.zeros(self.run.n_items, np.int64), np.zeros(self.run.n_items, np.int64))
        self.next = next_use(self.run)

    def stages(self):
        return [(self.due, self.decide)]

    def total(self) -> int:
        return int(self.ftok[self.forms[:self.end], self.idx[:self.end]].sum())

    def due(self) -> bool:
        return self.total() > self.config.budget

    def decide(self) -> None:
        res = self.results()[:-1]  # never the newest output
        res = res[self.forms[res] == ORIGINAL]
        nxt = self.next[res]
        nxt = np.where(nxt < self.end, NEVER, nxt)  # already re-read: this copy is never needed again
        order = res[np.lexsort((-self.run.tokens[res], -nxt))]
        saved = np.cumsum(self.run.tokens[order])
        upto = int(np.searchsorted(saved, self.total() - self.config.budget, side="left")) + 1
        self.set_forms(order[:upto], OMITTED)


POLICIES = [Oracle]
