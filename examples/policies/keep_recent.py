"""A policy written in Python: past a trigger, every tool result but the newest few becomes a short placeholder.

Run it by import path (the folder holding ``examples`` on PYTHONPATH)::

    replay simulate -p examples.policies.keep_recent:KeepRecent --set keep=3
    replay tune -p examples.policies.keep_recent:KeepRecent -t o200k --window 128000 --reserve 16000

The same policy compiled is ``keep_recent_compiled.py`` beside this file; docs/policies.md walks through both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.policies import Policy, PolicyConfig
from replay.policies.config import knob
from replay.policies.space import Knob
from replay.policies.view import ORIGINAL, PLACEHOLDER


@dataclass(frozen=True)
class KeepRecentConfig(PolicyConfig):
    """Past trigger x (window - reserve) estimated tokens, every tool result but the newest ``keep`` shows a
    placeholder."""

    kind = "keep_recent"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    trigger: float = knob(0.7, 0.05, 1.0, "fires past this share of window - reserve (estimated tokens)")
    keep: int = knob(5, 0, 100_000, "newest tool results kept verbatim")
    wording: str = knob("[tool result cleared]", doc="placeholder text")


class KeepRecent(Policy):
    name = "keep_recent"
    Config = KeepRecentConfig
    space = (
        Knob("trigger", 0.3, 0.95, 0.7, weight=2),  # a share of window - reserve: always below it
        Knob("keep", 1, 20, 5, integer=True, step=1),
    )

    def setup(self) -> None:
        """A placeholder costs its wording at chars/4, never more than the item it stands for."""
        cost = np.minimum((len(self.config.wording) + 3) // 4, self.run.tokens)
        self.define(PLACEHOLDER, cost, cost)

    def stages(self) -> list[tuple[Callable[[], bool], Callable[[], None]]]:
        return [(self.due, self.clear)]

    def due(self) -> bool:
        return self.over(self.config.trigger * self.budget.usable)

    def clear(self) -> None:
        results = self.results()
        old = results[: max(len(results) - self.config.keep, 0)]
        self.set_forms(old[self.forms[old] == ORIGINAL], PLACEHOLDER)


POLICIES = [KeepRecent]
