"""Seed policy B: a sectioned budget, window - reply reserve, rebuilt before every request (as seed write-up 002).

Sections mapped onto RunArrays (kinds from replay.model.KINDS; a turn is the items sharing ``run.turn``, which
readers advance at each user message; the current turn is the turn of the newest item):

==================  ============================================================================  ==========
section             items                                                                         evicted
==================  ============================================================================  ==========
system              ``system``                                                                    never
memory              ``attachment`` whose tool name mentions memory (Claude Code nested_memory)    never
tools               ``tool_defs``                                                                 never
new message         ``user_text`` and ``image`` of the current turn                               never
attachments         other ``attachment`` items of the current turn                                4th: fair shares
summary             the policy's rolling summary of dropped turns (one segment)                   3rd
carried context     ``summary`` items in the log and attachments carried from earlier turns       2nd
history             every other item of the turns before the current one                          1st: whole turns
current tool loop   calls, results, assistant text and reasoning of the current turn              5th: markers
==================  ============================================================================  ==========

History is rebuilt every request: of the history turns that used tools, the last ``tool_turns`` keep their
call/result pairs with each result capped at ``tool_cap`` tokens; older ones keep their calls with a marker for
each result (``older_results=keep`` leaves them whole). The current turn is not touched while it fits.

Only when the estimate exceeds the budget, sections are evicted in the written order: oldest whole history turns
(never leaving the kept history starting on an assistant turn, i.e. a turn whose first item is model output),
folded into the rolling summary (``summary_tokens``, at most what it replaces); carried context, oldest first;
the summary; attachments of the current turn trimmed to max-min fair shares; then in-turn omission: results of
the current turn, oldest first, become markers (their calls kept), only as many as needed, never the newest
step's results (parallel siblings included); last, those newest results are shortened to fair shares of what is
left. Turn eviction is durable (the summary rolls); trims and markers are a request-time view, recomputed every
request, so they go when room returns, and the cache is charged only from the first position that changed.

``rebuild=every_request`` restores the earlier per-request marking: caps on the results of the last ``tool_turns``
requests and markers on all older results, current turn included, on every request, budget or not.

Failover: from request ``failover_at_request`` the model serving the request has ``failover_window`` tokens
(when smaller); the budget is that window - reserve, and the view carries the window so that overflow is judged
against the model that serves the request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.policies.base import Policy, text_cost
from replay.policies.config import PolicyConfig, knob
from replay.policies.request_view import RequestTime
from replay.policies.view import DROPPED, OMITTED, ORIGINAL, SHRUNK, SPILLED
from replay.simulator.arrays import KIND_CODE, TOOL_CALL

MARKER = "[Output of {tool} call {call_id} omitted]"
CAPPED = "[... output capped at {cap} tokens]"
PREFIX, MEMORY, ATTACH, CARRIED, TEXT, OTHER = range(6)
ASSISTANT = np.array([KIND_CODE[k] for k in ("assistant_text", "reasoning", "tool_call", "tool_result")])
SHORT = (SHRUNK, SPILLED)  # two renderings of a shortened item, so that a new length is always a new segment


@dataclass(frozen=True)
class SeedBConfig(PolicyConfig):
    """Seed policy B."""

    kind = "seed_b"
    estimator: Literal["chars/4", "chars/3", "real"] = "chars/4"
    tool_turns: int = knob(3, 0, 100_000, "newest history turns that used tools rebuilt as call/result pairs")
    tool_cap: int = knob(1_500, 0, 10_000_000, "cap per rebuilt result, tokens (0: no cap)")
    older_results: Literal["omit", "keep"] = knob("omit", doc="results of older tool turns: markers (omit) or whole")
    rebuild: Literal["history", "every_request"] = knob(
        "history", doc="history: caps and markers on the turns before the current one (the design); every_request: "
                       "on the last tool_turns requests' results and older ones every request, current turn included")
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
        self.cap_tok, self.cap_est = self.ftok[ORIGINAL].copy(), self.fest[ORIGINAL].copy()
        if c.tool_cap > 0:
            kept = np.ceil(c.tool_cap * r.chars / np.maximum(r.tokens, 1)).astype(np.int64)
            self.cap_tok, self.cap_est = text_cost(r, kept, len(CAPPED), c.estimator)
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
        self.before = self.forms.copy()

    def stages(self):
        return [(lambda: self.end > 0, self.request)]

    def window(self) -> int:
        """The window of the model serving this request."""
        c, w = self.config, self.budget.window
        return min(w, c.failover_window) if c.failover_window and self.k >= c.failover_at_request else w

    def limit(self) -> int:
        return self.window() - self.budget.reserve

    def excess(self) -> int:
        return self.est_total() - self.limit()

    def current_turn(self) -> int:
        """First position of the current turn."""
        return int(np.searchsorted(self.run.turn[:self.end], self.run.turn[self.end - 1], side="left"))

    def sections(self, cs: int) -> np.ndarray:
        """Section per position for this request: attachments from earlier turns are carried context."""
        sec = self.section[:self.end].copy()
        sec[:cs][sec[:cs] == ATTACH] = CARRIED
        return sec

    # -- every request -------------------------------------------------------------------------
    def request(self) -> None:
        self.flags["window"] = self.window()
        with RequestTime(self):
            self.before = self.forms.copy()
            live = self.forms[:self.end] != DROPPED
            self.forms[:self.end][live] = ORIGINAL  # trims and markers are recomputed: a request-time view
            lo, cs = self.prefix_end(), self.current_turn()
            if self.config.rebuild == "history":
                self.rebuild_history(lo, cs)
            else:
                self.rebuild_every_request(lo)
            if self.excess() > 0:
                self.fit(lo, cs)

    def shorten(self, pos: np.ndarray, tok: np.ndarray, est: np.ndarray) -> None:
        """Shorten ``pos`` to (tok, est) each. An item already shortened in the previous view keeps that version if
        it is no longer; else the new length takes the other rendering, so a changed item is a changed segment."""
        if not len(pos):
            return
        prev = self.before[pos]
        was = np.isin(prev, SHORT)
        keep = was & (self.fest[prev, pos] <= est)
        self.forms[pos[keep]] = prev[keep]  # forms change freely here: RequestTime charges the real differences
        form = np.where(prev == SHRUNK, SPILLED, SHRUNK)[~keep]
        p, t, e = pos[~keep], tok[~keep], est[~keep]
        self.ftok[form, p], self.fest[form, p] = np.minimum(t, self.ftok[ORIGINAL, p]), e
        self.forms[p] = form

    def cap(self, res: np.ndarray) -> None:
        """Results capped at ``tool_cap`` (those already below it stay whole)."""
        if self.config.tool_cap > 0:
            res = res[self.cap_est[res] < self.fest[ORIGINAL, res]]
            self.shorten(res, self.cap_tok[res], self.cap_est[res])

    def omit(self, cand: np.ndarray, need: float) -> None:
        """Markers for ``cand`` oldest first, as many as needed to save ``need`` (inf: all that save)."""
        cand = cand[self.forms[cand] != DROPPED]
        gain = self.seg_est()[cand] - self.fest[OMITTED, cand]
        cand, gain = cand[gain > 0], gain[gain > 0]
        if np.isfinite(need):
            upto = int(np.searchsorted(np.cumsum(gain), need, side="left")) + 1
            cand = cand[:upto]
        self.set_forms(cand, OMITTED)

    def rebuild_history(self, lo: int, cs: int) -> None:
        """The last ``tool_turns`` history turns that used tools: results capped; older tool turns: markers."""
        res = self.results(lo, cs)
        res = res[self.forms[res] != DROPPED]
        if not len(res):
            return
        turns = np.unique(self.run.turn[res])
        first = turns[max(len(turns) - self.config.tool_turns, 0)] if self.config.tool_turns else np.inf
        recent, older = res[self.run.turn[res] >= first], res[self.run.turn[res] < first]
        self.cap(recent)
        if self.config.older_results == "omit":
            self.omit(older, np.inf)

    def rebuild_every_request(self, lo: int) -> None:
        """The earlier marking: the last ``tool_turns`` requests' results capped, older results marked (or, with
        ``older_results=keep``, left capped), every request and in the current turn too; only the newest result is
        left whole."""
        res = self.results(lo)
        if not len(res):
            return
        steps = np.unique(self.run.step[res])
        first = steps[max(len(steps) - self.config.tool_turns, 0)] if self.config.tool_turns else np.inf
        res = res[(res != res[-1]) & (self.forms[res] != DROPPED)]
        recent, older = res[self.run.step[res] >= first], res[self.run.step[res] < first]
        if self.config.older_results == "omit":
            self.cap(recent)
            self.omit(older, np.inf)
        else:  # an older result was capped while it was recent, and stays so
            self.cap(res if self.config.tool_turns else recent)

    # -- only when over budget -----------------------------------------------------------------
    def fit(self, lo: int, cs: int) -> None:
        self.evict_turns(lo, cs)
        sec = self.sections(cs)
        live = lo + np.flatnonzero(self.forms[lo:self.end] != DROPPED)
        for p in live[sec[live] == CARRIED]:
            if self.excess() <= 0:
                return
            self.set_forms(np.array([p]), DROPPED)
        if self.excess() > 0 and self.summary_at >= 0:
            self.dirty = min(self.dirty, self.summary_at)
            self.summary_at, self.summary_tokens, self.summary_est = -1, 0, 0
            self.folded = 0
        if self.excess() > 0:
            self.fair_share(live[sec[live] == ATTACH])
        if self.excess() > 0:
            self.flags["emergency"] = True
            res = self.results(max(lo, cs))
            newest = self.newest_step(res)
            self.omit(res[~np.isin(res, newest)], self.excess())
            if self.excess() > 0:
                self.fair_share(newest)

    def newest_step(self, res: np.ndarray) -> np.ndarray:
        """The results appended before this request's newest step that has results (parallel siblings together)."""
        if not len(res):
            return res
        return res[self.run.step[res] == self.run.step[res[-1]]]

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

    def fair_share(self, items: np.ndarray) -> None:
        """Shorten ``items`` to max-min fair shares of what the other sections leave."""
        if not len(items):
            return
        cur = self.seg_est()[items]
        avail = max(int(cur.sum()) - self.excess(), 0)
        srt = np.sort(cur)
        below = np.concatenate([[0], np.cumsum(srt)[:-1]])
        over = below + srt * (len(srt) - np.arange(len(srt))) > avail
        i = int(np.argmax(over)) if over.any() else len(srt)
        share = int((avail - below[i]) // (len(srt) - i)) if i < len(srt) else int(srt[-1])
        big = items[cur > share]
        ratio = self.ftok[ORIGINAL, big] / np.maximum(self.fest[ORIGINAL, big], 1)
        est = np.maximum(share, self.fest[OMITTED, big])  # never shorter than a marker's wording
        tok = np.minimum(np.maximum(np.ceil(share * ratio).astype(np.int64), self.ftok[OMITTED, big]),
                         self.ftok[ORIGINAL, big])
        self.shorten(big, tok, est)


POLICIES = [SeedB]
