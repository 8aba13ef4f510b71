"""Harness auto-compact near the window (Claude Code about 167k of 200k; Codex 90%)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.policies.base import Policy
from replay.policies.config import PolicyConfig, knob
from replay.policies.view import DROPPED
from replay.simulator.arrays import KIND_CODE

PRESETS = {"claude-code": 167_000 / 200_000, "codex": 0.9}


@dataclass(frozen=True)
class AutoCompactConfig(PolicyConfig):
    """Past ``threshold`` x window, replace the history with a summary (keeping recent user messages)."""

    kind = "auto_compact"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    preset: Literal["claude-code", "codex", "custom"] = "claude-code"
    threshold: float = knob(0.0, 0.0, 1.0, "fraction of the window (0: from the preset)")
    summary_tokens: int = knob(3_000, 0, 1_000_000, "size of the compaction summary")
    keep_user_tokens: int = knob(0, 0, 10_000_000, "newest user messages kept verbatim (Codex: 20,000)")
    keep_last: int = knob(1, 1, 100_000, "newest items kept verbatim")

    def validate(self) -> None:
        if self.preset == "custom" and self.threshold <= 0:
            from replay.errors import ReplayError
            raise ReplayError("auto_compact: preset=custom needs threshold in (0, 1]")


class AutoCompact(Policy):
    name = "auto_compact"
    Config = AutoCompactConfig

    def limit(self) -> float:
        c = self.config
        return (c.threshold or PRESETS.get(c.preset, 0.9)) * self.budget.window

    def stages(self):
        return [(lambda: self.over(self.limit()), self.compact)]

    def compact(self) -> None:
        lo, start = self.prefix_end(), self.end - self.config.keep_last
        while start > lo and self.run.pair[start] >= 0 and self.run.pair[start] < start:
            start = int(self.run.pair[start])
        if start <= lo:
            return
        keep = np.zeros(self.end, dtype=bool)
        users = lo + np.flatnonzero(self.run.kind[lo:start] == KIND_CODE["user_text"])
        est = self.seg_est()
        budget = self.config.keep_user_tokens
        for p in users[::-1]:
            if est[p] > budget:
                break
            budget -= est[p]
            keep[p] = True
        drop = lo + np.flatnonzero(~keep[lo:start] & (self.forms[lo:start] != DROPPED))
        self.drop(drop)
        self.set_summary(start, self.config.summary_tokens, self.config.summary_tokens)


POLICIES = [AutoCompact]
