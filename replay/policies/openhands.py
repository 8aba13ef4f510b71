"""OpenHands-style condensers (facts in shared/PEERS.md): summarising by event count, by tokens, and recent.

Events are the items after the leading system/tool_defs prefix (a tool call and its result are two events); the
summary counts as one event. Cut points never split a tool call from its result: the kept head grows to take the
results of its calls; a tail cut inside a batch moves forward past it (the batch is forgotten whole), or backwards
when that would forget the newest event. The newest event is always in the tail. A result that arrives after its
call was forgotten (a call answered requests later) is forgotten too.

- ``openhands``: past ``max_size`` events in the view, keep the first ``keep_first`` events plus a tail that brings
  the view to about max_size/2 (tail = max_size // 2 - keep_first - 1, the 1 being the summary event) and summarise
  the middle, rolling (the previous summary is folded into the next). The summary is ``summary_tokens`` at most
  and never more than its input, each event of which is truncated to ``max_event_length`` characters as OpenHands
  does when it builds the summarisation prompt (the view itself is not truncated).
- ``openhands_tokens``: the token-triggered variant (newer SDK): past ``max_tokens`` by the estimate (0: the
  budget, window - reserve), keep the head plus a tail that targets half of the cap.
- ``openhands_recent``: keep the first ``keep_first`` events and the newest ``max_events`` - keep_first; no summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.errors import ReplayError
from replay.policies.base import Policy
from replay.policies.config import PolicyConfig, knob
from replay.policies.view import DROPPED
from replay.simulator.arrays import chars4


@dataclass(frozen=True)
class OpenHandsConfig(PolicyConfig):
    """LLMSummarizingCondenser: past max_size events keep keep_first plus a tail to about max_size/2."""

    kind = "openhands"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    max_size: int = knob(100, 3, 1_000_000, "events in the view that trigger a condensation")
    keep_first: int = knob(1, 0, 1_000_000, "leading events always kept")
    summary_tokens: int = knob(1_000, 0, 1_000_000, "size of the summary event, tokens (at most its input)")
    max_event_length: int = knob(10_000, 1, 10_000_000, "characters of each event given to the summariser")

    def validate(self) -> None:
        if self.max_size // 2 - self.keep_first - 1 < 1:
            raise ReplayError(f"{self.kind}: keep_first={self.keep_first} leaves no tail under "
                              f"max_size={self.max_size} (need max_size // 2 - keep_first - 1 >= 1)")


@dataclass(frozen=True)
class OpenHandsTokensConfig(PolicyConfig):
    """Token-triggered summarising condenser: past max_tokens keep keep_first plus a tail to half the cap."""

    kind = "openhands_tokens"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    max_tokens: int = knob(0, 0, 100_000_000, "estimated tokens that trigger a condensation (0: window - reserve)")
    keep_first: int = knob(1, 0, 1_000_000, "leading events always kept")
    summary_tokens: int = knob(1_000, 0, 1_000_000, "size of the summary event, tokens (at most its input)")
    max_event_length: int = knob(10_000, 1, 10_000_000, "characters of each event given to the summariser")


@dataclass(frozen=True)
class OpenHandsRecentConfig(PolicyConfig):
    """RecentEventsCondenser: the first keep_first events and the newest events up to max_events."""

    kind = "openhands_recent"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    keep_first: int = knob(1, 0, 1_000_000, "leading events always kept")
    max_events: int = knob(100, 2, 1_000_000, "events in the view")

    def validate(self) -> None:
        if self.max_events <= self.keep_first:
            raise ReplayError(f"{self.kind}: max_events must exceed keep_first")


class Condenser(Policy):
    """Shared cut logic: head [lo, head_end), forgotten middle, tail [tail_start, end)."""

    summarise = True

    def setup(self) -> None:
        self.folded_input = 0  # tokens of the truncated events the summariser has seen (rolling)

    def stages(self):
        return [(self.due, self.condense)]  # orphaned late results: Policy.drop_orphans

    def live(self) -> np.ndarray:
        lo = self.prefix_end()
        return lo + np.flatnonzero(self.forms[lo:self.end] != DROPPED)

    def events(self) -> int:
        return len(self.live()) + (1 if self.summary_at >= 0 else 0)

    def head_end(self) -> int:
        live = self.live()
        n = self.config.keep_first
        if n == 0 or not len(live):
            return self.prefix_end()
        end = int(live[min(n, len(live)) - 1]) + 1
        pair = self.run.pair
        while True:
            later = pair[self.prefix_end():end]
            later = later[(later >= end) & (later < self.end)]
            if not len(later):
                return end
            end = int(later.max()) + 1

    def tail_start(self, start: int) -> int:
        """Move a cut off a call/result pair: forward (forget the straddling batch) unless that reaches the
        newest event, else backward (keep it)."""
        pair, fwd = self.run.pair, start
        while fwd < self.end:
            seg = pair[fwd:self.end]
            early = fwd + np.flatnonzero((seg >= 0) & (seg < fwd))
            if not len(early):
                return fwd
            fwd = int(early.max()) + 1
        return self.pair_safe_start(start)

    def tail_size(self) -> int:
        """Events kept in the tail."""
        raise NotImplementedError

    def cut(self, head: int, tail: int) -> None:
        gone = head + np.flatnonzero(self.forms[head:tail] != DROPPED)
        if not len(gone):
            return
        self.drop(gone)
        if self.summarise:
            c = self.config
            self.folded_input += int(chars4(np.minimum(self.run.chars[gone], c.max_event_length)).sum())
            size = min(c.summary_tokens, self.folded_input)
            self.set_summary(tail, size, size)

    def condense(self) -> None:
        head, live = self.head_end(), self.live()
        keep = max(self.tail_size(), 1)
        if not len(live):
            return
        tail = self.tail_start(max(int(live[max(len(live) - keep, 0)]), head))
        if tail > head:
            self.cut(head, tail)


class OpenHands(Condenser):
    name = "openhands"
    Config = OpenHandsConfig

    def due(self) -> bool:
        return self.events() > self.config.max_size

    def tail_size(self) -> int:
        return self.config.max_size // 2 - self.config.keep_first - 1


class OpenHandsTokens(Condenser):
    name = "openhands_tokens"
    Config = OpenHandsTokensConfig

    def cap(self) -> int:
        return self.config.max_tokens or self.budget.usable

    def due(self) -> bool:
        return self.over(self.cap())

    def tail_size(self) -> int:
        """Newest events whose estimate, with the head, the prefix and a summary, fits half the cap."""
        live, head = self.live(), self.head_end()
        est = self.seg_est()
        fixed = int(est[:head].sum()) + self.config.summary_tokens
        room = self.cap() / 2 - fixed
        back = np.cumsum(est[live[live >= head]][::-1])
        return int(np.searchsorted(back, room, side="right"))


class OpenHandsRecent(Condenser):
    name = "openhands_recent"
    Config = OpenHandsRecentConfig
    summarise = False

    def due(self) -> bool:
        return self.events() > self.config.max_events

    def tail_size(self) -> int:
        return self.config.max_events - self.config.keep_first


POLICIES = [OpenHands, OpenHandsTokens, OpenHandsRecent]
