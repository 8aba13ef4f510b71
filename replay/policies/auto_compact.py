"""Harness auto-compaction: past a token limit, the conversation is replaced by a summary.

The limit is ``threshold x (W - output_reserve) - buffer_tokens`` where W is ``context_window`` (0: the budget
window; for a Codex log give its ``model_context_window`` as the window, as ``replay fidelity`` does). Where the log
says request k's model is not the run's and its harness preset has another limit or trigger (``RunArrays.req_limit``
and ``req_trigger``: its window, output reserve, or Claude Code 2.1.153's choice between a threshold and the window),
request k is checked against those, as a harness takes its threshold from the current model; a fixed
``context_window`` holds for every request.
The presets in :mod:`replay.policies.presets` set these knobs per harness and version:

- Claude Code: window - output reserve - 13,000, checked against the last response's usage (to 2.1.0:
  ``trigger_on`` "last_usage") or that plus the messages since at chars/4 (2.1.3 on: "usage_and_new"); the whole
  conversation is summarised and the newest files of its read-file state (those the ``reattach_tools`` calls touched:
  Read, Write, Edit, not MCP tools) are re-read whole after the summary, each up to ``reattach_file_tokens``
  (``reattached``; to 2.1.19 a file is as large as the log tells the whole file, ``reattach_whole_file``); its SDK loop
  (2.0.0-2.0.29) rebuilds that state at each user message from the files read whole (``reattach_turn_files``). From
  2.1.153 the newest round (the last response and what follows it) stays verbatim after the summary (``keep_rounds``).
  Versions and figures: replay.policies.presets.
- Claude Code microcompact (``microcompact``): before that check, once the last response's prompt is within
  ``micro_warning`` of the limit, the results of the oldest calls of ``micro_tools`` (all but the newest
  ``micro_keep`` calls, results sized at chars/4) are replaced by a note of ``micro_note_chars`` characters, oldest
  first while the uncleared results add up to more than ``micro_keep_tokens``, and only when that saves at least
  ``micro_min_saved`` (cli.js: 20,000 below the limit, keep 3, 40,000, 20,000). A request that microcompacts
  has bit 2 of the kernel's summarised flag set (bit 1: a summary was made). With ``micro_images`` (2.1.38-2.1.68)
  the pass also sends each image of a user message a response has followed as ``[image]``, before every request
  whatever the limit (``clear_images``).
- Gemini CLI: the last response's prompt against a fraction of the model's token limit; the oldest 70% of the
  history's characters (up to a user message) become the summary, the newest 30% stay verbatim
  (``keep_fraction``), as chatCompressionService does. Its tool output masking (0.30 on) is the microcompact pass
  with other knobs: before every request (``micro_warning`` past the limit), every tool's results but the
  newest 50,000 tokens of them are replaced by a snippet once that frees 30,000 (toolOutputMaskingService).
- Copilot CLI: messages plus tool definitions before a request against 0.8 of the model's prompt limit start a
  background compaction whose summary replaces, at the next request, what was there when it started
  (``background_until``: at 0.95 it waits and applies at once).
- Codex: the last response's total plus the items added since (the prompt about to be sent) against a fraction
  of the model's window; ``trigger_on`` "codex" adds what codex-rs adds when the server does not say it counted
  earlier reasoning (``get_total_token_usage``): its own estimate of each encrypted reasoning item before the
  newest user message (``RunArrays.harness_est``; the server drops those, codex-rs still counts them); at a
  turn's first request without what the turn added (codex-rs checks before the turn records its input). The
  summary is followed by the newest user messages up to 20,000 tokens (the oldest kept one truncated to fit), as
  codex-rs ``build_compacted_history`` does.
- inspect_ai (``CompactionSummary``): the prompt about to be sent (the last response's ``input_context_tokens``
  plus the messages since) past ``int(threshold x window)``; the system and input messages the agent started with
  stay before the summary (``keep_first_prompt``), the rest is summarised.

Recorded harness artefacts in the run (a ``summary`` item and the attachments / user messages the harness
re-sent with it, same step, after it; the loader's ``recorded_only`` items) are never part of this policy's
view: the simulated compaction replaces them. ``summary_from_log`` sizes the n-th simulated summary like the
n-th recorded one, and what rides on it like what the log shows the n-th compaction added where that is more than
the files the preset re-reads (``added_after``); the summariser call writes the summary alone.
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
    P_ESTIMATOR,
    P_POLICY,
    S_END,
    S_K,
    S_POLICY,
    S_PREV_END,
    S_SENT_EST,
    S_SUMMARISED,
    S_WINDOW,
    SUMMARY_CLEARED,
    TF_MICRO,
    drop,
    est_total,
    pair_safe_start,
    pinned,
    prefix_end,
    request_limit,
    set_cost,
    set_form,
    set_summariser_output,
    set_summary,
)
from replay.policies.masking import token_ratio, wording_cost
from replay.policies.space import Knob
from replay.policies.view import DROPPED, ORIGINAL, PLACEHOLDER, SHRUNK
from replay.readers.claude_code_memory import MEMORY_REREAD
from replay.run_arrays import ACCESS_CODE, AFTER_COMPACTION, KIND_CODE, TOOL_CALL, TOOL_RESULT

SUMMARY, ATTACHMENT, USER = KIND_CODE["summary"], KIND_CODE["attachment"], KIND_CODE["user_text"]
IMAGE = KIND_CODE["image"]
ASSISTANT_TEXT = KIND_CODE["assistant_text"]
OUTPUT = (KIND_CODE["assistant_text"], KIND_CODE["reasoning"], KIND_CODE["tool_call"])  # what a response adds
RESENT = (ATTACHMENT, USER, SUMMARY)
READ, WRITE = ACCESS_CODE["read"], ACCESS_CODE["write"]
# this policy's own tool flags (the kernel's TF_* use 1 to 8; auto_compact reads only TF_MICRO of those): a call that
# puts its file in the harness's read-file state; a call that carries the file's whole new content
TF_FILE_STATE, TF_WHOLE_FILE = 16, 32
# an item that names a tool (an image a tool result holds, as the Claude Code reader names it): not a user message's
TF_TOOL = 64
# on an attachment (never a call, which alone TF_WHOLE_FILE means there): a memory file the harness reads again after
# every compaction (the Claude Code reader's ``memory_reread``), which the simulated compaction keeps
TF_REREAD = TF_WHOLE_FILE
# on an attachment (never a call, which alone TF_FILE_STATE means there): what the harness added after a recorded
# compaction that the log does not hold (the prompt model's offset there: ``run_arrays.AFTER_COMPACTION``)
TF_AFTER = TF_FILE_STATE
# characters of the text Claude Code 2.1.38-2.1.68 sends for an answered user-message image
IMAGE_NOTE_CHARS = len("[image]")
# characters the Read tool's line numbering adds per line of a file beyond the JSON-escaped newline a Write call
# holds it with: a six-wide line number and an arrow (7) less the escape's extra backslash (1)
LINE_NUMBER_CHARS = 6
# the tools whose results Claude Code's microcompact clears (cli.js 1.0.128 to 2.1.41: Read, Bash, Grep, Glob,
# WebSearch, WebFetch, Edit, Write)
MICRO_TOOLS = ("Read", "Bash", "Grep", "Glob", "WebSearch", "WebFetch", "Edit", "Write")


@compiled
def harness_artefacts(kind, step, tflag):
    """Bool per item: a recorded summary, or what the harness re-sent with it (attachments and user messages of the
    same step, after the summary): products of the recorded policy, not of the agent. A memory file the harness
    read again (``TF_REREAD``) is not one: it follows any compaction at that point."""
    n = len(kind)
    out = np.zeros(n, np.bool_)
    for s in range(n):
        if kind[s] != SUMMARY:
            continue
        out[s] = True
        q = s + 1
        while q < n and step[q] == step[s] and kind[q] in RESENT:
            out[q] = kind[q] != ATTACHMENT or tflag[q] & TF_REREAD == 0
            q += 1
    return out


@compiled
def drop_artefacts(r, st):
    """Recorded summaries, their re-sent copies and the loader's recorded-only items are never in the view."""
    gone = harness_artefacts(r.kind, r.step, r.tflag)
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
    trigger_on: Literal[
        "prompt", "previous_prompt", "last_usage", "usage_and_new", "codex", "usage_and_reply_text", "usage_and_reply"
    ] = knob(
        "prompt",
        doc="prompt: the history about to be sent; previous_prompt: the last request's prompt "
        "(Gemini CLI); last_usage: that and the last response's output (Claude Code to 2.1.0); "
        "usage_and_new: that plus the messages since at chars/4 (Claude Code 2.1.3-2.1.68); usage_and_reply_text: "
        "that plus the last response's text blocks after its first block at chars/4 (Claude Code 2.1.69-2.1.7x); "
        "usage_and_reply: that plus all its blocks after the first, tool calls and reasoning too (Claude Code "
        "2.1.8x on); codex: the prompt plus codex-rs's estimate of earlier turns' encrypted reasoning (codex-rs)",
    )
    summary_tokens: int = knob(3_000, 0, 1_000_000, "size of the compaction summary")
    summary_from_log: bool = knob(
        False, doc="size the n-th summary like the run's n-th recorded summary (the knob past the last)"
    )
    summary_reads_cache: bool = knob(
        False,
        doc="the summariser call reads the conversation's cached prefix (Claude Code 2.1.38 on: a fork of the "
        "conversation); else it is sent uncached",
    )
    keep_user_tokens: int = knob(0, 0, 10_000_000, "newest user messages kept after the summary (Codex: 20,000)")
    keep_last: int = knob(1, 0, 100_000, "newest items kept verbatim (the presets: 0, all is summarised)")
    keep_rounds: int = knob(
        0,
        0,
        100_000,
        "newest rounds kept verbatim after the summary, a round being one response's output and all that "
        "follows it (Claude Code 2.1.153 on: 1); 0: keep_last decides",
    )
    background_until: float = knob(
        0.0,
        0.0,
        1.0,
        "summarise in the background: the summary of what was there "
        "when the limit was passed replaces it at the next request, "
        "at once past this fraction (Copilot CLI: 0.95); 0: at once",
    )
    cut_results_after: int = knob(
        0,
        0,
        10_000_000,
        "after a compaction, kept tool results past the newest this "
        "many tokens (chars/4) of them are cut to cut_chars (Gemini "
        "CLI: 50,000); 0: kept whole",
    )
    cut_chars: int = knob(40_000, 1, 100_000_000, "characters a cut tool result keeps (Gemini CLI: 40,000)")
    keep_fraction: float = knob(
        0.0,
        0.0,
        0.99,
        "newest share of the history's characters kept verbatim, from a "
        "user message on (Gemini CLI: 0.3); 0: keep_last decides",
    )
    reattach_tools: tuple[str, ...] = knob(
        (),
        doc="tools whose calls put their file in the harness's read-file state, whose newest files are re-read "
        "after the summary (Claude Code: Read, Write, Edit, MultiEdit, NotebookEdit; comma separated); none: no file",
    )
    reattach_whole_tools: tuple[str, ...] = knob(
        (), doc="of those, tools whose call carries the file's whole new content (Claude Code: Write)"
    )
    reattach_files: int = knob(5, 0, 100_000, "newest files of that state re-read after the summary (Claude Code: 5)")
    reattach_file_tokens: int = knob(
        5_000,
        0,
        10_000_000,
        "a file past this many tokens is not re-read whole (Claude Code 2.1.20 on: 5,000; 0: none)",
    )
    reattach_count: Literal["tokens", "chars/4"] = knob(
        "tokens",
        doc="how a file's content is counted against reattach_file_tokens: tokens (Claude Code's token-count call), "
        "chars/4 (its fallback when that call fails, 2.1.20 on)",
    )
    reattach_note_tokens: int = knob(
        0, 0, 1_000_000, "tokens of what stands for a file past that (Claude Code 2.1.20 on: a note of about 50)"
    )
    reattach_total: int = knob(
        50_000, 0, 100_000_000, "re-read files are kept while they add up to no more than this (chars/4; 50,000)"
    )
    reattach_order: Literal["mtime", "touched"] = knob(
        "mtime",
        doc="which files of the state are the newest: mtime (the files written in the session by their newest write, "
        "then those only read by their newest read; Claude Code 1.0.114 on), touched (by the newest call that "
        "touched each, read or write: to 1.0.113 a read is stamped with the time of the read)",
    )
    reattach_whole_file: bool = knob(
        False,
        doc="size a re-read file as the whole file the log tells after each call (an edit's original file, a write, "
        "a read's lines; Claude Code to 2.1.19); else by what the calls and results show",
    )
    reattach_turn_files: int = knob(
        0,
        0,
        100_000,
        "the harness rebuilds its read-file state at each user message from the newest this many files the "
        "history reads whole (Claude Code's SDK loop to 2.0.29: 10); 0: the state lasts from the last compaction",
    )
    reattach_turn_writes: bool = knob(
        False, doc="that rebuild takes the whole-content writes too (reattach_whole_tools; the SDK loop 2.0.15 on)"
    )
    microcompact: bool = knob(False, doc="clear old tool results before compacting (Claude Code 2.x)")
    micro_tools: tuple[str, ...] = knob(
        MICRO_TOOLS, doc="tools whose results microcompact clears (comma separated; * for every tool)"
    )
    micro_exempt: tuple[str, ...] = knob((), doc="tools whose results are never cleared (with micro_tools *)")
    micro_warning: int = knob(20_000, 0, 10_000_000, "microcompact once the last prompt is this close to the limit")
    micro_keep: int = knob(3, 0, 100_000, "newest calls of those tools never cleared")
    micro_keep_tokens: int = knob(40_000, 0, 10_000_000, "clear oldest first while the results add up to more")
    micro_min_saved: int = knob(20_000, 0, 10_000_000, "clear only if it saves at least this many (chars/4)")
    micro_note_chars: int = knob(200, 0, 100_000, "characters of the note a cleared result is replaced with")
    micro_images: bool = knob(
        False,
        doc="before every request, send each image of a user message a response has followed as [image] "
        "(Claude Code 2.1.38-2.1.68)",
    )
    micro_after: bool = knob(False, doc="clear after the compaction check, not before (Gemini CLI's masking)")
    micro_skip_new: bool = knob(
        False, doc="results this request sends for the first time are neither cleared nor counted (Gemini CLI)"
    )
    keep_first_prompt: bool = knob(
        False, doc="what the first request sent stays before the summary (inspect_ai: the system and input messages)"
    )

    def validate(self) -> None:
        if self.threshold <= 0:
            raise ReplayError("auto_compact: threshold must be in (0, 1]")


(
    P_LIMIT,
    P_PREVIOUS,
    P_SUMMARY_TOKENS,
    P_FROM_LOG,
    P_KEEP_USER,
    P_KEEP_LAST,
    P_RE_FILES,
    P_KEEP_FRACTION,
    P_BACKGROUND_LIMIT,
    P_CUT_AFTER,
    P_CUT_CHARS,
    P_MICRO,
    P_MICRO_WARNING,
    P_MICRO_KEEP,
    P_MICRO_KEEP_TOKENS,
    P_MICRO_MIN_SAVED,
    P_MICRO_NOTE,
    P_MICRO_AFTER,
    P_MICRO_NEW,
    P_KEEP_ROUNDS,
    P_OUT_RESERVE,
    P_BUFFER,
    P_FIXED_WINDOW,
    P_BACKGROUND_SHARE,
    P_KEEP_FIRST,
    P_RE_CAP,
    P_RE_NOTE,
    P_RE_TOTAL,
    P_RE_CHARS4,
    P_MICRO_IMAGES,
    P_RE_TURN,
    P_RE_TURN_WRITES,
    P_RE_TOUCHED,
    P_RE_WHOLE,
) = range(P_POLICY, P_POLICY + 34)
# trigger_on's codes (P_PREVIOUS; RunArrays.req_trigger gives one per request)
TRIGGERS = {
    "prompt": 0,
    "previous_prompt": 1,
    "usage_and_new": 2,
    "last_usage": 3,
    "codex": 4,
    "usage_and_reply_text": 6,
    "usage_and_reply": 7,
}
# a per-request code only (RunArrays.req_trigger): the harness compacts before this request whatever the size
# (codex-rs when the turn's model has another comp_hash than the previous turn's; replay.simulator.request_windows)
COMPACT_NOW = 5
# compactions so far; recorded summaries (summary_from_log); 1 + the history's end when a background one started
S_COMPACTIONS, S_RECORDED, S_PENDING = S_POLICY, S_POLICY + 1, S_POLICY + 2
# items from the start of the body up to here are all dropped (a drop is for good), or kept for good
# (keep_first_prompt: the first request's items)
S_LIVE_FROM = S_POLICY + 3
S_CUT = S_POLICY + 4  # the history's end when the last compaction was made: what it summarised lies before
S_STATE_FROM = S_POLICY + 5  # the history's end at the last compaction: the harness's file state was reset there
# aux rows: the recorded summaries' tokens, in order (the first S_RECORDED entries); per item, 1 for a call of a
# microcompact tool (and its result); per resource id, 1 for a file re-read after the last compaction (still in the
# harness's file state), and scratch rows for ``reattached`` (per resource: its rank; tokens and chars/4 as the Read
# tool shows it; its content alone as the Read tool's limit counts it, tokens or chars/4; 1 when that size is the
# whole file's as the log gives it, 2 when it is estimated from the file's lines)
A_RECORDED, A_MICRO, A_STATE, A_RANK, A_SIZE, A_EST, A_RAW, A_WHOLE = 0, 1, 2, 3, 4, 5, 6, 7


class AutoCompact(CompiledPolicy):
    name = "auto_compact"
    Config = AutoCompactConfig
    config: AutoCompactConfig  # PolicyBase.__init__ checks the instance is a Config
    space = (
        Knob("threshold", 0.5, 0.95, 0.85, weight=3, usable=True),
        Knob("keep_user_tokens", 0.0, 0.15, 0.0, integer=True, relative=True, weight=1.5),
        Knob("summary_tokens", 1000, 6000, 3000, integer=True, weight=1, step=100),
    )

    def limits(self, window: int) -> list[tuple[str, float]]:
        c = self.config
        return [("threshold", c.threshold * ((c.context_window or window) - c.output_reserve) - c.buffer_tokens)]

    def knobs(self, p: np.ndarray, budget: Budget) -> None:
        c = self.config
        window = c.context_window or budget.window
        p[P_LIMIT] = c.threshold * (window - c.output_reserve) - c.buffer_tokens
        p[P_PREVIOUS] = TRIGGERS[c.trigger_on]
        p[P_SUMMARY_TOKENS] = c.summary_tokens
        p[P_FROM_LOG], p[P_KEEP_USER], p[P_KEEP_LAST] = c.summary_from_log, c.keep_user_tokens, c.keep_last
        p[P_KEEP_ROUNDS] = c.keep_rounds
        p[P_KEEP_FRACTION] = c.keep_fraction
        p[P_RE_FILES], p[P_RE_CAP] = c.reattach_files if c.reattach_tools else 0, c.reattach_file_tokens
        p[P_RE_NOTE], p[P_RE_TOTAL] = c.reattach_note_tokens, c.reattach_total
        p[P_RE_CHARS4] = c.reattach_count == "chars/4"
        p[P_RE_TURN], p[P_RE_TURN_WRITES] = c.reattach_turn_files, c.reattach_turn_writes
        p[P_RE_TOUCHED] = c.reattach_order == "touched"
        p[P_RE_WHOLE] = c.reattach_whole_file
        p[P_CUT_AFTER], p[P_CUT_CHARS] = c.cut_results_after, c.cut_chars
        p[P_BACKGROUND_LIMIT] = (
            c.background_until * (window - c.output_reserve) - c.buffer_tokens if c.background_until > 0 else 0
        )
        # background_until's limit of another window: a request the log says its model served on one (Copilot CLI:
        # 0.95 of the serving model's window, no reserve or buffer)
        p[P_OUT_RESERVE], p[P_BUFFER] = c.output_reserve, c.buffer_tokens
        p[P_FIXED_WINDOW], p[P_BACKGROUND_SHARE] = c.context_window > 0, c.background_until
        p[P_MICRO], p[P_MICRO_WARNING], p[P_MICRO_KEEP] = c.microcompact, c.micro_warning, c.micro_keep
        p[P_MICRO_KEEP_TOKENS], p[P_MICRO_MIN_SAVED] = c.micro_keep_tokens, c.micro_min_saved
        p[P_MICRO_NOTE], p[P_MICRO_AFTER], p[P_MICRO_NEW] = c.micro_note_chars, c.micro_after, c.micro_skip_new
        p[P_KEEP_FIRST] = c.keep_first_prompt
        p[P_MICRO_IMAGES] = c.micro_images

    def tool_flags(self, tool_names: tuple[str, ...]) -> np.ndarray:
        c = self.config
        tools = set(c.micro_tools) if c.microcompact else set()
        every = "*" in tools
        state, whole = set(c.reattach_tools), set(c.reattach_whole_tools) & set(c.reattach_tools)
        return np.array(
            [
                TF_MICRO * ((every or t in tools) and t not in c.micro_exempt)
                | TF_FILE_STATE * (t in state)
                | TF_WHOLE_FILE * (t in whole or t == MEMORY_REREAD)
                | TF_AFTER * (t == AFTER_COMPACTION)
                | TF_TOOL
                for t in tool_names
            ],
            dtype=np.int8,
        )


@compiled(borrowed=True)
def limit(p, r, st):
    """The limit at this request: the one the harness's preset for the model serving it has where the log says that
    is another (``RunArrays.req_limit``: the harness takes its threshold from the current model's window and output
    reserve), else the policy's; a fixed ``context_window`` holds whatever the log says."""
    return request_limit(r, st, p[P_LIMIT], p[P_FIXED_WINDOW] > 0)


@compiled(borrowed=True)
def trigger(p, r, st):
    """What the limit is checked against at this request (``TRIGGERS``): the serving model's preset's where the log
    gives another (``RunArrays.req_trigger``), else ``trigger_on``'s."""
    k = st.s[S_K]
    if k >= len(r.req_trigger) or r.req_trigger[k] < 0 or p[P_FIXED_WINDOW] > 0:
        return np.int64(p[P_PREVIOUS])
    return r.req_trigger[k]


@compiled(borrowed=True)
def background_limit(p, st):
    """``background_until``'s limit at this request, of the same window as ``limit`` (0: none)."""
    w = st.s[S_WINDOW]
    if w <= 0 or p[P_FIXED_WINDOW] > 0 or p[P_BACKGROUND_SHARE] <= 0:
        return p[P_BACKGROUND_LIMIT]
    return p[P_BACKGROUND_SHARE] * (w - p[P_OUT_RESERVE]) - p[P_BUFFER]


@compiled(borrowed=True)
def setup(p, r, st):
    """The harness's artefacts out of the view; the recorded summaries' sizes when the summaries follow the log;
    with keep_first_prompt the first request's items are never summarised (the passes over the history start
    after them)."""
    drop_artefacts(r, st)
    if p[P_KEEP_FIRST] > 0 and len(r.req_end) > 0:
        st.s[S_LIVE_FROM] = r.req_end[0]
    n = 0
    if p[P_FROM_LOG] > 0:
        for q in range(len(r.kind)):
            if r.kind[q] == SUMMARY:
                st.aux[A_RECORDED, n] = r.tokens[q]
                n += 1
    st.s[S_RECORDED] = n
    if p[P_MICRO_IMAGES] > 0:
        estimator, ratio = int(p[P_ESTIMATOR]), token_ratio(r)
        for q in range(len(r.kind)):
            if r.kind[q] == IMAGE and r.tflag[q] & TF_TOOL == 0:
                st.ftok[PLACEHOLDER, q], st.fest[PLACEHOLDER, q] = wording_cost(
                    r, q, np.int64(IMAGE_NOTE_CHARS), ratio, estimator
                )
    if p[P_MICRO] > 0:
        estimator, ratio = int(p[P_ESTIMATOR]), token_ratio(r)
        for q in range(len(r.kind)):
            if r.kind[q] == TOOL_CALL and r.tflag[q] & TF_MICRO != 0:
                st.aux[A_MICRO, q] = 1
                res = r.pair[q]
                if res >= 0:
                    st.aux[A_MICRO, res] = 1
                    st.ftok[PLACEHOLDER, res], st.fest[PLACEHOLDER, res] = wording_cost(
                        r, res, np.int64(p[P_MICRO_NOTE]), ratio, estimator
                    )


@compiled(borrowed=True)
def live_from(r, st):
    """First position after the prefix that is not dropped (the history's end if none). Everything before it is
    summarised, so the passes over the history start here: their work is the live view, not every item so far."""
    q, end = max(st.s[S_LIVE_FROM], prefix_end(r, st)), st.s[S_END]
    while q < end and st.forms[q] == DROPPED:
        q += 1
    st.s[S_LIVE_FROM] = q
    return q


@compiled(borrowed=True)
def new_result(p, r, st, res):
    """With ``micro_skip_new``: a result this request sends for the first time (or none yet), which Gemini CLI's
    masking does not see (it masks the history before the function responses it sends join it)."""
    return p[P_MICRO_NEW] > 0 and (res < 0 or r.step[res] >= st.s[S_K])


@compiled(borrowed=True)
def micro_size(r, st, res):
    """A result's size as the clearing pass counts it: chars/4, or what a compaction's cut left of it."""
    if st.forms[res] == SHRUNK:
        return np.int64(st.fest[SHRUNK, res])
    return np.int64((r.chars[res] + 2) // 4)


@compiled(borrowed=True)
def micro_pass(p, r, st, apply):
    """Tokens (chars/4, as Claude Code sizes them) microcompact would save now; with ``apply`` clear them. The
    candidates are the live calls of the microcompact tools whose result is not cleared yet, oldest first; the newest
    ``micro_keep`` are kept; the rest are cleared while the candidates' results add up to more than
    ``micro_keep_tokens``."""
    lo, end = live_from(r, st), st.s[S_END]
    n, total = 0, np.int64(0)
    for q in range(lo, end):
        if r.kind[q] == TOOL_CALL and st.aux[A_MICRO, q] > 0 and st.forms[q] != DROPPED:
            res = r.pair[q]
            if 0 <= res < end and st.forms[res] == PLACEHOLDER or new_result(p, r, st, res):
                continue
            n += 1
            if 0 <= res < end and st.forms[res] != DROPPED:
                total += micro_size(r, st, res)
    saved, i = np.int64(0), 0
    for q in range(lo, end):
        if i >= n - np.int64(p[P_MICRO_KEEP]):
            break
        if not (r.kind[q] == TOOL_CALL and st.aux[A_MICRO, q] > 0 and st.forms[q] != DROPPED):
            continue
        res = r.pair[q]
        if 0 <= res < end and st.forms[res] == PLACEHOLDER or new_result(p, r, st, res):
            continue
        i += 1
        if total - saved > p[P_MICRO_KEEP_TOKENS] and 0 <= res < end and st.forms[res] != DROPPED:
            saved += micro_size(r, st, res)
            if apply:
                set_form(st, res, PLACEHOLDER)
    return saved


@compiled(borrowed=True)
def microcompact(p, r, st):
    """Claude Code's automatic microcompact: once the last prompt is within micro_warning of the limit, clear the
    old tool results if that saves at least micro_min_saved."""
    if p[P_MICRO] <= 0 or st.s[S_K] == 0 or last_usage(r, st) < limit(p, r, st) - p[P_MICRO_WARNING]:
        return
    if micro_pass(p, r, st, False) >= p[P_MICRO_MIN_SAVED]:
        micro_pass(p, r, st, True)
        st.s[S_SUMMARISED] |= SUMMARY_CLEARED


@compiled(borrowed=True)
def clear_images(p, r, st):
    """Claude Code 2.1.38-2.1.68's microcompact, before every request whatever the limit: each image of a user
    message that a response has followed (sent before this request) is sent as ``[image]`` from now on. Claude Code
    logs the pass when it replaces one, and at the first request of a user turn whenever such an image is in the
    view: a turn starts from the messages as stored (images whole), its later requests from what the pass left."""
    if p[P_MICRO_IMAGES] <= 0:
        return
    k, prev, end = st.s[S_K], st.s[S_PREV_END], st.s[S_END]
    new_turn = prev > 0 and end > prev and r.turn[end - 1] != r.turn[prev - 1]
    logged = False
    for q in range(live_from(r, st), end):
        if r.kind[q] != IMAGE or r.tflag[q] & TF_TOOL != 0 or r.step[q] >= k or st.forms[q] == DROPPED:
            continue
        if st.forms[q] != PLACEHOLDER:
            set_form(st, q, PLACEHOLDER)
            logged = True
        elif new_turn:
            logged = True
    if logged:
        st.s[S_SUMMARISED] |= SUMMARY_CLEARED


@compiled(borrowed=True)
def reported(r, st):
    """What the server counted beyond this policy's estimate of the last request (the run's ``usage_offset``:
    recorded - replayed, given by ``replay fidelity``; 0 otherwise): the harness reads the usage the server
    reported, so where the view is the recorded one its trigger sees the recorded prompt."""
    k = st.s[S_K]
    return r.usage_offset[k - 1] if 0 < k <= len(r.usage_offset) else np.int64(0)


@compiled(borrowed=True)
def last_usage(r, st):
    """The last response's usage as Claude Code adds it up: its prompt (input, cache read and write) and its
    output, i.e. the previous request's prompt (the uncached tail of the prefix and any ``--overhead`` included: the
    server counted them) plus the assistant items added since (0 before the first)."""
    if st.s[S_K] == 0:
        return np.int64(0)
    out = np.int64(0)
    for q in range(st.s[S_PREV_END], st.s[S_END]):
        if r.kind[q] == OUTPUT[0] or r.kind[q] == OUTPUT[1] or r.kind[q] == OUTPUT[2]:
            out += st.fest[st.forms[q], q]
    return st.s[S_SENT_EST] + out + reported(r, st)


@compiled(borrowed=True)
def new_chars4(r, st):
    """The messages added since the last response other than its own output, at chars/4 rounded (Claude Code's
    estimate of what the last usage does not count yet)."""
    n = np.int64(0)
    for q in range(st.s[S_PREV_END], st.s[S_END]):
        if st.forms[q] != DROPPED and not (r.kind[q] == OUTPUT[0] or r.kind[q] == OUTPUT[1] or r.kind[q] == OUTPUT[2]):
            n += (r.chars[q] + 2) // 4
    return n


@compiled(borrowed=True)
def reply_tail_chars4(r, st, every):
    """The last response's blocks after its first, at chars/4 rounded each (Claude Code 2.1.69 on): a response is
    stored one record per content block, all with the response's id, and Claude Code's estimate starts after the
    first record of the last response (it walks back over its siblings), so the blocks after that one are estimated
    on top of the usage that already counts them as output. ``every``: text, tool calls (name and input) and
    reasoning; else the text blocks alone (to the 2.1.7x estimator, a tool call or thinking block counts 0)."""
    n, first = np.int64(0), True
    for q in range(st.s[S_PREV_END], st.s[S_END]):
        if st.forms[q] == DROPPED or not is_output(r, q):
            continue
        if first:
            first = False
        elif every or r.kind[q] == ASSISTANT_TEXT:
            n += (r.chars[q] + 2) // 4
    return n


@compiled(borrowed=True)
def earlier_reasoning(r, st):
    """codex-rs's own estimate of the encrypted reasoning items before the newest user message, of those not
    summarised by a compaction (the server no longer counts them; codex-rs adds them to its usage)."""
    end = st.s[S_END]
    if end == 0:
        return np.int64(0)
    turn, n = r.turn[end - 1], np.int64(0)
    for q in range(max(st.s[S_CUT], prefix_end(r, st)), end):
        if r.harness_est[q] > 0 and r.turn[q] < turn:
            n += r.harness_est[q]
    return n


@compiled(borrowed=True)
def turn_start(r, st, end):
    """First item of the newest turn of the history up to ``end`` (``end`` when empty)."""
    q = end
    while q > 0 and r.turn[q - 1] == r.turn[end - 1]:
        q -= 1
    return q


@compiled(borrowed=True)
def new_turn_items(r, st):
    """At a turn's first request, the estimate of what the turn has added to the view (its context updates and
    input); 0 at a later request. codex-rs checks its limit before a turn records these
    (``run_pre_sampling_compact`` runs before ``record_context_updates_and_set_reference_context_item`` and the
    input), so the turn's first request can go out past the limit and the compaction follows it."""
    end, prev = st.s[S_END], st.s[S_PREV_END]
    if st.s[S_K] == 0 or prev <= 0 or end <= prev or r.turn[end - 1] == r.turn[prev - 1]:
        return np.int64(0)
    n = np.int64(0)
    for q in range(turn_start(r, st, end), end):
        if st.forms[q] != DROPPED:
            n += st.fest[st.forms[q], q]
    return n


@compiled(borrowed=True)
def due(p, r, st):
    mode, lim = trigger(p, r, st), limit(p, r, st)
    if mode == COMPACT_NOW:
        return True
    if mode == 4:  # codex-rs: the prompt about to be sent plus its estimate of earlier turns' reasoning
        return est_total(st) - new_turn_items(r, st) + reported(r, st) + earlier_reasoning(r, st) >= lim
    if mode == 1:  # the previous request's prompt, as the harness read it from the last response's usage
        return st.s[S_K] > 0 and st.s[S_SENT_EST] + reported(r, st) > lim
    if mode == 2:  # Claude Code 2.1.3 to 2.1.68: the last response's usage plus the messages since at chars/4
        return st.s[S_K] > 0 and last_usage(r, st) + new_chars4(r, st) >= lim
    if mode == 6 or mode == 7:  # 2.1.69 on: and the last response's blocks after its first
        return st.s[S_K] > 0 and last_usage(r, st) + new_chars4(r, st) + reply_tail_chars4(r, st, mode == 7) >= lim
    if mode == 3:  # Claude Code to 2.1.0: the last response's usage (its prompt and output)
        return st.s[S_K] > 0 and last_usage(r, st) >= lim
    return est_total(st) + reported(r, st) > lim


@compiled(borrowed=True)
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


@compiled(borrowed=True)
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


@compiled(borrowed=True)
def is_output(r, q):
    """Item q is part of a response (its text, reasoning or a tool call)."""
    return r.kind[q] == OUTPUT[0] or r.kind[q] == OUTPUT[1] or r.kind[q] == OUTPUT[2]


@compiled(borrowed=True)
def round_start(p, r, st, lo, end):
    """First item of the newest keep_rounds rounds of the live history [lo, end): a round is a response's output
    and everything after it up to the next response (the items of one request step that holds output), as Claude
    Code groups the messages it compacts by API response. ``lo`` (nothing to summarise) when the history holds
    fewer rounds, or no response before them (Claude Code's reactive compaction then gives up)."""
    want, n, step = np.int64(p[P_KEEP_ROUNDS]), 0, -1
    for q in range(end - 1, lo - 1, -1):
        if st.forms[q] != DROPPED and is_output(r, q) and r.step[q] != step:
            n += 1
            step = r.step[q]
            if n == want:
                break
    if n < want:
        return lo
    start = lo
    while start < end and r.step[start] < step:
        start += 1
    for q in range(lo, start):
        if st.forms[q] != DROPPED and is_output(r, q):
            return pair_safe_start(r, st, start)
    return lo


@compiled(borrowed=True)
def summary_size(p, st):
    """The n-th summary is the n-th recorded one's size (summary_from_log), else summary_tokens."""
    n = st.s[S_COMPACTIONS]
    if n < st.s[S_RECORDED]:
        return st.aux[A_RECORDED, n]
    return np.int64(p[P_SUMMARY_TOKENS])


@compiled(borrowed=True)
def added_after(p, r, st):
    """With summary_from_log, what the harness added after the n-th recorded summary (past the log's summaries, the
    last one's; else 0): the attachments the log shows at its step after it (re-read files, hook context) but the
    memory files read again, which a compaction keeps (``TF_REREAD``), and what the log does not hold (``TF_AFTER``
    attachments: Claude Code announces its deferred tools, MCP instructions and agents again, and to 2.1.87 logs no
    attachment at all)."""
    n = min(st.s[S_COMPACTIONS], st.s[S_RECORDED] - 1)
    if p[P_FROM_LOG] <= 0 or n < 0:
        return np.int64(0)
    seen, total = -1, np.int64(0)
    for q in range(len(r.kind)):
        seen += r.kind[q] == SUMMARY
        if seen == n and r.kind[q] == SUMMARY:
            x = q - 1  # the step's unlogged content before the summary, then what follows it
            while x >= 0 and r.step[x] == r.step[q]:
                total += r.tokens[x] if r.kind[x] == ATTACHMENT and r.tflag[x] & TF_AFTER != 0 else 0
                x -= 1
            x = q + 1
            while x < len(r.kind) and r.step[x] == r.step[q]:
                total += r.tokens[x] if r.kind[x] == ATTACHMENT and r.tflag[x] & TF_REREAD == 0 else 0
                x += 1
            break
    return total


@compiled(borrowed=True)
def compact(p, r, st):
    """Compact now; the kept part by keep_fraction, keep_rounds or keep_last, or, where the harness compacts before
    a turn whatever the size (``COMPACT_NOW``), the turn's own items."""
    lo, end = prefix_end(r, st), st.s[S_END]
    if trigger(p, r, st) == COMPACT_NOW:  # before the turn: what it records (context updates, input) follows
        compact_before(p, r, st, pair_safe_start(r, st, max(turn_start(r, st, end), lo)))
    elif p[P_KEEP_FRACTION] > 0:
        start = fraction_start(p, r, st, live_from(r, st), end)  # lo when none: nothing live before either
    elif p[P_KEEP_ROUNDS] > 0:
        start = round_start(p, r, st, live_from(r, st), end)
    else:
        start = pair_safe_start(r, st, max(end - np.int64(p[P_KEEP_LAST]), lo))
    compact_before(p, r, st, start)


@compiled(borrowed=True)
def compact_before(p, r, st, start):
    """Everything live before ``start`` becomes the summary, but the newest user messages kept; the files the
    harness re-reads after it (``reattached``), or what the log shows it added there when more (``added_after``),
    ride on the summary, which the summariser call writes alone. The memory files the harness read again at the
    newest recorded compaction so far (``TF_REREAD``) stay: they are what it reads after any; so does harness
    prefix that starts mid-run (``kernel.pinned``)."""
    lo = live_from(r, st)
    live = 0
    reread = -1  # the step of the newest memory files read again
    for q in range(lo, start):
        live += st.forms[q] != DROPPED and not pinned(r, q)
        if r.kind[q] == ATTACHMENT and r.tflag[q] & TF_REREAD != 0:
            reread = r.step[q]
    if live == 0:
        return
    oldest, shrunk = kept_users(p, r, st, lo, start)
    for q in range(lo, start):
        if st.forms[q] == DROPPED:
            continue
        if r.kind[q] == ATTACHMENT and r.tflag[q] & TF_REREAD != 0 and r.step[q] == reread:
            continue
        if r.kind[q] == USER and q >= oldest:
            set_form(st, q, SHRUNK if q == shrunk else ORIGINAL)
        else:
            drop(r, st, q)
    # what rides on the summary: the files the preset re-reads, or what the log shows the harness added there when
    # that is more (LAF-US/IDAHO-VAULT ad723d79, 2.1.111: 14,055 tokens the log lacks besides its re-read files;
    # 82e1012b, 2.1.87: 8,650 the log lacks, its re-read files, which the preset sizes at 8,784)
    summary = summary_size(p, st)
    size = summary + max(reattached(p, r, st, start), added_after(p, r, st))
    set_summariser_output(st, summary)  # the summariser writes the summary alone
    st.s[S_COMPACTIONS] += 1
    st.s[S_CUT] = max(st.s[S_CUT], start)
    # the summary (and the files re-attached with it) stands before the kept user messages: codex-rs puts the kept
    # user messages first, then the summary; the difference is order only, the tokens are the same
    set_summary(st, oldest, size, size)
    if p[P_CUT_AFTER] > 0:
        cut_kept_results(p, r, st, start)


@compiled(borrowed=True)
def file_size(r, q, extra_chars, chars4):
    """(tokens, chars/4, content alone) of a file item q holds, as the Read tool shows it: q's text plus
    ``extra_chars`` per line (the line numbering a write's content lacks, or none: a read's result has it), at q's
    own tokens per character; the content alone is without the numbering and q's message framing, at chars/4 when
    ``chars4``, else in tokens."""
    text = max(r.tokens[q] - r.framing[q], 0)
    per_char = text / max(r.chars[q], 1)
    lines = np.int64(max(r.lines[q], 1))
    tok = r.tokens[q] + np.int64(np.ceil(extra_chars * lines * per_char))
    bare = r.chars[q] - (LINE_NUMBER_CHARS + 1 - extra_chars) * lines  # the content's characters
    raw = (bare + 3) // 4 if chars4 else text - np.int64(np.ceil((r.chars[q] - bare) * per_char))
    return tok, (r.chars[q] + extra_chars * lines + 3) // 4, max(raw, np.int64(0))


@compiled(borrowed=True)
def whole_file_size(r, q, res, chars4):
    """(tokens, chars/4, content alone, how known) of the whole file after file call q (its result ``res``), as the
    Read tool shows it from disk, from what the log tells of it (``RunArrays.file_chars``, ``file_lines``): the file's
    characters (for a read of a line range, that result's characters per line, less the line numbers, over the file's
    lines) and lines numbered as the Read tool numbers them (6-wide and an arrow), at the tokens per character of the
    item that holds text of it (a write's or an edit's call, a read's result). How known: 1 when the log gives the
    file's characters, 2 when only its lines (an estimate), 0 when neither (the rest of the tuple then 0)."""
    chars, lines = r.file_chars[res], r.file_lines[res]
    if lines <= 0:
        return np.int64(0), np.int64(0), np.int64(0), 0
    how = 1
    if r.access[q] == READ and chars <= 0:  # a line range: its content's characters per line over the file's lines
        shown = max(r.lines[res], 1)
        chars = np.int64(np.round(max(r.chars[res] - (LINE_NUMBER_CHARS + 1) * shown, 0) / shown * lines))
        how = 2
    if chars <= 0:
        return np.int64(0), np.int64(0), np.int64(0), 0
    holder = q if r.access[q] == WRITE else res
    text = max(r.tokens[holder] - r.framing[holder], 0)
    per_char = text / max(r.chars[holder], 1)
    with_numbers = chars + (LINE_NUMBER_CHARS + 1) * lines
    tok = r.framing[holder] + np.int64(np.ceil(with_numbers * per_char))
    raw = (chars + 3) // 4 if chars4 else np.int64(np.ceil(chars * per_char))
    return tok, (with_numbers + 3) // 4, raw, how


@compiled(borrowed=True)
def edit_tokens(r, q):
    """Tokens of content edit call q adds to its file (``Run.edit_chars`` at q's own tokens per character;
    negative when it removes some)."""
    per_char = max(r.tokens[q] - r.framing[q], 0) / max(r.chars[q], 1)
    return np.int64(np.round(r.edit_chars[q] * per_char))


@compiled(borrowed=True)
def file_state(p, r, st, nres, chars4):
    """Fill the scratch rows for ``reattached`` over the history so far: per resource id, its rank in the harness's
    read-file state (-1: not in it) and its newest known size (tokens, chars/4; -1: none known); ``A_STATE`` marks
    the files in that state.

    A file is in the state when a ``reattach_tools`` call touched it since the last compaction, or it was re-read
    after that compaction (``A_STATE``). Claude Code orders the state by the file's modification time: a file written
    in the session ranks by its newest write, above every file only read (modified before the session; those rank
    by their newest read, the log giving no time); with ``reattach_order`` "touched" (to 1.0.113, which stamps a
    read with the time of the read) every file ranks by the newest call that touched it. Its size, with
    ``reattach_whole_file``, is the whole file's, as the harness reads it from disk: where the log tells it after a
    call (``whole_file_size``: a Write's
    content, an Edit's original file with the edit, a whole read; from a read of a line range, its lines), that,
    an estimate from lines giving way to a size the log gives; else a ``reattach_whole_tools`` call's content, or
    the largest read since (a read with an offset or limit shows part of the file), changed by each edit since by
    the content it adds (``edit_tokens``; as shown, with the file's own share of line numbering); for a file only
    edited, its first edit's call.

    With ``reattach_turn_files`` (Claude Code's SDK loop to 2.0.29) the state is rebuilt at each user message:
    the calls of the current user turn (since the last compaction) as above, and, unless a compaction in this turn
    reset it, the newest ``reattach_turn_files`` files of the whole history read whole (``rebuilt_state``)."""
    end, since = st.s[S_END], st.s[S_STATE_FROM]
    turn_files = np.int64(p[P_RE_TURN])
    first = turn_start(r, st, end) if turn_files > 0 and end > 0 else 0  # the current user turn's first item
    rank, size, est, raw = st.aux[A_RANK], st.aux[A_SIZE], st.aux[A_EST], st.aux[A_RAW]
    known = st.aux[A_WHOLE]
    for f in range(nres):
        rank[f], size[f], est[f], raw[f], known[f] = -1, -1, 0, 0, 0
        if turn_files > 0 and since <= first:  # rebuilt at this turn: what a compaction re-read is not in it
            st.aux[A_STATE, f] = 0
    for q in range(end):
        f = r.resource[q]
        if f < 0 or r.kind[q] != TOOL_CALL or r.tflag[q] & TF_FILE_STATE == 0:
            continue
        if r.access[q] != READ and r.access[q] != WRITE:
            continue
        res = r.pair[q]
        done = 0 <= res < end
        if done and r.is_error[res] or not done and r.access[q] == READ:
            continue
        tok, e, content, how = np.int64(0), np.int64(0), np.int64(0), 0
        if done and p[P_RE_WHOLE] > 0:
            tok, e, content, how = whole_file_size(r, q, res, chars4)
        if how == 1 or how == 2 and known[f] != 1:  # the whole file as the log tells it (an estimate: no better)
            size[f], est[f], raw[f], known[f] = tok, e, content, how
        elif r.access[q] == READ:
            tok, e, content = file_size(r, res, 0, chars4)
            if tok > size[f]:
                size[f], est[f], raw[f] = tok, e, content
        elif r.tflag[q] & TF_WHOLE_FILE != 0:
            size[f], est[f], raw[f] = file_size(r, q, LINE_NUMBER_CHARS, chars4)
        elif size[f] < 0:
            size[f], est[f], raw[f] = file_size(r, q, LINE_NUMBER_CHARS, chars4)
        elif raw[f] > 0:  # the file as shown grows with its content, numbering in proportion
            grow = edit_tokens(r, q)
            shown = (est[f] if chars4 else size[f]) / raw[f]
            size[f] += np.int64(np.round(grow * shown))
            est[f] += np.int64(np.round(r.edit_chars[q] * shown / 4))
            raw[f] = max(raw[f] + (np.int64(np.round(r.edit_chars[q] / 4)) if chars4 else grow), np.int64(0))
        if turn_files > 0 and q < first:  # an earlier turn's call: only the rebuild below brings its file back
            continue
        rank[f] = max(rank[f], q + 2 * end if r.access[q] == WRITE and p[P_RE_TOUCHED] <= 0 else q)
        if q >= since:
            st.aux[A_STATE, f] = 1
    if turn_files > 0 and since <= first:
        rebuilt_state(p, r, st, first, end, turn_files)
    for f in range(nres):
        if st.aux[A_STATE, f] == 0:
            rank[f] = -1


@compiled(borrowed=True)
def rebuilt_state(p, r, st, first, end, turn_files):
    """The files Claude Code's SDK loop (2.0.0-2.0.29) puts back in its read-file state at the user message that
    starts the turn at ``first``: walking the whole history (a compaction's summary does not stop it), the newest
    ``turn_files`` files a successful read showed whole (no offset or limit) or, with ``reattach_turn_writes``, a
    ``reattach_whole_tools`` call wrote (2.0.15 on). They are stamped with that message's time: each ranks below the
    files the turn has written and above those it has only read, the newest first; a file the turn touched keeps
    the turn's rank."""
    rank = st.aux[A_RANK]
    found = 0
    for q in range(first - 1, -1, -1):
        if found >= turn_files:
            break
        f = r.resource[q]
        if f < 0 or r.kind[q] != TOOL_CALL or r.tflag[q] & TF_FILE_STATE == 0:
            continue
        res = r.pair[q]
        if not 0 <= res < end:
            continue
        whole_read = r.access[q] == READ and not r.part_read[q] and not r.is_error[res]
        whole_write = p[P_RE_TURN_WRITES] > 0 and r.access[q] == WRITE and r.tflag[q] & TF_WHOLE_FILE != 0
        if not (whole_read or whole_write) or st.aux[A_STATE, f] == 2:
            continue
        found += 1
        if st.aux[A_STATE, f] == 0:  # not touched this turn
            rank[f] = end + q
        st.aux[A_STATE, f] = 2  # in the state (2: taken by this walk)


@compiled(borrowed=True)
def reattached(p, r, st, start):
    """Tokens of the files the harness re-reads after a summary of what lies before ``start`` (Claude Code's
    post-compact file restore): the newest ``reattach_files`` files of its read-file state (``file_state``) but
    those a kept read shows (2.1.160 leaves out the files the kept messages read), each one past
    ``reattach_file_tokens`` replaced by ``reattach_note_tokens``, then kept while their chars/4 add up to no more
    than ``reattach_total``. The state is reset: what was re-read whole is all it holds after the summary."""
    nres, end = 0, st.s[S_END]
    if p[P_RE_FILES] > 0:
        for q in range(end):
            nres = max(nres, r.resource[q] + 1)
    if nres == 0:
        st.s[S_STATE_FROM] = end
        return np.int64(0)
    file_state(p, r, st, nres, p[P_RE_CHARS4] > 0)
    rank, size, est, raw = st.aux[A_RANK], st.aux[A_SIZE], st.aux[A_EST], st.aux[A_RAW]
    for q in range(start, end):
        kept_read = r.kind[q] == TOOL_CALL and r.access[q] == READ and r.tflag[q] & TF_FILE_STATE != 0
        if kept_read and r.resource[q] >= 0 and st.forms[q] != DROPPED:
            rank[r.resource[q]] = -1
    for f in range(nres):
        st.aux[A_STATE, f] = 0  # the state is reset: from here on, 1 for a file re-read whole
    st.s[S_STATE_FROM] = end
    total, total_est = np.int64(0), np.int64(0)
    for _ in range(np.int64(p[P_RE_FILES])):
        best = -1
        for f in range(nres):
            if rank[f] >= 0 and (best < 0 or rank[f] > rank[best]):
                best = f
        if best < 0:
            break
        rank[best] = -1
        tok, e, whole = size[best], est[best], True
        if tok < 0 or p[P_RE_CAP] > 0 and raw[best] > p[P_RE_CAP]:  # too large: a note at most, not re-read
            tok, e, whole = np.int64(p[P_RE_NOTE]), np.int64(p[P_RE_NOTE]), False
            if tok <= 0:
                continue
        if total_est + e <= p[P_RE_TOTAL]:
            total += tok
            total_est += e
            st.aux[A_STATE, best] = whole
    return total


@compiled(borrowed=True)
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


@compiled(borrowed=True)
def decide(p, r, st):
    k = st.s[S_K]
    if k < len(r.req_resumed) and r.req_resumed[k]:  # a new process: its read-file state is rebuilt from the calls
        st.aux[A_STATE, :] = 0  # the loaded messages hold (file_state), not from what a compaction re-read
    if st.s[S_PENDING] > 0:  # a background summary of the history as it was replaces that part now
        checkpoint = st.s[S_PENDING] - 1
        st.s[S_PENDING] = 0
        compact_before(p, r, st, pair_safe_start(r, st, max(checkpoint, prefix_end(r, st))))
        return
    fire = due(p, r, st)  # Claude Code checks the usage the last response reported: a microcompact now does not count
    if p[P_MICRO_AFTER] <= 0:
        clear_images(p, r, st)
        microcompact(p, r, st)
    if fire:
        if p[P_BACKGROUND_LIMIT] > 0 and est_total(st) < background_limit(p, st):
            st.s[S_PENDING] = st.s[S_END] + 1
        else:
            compact(p, r, st)
    if p[P_MICRO_AFTER] > 0:  # Gemini CLI masks the history the compression left
        microcompact(p, r, st)


POLICIES = [AutoCompact]
