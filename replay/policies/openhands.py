"""OpenHands condensers (facts in shared/PEERS.md; openhands/memory/condenser, software-agent-sdk condenser).

Counted in OpenHands events, not items: the system prompt is one event (the harness prefix, when the run has one);
each user message, tool call (an action: the assistant's thought and reasoning of the same response ride on its
first call) and tool result (an observation) is one event; an assistant response with no tool call is one message
event; the summary is one event. The harness's own recorded summaries and re-sent copies are not events of this
replay. Cut points fall on event boundaries and never split a tool call from its result: the kept head grows to
take the results of its calls; a tail cut inside a batch moves forward past it (the batch is forgotten whole), or
backwards when that would forget the newest event. A result that arrives after its call was forgotten is
forgotten too.

- ``openhands``: past ``max_size`` events in the view, keep the first ``keep_first`` events plus a tail that brings
  the view to about max_size/2 (tail = max_size // 2 - keep_first - 1, the 1 being the summary event) and summarise
  the middle, rolling (the previous summary is folded into the next). The summary is ``summary_tokens`` at most
  and never more than its input, each event of which is truncated to ``max_event_length`` characters as OpenHands
  does when it builds the summarisation prompt (the view itself is not truncated). Presets: ``openhands-v0`` (the
  V0 server's default pipeline: keep_first 4, max_size 120) and ``openhands-v1`` (the V1 SDK default agent: 80/4).
- ``openhands_tokens``: the token-triggered variant (newer SDK): past ``max_tokens`` by the estimate (0: the
  budget, window - reserve), keep the head plus a tail that targets half of the cap.
- ``openhands_recent``: keep the first ``keep_first`` events and the newest ``max_events`` - keep_first; no summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.errors import ReplayError
from replay.policies.auto_compact import harness_artefacts
from replay.policies.base import Policy
from replay.policies.config import PolicyConfig, knob
from replay.policies.view import DROPPED
from replay.simulator.arrays import KIND_CODE, TOOL_CALL, RunArrays, chars4

THOUGHT = (KIND_CODE["assistant_text"], KIND_CODE["reasoning"])


def event_ids(run: RunArrays) -> np.ndarray:
    """OpenHands event index of each item (non-decreasing): the prefix is event 0 when there is one; a thought
    joins the first tool call of its response; a response without a call is one message event."""
    kind, step, n = run.kind, run.step, run.n_items
    ids = np.zeros(n, dtype=np.int64)
    lo = run.first_body
    cur = 0 if lo > 0 else -1
    p = lo
    while p < n:
        q = p + 1
        if kind[p] in THOUGHT:
            while q < n and kind[q] in THOUGHT and step[q] == step[p]:
                q += 1
            if q < n and kind[q] == TOOL_CALL and step[q] == step[p]:
                q += 1  # the thought rides on its call: one action event
        cur += 1
        ids[p:q] = cur
        p = q
    return ids


def event_weights(run: RunArrays, ids: np.ndarray, attachment_events: int) -> np.ndarray:
    """Events each id stands for: 1, or ``attachment_events`` for an attachment (V0: a recall observation and the
    recall action the log keeps no item for, 2; V1: a message's extended content, 0)."""
    n_ids = int(ids[-1]) + 1 if len(ids) else 0
    w = np.ones(n_ids, dtype=np.int64)
    att = np.flatnonzero(run.kind == KIND_CODE["attachment"])
    w[ids[att]] = attachment_events
    return w


@dataclass(frozen=True)
class OpenHandsConfig(PolicyConfig):
    """LLMSummarizingCondenser: past max_size events keep keep_first plus a tail to about max_size/2."""

    kind = "openhands"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    max_size: int = knob(100, 3, 1_000_000, "events in the view that trigger a condensation")
    keep_first: int = knob(1, 0, 1_000_000, "leading events always kept")
    summary_tokens: int = knob(1_000, 0, 1_000_000, "size of the summary event, tokens (at most its input)")
    max_event_length: int = knob(10_000, 1, 10_000_000, "characters of each event given to the summariser")
    attachment_events: int = knob(1, 0, 2, "events per attachment item (V0 recall: 2; V1 extended content: 0)")

    def validate(self) -> None:
        if self.max_size // 2 - self.keep_first - 1 < 1:
            raise ReplayError(f"{self.kind}: keep_first={self.keep_first} leaves no tail under "
                              f"max_size={self.max_size} (need max_size // 2 - keep_first - 1 >= 1)")


@dataclass(frozen=True)
class OpenHandsTokensConfig(PolicyConfig):
    """Token-triggered summarising condenser: past max_tokens keep keep_first plus a tail to half the cap."""

    kind = "openhands_tokens"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    max_tokens: int = knob(0, 0, 100_000_000, "estimated tokens that trigger a condensation (0: window - reserve)")
    keep_first: int = knob(1, 0, 1_000_000, "leading events always kept")
    summary_tokens: int = knob(1_000, 0, 1_000_000, "size of the summary event, tokens (at most its input)")
    max_event_length: int = knob(10_000, 1, 10_000_000, "characters of each event given to the summariser")
    attachment_events: int = knob(1, 0, 2, "events per attachment item (V0 recall: 2; V1 extended content: 0)")


@dataclass(frozen=True)
class OpenHandsRecentConfig(PolicyConfig):
    """RecentEventsCondenser: the first keep_first events and the newest events up to max_events."""

    kind = "openhands_recent"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    keep_first: int = knob(1, 0, 1_000_000, "leading events always kept")
    max_events: int = knob(100, 2, 1_000_000, "events in the view")
    attachment_events: int = knob(1, 0, 2, "events per attachment item (V0 recall: 2; V1 extended content: 0)")

    def validate(self) -> None:
        if self.max_events <= self.keep_first:
            raise ReplayError(f"{self.kind}: max_events must exceed keep_first")


class Condenser(Policy):
    """Shared cut logic in events: head [prefix, head_end), forgotten middle, tail [tail_start, end)."""

    summarise = True

    def setup(self) -> None:
        self.folded_input = 0  # tokens of the truncated events the summariser has seen (rolling)
        r = self.run
        self.ev = event_ids(r)
        self.w = event_weights(r, self.ev, self.config.attachment_events)
        gone = harness_artefacts(r) | r.events.recorded_only
        self.set_forms(np.flatnonzero(gone), DROPPED)  # the harness's own summaries are not events here
        self.prefix_event = 1 if r.first_body > 0 else 0

    def stages(self):
        return [(self.due, self.condense)]  # orphaned late results: Policy.drop_orphans

    def live(self) -> np.ndarray:
        lo = self.prefix_end()
        return lo + np.flatnonzero(self.forms[lo:self.end] != DROPPED)

    def live_events(self) -> tuple[np.ndarray, np.ndarray]:
        """(event ids, first live position of each) of the body, in order."""
        live = self.live()
        ids, first = np.unique(self.ev[live], return_index=True)
        return ids, live[first]

    def events(self) -> int:
        return self.prefix_event + int(self.w[self.live_events()[0]].sum()) + (1 if self.summary_at >= 0 else 0)

    def event_start(self, pos: int) -> int:
        """The first position of the event holding ``pos``."""
        return int(np.searchsorted(self.ev, self.ev[pos], side="left")) if pos < self.end else pos

    def head_end(self) -> int:
        n = self.config.keep_first - self.prefix_event
        ids, _ = self.live_events()
        if n <= 0 or not len(ids):
            return self.prefix_end()
        last = ids[min(int(np.searchsorted(np.cumsum(self.w[ids]), n, side="left")), len(ids) - 1)]
        end = int(np.searchsorted(self.ev, last, side="right"))
        pair = self.run.pair
        while True:
            later = pair[self.prefix_end():end]
            later = later[(later >= end) & (later < self.end)]
            if not len(later):
                return min(end, self.end)
            end = int(np.searchsorted(self.ev, self.ev[int(later.max())], side="right"))

    def next_start(self, pos: int) -> int:
        """The first event boundary at or after ``pos``."""
        if pos >= self.end or self.event_start(pos) == pos:
            return pos
        return int(np.searchsorted(self.ev, self.ev[pos], side="right"))

    def tail_start(self, start: int) -> int:
        """Move a cut off a call/result pair and onto an event boundary: forward (forget the straddling batch)
        unless that reaches the newest event, else backward (keep it)."""
        pair, fwd = self.run.pair, self.next_start(start)
        while fwd < self.end:
            seg = pair[fwd:self.end]
            early = fwd + np.flatnonzero((seg >= 0) & (seg < fwd))
            if not len(early):
                return fwd
            fwd = self.next_start(int(early.max()) + 1)
        back = start
        while True:
            moved = self.event_start(self.pair_safe_start(back))
            if moved == back:
                return back
            back = moved

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
        head = self.head_end()
        ids, first = self.live_events()
        if not len(ids):
            return
        keep = max(self.tail_size(), 1)
        back = np.cumsum(self.w[ids][::-1])  # events in the newest 1, 2, ... ids
        newest = min(int(np.searchsorted(back, keep, side="left")), len(ids) - 1)
        tail = self.tail_start(max(int(first[len(ids) - 1 - newest]), head))
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
        ids, first = self.live_events()
        head = self.head_end()
        est = self.seg_est()
        fixed = int(est[:head].sum()) + self.config.summary_tokens
        room = self.cap() / 2 - fixed
        live = self.live()
        per_event = np.bincount(np.searchsorted(ids, self.ev[live]), weights=est[live], minlength=len(ids))
        back = np.cumsum(per_event[first >= head][::-1])
        n_ids = int(np.searchsorted(back, room, side="right"))
        return int(self.w[ids[first >= head][::-1][:n_ids]].sum())


class OpenHandsRecent(Condenser):
    name = "openhands_recent"
    Config = OpenHandsRecentConfig
    summarise = False

    def due(self) -> bool:
        return self.events() > self.config.max_events

    def tail_size(self) -> int:
        return self.config.max_events - self.config.keep_first


POLICIES = [OpenHands, OpenHandsTokens, OpenHandsRecent]
