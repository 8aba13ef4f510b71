"""Harness auto-compaction: past a token limit, the conversation is replaced by a summary.

The limit is ``threshold x (W - output_reserve) - buffer_tokens`` where W is ``context_window`` (0: the budget
window; for a Codex log give its ``model_context_window`` as the window, as ``replay fidelity`` does).
The presets in :mod:`replay.policies.presets` set these knobs per harness and version:

- Claude Code 1.0.x: 0.92 x (200,000 - 32,000) = 154,560, checked against the previous request's prompt
  (input + cache read + cache write of the last response); the whole conversation is summarised and the files
  it read or wrote are re-attached after the summary (``reattach_tokens``; about 10.8k in the corpus run).
- Claude Code 2.x: 200,000 - 20,000 (output) - 13,000 (buffer) = 167,000.
- Codex: the last response's total plus the items added since (the prompt about to be sent) against a fraction
  of ``model_context_window``; the summary is followed by the newest user messages up to 20,000 tokens (the
  oldest kept one truncated to fit), as codex-rs ``build_compacted_history`` does.

Recorded harness artefacts in the run (a ``summary`` item and the attachments / user messages the harness
re-sent with it, same step, after it; the loader's ``recorded_only`` items) are never part of this policy's
view: the simulated compaction replaces them. ``summary_from_log`` sizes the n-th simulated summary like the
n-th recorded one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.policies.base import Policy
from replay.policies.config import PolicyConfig, knob
from replay.policies.view import DROPPED, ORIGINAL, SHRUNK
from replay.simulator.arrays import ACCESS_CODE, KIND_CODE, RunArrays

SUMMARY, ATTACHMENT, USER = KIND_CODE["summary"], KIND_CODE["attachment"], KIND_CODE["user_text"]
FILE_ACCESS = (ACCESS_CODE["read"], ACCESS_CODE["write"])


def harness_artefacts(run: RunArrays) -> np.ndarray:
    """Positions of recorded summaries and of what the harness re-sent with them (attachments and user messages of
    the same step, after the summary): products of the recorded policy, not of the agent."""
    out = np.zeros(run.n_items, dtype=bool)
    for s in np.flatnonzero(run.kind == SUMMARY):
        out[s] = True
        p = s + 1
        while p < run.n_items and run.step[p] == run.step[s] and run.kind[p] in (ATTACHMENT, USER, SUMMARY):
            out[p] = True
            p += 1
    return out


@dataclass(frozen=True)
class AutoCompactConfig(PolicyConfig):
    """Past threshold x (window - output_reserve) - buffer_tokens, replace the history with a summary."""

    kind = "auto_compact"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    threshold: float = knob(0.835, 0.0, 1.0, "fraction of (window - output_reserve) that triggers (>0)")
    output_reserve: int = knob(0, 0, 10_000_000, "tokens taken off the window before the fraction (max output)")
    buffer_tokens: int = knob(0, 0, 10_000_000, "tokens taken off after the fraction (Claude Code 2.x: 13,000)")
    context_window: int = knob(0, 0, 100_000_000, "window the limit is taken of (0: the budget window)")
    trigger_on: Literal["prompt", "previous_prompt"] = knob(
        "prompt", doc="prompt: the history about to be sent (Codex); previous_prompt: the last request's prompt "
                      "(Claude Code's last-response usage)")
    summary_tokens: int = knob(3_000, 0, 1_000_000, "size of the compaction summary")
    summary_from_log: bool = knob(False, doc="size the n-th summary like the run's n-th recorded summary "
                                             "(the knob past the last)")
    keep_user_tokens: int = knob(0, 0, 10_000_000, "newest user messages kept after the summary (Codex: 20,000)")
    keep_last: int = knob(1, 0, 100_000, "newest items kept verbatim (the presets: 0, all is summarised)")
    reattach_tokens: int = knob(0, 0, 10_000_000, "tokens of the files re-attached after the summary when the "
                                                   "summarised part read or wrote a file (Claude Code)")

    def validate(self) -> None:
        if self.threshold <= 0:
            from replay.errors import ReplayError
            raise ReplayError("auto_compact: threshold must be in (0, 1]")


class AutoCompact(Policy):
    name = "auto_compact"
    Config = AutoCompactConfig

    def setup(self) -> None:
        r = self.run
        self.set_forms(np.flatnonzero(harness_artefacts(r) | r.events.recorded_only), DROPPED)
        self.recorded_summaries = r.tokens[r.kind == SUMMARY] if self.config.summary_from_log else r.tokens[:0]
        self.compactions = 0
        self.sent_est = 0  # estimate of the previous request's prompt
        c = self.config
        window = c.context_window or self.budget.window
        self.limit = c.threshold * (window - c.output_reserve) - c.buffer_tokens

    def step(self, k: int):
        view = super().step(k)
        self.sent_est = view.est_tokens
        return view

    def due(self) -> bool:
        if self.config.trigger_on == "previous_prompt":
            return self.k > 0 and self.sent_est > self.limit
        return self.over(self.limit)

    def stages(self):
        return [(self.due, self.compact)]

    def summary_size(self) -> int:
        n = self.compactions
        if n < len(self.recorded_summaries):
            return int(self.recorded_summaries[n])
        return self.config.summary_tokens

    def compact(self) -> None:
        lo = self.prefix_end()
        start = self.pair_safe_start(max(self.end - self.config.keep_last, lo))
        live = lo + np.flatnonzero(self.forms[lo:start] != DROPPED)
        if not len(live):
            return
        kept, shrunk = self.kept_users(live)
        gone = np.setdiff1d(live, kept)
        reattach = self.reattached(gone)
        self.drop(gone)
        self.set_forms(kept[kept != shrunk], ORIGINAL)
        if shrunk >= 0:
            self.set_forms(np.array([shrunk]), SHRUNK)
        size = self.summary_size()
        self.compactions += 1
        # the summary (and the files re-attached with it) stands before the kept user messages: codex-rs puts the
        # kept user messages first, then the summary; the difference is order only, the tokens are the same
        self.set_summary(int(kept[0]) if len(kept) else start, size + reattach, size + reattach)

    def kept_users(self, live: np.ndarray) -> tuple[np.ndarray, int]:
        """Newest user messages within keep_user_tokens (the oldest kept one truncated to fit), and the truncated one
        (-1: none)."""
        budget = self.config.keep_user_tokens
        users = live[self.run.kind[live] == USER]
        if budget <= 0 or not len(users):
            return users[:0], -1
        est = self.fest[ORIGINAL]
        kept: list[int] = []
        shrunk = -1
        for p in users[::-1]:
            if est[p] <= budget:
                kept.append(int(p))
                budget -= int(est[p])
                continue
            if budget > 0:
                ratio = self.ftok[ORIGINAL, p] / max(int(est[p]), 1)
                self.ftok[SHRUNK, p] = min(int(np.ceil(budget * ratio)), int(self.ftok[ORIGINAL, p]))
                self.fest[SHRUNK, p] = budget
                kept.append(int(p))
                shrunk = int(p)
            break
        return np.array(sorted(kept), dtype=np.int64), shrunk

    def reattached(self, gone: np.ndarray) -> int:
        """Tokens re-attached after the summary: ``reattach_tokens`` when the summarised part read or wrote a file
        (Claude Code re-reads the newest files from disk, so their size is not the logged results'), else 0."""
        r = self.run
        touched = (r.resource[gone] >= 0) & np.isin(r.access[gone], FILE_ACCESS)
        return self.config.reattach_tokens if touched.any() else 0


POLICIES = [AutoCompact]
