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
  the view to about max_size/2 (tail = max_size // 2 - keep_first - 1, the 1 being the summary event) and summarise the
  middle, rolling (the previous summary is folded into the next). ``keep_tail`` sets the tail instead, for condensers
  that keep a fixed recent range (the Complexity Trap study's OpenHands summary: summarise when N + M turns have come
  since the last summary, keep the newest M; a turn is an action and its observation, two events). The summary is
  ``summary_tokens`` at most and never more than its input, each event of which is truncated to ``max_event_length``
  characters as OpenHands does when it builds the summarisation prompt (the view itself is not truncated). Presets:
  ``openhands-v0`` (the V0 server's default pipeline: keep_first 4, max_size 120) and ``openhands-v1`` (the V1 SDK
  default agent: 80/4). ``max_tokens`` (0: none) adds the SDK's token trigger (LLMSummarizingCondenser.max_tokens,
  software-agent-sdk 3bd0250ab, 2025-12-23): past max_tokens tokens of the view by the policy's estimate (the SDK counts
  the view itself with the agent LLM's token counter, messages and, from a7f6d8fb9 of 2026-05-31, tools; never the usage
  the server reported), it keeps the first keep_first events plus the longest run of newest events whose tokens, with
  the head's, stay below max_tokens // 2; the new summary is not reserved for. Past both limits the fewer newest events
  of the two rules are kept. ``minimum_progress`` (0: none) is the SDK's setting of that name (b9c0e1f6a, v1.11.5):
  a condensation that would forget fewer than that share of the view's events (the previous summary among them) is
  not made, and the next request tries again, as the SDK does for what it calls a soft requirement
  (``replay.policies.presets`` says which hard ones it does not replay).
- ``openhands_tokens``: that condenser with the token trigger alone, ``max_tokens`` 0 being the budget's
  window - reserve (the SDK caps max_tokens by the agent LLM's input limit from c11602d12, 2026-08-13).
- ``openhands_recent``: keep the first ``keep_first`` events and the newest ``max_events`` - keep_first; no summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from replay.errors import ReplayError
from replay.jit import compiled
from replay.policies.auto_compact import drop_artefacts
from replay.policies.base import Budget, CompiledPolicy
from replay.policies.condenser_prompt import EVENT_CHARS, INSTRUCTION, V0, V1_SDK, WRITTEN, add_item, event_ids
from replay.policies.config import PolicyConfig, knob
from replay.policies.kernel import (
    P_POLICY,
    S_DIRTY,
    S_END,
    S_POLICY,
    S_PREV_END,
    S_SUM_AT,
    S_SUM_TOK,
    drop,
    est_of,
    est_total,
    pair_safe_start,
    pinned,
    prefix_end,
    set_summariser_prompt,
    set_summary,
)
from replay.policies.space import Knob
from replay.policies.view import DROPPED
from replay.run_arrays import KIND_CODE

ATTACHMENT = KIND_CODE["attachment"]


@compiled
def event_weights(kind, ids, attachment_events):
    """Events each id stands for: 1, or ``attachment_events`` for an attachment (V0: a recall observation and the
    recall action the log keeps no item for, 2; V1: a message's extended content, 0)."""
    n_ids = ids[-1] + 1 if len(ids) else 0
    w = np.ones(n_ids, np.int64)
    for q in range(len(kind)):
        if kind[q] == ATTACHMENT:
            w[ids[q]] = attachment_events
    return w


@dataclass(frozen=True)
class OpenHandsConfig(PolicyConfig):
    """LLMSummarizingCondenser: past max_size events keep keep_first plus a tail to about max_size/2."""

    kind = "openhands"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    max_size: int = knob(100, 3, 1_000_000, "events in the view that trigger a condensation")
    max_tokens: int = knob(
        0, 0, 100_000_000, "tokens of the view (the policy's estimate) that also trigger one; 0: no token limit"
    )
    keep_first: int = knob(1, 0, 1_000_000, "leading events always kept")
    keep_tail: int = knob(
        0, 0, 1_000_000, "newest events kept past the events trigger; 0: OpenHands' max_size // 2 - keep_first - 1"
    )
    summary_tokens: int = knob(1_000, 0, 1_000_000, "size of the summary event, tokens (at most its input)")
    max_event_length: int = knob(10_000, 1, 10_000_000, "characters of each event given to the summariser")
    attachment_events: int = knob(1, 0, 2, "events per attachment item (V0 recall: 2; V1 extended content: 0)")
    prompt: int = knob(
        V0, V0, V1_SDK, "the summariser's prompt as OpenHands builds it: 1 the V0 server's, 2 the V1 SDK's"
    )
    minimum_progress: float = knob(
        0.0, 0.0, 1.0, "share of the view's events a condensation must forget, else none is made (0: any)"
    )

    @property
    def tail(self) -> int:
        """Events kept after the head and the summary when the events trigger fires."""
        return self.keep_tail or self.max_size // 2 - self.keep_first - 1

    def validate(self) -> None:
        if self.tail < 1:
            raise ReplayError(
                f"{self.kind}: keep_first={self.keep_first} leaves no tail under "
                f"max_size={self.max_size} (need max_size // 2 - keep_first - 1 >= 1, or set keep_tail)"
            )
        if self.keep_first + 1 + self.tail >= self.max_size:
            raise ReplayError(
                f"{self.kind}: keep_tail={self.keep_tail} with keep_first={self.keep_first} keeps max_size="
                f"{self.max_size} events or more: a condensation would not shrink the view; lower keep_tail"
            )


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
    prompt: int = knob(
        V1_SDK, V0, V1_SDK, "the summariser's prompt as OpenHands builds it: 1 the V0 server's, 2 the V1 SDK's"
    )
    minimum_progress: float = knob(
        0.0, 0.0, 1.0, "share of the view's events a condensation must forget, else none is made (0: any)"
    )


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


# parameters: the events that trigger (0: none), keep_first, events kept in the tail past the events trigger, the
# summary's cap (-1: no summary), characters per event given to the summariser, events per attachment, the tokens
# that trigger (0: none; the tail past it is computed), the summariser's prompt (condenser_prompt), the share of the
# view's events a condensation must forget (0: any)
(
    P_MAX,
    P_KEEP_FIRST,
    P_TAIL_EVENTS,
    P_SUMMARY_TOKENS,
    P_EVENT_CHARS,
    P_ATTACHMENT_EVENTS,
    P_MAX_TOKENS,
    P_PROMPT,
    P_MIN_PROGRESS,
) = range(P_POLICY, P_POLICY + 9)
S_FOLDED = S_POLICY  # tokens of the truncated events the summariser has seen (rolling)
S_EVENTS = S_POLICY + 1  # live body events (by weight) as last counted
S_GAP_LO, S_GAP_HI = S_POLICY + 2, S_POLICY + 3  # every item in [lo, hi) is dropped (a cut's range)
# aux rows: each item's event id; each event id's weight (events it stands for); each event id's items counted as
# shown; each item counted as shown (1) or not; room for the live events' ids and first positions
A_EVENT, A_WEIGHT, A_SHOWN, A_COUNTED, A_IDS, A_FIRST = range(6)


class _Condenser(CompiledPolicy):
    """What the three condensers share: one compiled definition, told apart by their parameters."""

    summarise: ClassVar[bool] = True  # a summary of what is forgotten (the recent-events condenser writes none)

    def common(
        self,
        p: np.ndarray,
        keep_first: int,
        attachment_events: int,
        summary_tokens: int,
        chars: int,
        prompt: int,
        progress: float = 0.0,
    ) -> None:
        """The parameters every condenser sets: ``summary_tokens``/``chars``/``prompt`` are ignored when it writes
        no summary; ``progress``: the share of the view's events a condensation must forget."""
        p[P_KEEP_FIRST], p[P_ATTACHMENT_EVENTS], p[P_PROMPT] = keep_first, attachment_events, prompt
        p[P_MIN_PROGRESS] = progress
        p[P_SUMMARY_TOKENS] = summary_tokens if self.summarise else -1
        p[P_EVENT_CHARS] = chars if self.summarise else 0


class OpenHands(_Condenser):
    name = "openhands"
    Config = OpenHandsConfig
    config: OpenHandsConfig  # PolicyBase.__init__ checks the instance is a Config
    # counts of events do not scale with the window; the ranges span the sources' defaults (PEERS.md)
    space = (
        Knob("max_size", 20, 240, 100, integer=True, weight=3, step=10),
        Knob("keep_first", 1, 4, 1, integer=True, weight=1, step=1),
    )

    def limits(self, window: int) -> list[tuple[str, float]]:
        return [("max_tokens", self.config.max_tokens)] if self.config.max_tokens else []

    def knobs(self, p: np.ndarray, budget: Budget) -> None:
        c = self.config
        p[P_MAX], p[P_TAIL_EVENTS] = c.max_size, c.tail
        p[P_MAX_TOKENS] = c.max_tokens
        self.common(
            p, c.keep_first, c.attachment_events, c.summary_tokens, c.max_event_length, c.prompt, c.minimum_progress
        )


class OpenHandsTokens(_Condenser):
    name = "openhands_tokens"
    Config = OpenHandsTokensConfig
    config: OpenHandsTokensConfig  # PolicyBase.__init__ checks the instance is a Config
    space = (
        Knob("max_tokens", 0.4, 0.95, 0.7, integer=True, relative=True, weight=3, usable=True),
        Knob("keep_first", 1, 4, 1, integer=True, weight=1, step=1),
    )

    def limits(self, window: int) -> list[tuple[str, float]]:
        return [("max_tokens", self.config.max_tokens)] if self.config.max_tokens else []

    def knobs(self, p: np.ndarray, budget: Budget) -> None:
        c = self.config
        p[P_MAX], p[P_MAX_TOKENS] = 0, c.max_tokens or budget.usable
        self.common(
            p, c.keep_first, c.attachment_events, c.summary_tokens, c.max_event_length, c.prompt, c.minimum_progress
        )


class OpenHandsRecent(_Condenser):
    name = "openhands_recent"
    Config = OpenHandsRecentConfig
    config: OpenHandsRecentConfig  # PolicyBase.__init__ checks the instance is a Config
    space = (
        Knob("max_events", 20, 240, 100, integer=True, weight=3, step=10),
        Knob("keep_first", 1, 4, 1, integer=True, weight=1, step=1),
    )
    summarise = False

    def knobs(self, p: np.ndarray, budget: Budget) -> None:
        c = self.config
        p[P_MAX], p[P_TAIL_EVENTS], p[P_MAX_TOKENS] = c.max_events, c.max_events - c.keep_first, 0
        self.common(p, c.keep_first, c.attachment_events, 0, 0, V0)


@compiled
def setup(p, r, st):
    """Event ids and weights; the harness's own summaries and re-sent copies are not events here."""
    ids = event_ids(r.kind, r.step, r.first_body)
    w = event_weights(r.kind, ids, np.int64(p[P_ATTACHMENT_EVENTS]))
    for q in range(len(ids)):  # element by element: an array assigned to a slice compiles numba's shape-error
        st.aux[A_EVENT, q] = ids[q]  # formatting, ~2 s of a first compile
    for e in range(len(w)):
        st.aux[A_WEIGHT, e] = w[e]
    drop_artefacts(r, st)


@compiled(inline="always")
def count(st, q, shown):
    """Item q (of the body) now counts as shown or not; an event counts while any of its items does."""
    e = st.aux[A_EVENT, q]
    if shown:
        st.aux[A_SHOWN, e] += 1
        if st.aux[A_SHOWN, e] == 1:
            st.s[S_EVENTS] += st.aux[A_WEIGHT, e]
    else:
        st.aux[A_SHOWN, e] -= 1
        if st.aux[A_SHOWN, e] == 0:
            st.s[S_EVENTS] -= st.aux[A_WEIGHT, e]
    st.aux[A_COUNTED, q] = shown


@compiled(borrowed=True)
def recount(r, st):
    """Bring the event count up to date with what changed since the previous view (new items, the server's drops):
    all at or after the first position the driver changed."""
    s = st.s
    for q in range(max(min(s[S_DIRTY], s[S_PREV_END]), r.first_body), s[S_END]):
        shown = st.forms[q] != DROPPED
        if shown != (st.aux[A_COUNTED, q] != 0):
            count(st, q, shown)


@compiled(borrowed=True)
def events(r, st):
    """OpenHands' count of the view: the system prompt, each live body event (by weight), the summary."""
    return (1 if r.first_body > 0 else 0) + st.s[S_EVENTS] + (1 if st.s[S_SUM_AT] >= 0 else 0)


@compiled(inline="always")
def outside_gap(st, lo, hi):
    """[lo, hi) less the known dropped range, as two ranges (start, stop)."""
    return (lo, min(hi, st.s[S_GAP_LO])), (max(lo, st.s[S_GAP_HI]), hi)


@compiled(borrowed=True)
def live_events(r, st):
    """How many live events the body has; their ids and first live positions, in order, go to the aux rows
    ``A_IDS`` and ``A_FIRST``."""
    ev = st.aux[A_EVENT]
    ids, first = st.aux[A_IDS], st.aux[A_FIRST]
    n, last = 0, -1
    for a, b in outside_gap(st, prefix_end(r, st), st.s[S_END]):
        for q in range(a, b):
            if (st.forms[q] != DROPPED) & (ev[q] != last):
                last = ev[q]
                ids[n], first[n] = last, q
                n += 1
    return n


@compiled(borrowed=True)
def after_event(ev, pos):
    """The first position past the event holding ``pos`` (over the whole run)."""
    return np.searchsorted(ev, ev[pos], side="right")


@compiled(borrowed=True)
def event_start(ev, st, pos):
    """The first position of the event holding ``pos``."""
    return np.searchsorted(ev, ev[pos], side="left") if pos < st.s[S_END] else pos


@compiled(borrowed=True)
def next_start(ev, st, pos):
    """The first event boundary at or after ``pos``."""
    if pos >= st.s[S_END] or event_start(ev, st, pos) == pos:
        return pos
    return after_event(ev, pos)


@compiled(borrowed=True)
def head_end(p, r, st, ids):
    """End of the kept head: the first keep_first events (the prefix counting as one), grown on event boundaries
    until it holds the results of its calls."""
    ev, w = st.aux[A_EVENT], st.aux[A_WEIGHT]
    lo, end = prefix_end(r, st), st.s[S_END]
    n = np.int64(p[P_KEEP_FIRST]) - (1 if r.first_body > 0 else 0)
    if n <= 0 or len(ids) == 0:
        return lo
    i, acc = 0, w[ids[0]]
    while acc < n and i < len(ids) - 1:
        i += 1
        acc += w[ids[i]]
    head = np.searchsorted(ev, ids[i], side="right")
    while True:
        later = -1
        for q in range(lo, head):
            if (r.pair[q] >= head) & (r.pair[q] < end):
                later = max(later, r.pair[q])
        if later < 0:
            return min(head, end)
        head = after_event(ev, later)


@compiled(borrowed=True)
def tail_start(r, st, start):
    """Move a cut off a call/result pair and onto an event boundary: forward (forget the straddling batch) unless
    that reaches the newest event, else backward (keep it)."""
    ev, end = st.aux[A_EVENT], st.s[S_END]
    fwd = next_start(ev, st, start)
    while fwd < end:
        early = -1
        for q in range(fwd, end):
            if (r.pair[q] >= 0) & (r.pair[q] < fwd):
                early = q
        if early < 0:
            return fwd
        fwd = next_start(ev, st, early + 1)
    back = start
    while True:
        moved = event_start(ev, st, pair_safe_start(r, st, back))
        if moved == back:
            return back
        back = moved


@compiled(borrowed=True)
def token_tail(p, r, st, ids, first, head):
    """Events of the newest live events kept past the token limit, as LLMSummarizingCondenser picks them: it forgets
    the shortest run after the head whose tokens exceed the view's less max_tokens // 2, so it keeps the longest run
    of newest events whose tokens stay below max_tokens // 2 less the head's (the prefix and keep_first events);
    the summary it writes is not counted."""
    ev, w = st.aux[A_EVENT], st.aux[A_WEIGHT]
    fixed = np.int64(0)
    for q in range(head):
        fixed += est_of(st, q)
    room = np.int64(p[P_MAX_TOKENS]) // 2 - fixed
    i = len(ids) - 1  # the newest event; its items from its first live one to the next event's
    q = st.s[S_END] - 1
    acc = kept = 0
    while i >= 0 and first[i] >= head:
        while q >= first[i]:
            if ev[q] == ids[i] and st.forms[q] != DROPPED:
                acc += est_of(st, q)
            q -= 1
        if acc >= room:
            break
        kept += w[ids[i]]
        i -= 1
    return kept


@compiled(borrowed=True)
def forget(r, st, q):
    """Drop item q with its partner (``kernel.drop``), keeping the event count; harness prefix stays."""
    if pinned(r, q):
        return
    end = st.s[S_END]
    for x in (q, r.pair[q]):
        if 0 <= x < end:
            if (st.aux[A_COUNTED, x] != 0) & (st.forms[x] != DROPPED):
                count(st, x, False)
    drop(r, st, q)


@compiled(borrowed=True)
def cut(p, r, st, head, tail):
    """Forget the live items of [head, tail) (with their partners); the summary, when this condenser writes one,
    folds their truncated text in and stands before ``tail``, and the summariser call is charged the prompt the
    condenser sends (``condenser_prompt``: the instruction, the previous summary, the forgotten events)."""
    folded = 0
    chars = np.int64(p[P_EVENT_CHARS])
    condenser = np.int64(p[P_PROMPT])
    shown = chars if condenser == V0 else EVENT_CHARS[condenser]
    acc = (np.int64(0), np.int64(-1), np.int64(0))  # the forgotten events as the summariser is sent them
    gone = False
    for a, b in outside_gap(st, head, tail):
        for q in range(a, b):
            if st.forms[q] != DROPPED:
                gone = True
                folded += (min(r.chars[q], chars) + 3) // 4
                if r.recorded_only[q] == 0:  # the harness's own summary is no event of this replay
                    acc = add_item(r, st.aux[A_EVENT], q, condenser, shown, acc)
    if not gone:
        return
    for a, b in outside_gap(st, head, tail):
        for q in range(a, b):
            if st.forms[q] != DROPPED:
                forget(r, st, q)
    s = st.s
    if (head <= s[S_GAP_HI]) & (tail >= s[S_GAP_LO]):  # now all dropped: one known range
        s[S_GAP_LO], s[S_GAP_HI] = min(head, s[S_GAP_LO]), max(tail, s[S_GAP_HI])
    else:
        s[S_GAP_LO], s[S_GAP_HI] = head, tail
    if p[P_SUMMARY_TOKENS] >= 0:
        previous = s[S_SUM_TOK] if s[S_SUM_AT] >= 0 else 0
        sent = INSTRUCTION[condenser] + previous + acc[0]
        set_summariser_prompt(st, sent, WRITTEN[condenser], -1)
        st.s[S_FOLDED] += folded
        size = min(np.int64(p[P_SUMMARY_TOKENS]), st.s[S_FOLDED])
        set_summary(st, tail, size, size)


@compiled(borrowed=True)
def enough_progress(p, r, st, ids, first, head, tail):
    """Whether forgetting [head, tail) forgets at least ``minimum_progress`` of the view's events, as the SDK
    counts both: the live events there (by weight) and the previous summary when it stands there, against every
    event of the view (``events``: the system prompt and the summary among them, as ``decide`` last counted)."""
    share = p[P_MIN_PROGRESS]
    if share <= 0:
        return True
    w = st.aux[A_WEIGHT]
    gone = 1 if (st.s[S_SUM_AT] >= head) & (st.s[S_SUM_AT] < tail) else 0
    for i in range(len(ids)):
        if (first[i] >= head) & (first[i] < tail):
            gone += w[ids[i]]
    return gone >= share * events(r, st)


@compiled(borrowed=True)
def condense(p, r, st, by_events, by_tokens):
    """Keep the head and the newest events of the tail; forget (or summarise) the middle. Past both limits the
    stricter rule wins (the fewer newest events), as the SDK takes the least of its reasons' tails."""
    n = live_events(r, st)
    ids, first = st.aux[A_IDS, :n], st.aux[A_FIRST, :n]
    head = head_end(p, r, st, ids)
    if len(ids) == 0:
        return
    keep = np.int64(p[P_TAIL_EVENTS]) if by_events else np.int64(1 << 62)
    if by_tokens:
        keep = min(keep, token_tail(p, r, st, ids, first, head))
    keep = max(keep, 1)
    w = st.aux[A_WEIGHT]
    i, acc = len(ids) - 1, w[ids[len(ids) - 1]]  # the newest events, until they hold keep
    while acc < keep and i > 0:
        i -= 1
        acc += w[ids[i]]
    tail = tail_start(r, st, max(first[i], head))
    if tail > head and enough_progress(p, r, st, ids, first, head, tail):
        cut(p, r, st, head, tail)


@compiled(borrowed=True)
def decide(p, r, st):
    """Past max_size events or past max_tokens tokens of the view (each 0: no such limit), condense."""
    by_tokens = (p[P_MAX_TOKENS] > 0) & (est_total(st) > p[P_MAX_TOKENS])
    by_events = False
    if (p[P_MAX] > 0) | (p[P_MIN_PROGRESS] > 0):  # the events trigger, or minimum progress, counts the view
        recount(r, st)
        by_events = (p[P_MAX] > 0) & (events(r, st) > p[P_MAX])
    if by_events | by_tokens:
        condense(p, r, st, by_events, by_tokens)


POLICIES = [OpenHands, OpenHandsTokens, OpenHandsRecent]
