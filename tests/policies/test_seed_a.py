"""Seed policy A as write-up 000 ends: protected third, message tail capped at W/8, est/(1-m) margin, failed
writes kept, 'no cap' expressible, and the before-the-fixes preset."""

from __future__ import annotations

import numpy as np
import pytest

from replay.errors import ReplayError
from replay.policies import Budget, make_policy
from replay.policies.seed_a import message_starts
from replay.policies.view import DROPPED, ORIGINAL, PLACEHOLDER, SHRUNK
from replay.run_arrays import TOOL_CALL, TOOL_RESULT, build
from replay.simulator.kernels.trace import views_of
from tests.simulator.synth import synth_run

NO_TIER2 = {"summary_at": "9000000"}


def loop_run(n: int = 30, result_chars: int = 8_000, failed_write_at: int = -1):
    """System, user, then per request one response: reasoning, text, a call; its result (4 items per message).

    Every 3rd call is a write (an Edit with 3,000 characters of arguments); the one at ``failed_write_at`` fails."""
    items = [{"step": 0, "kind": "system", "chars": 4_000}, {"step": 0, "kind": "user_text", "chars": 400}]
    for k in range(n):
        write = k % 3 == 2
        acc = "write" if write else "read"
        items += [
            {"step": k + 1, "kind": "reasoning", "chars": 800},
            {"step": k + 1, "kind": "assistant_text", "chars": 400},
            {
                "step": k + 1,
                "kind": "tool_call",
                "chars": 3_000 if write else 200,
                "call_id": f"c{k}",
                "tool_name": "Edit" if write else "Read",
                "access": acc,
                "resource": f"f{k % 5}.py",
            },
            {
                "step": k + 1,
                "kind": "tool_result",
                "chars": 100 if write else result_chars,
                "call_id": f"c{k}",
                "access": acc,
                "resource": f"f{k % 5}.py",
                "is_error": k == failed_write_at,
            },
        ]
    return build("loop", items, [{"step": s} for s in range(n + 1)], "real:test")


def views(name, run, budget, params=None):
    out = views_of(run, make_policy(name, params), budget)
    return out, out.views


def test_defaults_are_the_fixed_policy_and_the_preset_is_the_state_before():
    after, before = make_policy("seed_a").config, make_policy("seed_a_before").config
    assert (
        after.protect == 0
        and after.protect_fraction == pytest.approx(1 / 3)
        and after.tail_messages == 24
        and after.tail_fraction == 0.125
    )
    assert after.margin == 0.2
    assert before.protect == 12_000 and before.tail_messages == 24 and before.tail_fraction == 0
    assert before.margin == 0.1


def test_default_protects_a_third_of_the_window():
    run = synth_run(150, seed=5, result_chars=(4_000, 12_000))
    window = 130_000
    default, v = views("seed_a", run, Budget(window, 0), {"reclaim_floor": "0", **NO_TIER2})
    twelve, w = views("seed_a", run, Budget(window, 0), {"reclaim_floor": "0", "protect": "12000", **NO_TIER2})
    back = np.cumsum(default.fest[ORIGINAL, : v[-1].end][::-1])
    third_from = v[-1].end - int(np.searchsorted(back, window / 3, side="right"))
    twelve_from = v[-1].end - int(np.searchsorted(back, 12_000, side="right"))
    assert (v[-1].forms[third_from:] == ORIGINAL).all()
    assert (v[-1].forms[:third_from] == PLACEHOLDER).any()
    assert (w[-1].forms[third_from:twelve_from] == PLACEHOLDER).any()  # 12,000 tokens trims what a third keeps


def test_protect_is_tokens_and_protect_fraction_a_fraction():
    run = synth_run(150, seed=5, result_chars=(4_000, 12_000))
    a = views("seed_a", run, Budget(100_000, 0), {"reclaim_floor": "0", "protect_fraction": "0.25", **NO_TIER2})[1][-1]
    b = views("seed_a", run, Budget(100_000, 0), {"reclaim_floor": "0", "protect": "25000", **NO_TIER2})[1][-1]
    assert (a.forms == b.forms).all() and (a.forms == PLACEHOLDER).any()
    with pytest.raises(ReplayError, match="unknown parameter"):
        make_policy("seed_a", {"protect_tokens": "12000"})
    for old in ("0.25", "1"):  # a setting from when protect took a fraction: refused, with the knob to use
        with pytest.raises(ReplayError, match=f"write protect_fraction={float(old):g}"):
            make_policy("seed_a", {"protect": old})
    assert make_policy("seed_a", {"protect": "12000"}).config.protect == 12_000


def test_messages_group_a_response_with_its_calls_and_results():
    run = loop_run(5)
    starts = np.flatnonzero(message_starts(run))
    # system, user, then one message per response (reasoning, text, call, result)
    assert list(starts) == [0, 1] + [2 + 4 * k for k in range(5)]


def test_tail_counts_chat_messages_not_items():
    run = loop_run(30)
    _, vs = views(
        "seed_a",
        run,
        Budget(1_000_000, 0),
        {"summary_at": "30000", "tail_messages": "3", "tail_fraction": "0", "reclaim_floor": "1"},
    )
    first = next(v for v in vs if v.summarised)
    kept = np.flatnonzero(first.forms[2:] != DROPPED) + 2
    assert first.summary_at == kept[0]
    assert len(kept) == 3 * 4  # three whole responses (reasoning, text, call, result), not three items
    assert run.kind[kept[0]] != TOOL_RESULT and run.kind[kept[-1]] == TOOL_RESULT


def test_tail_capped_at_an_eighth_of_the_window_by_default():
    run = loop_run(60)
    window = 100_000
    policy, vs = views("seed_a", run, Budget(window, 0), {"summary_at": "40000", "reclaim_floor": "1"})
    summarised = [v for v in vs if v.summarised]
    assert summarised
    for v in summarised:
        tail = v.seg_est[v.summary_at :].sum()
        assert tail <= window / 8
        assert (v.forms[v.summary_at :] != DROPPED).all()
        # one more message back would pass the cap or the 24-message limit
        starts = np.flatnonzero(message_starts(run)[: v.summary_at])
        prev = starts[-1]
        more = policy.fest[ORIGINAL, prev : v.summary_at].sum()
        assert tail + more > window / 8 or len(np.flatnonzero(message_starts(run)[v.summary_at : v.end])) >= 24


def test_tail_fraction_zero_means_no_cap_and_both_zero_is_an_error():
    run = loop_run(30)
    params = {"summary_at": "30000", "tail_messages": "5", "reclaim_floor": "1"}
    v = next(v for v in views("seed_a", run, Budget(1_000_000, 0), {**params, "tail_fraction": "0"})[1] if v.summarised)
    assert int((v.forms[2:] != DROPPED).sum()) == 5 * 4  # five whole messages, not a one-item tail
    with pytest.raises(ReplayError, match="unbounded"):
        make_policy("seed_a", {"tail_messages": "0", "tail_fraction": "0"})


@pytest.mark.parametrize("estimate,fires", [(84_340, True), (84_339, False)])
def test_emergency_margin_bounds_the_real_size_as_est_over_one_minus_m(estimate, fires):
    """84,340 / 0.8 = 105,425 and 105,425 + 24,576 = 130,001 > 130,000; 84,339 projects below the limit."""
    items = [
        {"step": 0, "kind": "system", "chars": 400, "tokens": 100},
        {"step": 0, "kind": "user_text", "chars": 4 * (estimate - 100), "tokens": estimate - 100},
    ]
    run = build("margin", items, [{"step": 0}], "real:test")
    policy = make_policy("seed_a", {"estimator": "real", **NO_TIER2})
    assert views_of(run, policy, Budget(130_000, 24_576)).views[0].emergency is fires


def test_emergency_trims_to_the_margin_limit():
    run = loop_run(20, result_chars=16_000)
    budget = Budget(60_000, 8_000)
    policy, vs = views("seed_a", run, budget, {"estimator": "real", **NO_TIER2, "protect_fraction": "0.9"})
    assert any(v.emergency for v in vs)
    for v in vs:
        res = np.flatnonzero(run.kind[: v.end] == TOOL_RESULT)[:-1]
        if (v.forms[res[policy.fest[PLACEHOLDER, res] < policy.fest[ORIGINAL, res]]] == ORIGINAL).any():
            assert v.est_tokens <= (60_000 - 8_000) * 0.8


def test_failed_writes_are_not_shrunk_to_applied():
    run = loop_run(30, failed_write_at=5)
    _, vs = views("seed_a", run, Budget(200_000, 0), {"reclaim_floor": "0", "protect": "3000", **NO_TIER2})
    v = vs[-1]
    calls = np.flatnonzero((run.kind[: v.end] == TOOL_CALL) & (run.access[: v.end] == 2))
    failed = calls[run.is_error[run.pair[calls]]]
    assert len(failed) == 1 and v.forms[failed[0]] == ORIGINAL
    old_ok = calls[~run.is_error[run.pair[calls]] & (calls < failed[0] + 40)]
    assert (v.forms[old_ok] == SHRUNK).all()


def test_before_preset_replays_the_write_up_starting_point():
    run = loop_run(60)
    budget = Budget(100_000, 8_000)
    before = views("seed_a_before", run, budget, {"summary_at": "40000"})[1]
    spelled = views(
        "seed_a", run, budget, {"summary_at": "40000", "protect": "12000", "tail_fraction": "0", "margin": "0.1"}
    )[1]
    assert [v.prompt_tokens for v in before] == [v.prompt_tokens for v in spelled]
    after = views("seed_a", run, budget, {"summary_at": "40000"})[1]
    assert [v.prompt_tokens for v in before] != [v.prompt_tokens for v in after]
