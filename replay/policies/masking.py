"""Observation masking (keep the newest M tool results, The Complexity Trap) and SWE-agent's last_n_observations.

A masked result shows a placeholder. Its tokens: the wording's characters at the run's own tokens per character
when the run has real counts (the wording is prose and the run's ratio is mostly code, so this is an
approximation: SWE-agent's 42-character placeholder is about 10 tokens with o200k), else chars/4.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.policies.base import Policy
from replay.policies.config import PolicyConfig, knob
from replay.policies.view import ORIGINAL, PLACEHOLDER
from replay.simulator.arrays import KIND_CODE, RunArrays, chars4

SWE_AGENT_WORDING = "Old environment output: ({n} lines omitted)"


def wording_tokens(run: RunArrays, chars: np.ndarray, estimator: str) -> tuple[np.ndarray, np.ndarray]:
    """(real, est) tokens of placeholder wordings of ``chars`` characters, never more than the item itself."""
    chars = np.asarray(chars, dtype=np.int64)
    if run.estimated:
        real = chars4(chars)
    else:
        ratio = run.tokens.sum() / max(int(run.chars.sum()), 1)
        real = np.ceil(chars * ratio).astype(np.int64)
    real = np.minimum(real, np.maximum(run.tokens, 1))
    if estimator == "real":
        return real, real.copy()
    est = chars4(chars) if estimator == "chars/4" else (chars + 2) // 3
    return real, est


@dataclass(frozen=True)
class MaskingConfig(PolicyConfig):
    """Keep the newest ``keep_last`` tool results (M); replace older ones with a fixed placeholder."""

    kind = "masking"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    keep_last: int = knob(10, 0, 100_000, "M: tool results kept verbatim")
    wording: str = knob("[Old observation omitted]", doc="placeholder text")


class Masking(Policy):
    name = "masking"
    Config = MaskingConfig

    def setup(self) -> None:
        self.define(PLACEHOLDER, *wording_tokens(self.run, self.wording_chars(), self.config.estimator))

    def wording_chars(self) -> np.ndarray:
        return np.full(self.run.n_items, len(self.config.wording), dtype=np.int64)

    def stages(self):
        return [(self.due, self.decide)]

    def masked_count(self, n_results: int) -> int:
        return max(n_results - self.config.keep_last, 0)

    def old(self) -> np.ndarray:
        res = self.results()
        return res[:self.masked_count(len(res))]

    def due(self) -> bool:
        old = self.old()
        return bool(len(old)) and bool((self.forms[old] == ORIGINAL).any())

    def decide(self) -> None:
        self.set_forms(self.old(), PLACEHOLDER)


@dataclass(frozen=True)
class LastNConfig(PolicyConfig):
    """SWE-agent last_n_observations: all but the last n observations become 'Old environment output: (N lines
    omitted)', the set growing every ``polling`` observations."""

    kind = "last_n"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    n: int = knob(5, 1, 100_000, "observations kept (SWE-agent's n)")
    polling: int = knob(1, 1, 1000, "the kept set is updated every this many observations (n to n+polling kept)")
    wording: str = knob(SWE_AGENT_WORDING, doc="placeholder ({n} = the output's lines)")


class LastN(Masking):
    """SWE-agent counts the instance template (the first user message) as observation 0 and never elides it;
    before each query it elides observations [1, (count // polling) * polling - n) of the count so far."""

    name = "last_n"
    Config = LastNConfig

    def setup(self) -> None:
        super().setup()
        r = self.run
        body = np.flatnonzero(~np.isin(r.kind, (KIND_CODE["system"], KIND_CODE["tool_defs"])))
        first_user = body[r.kind[body] == KIND_CODE["user_text"]][:1]
        first_result = self.results(0, r.n_items)[:1]
        self.template = int(len(first_user) and (not len(first_result) or first_user[0] < first_result[0]))

    def wording_chars(self) -> np.ndarray:
        lines = np.maximum(self.run.lines.astype(np.int64), 0)
        digits = np.where(lines > 0, np.floor(np.log10(np.maximum(lines, 1))).astype(np.int64) + 1, 1)
        return len(self.config.wording) - len("{n}") + digits

    def old(self) -> np.ndarray:
        c, res = self.config, self.results()
        observations = len(res) + self.template
        last_removed = max(0, (observations // c.polling) * c.polling - c.n)
        # observation 0 is never elided: the template when there is one, else the first result
        return res[:max(last_removed - 1, 0)] if self.template else res[1:last_removed]

    def wording_of(self, position: int) -> str:
        """The placeholder text shown for the item at ``position``."""
        return self.config.wording.format(n=int(self.run.lines[position]))


POLICIES = [Masking, LastN]
