"""Hypothesis invariants over synthetic runs: fit, newest output, pairing, cache prefix, oracle bound."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.policies import Budget, make_policy, registry
from replay.policies.view import ORIGINAL, PLACEHOLDER, SPILLED, shared_prefix_tokens
from replay.simulator.arrays import TOOL_RESULT
from replay.simulator.caches import make_cache
from replay.simulator.run import simulate_run
from tests.policies.test_conformance import check_view
from tests.simulator.synth import synth_run

runs = st.builds(synth_run, n_requests=st.integers(2, 60), seed=st.integers(0, 10_000),
                 result_chars=st.tuples(st.integers(10, 2_000), st.integers(2_000, 40_000)),
                 files=st.integers(1, 8), error_rate=st.floats(0, 0.5))
budgets = st.builds(Budget, window=st.integers(8_000, 200_000), reserve=st.integers(0, 4_000))
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def views(name, run, budget, params=None):
    policy = make_policy(name, params)
    policy.reset(run, budget)
    return policy, [policy.step(k) for k in range(run.n_requests)]


@SETTINGS
@given(run=runs, budget=budgets, name=st.sampled_from(sorted(registry())))
def test_invariants_every_policy(run, budget, name):
    _, vs = views(name, run, budget)
    prev = None
    for v in vs:
        check_view(v, run, v.k)
        last = v.end - 1
        if last >= 0 and run.kind[last] == TOOL_RESULT:
            assert v.forms[last] in (ORIGINAL, SPILLED), f"{name} trimmed the newest output"
        assert shared_prefix_tokens(prev, v) == (0 if prev is None else v.cumulative()[v.dirty_from])
        prev = v


@SETTINGS
@given(run=runs, budget=budgets)
def test_seed_a_fits_when_it_can(run, budget):
    policy, vs = views("seed_a", run, budget)
    margin = policy.config.margin
    for v in vs:
        if v.est_tokens * (1 + margin) + budget.reserve <= budget.window:
            continue
        res = np.flatnonzero(run.kind[:v.end] == TOOL_RESULT)[:-1]
        shrinkable = res[policy.fest[PLACEHOLDER, res] < policy.fest[ORIGINAL, res]]
        assert (v.forms[shrinkable] != ORIGINAL).all(), "over budget while trimmable output remained"
        assert v.emergency


@SETTINGS
@given(run=runs, budget=budgets)
def test_drop_oldest_fits_when_it_can(run, budget):
    policy, vs = views("drop_oldest", run, budget)
    for v in vs:
        if v.est_tokens > budget.usable:
            live = np.flatnonzero(v.forms[policy.prefix_end() + 1:v.end - 2] != 5)
            assert len(live) <= 2


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 60), size=st.integers(200, 8_000),
       name=st.sampled_from(["masking", "last_n", "clear_tool_uses", "seed_a"]))
def test_no_policy_beats_the_oracle(seed, n, size, name):
    """Equal-sized outputs (where Belady is optimal): at the policy's own peak, the oracle evicts no more."""
    run = synth_run(n, seed=seed, result_chars=(size, size))
    run.tokens[run.kind == TOOL_RESULT] = size // 4
    params = {"summary_at": "9000000", "shrink_writes": "false"} if name == "seed_a" else {}
    if name == "clear_tool_uses":
        params = {"trigger": "1000"}
    _, row = simulate_run(run, make_policy(name, params), make_cache("none"), Budget(30_000, 0))
    _, best = simulate_run(run, make_policy("oracle", {"budget": str(row["max_prompt_tokens"])}),
                           make_cache("none"))
    assert best["repeat_evicted"] <= row["repeat_evicted"]


def test_placeholder_costs_less_than_original():
    run = synth_run(30, seed=2, result_chars=(5_000, 9_000))
    policy = make_policy("seed_a")
    policy.reset(run, Budget())
    res = (run.kind == TOOL_RESULT) & (run.chars > 1_000)
    assert (policy.ftok[PLACEHOLDER, res] < run.tokens[res]).all()
