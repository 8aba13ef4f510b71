"""Observation masking (keep the newest M tool results, The Complexity Trap) and SWE-agent's last_n_observations.

A masked result shows a placeholder. Its tokens: the wording's characters at the run's own tokens per character
when the run has real counts (the wording is prose and the run's ratio is mostly code, so this is an
approximation: SWE-agent's 42-character placeholder is about 10 tokens with o200k), else chars/4.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.jit import compiled
from replay.policies.base import CompiledPolicy
from replay.policies.config import PolicyConfig, knob
from replay.policies.kernel import P_ESTIMATOR, P_POLICY, S_END, S_POLICY, estimate_chars, set_form
from replay.policies.space import Knob
from replay.policies.view import ORIGINAL, PLACEHOLDER
from replay.run_arrays import KIND_CODE, TOOL_RESULT, RunArrays

SWE_AGENT_WORDING = "Old environment output: ({n} lines omitted)"
USER_TEXT = KIND_CODE["user_text"]


@compiled(borrowed=True)
def token_ratio(r):
    """The run's overall real tokens per character."""
    return r.tokens.sum() / max(r.chars.sum(), 1)


@compiled(borrowed=True)
def wording_cost(r, q, chars, ratio, estimator):
    """(real, est) tokens of a placeholder wording of ``chars`` characters standing for item q: at the run's tokens
    per character ``ratio`` (chars/4 when the run's counts are estimates), never more than the item itself."""
    real = (chars + 3) // 4 if r.estimated else np.int64(np.ceil(chars * ratio))
    real = min(real, max(r.tokens[q], 1))
    if estimator == 2:
        return real, real
    return real, estimate_chars(chars, estimator)


@compiled(borrowed=True)
def digits(n):
    """Decimal digits of n >= 0 (1 for 0)."""
    d = 1
    while n >= 10:
        n //= 10
        d += 1
    return d


@dataclass(frozen=True)
class MaskingConfig(PolicyConfig):
    """Keep the newest ``keep_last`` tool results (M); replace older ones with a fixed placeholder."""

    kind = "masking"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    keep_last: int = knob(10, 0, 100_000, "M: tool results kept verbatim")
    wording: str = knob("[Old observation omitted]", doc="placeholder text")


@dataclass(frozen=True)
class LastNConfig(PolicyConfig):
    """SWE-agent last_n_observations: all but the last n observations become 'Old environment output: (N lines
    omitted)', the set growing every ``polling`` observations."""

    kind = "last_n"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    n: int = knob(5, 1, 100_000, "observations kept (SWE-agent's n)")
    polling: int = knob(1, 1, 1000, "the kept set is updated every this many observations (n to n+polling kept)")
    wording: str = knob(SWE_AGENT_WORDING, doc="placeholder ({n} = the output's lines)")


# knobs: results kept, polling (0: plain masking), wording characters (last_n: without '{n}', plus the line digits)
(P_KEEP, P_POLLING, P_WORDING_CHARS) = range(P_POLICY, P_POLICY + 3)
# scalars: results in the run, results in the history so far, the instance template is observation 0 (last_n), the
# end of the masked range when it was last applied (result index)
(S_N_RESULTS, S_SEEN, S_TEMPLATE, S_MASKED_TO) = range(S_POLICY, S_POLICY + 4)
A_RESULTS = 0  # aux row: positions of the run's tool results, in order


class Masking(CompiledPolicy):
    name = "masking"
    Config = MaskingConfig
    config: MaskingConfig  # PolicyBase.__init__ checks the instance is a Config
    space = (Knob("keep_last", 1, 30, 10, integer=True, step=1),)

    def knobs(self, p: np.ndarray, budget) -> None:
        p[P_KEEP], p[P_POLLING], p[P_WORDING_CHARS] = self.config.keep_last, 0, len(self.config.wording)


class LastN(CompiledPolicy):
    """SWE-agent counts the instance template (the first user message) as observation 0 and never elides it;
    before each query it elides observations [1, (count // polling) * polling - n) of the count so far."""

    name = "last_n"
    Config = LastNConfig
    config: LastNConfig  # PolicyBase.__init__ checks the instance is a Config
    space = (
        Knob("n", 1, 20, 5, integer=True, weight=2, step=1),
        Knob("polling", 1, 10, 1, integer=True, weight=1, step=1),
    )

    def knobs(self, p: np.ndarray, budget) -> None:
        c = self.config
        p[P_KEEP], p[P_POLLING], p[P_WORDING_CHARS] = c.n, c.polling, len(c.wording) - len("{n}")

    def wording_of(self, position: int, run: RunArrays) -> str:
        """The placeholder text shown for the item at ``position`` of ``run``."""
        return self.config.wording.format(n=int(run.lines[position]))


@compiled(borrowed=True)
def setup(p, r, st):
    """Placeholder costs (last_n: the wording with each item's line count); the results' positions; whether the
    first user message (the instance template) comes before the first result."""
    estimator, ratio = int(p[P_ESTIMATOR]), token_ratio(r)
    base, per_line = np.int64(p[P_WORDING_CHARS]), p[P_POLLING] > 0
    template, first_result, n_res = -1, -1, 0
    for q in range(len(r.kind)):
        chars = base + digits(max(r.lines[q], 0)) if per_line else base
        st.ftok[PLACEHOLDER, q], st.fest[PLACEHOLDER, q] = wording_cost(r, q, chars, ratio, estimator)
        if r.kind[q] == TOOL_RESULT:
            st.aux[A_RESULTS, n_res] = q
            n_res += 1
            if first_result < 0:
                first_result = q
        elif r.kind[q] == USER_TEXT and template < 0:
            template = q
    st.s[S_N_RESULTS] = n_res
    st.s[S_TEMPLATE] = template >= 0 and (first_result < 0 or template < first_result)


@compiled(borrowed=True)
def masked_range(p, st, seen):
    """Result indices [a, b) shown as placeholders when the history holds ``seen`` results."""
    keep = np.int64(p[P_KEEP])
    if p[P_POLLING] == 0:
        return 0, max(seen - keep, 0)
    polling = np.int64(p[P_POLLING])
    last_removed = max(0, ((seen + st.s[S_TEMPLATE]) // polling) * polling - keep)
    # observation 0 is never elided: the template when there is one, else the first result
    return (0, max(last_removed - 1, 0)) if st.s[S_TEMPLATE] else (1, last_removed)


@compiled(borrowed=True)
def decide(p, r, st):
    """When any result of the masked range is still original, the whole range shows placeholders.

    The range only grows at its end and a placeholder stays one (no one else changes a result's form but the
    driver, which drops only reasoning and prefix segments), so the part masked last time is not looked at again:
    a request's work is the results added to the range since."""
    seen, end = st.s[S_SEEN], st.s[S_END]
    while seen < st.s[S_N_RESULTS] and st.aux[A_RESULTS, seen] < end:
        seen += 1
    st.s[S_SEEN] = seen
    a, b = masked_range(p, st, seen)
    a = max(a, st.s[S_MASKED_TO])
    res = st.aux[A_RESULTS]
    for i in range(a, b):
        if st.forms[res[i]] == ORIGINAL:
            for j in range(a, b):
                set_form(st, res[j], PLACEHOLDER)
            st.s[S_MASKED_TO] = b
            return


POLICIES = [Masking, LastN]
