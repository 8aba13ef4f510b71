"""Cline's context management (src/core/context/context-management, Cline 3.57, February 2026; facts only).

Cline's default (``useAutoCondense`` off) runs before a request: when the previous request's usage (tokens in,
cache reads and writes, and its output) reaches the model's max allowed size (``cline_max_allowed``), it first
replaces duplicate file reads in the kept part of the conversation with a short notice (all but the newest read
of each file); when that saves under ``dedup_share`` (0.3) of the kept text's characters, it also truncates: of the
API messages after the first user/assistant pair and the range already deleted, the older half (a quarter kept
when half the usage is still past the limit) goes, an even number of messages ending on an assistant message.

In this replay an API message is a request's part: message 0 the first request's user message, then per request k
its response (message 2k + 1) and the next user message (2k + 2), so the range is counted in requests. The duplicate
reads Cline sees are the first tool result of a user message when it is a ``read_file`` result, or a
``replace_in_file`` / ``write_to_file`` result holding the file's final content (the first content block), keyed
by the path as its header writes it (``[read_file for 'src/a.ts'] Result:``; a relative and an absolute spelling of
one file are two keys, as in Cline). On a Cline log the reader gives each such result its key and its exact size
once rewritten (``RunArrays.dup_key`` / ``dup_chars``); on other logs the pass keys by the call's resource and
sizes the notice by ``read_notice_chars`` (the header and the notice) or ``write_notice_chars`` (the wording around
it). The characters the savings are weighed against are the text of the kept messages, tool calls included where
they are text (Cline's XML format, ``RunArrays.text_tools``), reasoning (thinking blocks) not, and the base64 data
of their images (``RunArrays.media_chars``: one screenshot of 128 k characters outweighs much of a conversation).
A truncation keeps the results opening the first kept user message where tool calls are text (the kernel's
``drop``). Files mentioned in user text (``<file_content>``) and the truncation notice that replaces the first
assistant message's text (a few hundred characters) are not modelled. A truncation sets the kernel's "cleared
without a summary" flag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.jit import compiled
from replay.policies.auto_compact import OUTPUT, drop_artefacts, last_usage
from replay.policies.base import Budget, CompiledPolicy
from replay.policies.config import PolicyConfig, knob
from replay.policies.kernel import (
    P_ESTIMATOR,
    P_POLICY,
    S_END,
    S_K,
    S_POLICY,
    S_SUMMARISED,
    SUMMARY_CLEARED,
    drop,
    set_cost,
    set_form,
)
from replay.policies.masking import token_ratio, wording_cost
from replay.policies.view import DROPPED, ORIGINAL, PLACEHOLDER
from replay.readers.cline_dedup import cline_max_allowed
from replay.run_arrays import KIND_CODE, TOOL_CALL, TOOL_RESULT

READ_TOOLS = ("read_file",)
WRITE_TOOLS = ("replace_in_file", "write_to_file")
TF_FILE_READ, TF_FILE_WRITE = 16, 32  # tool flags of this policy (kernel's TF_* use 1 to 8)
TEXT = (KIND_CODE["user_text"], KIND_CODE["attachment"], TOOL_RESULT, KIND_CODE["assistant_text"])


@dataclass(frozen=True)
class ClineConfig(PolicyConfig):
    """Past the max allowed size of the last usage: drop duplicate file reads, else truncate the older half."""

    kind = "cline"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    max_allowed: int = knob(0, 0, 100_000_000, "last usage (prompt + output) that triggers (0: Cline's, by window)")
    dedup_share: float = knob(0.3, 0.0, 1.0, "share of the kept text's characters the duplicate reads must save")
    read_notice_chars: int = knob(
        250, 0, 100_000, "chars of a replaced read_file result (logs without the reader's sizes)"
    )
    write_notice_chars: int = knob(
        800, 0, 100_000, "chars of a replaced write result (logs without the reader's sizes)"
    )


(P_LIMIT, P_SHARE, P_READ_CHARS, P_WRITE_CHARS) = range(P_POLICY, P_POLICY + 4)
S_REST = S_POLICY  # the first request whose messages are kept after the deleted range (1 before any truncation)
S_KEYED = S_POLICY + 1  # 1 when the reader gave Cline's own duplicate keys and sizes anywhere in the run (a Cline log)


class Cline(CompiledPolicy):
    name = "cline"
    Config = ClineConfig
    config: ClineConfig  # PolicyBase.__init__ checks the instance is a Config

    def knobs(self, p: np.ndarray, budget: Budget) -> None:
        c = self.config
        p[P_LIMIT] = c.max_allowed or cline_max_allowed(budget.window)
        p[P_SHARE], p[P_READ_CHARS], p[P_WRITE_CHARS] = c.dedup_share, c.read_notice_chars, c.write_notice_chars

    def tool_flags(self, tool_names: tuple[str, ...]) -> np.ndarray:
        return np.array(
            [TF_FILE_READ * (t in READ_TOOLS) + TF_FILE_WRITE * (t in WRITE_TOOLS) for t in tool_names], dtype=np.int8
        )


@compiled(borrowed=True)
def setup(p, r, st):
    """The harness's own artefacts out of the view; no request is truncated yet."""
    drop_artefacts(r, st)
    st.s[S_REST] = 1
    keyed = False
    for q in range(len(r.dup_key)):
        keyed |= r.dup_key[q] >= 0
    st.s[S_KEYED] = 1 if keyed else 0


@compiled(inline="always")
def message(r, q):
    """Cline API message index of item q: a response's items are message 2k - 1 (k their step), others 2k."""
    k = r.step[q]
    out = (r.kind[q] == OUTPUT[0]) | (r.kind[q] == OUTPUT[1]) | (r.kind[q] == OUTPUT[2])
    return 2 * k - 1 if out else 2 * k


@compiled(borrowed=True)
def kept_chars(r, st, rest):
    """Characters of the text Cline weighs savings against: the first pair and the messages from ``rest`` on."""
    total = np.int64(0)
    for q in range(r.first_body, st.s[S_END]):
        m = message(r, q)
        kind = r.kind[q]
        text = (kind == TEXT[0]) | (kind == TEXT[1]) | (kind == TEXT[2]) | (kind == TEXT[3])
        text |= (kind == TOOL_CALL) & r.text_tools
        if (st.forms[q] != DROPPED) & ((m < 2) | (m >= 2 * rest)):
            if text:
                total += st.aux[0, q] if st.forms[q] == PLACEHOLDER else r.chars[q]
            total += r.media_chars[q]
    return total


@compiled
def dedup(p, r, st, rest):
    """Replace all but the newest file read of each file among the first results of the kept user messages;
    the characters saved (0 when none)."""
    end, k = st.s[S_END], st.s[S_K]
    keyed = st.s[S_KEYED] != 0
    n_key = 0
    for q in range(end):
        n_key = max(n_key, (r.dup_key[q] if keyed else r.resource[q]) + 1)
    newest = np.full(n_key + 1, -1, np.int64)
    first = np.full(k + 1, -1, np.int64)  # the user message of request j: its first tool result, in one pass
    for q in range(r.first_body, end):
        j = r.step[q]
        if (j >= rest) & (j <= k) & (r.kind[q] == TOOL_RESULT) and first[j] < 0:
            first[j] = q
    cand = np.full(k + 1, -1, np.int64)
    for j in range(rest, k + 1):
        q = first[j]
        if q < 0:
            continue
        if keyed:
            usable = (st.forms[q] == ORIGINAL) & (r.dup_key[q] >= 0)
        else:
            flags = r.tflag[q]
            usable = (st.forms[q] == ORIGINAL) & (r.resource[q] >= 0) & (not r.is_error[q])
            usable &= (flags & (TF_FILE_READ | TF_FILE_WRITE)) != 0
        if usable:
            cand[j] = q
            newest[r.dup_key[q] if keyed else r.resource[q]] = q
    ratio = token_ratio(r)
    saved = np.int64(0)
    for j in range(rest, k + 1):
        q = cand[j]
        if (q < 0) or (newest[r.dup_key[q] if keyed else r.resource[q]] == q):
            continue
        if keyed:
            chars = r.dup_chars[q]
        else:
            chars = np.int64(p[P_READ_CHARS] if (r.tflag[q] & TF_FILE_READ) != 0 else p[P_WRITE_CHARS])
        chars = min(chars, r.chars[q])
        saved += r.chars[q] - chars
        st.aux[0, q] = chars
        tok, est = wording_cost(r, q, chars, ratio, np.int64(p[P_ESTIMATOR]))
        set_cost(st, PLACEHOLDER, q, tok, est)
        set_form(st, q, PLACEHOLDER)
    return saved


@compiled(borrowed=True)
def truncate(r, st, rest, quarter):
    """Drop the older half (three quarters) of the request pairs from ``rest`` on; the new first kept request."""
    k = st.s[S_K]
    n = 2 * k + 1 - 2 * rest  # API messages after the deleted range, this request's user message included
    removed = (n * 3 // 4 // 2) * 2 if quarter else (n // 4) * 2
    if removed <= 0:
        return rest
    after = rest + removed // 2
    for q in range(r.first_body, st.s[S_END]):
        m = message(r, q)
        if (m >= 2 * rest) & (m <= 2 * after - 1) & (st.forms[q] != DROPPED):
            drop(r, st, q)
    st.s[S_SUMMARISED] |= SUMMARY_CLEARED
    return after


@compiled(borrowed=True)
def decide(p, r, st):
    usage = last_usage(r, st)
    if st.s[S_K] == 0 or usage < p[P_LIMIT]:
        return
    rest = st.s[S_REST]
    before = kept_chars(r, st, rest)
    saved = dedup(p, r, st, rest)
    if saved > 0 and saved >= p[P_SHARE] * before:
        return
    st.s[S_REST] = truncate(r, st, rest, usage / 2 > p[P_LIMIT])


POLICIES = (Cline,)
