"""OpenHands condensers: keep_first events, a summary past max_size leaving about max_size/2, pairs kept whole."""

from __future__ import annotations

import numpy as np
import pytest

from replay.errors import ReplayError
from replay.policies import Budget, make_policy
from replay.policies.openhands import event_ids, event_weights
from replay.policies.view import DROPPED, ORIGINAL
from replay.simulator.kernels.trace import views_of
from tests.simulator.synth import synth_run


def run_views(name, run, budget=None, params=None):
    policy = make_policy(name, params)
    return policy, views_of(run, policy, budget or Budget()).views


def ids_of(run) -> np.ndarray:
    return event_ids(run.kind, run.step, run.first_body)


def events(run, v, attachment_events: int = 1) -> int:
    """OpenHands' count: the system prompt, each live body event (a thought rides on its call; an attachment by
    weight), the summary."""
    lo = min(run.first_body, v.end)
    ev = ids_of(run)
    live = lo + np.flatnonzero(v.forms[lo:] != DROPPED)
    ids = np.unique(ev[live])
    w = event_weights(run.kind, ev, attachment_events)
    return (1 if run.first_body else 0) + int(w[ids].sum()) + (1 if v.summary_at >= 0 else 0)


def test_summary_past_max_size_keeps_first_events_and_about_half():
    run = synth_run(120, seed=3, parallel=False)  # one call and one result per step: events are exact
    policy, views = run_views("openhands", run, params={"max_size": "40", "keep_first": "3"})
    lo, ev = run.first_body, ids_of(run)
    fired = [v for v in views if v.summarised]
    assert len(fired) >= 3
    for v in views:
        n = events(run, v)
        assert n <= 40
        assert (v.forms[lo : min(lo + 2, v.end)] == ORIGINAL).all()  # keep_first: the system prompt and 2 more
        if v.summarised:
            head = len(np.unique(ev[lo + np.flatnonzero(v.forms[lo : v.summary_at] != DROPPED)]))
            # keep_first (grown by the results of its calls) + summary + tail of max_size // 2 - keep_first - 1
            assert n == 40 // 2 + head - 2
            kept = np.flatnonzero(v.forms[lo : v.summary_at] != DROPPED)
            assert v.summary_at > lo + 2 and (kept == np.arange(len(kept))).all()  # the head, then forgotten
            assert (v.forms[v.summary_at :] != DROPPED).all()
            assert v.summary_tokens <= policy.config.summary_tokens
    for prev, v in zip(views, views[1:], strict=False):
        if not v.summarised:  # between condensations the view only grows
            assert v.dirty_from == prev.end and events(run, v) > events(run, prev)
    assert [v.summary_id for v in fired] == list(range(1, len(fired) + 1))  # rolling


def test_keep_tail_keeps_that_many_newest_events():
    """The Complexity Trap study's condenser: summarise at N + M turns since the last summary, keep the newest M
    turns (N=21, M=10: 62 events past the head and summary, a tail of 20); condensations then come every N turns."""
    run = synth_run(200, seed=3, parallel=False)
    _, views = run_views("openhands", run, params={"max_size": "65", "keep_first": "2", "keep_tail": "20"})
    _, stock = run_views("openhands", run, params={"max_size": "65", "keep_first": "2"})
    lo, ev = run.first_body, ids_of(run)
    fired = [v for v in views if v.summarised]
    assert len(fired) >= 3 and sum(v.summarised for v in stock) > len(fired)  # stock keeps 29, fires more often
    for v in fired:
        head = len(np.unique(ev[lo + np.flatnonzero(v.forms[lo : v.summary_at] != DROPPED)]))
        assert events(run, v) == 1 + head + 1 + 20  # system prompt, head, summary, tail
    with pytest.raises(ReplayError, match="would not shrink"):
        make_policy("openhands", {"max_size": "30", "keep_first": "2", "keep_tail": "27"})


def test_cut_points_keep_parallel_batches_whole():
    run = synth_run(150, seed=8, parallel=True)
    _, views = run_views("openhands", run, params={"max_size": "30", "keep_first": "2"})
    lo = run.first_body
    assert any(v.summarised for v in views)
    for v in views:
        live = v.forms != DROPPED
        assert live[lo : lo + 1].all()  # keep_first: the system prompt and 1 more
        calls = np.flatnonzero((run.pair[: v.end] >= 0) & (run.pair[: v.end] < v.end))
        assert (live[calls] == live[run.pair[calls]]).all()
        if v.summarised:
            head = int((v.forms[lo : v.summary_at] != DROPPED).sum())
            grown = head - 1  # the head takes the results of its calls
            assert 30 // 2 - 3 <= events(run, v) - grown <= 30 // 2  # a straddling batch is forgotten whole


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


def test_token_variant_keeps_the_longest_tail_below_half_the_cap():
    """LLMSummarizingCondenser past max_tokens (software-agent-sdk 3bd0250ab) forgets the shortest run after the
    head whose tokens exceed the view's less max_tokens // 2: the events it keeps (the new summary not counted) are
    below half the cap, and with the newest forgotten call and its result they would not be."""
    run = synth_run(100, seed=4, result_chars=(1_000, 12_000), parallel=False)
    vs = views_of(run, make_policy("openhands_tokens", {"keep_first": "2"}), Budget(60_000, 4_000))
    est = vs.fest[ORIGINAL]
    fired = [v for v in vs.views if v.summarised]
    assert len(fired) >= 2
    for v in vs.views:
        assert v.est_tokens <= 56_000
        if v.summarised:
            kept = v.est_tokens - v.summary_est
            assert kept < 28_000  # half the cap
            assert v.forms[run.first_body] == ORIGINAL  # keep_first 2: the system prompt and the task
            newest = np.flatnonzero(v.forms[: v.summary_at] == DROPPED)[-2:]
            assert run.pair[newest[0]] == newest[1]  # a call and its result
            assert kept + est[newest].sum() >= 28_000  # the longest such tail


def test_openhands_condenses_on_tokens_or_events_whichever_comes_first():
    """max_tokens on the event-counting condenser (SDK 3bd0250ab): it fires past either limit, and past the token
    limit keeps the events below half of it; without max_tokens the views are the events rule's alone."""
    run = synth_run(120, seed=3, result_chars=(1_000, 12_000), parallel=False)
    events_only = {"max_size": "60", "keep_first": "2"}
    _, by_events = run_views("openhands", run, params=events_only)
    _, unset = run_views("openhands", run, params={**events_only, "max_tokens": "0"})
    _, both = run_views("openhands", run, params={**events_only, "max_tokens": "30000"})
    assert [v.summarised for v in unset] == [v.summarised for v in by_events]
    first = {name: next(v.k for v in views if v.summarised) for name, views in (("events", by_events), ("both", both))}
    assert first["both"] < first["events"]
    for v in both:
        assert v.est_tokens <= 30_000 and events(run, v) <= 60
        if v.summarised:
            assert v.est_tokens - v.summary_est < 15_000


@pytest.mark.parametrize("share", [0.75, 0.9])
def test_minimum_progress_waits_for_a_condensation_that_forgets_enough(share):
    """LLMSummarizingCondenser.minimum_progress (SDK b9c0e1f6a, v1.11.5): every condensation forgets at least that
    share of the view's events as they stood before it (the previous summary among the forgotten, the new one not),
    and past max_size the view goes on growing while none would."""
    run = synth_run(120, seed=3, parallel=False)
    base = {"max_size": "24", "keep_first": "2"}
    _, free = run_views("openhands", run, params=base)
    _, views = run_views("openhands", run, params={**base, "minimum_progress": str(share)})
    ev = ids_of(run)
    fired = 0
    for u, v in zip(views, views[1:], strict=False):
        new = np.unique(ev[max(u.end, run.first_body) : v.end])
        before = events(run, u) + len(new)
        if v.summarised:
            fired += 1
            assert before - (events(run, v) - 1) >= share * before, v.k
    assert fired > 0
    assert max(events(run, v) for v in views) > 24  # waited past max_size
    assert max(events(run, v) for v in free) <= 24


def test_recent_keeps_first_and_newest_events():
    run = synth_run(80, seed=2, parallel=False)
    _, views = run_views("openhands_recent", run, params={"keep_first": "2", "max_events": "20"})
    lo = run.first_body
    assert any((v.forms == DROPPED).any() for v in views)
    for v in views:
        assert events(run, v) <= 20 and v.forms[lo] == ORIGINAL and v.summary_at < 0
        live = np.flatnonzero(v.forms[lo + 1 :] != DROPPED) + lo + 1
        if len(live):
            assert (live == np.arange(live[0], v.end)).all()  # the kept tail is the newest events, contiguous


def test_a_late_result_of_a_forgotten_call_is_forgotten_too():
    """A call answered several requests later (a background task): once the call is forgotten, its result must not
    appear alone when it arrives."""
    from replay.run_arrays import build

    items = [
        {"step": 0, "kind": "system", "chars": 400},
        {"step": 0, "kind": "user_text", "chars": 400},
        {"step": 1, "kind": "tool_call", "chars": 100, "call_id": "bg", "tool_name": "Bash"},
    ]
    for k in range(1, 12):
        items += [
            {"step": k, "kind": "tool_call", "chars": 100, "call_id": f"c{k}", "tool_name": "Read"},
            {"step": k, "kind": "tool_result", "chars": 800, "call_id": f"c{k}"},
        ]
    items.append({"step": 9, "kind": "tool_result", "chars": 800, "call_id": "bg"})
    items.sort(key=lambda it: it["step"])  # stable: the late result lands at the end of step 9
    for it in items:
        it["tokens"] = it["chars"] // 4
    run = build("late", items, [{"step": k, "ts": None, "prompt_tokens": None} for k in range(12)], "real:t")
    bg = [i for i, it in enumerate(items) if it.get("call_id") == "bg"]
    assert run.pair[bg[0]] == bg[1]
    for name, params in (
        ("openhands_recent", {"max_events": "4", "keep_first": "0"}),
        ("openhands", {"max_size": "6", "keep_first": "0"}),
    ):
        _, views = run_views(name, run, params=params)
        assert views[8].forms[bg[0]] == DROPPED  # forgotten before its result came
        for v in views[9:]:
            assert v.forms[bg[1]] == DROPPED, name


def test_events_are_counted_as_openhands_counts_them():
    """A thought rides on its call (one action event), a text-only response is one message event, each result is an
    observation event, the system prompt is event 0: 2 events per round trip here, not 3 items."""
    from tests.policies.handmade import loop_run

    run = loop_run([300] * 30, thought=50)
    ids = ids_of(run)
    assert list(ids[:8]) == [0, 1, 2, 2, 3, 4, 4, 5]  # system, user, (thought, call), result, (thought, call), ...
    policy, views = run_views("openhands", run, params={"max_size": "40", "keep_first": "2"})
    first = next(v.k for v in views if v.summarised)
    assert first == 20  # request k holds 2 + 2k events: 40 at request 19, 42 at request 20
    for v in views:
        live = v.forms != DROPPED
        calls = np.flatnonzero(run.kind[: v.end] == 5)
        assert (live[calls - 1] == live[calls]).all()  # never a thought without its call or the reverse
    from replay.run_arrays import build

    items = [
        {"step": 0, "kind": "system", "chars": 40},
        {"step": 0, "kind": "user_text", "chars": 40},
        {"step": 1, "kind": "reasoning", "chars": 40},
        {"step": 1, "kind": "assistant_text", "chars": 40},
        {"step": 2, "kind": "assistant_text", "chars": 40},
        {"step": 2, "kind": "tool_call", "chars": 40, "call_id": "a"},
        {"step": 2, "kind": "tool_call", "chars": 40, "call_id": "b"},
        {"step": 3, "kind": "tool_result", "chars": 40, "call_id": "a"},
        {"step": 3, "kind": "tool_result", "chars": 40, "call_id": "b"},
    ]
    mixed = build("mixed", items, [{"step": k} for k in range(4)])
    assert list(ids_of(mixed)) == [0, 1, 2, 2, 3, 3, 4, 5, 6]  # text-only response = 1; parallel calls = 2


def test_openhands_presets():
    v0, v1 = make_policy("openhands-v0"), make_policy("openhands-v1")
    assert (v0.config.max_size, v0.config.keep_first, v0.config.attachment_events) == (120, 4, 2)
    assert (v1.config.max_size, v1.config.keep_first, v1.config.attachment_events) == (80, 4, 0)


@pytest.mark.parametrize("per_attachment,max_size,first", [(0, 22, 11), (1, 22, 10), (1, 23, 11), (2, 23, 10)])
def test_attachment_events(per_attachment, max_size, first):
    """A V0 recall observation (attachment) is two events (its action has no item); V1 extended content none."""
    from replay.run_arrays import build

    items = [
        {"step": 0, "kind": "system", "chars": 40},
        {"step": 0, "kind": "user_text", "chars": 40},
        {"step": 0, "kind": "attachment", "chars": 40},
    ]
    for k in range(12):
        items += [
            {"step": k + 1, "kind": "tool_call", "chars": 40, "call_id": f"c{k}"},
            {"step": k + 1, "kind": "tool_result", "chars": 40, "call_id": f"c{k}"},
        ]
    run = build("att", items, [{"step": k} for k in range(13)])
    _, views = run_views(
        "openhands",
        run,
        params={"max_size": str(max_size), "keep_first": "1", "attachment_events": str(per_attachment)},
    )
    # request k: system + user + attachment events + 2k
    assert next(v.k for v in views if v.summarised) == first
    assert events(run, views[-1], per_attachment) <= max_size
