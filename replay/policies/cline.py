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

Past the limit the pass runs at every request, so what it needs is kept between requests rather than read off the
view: the kept characters as a running total (each item's share in an aux row, updated where an item comes, where
this policy replaces or drops it and where the server drops it), the newest read of each file left as it is, and
how far the view has been looked at. A request's work is then its new items, the reads it replaces and the items
a truncation drops (each item is looked at by at most two truncations). Only ``setup`` may be superlinear, once per
run: a sort of the files where the reader numbers them past the run's length, and one of the text and images the
server drops, by request (O(n log n)).
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
    request_limit,
    set_cost,
    set_form,
)
from replay.policies.masking import wording_cost
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


(P_LIMIT, P_SHARE, P_READ_CHARS, P_WRITE_CHARS, P_FIXED) = range(P_POLICY, P_POLICY + 5)
S_REST = S_POLICY  # the first request whose messages are kept after the deleted range (1 before any truncation)
S_KEYED = S_POLICY + 1  # 1 when the reader gave Cline's own duplicate keys and sizes anywhere in the run (a Cline log)
S_KEPT = S_POLICY + 2  # the kept text's characters, as counted so far (the sum of the A_COUNTED row)
S_COUNTED_TO = S_POLICY + 3  # the items from first_body up to here are counted
S_GONE_NEXT, S_N_GONE = S_POLICY + 4, S_POLICY + 5  # next entry of the A_GONE list to count; its length
S_READS_TO = S_POLICY + 6  # the duplicate-read pass has seen the first results up to here
S_REST_FROM = S_POLICY + 7  # the items from first_body up to here are of requests before S_REST
S_TOKENS, S_CHARS = S_POLICY + 8, S_POLICY + 9  # the run's tokens and characters (its tokens per character)
A_CHARS = 0  # aux row: characters of a replaced read (its notice)
A_COUNTED = 1  # aux row: what the item adds to S_KEPT
A_FILE = 2  # aux row: the file of a first result the pass may replace (a code below n), -1 for any other item
A_NEWEST = 3  # aux row, per file code: the newest read of the file left as it is (-1 none)
A_GONE = 4  # aux row: the items with text or media the server drops (RunArrays.gone_at), in the order they go


class Cline(CompiledPolicy):
    name = "cline"
    Config = ClineConfig
    config: ClineConfig  # PolicyBase.__init__ checks the instance is a Config

    def limits(self, window: int) -> list[tuple[str, float]]:
        return [("max_allowed", self.config.max_allowed or cline_max_allowed(window))]

    def knobs(self, p: np.ndarray, budget: Budget) -> None:
        c = self.config
        p[P_LIMIT], p[P_FIXED] = c.max_allowed or cline_max_allowed(budget.window), c.max_allowed > 0
        p[P_SHARE], p[P_READ_CHARS], p[P_WRITE_CHARS] = c.dedup_share, c.read_notice_chars, c.write_notice_chars

    def tool_flags(self, tool_names: tuple[str, ...]) -> np.ndarray:
        return np.array(
            [TF_FILE_READ * (t in READ_TOOLS) + TF_FILE_WRITE * (t in WRITE_TOOLS) for t in tool_names], dtype=np.int8
        )


@compiled
def setup(p, r, st):
    """The harness's own artefacts out of the view; no request is truncated yet; the files of the reads the pass may
    replace and the order the server drops what they weigh in, once (sorts, O(n log n), only where the reader numbers
    files past the run's length or the server drops text or images)."""
    drop_artefacts(r, st)
    st.s[S_REST] = 1
    keyed = False
    for q in range(len(r.dup_key)):
        keyed |= r.dup_key[q] >= 0
    st.s[S_KEYED] = 1 if keyed else 0
    st.s[S_COUNTED_TO] = st.s[S_READS_TO] = st.s[S_REST_FROM] = r.first_body
    top, ordered = scan(r, st, keyed)
    if not ordered:
        raise ValueError("cline: a run's item steps must not decrease (replay.run_arrays.from_items checks it)")
    if top >= len(r.kind):
        dense_codes(r, st)
    if st.s[S_N_GONE] > 0:
        gone_order(r, st)


@compiled(borrowed=True)
def scan(r, st, keyed):
    """One pass over the run: its tokens and characters (S_TOKENS, S_CHARS), the items with text or media the server
    drops (S_N_GONE), and A_FILE: for the first tool result of each request's user message that the pass may
    replace, its file (the reader's key on a Cline log, else the call's resource), -1 for every other item. The
    largest file key, and whether the steps never decrease."""
    n = len(r.kind)
    top, seen, last, ordered = np.int64(-1), False, np.int64(0), True
    tokens, chars, gone = np.int64(0), np.int64(0), np.int64(0)
    for q in range(n):
        if q > 0:
            ordered &= r.step[q] >= r.step[q - 1]
        tokens += r.tokens[q]
        chars += r.chars[q]
        st.aux[A_FILE, q] = st.aux[A_NEWEST, q] = -1
        if q < r.first_body:
            continue
        gone += (r.gone_at[q] >= 0) & weighs(r, q)
        if (r.kind[q] != TOOL_RESULT) or (seen and r.step[q] == last):
            continue  # not a result, or not its request's first (the steps never decrease)
        seen, last = True, r.step[q]
        if keyed:
            usable = r.dup_key[q] >= 0
        else:
            flags = r.tflag[q]
            usable = (r.resource[q] >= 0) & (not r.is_error[q]) & ((flags & (TF_FILE_READ | TF_FILE_WRITE)) != 0)
        if usable:
            st.aux[A_FILE, q] = r.dup_key[q] if keyed else np.int64(r.resource[q])
            top = max(top, st.aux[A_FILE, q])
    st.s[S_TOKENS], st.s[S_CHARS], st.s[S_N_GONE] = tokens, chars, gone
    return top, ordered


@compiled
def dense_codes(r, st):
    """A_FILE's keys renumbered 0, 1, ... in their order (keys past the run's length: a reader's own numbering)."""
    pos = np.flatnonzero(st.aux[A_FILE] >= 0)
    key = st.aux[A_FILE][pos]
    order = np.argsort(key, kind="mergesort")
    code = -1
    for i in range(len(pos)):
        if i == 0 or key[order[i]] != key[order[i - 1]]:
            code += 1
        st.aux[A_FILE, pos[order[i]]] = code


@compiled
def gone_order(r, st):
    """A_GONE: the items with text or media the server drops at some request (S_N_GONE of them), by that request."""
    pos, at = np.empty(st.s[S_N_GONE], np.int64), np.empty(st.s[S_N_GONE], np.int64)
    found = 0
    for q in range(r.first_body, len(r.kind)):
        if (r.gone_at[q] >= 0) & weighs(r, q):
            pos[found], at[found] = q, r.gone_at[q]
            found += 1
    order = np.argsort(at, kind="mergesort")
    for i in range(found):
        st.aux[A_GONE, i] = pos[order[i]]


@compiled(inline="always")
def message(r, q):
    """Cline API message index of item q: a response's items are message 2k - 1 (k their step), others 2k."""
    k = r.step[q]
    out = (r.kind[q] == OUTPUT[0]) | (r.kind[q] == OUTPUT[1]) | (r.kind[q] == OUTPUT[2])
    return 2 * k - 1 if out else 2 * k


@compiled(inline="always")
def is_text(r, q):
    """Item q is text Cline weighs savings against: user and assistant text, results, tool calls where they are
    text (reasoning is not)."""
    kind = r.kind[q]
    text = (kind == TEXT[0]) | (kind == TEXT[1]) | (kind == TEXT[2]) | (kind == TEXT[3])
    return text | ((kind == TOOL_CALL) & r.text_tools)


@compiled(inline="always")
def weighs(r, q):
    """Item q can count in the kept characters: text, or an image's base64 data."""
    return is_text(r, q) | (r.media_chars[q] != 0)


@compiled(borrowed=True)
def recount(r, st, q):
    """Item q's characters in S_KEPT follow its form and the kept range: the first pair and the messages from
    S_REST on, a replaced read at its notice's size, an image's base64 data whatever its kind."""
    m = message(r, q)
    kept = (st.forms[q] != DROPPED) & ((m < 2) | (m >= 2 * st.s[S_REST]))
    chars = np.int64(0)
    if kept:
        if is_text(r, q):
            chars += st.aux[A_CHARS, q] if st.forms[q] == PLACEHOLDER else r.chars[q]
        chars += r.media_chars[q]
    st.s[S_KEPT] += chars - st.aux[A_COUNTED, q]
    st.aux[A_COUNTED, q] = chars


@compiled(borrowed=True)
def count_new(r, st):
    """S_KEPT brought up to the view: the items added since it was last counted and those the server dropped since
    (a form the policy sets is counted where it sets it)."""
    end, k = st.s[S_END], st.s[S_K]
    for q in range(max(st.s[S_COUNTED_TO], r.first_body), end):
        recount(r, st, q)
    st.s[S_COUNTED_TO] = max(st.s[S_COUNTED_TO], end)
    i = st.s[S_GONE_NEXT]
    while (i < st.s[S_N_GONE]) and (r.gone_at[st.aux[A_GONE, i]] <= k):
        if st.aux[A_GONE, i] < end:  # one still to come is dropped when it comes
            recount(r, st, st.aux[A_GONE, i])
        i += 1
    st.s[S_GONE_NEXT] = i


@compiled(borrowed=True)
def replace_read(p, r, st, q, keyed, ratio):
    """Item q becomes Cline's notice; the characters saved."""
    if keyed:
        chars = r.dup_chars[q]
    else:
        chars = np.int64(p[P_READ_CHARS] if (r.tflag[q] & TF_FILE_READ) != 0 else p[P_WRITE_CHARS])
    chars = min(chars, r.chars[q])
    st.aux[A_CHARS, q] = chars
    tok, est = wording_cost(r, q, chars, ratio, np.int64(p[P_ESTIMATOR]))
    set_cost(st, PLACEHOLDER, q, tok, est)
    set_form(st, q, PLACEHOLDER)
    recount(r, st, q)
    return r.chars[q] - chars


@compiled(borrowed=True)
def dedup(p, r, st, rest):
    """Replace all but the newest file read of each file among the first results of the kept user messages;
    the characters saved (0 when none).

    Each file's newest read left as it is (A_NEWEST) stays from one pass to the next, so a pass looks only at the
    first results added since the last one (an older read was replaced then, or is no longer in the view as it
    was); a read of a request still to come (its step past this request) waits for a later pass."""
    end, k = st.s[S_END], st.s[S_K]
    keyed = st.s[S_KEYED] != 0
    ratio = st.s[S_TOKENS] / max(st.s[S_CHARS], 1)  # the run's tokens per character (masking.token_ratio)
    saved = np.int64(0)
    q = st.s[S_READS_TO]
    while (q < end) and (r.step[q] <= k):
        f = st.aux[A_FILE, q]
        if (f >= 0) & (r.step[q] >= rest) & (st.forms[q] == ORIGINAL):
            older = st.aux[A_NEWEST, f]
            if (older >= 0) and (st.forms[older] == ORIGINAL) & (r.step[older] >= rest):
                saved += replace_read(p, r, st, older, keyed, ratio)
            st.aux[A_NEWEST, f] = q
        q += 1
    st.s[S_READS_TO] = q
    return saved


@compiled(borrowed=True)
def truncate(r, st, rest, quarter):
    """Drop the older half (three quarters) of the request pairs from ``rest`` on (S_REST moves past them).

    The items of those requests are found from S_REST_FROM on (the steps never decrease), so each item is looked
    at by at most two truncations."""
    k, end = st.s[S_K], st.s[S_END]
    n = 2 * k + 1 - 2 * rest  # API messages after the deleted range, this request's user message included
    removed = (n * 3 // 4 // 2) * 2 if quarter else (n // 4) * 2
    if removed <= 0:
        return
    after = rest + removed // 2
    st.s[S_REST] = after
    q, start = st.s[S_REST_FROM], np.int64(-1)
    while (q < end) and (r.step[q] <= after):
        if (start < 0) & (r.step[q] >= after):
            start = q
        if r.step[q] >= rest:
            m = message(r, q)
            if (m >= 2 * rest) & (m <= 2 * after - 1) & (st.forms[q] != DROPPED):
                drop(r, st, q)
                partner = r.pair[q]
                if (partner >= r.first_body) & (partner < end):
                    recount(r, st, partner)
            recount(r, st, q)
        q += 1
    st.s[S_REST_FROM] = start if start >= 0 else q
    st.s[S_SUMMARISED] |= SUMMARY_CLEARED


@compiled(borrowed=True)
def decide(p, r, st):
    # Cline takes the max allowed size of the task's current API handler's model; a fixed max_allowed holds
    usage, lim = last_usage(r, st), request_limit(r, st, p[P_LIMIT], p[P_FIXED] > 0)
    if st.s[S_K] == 0 or usage < lim:
        return
    rest = st.s[S_REST]
    count_new(r, st)
    before = st.s[S_KEPT]
    saved = dedup(p, r, st, rest)
    if saved > 0 and saved >= p[P_SHARE] * before:
        return
    truncate(r, st, rest, usage / 2 > lim)


POLICIES = (Cline,)
