"""Seed policy A (and the full-history baseline) compiled: one run, one configuration, every request.

The twin of ``replay.policies.seed_a.SeedA`` driven by ``replay.simulator.run.simulate_run``, rewritten as a
single loop with running totals instead of per-request array rebuilds. It must give the same numbers: the
equivalence tests run both over the corpus.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from replay.policies.seed_a import APPLIED, ASSISTANT_GROUP, PREFIX_GROUP
from replay.policies.view import DROPPED, ORIGINAL, PLACEHOLDER, SHRUNK
from replay.simulator.arrays import ACCESS_CODE, TOOL_CALL, TOOL_RESULT
from replay.simulator.kernels.caches import cache_request

WRITE = ACCESS_CODE["write"]
ESTIMATORS = {"chars/4": 0, "chars/3": 1, "real": 2}
APPLIED_CHARS = len(APPLIED) + 24
FULL, SEED_A = 0, 1
# policy params (float64 vector)
(P_MODE, P_ESTIMATOR, P_KEEP_CHARS, P_WORDING_CHARS, P_SHRINK, P_PROTECT, P_RECLAIM_FLOOR, P_SUMMARY_AT,
 P_TAIL_MESSAGES, P_TAIL_FRACTION, P_SUMMARY_SIZE, P_MARGIN, P_WINDOW, P_RESERVE, P_NEAR_MARGIN, P_OVERHEAD,
 P_WARM) = range(17)
N_PARAMS = 17
# per-run outputs (int64 vector)
(O_OVERFLOW, O_NEAR, O_EMERGENCY, O_SUMMARIES, O_FIRST_SUMMARY, O_LAST_SUMMARY, O_PROMPT_AFTER_SUMMARY,
 O_PROMPT, O_EST, O_CACHED, O_WRITTEN, O_TRIMMED, O_MAX_PROMPT, O_CHANGED, O_CHANGED_TOK, O_VISIBLE,
 O_VISIBLE_TOK, O_EVICTED, O_EVICTED_TOK, O_FAILURES, O_FAILURE_TOK, O_SUMMARY_HISTORY, O_SUMMARY_OUT) = range(23)
N_OUT = 23


def policy_params(config, window: int, reserve: int, near_margin: float = 0.05, overhead: int = 0,
                  warm: bool = False) -> np.ndarray:
    """The float vector the kernel reads, from a FullConfig or a SeedAConfig (seed_a, seed_a_before)."""
    p = np.zeros(N_PARAMS, dtype=np.float64)
    p[P_ESTIMATOR] = ESTIMATORS[config.estimator]
    p[P_WINDOW], p[P_RESERVE], p[P_NEAR_MARGIN], p[P_OVERHEAD], p[P_WARM] = window, reserve, near_margin, \
        overhead, warm
    if config.kind == "full":
        p[P_MODE] = FULL
        return p
    p[P_MODE] = SEED_A
    p[P_KEEP_CHARS] = config.head_chars + config.tail_chars
    p[P_WORDING_CHARS] = len(config.wording) + 24
    p[P_SHRINK] = config.shrink_writes
    p[P_PROTECT] = config.protect
    p[P_RECLAIM_FLOOR], p[P_SUMMARY_AT] = config.reclaim_floor, config.summary_at
    p[P_TAIL_MESSAGES], p[P_TAIL_FRACTION] = config.tail_messages, config.tail_fraction
    p[P_SUMMARY_SIZE] = config.summary_tokens + config.task_list_tokens
    p[P_MARGIN] = config.margin
    return p


@njit(cache=True)
def _message_starts(kind, req_end):
    """Bool per item: it opens a chat message (as replay.policies.seed_a.message_starts)."""
    n = len(kind)
    group = np.zeros(n, dtype=np.int8)
    for i in range(n):
        for a in ASSISTANT_GROUP:
            if kind[i] == a:
                group[i] = 1
        for a in PREFIX_GROUP:
            if kind[i] == a:
                group[i] = 2
    boundary = np.zeros(n + 1, dtype=np.bool_)
    for e in req_end:
        boundary[e] = True
    start = np.ones(n, dtype=np.bool_)
    for i in range(1, n):
        start[i] = group[i] != group[i - 1] or (boundary[i] and kind[i] != TOOL_RESULT)
    return start


@njit(cache=True, inline="always")
def _est_chars(chars, estimator):
    return (chars + 2) // 3 if estimator == 1 else (chars + 3) // 4


@njit(cache=True)
def _form_costs(tokens, chars, estimator, keep_chars, wording_chars):
    """ftok/fest per form, as SeedA.setup and text_cost compute them."""
    n = len(tokens)
    ftok = np.zeros((6, n), dtype=np.int64)
    fest = np.zeros((6, n), dtype=np.int64)
    extra = (wording_chars + 3) // 4
    applied = (APPLIED_CHARS + 3) // 4
    for i in range(n):
        t, c = tokens[i], chars[i]
        est0 = t if estimator == 2 else _est_chars(c, estimator)
        for f in range(5):
            ftok[f, i], fest[f, i] = t, est0
        ratio = t / max(c, 1)
        cap = max(t, 1)
        kept = min(c, keep_chars)
        ftok[PLACEHOLDER, i] = min(np.int64(math.ceil(kept * ratio)) + extra, cap)
        fest[PLACEHOLDER, i] = (kept + 2) // 3 + extra if estimator == 1 else (kept + 3) // 4 + extra
        ftok[SHRUNK, i] = min(applied, cap)
        fest[SHRUNK, i] = applied
    return ftok, fest


@njit(cache=True)
def run_kernel(p, kind, tokens, chars, access, pair, gone_at, req_end, req_ts, ev_prev, ev_decide, ev_changed,
               ev_tokens, err_pos, first_body, cp, out):
    """Simulate one run; per-run counters into ``out`` (N_OUT int64)."""
    n, m = len(kind), len(req_end)
    mode, estimator = int(p[P_MODE]), int(p[P_ESTIMATOR])
    window, reserve, margin = p[P_WINDOW], p[P_RESERVE], p[P_MARGIN]
    overhead = np.int64(p[P_OVERHEAD])
    ftok, fest = _form_costs(tokens, chars, estimator, np.int64(p[P_KEEP_CHARS]), np.int64(p[P_WORDING_CHARS]))
    forms = np.zeros(n, dtype=np.int8)
    cumtok = np.zeros(n + 1, dtype=np.int64)
    full_cum = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        full_cum[i + 1] = full_cum[i] + tokens[i]
    cap = 2 * m + 12
    cpos = np.zeros(cap, dtype=np.int64)
    ctok = np.zeros(cap, dtype=np.int64)
    cexp = np.zeros(cap, dtype=np.float64)
    cn = np.zeros(1, dtype=np.int64)
    if p[P_WARM] > 0 and overhead > 0:
        cpos[0], ctok[0], cexp[0], cn[0] = 0, overhead, np.inf, 1
    hidden = np.zeros(len(err_pos), dtype=np.bool_)
    failed = np.zeros(n, dtype=np.bool_)
    failed[err_pos] = True
    msg_start = _message_starts(kind, req_end)
    out[:] = 0
    out[O_FIRST_SUMMARY] = -1
    tot_est = tot_tok = 0
    s_at, s_tok, s_est = -1, 0, 0
    dirty = prev_end = end = 0
    ev = prev_prompt = 0
    order = np.argsort(gone_at, kind="mergesort")
    gp = 0
    while gp < n and gone_at[order[gp]] < 0:
        gp += 1
    for k in range(m):
        new_end = req_end[k]
        for q in range(end, new_end):
            if kind[q] == TOOL_RESULT and 0 <= pair[q] < q and forms[pair[q]] == DROPPED:
                forms[q] = DROPPED  # its call was summarised away: never a result without its call
            tot_est += fest[forms[q], q]
            tot_tok += ftok[forms[q], q]
        end = new_end
        while gp < n and gone_at[order[gp]] <= k:  # the server no longer counts it (e.g. an earlier turn's reasoning)
            q = order[gp]
            gp += 1
            if q < end and forms[q] != DROPPED:
                tot_est -= fest[forms[q], q]
                tot_tok -= ftok[forms[q], q]
                forms[q] = DROPPED
                dirty = min(dirty, q)
        emergency = summarised = False
        lo = min(first_body, end)
        if mode == SEED_A:
            # tier 1: placeholders outside the protected range, committed only past the reclaim floor
            if end > 0:
                limit = p[P_PROTECT] * window if p[P_PROTECT] <= 1 else p[P_PROTECT]
                acc = inside = 0
                for q in range(end - 1, -1, -1):
                    acc += fest[forms[q], q]
                    if acc > limit:
                        break
                    inside += 1
                hi = max(end - max(inside, 1), 0)
                gain = 0
                for q in range(lo, hi):
                    if forms[q] != ORIGINAL:
                        continue
                    if kind[q] == TOOL_RESULT and fest[PLACEHOLDER, q] < fest[ORIGINAL, q]:
                        gain += fest[ORIGINAL, q] - fest[PLACEHOLDER, q]
                    elif p[P_SHRINK] > 0 and kind[q] == TOOL_CALL and access[q] == WRITE and 0 <= pair[q] < end \
                            and not failed[pair[q]]:
                        gain += max(fest[ORIGINAL, q] - fest[SHRUNK, q], 0)
                if gain >= p[P_RECLAIM_FLOOR] * window and gain > 0:
                    for q in range(lo, hi):
                        if forms[q] != ORIGINAL:
                            continue
                        f = -1
                        if kind[q] == TOOL_RESULT and fest[PLACEHOLDER, q] < fest[ORIGINAL, q]:
                            f = PLACEHOLDER
                        elif p[P_SHRINK] > 0 and kind[q] == TOOL_CALL and access[q] == WRITE and 0 <= pair[q] < end \
                            and not failed[pair[q]]:
                            f = SHRUNK
                        if f >= 0:
                            tot_est += fest[f, q] - fest[ORIGINAL, q]
                            tot_tok += ftok[f, q] - ftok[ORIGINAL, q]
                            forms[q] = f
                            dirty = min(dirty, q)
            # tier 2: summarise all but a verbatim tail
            if tot_est + (s_est if s_at >= 0 else 0) > p[P_SUMMARY_AT]:
                # whole live chat messages, at most P_TAIL_MESSAGES and P_TAIL_FRACTION of the window (0: off),
                # at least the newest one; then moved back so that no call is split from its result
                cap_msgs, cap_tok = np.int64(p[P_TAIL_MESSAGES]), p[P_TAIL_FRACTION] * window
                acc = count = 0
                start = lo
                for q in range(end - 1, lo - 1, -1):
                    acc += fest[forms[q], q]
                    if not msg_start[q] or forms[q] == DROPPED:
                        continue
                    count += 1
                    if count > 1 and (cap_msgs > 0 and count > cap_msgs or cap_tok > 0 and acc > cap_tok):
                        break
                    start = q
                while True:
                    early = start
                    for q in range(start, end):
                        if 0 <= pair[q] < early:
                            early = pair[q]
                    if early == start:
                        break
                    start = early
                if start > lo:
                    for q in range(lo, start):
                        for r in (q, pair[q]):
                            if 0 <= r < end and forms[r] != DROPPED:
                                tot_est -= fest[forms[r], r]
                                tot_tok -= ftok[forms[r], r]
                                forms[r] = DROPPED
                                dirty = min(dirty, r)
                    at = min(start, end - 1)
                    dirty = min(dirty, at if s_at < 0 else min(at, s_at))
                    size = np.int64(p[P_SUMMARY_SIZE])
                    s_at, s_tok, s_est = at, size, size
                    summarised = True
            # emergency: trim inside the protected range, oldest first, only as needed, never the newest output
            est_total = tot_est + (s_est if s_at >= 0 else 0)
            if est_total / (1 - margin) + reserve > window:
                emergency = True
                need = est_total - (window - reserve) * (1 - margin)
                last = -1
                for q in range(end - 1, lo - 1, -1):
                    if kind[q] == TOOL_RESULT:
                        last = q
                        break
                saved = 0
                for q in range(lo, max(last, lo)):
                    if kind[q] == TOOL_RESULT and forms[q] == ORIGINAL and fest[PLACEHOLDER, q] < fest[ORIGINAL, q]:
                        saved += fest[ORIGINAL, q] - fest[PLACEHOLDER, q]
                        tot_est += fest[PLACEHOLDER, q] - fest[ORIGINAL, q]
                        tot_tok += ftok[PLACEHOLDER, q] - ftok[ORIGINAL, q]
                        forms[q] = PLACEHOLDER
                        dirty = min(dirty, q)
                        if saved >= need:
                            break
        # emit
        dirty_from = min(dirty, prev_end)
        prev_end, dirty = end, end
        for q in range(dirty_from, end):
            cumtok[q + 1] = cumtok[q] + ftok[forms[q], q]
        prompt = tot_tok + (s_tok if s_at >= 0 else 0) + overhead
        cached, written = cache_request(cp, cpos, ctok, cexp, cn, dirty_from, end, min(first_body, end), req_ts[k],
                                        cumtok, overhead, s_at, s_tok)
        while ev < len(ev_decide) and ev_decide[ev] == k:
            if ev_changed[ev]:
                out[O_CHANGED] += 1
                out[O_CHANGED_TOK] += ev_tokens[ev]
            elif forms[ev_prev[ev]] == ORIGINAL:
                out[O_VISIBLE] += 1
                out[O_VISIBLE_TOK] += ev_tokens[ev]
            else:
                out[O_EVICTED] += 1
                out[O_EVICTED_TOK] += ev_tokens[ev]
            ev += 1
        for i in range(len(err_pos)):
            if err_pos[i] < end and forms[err_pos[i]] != ORIGINAL:
                hidden[i] = True
        overflow = prompt + reserve > window
        out[O_OVERFLOW] += overflow
        out[O_NEAR] += (not overflow) and prompt + reserve > window * (1 - p[P_NEAR_MARGIN])
        out[O_EMERGENCY] += emergency
        if summarised:
            out[O_SUMMARIES] += 1
            if out[O_FIRST_SUMMARY] < 0:
                out[O_FIRST_SUMMARY] = k
            out[O_LAST_SUMMARY] = k
            out[O_PROMPT_AFTER_SUMMARY] += prompt
            out[O_SUMMARY_HISTORY] += prev_prompt
            out[O_SUMMARY_OUT] += s_tok
        prev_prompt = prompt
        out[O_PROMPT] += prompt
        out[O_EST] += tot_est + (s_est if s_at >= 0 else 0)
        out[O_CACHED] += cached
        out[O_WRITTEN] += written
        out[O_TRIMMED] += full_cum[end] - tot_tok
        out[O_MAX_PROMPT] = max(out[O_MAX_PROMPT], prompt)
    for i in range(len(err_pos)):
        if hidden[i]:
            out[O_FAILURES] += 1
            out[O_FAILURE_TOK] += tokens[err_pos[i]]


@njit(cache=True)
def corpus_kernel(p, cps, item_off, req_off, ev_off, err_off, kind, tokens, chars, access, pair, gone_at, req_end,
                  req_ts,
                  ev_prev, ev_decide, ev_changed, ev_tokens, err_pos, first_body):
    """Every packed run under one configuration; one row of counters per run."""
    n_runs = len(item_off) - 1
    out = np.zeros((n_runs, N_OUT), dtype=np.int64)
    for r in range(n_runs):
        a, b = item_off[r], item_off[r + 1]
        c, d = req_off[r], req_off[r + 1]
        e, f = ev_off[r], ev_off[r + 1]
        g, h = err_off[r], err_off[r + 1]
        run_kernel(p, kind[a:b], tokens[a:b], chars[a:b], access[a:b], pair[a:b], gone_at[a:b], req_end[c:d],
                   req_ts[c:d],
                   ev_prev[e:f], ev_decide[e:f], ev_changed[e:f], ev_tokens[e:f], err_pos[g:h], first_body[r],
                   cps[r], out[r])
    return out
