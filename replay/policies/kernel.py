"""What a compiled policy sees and how it changes the view: the run (``Run``), the state (``State``), parameters.

A built-in policy is one compiled definition: ``setup(p, r, st)`` once per run and ``decide(p, r, st)`` before every
request, both ``@compiled`` functions in the policy's module, dispatched by ``replay.simulator.kernels.driver``
through the module generated from the registry (``replay.policies.dispatch``). The
driver appends the request's new items, drops orphaned results and what the server no longer counts, calls
``decide``, then emits the view: the same code serves the per-request views (``simulate``, ``show``, reports) and the
sweep kernels.

State. ``forms[q]`` is item q's form (``replay.policies.view``), ``ftok``/``fest`` its real and estimated tokens per
form (``DROPPED`` is 0). ``s`` holds the scalars (``S_*``): the request ``k``, the history ``end``, the first
position changed since the previous view (``dirty``; ``changed_from``: the first whose form or cost was set,
even to no effect on the cache, which the per-request trace starts from), the running totals of the view over
[0, end) (``S_TOT_TOK`` as the policy counts the prompt; ``S_VIEW_TOK`` the real tokens of the items in their
forms, whatever the policy counts, which the driver's prefix sums for the cache end with), the summary segment, the
flags of this request, the prompt of the summariser call made at this request (``S_SUM_READ``, -1: the whole
previous prompt; ``S_SUM_WRITE``: 1 when that prompt is written to the cache; ``S_SUM_OUT``: what it wrote, -1: the
summary segment; see ``set_summariser_prompt``), and from ``S_POLICY`` on the policy's own scalars. ``aux`` rows are
the policy's own per-item arrays. Change forms and costs only through the helpers below: they keep the totals,
``dirty`` and ``changed_from`` right.

Parameters ``p`` (float64): ``P_*`` common to every policy, the policy's own from ``P_POLICY`` on (each module owns
that layout and fills it in its ``params``).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from replay.jit import compiled
from replay.policies.view import DROPPED, ORIGINAL
from replay.run_arrays import ACCESS_CODE, TOOL_CALL, TOOL_DEFS, TOOL_RESULT

# -- parameters --------------------------------------------------------------------------------------------------------
(P_CODE, P_ESTIMATOR, P_WINDOW, P_RESERVE, P_NEAR_MARGIN, P_OVERHEAD) = range(6)
P_POLICY = 6
N_PARAMS = 40
ESTIMATORS = {"chars/4": 0, "chars/3": 1, "real": 2}

# -- scalar state ------------------------------------------------------------------------------------------------------
(
    S_K,
    S_END,
    S_PREV_END,
    S_DIRTY,
    S_TOT_EST,
    S_TOT_TOK,
    S_SUM_AT,
    S_SUM_ID,
    S_SUM_TOK,
    S_SUM_EST,
    S_EMERGENCY,
    S_SUMMARISED,
    S_WINDOW,
    S_SENT_EST,
    S_CHANGED_FROM,
    S_SUM_READ,
    S_SUM_WRITE,
    S_SUM_OUT,
    S_VIEW_TOK,
) = range(19)
S_POLICY = 19
N_SCALARS = 40
N_AUX = 8

# per-item tool flags (``Run.tflag``): set by the policy's Python side from the run's tool names
TF_EXCLUDED, TF_CLEAR_INPUT, TF_MEMORY, TF_MICRO = 1, 2, 4, 8
# bits of the S_SUMMARISED flag: a summary was made; history was cleared without a summary (Claude Code's
# microcompact, Cline's truncation)
SUMMARY_MADE, SUMMARY_CLEARED = 1, 2
WRITE = ACCESS_CODE["write"]

Run = namedtuple(
    "Run",
    (
        "kind",
        "tokens",
        "chars",
        "access",
        "pair",
        "gone_at",
        "step",
        "turn",
        "is_error",
        "lines",
        "resource",
        "tflag",
        "recorded_only",
        "req_end",
        "first_body",
        "estimated",
        # repeat reads, sorted by deciding request: earlier result, request, content changed, tokens
        "rr_prev",
        "rr_decide",
        "rr_changed",
        "rr_tokens",
        # the log's own context events (replay.run_arrays.RecordedEvents): request of each event, items it drops
        # (positions ev_drop[ev_drop_off[e]:ev_drop_off[e + 1]]), per-request placeholders (request, position, chars)
        "ev_step",
        "ev_summary",  # per event: it made a summary (a summariser call); else it only cleared content
        "ev_drop_off",
        "ev_drop",
        "mask_step",
        "mask_pos",
        "mask_chars",
        # per request: what the server counted beyond the replayed prompt (RunArrays.usage_offset; 0: none given)
        "usage_offset",
        # per item: tokens the harness's own trigger count adds for it beyond the server's usage
        # (RunArrays.harness_est; codex-rs's estimate of earlier turns' encrypted reasoning)
        "harness_est",
        # tool calls are text in the messages, not API pairs (RunArrays.text_tools): a drop leaves the partner
        "text_tools",
        # per item: a result a duplicate-read pass may rewrite, the file as the harness keys it (-1 none) and its
        # characters once rewritten (RunArrays.dup_key, dup_chars; Cline)
        "dup_key",
        "dup_chars",
        # per item: characters of the media data it stands for (RunArrays.media_chars; an image's base64)
        "media_chars",
        # how the run starts (replay.simulator.run_start): tokens cached before its first request; tokens sent after
        # the last breakpoint (taken out of the prefix item, added to every prompt)
        "warm",
        "tail",
        # tokens of the warm prefix other sessions keep cached through the run's idle gaps (RunArrays.warm_kept)
        "warm_kept",
        # the harness marks the end of the last assistant message with a cache breakpoint too (RunArrays
        # .assistant_bp; Claude Code)
        "assistant_bp",
        # per request: which model served it (run-local code); the server's cache is per model
        "req_model",
        # per request: the most the server's cache gives it, cut back to the prefix item; -1 no limit
        # (replay.simulator.run_start.cache_caps: a thinking switch, a new tool list)
        "cache_cap",
        # per request: what the log shows the server's cache gave it where the server lost or kept a prefix on its
        # own (replay.simulator.server_cache); -1 none
        "server_read",
        # per request: tokens of the log's own prompt another session wrote just before it (replay.simulator
        # .server_cache); -1 none
        "foreign_read",
        # per request: tokens it sent after its last cache breakpoint beyond the run's tail, as the log shows
        # (replay.simulator.run_start.tail_extras): billed as input, not written
        "tail_extra",
        # per request: when it was sent and when its response ended (replay.simulator.idle); NaN unknown
        "req_sent",
        "req_done",
        # the harness's own summariser prompt (replay.policies.condenser_prompt; RunArrays.condenser): what the
        # recorded policy charges the log's summariser calls
        "condenser",
        # per item: tokens beyond its text that its own message costs (RunArrays.framing)
        "framing",
        # per item: the harness's own size of it where it chooses what to keep, if not its trigger's
        # (RunArrays.harness_keep; the Cline SDK: a message before its request builder cut its tool results)
        "harness_keep",
        # per request: the window of the model serving it where the log says it is not the run's (RunArrays
        # .req_window; 0: the budget's). The loop puts it in S_WINDOW before the policy decides
        "req_window",
        # per request, by the same choice: the harness's limit where its model's preset has another (RunArrays
        # .req_limit, 0: the policy's) and auto_compact's trigger where it has another (.req_trigger, -1: the policy's)
        "req_limit",
        "req_trigger",
        # per request: the first of a process that loaded the conversation to resume it (RunArrays.req_resumed)
        "req_resumed",
        # per request: the TTL of its provider's cache where it is not the run's cache model's (RunArrays.req_ttl;
        # 0: the run's). Entries it writes or refreshes live that long
        "req_ttl",
        # per request: the hit rate of its model's cache where the run's fit has one for it (CacheFit.by_model;
        # -1: the run's)
        "req_hit",
        # per item: an edit call's change to its file's characters (RunArrays.edit_chars)
        "edit_chars",
        # per item: a read call that shows part of its file (RunArrays.part_read)
        "part_read",
        # per item: a file tool's result, the characters and lines of the whole file after its call (RunArrays
        # .file_chars, .file_lines; 0: unknown)
        "file_chars",
        "file_lines",
    ),
)
State = namedtuple("State", ("forms", "ftok", "fest", "s", "aux"))


# -- reading the view --------------------------------------------------------------------------------------------------
@compiled(inline="always")
def est_of(st, q):
    """Estimated tokens of item q in its current form."""
    return st.fest[st.forms[q], q]


@compiled(inline="always")
def est_total(st):
    """The view's estimate: items and the summary."""
    s = st.s
    return s[S_TOT_EST] + (s[S_SUM_EST] if s[S_SUM_AT] >= 0 else 0)


@compiled(inline="always")
def prefix_end(r, st):
    """Number of leading system/tool_defs items in the history (never trimmed)."""
    return min(r.first_body, st.s[S_END])


@compiled(inline="always")
def estimate_chars(chars, estimator):
    """Tokens of ``chars`` characters by estimator code 0 (chars/4) or 1 (chars/3); ceil."""
    return (chars + 2) // 3 if estimator == 1 else (chars + 3) // 4


# -- changing the view -------------------------------------------------------------------------------------------------
@compiled(inline="always")
def set_form(st, q, form):
    """Item q takes ``form``; totals and the dirty mark follow."""
    old = st.forms[q]
    if old == form:
        return
    s = st.s
    if q < s[S_END]:
        s[S_TOT_EST] += st.fest[form, q] - st.fest[old, q]
        s[S_TOT_TOK] += st.ftok[form, q] - st.ftok[old, q]
        s[S_VIEW_TOK] += st.ftok[form, q] - st.ftok[old, q]
    st.forms[q] = form
    if q < s[S_DIRTY]:
        s[S_DIRTY] = q
    if q < s[S_CHANGED_FROM]:
        s[S_CHANGED_FROM] = q


@compiled(inline="always")
def set_cost(st, form, q, tok, est):
    """Item q's ``form`` costs (tok, est) from now on (the view changes if q shows that form)."""
    s = st.s
    if st.forms[q] == form and q < s[S_END]:
        s[S_TOT_EST] += est - st.fest[form, q]
        s[S_TOT_TOK] += tok - st.ftok[form, q]
        s[S_VIEW_TOK] += tok - st.ftok[form, q]
        if st.ftok[form, q] != tok and q < s[S_DIRTY]:
            s[S_DIRTY] = q
    if q < s[S_CHANGED_FROM]:
        s[S_CHANGED_FROM] = q
    st.ftok[form, q], st.fest[form, q] = tok, est


@compiled(inline="always")
def pinned(r, q):
    """Whether item q is harness prefix that no context policy trims, also where it starts mid-run: tool
    definitions, as the loader gives a model switch's own prefix and the schemas a tool search loaded
    (replay.simulator.load). A system message logged mid-run is a message (Codex re-sends its developer
    instructions after a compaction), which policies may drop."""
    return r.kind[q] == TOOL_DEFS


@compiled(borrowed=True)
def drop(r, st, q):
    """Drop item q together with its call/result partner (when that is already in the history and the two are an
    API pair: not for a run whose tool calls are text, ``text_tools``); harness prefix stays (``pinned``)."""
    if pinned(r, q):
        return
    set_form(st, q, DROPPED)
    partner = r.pair[q]
    if 0 <= partner < st.s[S_END] and not r.text_tools:
        set_form(st, partner, DROPPED)


@compiled(borrowed=True)
def request_limit(r, st, own, fixed):
    """A harness's limit at this request: its preset's for the model serving it where the log says that model's is
    another (``RunArrays.req_limit``: the harness takes its limit of the current model), else ``own``, the
    policy's; a limit the user fixed (``fixed``) holds for every request."""
    k = st.s[S_K]
    if fixed or k >= len(r.req_limit) or r.req_limit[k] <= 0:
        return own
    return r.req_limit[k]


@compiled(borrowed=True)
def set_summary(st, at, real, est):
    """The summary segment now stands before position ``at`` (at most the newest item) with (real, est) tokens."""
    s = st.s
    at = min(at, s[S_END] - 1)
    dirty = at if s[S_SUM_AT] < 0 else min(at, s[S_SUM_AT])
    if dirty < s[S_DIRTY]:
        s[S_DIRTY] = dirty
    s[S_SUM_AT], s[S_SUM_TOK], s[S_SUM_EST] = at, real, est
    s[S_SUM_ID] += 1
    s[S_SUMMARISED] |= SUMMARY_MADE


@compiled(inline="always")
def set_summariser_prompt(st, tokens, written, output):
    """The summariser call made at this request sends ``tokens`` and writes ``output`` (-1: the summary segment),
    each added to what another event of the same request's call did; ``written``: the harness caches that prompt
    (cache writes), else it is uncached input. A policy that never calls this is charged the whole previous
    prompt, uncached, and the summary segment as output (Claude Code, Codex: the summariser gets the whole
    conversation)."""
    s = st.s
    s[S_SUM_READ] = tokens + max(s[S_SUM_READ], 0)
    s[S_SUM_WRITE] = written
    if output >= 0:
        set_summariser_output(st, output)


@compiled(inline="always")
def set_summariser_output(st, output):
    """The summariser call made at this request writes ``output`` tokens, added to what another event of the same
    request's call wrote; its prompt stays as set (the whole previous prompt unless ``set_summariser_prompt``)."""
    st.s[S_SUM_OUT] = output + max(st.s[S_SUM_OUT], 0)


@compiled(borrowed=True)
def clear_summary(st):
    """No summary segment from now on."""
    s = st.s
    if s[S_SUM_AT] >= 0:
        if s[S_SUM_AT] < s[S_DIRTY]:
            s[S_DIRTY] = s[S_SUM_AT]
        s[S_SUM_AT], s[S_SUM_TOK], s[S_SUM_EST] = -1, 0, 0


# -- positions ---------------------------------------------------------------------------------------------------------
@compiled(borrowed=True)
def pair_safe_start(r, st, start, lo=0):
    """Move a cut at ``start`` back until no item in [start, end) has its call/result partner in [lo, start) (a
    partner before ``lo`` is already out of the view)."""
    end = st.s[S_END]
    while True:
        early = start
        for q in range(start, end):
            if (r.pair[q] >= lo) & (r.pair[q] < early):
                early = r.pair[q]
        if early == start:
            return start
        start = early


@compiled(borrowed=True)
def last_result(r, lo, hi):
    """Position of the newest tool result in [lo, hi), -1 if none."""
    for q in range(hi - 1, lo - 1, -1):
        if r.kind[q] == TOOL_RESULT:
            return q
    return -1


@compiled(borrowed=True)
def completed_write(r, st, q):
    """Item q is a write/edit call whose result is already in the history. Per-item predicates here and in the
    policies are written without short-circuit operators: numba compiles a helper with ``and``/``or`` branches
    into code an order of magnitude slower than the same test on plain booleans."""
    pair = r.pair[q]
    return (r.kind[q] == TOOL_CALL) & (r.access[q] == WRITE) & (pair >= 0) & (pair < st.s[S_END])


@compiled
def text_cost(tokens, chars, kept_chars, extra_chars, estimator):
    """(real, est) tokens of an item rewritten to keep ``kept_chars`` of its text plus ``extra_chars`` of wording:
    the kept part at the item's own tokens per character, the wording at chars/4; never above the item (real)."""
    kept = min(kept_chars, chars)
    real = np.int64(np.ceil(kept * (tokens / max(chars, 1)))) + (extra_chars + 3) // 4
    est = estimate_chars(kept, 1 if estimator == 1 else 0) + (extra_chars + 3) // 4
    return min(real, max(tokens, 1)), est


__all__ = ["DROPPED", "ESTIMATORS", "N_AUX", "N_PARAMS", "ORIGINAL", "P_POLICY", "Run", "S_POLICY", "State"]
