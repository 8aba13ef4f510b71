"""Sweep rows (the compiled loop's counters over packed runs) equal the run rows simulate_run derives from the same
loop's per-request trace: on the corpus and on random runs, for every cache model."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.policies import CompiledPolicy, registry
from replay.simulator.kernels.packed import pack
from replay.simulator.load import load_runs
from replay.sweeps.adapter import evaluate_point, resolve
from replay.sweeps.point_rows import point_frame
from tests.simulator.synth import synth_run

CASES = [
    ("seed_a", {"window": 130_000, "reserve": 24_576}, "anthropic"),
    ("seed_a", {"window": 32_768, "reserve": 4_096, "protect_fraction": 0.33, "summary_at": 20_000}, "anthropic"),
    ("seed_a_before", {"window": 32_768, "reserve": 4_096, "summary_at": 20_000}, "anthropic"),
    (
        "seed_a",
        {"window": 64_000, "reserve": 8_000, "reclaim_floor": 0.02, "summary_at": 40_000, "estimator": "real"},
        "openai",
    ),
    (
        "seed_a",
        {"window": 200_000, "reclaim_floor": 0.0, "summary_at": 30_000, "estimator": "chars/3", "cache_ttl": 3600},
        "anthropic",
    ),
    ("seed_a", {"window": 50_000, "reserve": 2_000, "shrink_writes": False, "tail_messages": 4}, "vllm"),
    ("seed_a", {"window": 40_000, "reserve": 2_000, "margin": 0.0, "tail_fraction": 0.05}, "llamacpp"),
    (
        "seed_a",
        {"window": 40_000, "reserve": 2_000, "tail_messages": 0, "summary_at": 15_000, "protect": 3_000},
        "anthropic",
    ),
    ("full", {"window": 100_000}, "none"),
    ("full", {"window": 100_000, "reserve": 8_000}, "anthropic"),
    ("seed_a", {"window": 130_000, "reserve": 24_576}, "auto"),  # each run under its provider's cache and prices
    ("full", {"window": 100_000}, "deepseek"),
    ("seed_a", {"window": 130_000, "reserve": 24_576}, "gemini"),
    ("seed_b", {"window": 32_768, "reserve": 4_096}, "anthropic"),
    ("seed_c", {"window": 32_768, "reserve": 4_096, "spill_tokens": 2_000}, "openai"),
    ("clear_tool_uses", {"window": 64_000, "trigger": 20_000, "keep": 2}, "anthropic"),
    ("auto_compact", {"window": 32_768, "reserve": 4_096, "threshold": 0.5}, "auto"),
    ("openhands", {"window": 32_768, "max_size": 20, "keep_first": 2}, "anthropic"),
    ("masking", {"window": 32_768, "keep_last": 3}, "vllm"),
    ("oracle", {"window": 32_768, "reserve": 4_096}, "none"),
    ("recorded", {"window": 200_000}, "auto"),
]


def assert_same(reference: dict, fast: dict, where: str) -> None:
    assert set(fast) == set(reference), where
    for key, want in reference.items():
        got = fast[key]
        if isinstance(want, float) and isinstance(got, float):
            assert math.isclose(want, got, rel_tol=1e-12), f"{where}: {key} {got} != {want}"
        else:
            assert got == want, f"{where}: {key} {got!r} != {want!r}"


@pytest.fixture(scope="module")
def corpus_runs(corpus_db):
    return load_runs(corpus_db)


@pytest.mark.parametrize("case", CASES, ids=[f"{p}-{c}-{i}" for i, (p, _, c) in enumerate(CASES)])
def test_corpus_rows_match_reference(corpus_runs, case):
    policy, params, cache = case
    rows = point_frame(pack(corpus_runs), resolve(policy, params, cache)).to_dicts()
    assert len(rows) == len(corpus_runs)
    assert sum(r["prompt_tokens"] for r in rows) > 0
    for run, row in zip(corpus_runs, rows, strict=True):
        assert_same(evaluate_point(run, resolve(policy, params, cache)), row, f"{run.run_id} {params} {cache}")


def test_cases_exercise_every_tier(corpus_runs):
    """The corpus cases above reach summaries, emergencies and evicted reads, so the comparison covers them."""
    rows = [r for p, params, c in CASES for r in point_frame(pack(corpus_runs), resolve(p, params, c)).to_dicts()]
    for key in ("summaries", "emergencies", "repeat_evicted", "overflow_incidents", "evicted_failures"):
        assert sum(r[key] for r in rows) > 0, key


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 50),
    window=st.integers(6_000, 150_000),
    reserve=st.integers(0, 4_000),
    policy=st.sampled_from(["full", "seed_a", "seed_a_before"]),
    cache=st.sampled_from(["anthropic", "openai", "deepseek", "gemini", "vllm", "llamacpp", "none", "auto"]),
    floor=st.sampled_from([0.0, 0.01, 0.125]),
    summary_at=st.integers(2_000, 120_000),
    protect=st.integers(0, 30_000).filter(lambda v: v != 1),  # 0: a third of the window; 1 is refused
    estimator=st.sampled_from(["chars/4", "chars/3", "real"]),
)
def test_random_runs_match_reference(seed, n, window, reserve, policy, cache, floor, summary_at, protect, estimator):
    runs = [synth_run(n, seed=seed), synth_run(max(1, n // 2), seed=seed + 1, parallel=False)]
    params = {"window": window, "reserve": reserve, "estimator": estimator}
    if policy != "full":
        params |= {"reclaim_floor": floor, "summary_at": summary_at, "protect": protect}
    rows = point_frame(pack(runs), resolve(policy, params, cache)).to_dicts()
    for run, row in zip(runs, rows, strict=True):
        assert_same(evaluate_point(run, resolve(policy, params, cache)), row, f"seed {seed} {params} {cache}")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 40),
    window=st.integers(6_000, 150_000),
    reserve=st.integers(0, 4_000),
    policy=st.sampled_from(sorted(registry())),
    cache=st.sampled_from(["anthropic", "openai", "vllm", "llamacpp", "none", "auto"]),
)
def test_every_policy_counts_the_same_in_sweeps_and_views(seed, n, window, reserve, policy, cache):
    runs = [synth_run(n, seed=seed), synth_run(max(1, n // 2), seed=seed + 1, parallel=False)]
    params = {"window": window, "reserve": reserve}
    rows = point_frame(pack(runs), resolve(policy, params, cache)).to_dicts()
    for run, row in zip(runs, rows, strict=True):
        assert_same(evaluate_point(run, resolve(policy, params, cache)), row, f"{policy} seed {seed} {params}")


def test_every_built_in_policy_is_compiled():
    assert [name for name, cls in registry().items() if not issubclass(cls, CompiledPolicy)] == []


def test_a_policy_written_in_python_takes_the_per_request_path():
    assert (
        point_frame(pack([synth_run(3)]), resolve("tests.simulator.test_oracle_property:LargestFirst", {}, "anthropic"))
        is None
    )


@pytest.mark.parametrize("keep_rounds", [1, 3])
@pytest.mark.parametrize("preset", ["claude-code-2.1.153", "claude-code-2.1.153-window"])
def test_kept_rounds_count_the_same_in_sweeps_and_views(preset, keep_rounds):
    """``keep_rounds`` is one kernel parameter: a compiled sweep and the per-request views keep the same rounds."""
    runs = [synth_run(40, seed=7), synth_run(20, seed=8, parallel=False)]
    params = {"window": 30_000, "reserve": 0, "keep_rounds": keep_rounds}
    rows = point_frame(pack(runs), resolve(preset, params, "anthropic")).to_dicts()
    assert sum(r["summaries"] for r in rows) > 0
    for run, row in zip(runs, rows, strict=True):
        assert_same(evaluate_point(run, resolve(preset, params, "anthropic")), row, f"{preset} {params}")


@pytest.mark.parametrize(
    ("policy", "params"),
    [
        ("openhands", {"window": 200_000, "max_size": 24, "keep_first": 2}),
        ("openhands", {"window": 200_000, "max_size": 60, "keep_first": 2, "max_tokens": 12_000}),
        ("openhands_tokens", {"window": 200_000, "max_tokens": 12_000, "keep_first": 2}),
    ],
)
def test_minimum_progress_counts_the_same_in_sweeps_and_views(policy, params):
    """``minimum_progress`` is one kernel parameter: a compiled sweep and the per-request views skip the same
    condensations, and on these runs it skips some (the prompts differ from those without it)."""
    runs = [synth_run(60, seed=11), synth_run(40, seed=12, parallel=False)]
    strict = {**params, "minimum_progress": 0.75}
    rows = point_frame(pack(runs), resolve(policy, strict, "anthropic")).to_dicts()
    free = point_frame(pack(runs), resolve(policy, params, "anthropic")).to_dicts()
    assert sum(r["summaries"] for r in rows) > 0
    assert [r["prompt_tokens"] for r in rows] != [r["prompt_tokens"] for r in free]
    for run, row in zip(runs, rows, strict=True):
        assert_same(evaluate_point(run, resolve(policy, strict, "anthropic")), row, f"{policy} {strict}")
