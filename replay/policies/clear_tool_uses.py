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
    S_END,
    S_POLICY,
    TF_CLEAR_INPUT,
    TF_EXCLUDED,
    set_form,
)
from replay.policies.masking import token_ratio, wording_cost
from replay.policies.view import DROPPED, ORIGINAL, PLACEHOLDER, SHRUNK
from replay.simulator.arrays import TOOL_CALL, TOOL_RESULT

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
    clear_tool_inputs: bool | tuple[str, ...] = knob(False, doc="also clear call arguments: true, false, or tool "
                                                               "names (comma separated)")

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
(S_N_RESULTS, S_SEEN) = range(S_POLICY, S_POLICY + 2)  # results in the run, in the history so far
# aux rows: positions of the run's tool results; tool flags with a result inheriting its call's; cleared at the
# previous request; cleared at this one
(A_RESULTS, A_FLAG, A_CLEARED, A_TARGET) = range(4)


class ClearToolUses(CompiledPolicy):
    name = "clear_tool_uses"
    Config = ClearToolUsesConfig

    def knobs(self, p: np.ndarray, budget) -> None:
        c = self.config
        p[P_BY_TOOL_USES], p[P_TRIGGER] = c.trigger_type == "tool_uses", c.trigger
        p[P_KEEP], p[P_CLEAR_AT_LEAST], p[P_ALL_INPUTS] = c.keep, c.clear_at_least, c.clear_tool_inputs is True

    def tool_flags(self, tool_names: tuple[str, ...]) -> np.ndarray:
        c = self.config
        inputs = c.clear_tool_inputs if isinstance(c.clear_tool_inputs, tuple) else ()
        return np.array([TF_EXCLUDED * (t in c.exclude_tools) | TF_CLEAR_INPUT * (t in inputs) for t in tool_names],
                        dtype=np.int8)


@compiled
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


@compiled
def past_trigger(p, st, n_live):
    """The full history (every item not dropped, original) is past the trigger."""
    if p[P_BY_TOOL_USES]:
        return n_live > p[P_TRIGGER]
    total = 0
    for q in range(st.s[S_END]):
        if st.forms[q] != DROPPED:
            total += st.fest[ORIGINAL, q]
    return total > p[P_TRIGGER]


@compiled
def input_cleared(p, st, call):
    return call >= 0 and (p[P_ALL_INPUTS] > 0 or st.aux[A_FLAG, call] & TF_CLEAR_INPUT)


@compiled
def mark_targets(p, r, st, seen, n_live):
    """Mark this request's cleared items (A_TARGET): the live results but the newest ``keep``, not excluded, and
    their calls when inputs are cleared, if that frees ``clear_at_least``."""
    res, target = st.aux[A_RESULTS], st.aux[A_TARGET]
    for i in range(seen):
        target[res[i]] = 0
        if r.pair[res[i]] >= 0:
            target[r.pair[res[i]]] = 0
    if not past_trigger(p, st, n_live):
        return
    n_old = max(n_live - np.int64(p[P_KEEP]), 0)
    freed = n_cleared = live = 0
    for i in range(seen):
        q = res[i]
        if st.forms[q] == DROPPED:
            continue
        if live >= n_old:
            break
        live += 1
        if st.aux[A_FLAG, q] & TF_EXCLUDED:
            continue
        n_cleared += 1
        freed += max(st.fest[ORIGINAL, q] - st.fest[PLACEHOLDER, q], 0)
        target[q] = 1
        call = r.pair[q]
        if input_cleared(p, st, call):
            freed += max(st.fest[ORIGINAL, call] - st.fest[SHRUNK, call], 0)
            target[call] = 1
    if n_cleared == 0 or freed < p[P_CLEAR_AT_LEAST]:
        for i in range(seen):
            target[res[i]] = 0
            if r.pair[res[i]] >= 0:
                target[r.pair[res[i]]] = 0


@compiled
def show(r, st, q):
    """Item q takes its cleared form if targeted, else back to original if it was cleared before (not dropped)."""
    if st.aux[A_TARGET, q]:
        set_form(st, q, SHRUNK if r.kind[q] == TOOL_CALL else PLACEHOLDER)
    elif st.aux[A_CLEARED, q] and st.forms[q] != DROPPED:
        set_form(st, q, ORIGINAL)
    st.aux[A_CLEARED, q] = st.aux[A_TARGET, q]


@compiled
def decide(p, r, st):
    """The server's clearing, afresh on every request."""
    seen, end = st.s[S_SEEN], st.s[S_END]
    while seen < st.s[S_N_RESULTS] and st.aux[A_RESULTS, seen] < end:
        seen += 1
    st.s[S_SEEN] = seen
    res = st.aux[A_RESULTS]
    n_live = 0
    for i in range(seen):
        n_live += st.forms[res[i]] != DROPPED
    mark_targets(p, r, st, seen, n_live)
    for i in range(seen):
        show(r, st, res[i])
        if r.pair[res[i]] >= 0:
            show(r, st, r.pair[res[i]])


POLICIES = [ClearToolUses]
