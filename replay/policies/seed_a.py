"""Seed policy A: two tiers (placeholders under a cache-reclaim floor, then a summary) and an emergency check.

Defaults are the policy as seed write-up 000 ends (after its fixes); ``seed_a_before`` is the same policy with the
settings the write-up started from, so its before/after can be replayed side by side.

Emergency margin. The estimator under-counts: the seed figure is an estimate of 83,000 against 91,000 counted by
the server, so the estimate is short by 8,000 / 91,000 = 8.8% *of the real size*. A margin m therefore bounds the
real size as ``real <= est / (1 - m)`` (83,000 / 0.8 = 103,750 >= 91,000), and the reply reserve is added exactly,
not inflated: the check fires when ``est / (1 - m) + reserve > window``. At 130,000 / 24,576 with m = 0.2 that is
est > 0.8 x 105,424 = 84,339.2: an estimate of 84,340 projects to 105,425 and 105,425 + 24,576 = 130,001 > 130,000
(the seed case), while 84,339 projects to 105,423.75 and passes. The form ``est x (1 + m)`` fires only above
87,853 and covers an under-count of at most m / (1 + m) = 16.7% of the real size, not 20%.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.errors import ReplayError
from replay.policies.base import Policy, text_cost
from replay.policies.config import PolicyConfig, knob
from replay.policies.view import DROPPED, ORIGINAL, PLACEHOLDER, SHRUNK
from replay.simulator.arrays import KIND_CODE, TOOL_RESULT, RunArrays

WORDING = "[Old tool output of {tool} call {call_id} replaced; first/last characters kept]"
APPLIED = "[applied: {tool} {call_id}]"
# Message groups: model output (a response's text, reasoning and calls, with the results answering them), user side
# (text, images, attachments, carried summaries), the harness prefix.
ASSISTANT_GROUP = tuple(KIND_CODE[k] for k in ("assistant_text", "reasoning", "tool_call", "tool_result"))
PREFIX_GROUP = tuple(KIND_CODE[k] for k in ("system", "tool_defs"))


def message_starts(run: RunArrays) -> np.ndarray:
    """Bool per item: it opens a chat message.

    An assistant message is one response (the items appended between two requests) with its calls; the results
    of those calls go with it. Consecutive user-side items between two requests are one user message."""
    n = run.n_items
    group = np.where(np.isin(run.kind, ASSISTANT_GROUP), 1, np.where(np.isin(run.kind, PREFIX_GROUP), 2, 0))
    boundary = np.zeros(n + 1, dtype=bool)
    boundary[run.req_end] = True
    start = np.ones(n, dtype=bool)
    start[1:] = (group[1:] != group[:-1]) | (boundary[1:n] & (run.kind[1:] != TOOL_RESULT))
    return start


def protect_limit(protect: float, window: int) -> float:
    """Protected range in tokens: ``protect`` is a fraction of the window when <= 1, else tokens."""
    return protect * window if protect <= 1 else protect


@dataclass(frozen=True)
class SeedAConfig(PolicyConfig):
    """Seed policy A (as write-up 000 ends)."""

    kind = "seed_a"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    head_chars: int = knob(240, 0, 100_000, "characters kept from the start of a replaced output")
    tail_chars: int = knob(120, 0, 100_000, "characters kept from the end of a replaced output")
    wording: str = knob(WORDING, doc="placeholder text ({tool}, {call_id})")
    shrink_writes: bool = knob(True, doc="shrink completed, successful write/edit call arguments to an 'applied' note")
    protect: float = knob(1 / 3, 0.0, 10_000_000, "protected recent range: a fraction of the window when <= 1 "
                                                  "(default a third), else tokens (e.g. 12000); 0: none")
    reclaim_floor: float = knob(0.125, 0.0, 1.0, "commit a tier-1 pass only if it reclaims this fraction of window")
    summary_at: int = knob(80_000, 1, 10_000_000, "tier 2 fires when the estimate exceeds this")
    tail_messages: int = knob(24, 0, 100_000, "verbatim tail kept after a summary, chat messages (0: no message cap)")
    tail_fraction: float = knob(0.125, 0.0, 1.0, "verbatim tail capped at this fraction of the window (0: no cap)")
    summary_tokens: int = knob(2_000, 0, 1_000_000, "size of a summary")
    task_list_tokens: int = knob(300, 0, 100_000, "task list / notes block re-inserted with the summary")
    margin: float = knob(0.2, 0.0, 0.95, "emergency: the estimate may under-count the real size by this fraction "
                                         "of it; fires when est / (1 - margin) + reserve > window")

    def validate(self) -> None:
        if self.tail_messages == 0 and self.tail_fraction == 0:
            raise ReplayError(f"{self.kind}: tail_messages=0 and tail_fraction=0 leave the verbatim tail unbounded, "
                              "so tier 2 could never summarise; set one of them")


@dataclass(frozen=True)
class SeedABeforeConfig(SeedAConfig):
    """Seed policy A as write-up 000 starts (before its fixes): 12,000-token protected range, a 24-message tail
    with no token cap, a 10% emergency margin."""

    kind = "seed_a_before"
    protect: float = knob(12_000, 0.0, 10_000_000, "protected recent range: a fraction of the window when <= 1, "
                                                   "else tokens; 0: none")
    tail_fraction: float = knob(0.0, 0.0, 1.0, "verbatim tail capped at this fraction of the window (0: no cap)")
    margin: float = knob(0.1, 0.0, 0.95, "emergency: the estimate may under-count the real size by this fraction "
                                         "of it; fires when est / (1 - margin) + reserve > window")


class SeedA(Policy):
    name = "seed_a"
    Config = SeedAConfig

    def setup(self) -> None:
        c, r = self.config, self.run
        kept = np.minimum(r.chars, c.head_chars + c.tail_chars)
        self.define(PLACEHOLDER, *text_cost(r, kept, len(c.wording) + 24, c.estimator))
        self.define(SHRUNK, *text_cost(r, np.zeros_like(r.chars), len(APPLIED) + 24, c.estimator))
        self.starts = np.flatnonzero(message_starts(r))

    def stages(self):
        return [(self.tier1_due, self.tier1), (self.tier2_due, self.tier2),
                (self.emergency_due, self.emergency)]

    def protected_from(self) -> int:
        """First position of the protected recent range (by estimate)."""
        limit = protect_limit(self.config.protect, self.budget.window)
        back = np.cumsum(self.seg_est()[::-1])
        inside = int(np.searchsorted(back, limit, side="right"))
        return max(self.end - max(inside, 1), 0)

    def tier1_due(self) -> bool:
        return self.end > 0

    def shrinkable_writes(self, lo: int, hi: int) -> np.ndarray:
        """Completed write/edit calls in [lo, hi) whose result did not fail (a failed write applied nothing)."""
        calls = self.completed_writes()
        calls = calls[(calls >= lo) & (calls < hi) & (self.forms[calls] == ORIGINAL)]
        return calls[~self.run.is_error[self.run.pair[calls]]]

    def tier1(self) -> None:
        lo, hi = self.prefix_end(), self.protected_from()
        cand = self.results(lo, hi)
        cand = cand[(self.forms[cand] == ORIGINAL) & (self.fest[PLACEHOLDER, cand] < self.fest[ORIGINAL, cand])]
        calls = self.shrinkable_writes(lo, hi) if self.config.shrink_writes else np.zeros(0, dtype=np.int64)
        gain = (self.fest[ORIGINAL, cand] - self.fest[PLACEHOLDER, cand]).clip(0).sum()
        gain += (self.fest[ORIGINAL, calls] - self.fest[SHRUNK, calls]).clip(0).sum()
        if gain >= self.config.reclaim_floor * self.budget.window and gain > 0:
            self.set_forms(cand, PLACEHOLDER)
            self.set_forms(calls, SHRUNK)
        # else: the pass is undone entirely (nothing was changed)

    def tier2_due(self) -> bool:
        return self.over(self.config.summary_at)

    def tail_from(self) -> int:
        """Start of the verbatim tail: whole chat messages, at most ``tail_messages`` of them and at most
        ``tail_fraction`` of the window by estimate (0: that cap is off); always at least the newest message.
        Moved back so that no call is split from its result."""
        c = self.config
        lo = self.prefix_end()
        starts = self.starts[(self.starts >= lo) & (self.starts < self.end)]
        starts = starts[self.forms[starts] != DROPPED][::-1]  # live messages, newest first
        if not len(starts):
            return self.pair_safe_start(lo)
        est = self.seg_est()
        after = np.cumsum(est[::-1])[self.end - 1 - starts]  # estimate of [start, end) per start
        ok = np.ones(len(starts), dtype=bool)
        if c.tail_messages:
            ok &= np.arange(1, len(starts) + 1) <= c.tail_messages
        if c.tail_fraction:
            ok &= after <= c.tail_fraction * self.budget.window
        ok[0] = True
        n = int(np.argmin(ok)) if not ok.all() else len(ok)
        return self.pair_safe_start(int(starts[n - 1]))

    def tier2(self) -> None:
        lo, start = self.prefix_end(), self.tail_from()
        if start <= lo:
            return
        self.drop(np.arange(lo, start))
        size = self.config.summary_tokens + self.config.task_list_tokens
        self.set_summary(start, size, size)

    def limit(self) -> float:
        """The estimate the emergency check allows: (window - reserve) x (1 - margin)."""
        return (self.budget.window - self.budget.reserve) * (1 - self.config.margin)

    def emergency_due(self) -> bool:
        return self.est_total() / (1 - self.config.margin) + self.budget.reserve > self.budget.window

    def emergency(self) -> None:
        """Trim inside the protected range too, oldest first, only as needed, except the newest output."""
        self.flags["emergency"] = True
        res = self.results(self.prefix_end(), self.end)
        res = res[:-1]
        cand = res[(self.forms[res] == ORIGINAL) & (self.fest[PLACEHOLDER, res] < self.fest[ORIGINAL, res])]
        need = self.est_total() - self.limit()
        saved = np.cumsum((self.fest[ORIGINAL, cand] - self.fest[PLACEHOLDER, cand]).clip(0))
        upto = int(np.searchsorted(saved, need, side="left")) + 1
        self.set_forms(cand[:upto], PLACEHOLDER)


class SeedABefore(SeedA):
    """Seed policy A before write-up 000's fixes (see SeedABeforeConfig)."""

    name = "seed_a_before"
    Config = SeedABeforeConfig


POLICIES = [SeedA, SeedABefore]
