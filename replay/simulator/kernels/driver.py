"""The compiled request loop every policy runs in, built-in or written in Python: one run, one configuration, every
request.

Before each request the loop appends the new items (a result whose call is gone is dropped with it), drops what the
server no longer counts (``RunArrays.gone_at``), lets the policy decide (``replay.policies.dispatch``, generated; a
policy written in Python through ``replay.policies.python_kernel``), then charges the cache
(``replay.simulator.kernels.caches``) and counts. ``trace`` also records, per request, the view's scalars and every
change of an item's form or cost, from which ``replay.simulator.kernels.trace`` rebuilds the View of each request:
the per-request path and the sweep path are this one loop.
"""

from __future__ import annotations

import math

import numpy as np
from numba import literally

from replay.jit import compiled
from replay.policies.dispatch import RECORDED
from replay.policies.kernel import (
    N_AUX,
    N_SCALARS,
    P_ESTIMATOR,
    P_NEAR_MARGIN,
    P_OVERHEAD,
    P_RESERVE,
    P_WINDOW,
    S_CHANGED_FROM,
    S_DIRTY,
    S_EMERGENCY,
    S_END,
    S_K,
    S_PREV_END,
    S_SENT_EST,
    S_SUM_AT,
    S_SUM_EST,
    S_SUM_ID,
    S_SUM_OUT,
    S_SUM_READ,
    S_SUM_TOK,
    S_SUM_WRITE,
    S_SUMMARISED,
    S_TOT_EST,
    S_TOT_TOK,
    S_VIEW_TOK,
    S_WINDOW,
    SUMMARY_MADE,
    State,
    estimate_chars,
)
from replay.policies.python_kernel import P_REPLAYS_RECORDED, PYTHON
from replay.policies.view import DROPPED, N_FORMS, ORIGINAL
from replay.run_arrays import OUTPUT_KINDS, TOOL_RESULT
from replay.simulator.kernels.caches import (
    AS_BEFORE,
    AS_LOGGED,
    CP_HIT,
    CP_OUTPUT,
    CP_TTL,
    N_STATE,
    assistant_mid,
    cache_output,
    cache_request,
    cap_entries,
    cum_at,
    drop_entries,
    first_rewrite,
    foreign_entry,
    output_end,
    sent_after_breakpoint,
    server_gave,
    server_resets,
    shared_server,
    switch_drops,
    warm_entry,
)
from replay.simulator.kernels.select import decide, setup

# per-run outputs (int64)
(
    O_OVERFLOW,
    O_NEAR,
    O_EMERGENCY,
    O_SUMMARIES,
    O_FIRST_SUMMARY,
    O_LAST_SUMMARY,
    O_PROMPT_AFTER_SUMMARY,
    O_PROMPT,
    O_EST,
    O_CACHED,
    O_WRITTEN,
    O_TRIMMED,
    O_MAX_PROMPT,
    O_CHANGED,
    O_CHANGED_TOK,
    O_VISIBLE,
    O_VISIBLE_TOK,
    O_EVICTED,
    O_EVICTED_TOK,
    O_FAILURES,
    O_FAILURE_TOK,
) = range(21)
N_OUT = 21
# per-request trace columns (int64)
(
    T_PROMPT,
    T_EST,
    T_CACHED,
    T_WRITTEN,
    T_EMERGENCY,
    T_SUMMARISED,
    T_DIRTY,
    T_SUM_AT,
    T_SUM_ID,
    T_SUM_TOK,
    T_SUM_EST,
    T_WINDOW,
    T_SUM_READ,
    T_SUM_WRITE,
    T_SUM_OUT,
) = range(15)
N_TRACE = 15  # T_SUM_READ: the prompt of the summariser call made at the request (0: none); T_SUM_WRITE: written;
# T_SUM_OUT: its output
# what each request is billed for (the rows of ``charged``): its prompt, cache reads and writes, and the summariser
# call made before it (its prompt sent, or written to the cache, and its output; 0: none)
C_PROMPT, C_CACHED, C_WRITTEN, C_SUM_SENT, C_SUM_WRITTEN, C_SUM_OUT = range(6)
N_CHARGED = 6


@compiled(internal=True)
def _initial_state(p, r):
    """Forms all original; every form costs the item until the policy defines it; DROPPED costs 0."""
    n = len(r.kind)
    st = State(
        np.zeros(n, np.int8),
        np.zeros((N_FORMS, n), np.int64),
        np.zeros((N_FORMS, n), np.int64),
        np.zeros(N_SCALARS, np.int64),
        np.zeros((N_AUX, n), np.int64),
    )
    estimator = int(p[P_ESTIMATOR])
    for q in range(n):
        t = r.tokens[q]
        e = t if estimator == 2 else estimate_chars(r.chars[q], estimator)
        for f in range(N_FORMS - 1):
            st.ftok[f, q], st.fest[f, q] = t, e
    st.s[S_SUM_AT] = -1
    return st


@compiled
def run_kernel(code, p, cp, r, req_ts, out, trace, charged):
    """Simulate one run under policy ``code`` (``p[P_CODE]``, a compile-time constant: one loop is compiled per
    policy); per-run counters into ``out`` (N_OUT), and what each request is billed for into ``charged``
    (m, N_CHARGED) when it has rows. With ``trace``: (per-request columns (m, N_TRACE), change log (k, position,
    form, tokens, estimate) rows, the final ftok and fest), else empty arrays."""
    literally(code)
    n, m = len(r.kind), len(r.req_end)
    window, reserve = p[P_WINDOW], p[P_RESERVE]
    overhead, tail = np.int64(p[P_OVERHEAD]), np.int64(r.tail)
    st = _initial_state(p, r)
    s, forms, ftok, fest = st.s, st.forms, st.ftok, st.fest
    setup(code, p, r, st)
    # the harness's own summaries and re-sent copies are not this policy's
    if code != RECORDED and not (code == PYTHON and p[P_REPLAYS_RECORDED]):
        for q in range(n):
            if r.recorded_only[q]:
                ftok[:, q] = 0
                fest[:, q] = 0
    full_cum = np.zeros(n + 1, np.int64)
    for q in range(n):
        full_cum[q + 1] = full_cum[q] + ftok[ORIGINAL, q]
    cap = 3 * m + 12  # per request: two breakpoints' entries and one another session wrote
    cpos, ctok, cexp = np.zeros(cap, np.int64), np.zeros(cap, np.int64), np.zeros(cap, np.float64)
    cn = np.zeros(N_STATE, np.int64)
    first = r.tokens[: r.req_end[0]] if m > 0 else r.tokens  # what was warm, the first request read
    warm_entry(overhead, np.int64(r.warm), first, cpos, ctok, cexp, cn, r.warm_kept)
    cpk = cp.copy()  # the cache parameters of request k: the run's, its provider's TTL where it has another
    cumtok = np.zeros(n + 1, np.int64)  # cumtok[: summed + 1] are the prefix sums of the current view
    summed = 0
    n_err = 0
    for q in range(n):
        n_err += r.is_error[q] and r.kind[q] == TOOL_RESULT
    err_pos = np.empty(n_err, np.int64)
    n_err = 0
    for q in range(n):
        if r.is_error[q] and r.kind[q] == TOOL_RESULT:
            err_pos[n_err] = q
            n_err += 1
    hidden = np.zeros(n_err, np.bool_)
    cols = np.zeros((m if trace else 0, N_TRACE), np.int64)
    log = np.zeros((n + 16 if trace else 0, 5), np.int64)
    n_log = 0
    shown = np.zeros((3, n if trace else 0), np.int64)  # form, tokens, estimate last emitted
    out[:] = 0
    out[O_FIRST_SUMMARY] = -1
    ev = prev_prompt = prev_cached = 0
    gone_first, gone_next = np.full(m, -1, np.int64), np.empty(n, np.int64)  # per request, the items it drops
    for q in range(n - 1, -1, -1):
        g = r.gone_at[q]
        if 0 <= g < m:
            gone_next[q], gone_first[g] = gone_first[g], q
    for k in range(m):
        s[S_K] = k
        s[S_EMERGENCY] = s[S_SUMMARISED] = s[S_SUM_WRITE] = 0
        s[S_WINDOW] = r.req_window[k]  # the serving model's window where the log says it is not the run's, else 0
        s[S_SUM_READ] = s[S_SUM_OUT] = -1  # none given: the call reads the whole previous prompt, writes the summary
        end, new_end = s[S_END], r.req_end[k]
        for q in range(end, new_end):
            pq = r.pair[q]
            if r.kind[q] == TOOL_RESULT and 0 <= pq < q and forms[pq] == DROPPED and not r.text_tools:
                forms[q] = DROPPED  # its call is gone: never a result without its call
            if 0 <= r.gone_at[q] <= k:
                forms[q] = DROPPED
            s[S_TOT_EST] += fest[forms[q], q]
            s[S_TOT_TOK] += ftok[forms[q], q]
            s[S_VIEW_TOK] += ftok[forms[q], q]
        s[S_END] = end = new_end
        q = gone_first[k]
        while q >= 0:  # the server no longer counts it (an earlier turn's reasoning); dropped on arrival if later
            if q < end and forms[q] != DROPPED:
                s[S_TOT_EST] -= fest[forms[q], q]
                s[S_TOT_TOK] -= ftok[forms[q], q]
                s[S_VIEW_TOK] -= ftok[forms[q], q]
                forms[q] = DROPPED
                s[S_DIRTY] = min(s[S_DIRTY], q)
            q = gone_next[q]
        decide(code, p, r, st)
        # emit
        prev_end = s[S_PREV_END]
        dirty_from = min(s[S_DIRTY], prev_end)
        shown_from = 0 if k == 0 else min(s[S_CHANGED_FROM], dirty_from)  # what the trace compares
        s[S_CHANGED_FROM] = end
        s[S_PREV_END], s[S_DIRTY] = end, end
        s_at = s[S_SUM_AT]
        s_tok = s[S_SUM_TOK] if s_at >= 0 else 0
        est = s[S_TOT_EST] + (s[S_SUM_EST] if s_at >= 0 else 0)
        prompt = s[S_TOT_TOK] + s_tok + overhead + tail
        # the first request rewrites nothing that was warm before the run unless the policy changed it
        cdirty = dirty_from if k > 0 else first_rewrite(forms, ftok, r.tokens, end, s_at)
        if k > 0 and r.req_model[k] != r.req_model[k - 1] and switch_drops(cp):
            # another model: nothing its server cached for the previous one is read, but a kept warm prefix
            drop_entries(cn, cpos, ctok, cexp, r.warm_kept > 0 and server_resets(cp))
        if r.cache_cap[k] >= 0 and server_resets(cp):  # the server's prompt changed inside the prefix item
            cdirty = min(cdirty, r.first_body, end)
            cap_entries(ctok, cpos, cn, cdirty, r.cache_cap[k])
        gave = r.server_read[k]  # the server lost or kept a prefix on its own
        if (gave >= 0 or gave == AS_BEFORE) and server_resets(cp):
            server_gave(ctok, cexp, cn, req_ts[k], r.req_sent[k], gave if gave >= 0 else prev_cached)
        out_to = prev_end  # the previous response's output items, cached with its prompt (OpenAI)
        if k > 0 and cp[CP_OUTPUT] > 0 and cdirty == prev_end:
            logged = cp[CP_OUTPUT] == AS_LOGGED
            out_to = output_end(r.kind, forms, r.recorded_only, r.harness_est, prev_end, end, OUTPUT_KINDS, logged)
            cdirty = out_to
        # the cache reads the prefix sums at cdirty or before, at the system breakpoint and at the end: extend them
        # from where they are still this view's to there, and take the end's from the running total
        summed = min(summed, dirty_from)
        for q in range(summed, max(cdirty, min(r.first_body, end))):
            cumtok[q + 1] = cumtok[q] + ftok[forms[q], q]
            summed = q + 1
        cumtok[end] = s[S_VIEW_TOK]
        if out_to > prev_end:
            cache_output(cpos, ctok, cn, prev_end, out_to, cum_at(cumtok, out_to, overhead, s_at, s_tok))
        cpk[CP_TTL] = r.req_ttl[k] if r.req_ttl[k] > 0 else cp[CP_TTL]
        cpk[CP_HIT] = r.req_hit[k] if r.req_hit[k] >= 0 else cp[CP_HIT]
        if r.foreign_read[k] >= 0 and shared_server(cp) and cdirty >= prev_end:
            # another session cached the log's prompt just before: its entry may reach past what this run sent
            # before (the run's own entries all end there, so none of them is kept by looking that far)
            sent = r.req_sent[k] if not math.isnan(r.req_sent[k]) else req_ts[k]
            until = (0.0 if math.isnan(sent) else sent) + cpk[CP_TTL]
            read, partial = r.foreign_read[k], not server_resets(cp)
            at = foreign_entry(cpos, ctok, cexp, cn, overhead, read, r.tokens, forms, ftok, end, s_at, until, partial)
            cdirty = max(cdirty, at)
        cached, written = cache_request(
            cpk,
            cpos,
            ctok,
            cexp,
            cn,
            cdirty,
            end,
            min(r.first_body, end),
            req_ts[k],
            cumtok,
            overhead,
            s_at,
            s_tok,
            r.req_sent[k],
            r.req_done[k],
            assistant_mid(r.kind, forms, prev_end, end) if r.assistant_bp and k > 0 else end,
        )
        if r.tail_extra[k] > 0 and server_resets(cp):  # the harness sent more after its last breakpoint
            written = sent_after_breakpoint(ctok, cpos, cn, end, r.tail_extra[k], written)
        while ev < len(r.rr_decide) and r.rr_decide[ev] == k:
            if r.rr_changed[ev]:
                out[O_CHANGED] += 1
                out[O_CHANGED_TOK] += r.rr_tokens[ev]
            elif forms[r.rr_prev[ev]] == ORIGINAL:
                out[O_VISIBLE] += 1
                out[O_VISIBLE_TOK] += r.rr_tokens[ev]
            else:
                out[O_EVICTED] += 1
                out[O_EVICTED_TOK] += r.rr_tokens[ev]
            ev += 1
        # a failure stays counted once hidden; forms change only from dirty_from on, so only errors there are looked at
        for i in range(np.searchsorted(err_pos, dirty_from), n_err):
            if err_pos[i] >= end:  # err_pos ascends
                break
            if forms[err_pos[i]] != ORIGINAL:
                hidden[i] = True
        serving = s[S_WINDOW] if s[S_WINDOW] > 0 else window
        overflow = prompt + reserve > serving
        out[O_OVERFLOW] += overflow
        out[O_NEAR] += (not overflow) and prompt + reserve > serving * (1 - p[P_NEAR_MARGIN])
        out[O_EMERGENCY] += s[S_EMERGENCY]
        if s[S_SUMMARISED] & SUMMARY_MADE:  # a microcompact alone (SUMMARY_CLEARED) makes no summary
            out[O_SUMMARIES] += 1
            if out[O_FIRST_SUMMARY] < 0:
                out[O_FIRST_SUMMARY] = k
            out[O_LAST_SUMMARY] = k
            out[O_PROMPT_AFTER_SUMMARY] += prompt
            sum_read = s[S_SUM_READ] if s[S_SUM_READ] >= 0 else prev_prompt
            sum_out = s[S_SUM_OUT] if s[S_SUM_OUT] >= 0 else s_tok
            if trace:
                cols[k, T_SUM_READ], cols[k, T_SUM_WRITE], cols[k, T_SUM_OUT] = sum_read, s[S_SUM_WRITE], sum_out
            if len(charged):
                charged[k, C_SUM_WRITTEN if s[S_SUM_WRITE] else C_SUM_SENT] = sum_read
                charged[k, C_SUM_OUT] = sum_out
        prev_prompt, prev_cached = prompt, cached
        out[O_PROMPT] += prompt
        out[O_EST] += est
        out[O_CACHED] += cached
        out[O_WRITTEN] += written
        if len(charged):
            charged[k, C_PROMPT], charged[k, C_CACHED], charged[k, C_WRITTEN] = prompt, cached, written
        out[O_TRIMMED] += full_cum[end] - s[S_TOT_TOK]
        out[O_MAX_PROMPT] = max(out[O_MAX_PROMPT], prompt)
        s[S_SENT_EST] = est + overhead + tail  # all the server counted: the harness reads it from the usage
        if trace:
            cols[k, T_PROMPT], cols[k, T_EST], cols[k, T_CACHED], cols[k, T_WRITTEN] = prompt, est, cached, written
            cols[k, T_EMERGENCY], cols[k, T_SUMMARISED], cols[k, T_DIRTY] = s[S_EMERGENCY], s[S_SUMMARISED], dirty_from
            cols[k, T_SUM_AT], cols[k, T_SUM_ID], cols[k, T_SUM_TOK], cols[k, T_SUM_EST] = (
                s_at,
                s[S_SUM_ID],
                s[S_SUM_TOK],
                s[S_SUM_EST],
            )
            cols[k, T_WINDOW] = s[S_WINDOW]
            for q in range(shown_from, end):  # below it no form or cost was set since the last request
                f = forms[q]
                if q < shown.shape[1] and (
                    shown[0, q] != f
                    or shown[1, q] != ftok[f, q]
                    or shown[2, q] != fest[f, q]
                    or k == 0
                    or q >= r.req_end[k - 1]
                ):
                    if n_log == len(log):
                        log = np.concatenate((log, np.zeros((len(log), 5), np.int64)))
                    log[n_log, 0], log[n_log, 1], log[n_log, 2] = k, q, f
                    log[n_log, 3], log[n_log, 4] = ftok[f, q], fest[f, q]
                    shown[0, q], shown[1, q], shown[2, q] = f, ftok[f, q], fest[f, q]
                    n_log += 1
    for i in range(n_err):
        if hidden[i]:
            out[O_FAILURES] += 1
            out[O_FAILURE_TOK] += r.tokens[err_pos[i]]
    if trace:
        return cols, log[:n_log], ftok, fest
    return cols, log[:n_log], ftok[:, :0], fest[:, :0]
