"""The harness's own policy as the log records it: its compactions and condensations take effect at the recorded
request, and per-request masking (SWE-agent's last_n_observations) shows the recorded placeholders.

This is the policy ``replay fidelity`` replays: with the prompt model it should give the prompt the server
counted, request by request. Every other policy replays the run without the harness's own artifacts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replay.policies.base import Policy
from replay.policies.config import PolicyConfig
from replay.policies.view import DROPPED, ORIGINAL, PLACEHOLDER


@dataclass(frozen=True)
class RecordedConfig(PolicyConfig):
    """Replay the context events the log records (compaction, condensation, per-request placeholders)."""

    kind = "recorded"


class Recorded(Policy):
    name = "recorded"
    Config = RecordedConfig
    replays_recorded = True

    def setup(self) -> None:
        ev, r = self.run.events, self.run
        self.applied = 0
        self.order = np.argsort(ev.step, kind="stable")
        self.masked = np.zeros(0, dtype=np.int64)
        if len(ev.mask_pos):
            # a placeholder's tokens: its characters at the run's own tokens per character (the wording's text is
            # not stored, only its length)
            ratio = r.tokens.sum() / max(int(r.chars.sum()), 1)
            shown = np.zeros(r.n_items, dtype=np.int64)
            shown[ev.mask_pos] = np.ceil(ev.mask_chars * ratio).astype(np.int64)
            tok = np.minimum(shown, np.maximum(r.tokens, 1))
            self.ftok[PLACEHOLDER] = np.where(shown > 0, tok, self.ftok[PLACEHOLDER])
            chars = np.zeros(r.n_items, dtype=np.int64)
            chars[ev.mask_pos] = ev.mask_chars
            self.fest[PLACEHOLDER] = np.where(shown > 0, (chars + 3) // 4, self.fest[PLACEHOLDER])

    def stages(self):
        return [(lambda: True, self.replay)]

    def replay(self) -> None:
        ev, k = self.run.events, self.k
        while self.applied < len(self.order) and ev.step[self.order[self.applied]] <= k:
            e = int(self.order[self.applied])
            self.drop(ev.drop[e][ev.drop[e] < self.end])  # with call/result partners: the API needs both
            self.flags["summarised"] = True
            self.applied += 1
        now = ev.mask_pos[ev.mask_step == k]
        back = np.setdiff1d(self.masked, now)
        self.set_forms(back[self.forms[back] == PLACEHOLDER], ORIGINAL)
        self.set_forms(now[self.forms[now] != DROPPED], PLACEHOLDER)
        self.masked = now


POLICIES = (Recorded,)
