"""Cline 4.x (Cline SDK) automatic compaction, its default agentic strategy (cline/cline 21cb8d2525 = VS Code
4.1.13, the same rule from v4.1.0; sdk/packages/core/src/extensions/context/compaction.ts, agentic-compaction.ts,
compaction-shared.ts; facts only). It is on by default with this strategy: VS Code's ``useAutoCondense`` defaults
to true (apps/vscode/src/sdk/cline-session-factory.ts) and the strategy to "agentic" (core services/
global-settings.ts ``readCompactionStrategyGlobally``); the CLI's ``--compaction`` defaults to agentic
(apps/cli/src/utils/compaction-mode.ts).

Trigger. Before every request (``createContextCompactionPrepareTurn``) the SDK estimates the request it is about
to send: ceil(characters / 3) of the JSON of its system prompt, messages and tool definitions
(``estimateRequestInputTokens``), and compacts once that reaches 0.9 x the model's input limit
(``COMPACTION_TRIGGER_RATIO``; the limit is ``context_window`` here, replay.policies.cline_sdk_models). No
output reserve and no server usage enter it. After a compaction it estimates the compacted view (the summary
message and the messages kept) plus what came since, and compacts that again the same way.

The messages' part is the reader's: each message's own estimate as sent (replay.readers.cline_sdk_estimate, on its
first item, ``RunArrays.harness_est``), so a dropped message takes its estimate with it; the cut below counts a
message as stored (``RunArrays.harness_keep``, where its long tool results make that larger); items without
either (logs of other harnesses) count their characters / 3. The system prompt and the tool definitions are not
in the log: their part (``overhead_est``; -1: derived) is the run's prefix tokens at the run's own characters per
token, / 3.

Kept part (``findCutIndex``): from the newest message back, whole messages until they add up to
``preserve_tokens`` (20,000 by that estimate; fewer when half the input limit less the overhead is smaller:
``resolveAutoRequestTargetTokens`` for a conversation of five exchanges or more); the cut moves back to the latest
typed user message when that is later than the first message, then back to a message that starts a turn (an
assistant message, or a user message that is not only tool results): a tool call and its results stay together.
The first user message (the task) is summarised like the rest. When the cut falls on the first message (on the
summary, after a compaction) nothing is compacted and the request goes out whole. The summary replaces the
messages before the cut: one user message ``Context summary:`` with the summary, and in its metadata the summary
again with the files read and changed (``buildSummaryMessage``), so the SDK's estimate of it is about twice its
text's; the n-th summary is sized like the log's n-th (its tokens and the reader's estimate of its message), one
past the log's like its last (Cline keeps only its latest compaction on disk, so a log's one summary is usually
not its first), and in a log without one ``summary_tokens``, with twice that as its estimate. The summariser is a
model call the log does not record; it is charged what the SDK sends it (``summariser_prompt``, uncached): the
folded messages as text, tool results, files and thinking cut to 2,000 characters, with the previous summary.

Not modelled: manual ``/compact``, the basic strategy (chosen in the settings, or run after the provider refused a
request as too long; its sidecar marker says so: the event's ``strategy``), a custom compactor or summariser
model, and the builder's rewrite of stale re-read results (replay.readers.cline_sdk_estimate).

Linear per request: the estimate is a running total (each item counted once on arrival, taken off when a compaction
drops it), the latest typed user message is tracked as items arrive, and the kept part is found from the end back
over no more than ``preserve_tokens`` of messages and the stretch to a turn's start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.errors import ReplayError
from replay.jit import compiled
from replay.policies.auto_compact import OUTPUT, SUMMARY, drop_artefacts
from replay.policies.base import Budget, CompiledPolicy
from replay.policies.config import PolicyConfig, knob
from replay.policies.kernel import (
    P_OVERHEAD,
    P_POLICY,
    S_END,
    S_POLICY,
    S_SUM_AT,
    S_SUM_TOK,
    S_WINDOW,
    pair_safe_start,
    pinned,
    request_limit,
    set_form,
    set_summariser_prompt,
    set_summary,
)
from replay.policies.view import DROPPED
from replay.run_arrays import KIND_CODE, TOOL_RESULT

REQUEST_TARGET_SHARE = 0.5  # LONG_CONVERSATION_TARGET_RATIO: the compacted request's target, of the input limit
# the summariser's request (agentic-compaction.ts generateSummary, compaction-shared.ts buildSummaryRequest): its
# system line, the request's headings and the "Previous summary:" / "Conversation:" labels, about 500 characters;
# each folded message serialised with tool results, attached files and thinking cut to 2,000 characters
# (TOOL_RESULT_CHAR_LIMIT, FILE_CONTENT_CHAR_LIMIT) plus a "...[truncated N chars]" line, and a label per block
SUMMARY_REQUEST_CHARS, SERIALISED_CUT, CUT_LINE_CHARS, LABEL_CHARS = 500, 2_000, 24, 12
CUT_KINDS = (TOOL_RESULT, KIND_CODE["reasoning"], KIND_CODE["attachment"])


@dataclass(frozen=True)
class ClineSdkConfig(PolicyConfig):
    """Past 0.9 x the input limit by the SDK's chars/3 estimate of the request, the older messages become a summary;
    the newest 20,000 estimated tokens of messages (from a turn's start) stay."""

    kind = "cline_sdk"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    threshold: float = knob(0.9, 0.0, 1.0, "share of the input limit the request's estimate triggers at (>0)")
    context_window: int = knob(0, 0, 100_000_000, "the model's input limit (0: the budget window)")
    preserve_tokens: int = knob(20_000, 1, 10_000_000, "newest messages kept, by the SDK's estimate")
    overhead_est: int = knob(
        -1,
        -1,
        100_000_000,
        "the SDK's estimate of the system prompt and tools (-1: the prefix at the run's chars per token / 3)",
    )
    summary_tokens: int = knob(2_000, 0, 1_000_000, "size of a summary when the log has none")
    summary_from_log: bool = knob(
        True, doc="size the n-th summary like the run's n-th recorded one (past it: the last)"
    )

    def validate(self) -> None:
        if self.threshold <= 0:
            raise ReplayError("cline_sdk: threshold must be in (0, 1]")


(P_LIMIT, P_WINDOW_IN, P_PRESERVE, P_OVERHEAD_EST, P_SUMMARY_TOKENS, P_FROM_LOG, P_FIXED_WINDOW) = range(
    P_POLICY, P_POLICY + 7
)
S_COMPACTIONS, S_RECORDED = S_POLICY, S_POLICY + 1  # compactions so far; recorded summaries (summary_from_log)
S_MSG_EST = S_POLICY + 2  # the SDK's estimate of the messages in the view (running total)
S_SEEN = S_POLICY + 3  # items up to here are counted
S_LIVE = S_POLICY + 4  # items from first_body up to here are summarised
S_SUM_HARNESS = S_POLICY + 5  # the SDK's estimate of the current summary message (0: none)
S_OVERHEAD_EST = S_POLICY + 6  # its estimate of the system prompt and tool definitions
S_PRESERVE = S_POLICY + 7  # newest messages kept (preserve_tokens, capped by the request's target)
S_LAST_TURN = S_POLICY + 8  # first item of the latest typed user message (-1 none)
S_GIVEN = S_POLICY + 9  # 1: the reader gave the SDK's estimate of each message (a Cline SDK log)
S_CHARS, S_TOKENS = S_POLICY + 10, S_POLICY + 11  # the run's body characters and tokens (its chars per token)
# aux rows: recorded summaries' tokens and estimates (the first S_RECORDED entries); per item its estimate as
# counted, and its place in a message (M_* bits)
A_REC_TOK, A_REC_EST, A_COUNTED, A_START = 0, 1, 2, 3
M_START, M_SAFE, M_TURN = 1, 2, 4  # starts a message; a cut may start there; starts a typed user message


class ClineSdk(CompiledPolicy):
    name = "cline_sdk"
    Config = ClineSdkConfig
    config: ClineSdkConfig  # PolicyBase.__init__ checks the instance is a Config

    def limits(self, window: int) -> list[tuple[str, float]]:
        c = self.config
        return [("threshold", c.threshold * (c.context_window or window))]

    def knobs(self, p: np.ndarray, budget: Budget) -> None:
        c = self.config
        window = c.context_window or budget.window
        p[P_LIMIT], p[P_WINDOW_IN], p[P_PRESERVE] = c.threshold * window, window, c.preserve_tokens
        p[P_OVERHEAD_EST], p[P_SUMMARY_TOKENS], p[P_FROM_LOG] = c.overhead_est, c.summary_tokens, c.summary_from_log
        p[P_FIXED_WINDOW] = c.context_window > 0


@compiled(borrowed=True)
def is_output(kind):
    return (kind == OUTPUT[0]) | (kind == OUTPUT[1]) | (kind == OUTPUT[2])


@compiled(borrowed=True)
def message_marks(r, st, lo, n):
    """M_* bits per body item: where a message starts (the reader's estimate sits on a message's first item; a log
    without them: where the speaker or the turn changes), whether it is an assistant message or a typed user
    message (a cut may start at either), and whether it opens a turn."""
    given = False
    for q in range(lo, n):
        given |= r.harness_est[q] > 0
    for q in range(lo, n):
        if r.recorded_only[q]:
            continue
        out = is_output(r.kind[q])
        new_turn = q == lo or r.turn[q] != r.turn[q - 1]
        if given:
            start = r.harness_est[q] > 0
        else:
            start = q == lo or new_turn or out != is_output(r.kind[q - 1])
        if start:
            turn = (not out) & new_turn
            st.aux[A_START, q] = M_START + (M_SAFE if out | turn else 0) + (M_TURN if turn else 0)
    st.s[S_GIVEN] = given


@compiled(borrowed=True)
def setup(p, r, st):
    """The harness's artefacts out of the view; the recorded summaries' sizes; message marks; the overhead's and
    the kept part's sizes by the SDK's estimate."""
    drop_artefacts(r, st)
    n_items, lo = len(r.kind), r.first_body
    n = 0
    for q in range(n_items):
        if r.kind[q] == SUMMARY:
            st.aux[A_REC_TOK, n] = r.tokens[q]
            st.aux[A_REC_EST, n] = r.harness_est[q] if r.harness_est[q] > 0 else 2 * r.tokens[q]
            n += 1
    st.s[S_RECORDED] = n if p[P_FROM_LOG] > 0 else 0
    message_marks(r, st, min(lo, n_items), n_items)
    chars, tokens, prefix = np.int64(0), np.int64(0), np.int64(p[P_OVERHEAD]) + np.int64(r.tail)
    for q in range(n_items):
        if q < lo:
            prefix += r.tokens[q]
        elif not r.recorded_only[q]:
            chars += r.chars[q]
            tokens += r.tokens[q]
    if tokens <= 0:  # nothing to take the run's characters per token from: 4, as chars/4 counts
        chars, tokens = np.int64(4), np.int64(1)
    st.s[S_CHARS], st.s[S_TOKENS] = chars, tokens
    overhead = np.int64(p[P_OVERHEAD_EST])
    if overhead < 0:
        overhead = np.int64(np.ceil(prefix * chars / tokens / 3))
    st.s[S_OVERHEAD_EST] = overhead
    st.s[S_PRESERVE] = kept_size(p, st, p[P_WINDOW_IN], p[P_LIMIT])
    st.s[S_SEEN] = st.s[S_LIVE] = min(lo, n_items)
    st.s[S_LAST_TURN] = -1


@compiled(borrowed=True)
def count_new(r, st):
    """Count the items that arrived since the last request: each message's estimate, or its characters / 3."""
    for q in range(st.s[S_SEEN], st.s[S_END]):
        if r.recorded_only[q]:
            continue
        est = r.harness_est[q] if st.s[S_GIVEN] else (r.chars[q] + 2) // 3
        st.aux[A_COUNTED, q] = est
        st.s[S_MSG_EST] += est
        if st.aux[A_START, q] & M_TURN:
            st.s[S_LAST_TURN] = q
    st.s[S_SEEN] = st.s[S_END]


@compiled(borrowed=True)
def previous_start(st, q, lo):
    """The message start before item q (lo at the latest)."""
    q -= 1
    while q > lo and not st.aux[A_START, q] & M_START:
        q -= 1
    return q


@compiled(borrowed=True)
def cut_index(r, st, lo, end):
    """Where the kept part starts (``findCutIndex``); ``lo`` or before it: nothing is compacted."""
    total, cand, q = np.int64(0), lo, end - 1
    while q >= lo:
        total += r.harness_keep[q] if r.harness_keep[q] > 0 else st.aux[A_COUNTED, q]
        if st.aux[A_START, q] & M_START:
            cand = q
            if total >= st.s[S_PRESERVE]:
                break
        q -= 1
    if q < lo:
        return lo  # the whole view is under the kept size (the SDK's candidate is the first message)
    turn = st.s[S_LAST_TURN]
    if turn >= lo and (turn > lo or st.s[S_COMPACTIONS] > 0):
        cand = min(cand, turn)
    while cand > lo and not st.aux[A_START, cand] & M_SAFE:
        cand = previous_start(st, cand, lo)
    # never a kept item whose call or result is folded: the SDK's transcript keeps a result right after its call,
    # other logs may not (late results, parallel calls), and the view sends no result without its call
    return pair_safe_start(r, st, cand, lo)


@compiled(borrowed=True)
def summariser_prompt(r, st, lo, cut):
    """Tokens of the summariser's request folding [lo, cut): each item as serialised (long tool results, files and
    thinking cut, at the item's own tokens per character; a label each), the previous summary and the request's
    own text (at the run's tokens per character). Uncached: a request of its own."""
    chars = SUMMARY_REQUEST_CHARS + (cut - lo) * LABEL_CHARS
    tokens = st.s[S_SUM_TOK] if st.s[S_SUM_AT] >= 0 else np.int64(0)
    for q in range(lo, cut):
        if r.recorded_only[q]:
            continue
        cut_kind = (r.kind[q] == CUT_KINDS[0]) | (r.kind[q] == CUT_KINDS[1]) | (r.kind[q] == CUT_KINDS[2])
        if cut_kind & (r.chars[q] > SERIALISED_CUT):
            tokens += np.int64(np.ceil(SERIALISED_CUT * r.tokens[q] / r.chars[q]))
            chars += CUT_LINE_CHARS
        else:
            tokens += r.tokens[q]
    return tokens + np.int64(np.ceil(chars * st.s[S_TOKENS] / st.s[S_CHARS]))


@compiled(borrowed=True)
def compact(p, r, st, lo, cut):
    """The messages in [lo, cut) become the summary."""
    set_summariser_prompt(st, summariser_prompt(r, st, lo, cut), 0, -1)
    for q in range(lo, cut):
        if pinned(r, q):
            continue
        if st.forms[q] != DROPPED:
            set_form(st, q, DROPPED)
        st.s[S_MSG_EST] -= st.aux[A_COUNTED, q]
        st.aux[A_COUNTED, q] = 0
    n = min(st.s[S_COMPACTIONS], st.s[S_RECORDED] - 1)  # past the log's summaries, its last one's size
    if n >= 0:
        tok, est = st.aux[A_REC_TOK, n], st.aux[A_REC_EST, n]
    else:
        tok = np.int64(p[P_SUMMARY_TOKENS])
        est = 2 * tok
    st.s[S_COMPACTIONS] += 1
    st.s[S_LIVE] = cut
    st.s[S_SUM_HARNESS] = est
    set_summary(st, cut, tok, tok)


@compiled(borrowed=True)
def kept_size(p, st, window, lim):
    """The newest messages' estimate kept: preserve_tokens, capped by the compacted request's target (half the input
    limit, below the trigger) less the system prompt and tools."""
    target = min(np.int64(window * REQUEST_TARGET_SHARE), np.int64(lim) - 1)
    return max(1, min(np.int64(p[P_PRESERVE]), target - st.s[S_OVERHEAD_EST]))


@compiled(borrowed=True)
def decide(p, r, st):
    count_new(r, st)
    lim = request_limit(r, st, p[P_LIMIT], p[P_FIXED_WINDOW] > 0)  # the turn's context.model's; a fixed window holds
    if st.s[S_MSG_EST] + st.s[S_SUM_HARNESS] + st.s[S_OVERHEAD_EST] < lim:
        return
    own = lim != p[P_LIMIT] and st.s[S_WINDOW] > 0  # another model's input limit: the kept size is of it too
    st.s[S_PRESERVE] = kept_size(p, st, st.s[S_WINDOW] if own else p[P_WINDOW_IN], lim)
    lo, end = st.s[S_LIVE], st.s[S_END]
    cut = cut_index(r, st, lo, end)
    if cut > lo:
        compact(p, r, st, lo, cut)


POLICIES = [ClineSdk]
