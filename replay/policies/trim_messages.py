"""Trim by message count: past a token limit, the oldest messages go, a share of them kept (inspect_ai's
``CompactionTrim``).

inspect_ai (model/_compaction/trim.py and model/_trim.py, 0.3.209 to 0.3.285): before each model call the prompt
about to be sent (the last call's ``input_context_tokens`` plus the messages since) is compared with the limit
(``int(threshold x window)``, or a token count); past it the system and input messages stay (here: what the first
request sent), of the messages after them the oldest ``int(n x (1 - preserve))`` of ``n`` go, and a tool result
whose call went goes too (as does a call whose result went). Still past the limit, it trims again, at most three
more times, while that shrinks the prompt. What it left is the history from then on (nothing comes back).

A message here is what the log's reader made of one: a tool result; the output items of one response; the other
items of one user turn and request step (a user message's parts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.errors import ReplayError
from replay.jit import compiled
from replay.policies.auto_compact import drop_artefacts, is_output, reported
from replay.policies.base import Budget, CompiledPolicy
from replay.policies.config import PolicyConfig, knob
from replay.policies.kernel import (
    P_POLICY,
    S_END,
    S_POLICY,
    S_SUMMARISED,
    SUMMARY_CLEARED,
    drop,
    est_total,
)
from replay.policies.view import DROPPED
from replay.run_arrays import TOOL_RESULT

PASSES = 4  # the first trim and up to three more (_perform_compaction's MAX_ITERATIONS)


@dataclass(frozen=True)
class TrimMessagesConfig(PolicyConfig):
    """Past threshold x window (or context_window), keep the newest ``preserve`` share of the messages."""

    kind = "trim_messages"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    threshold: float = knob(0.9, 0.0, 1.0, "fraction of the window that triggers (>0)")
    context_window: int = knob(0, 0, 100_000_000, "window the limit is taken of (0: the budget window)")
    preserve: float = knob(0.8, 0.0, 1.0, "share of the messages after the first prompt kept at each trim")

    def validate(self) -> None:
        if self.threshold <= 0:
            raise ReplayError("trim_messages: threshold must be in (0, 1]")


(P_LIMIT, P_PRESERVE) = range(P_POLICY, P_POLICY + 2)
S_FROM = S_POLICY  # first position after the first prompt: what it sent is never trimmed


class TrimMessages(CompiledPolicy):
    name = "trim_messages"
    Config = TrimMessagesConfig
    config: TrimMessagesConfig  # PolicyBase.__init__ checks the instance is a Config

    def limits(self, window: int) -> list[tuple[str, float]]:
        return [("threshold", self.config.threshold * (self.config.context_window or window))]

    def knobs(self, p: np.ndarray, budget: Budget) -> None:
        c = self.config
        p[P_LIMIT] = c.threshold * (c.context_window or budget.window)
        p[P_PRESERVE] = c.preserve


@compiled(borrowed=True)
def setup(p, r, st):
    """The harness's artefacts (its re-sent copies) out of the view; the first prompt's items are never trimmed."""
    drop_artefacts(r, st)
    st.s[S_FROM] = r.req_end[0] if len(r.req_end) > 0 else 0


@compiled(borrowed=True)
def starts_message(r, prev, q):
    """Live item q begins a message, the live item before it being ``prev`` (-1: none)."""
    if prev < 0 or r.kind[q] == TOOL_RESULT or r.kind[prev] == TOOL_RESULT:
        return True
    if is_output(r, q) or is_output(r, prev):
        return not (is_output(r, q) and is_output(r, prev) and r.step[q] == r.step[prev])
    return r.turn[q] != r.turn[prev] or r.step[q] != r.step[prev]


@compiled(borrowed=True)
def trim_once(p, r, st):
    """Drop the oldest int(n x (1 - preserve)) of the n live messages after the first prompt, with their partners."""
    lo, end = st.s[S_FROM], st.s[S_END]
    n, prev = 0, -1
    for q in range(lo, end):
        if st.forms[q] != DROPPED:
            n += starts_message(r, prev, q)
            prev = q
    cut = np.int64(n * (1.0 - p[P_PRESERVE]))
    seen, prev, bound = 0, -1, end  # bound: the first item of the first message kept
    for q in range(lo, end):
        if st.forms[q] == DROPPED:
            continue
        seen += starts_message(r, prev, q)
        prev = q
        if seen > cut:
            bound = q
            break
    for q in range(lo, bound):
        if st.forms[q] != DROPPED:
            drop(r, st, q)


@compiled(borrowed=True)
def decide(p, r, st):
    offset = reported(r, st)  # what the server counted beyond this policy's estimate of the last request
    if est_total(st) + offset <= p[P_LIMIT]:
        return
    before = est_total(st) + offset
    for _ in range(PASSES):
        trim_once(p, r, st)
        after = est_total(st) + offset
        if after <= p[P_LIMIT] or after >= before:
            break
        before = after
    st.s[S_SUMMARISED] |= SUMMARY_CLEARED


POLICIES = [TrimMessages]
