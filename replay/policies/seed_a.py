"""Seed policy A: two tiers (placeholders under a cache-reclaim floor, then a summary) and an emergency check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.policies.base import Policy, text_cost
from replay.policies.config import PolicyConfig, knob
from replay.policies.view import ORIGINAL, PLACEHOLDER, SHRUNK
from replay.simulator.arrays import TOOL_RESULT

WORDING = "[Old tool output of {tool} call {call_id} replaced; first/last characters kept]"
APPLIED = "[applied: {tool} {call_id}]"


@dataclass(frozen=True)
class SeedAConfig(PolicyConfig):
    """Seed policy A."""

    kind = "seed_a"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    head_chars: int = knob(240, 0, 100_000, "characters kept from the start of a replaced output")
    tail_chars: int = knob(120, 0, 100_000, "characters kept from the end of a replaced output")
    wording: str = knob(WORDING, doc="placeholder text ({tool}, {call_id})")
    shrink_writes: bool = knob(True, doc="shrink completed write/edit call arguments to an 'applied' note")
    protect_tokens: int = knob(12_000, 0, 10_000_000, "protected recent range, tokens")
    protect_fraction: float = knob(0.0, 0.0, 1.0, "if > 0, protected range = this fraction of the window")
    reclaim_floor: float = knob(0.125, 0.0, 1.0, "commit a tier-1 pass only if it reclaims this fraction of window")
    summary_at: int = knob(80_000, 1, 10_000_000, "tier 2 fires when the estimate exceeds this")
    tail_messages: int = knob(24, 1, 100_000, "verbatim tail kept after a summary, items")
    tail_fraction: float = knob(0.125, 0.0, 1.0, "verbatim tail capped at this fraction of the window")
    summary_tokens: int = knob(2_000, 0, 1_000_000, "size of a summary")
    task_list_tokens: int = knob(300, 0, 100_000, "task list / notes block re-inserted with the summary")
    margin: float = knob(0.2, 0.0, 1.0, "emergency: safety margin on the estimate")


class SeedA(Policy):
    name = "seed_a"
    Config = SeedAConfig

    def setup(self) -> None:
        c, r = self.config, self.run
        kept = np.minimum(r.chars, c.head_chars + c.tail_chars)
        self.define(PLACEHOLDER, *text_cost(r, kept, len(c.wording) + 24, c.estimator))
        self.define(SHRUNK, *text_cost(r, np.zeros_like(r.chars), len(APPLIED) + 24, c.estimator))

    def stages(self):
        return [(self.tier1_due, self.tier1), (self.tier2_due, self.tier2),
                (self.emergency_due, self.emergency)]

    def protected_from(self) -> int:
        """First position of the protected recent range (by estimate)."""
        c = self.config
        limit = c.protect_fraction * self.budget.window if c.protect_fraction > 0 else c.protect_tokens
        back = np.cumsum(self.seg_est()[::-1])
        inside = int(np.searchsorted(back, limit, side="right"))
        return max(self.end - max(inside, 1), 0)

    def tier1_due(self) -> bool:
        return self.end > 0

    def tier1(self) -> None:
        lo, hi = self.prefix_end(), self.protected_from()
        cand = self.results(lo, hi)
        cand = cand[(self.forms[cand] == ORIGINAL) & (self.fest[PLACEHOLDER, cand] < self.fest[ORIGINAL, cand])]
        if self.config.shrink_writes:
            calls = self.completed_writes()
            calls = calls[(calls >= lo) & (calls < hi) & (self.forms[calls] == ORIGINAL)]
        else:
            calls = np.zeros(0, dtype=np.int64)
        gain = (self.fest[ORIGINAL, cand] - self.fest[PLACEHOLDER, cand]).clip(0).sum()
        gain += (self.fest[ORIGINAL, calls] - self.fest[SHRUNK, calls]).clip(0).sum()
        if gain >= self.config.reclaim_floor * self.budget.window and gain > 0:
            self.set_forms(cand, PLACEHOLDER)
            self.set_forms(calls, SHRUNK)
        # else: the pass is undone entirely (nothing was changed)

    def tier2_due(self) -> bool:
        return self.over(self.config.summary_at)

    def tail_from(self) -> int:
        """Start of the verbatim tail: at most tail_messages items and tail_fraction of the window."""
        c = self.config
        back = np.cumsum(self.seg_est()[::-1])
        by_tokens = int(np.searchsorted(back, c.tail_fraction * self.budget.window, side="right"))
        start = self.end - max(1, min(c.tail_messages, by_tokens))
        while start > 0 and self.run.kind[start] == TOOL_RESULT and self.run.pair[start] >= 0 \
                and self.run.pair[start] < start:
            start = int(self.run.pair[start])  # never split a call from its result
        return start

    def tier2(self) -> None:
        lo, start = self.prefix_end(), self.tail_from()
        if start <= lo:
            return
        self.drop(np.arange(lo, start))
        size = self.config.summary_tokens + self.config.task_list_tokens
        self.set_summary(start, size, size)

    def emergency_due(self) -> bool:
        return self.est_total() * (1 + self.config.margin) + self.budget.reserve > self.budget.window

    def emergency(self) -> None:
        """Trim inside the protected range too, oldest first, only as needed, except the newest output."""
        self.flags["emergency"] = True
        res = self.results(self.prefix_end(), self.end)
        res = res[:-1]
        cand = res[(self.forms[res] == ORIGINAL) & (self.fest[PLACEHOLDER, res] < self.fest[ORIGINAL, res])]
        need = self.est_total() - (self.budget.window - self.budget.reserve) / (1 + self.config.margin)
        saved = np.cumsum((self.fest[ORIGINAL, cand] - self.fest[PLACEHOLDER, cand]).clip(0))
        upto = int(np.searchsorted(saved, need, side="left")) + 1
        self.set_forms(cand[:upto], PLACEHOLDER)


POLICIES = [SeedA]
