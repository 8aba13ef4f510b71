"""Anthropic context editing, clear_tool_uses_20250919: trigger, keep, clear_at_least, exclude_tools."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.policies.base import Policy, text_cost
from replay.policies.config import PolicyConfig, knob
from replay.policies.view import ORIGINAL, PLACEHOLDER, SHRUNK
from replay.simulator.arrays import TOOL_CALL

CLEARED = "[Tool result cleared]"


@dataclass(frozen=True)
class ClearToolUsesConfig(PolicyConfig):
    """Past ``trigger`` input tokens, clear all but the last ``keep`` tool results (if it frees clear_at_least)."""

    kind = "clear_tool_uses"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    trigger: int = knob(100_000, 0, 10_000_000, "input tokens that start clearing")
    keep: int = knob(3, 0, 100_000, "most recent tool uses kept")
    clear_at_least: int = knob(0, 0, 10_000_000, "clear only if at least this many tokens are freed")
    exclude_tools: tuple[str, ...] = knob((), doc="tool names never cleared (comma separated)")
    clear_tool_inputs: bool = knob(False, doc="also clear the call arguments")


class ClearToolUses(Policy):
    name = "clear_tool_uses"
    Config = ClearToolUsesConfig

    def setup(self) -> None:
        zero = np.zeros_like(self.run.chars)
        self.define(PLACEHOLDER, *text_cost(self.run, zero, len(CLEARED), self.config.estimator))
        self.define(SHRUNK, *text_cost(self.run, zero, len(CLEARED), self.config.estimator))
        names = self.run.tool_names
        excluded = [i for i, n in enumerate(names) if n in set(self.config.exclude_tools)]
        self.excluded = np.isin(self.run.tool, excluded) if excluded else np.zeros(self.run.n_items, bool)
        calls = np.flatnonzero(self.run.kind == TOOL_CALL)
        calls = calls[self.run.pair[calls] >= 0]
        self.excluded[self.run.pair[calls]] |= self.excluded[calls]

    def stages(self):
        return [(self.due, self.decide)]

    def due(self) -> bool:
        return self.over(self.config.trigger)

    def decide(self) -> None:
        res = self.results()
        old = res[:max(len(res) - self.config.keep, 0)]
        old = old[(self.forms[old] == ORIGINAL) & ~self.excluded[old]]
        freed = (self.fest[ORIGINAL, old] - self.fest[PLACEHOLDER, old]).clip(0).sum()
        calls = self.run.pair[old]
        calls = calls[calls >= 0] if self.config.clear_tool_inputs else calls[:0]
        freed += (self.fest[ORIGINAL, calls] - self.fest[SHRUNK, calls]).clip(0).sum()
        if len(old) and freed >= self.config.clear_at_least:
            self.set_forms(old, PLACEHOLDER)
            self.set_forms(calls, SHRUNK)


POLICIES = [ClearToolUses]
