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
from replay.policies.base import Policy
from replay.policies.config import PolicyConfig, knob
from replay.policies.masking import wording_tokens
from replay.policies.view import DROPPED, ORIGINAL, PLACEHOLDER, SHRUNK
from replay.simulator.arrays import TOOL_CALL

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


class ClearToolUses(Policy):
    name = "clear_tool_uses"
    Config = ClearToolUsesConfig

    def setup(self) -> None:
        r, c = self.run, self.config
        est = c.estimator
        self.define(PLACEHOLDER, *wording_tokens(r, np.full(r.n_items, len(CLEARED)), est))
        self.define(SHRUNK, *wording_tokens(r, np.full(r.n_items, len(CLEARED_INPUT)), est))
        self.excluded = self.by_tool(c.exclude_tools)
        inputs = c.clear_tool_inputs
        every = np.ones(r.n_items, dtype=bool)
        self.clear_input = every if inputs is True else (self.by_tool(inputs) if inputs else ~every)
        self.cleared = np.zeros(0, dtype=np.int64)

    def by_tool(self, names: tuple[str, ...]) -> np.ndarray:
        """Items (calls and their results) of the named tools."""
        r = self.run
        ids = [i for i, n in enumerate(r.tool_names) if n in set(names)]
        out = np.isin(r.tool, ids) if ids else np.zeros(r.n_items, dtype=bool)
        calls = np.flatnonzero((r.kind == TOOL_CALL) & (r.pair >= 0))
        out[r.pair[calls]] |= out[calls]
        return out

    def stages(self):
        return [(lambda: True, self.apply)]  # the server decides afresh on every request

    def past_trigger(self, results: np.ndarray) -> bool:
        c = self.config
        if c.trigger_type == "tool_uses":
            return len(results) > c.trigger
        live = self.forms[:self.end] != DROPPED
        return int(self.fest[ORIGINAL, :self.end][live].sum()) > c.trigger

    def apply(self) -> None:
        res = self.results()
        res = res[self.forms[res] != DROPPED]
        target = np.zeros(0, dtype=np.int64)
        if self.past_trigger(res):
            old = res[:max(len(res) - self.config.keep, 0)]
            old = old[~self.excluded[old]]
            calls = self.run.pair[old]
            calls = calls[(calls >= 0) & self.clear_input[np.maximum(calls, 0)]]
            freed = int((self.fest[ORIGINAL, old] - self.fest[PLACEHOLDER, old]).clip(0).sum())
            freed += int((self.fest[ORIGINAL, calls] - self.fest[SHRUNK, calls]).clip(0).sum())
            if len(old) and freed >= self.config.clear_at_least:
                target = np.concatenate([old, calls])
        back = np.setdiff1d(self.cleared, target)
        self.set_forms(back[self.forms[back] != DROPPED], ORIGINAL)
        kinds = self.run.kind[target]
        self.set_forms(target[kinds != TOOL_CALL], PLACEHOLDER)
        self.set_forms(target[kinds == TOOL_CALL], SHRUNK)
        self.cleared = target


POLICIES = [ClearToolUses]
