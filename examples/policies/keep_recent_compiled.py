"""The policy of ``keep_recent.py`` compiled: the same knobs and decisions, run by the compiled driver (fast enough
for sweeps of thousands of points). To make it a built-in: copy this file to ``replay/policies/keep_recent.py``, add
"keep_recent" to POLICY_MODULES in ``replay/policies/__init__.py`` and run ``python -m replay.policies.generate``
(tests/policies/test_examples.py does exactly that in a scratch copy of the package).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.jit import compiled
from replay.policies.base import Budget, CompiledPolicy
from replay.policies.config import PolicyConfig, knob
from replay.policies.kernel import P_POLICY, S_END, est_total, set_form
from replay.policies.space import Knob
from replay.policies.view import ORIGINAL, PLACEHOLDER
from replay.run_arrays import TOOL_RESULT


@dataclass(frozen=True)
class KeepRecentConfig(PolicyConfig):
    """Past trigger x (window - reserve) estimated tokens, every tool result but the newest ``keep`` shows a
    placeholder."""

    kind = "keep_recent"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    trigger: float = knob(0.7, 0.05, 1.0, "fires past this share of window - reserve (estimated tokens)")
    keep: int = knob(5, 0, 100_000, "newest tool results kept verbatim")
    wording: str = knob("[tool result cleared]", doc="placeholder text")


# this policy's slots of the parameter vector: the trigger in tokens, results kept, the placeholder's tokens
(P_TRIGGER, P_KEEP, P_WORDING_TOKENS) = range(P_POLICY, P_POLICY + 3)


class KeepRecent(CompiledPolicy):
    name = "keep_recent"
    Config = KeepRecentConfig
    space = (
        Knob("trigger", 0.3, 0.95, 0.7, weight=2),  # a share of window - reserve: always below it
        Knob("keep", 1, 20, 5, integer=True, step=1),
    )

    def knobs(self, p: np.ndarray, budget: Budget) -> None:
        c = self.config
        p[P_TRIGGER], p[P_KEEP], p[P_WORDING_TOKENS] = c.trigger * budget.usable, c.keep, (len(c.wording) + 3) // 4


@compiled
def setup(p, r, st):
    """A placeholder costs its wording at chars/4, never more than the item it stands for."""
    wording = np.int64(p[P_WORDING_TOKENS])
    for q in range(len(r.kind)):
        cost = min(wording, r.tokens[q])
        st.ftok[PLACEHOLDER, q], st.fest[PLACEHOLDER, q] = cost, cost


@compiled
def decide(p, r, st):
    """Past the trigger, walk back from the newest item; results beyond the newest ``keep`` take the placeholder."""
    if not est_total(st) > p[P_TRIGGER]:
        return
    keep, seen = np.int64(p[P_KEEP]), 0
    for q in range(st.s[S_END] - 1, -1, -1):
        if r.kind[q] == TOOL_RESULT:
            seen += 1
            if (seen > keep) & (st.forms[q] == ORIGINAL):
                set_form(st, q, PLACEHOLDER)


POLICIES = [KeepRecent]
