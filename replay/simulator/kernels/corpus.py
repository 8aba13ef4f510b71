"""The compiled loop over packed runs: counters of every run under one configuration (sweeps: ``corpus_kernel``),
or one run's per-request trace (the views of ``simulate``, ``show`` and the reports: ``trace_kernel``, which calls
the loop, ``run_kernel``, directly)."""

from __future__ import annotations

import numpy as np
from numba import literally

from replay.jit import compiled
from replay.policies.kernel import Run
from replay.simulator.kernels.compiling import call_policy_kernel
from replay.simulator.kernels.driver import N_CHARGED, N_OUT, run_kernel
from replay.simulator.kernels.packed import Packed


@compiled(internal=True)
def run_at(pk, tflag, i):
    """Run ``i`` of the packed runs as the compiled policies see it."""
    a, b = pk.item_off[i], pk.item_off[i + 1]
    c, d = pk.req_off[i], pk.req_off[i + 1]
    e, f = pk.rr_off[i], pk.rr_off[i + 1]
    g, h = pk.ev_off[i], pk.ev_off[i + 1]
    u, v = pk.mask_off[i], pk.mask_off[i + 1]
    w = pk.evo_off[i]
    return Run(
        pk.kind[a:b],
        pk.tokens[a:b],
        pk.chars[a:b],
        pk.access[a:b],
        pk.pair[a:b],
        pk.gone_at[a:b],
        pk.step[a:b],
        pk.turn[a:b],
        pk.is_error[a:b],
        pk.lines[a:b],
        pk.resource[a:b],
        tflag[a:b],
        pk.recorded_only[a:b],
        pk.req_end[c:d],
        pk.first_body[i],
        pk.estimated[i],
        pk.rr_prev[e:f],
        pk.rr_decide[e:f],
        pk.rr_changed[e:f],
        pk.rr_tokens[e:f],
        pk.ev_step[g:h],
        pk.ev_summary[g:h],
        pk.ev_drop_off[w : w + (h - g) + 1],
        pk.ev_drop,
        pk.mask_step[u:v],
        pk.mask_pos[u:v],
        pk.mask_chars[u:v],
        pk.usage_offset[c:d],
        pk.harness_est[a:b],
        pk.text_tools[i],
        pk.dup_key[a:b],
        pk.dup_chars[a:b],
        pk.media_chars[a:b],
        pk.warm[i],
        pk.tail[i],
        pk.warm_kept[i],
        pk.assistant_bp[i],
        pk.req_model[c:d],
        pk.cache_cap[c:d],
        pk.server_read[c:d],
        pk.foreign_read[c:d],
        pk.tail_extra[c:d],
        pk.req_sent[c:d],
        pk.req_done[c:d],
        pk.condenser[i],
        pk.framing[a:b],
        pk.harness_keep[a:b],
        pk.req_window[c:d],
        pk.req_limit[c:d],
        pk.req_trigger[c:d],
        pk.req_resumed[c:d],
        pk.req_ttl[c:d],
        pk.req_hit[c:d],
        pk.edit_chars[a:b],
        pk.part_read[a:b],
        pk.file_chars[a:b],
        pk.file_lines[a:b],
    )


@compiled
def corpus_kernel(code, p, cps, pk, tflag):
    """Every packed run under one configuration of policy ``code`` (compiled per policy; ``cps[i]``: run i's cache
    parameters); one row of counters each, and per request (packed order) what it is billed for (N_CHARGED)."""
    literally(code)
    n_runs = len(pk.item_off) - 1
    out = np.zeros((n_runs, N_OUT), np.int64)
    charged = np.zeros((pk.req_off[n_runs], N_CHARGED), np.int64)
    # a flag, not the constant False: numba would compile the whole loop again for a literal argument, where the
    # per-request path (trace_kernel) has compiled it for a runtime flag already
    trace = np.bool_(False)
    for i in range(n_runs):
        c, d = pk.req_off[i], pk.req_off[i + 1]
        run_kernel(code, p, cps[i], run_at(pk, tflag, i), pk.req_ts[c:d], out[i], trace, charged[c:d])
    return out, charged


def trace_kernel(code: int, name: str, p: np.ndarray, cp: np.ndarray, pk: Packed, tflag: np.ndarray, i: int):
    """Run ``i`` under one configuration of policy ``code`` (named ``name``; compiled per policy): counters,
    per-request columns, change log, final form costs. The run is unpacked here and ``run_kernel`` is the entry point
    itself: a compiled wrapper around it had numba optimise and emit the whole loop a second time, a tenth of a
    policy's compile."""
    out = np.zeros(N_OUT, np.int64)
    run = run_at.py_func(pk, tflag, i)
    req_ts = pk.req_ts[pk.req_off[i] : pk.req_off[i + 1]]
    cols, log, ftok, fest = call_policy_kernel(
        run_kernel, code, name, p, cp, run, req_ts, out, True, np.zeros((0, N_CHARGED), np.int64)
    )
    return out, cols, log, ftok, fest
