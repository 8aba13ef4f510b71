"""Seed-case regressions: overflow by real tokens with the reply reserve; protected range; cache models."""

from __future__ import annotations

import numpy as np
import pytest

from replay.policies import Budget, make_policy
from replay.policies.view import ORIGINAL
from replay.run_arrays import build
from replay.simulator.caches import make_cache
from replay.simulator.kernels.trace import views_of
from replay.simulator.run import simulate_run
from tests.simulator.synth import synth_run


def one_prompt(tokens: int):
    items = [
        {"step": 0, "kind": "system", "chars": 100, "tokens": 100},
        {"step": 0, "kind": "user_text", "chars": 4 * (tokens - 100), "tokens": tokens - 100},
    ]
    return build("seed", items, [{"step": 0}], "real:test")


@pytest.mark.parametrize(
    "prompt,window,reserve,overflow",
    [
        (32_769, 32_768, 0, True),
        (32_768, 32_768, 0, False),
        (105_425, 130_000, 24_576, True),
        (105_424, 130_000, 24_576, False),
    ],
)
def test_overflow_judged_with_real_tokens_and_reserve(prompt, window, reserve, overflow):
    cols, row = simulate_run(one_prompt(prompt), make_policy("full"), make_cache("none"), Budget(window, reserve))
    assert cols["prompt_tokens"][0] == prompt
    assert bool(cols["overflow"][0]) is overflow and row["overflow_incidents"] == int(overflow)


@pytest.mark.parametrize("estimate,fires", [(84_340, True), (84_339, False)])
def test_seed_a_emergency_margin_and_reserve(estimate, fires):
    """Estimate 84,340 / (1 - 0.2) = 105,425 and 105,425 + 24,576 = 130,001 > 130,000: the check fires; the
    reserve is subtracted exactly, the 20% margin covers the estimator's under-count of the real size."""
    policy = make_policy("seed_a", {"estimator": "real", "summary_at": "9000000"})
    assert views_of(one_prompt(estimate), policy, Budget(130_000, 24_576)).views[0].emergency is fires


def _range_start(policy, view, limit: float) -> int:
    """First position of the newest items whose original estimate fits ``limit``."""
    back = np.cumsum(policy.fest[ORIGINAL, : view.end][::-1])
    return view.end - int(np.searchsorted(back, limit, side="right"))


def test_protected_range_tokens_vs_fraction():
    run = synth_run(150, seed=5, result_chars=(4_000, 12_000))
    window, common = 130_000, {"reclaim_floor": "0", "summary_at": "9000000"}
    fixed = make_policy("seed_a", {**common, "protect": "12000"})
    third = make_policy("seed_a", {**common, "protect_fraction": str(1 / 3)})
    fixed, third = (views_of(run, p, Budget(window, 0)) for p in (fixed, third))
    vf, vt = fixed.views[-1], third.views[-1]
    f_from, t_from = _range_start(fixed, vf, 12_000), _range_start(third, vt, window / 3)
    assert t_from < f_from  # a third of 130k protects more history than 12k tokens
    assert (vf.forms[f_from:] == ORIGINAL).all() and (vt.forms[t_from:] == ORIGINAL).all()
    assert (vf.forms[t_from:f_from] != ORIGINAL).any()  # 12k trims what a third of the window keeps


def test_anthropic_full_history_reads_previous_prompt():
    run = synth_run(30, seed=1)
    cols, row = simulate_run(run, make_policy("full"), make_cache("anthropic"), Budget(10**7))
    assert cols["cached_tokens"][0] == 0
    assert (cols["cached_tokens"][1:] == cols["prompt_tokens"][:-1]).all()
    assert row["cache_hit_rate"] > 0.8


def test_anthropic_ttl_expires_and_one_hour_costs_double():
    run = synth_run(10, seed=1)
    run.req_ts[:] = np.arange(10) * 400.0  # 400 s gaps beat the 5 minute TTL
    cols, _ = simulate_run(run, make_policy("full"), make_cache("anthropic"), Budget(10**7))
    assert cols["cached_tokens"].sum() == 0
    cache = make_cache("anthropic", ttl=3600)
    cols, _ = simulate_run(run, make_policy("full"), cache, Budget(10**7))
    assert cols["cached_tokens"][1] > 0 and cache.write_multiplier == 2.0


def test_min_cacheable_by_model():
    cols, _ = simulate_run(one_prompt(1_000), make_policy("full"), make_cache("anthropic"), Budget())
    assert cols["written_tokens"][0] == 0


@pytest.mark.parametrize("name,unit", [("openai", 128), ("vllm", 16)])
def test_block_caches_round_down(name, unit):
    cols, _ = simulate_run(synth_run(20, seed=4), make_policy("full"), make_cache(name), Budget(10**7))
    assert (cols["cached_tokens"] % unit == 0).all()
    assert (cols["prompt_tokens"][:-1] - cols["cached_tokens"][1:] < unit).all()


def test_rewrite_invalidates_after_it():
    run = synth_run(40, seed=2)
    cols, _ = simulate_run(run, make_policy("masking", {"keep_last": "2"}), make_cache("llamacpp"), Budget(10**7))
    full, _ = simulate_run(run, make_policy("full"), make_cache("llamacpp"), Budget(10**7))
    assert cols["cached_tokens"].sum() < full["cached_tokens"].sum()
