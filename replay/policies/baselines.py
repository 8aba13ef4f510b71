"""Baselines: full history (no policy) and drop-oldest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.policies.base import Policy
from replay.policies.config import PolicyConfig, knob
from replay.policies.view import DROPPED


@dataclass(frozen=True)
class FullConfig(PolicyConfig):
    """Send everything, every time."""

    kind = "full"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"


class Full(Policy):
    name = "full"
    Config = FullConfig


@dataclass(frozen=True)
class DropOldestConfig(PolicyConfig):
    """Drop the oldest items (calls with their results) until the estimate fits the window minus reserve."""

    kind = "drop_oldest"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    margin: float = knob(0.0, 0.0, 0.9, "safety margin on the estimate (fraction)")
    keep_first: int = knob(1, 0, 1000, "leading non-system items never dropped")


class DropOldest(Policy):
    name = "drop_oldest"
    Config = DropOldestConfig

    def stages(self):
        return [(self.needed, self.decide)]

    def limit(self) -> float:
        return self.budget.usable / (1 + self.config.margin)

    def needed(self) -> bool:
        return self.over(self.limit())

    def decide(self) -> None:
        lo = self.prefix_end() + self.config.keep_first
        live = lo + np.flatnonzero(self.forms[lo:self.end - 1] != DROPPED)
        excess = self.est_total() - self.limit()
        est = self.seg_est()
        for p in live:
            if excess <= 0:
                break
            if self.forms[p] == DROPPED:
                continue
            partner = self.run.pair[p]
            cost = est[p] + (est[partner] if 0 <= partner < self.end and self.forms[partner] != DROPPED else 0)
            if partner >= self.end - 1 and partner >= 0:
                break  # never drop a call whose result is the newest output
            self.drop(np.array([p]))
            excess -= cost


POLICIES = [Full, DropOldest]
