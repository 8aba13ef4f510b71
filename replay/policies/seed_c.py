"""Seed policy C: three layers (spill at the source, markers only when over budget, a durable summary).

Layer 1 caps an oversized output the moment it arrives: a result whose estimate exceeds ``spill_tokens``
becomes a preview of ``preview_chars`` plus a pointer to the full output (SPILLED). It only ever touches items
new since the previous request, so it never rewrites a prefix that was already sent.

Layer 2 is a request-time view: before every request the markers are recomputed from the unmarked history, and
only when the estimate exceeds the budget (window - reserve) do older results become pointer markers (OMITTED),
oldest first and only as many as needed; when room returns (a summary, or a smaller newest output) the markers
that are no longer needed go, and the cache is charged only from the first position that changed. The current
turn (the items appended since the previous request: the latest model response and its tool results,
``protect_turns`` of them) is protected, and failed results (``run.is_error``) are never withheld.

Layer 3 fires when the history still overflows after every marker: everything before a recent tail is
replaced by a durable summary (rolling: a later overflow folds more into it). Failed results and their calls
stay verbatim. If the normal tail (``tail_fraction`` of the budget) is still too large, the tail shrinks to the
protected turn. Markers are then applied inside the tail too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.policies.base import Policy, text_cost
from replay.policies.config import PolicyConfig, knob
from replay.policies.request_view import RequestTime
from replay.policies.view import DROPPED, OMITTED, ORIGINAL, SPILLED
from replay.simulator.arrays import TOOL_RESULT

MARKER = "[Output of {tool} call {call_id} withheld; full output at {pointer}]"
POINTER = "[Output truncated to a preview; full output at {pointer}]"
POINTER_CHARS = 40  # a spill path or id, e.g. .spill/<run>/<call_id>.txt


@dataclass(frozen=True)
class SeedCConfig(PolicyConfig):
    """Seed policy C."""

    kind = "seed_c"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    spill_tokens: int = knob(10_000, 0, 10_000_000, "outputs estimated above this are spilled at the source (0: off)")
    preview_chars: int = knob(2_000, 0, 1_000_000, "preview kept of a spilled output, characters")
    spill_errors: bool = knob(False, doc="also spill failed outputs (default: failures are never withheld)")
    marker: str = knob(MARKER, doc="marker for a withheld output ({tool}, {call_id}, {pointer})")
    protect_turns: int = knob(1, 1, 100_000, "newest turns (model response plus its results) never withheld")
    summary_tokens: int = knob(2_000, 0, 1_000_000, "size of the durable summary (at most what it replaces)")
    tail_fraction: float = knob(0.25, 0.0, 1.0, "recent tail kept verbatim after a summary, fraction of the budget")


class SeedC(Policy):
    name = "seed_c"
    Config = SeedCConfig

    def setup(self) -> None:
        c, r = self.config, self.run
        zero = np.zeros_like(r.chars)
        self.define(SPILLED, *text_cost(r, np.minimum(r.chars, c.preview_chars), len(POINTER) + POINTER_CHARS,
                                        c.estimator))
        self.define(OMITTED, *text_cost(r, zero, len(c.marker) + POINTER_CHARS, c.estimator))
        spill = (r.kind == TOOL_RESULT) & (self.fest[ORIGINAL] > c.spill_tokens) & (c.spill_tokens > 0)
        spill &= self.fest[SPILLED] < self.fest[ORIGINAL]
        self.spillable = spill if c.spill_errors else spill & ~r.is_error
        self.summary_size = 0

    def stages(self):
        return [(self.arrived, self.spill), (lambda: self.end > 0, self.view)]

    def limit(self) -> int:
        return self.budget.usable

    # -- layer 1 -------------------------------------------------------------------------------
    def arrived(self) -> bool:
        return self.end > self.prev_end

    def spill(self) -> None:
        new = self.prev_end + np.flatnonzero(self.spillable[self.prev_end:self.end])
        self.set_forms(new[self.forms[new] == ORIGINAL], SPILLED)

    # -- layers 2 and 3 ------------------------------------------------------------------------
    def over_budget(self) -> bool:
        return self.over(self.limit())

    def protected_from(self) -> int:
        """First position of the protected newest turns (items sharing the newest ``protect_turns`` steps)."""
        st = self.run.step[:self.end]
        steps = np.unique(st)
        first = steps[max(len(steps) - self.config.protect_turns, 0)]
        return int(np.searchsorted(st, first, side="left"))

    def withholdable(self, lo: int, hi: int) -> np.ndarray:
        res = self.results(lo, hi)
        res = res[~self.run.is_error[res] & np.isin(self.forms[res], (ORIGINAL, SPILLED))]
        return res[self.fest[OMITTED, res] < self.seg_est()[res]]

    def mark(self, lo: int, hi: int) -> None:
        """Replace results in [lo, hi) by markers, oldest first, only as many as needed."""
        need = self.est_total() - self.limit()
        if need <= 0:
            return
        cand = self.withholdable(lo, hi)
        saved = np.cumsum(self.seg_est()[cand] - self.fest[OMITTED, cand])
        upto = int(np.searchsorted(saved, need, side="left")) + 1
        self.set_forms(cand[:upto], OMITTED)

    def view(self) -> None:
        """Markers as a request-time view: back to the unmarked forms, then fit only if over budget."""
        with RequestTime(self):
            self.unmark()
            if self.over_budget():
                self.fit()

    def unmark(self) -> None:
        """Every marker back to its unmarked form (spilled or original); RequestTime charges only real changes."""
        marked = np.flatnonzero(self.forms[:self.end] == OMITTED)
        self.forms[marked] = np.where(self.spillable[marked], SPILLED, ORIGINAL)

    def fit(self) -> None:
        lo, guard = self.prefix_end(), self.protected_from()
        self.mark(lo, guard)
        for tail in (self.config.tail_fraction * self.limit(), 0):
            if not self.over(self.limit()):
                return
            self.summarise(lo, guard, tail)
            self.unmark()  # the summary made room: only the markers still needed come back
            self.mark(lo, guard)

    def tail_from(self, guard: int, tokens: float) -> int:
        """Start of a verbatim tail of about ``tokens`` (never after ``guard``), not splitting a pair."""
        back = np.cumsum(self.seg_est()[::-1])
        return self.pair_safe_start(min(self.end - int(np.searchsorted(back, tokens, side="right")), guard))

    def summarise(self, lo: int, guard: int, tokens: float) -> None:
        start = self.tail_from(guard, tokens)
        if start <= lo:
            return
        keep = np.zeros(self.end, dtype=bool)
        errors = self.results(lo, start)
        errors = errors[self.run.is_error[errors]]
        keep[errors] = True
        calls = self.run.pair[errors]
        keep[calls[calls >= 0]] = True
        gone = lo + np.flatnonzero(~keep[lo:start] & (self.forms[lo:start] != DROPPED))
        if not len(gone):
            return
        folded = int(self.seg_est()[gone].sum())
        size = min(self.config.summary_tokens, self.summary_size + folded)
        if size >= folded + (self.summary_est if self.summary_at >= 0 else 0):
            return  # a summary would not save anything
        self.drop(gone)
        self.summary_size = size
        self.set_summary(start, size, size)


POLICIES = [SeedC]
