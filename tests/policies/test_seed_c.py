"""Seed policy C: spill at the source, markers only as needed (errors and the current turn kept), durable summary."""

from __future__ import annotations

import numpy as np

from replay.policies import Budget, make_policy
from replay.policies.view import DROPPED, OMITTED, ORIGINAL, SPILLED
from replay.run_arrays import TOOL_RESULT
from replay.simulator.kernels.trace import views_of
from tests.simulator.synth import synth_run

NO_SPILL = {"spill_tokens": "0"}


def run_views(run, budget, params=None):
    out = views_of(run, make_policy("seed_c", params), budget)
    return out, out.views


def test_spills_only_above_the_threshold_at_arrival():
    run = synth_run(40, seed=3, result_chars=(500, 60_000), error_rate=0.3)
    policy, views = run_views(run, Budget(10_000_000, 0), {"spill_tokens": "5000"})
    est = policy.fest[ORIGINAL]
    prev = None
    for v in views:
        res = np.flatnonzero(run.kind[: v.end] == TOOL_RESULT)
        big = res[(est[res] > 5_000) & ~run.is_error[res]]
        assert (v.forms[big] == SPILLED).all()
        assert (v.forms[np.setdiff1d(res, big)] == ORIGINAL).all()  # small ones and failures untouched
        assert (v.seg_tokens[big] < run.tokens[big]).all()
        if prev is not None:
            assert v.dirty_from == prev.end  # spilling never rewrites what was already sent
        prev = v
    errors = np.flatnonzero(run.is_error & (est > 5_000))
    assert len(errors) and len(big)  # the case is exercised


def test_never_withholds_a_failure_and_protects_the_current_turn():
    run = synth_run(60, seed=11, result_chars=(2_000, 20_000), error_rate=0.4)
    _, views = run_views(run, Budget(40_000, 4_000), NO_SPILL)
    assert any((v.forms == OMITTED).any() for v in views)
    for v in views:
        errors = np.flatnonzero(run.is_error[: v.end] & (run.kind[: v.end] == TOOL_RESULT))
        assert (v.forms[errors] == ORIGINAL).all(), "a failed result was withheld"
        current = np.flatnonzero(run.step[: v.end] == run.step[v.end - 1])
        assert (v.forms[current] == ORIGINAL).all(), "the current turn was touched"


def test_markers_only_as_many_as_needed_oldest_first():
    run = synth_run(60, seed=5, result_chars=(2_000, 20_000), error_rate=0.1)
    limit = 40_000 - 4_000
    policy, views = run_views(run, Budget(40_000, 4_000), NO_SPILL)
    prev = None
    checked = 0
    for v in views:
        if prev is None or v.summary_at >= 0:
            prev = v
            continue
        new = np.flatnonzero(v.forms[: prev.end] != prev.forms)
        if len(new):
            assert (v.forms[new] == OMITTED).all()
            assert v.est_tokens <= limit
            newest = new.max()  # one fewer marker would not fit
            assert v.est_tokens - policy.fest[OMITTED, newest] + policy.fest[ORIGINAL, newest] > limit
            older = np.flatnonzero((run.kind[:newest] == TOOL_RESULT) & ~run.is_error[:newest])
            older = older[policy.fest[OMITTED, older] < policy.fest[ORIGINAL, older]]
            assert (v.forms[older] == OMITTED).all(), "a newer result was marked while an older one stayed"
            checked += 1
        prev = v
    assert checked


def test_no_markers_while_under_budget():
    run = synth_run(40, seed=5, result_chars=(2_000, 20_000))
    _, views = run_views(run, Budget(10_000_000, 0), NO_SPILL)
    for prev, v in zip(views, views[1:], strict=False):
        assert (v.forms == ORIGINAL).all() and v.dirty_from == prev.end


def test_durable_summary_with_a_tail_when_markers_are_not_enough():
    run = synth_run(80, seed=9, result_chars=(2_000, 12_000), error_rate=0.2)
    policy, views = run_views(run, Budget(24_000, 2_000), NO_SPILL)
    summarised = [v for v in views if v.summarised]
    assert summarised, "no summary fired"
    for v in views:
        errors = np.flatnonzero(run.is_error[: v.end] & (run.kind[: v.end] == TOOL_RESULT))
        assert (v.forms[errors] == ORIGINAL).all()
        calls = run.pair[errors]
        assert (v.forms[calls[calls >= 0]] == ORIGINAL).all()  # failures keep their calls
    first = summarised[0]
    before = views[first.k - 1]
    assert before.summary_at < 0
    # markers alone could not fit: even with every withholdable result outside the current turn a marker
    v, lo = first, min(run.first_body, first.end)
    forms = np.concatenate([before.forms, np.zeros(v.end - before.end, dtype=np.int8)])
    res = np.flatnonzero(
        (run.kind[: v.end] == TOOL_RESULT) & ~run.is_error[: v.end] & (run.step[: v.end] < run.step[v.end - 1])
    )
    res = res[policy.fest[OMITTED, res] < policy.fest[ORIGINAL, res]]
    forms[res] = OMITTED
    assert policy.fest[forms, np.arange(v.end)].sum() > 22_000 >= v.est_tokens
    assert v.summary_at > lo
    assert 0 < v.summary_tokens <= make_policy("seed_c").config.summary_tokens
    dropped = np.flatnonzero(v.forms == DROPPED)
    assert dropped.max() < v.summary_at  # the tail after the summary is kept
    # durable: later views keep the summary (or a newer, rolled one)
    assert all(x.summary_at >= 0 for x in views[first.k :])
    assert views[-1].summary_id >= first.summary_id


def test_markers_are_a_request_time_view_that_goes_when_room_returns():
    """Every marker in every view is needed now: restoring the newest one would not fit. After a summary frees room,
    the markers it no longer needs go (they used to stay: 10 left at 26k of a 40k budget)."""
    run = synth_run(80, seed=4, result_chars=(2_000, 12_000), error_rate=0.2)
    limit = 40_000 - 2_000
    policy, views = run_views(run, Budget(40_000, 2_000), NO_SPILL)
    assert any(v.summarised for v in views)
    released = 0
    for prev, v in zip(views, views[1:], strict=False):
        marked = np.flatnonzero(v.forms == OMITTED)
        if len(marked):
            newest = marked.max()
            assert v.est_tokens - policy.fest[OMITTED, newest] + policy.fest[ORIGINAL, newest] > limit, (
                f"request {v.k}: a marker stayed although the view fits without it"
            )
        back = np.flatnonzero((prev.forms[: prev.end] == OMITTED) & (v.forms[: prev.end] == ORIGINAL))
        released += len(back)
        if len(back):
            assert v.dirty_from <= back.min()  # the cache is charged from the first restored output
    assert released, "no marker ever went back"
