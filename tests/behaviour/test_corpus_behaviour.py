"""Behaviour mechanics on the real corpus (issue 24): its one loop, the sympy-16792 view cycle, and blind repeats
that only fall as the window grows."""

from __future__ import annotations

import pytest

from replay.behaviour.measure import behaviour
from replay.policies import Budget, make_policy
from replay.simulator.load import load_runs

LOOPING = "swea-lgetter-sympy__sympy-16792"


@pytest.fixture(scope="module")
def runs(corpus_db):
    return load_runs(corpus_db, None)


@pytest.fixture(scope="module")
def looping(runs):
    (run,) = [r for r in runs if r.run_id.startswith(LOOPING)]
    return run


def test_exactly_one_loop_in_the_corpus(runs) -> None:
    found = {r.run_id: len(behaviour(r, make_policy("last_n", {"n": 5}), Budget())[1]) for r in runs}
    assert {rid: n for rid, n in found.items() if n} == {next(r for r in found if r.startswith(LOOPING)): 1}


def test_sympy_cycle(looping) -> None:
    row, (ep,) = behaviour(looping, make_policy("last_n", {"n": 5}), Budget())
    assert row["stale_repeats"] >= 48
    assert abs(ep["distinct_calls"] - 9) <= 1 and abs(ep["period"] - 9) <= 1
    assert abs(row["blind_repeats"] - 42) <= 2
    assert ep["visible_at"] is not None and ep["visible_at"] > 5
    assert ep["sentence"].startswith(f"9-view cycle, period {ep['period']} > window 5;")
    assert ep["sentence"].endswith(f"visible at n >= {ep['visible_at']}")


def test_sympy_blind_under_a_wider_window(looping) -> None:
    assert abs(behaviour(looping, make_policy("last_n", {"n": 10}), Budget())[0]["blind_repeats"] - 2) <= 1


def test_full_history_hides_nothing(looping) -> None:
    row, (ep,) = behaviour(looping, make_policy("full"), Budget())
    assert row["blind_repeats"] == 0 and ep["hidden_share"] == 0 and ep["repeats"] > 0


@pytest.mark.parametrize("policy,knob", [("last_n", "n"), ("masking", "keep_last")])
def test_blind_repeats_never_rise_as_the_window_grows(looping, policy: str, knob: str) -> None:
    blind = [behaviour(looping, make_policy(policy, {knob: n}), Budget())[0]["blind_repeats"] for n in range(1, 25)]
    assert blind[0] > 0 and blind[-1] == 0
    assert all(a >= b for a, b in zip(blind, blind[1:], strict=False)), blind
