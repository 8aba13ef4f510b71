"""The Belady oracle policy: the common budget with the harness prefix, every item kind evictable."""

from __future__ import annotations

import pytest

from replay.errors import ReplayError
from replay.policies import Budget, make_policy
from replay.policies.view import ORIGINAL
from replay.run_arrays import build
from replay.simulator.caches import make_cache
from replay.simulator.kernels.trace import views_of
from replay.simulator.run import simulate_run
from tests.simulator.synth import synth_run


def pasted_run():
    """A 106k-token pasted user message, then six small tool round trips."""
    items = [
        {"step": 0, "kind": "system", "chars": 20_000, "tokens": 5_000},
        {"step": 0, "kind": "user_text", "chars": 424_000, "tokens": 106_000, "turn": 1},
    ]
    for k in range(1, 7):
        items += [
            {
                "step": k,
                "kind": "tool_call",
                "tool_name": "Read",
                "call_id": f"c{k}",
                "resource": f"f{k}",
                "access": "read",
                "chars": 80,
                "tokens": 20,
                "turn": 1,
            },
            {
                "step": k,
                "kind": "tool_result",
                "call_id": f"c{k}",
                "resource": f"f{k}",
                "access": "read",
                "chars": 8_000,
                "tokens": 2_000,
                "turn": 1,
            },
        ]
    return build("pasted", items, [{"step": k} for k in range(7)], "real:test")


def test_a_pasted_message_is_evicted_after_its_request():
    """Only the request that brings the message overflows (its own new items stay); the rest fit."""
    run = pasted_run()
    cols, row = simulate_run(run, make_policy("oracle"), make_cache("none"), Budget(130_000, 24_576))
    assert cols["overflow"].tolist() == [1, 0, 0, 0, 0, 0, 0]
    assert row["overflow_incidents"] == 1


def test_common_budget_and_prefix():
    """The view fits window - reserve with the system prefix counted; no budget of its own."""
    run = synth_run(40, seed=5, result_chars=(4_000, 30_000), system_chars=40_000)
    budget = Budget(40_000, 6_000)
    for k, v in enumerate(views_of(run, make_policy("oracle"), budget).views):
        new = int(run.req_end[k - 1]) if k else 0
        floor = int(run.tokens[: run.first_body].sum() + run.tokens[new : v.end].sum())
        assert v.prompt_tokens <= max(budget.usable, floor)
        assert (v.forms[: run.first_body] == ORIGINAL).all() and (v.forms[new:] == ORIGINAL).all()
    with pytest.raises(ReplayError, match="unknown parameter"):
        make_policy("oracle", {"budget": "100000"})
