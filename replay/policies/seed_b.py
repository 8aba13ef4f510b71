"""Seed policy B: a sectioned budget, window - reply reserve, rebuilt before every request.

Sections mapped onto RunArrays (kinds from replay.model.KINDS; a turn is the items sharing ``run.turn``, which
readers advance at each user message; the current turn is the turn of the newest item):

==================  ============================================================================  ==========
section             items                                                                         evicted
==================  ============================================================================  ==========
system              ``system``                                                                    never
memory              ``attachment`` whose tool name mentions memory (Claude Code nested_memory)    never
tools               ``tool_defs``                                                                 never
new message         ``user_text`` and ``image`` of the current turn                               never
attachments         every other ``attachment``                                                    4th: fair shares
summary             the policy's rolling summary of dropped turns (one segment)                   3rd
carried context     ``summary`` items in the log (context carried over from an earlier session)   2nd
history             every other item of the turns before the current one                          1st: whole turns
current tool loop   calls, results, assistant text and reasoning of the current turn              5th: markers
==================  ============================================================================  ==========

Every request: the last ``tool_turns`` tool turns (a tool turn is the results appended before one request) are
rebuilt as call/result pairs with each result capped at ``tool_cap`` tokens (SHRUNK); older results become
markers (OMITTED, the call kept) unless ``older_results=keep``. Then, only while the estimate exceeds the budget,
evict in order: oldest whole history turns (never leaving the kept history starting on an assistant turn, i.e. a
turn whose first item is model output), folding them into the rolling summary (``summary_tokens``, at most what
it replaces); carried context, oldest first; the summary; attachments trimmed to max-min fair shares (each at
most once; a trimmed one that still exceeds a later share becomes a marker); finally in-turn omission of the
oldest results with markers, pairing kept. The newest output is never shortened (the workbench invariant).
From request ``failover_at_request`` the budget is ``failover_window`` - reserve when that window is smaller
(failover onto a smaller model), so the next view is re-fitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.policies.base import Policy, text_cost
from replay.policies.config import PolicyConfig, knob
from replay.policies.view import DROPPED, OMITTED, ORIGINAL, SHRUNK
from replay.simulator.arrays import KIND_CODE, TOOL_CALL

MARKER = "[Output of {tool} call {call_id} omitted]"
CAPPED = "[... output capped at {cap} tokens]"
PREFIX, MEMORY, ATTACH, CARRIED, TEXT, OTHER = range(6)
ASSISTANT = np.array([KIND_CODE[k] for k in ("assistant_text", "reasoning", "tool_call", "tool_result")])


@dataclass(frozen=True)
class SeedBConfig(PolicyConfig):
    """Seed policy B."""

    kind = "seed_b"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    tool_turns: int = knob(3, 0, 100_000, "newest tool turns rebuilt as call/result pairs")
    tool_cap: int = knob(1_500, 0, 10_000_000, "cap per rebuilt result, tokens (0: no cap)")
    older_results: Literal["omit", "keep"] = knob("omit", doc="results older than the rebuilt tool turns: "
                                                   "markers every request (omit) or only when over budget (keep)")
    summary_tokens: int = knob(1_000, 0, 1_000_000, "rolling summary of dropped turns, tokens")
    marker: str = knob(MARKER, doc="marker for an omitted result ({tool}, {call_id})")
    failover_window: int = knob(0, 0, 100_000_000, "window after failover, tokens (0: no failover)")
    failover_at_request: int = knob(0, 0, 100_000_000, "first request served on the failover window")


class SeedB(Policy):
    name = "seed_b"
    Config = SeedBConfig

    def setup(self) -> None:
        c, r = self.config, self.run
        zero = np.zeros_like(r.chars)
        self.define(OMITTED, *text_cost(r, zero, len(c.marker) + 16, c.estimator))
        if c.tool_cap > 0:
            kept = np.ceil(c.tool_cap * r.chars / np.maximum(r.tokens, 1)).astype(np.int64)
            self.define(SHRUNK, *text_cost(r, kept, len(CAPPED), c.estimator))
        sec = np.full(r.n_items, OTHER, dtype=np.int8)
        sec[np.isin(r.kind, (KIND_CODE["system"], KIND_CODE["tool_defs"]))] = PREFIX
        sec[np.isin(r.kind, (KIND_CODE["user_text"], KIND_CODE["image"]))] = TEXT
        sec[r.kind == KIND_CODE["summary"]] = CARRIED
        att = r.kind == KIND_CODE["attachment"]
        memory = [i for i, n in enumerate(r.tool_names) if "memory" in n.lower()]
        sec[att] = ATTACH
        sec[att & np.isin(r.tool, memory)] = MEMORY
        self.section = sec
        self.folded = 0

    def stages(self):
        return [(lambda: self.end > 0, self.rebuild), (self.over_budget, self.fit)]

    def limit(self) -> int:
        c, b = self.config, self.budget
        window = b.window
        if c.failover_window and self.k >= c.failover_at_request:
            window = min(window, c.failover_window)
        return window - b.reserve

    def over_budget(self) -> bool:
        return self.over(self.limit())

    def newest(self) -> int:
        res = self.results()
        return int(res[-1]) if len(res) else -1

    def current_turn(self) -> int:
        """First position of the current turn."""
        return int(np.searchsorted(self.run.turn[:self.end], self.run.turn[self.end - 1], side="left"))

    # -- every request -------------------------------------------------------------------------
    def rebuild(self) -> None:
        res = self.results(self.prefix_end())
        if not len(res):
            return
        steps = np.unique(self.run.step[res])  # a tool turn: the results appended before one request
        first = steps[max(len(steps) - self.config.tool_turns, 0)] if self.config.tool_turns else np.inf
        res = res[(res != res[-1]) & (self.forms[res] != DROPPED)]
        recent, older = res[self.run.step[res] >= first], res[self.run.step[res] < first]
        if self.config.tool_cap > 0:
            cap = recent[(self.forms[recent] == ORIGINAL) & (self.fest[SHRUNK, recent] < self.fest[ORIGINAL, recent])]
            self.set_forms(cap, SHRUNK)
        if self.config.older_results == "omit":
            self.omit(older, np.inf)

    def omit(self, cand: np.ndarray, need: float) -> None:
        """Markers for ``cand`` oldest first, as many as needed to save ``need`` (inf: all that save)."""
        cand = cand[np.isin(self.forms[cand], (ORIGINAL, SHRUNK))]
        gain = self.seg_est()[cand] - self.fest[OMITTED, cand]
        cand, gain = cand[gain > 0], gain[gain > 0]
        if np.isfinite(need):
            upto = int(np.searchsorted(np.cumsum(gain), need, side="left")) + 1
            cand = cand[:upto]
        self.set_forms(cand, OMITTED)

    # -- only when over budget -----------------------------------------------------------------
    def excess(self) -> int:
        return self.est_total() - self.limit()

    def fit(self) -> None:
        lo, cs = self.prefix_end(), self.current_turn()
        self.evict_turns(lo, cs)
        live = lo + np.flatnonzero(self.forms[lo:self.end] != DROPPED)
        for p in live[self.section[live] == CARRIED]:
            if self.excess() <= 0:
                break
            self.set_forms(np.array([p]), DROPPED)
        if self.excess() > 0 and self.summary_at >= 0:
            self.dirty = min(self.dirty, self.summary_at)
            self.summary_at, self.summary_tokens, self.summary_est = -1, 0, 0
            self.folded = 0
        if self.excess() > 0:
            self.fair_share(live[self.section[live] == ATTACH])
        if self.excess() > 0:
            self.flags["emergency"] = True
            res = self.results(lo)
            self.omit(res[res != self.newest()], self.excess())

    def history(self, lo: int, cs: int) -> np.ndarray:
        pos = lo + np.flatnonzero(self.forms[lo:cs] != DROPPED)
        pos = pos[np.isin(self.section[pos], (TEXT, OTHER))]
        partner = self.run.pair[pos]
        return pos[~((partner >= cs) & (self.run.kind[pos] == TOOL_CALL))]  # a call answered in the current turn

    def evict_turns(self, lo: int, cs: int) -> None:
        """Drop oldest whole turns until the estimate (with the grown summary) fits; never start on an assistant."""
        folded, base = self.folded, (self.summary_est if self.summary_at >= 0 else 0)
        while True:
            hist = self.history(lo, cs)
            if not len(hist):
                break
            grown = min(self.config.summary_tokens, folded) - base
            assistant_first = folded > self.folded and bool(np.isin(self.run.kind[hist[0]], ASSISTANT))
            if self.excess() + grown <= 0 and not assistant_first:
                break
            turn = hist[self.run.turn[hist] == self.run.turn[hist[0]]]
            folded += int(self.seg_est()[turn].sum())
            self.drop(turn)
        if folded > self.folded:
            self.folded = folded
            hist = self.history(lo, cs)
            size = min(self.config.summary_tokens, folded)
            self.set_summary(self.safe(int(hist[0]) if len(hist) else cs), size, size)

    def safe(self, at: int) -> int:
        """Move a summary position back until no live call/result pair straddles it."""
        pair = self.run.pair
        while True:
            before = np.flatnonzero((self.forms[:at] != DROPPED) & (pair[:at] >= at))
            if not len(before):
                return at
            at = int(before.min())

    def fair_share(self, att: np.ndarray) -> None:
        """Trim attachments to max-min fair shares of what the other sections leave."""
        if not len(att):
            return
        cur = self.seg_est()[att]
        avail = max(int(cur.sum()) - self.excess(), 0)
        srt = np.sort(cur)
        below = np.concatenate([[0], np.cumsum(srt)[:-1]])
        over = below + srt * (len(srt) - np.arange(len(srt))) > avail
        i = int(np.argmax(over)) if over.any() else len(srt)
        share = int((avail - below[i]) // (len(srt) - i)) if i < len(srt) else int(srt[-1])
        big = att[cur > share]
        again = big[self.forms[big] == SHRUNK]  # trimmed before: a second cut is a marker
        fresh = big[self.forms[big] == ORIGINAL]
        ratio = self.ftok[ORIGINAL, fresh] / np.maximum(self.fest[ORIGINAL, fresh], 1)
        self.ftok[SHRUNK, fresh] = np.minimum(np.ceil(share * ratio).astype(np.int64), self.ftok[ORIGINAL, fresh])
        self.fest[SHRUNK, fresh] = share
        self.set_forms(fresh, SHRUNK)
        self.set_forms(again, OMITTED)

POLICIES = [SeedB]
