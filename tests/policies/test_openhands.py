"""OpenHands condensers: keep_first events, a summary past max_size leaving about max_size/2, pairs kept whole."""

from __future__ import annotations

import numpy as np
import pytest

from replay.errors import ReplayError
from replay.policies import Budget, make_policy
from replay.policies.view import DROPPED, ORIGINAL
from tests.simulator.synth import synth_run


def run_views(name, run, budget=None, params=None):
    policy = make_policy(name, params)
    policy.reset(run, budget or Budget())
    return policy, [policy.step(k) for k in range(run.n_requests)]


def events(policy, v) -> int:
    lo = policy.prefix_end()
    return int((v.forms[lo:] != DROPPED).sum()) + (1 if v.summary_at >= 0 else 0)


def test_summary_past_max_size_keeps_first_events_and_about_half():
    run = synth_run(120, seed=3, parallel=False)  # one call and one result per step: events are exact
    policy, views = run_views("openhands", run, params={"max_size": "40", "keep_first": "3"})
    lo = policy.prefix_end()
    fired = [v for v in views if v.summarised]
    assert len(fired) >= 3
    for v in views:
        n = events(policy, v)
        assert n <= 40
        assert (v.forms[lo:min(lo + 3, v.end)] == ORIGINAL).all()  # keep_first events always kept
        if v.summarised:
            assert n == 40 // 2  # keep_first + summary + tail of max_size // 2 - keep_first - 1
            assert v.summary_at > lo + 3 and (v.forms[lo + 3:v.summary_at] == DROPPED).all()
            assert (v.forms[v.summary_at:] != DROPPED).all()
            assert v.summary_tokens <= policy.config.summary_tokens
    for prev, v in zip(views, views[1:], strict=False):
        if not v.summarised:  # between condensations the view only grows
            assert v.dirty_from == prev.end and events(policy, v) > events(policy, prev)
    assert [v.summary_id for v in fired] == list(range(1, len(fired) + 1))  # rolling


def test_cut_points_keep_parallel_batches_whole():
    run = synth_run(150, seed=8, parallel=True)
    policy, views = run_views("openhands", run, params={"max_size": "30", "keep_first": "2"})
    assert any(v.summarised for v in views)
    for v in views:
        live = v.forms != DROPPED
        assert live[policy.prefix_end():policy.prefix_end() + 2].all()  # keep_first, even with a call among them
        calls = np.flatnonzero((run.pair[:v.end] >= 0) & (run.pair[:v.end] < v.end))
        assert (live[calls] == live[run.pair[calls]]).all()
        if v.summarised:
            head = int((v.forms[policy.prefix_end():v.summary_at] != DROPPED).sum())
            grown = head - 2  # the head takes the results of its calls
            assert 30 // 2 - 3 <= events(policy, v) - grown <= 30 // 2  # a straddling batch is forgotten whole


def test_summary_input_truncated_to_max_event_length():
    run = synth_run(60, seed=1, result_chars=(30_000, 40_000), parallel=False)
    common = {"max_size": "20", "summary_tokens": "100000"}
    _, full = run_views("openhands", run, params=common)
    _, short = run_views("openhands", run, params={**common, "max_event_length": "1000"})
    first_full = next(v for v in full if v.summarised)
    first_short = next(v for v in short if v.summarised)
    assert first_short.summary_tokens < first_full.summary_tokens
    assert first_short.summary_tokens <= 250 * 20  # at most 1,000 characters per forgotten event


def test_keep_first_must_leave_a_tail():
    with pytest.raises(ReplayError, match="no tail"):
        make_policy("openhands", {"max_size": "10", "keep_first": "4"})
    with pytest.raises(ReplayError, match="max_events"):
        make_policy("openhands_recent", {"max_events": "3", "keep_first": "3"})


def test_token_variant_targets_half_the_cap():
    run = synth_run(100, seed=4, result_chars=(1_000, 12_000))
    policy, views = run_views("openhands_tokens", run, Budget(60_000, 4_000))
    fired = [v for v in views if v.summarised]
    assert fired
    for v in views:
        assert v.est_tokens <= 56_000
        if v.summarised:
            assert v.est_tokens <= 28_000  # half the cap
            assert (v.forms[policy.prefix_end()] == ORIGINAL)


def test_recent_keeps_first_and_newest_events():
    run = synth_run(80, seed=2, parallel=False)
    policy, views = run_views("openhands_recent", run, params={"keep_first": "1", "max_events": "20"})
    lo = policy.prefix_end()
    assert any((v.forms == DROPPED).any() for v in views)
    for v in views:
        assert events(policy, v) <= 20 and v.forms[lo] == ORIGINAL and v.summary_at < 0
        live = np.flatnonzero(v.forms[lo + 1:] != DROPPED) + lo + 1
        if len(live):
            assert (live == np.arange(live[0], v.end)).all()  # the kept tail is the newest events, contiguous


def test_a_late_result_of_a_forgotten_call_is_forgotten_too():
    """A call answered several requests later (a background task): once the call is forgotten, its result must not
    appear alone when it arrives."""
    from replay.simulator.arrays import build

    items = [{"step": 0, "kind": "system", "chars": 400}, {"step": 0, "kind": "user_text", "chars": 400},
             {"step": 1, "kind": "tool_call", "chars": 100, "call_id": "bg", "tool_name": "Bash"}]
    for k in range(1, 12):
        items += [{"step": k, "kind": "tool_call", "chars": 100, "call_id": f"c{k}", "tool_name": "Read"},
                  {"step": k, "kind": "tool_result", "chars": 800, "call_id": f"c{k}"}]
    items.append({"step": 9, "kind": "tool_result", "chars": 800, "call_id": "bg"})
    items.sort(key=lambda it: it["step"])  # stable: the late result lands at the end of step 9
    for it in items:
        it["tokens"] = it["chars"] // 4
    run = build("late", items, [{"step": k, "ts": None, "prompt_tokens": None} for k in range(12)], "real:t")
    bg = [i for i, it in enumerate(items) if it.get("call_id") == "bg"]
    assert run.pair[bg[0]] == bg[1]
    for name, params in (("openhands_recent", {"max_events": "4", "keep_first": "0"}),
                         ("openhands", {"max_size": "6", "keep_first": "0"})):
        _, views = run_views(name, run, params=params)
        assert views[8].forms[bg[0]] == DROPPED  # forgotten before its result came
        for v in views[9:]:
            assert v.forms[bg[1]] == DROPPED, name
