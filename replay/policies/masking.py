"""Observation masking (window M, Complexity Trap) and SWE-agent's last-N observations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.policies.base import Policy, text_cost
from replay.policies.config import PolicyConfig, knob
from replay.policies.view import ORIGINAL, PLACEHOLDER


@dataclass(frozen=True)
class MaskingConfig(PolicyConfig):
    """Keep the newest ``window`` tool results; replace older ones with a fixed placeholder."""

    kind = "masking"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    window: int = knob(10, 0, 100_000, "tool results kept verbatim (M)")
    wording: str = knob("[Old observation omitted]", doc="placeholder text")


class Masking(Policy):
    name = "masking"
    Config = MaskingConfig

    def setup(self) -> None:
        zero = np.zeros_like(self.run.chars)
        self.define(PLACEHOLDER, *text_cost(self.run, zero, self.wording_chars(), self.config.estimator))

    def wording_chars(self) -> int | np.ndarray:
        return len(self.config.wording)

    def stages(self):
        return [(self.due, self.decide)]

    def old(self) -> np.ndarray:
        res = self.results()
        return res[:max(len(res) - self.config.window, 0)]

    def due(self) -> bool:
        old = self.old()
        return bool(len(old)) and bool((self.forms[old] == ORIGINAL).any())

    def decide(self) -> None:
        self.set_forms(self.old(), PLACEHOLDER)


@dataclass(frozen=True)
class LastNConfig(PolicyConfig):
    """SWE-agent last_n_observations: old outputs become 'Old environment output: (N lines omitted)'."""

    kind = "last_n"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    window: int = knob(5, 0, 100_000, "n: observations kept")
    polling: int = knob(1, 1, 1000, "re-apply every this many steps")
    wording: str = knob("Old environment output: ({n} lines omitted)", doc="placeholder ({n} = lines)")


class LastN(Masking):
    name = "last_n"
    Config = LastNConfig

    def wording_chars(self) -> np.ndarray:
        digits = np.floor(np.log10(np.maximum(self.run.lines, 1))).astype(np.int64) + 1
        return len(self.config.wording) - 3 + digits

    def due(self) -> bool:
        return self.k % self.config.polling == 0 and super().due()


POLICIES = [Masking, LastN]
