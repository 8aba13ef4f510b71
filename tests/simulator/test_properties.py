"""Hypothesis invariants over synthetic runs: fit, newest output, pairing, cache prefix, oracle bound."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from replay.policies import Budget, make_policy, registry
from replay.policies.view import DROPPED, OMITTED, ORIGINAL, PLACEHOLDER, SHRUNK, SPILLED, shared_prefix_tokens
from replay.run_arrays import KIND_CODE, TOOL_RESULT
from replay.simulator.kernels.trace import views_of
from replay.testing.conformance import check_view
from tests.simulator.synth import synth_run

runs = st.builds(
    synth_run,
    n_requests=st.integers(2, 60),
    seed=st.integers(0, 10_000),
    result_chars=st.tuples(st.integers(10, 2_000), st.integers(2_000, 40_000)),
    files=st.integers(1, 8),
    error_rate=st.floats(0, 0.5),
)
budgets = st.builds(Budget, window=st.integers(8_000, 200_000), reserve=st.integers(0, 4_000))
HISTORY_KINDS = [
    KIND_CODE[k] for k in ("user_text", "image", "assistant_text", "reasoning", "tool_call", "tool_result")
]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def views(name, run, budget, params=None):
    out = views_of(run, make_policy(name, params), budget)
    return out, out.views


@SETTINGS
@given(run=runs, budget=budgets, name=st.sampled_from(sorted(registry())))
@example(synth_run(3, seed=646, result_chars=(10, 23_294), files=1, error_rate=0.0), Budget(8_000, 0), "cline")
def test_invariants_every_policy(run, budget, name):
    _, vs = views(name, run, budget)
    prev = None
    for v in vs:
        check_view(v, run, v.k)
        last = v.end - 1
        # Cline's truncation drops an even number of messages ending on an assistant message, which can be the
        # newest response (3 requests, one pair kept, a quarter left): its native tool calls' results go with it
        call = run.pair[last] if last >= 0 else -1
        truncated = name == "cline" and call >= 0 and v.forms[call] == DROPPED
        if last >= 0 and run.kind[last] == TOOL_RESULT and not truncated:
            shortened = (SHRUNK, SPILLED) if name == "seed_b" else (SPILLED,)  # B shortens it when nothing else fits
            assert v.forms[last] in (ORIGINAL, *shortened), f"{name} trimmed the newest output"
        assert shared_prefix_tokens(prev, v) == (0 if prev is None else v.cumulative()[v.dirty_from])
        prev = v


@SETTINGS
@given(run=runs, budget=budgets)
def test_seed_a_fits_when_it_can(run, budget):
    policy, vs = views("seed_a", run, budget)
    margin = make_policy("seed_a").config.margin
    for v in vs:
        if v.est_tokens / (1 - margin) + budget.reserve <= budget.window:
            continue
        res = np.flatnonzero(run.kind[: v.end] == TOOL_RESULT)[:-1]
        shrinkable = res[policy.fest[PLACEHOLDER, res] < policy.fest[ORIGINAL, res]]
        assert (v.forms[shrinkable] != ORIGINAL).all(), "over budget while trimmable output remained"
        assert v.emergency


@SETTINGS
@given(run=runs, budget=budgets, failover=st.integers(0, 1))
def test_seed_b_fits_when_it_can(run, budget, failover):
    params = {"failover_window": str(budget.window // 2), "failover_at_request": "1"} if failover else {}
    policy, vs = views("seed_b", run, budget, params)
    for v in vs:
        limit = (budget.window // 2 if failover and v.k >= 1 else budget.window) - budget.reserve
        if v.est_tokens <= limit:
            continue
        res = np.flatnonzero(run.kind[: v.end] == TOOL_RESULT)
        newest = res[run.step[res] == run.step[res[-1]]] if len(res) else res  # the newest step, siblings included
        assert (v.forms[newest] != OMITTED).all(), "a result of the newest step was omitted"
        res = res[~np.isin(res, newest)]
        live = res[np.isin(v.forms[res], (ORIGINAL, SHRUNK, SPILLED))]
        assert (policy.fest[OMITTED, live] >= v.seg_est[live]).all(), "over budget while an output could be marked"
        assert (v.seg_est[newest] <= policy.fest[OMITTED, newest]).all(), "over budget, newest results not shortened"
        older = np.flatnonzero((run.turn[: v.end] < run.turn[v.end - 1]) & (v.forms != DROPPED))
        assert not np.isin(run.kind[older], HISTORY_KINDS).any(), "over budget while an older turn remained"
        assert v.summary_at < 0 and v.emergency


@SETTINGS
@given(run=runs, budget=budgets)
def test_seed_c_fits_when_it_can(run, budget):
    policy, vs = views("seed_c", run, budget)
    for v in vs:
        if v.est_tokens <= budget.usable:
            continue
        st_ = run.step[: v.end]
        guard = int(np.searchsorted(st_, st_[-1], side="left"))  # the protected current turn
        lo = min(run.first_body, v.end)
        res = np.flatnonzero((run.kind[:guard] == TOOL_RESULT) & ~run.is_error[:guard])
        live = res[np.isin(v.forms[res], (ORIGINAL, SPILLED))]
        assert (policy.fest[OMITTED, live] >= v.seg_est[live]).all(), "over budget while an output could be marked"
        keep = np.zeros(v.end, dtype=bool)
        errors = np.flatnonzero(run.is_error[: v.end] & (run.kind[: v.end] == TOOL_RESULT))
        keep[errors] = True
        keep[run.pair[errors][run.pair[errors] >= 0]] = True
        keep[:guard] |= run.pair[:guard] >= guard  # calls answered in the protected turn
        rest = lo + np.flatnonzero((v.forms[lo:guard] != DROPPED) & ~keep[lo:guard])
        if len(rest):  # a summary would not have saved anything
            summary = v.summary_est if v.summary_at >= 0 else 0
            assert v.seg_est[rest].sum() + summary <= make_policy("seed_c").config.summary_tokens


@SETTINGS
@given(run=runs, budget=budgets)
def test_drop_oldest_fits_when_it_can(run, budget):
    policy, vs = views("drop_oldest", run, budget)
    for v in vs:
        if v.est_tokens > budget.usable:
            live = np.flatnonzero(v.forms[min(run.first_body, v.end) + 1 : v.end - 2] != 5)
            assert len(live) <= 2


def test_placeholder_costs_less_than_original():
    run = synth_run(30, seed=2, result_chars=(5_000, 9_000))
    policy = views_of(run, make_policy("seed_a"), Budget())
    res = (run.kind == TOOL_RESULT) & (run.chars > 1_000)
    assert (policy.ftok[PLACEHOLDER, res] < run.tokens[res]).all()
