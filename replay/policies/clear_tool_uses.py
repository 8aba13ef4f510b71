"""Anthropic context editing, ``clear_tool_uses_20250919``, as the server applies it.

The client keeps sending the full history; on every request whose full prompt is past the trigger (``input_tokens``)
or holds more than the trigger's number of tool uses (``tool_uses``), the server clears all tool results but the
newest ``keep`` tool uses, oldest first, skipping ``exclude_tools``, and only when that frees at least
``clear_at_least`` tokens. ``clear_tool_inputs`` also clears the call arguments: ``true`` for every cleared tool use,
or a comma-separated list of tool names. The view is a function of the full history at each request (nothing
persists between requests), so a request below the trigger shows everything again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.errors import ReplayError
from replay.jit import compiled
from replay.policies.base import CompiledPolicy
from replay.policies.config import PolicyConfig, knob
from replay.policies.kernel import (
    P_ESTIMATOR,
    P_POLICY,
    S_DIRTY,
    S_END,
    S_POLICY,
    S_PREV_END,
    S_TOT_EST,
    TF_CLEAR_INPUT,
    TF_EXCLUDED,
    set_form,
)
from replay.policies.masking import token_ratio, wording_cost
from replay.policies.space import Knob
from replay.policies.view import DROPPED, ORIGINAL, PLACEHOLDER, SHRUNK
from replay.run_arrays import TOOL_CALL, TOOL_RESULT

CLEARED = "[Old tool result content cleared]"
CLEARED_INPUT = "{}"


@dataclass(frozen=True)
class ClearToolUsesConfig(PolicyConfig):
    """Past the trigger, clear all but the last ``keep`` tool results on every request (if it frees clear_at_least)."""

    kind = "clear_tool_uses"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    trigger_type: Literal["input_tokens", "tool_uses"] = "input_tokens"
    trigger: int = knob(100_000, 0, 10_000_000, "input tokens (or tool uses) of the full prompt past which to clear")
    keep: int = knob(3, 0, 100_000, "most recent tool uses kept")
    clear_at_least: int = knob(0, 0, 10_000_000, "clear only if at least this many tokens are freed")
    exclude_tools: tuple[str, ...] = knob((), doc="tool names never cleared (comma separated)")
    clear_tool_inputs: bool | tuple[str, ...] = knob(
        False, doc="also clear call arguments: true, false, or tool names (comma separated)"
    )

    def validate(self) -> None:
        value = self.clear_tool_inputs
        if isinstance(value, str):
            low = value.strip().lower()
            if low in ("true", "false", "1", "0", "yes", "no", ""):
                value = low in ("true", "1", "yes")
            else:
                value = tuple(s.strip() for s in value.split(",") if s.strip())
        elif isinstance(value, (list, tuple)):
            value = tuple(str(s) for s in value)
        elif not isinstance(value, bool):
            raise ReplayError(f"clear_tool_uses: clear_tool_inputs={value!r}: expected true, false or tool names")
        object.__setattr__(self, "clear_tool_inputs", value)


# knobs: trigger by tool uses (else input tokens), trigger, keep, clear_at_least, every call's input cleared
(P_BY_TOOL_USES, P_TRIGGER, P_KEEP, P_CLEAR_AT_LEAST, P_ALL_INPUTS) = range(P_POLICY, P_POLICY + 5)
# scalars: results in the run, in the history so far, live (not dropped) among them; the old part: results before
# index BOUND hold the oldest OLD live results, CLEARABLE of them not excluded, clearing them frees FREED; results
# before index CLEARED_TO show cleared (0: none); LIFT: what cleared items show less than their originals
(S_N_RESULTS, S_SEEN, S_LIVE, S_BOUND, S_OLD, S_CLEARABLE, S_FREED, S_CLEARED_TO, S_LIFT) = range(
    S_POLICY, S_POLICY + 9
)
# aux rows: positions of the run's tool results; tool flags with a result inheriting its call's; shown cleared
(A_RESULTS, A_FLAG, A_CLEARED) = range(3)


class ClearToolUses(CompiledPolicy):
    name = "clear_tool_uses"
    Config = ClearToolUsesConfig
    config: ClearToolUsesConfig  # PolicyBase.__init__ checks the instance is a Config
    space = (
        Knob("trigger", 0.3, 0.9, 0.6, integer=True, relative=True, weight=3, usable=True),
        Knob("keep", 1, 12, 3, integer=True, weight=2, step=1),
        Knob("clear_at_least", 0.0, 0.15, 0.05, integer=True, relative=True, weight=1.5),
    )

    def limits(self, window: int) -> list[tuple[str, float]]:
        c = self.config
        return [("trigger", c.trigger)] if c.trigger_type == "input_tokens" else []

    def knobs(self, p: np.ndarray, budget) -> None:
        c = self.config
        p[P_BY_TOOL_USES], p[P_TRIGGER] = c.trigger_type == "tool_uses", c.trigger
        p[P_KEEP], p[P_CLEAR_AT_LEAST], p[P_ALL_INPUTS] = c.keep, c.clear_at_least, c.clear_tool_inputs is True

    def tool_flags(self, tool_names: tuple[str, ...]) -> np.ndarray:
        c = self.config
        inputs = c.clear_tool_inputs if isinstance(c.clear_tool_inputs, tuple) else ()
        return np.array(
            [TF_EXCLUDED * (t in c.exclude_tools) | TF_CLEAR_INPUT * (t in inputs) for t in tool_names], dtype=np.int8
        )


@compiled(borrowed=True)
def setup(p, r, st):
    """Placeholder and cleared-input costs (the wordings at the run's tokens per character); results' positions;
    per item its tool's flags, a result also its call's."""
    estimator, ratio = int(p[P_ESTIMATOR]), token_ratio(r)
    n_res = 0
    for q in range(len(r.kind)):
        st.ftok[PLACEHOLDER, q], st.fest[PLACEHOLDER, q] = wording_cost(r, q, len(CLEARED), ratio, estimator)
        st.ftok[SHRUNK, q], st.fest[SHRUNK, q] = wording_cost(r, q, len(CLEARED_INPUT), ratio, estimator)
        st.aux[A_FLAG, q] = r.tflag[q]
        if r.kind[q] == TOOL_RESULT:
            st.aux[A_RESULTS, n_res] = q
            n_res += 1
    for q in range(len(r.kind)):
        if r.kind[q] == TOOL_CALL and r.pair[q] >= 0:
            st.aux[A_FLAG, r.pair[q]] |= r.tflag[q]
    st.s[S_N_RESULTS] = n_res


@compiled(borrowed=True)
def input_cleared(p, st, call):
    return (call >= 0) & ((p[P_ALL_INPUTS] > 0) | (st.aux[A_FLAG, max(call, 0)] & TF_CLEAR_INPUT != 0))


@compiled(borrowed=True)
def clearable(st, q):
    """A live result of a tool not excluded."""
    return (st.forms[q] != DROPPED) & (st.aux[A_FLAG, q] & TF_EXCLUDED == 0)


@compiled(borrowed=True)
def freed_by(p, r, st, q):
    """Estimated tokens clearing result q (and its call's input, when cleared) frees."""
    freed = max(st.fest[ORIGINAL, q] - st.fest[PLACEHOLDER, q], 0)
    call = r.pair[q]
    if input_cleared(p, st, call):
        freed += max(st.fest[ORIGINAL, call] - st.fest[SHRUNK, call], 0)
    return freed


@compiled(borrowed=True)
def lift(st, q):
    """How much less than its original item q shows in a cleared form (else 0)."""
    f = st.forms[q]
    return st.fest[ORIGINAL, q] - st.fest[f, q] if f == PLACEHOLDER or f == SHRUNK else 0


@compiled(borrowed=True)
def show(r, st, q, cleared):
    """Item q shows its cleared form, or its original again if it was cleared (and is not dropped)."""
    before = lift(st, q)
    if cleared:
        set_form(st, q, SHRUNK if r.kind[q] == TOOL_CALL else PLACEHOLDER)
    elif st.aux[A_CLEARED, q] and st.forms[q] != DROPPED:
        set_form(st, q, ORIGINAL)
    st.aux[A_CLEARED, q] = cleared
    st.s[S_LIFT] += lift(st, q) - before


@compiled(borrowed=True)
def count_results(r, st, rebuild):
    """Advance over the results the history now holds; with ``rebuild`` (the loop dropped an item already shown)
    recount everything from scratch. Then extend the old part to the oldest (live - keep) live results."""
    s, res = st.s, st.aux[A_RESULTS]
    if rebuild:
        s[S_LIVE] = s[S_BOUND] = s[S_OLD] = s[S_CLEARABLE] = s[S_FREED] = s[S_LIFT] = 0
        for i in range(s[S_SEEN]):
            s[S_LIVE] += st.forms[res[i]] != DROPPED
            s[S_LIFT] += lift(st, res[i]) + (lift(st, r.pair[res[i]]) if r.pair[res[i]] >= 0 else 0)
    while s[S_SEEN] < s[S_N_RESULTS] and res[s[S_SEEN]] < s[S_END]:
        s[S_LIVE] += st.forms[res[s[S_SEEN]]] != DROPPED
        s[S_SEEN] += 1


@compiled(borrowed=True)
def extend_old(p, r, st):
    """The old part grows to the oldest (live - keep) live results, with what clearing it would free."""
    s, res = st.s, st.aux[A_RESULTS]
    n_old = max(s[S_LIVE] - np.int64(p[P_KEEP]), 0)
    while s[S_OLD] < n_old:
        q = res[s[S_BOUND]]
        s[S_BOUND] += 1
        if st.forms[q] == DROPPED:
            continue
        s[S_OLD] += 1
        if clearable(st, q):
            s[S_CLEARABLE] += 1
            s[S_FREED] += freed_by(p, r, st, q)


@compiled(borrowed=True)
def decide(p, r, st):
    """The server's clearing, afresh on every request: the old part cleared when the full history is past the
    trigger and that frees clear_at_least, else every cleared item shown again. Only what changed since the
    previous request is visited, unless the loop dropped an item already shown."""
    s, res = st.s, st.aux[A_RESULTS]
    rebuild = s[S_DIRTY] < s[S_PREV_END]
    count_results(r, st, rebuild)
    extend_old(p, r, st)
    if p[P_BY_TOOL_USES]:
        past = s[S_LIVE] > p[P_TRIGGER]
    else:  # the full history: every item not dropped, original
        past = s[S_TOT_EST] + s[S_LIFT] > p[P_TRIGGER]
    clear = past and s[S_CLEARABLE] > 0 and s[S_FREED] >= p[P_CLEAR_AT_LEAST]
    lo, hi = (0, s[S_SEEN]) if rebuild else ((s[S_CLEARED_TO], s[S_BOUND]) if clear else (0, s[S_CLEARED_TO]))
    for i in range(lo, hi):
        q = res[i]
        on = clear and i < s[S_BOUND] and clearable(st, q)
        call = r.pair[q]
        show(r, st, q, on)
        if call >= 0:
            show(r, st, call, on and input_cleared(p, st, call))
    s[S_CLEARED_TO] = s[S_BOUND] if clear else 0


POLICIES = [ClearToolUses]
