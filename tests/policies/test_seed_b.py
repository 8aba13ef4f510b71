"""Seed policy B: whole-turn eviction, the assistant-turn rule, capped tool pairs, in-turn markers, failover."""

from __future__ import annotations

import numpy as np

from replay.policies import Budget, make_policy
from replay.policies.view import DROPPED, OMITTED, ORIGINAL, SHRUNK
from replay.simulator.arrays import KIND_CODE, TOOL_CALL, TOOL_RESULT, build
from tests.simulator.synth import synth_run

KEEP = {"older_results": "keep", "tool_cap": "0"}


def turns_run(n_turns: int = 8, result_chars: int = 8_000, assistant_first: tuple[int, ...] = ()):
    """Turn t (1..n) is appended before request t-1: a user message with an image, a call, its result, a reply.

    Turns in ``assistant_first`` have no user message: they start on model output."""
    items = [{"step": 0, "kind": "system", "chars": 2_000}]
    for t in range(1, n_turns + 1):
        s = t - 1
        if t not in assistant_first:
            items += [{"step": s, "kind": "user_text", "chars": 400, "turn": t},
                      {"step": s, "kind": "image", "chars": 2_000, "turn": t}]
        items += [{"step": s, "kind": "tool_call", "chars": 100, "tool_name": "Read", "call_id": f"c{t}",
                   "turn": t},
                  {"step": s, "kind": "tool_result", "chars": result_chars, "call_id": f"c{t}", "turn": t},
                  {"step": s, "kind": "assistant_text", "chars": 600, "turn": t}]
    return build("turns", items, [{"step": s} for s in range(n_turns)], "real:test")


def last_view(name, run, budget, params=None):
    policy = make_policy(name, params)
    policy.reset(run, budget)
    views = [policy.step(k) for k in range(run.n_requests)]
    return policy, views


def test_evicts_oldest_whole_turns_first_with_a_rolling_summary():
    run = turns_run(8)
    policy, views = last_view("seed_b", run, Budget(13_000, 1_000), KEEP)
    v = views[-1]
    assert v.est_tokens <= 12_000
    turn = run.turn[:v.end]
    dropped_turns = sorted(set(turn[v.forms == DROPPED]))
    assert dropped_turns == list(range(1, len(dropped_turns) + 1)) and dropped_turns, "not the oldest turns"
    for t in dropped_turns:
        assert (v.forms[turn == t] == DROPPED).all(), f"turn {t} only partly dropped"
    assert (v.forms[turn == turn[-1]] == ORIGINAL).all()  # the current turn is untouched
    kept = np.flatnonzero((v.forms != DROPPED) & (turn > 0))
    assert v.summary_at == kept[0] and 0 < v.summary_tokens <= policy.config.summary_tokens
    # only as many turns as needed: the next older turn back in would not fit
    first_kept = turn[kept[0]]
    back = policy.fest[ORIGINAL, :v.end][turn == first_kept - 1].sum()
    assert v.est_tokens + back > 12_000
    assert any(x.summarised for x in views) and views[-1].summary_id >= 1


def test_kept_history_never_starts_on_an_assistant_turn():
    run = turns_run(8, assistant_first=(3,))
    plain_run = turns_run(8)
    plain = last_view("seed_b", plain_run, Budget(21_000, 1_000), KEEP)[1][-1]
    v = last_view("seed_b", run, Budget(21_000, 1_000), KEEP)[1][-1]
    assert set(plain_run.turn[:plain.end][plain.forms == DROPPED]) == {1, 2}  # turns 1-2 are enough to fit
    turn = run.turn[:v.end]
    kept = np.flatnonzero((v.forms != DROPPED) & (turn > 0))
    assert run.kind[kept[0]] == KIND_CODE["user_text"]
    assert set(turn[v.forms == DROPPED]) == {1, 2, 3}  # turn 3 starts on model output: it goes too


def test_last_three_tool_turns_capped_older_results_marked():
    run = synth_run(30, seed=4, result_chars=(9_000, 20_000), error_rate=0.0)
    policy, views = last_view("seed_b", run, Budget(1_000_000, 0))
    v = views[-1]
    res = np.flatnonzero(run.kind[:v.end] == TOOL_RESULT)
    newest, rest = res[-1], res[:-1]
    recent_steps = np.unique(run.step[res])[-3:]
    recent = rest[np.isin(run.step[rest], recent_steps)]
    older = rest[~np.isin(run.step[rest], recent_steps)]
    assert v.forms[newest] == ORIGINAL
    assert (v.forms[recent] == SHRUNK).all() and (v.seg_tokens[recent] <= 1_500 + 12).all()
    assert (v.forms[older] == OMITTED).all()
    calls = np.flatnonzero(run.kind[:v.end] == TOOL_CALL)
    assert (v.forms[calls] == ORIGINAL).all()  # pairing kept: every call still there


def test_cap_knob_and_older_results_keep():
    run = synth_run(30, seed=4, result_chars=(9_000, 20_000), error_rate=0.0)
    v = last_view("seed_b", run, Budget(1_000_000, 0), {"tool_cap": "3000", "older_results": "keep"})[1][-1]
    res = np.flatnonzero(run.kind[:v.end] == TOOL_RESULT)[:-1]
    big, small = res[run.tokens[res] > 3_100], res[run.tokens[res] < 2_900]
    assert len(big) and (v.forms[big] == SHRUNK).all()  # every result passed through the last three tool turns
    assert (v.forms[small] == ORIGINAL).all()
    assert (v.seg_tokens[big] > 1_500 + 12).all() and (v.seg_tokens[big] <= 3_000 + 12).all()


def test_in_turn_omission_oldest_first_newest_kept():
    run = synth_run(40, seed=7, result_chars=(2_000, 8_000), error_rate=0.0)  # one long user turn
    policy, views = last_view("seed_b", run, Budget(30_000, 2_000), KEEP)
    prev = np.zeros(0, dtype=np.int8)
    assert any(v.emergency for v in views)
    for v in views:
        res = np.flatnonzero(run.kind[:v.end] == TOOL_RESULT)
        if not len(res):
            continue
        assert v.forms[res[-1]] == ORIGINAL
        cand = res[:-1][policy.fest[OMITTED, res[:-1]] < policy.fest[ORIGINAL, res[:-1]]]
        omitted = v.forms[cand] == OMITTED
        if (v.forms[:len(prev)] != prev).any() or omitted.any() and v.emergency:
            assert v.emergency and v.est_tokens <= 28_000
        n = int(omitted.sum())
        assert omitted[:n].all(), "a newer result was marked before an older one"
        if v.emergency:  # only as many as needed: the newest marker back in would not fit
            last = cand[n - 1]
            assert v.est_tokens - policy.fest[OMITTED, last] + policy.fest[ORIGINAL, last] > 28_000
        prev = v.forms
        calls = np.flatnonzero(run.kind[:v.end] == TOOL_CALL)
        assert (v.forms[calls] == ORIGINAL).all()


def test_failover_refits_on_the_smaller_window():
    run = synth_run(40, seed=2, result_chars=(2_000, 8_000), error_rate=0.0)
    budget = Budget(200_000, 4_000)
    base = last_view("seed_b", run, budget, KEEP)[1]
    fo = last_view("seed_b", run, budget, {**KEEP, "failover_window": "32000", "failover_at_request": "30"})[1]
    assert [v.prompt_tokens for v in base[:30]] == [v.prompt_tokens for v in fo[:30]]
    assert base[29].est_tokens > 28_000  # already too big for the smaller window before the failover
    assert all(v.est_tokens <= 28_000 for v in fo[30:])
    assert all(f.prompt_tokens < b.prompt_tokens for f, b in zip(fo[30:], base[30:], strict=True))
    assert fo[30].dirty_from < fo[29].end  # the re-fit rewrote already-sent context


def test_attachments_trimmed_to_fair_shares_after_carried_context():
    items = [{"step": 0, "kind": "system", "chars": 400},
             {"step": 0, "kind": "summary", "chars": 4_000, "turn": 1},
             {"step": 0, "kind": "attachment", "chars": 400, "turn": 1, "tool_name": "todo_reminder"},
             {"step": 0, "kind": "attachment", "chars": 20_000, "turn": 1, "tool_name": "file"},
             {"step": 0, "kind": "attachment", "chars": 40_000, "turn": 1, "tool_name": "file"},
             {"step": 0, "kind": "attachment", "chars": 40_000, "turn": 1, "tool_name": "nested_memory"},
             {"step": 0, "kind": "user_text", "chars": 400, "turn": 1}]
    run = build("att", items, [{"step": 0}], "real:test")
    policy = make_policy("seed_b")
    policy.reset(run, Budget(18_000, 0))
    v = policy.step(0)
    assert v.forms[1] == DROPPED  # carried context goes before attachments
    assert v.forms[2] == ORIGINAL and v.forms[3] == SHRUNK and v.forms[4] == SHRUNK
    assert v.seg_est[3] == v.seg_est[4]  # equal shares for the two large ones
    assert v.forms[5] == ORIGINAL  # memory is its own section, never evicted
    assert 18_000 - 2 <= v.est_tokens <= 18_000
