"""Harness auto-compaction: past a token limit, the conversation is replaced by a summary.

The limit is ``threshold x (W - output_reserve) - buffer_tokens`` where W is ``context_window`` (0: the budget
window; for a Codex log give its ``model_context_window`` as the window, as ``replay fidelity`` does).
The presets in :mod:`replay.policies.presets` set these knobs per harness and version:

- Claude Code 1.0.x: 0.92 x (200,000 - 32,000) = 154,560, checked against the previous request's prompt
  (input + cache read + cache write of the last response); the whole conversation is summarised and the files
  it read or wrote are re-attached after the summary (``reattach_tokens``; about 10.8k in the corpus run).
- Claude Code 2.x: 200,000 - 20,000 (output) - 13,000 (buffer) = 167,000.
- Gemini CLI: the last response's prompt against a fraction of the model's token limit; the oldest 70% of the
  history's characters (up to a user message) become the summary, the newest 30% stay verbatim
  (``keep_fraction``), as chatCompressionService does.
- Copilot CLI: messages plus tool definitions before a request against 0.8 of the model's prompt limit start a
  background compaction whose summary replaces, at the next request, what was there when it started
  (``background_until``: at 0.95 it waits and applies at once).
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

from replay.errors import ReplayError
from replay.jit import compiled
from replay.policies.base import Budget, CompiledPolicy
from replay.policies.config import PolicyConfig, knob
from replay.policies.kernel import (
    P_POLICY,
    S_END,
    S_K,
    S_POLICY,
    S_SENT_EST,
    drop,
    est_total,
    pair_safe_start,
    prefix_end,
    set_cost,
    set_form,
    set_summary,
)
from replay.policies.view import DROPPED, ORIGINAL, SHRUNK
from replay.simulator.arrays import ACCESS_CODE, KIND_CODE, TOOL_RESULT

SUMMARY, ATTACHMENT, USER = KIND_CODE["summary"], KIND_CODE["attachment"], KIND_CODE["user_text"]
ASSISTANT_TEXT = KIND_CODE["assistant_text"]
RESENT = (ATTACHMENT, USER, SUMMARY)
READ, WRITE = ACCESS_CODE["read"], ACCESS_CODE["write"]


@compiled
def harness_artefacts(kind, step):
    """Bool per item: a recorded summary, or what the harness re-sent with it (attachments and user messages of the
    same step, after the summary): products of the recorded policy, not of the agent."""
    n = len(kind)
    out = np.zeros(n, np.bool_)
    for s in range(n):
        if kind[s] != SUMMARY:
            continue
        out[s] = True
        q = s + 1
        while q < n and step[q] == step[s] and kind[q] in RESENT:
            out[q] = True
            q += 1
    return out


@compiled
def drop_artefacts(r, st):
    """Recorded summaries, their re-sent copies and the loader's recorded-only items are never in the view."""
    gone = harness_artefacts(r.kind, r.step)
    for q in range(len(r.kind)):
        if gone[q] or r.recorded_only[q]:
            set_form(st, q, DROPPED)


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
    background_until: float = knob(0.0, 0.0, 1.0, "summarise in the background: the summary of what was there "
                                                   "when the limit was passed replaces it at the next request, "
                                                   "at once past this fraction (Copilot CLI: 0.95); 0: at once")
    cut_results_after: int = knob(0, 0, 10_000_000, "after a compaction, kept tool results past the newest this "
                                                     "many tokens (chars/4) of them are cut to cut_chars (Gemini "
                                                     "CLI: 50,000); 0: kept whole")
    cut_chars: int = knob(40_000, 1, 100_000_000, "characters a cut tool result keeps (Gemini CLI: 40,000)")
    keep_fraction: float = knob(0.0, 0.0, 0.99, "newest share of the history's characters kept verbatim, from a "
                                                "user message on (Gemini CLI: 0.3); 0: keep_last decides")
    reattach_tokens: int = knob(0, 0, 10_000_000, "tokens of the files re-attached after the summary when the "
                                                   "summarised part read or wrote a file (Claude Code)")

    def validate(self) -> None:
        if self.threshold <= 0:
            raise ReplayError("auto_compact: threshold must be in (0, 1]")


(P_LIMIT, P_PREVIOUS, P_SUMMARY_TOKENS, P_FROM_LOG, P_KEEP_USER, P_KEEP_LAST,
 P_REATTACH, P_KEEP_FRACTION, P_BACKGROUND_LIMIT, P_CUT_AFTER, P_CUT_CHARS) = range(P_POLICY, P_POLICY + 11)
# compactions so far; recorded summaries (summary_from_log); 1 + the history's end when a background one started
S_COMPACTIONS, S_RECORDED, S_PENDING = S_POLICY, S_POLICY + 1, S_POLICY + 2
A_RECORDED = 0  # aux row: the recorded summaries' tokens, in order (the first S_RECORDED entries)


class AutoCompact(CompiledPolicy):
    name = "auto_compact"
    Config = AutoCompactConfig

    def knobs(self, p: np.ndarray, budget: Budget) -> None:
        c = self.config
        window = c.context_window or budget.window
        p[P_LIMIT] = c.threshold * (window - c.output_reserve) - c.buffer_tokens
        p[P_PREVIOUS], p[P_SUMMARY_TOKENS] = c.trigger_on == "previous_prompt", c.summary_tokens
        p[P_FROM_LOG], p[P_KEEP_USER], p[P_KEEP_LAST] = c.summary_from_log, c.keep_user_tokens, c.keep_last
        p[P_REATTACH], p[P_KEEP_FRACTION] = c.reattach_tokens, c.keep_fraction
        p[P_CUT_AFTER], p[P_CUT_CHARS] = c.cut_results_after, c.cut_chars
        p[P_BACKGROUND_LIMIT] = c.background_until * (window - c.output_reserve) - c.buffer_tokens \
            if c.background_until > 0 else 0


@compiled
def setup(p, r, st):
    """The harness's artefacts out of the view; the recorded summaries' sizes when the summaries follow the log."""
    drop_artefacts(r, st)
    n = 0
    if p[P_FROM_LOG] > 0:
        for q in range(len(r.kind)):
            if r.kind[q] == SUMMARY:
                st.aux[A_RECORDED, n] = r.tokens[q]
                n += 1
    st.s[S_RECORDED] = n


@compiled
def due(p, st):
    if p[P_PREVIOUS] > 0:  # the previous request's prompt, as the harness read it from the last response's usage
        return st.s[S_K] > 0 and st.s[S_SENT_EST] > p[P_LIMIT]
    return est_total(st) > p[P_LIMIT]


@compiled
def kept_users(p, r, st, lo, start):
    """(oldest kept, truncated) of the newest live user messages in [lo, start) within keep_user_tokens by estimate:
    every live user message from the oldest kept on is kept, the oldest one truncated to fit (its SHRUNK cost);
    (start, -1): none kept."""
    budget = np.int64(p[P_KEEP_USER])
    oldest, shrunk = start, -1
    if budget <= 0:
        return oldest, shrunk
    for q in range(start - 1, lo - 1, -1):
        if r.kind[q] != USER or st.forms[q] == DROPPED:
            continue
        est = st.fest[ORIGINAL, q]
        if est <= budget:
            oldest = q
            budget -= est
            continue
        if budget > 0:
            ratio = st.ftok[ORIGINAL, q] / max(est, 1)
            tok = min(np.int64(np.ceil(budget * ratio)), st.ftok[ORIGINAL, q])
            set_cost(st, SHRUNK, q, tok, budget)
            oldest, shrunk = q, q
        break
    return oldest, shrunk


@compiled
def fraction_start(p, r, st, lo, end):
    """First item kept when the newest keep_fraction of the live history's characters stays: the first user
    message with the rest's share of the characters before it, else the last user message; ``end`` (all is
    summarised) when none follows that mark and the history ends with an assistant reply; ``lo``: none."""
    total = 0
    for q in range(lo, end):
        if st.forms[q] != DROPPED:
            total += r.chars[q]
    target = (1.0 - p[P_KEEP_FRACTION]) * total
    before, last_split, last_kind = 0, lo, -1
    for q in range(lo, end):
        if st.forms[q] == DROPPED:
            continue
        if r.kind[q] == USER:
            if before >= target:
                return q
            last_split = q
        before += r.chars[q]
        last_kind = r.kind[q]
    if last_kind == ASSISTANT_TEXT:
        return end
    return last_split


@compiled
def summary_size(p, st):
    """The n-th summary is the n-th recorded one's size (summary_from_log), else summary_tokens."""
    n = st.s[S_COMPACTIONS]
    if n < st.s[S_RECORDED]:
        return st.aux[A_RECORDED, n]
    return np.int64(p[P_SUMMARY_TOKENS])


@compiled
def compact(p, r, st):
    """Compact now; the kept part by keep_fraction or keep_last."""
    lo, end = prefix_end(r, st), st.s[S_END]
    if p[P_KEEP_FRACTION] > 0:
        start = fraction_start(p, r, st, lo, end)
    else:
        start = pair_safe_start(r, st, max(end - np.int64(p[P_KEEP_LAST]), lo))
    compact_before(p, r, st, start)


@compiled
def compact_before(p, r, st, start):
    """Everything live before ``start`` becomes the summary, but the newest user messages kept;
    ``reattach_tokens`` ride on the summary when a summarised item read or wrote a file (Claude Code re-reads the
    newest files from disk, so their size is not the logged results')."""
    lo = prefix_end(r, st)
    live = 0
    for q in range(lo, start):
        live += st.forms[q] != DROPPED
    if live == 0:
        return
    oldest, shrunk = kept_users(p, r, st, lo, start)
    touched = False
    for q in range(lo, start):
        if st.forms[q] != DROPPED and not (r.kind[q] == USER and q >= oldest):
            touched |= r.resource[q] >= 0 and (r.access[q] == READ or r.access[q] == WRITE)
    for q in range(lo, start):
        if st.forms[q] == DROPPED:
            continue
        if r.kind[q] == USER and q >= oldest:
            set_form(st, q, SHRUNK if q == shrunk else ORIGINAL)
        else:
            drop(r, st, q)
    size = summary_size(p, st) + (np.int64(p[P_REATTACH]) if touched else 0)
    st.s[S_COMPACTIONS] += 1
    # the summary (and the files re-attached with it) stands before the kept user messages: codex-rs puts the kept
    # user messages first, then the summary; the difference is order only, the tokens are the same
    set_summary(st, oldest, size, size)
    if p[P_CUT_AFTER] > 0:
        cut_kept_results(p, r, st, start)


@compiled
def cut_kept_results(p, r, st, start):
    """Newest first, once the kept tool results pass cut_results_after tokens (chars/4), each one longer than
    cut_chars shows only that many characters (its tokens in proportion)."""
    used, keep = 0, np.int64(p[P_CUT_CHARS])
    for q in range(st.s[S_END] - 1, start - 1, -1):
        if r.kind[q] != TOOL_RESULT or st.forms[q] != ORIGINAL:
            continue
        est = (r.chars[q] + 3) // 4
        if used + est > p[P_CUT_AFTER] and r.chars[q] > keep:
            tok = np.int64(np.ceil(st.ftok[ORIGINAL, q] * keep / r.chars[q]))
            set_cost(st, SHRUNK, q, tok, (keep + 3) // 4)
            set_form(st, q, SHRUNK)
            used += (keep + 3) // 4
        else:
            used += est


@compiled
def decide(p, r, st):
    if st.s[S_PENDING] > 0:  # a background summary of the history as it was replaces that part now
        checkpoint = st.s[S_PENDING] - 1
        st.s[S_PENDING] = 0
        compact_before(p, r, st, pair_safe_start(r, st, max(checkpoint, prefix_end(r, st))))
    elif due(p, st):
        if p[P_BACKGROUND_LIMIT] > 0 and est_total(st) < p[P_BACKGROUND_LIMIT]:
            st.s[S_PENDING] = st.s[S_END] + 1
        else:
            compact(p, r, st)


POLICIES = [AutoCompact]
