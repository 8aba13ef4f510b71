"""Seed policy B: whole-turn eviction, the assistant-turn rule, capped tool pairs, in-turn markers, failover."""

from __future__ import annotations

import numpy as np

from replay.policies import Budget, make_policy
from replay.policies.view import DROPPED, OMITTED, ORIGINAL, SHRUNK, SPILLED
from replay.run_arrays import KIND_CODE, TOOL_CALL, TOOL_RESULT, build
from replay.simulator.caches import make_cache
from replay.simulator.kernels.trace import views_of
from replay.simulator.run import simulate_run
from tests.simulator.synth import synth_run

KEEP = {"older_results": "keep", "tool_cap": "0"}


def turns_run(n_turns: int = 8, result_chars: int = 8_000, assistant_first: tuple[int, ...] = ()):
    """Turn t (1..n) is appended before request t-1: a user message with an image, a call, its result, a reply.

    Turns in ``assistant_first`` have no user message: they start on model output."""
    items = [{"step": 0, "kind": "system", "chars": 2_000}]
    for t in range(1, n_turns + 1):
        s = t - 1
        if t not in assistant_first:
            items += [
                {"step": s, "kind": "user_text", "chars": 400, "turn": t},
                {"step": s, "kind": "image", "chars": 2_000, "turn": t},
            ]
        items += [
            {"step": s, "kind": "tool_call", "chars": 100, "tool_name": "Read", "call_id": f"c{t}", "turn": t},
            {"step": s, "kind": "tool_result", "chars": result_chars, "call_id": f"c{t}", "turn": t},
            {"step": s, "kind": "assistant_text", "chars": 600, "turn": t},
        ]
    return build("turns", items, [{"step": s} for s in range(n_turns)], "real:test")


def last_view(name, run, budget, params=None):
    out = views_of(run, make_policy(name, params), budget)
    return out, out.views


def test_evicts_oldest_whole_turns_first_with_a_rolling_summary():
    run = turns_run(8)
    policy, views = last_view("seed_b", run, Budget(13_000, 1_000), KEEP)
    v = views[-1]
    assert v.est_tokens <= 12_000
    turn = run.turn[: v.end]
    dropped_turns = sorted(set(turn[v.forms == DROPPED]))
    assert dropped_turns == list(range(1, len(dropped_turns) + 1)) and dropped_turns, "not the oldest turns"
    for t in dropped_turns:
        assert (v.forms[turn == t] == DROPPED).all(), f"turn {t} only partly dropped"
    assert (v.forms[turn == turn[-1]] == ORIGINAL).all()  # the current turn is untouched
    kept = np.flatnonzero((v.forms != DROPPED) & (turn > 0))
    assert v.summary_at == kept[0] and 0 < v.summary_tokens <= make_policy("seed_b").config.summary_tokens
    # only as many turns as needed: the next older turn back in would not fit
    first_kept = turn[kept[0]]
    back = policy.fest[ORIGINAL, : v.end][turn == first_kept - 1].sum()
    assert v.est_tokens + back > 12_000
    assert any(x.summarised for x in views) and views[-1].summary_id >= 1


def test_kept_history_never_starts_on_an_assistant_turn():
    run = turns_run(8, assistant_first=(3,))
    plain_run = turns_run(8)
    plain = last_view("seed_b", plain_run, Budget(21_000, 1_000), KEEP)[1][-1]
    v = last_view("seed_b", run, Budget(21_000, 1_000), KEEP)[1][-1]
    assert set(plain_run.turn[: plain.end][plain.forms == DROPPED]) == {1, 2}  # turns 1-2 are enough to fit
    turn = run.turn[: v.end]
    kept = np.flatnonzero((v.forms != DROPPED) & (turn > 0))
    assert run.kind[kept[0]] == KIND_CODE["user_text"]
    assert set(turn[v.forms == DROPPED]) == {1, 2, 3}  # turn 3 starts on model output: it goes too


def test_every_request_knob_keeps_the_per_request_marking():
    """rebuild=every_request: the last 3 requests' results capped and older ones marked on every request."""
    run = synth_run(30, seed=4, result_chars=(9_000, 20_000), error_rate=0.0)
    policy, views = last_view("seed_b", run, Budget(1_000_000, 0), {"rebuild": "every_request"})
    v = views[-1]
    res = np.flatnonzero(run.kind[: v.end] == TOOL_RESULT)
    newest, rest = res[-1], res[:-1]
    recent_steps = np.unique(run.step[res])[-3:]
    recent = rest[np.isin(run.step[rest], recent_steps)]
    older = rest[~np.isin(run.step[rest], recent_steps)]
    assert v.forms[newest] == ORIGINAL
    assert (v.forms[recent] == SHRUNK).all() and (v.seg_tokens[recent] <= 1_500 + 12).all()
    assert (v.forms[older] == OMITTED).all()
    calls = np.flatnonzero(run.kind[: v.end] == TOOL_CALL)
    assert (v.forms[calls] == ORIGINAL).all()  # pairing kept: every call still there


def test_cap_knob_and_older_results_keep():
    run = synth_run(30, seed=4, result_chars=(9_000, 20_000), error_rate=0.0)
    v = last_view(
        "seed_b", run, Budget(1_000_000, 0), {"tool_cap": "3000", "older_results": "keep", "rebuild": "every_request"}
    )[1][-1]
    res = np.flatnonzero(run.kind[: v.end] == TOOL_RESULT)[:-1]
    big, small = res[run.tokens[res] > 3_100], res[run.tokens[res] < 2_900]
    assert len(big) and (v.forms[big] == SHRUNK).all()  # every result passed through the last three tool turns
    assert (v.forms[small] == ORIGINAL).all()
    assert (v.seg_tokens[big] > 1_500 + 12).all() and (v.seg_tokens[big] <= 3_000 + 12).all()


def test_in_turn_omission_only_when_over_budget_oldest_first():
    run = synth_run(40, seed=7, result_chars=(2_000, 8_000), error_rate=0.0)  # one long user turn
    policy, views = last_view("seed_b", run, Budget(30_000, 2_000), KEEP)
    assert any(v.emergency for v in views)
    for v in views:
        res = np.flatnonzero(run.kind[: v.end] == TOOL_RESULT)
        if not len(res):
            continue
        newest = res[run.step[res] == run.step[res[-1]]]
        assert (v.forms[newest] != OMITTED).all()
        omitted = np.flatnonzero(v.forms == OMITTED)
        if not v.emergency:
            assert not len(omitted) and v.est_tokens <= 28_000
            continue
        assert v.est_tokens <= 28_000
        cand = res[~np.isin(res, newest)]
        cand = cand[policy.fest[OMITTED, cand] < policy.fest[ORIGINAL, cand]]
        n = len(omitted)
        assert (cand[:n] == omitted).all(), "a newer result was marked before an older one"
        if n:  # only as many as needed: the newest marker back in would not fit
            last = omitted[-1]
            assert v.est_tokens - policy.fest[OMITTED, last] + policy.fest[ORIGINAL, last] > 28_000
        calls = np.flatnonzero(run.kind[: v.end] == TOOL_CALL)
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
    items = [
        {"step": 0, "kind": "system", "chars": 400},
        {"step": 0, "kind": "summary", "chars": 4_000, "turn": 1},
        {"step": 0, "kind": "attachment", "chars": 400, "turn": 1, "tool_name": "todo_reminder"},
        {"step": 0, "kind": "attachment", "chars": 20_000, "turn": 1, "tool_name": "file"},
        {"step": 0, "kind": "attachment", "chars": 40_000, "turn": 1, "tool_name": "file"},
        {"step": 0, "kind": "attachment", "chars": 40_000, "turn": 1, "tool_name": "nested_memory"},
        {"step": 0, "kind": "user_text", "chars": 400, "turn": 1},
    ]
    run = build("att", items, [{"step": 0}], "real:test")
    v = views_of(run, make_policy("seed_b"), Budget(18_000, 0)).views[0]
    assert v.forms[1] == DROPPED  # carried context goes before attachments
    assert v.forms[2] == ORIGINAL and v.forms[3] == SHRUNK and v.forms[4] == SHRUNK
    assert v.seg_est[3] == v.seg_est[4]  # equal shares for the two large ones
    assert v.forms[5] == ORIGINAL  # memory is its own section, never evicted
    assert 18_000 - 2 <= v.est_tokens <= 18_000


def test_fair_shares_with_equal_attachments():
    """Max-min shares when several attachments have the same size: the small and equal ones below the share stay
    whole, every larger one gets the same share, and the view just fits."""
    sizes = (2_000, 8_000, 8_000, 30_000, 30_000, 60_000)
    items = [{"step": 0, "kind": "system", "chars": 400}]
    items += [{"step": 0, "kind": "attachment", "chars": c, "turn": 1, "tool_name": "file"} for c in sizes]
    items.append({"step": 0, "kind": "user_text", "chars": 400, "turn": 1})
    run = build("att-ties", items, [{"step": 0}], "real:test")
    v = views_of(run, make_policy("seed_b"), Budget(20_000, 0)).views[0]
    whole = [q for q in range(1, 7) if v.forms[q] == ORIGINAL]
    shrunk = [q for q in range(1, 7) if v.forms[q] == SHRUNK]
    assert whole == [1, 2, 3] and shrunk == [4, 5, 6]
    assert len({int(v.seg_est[q]) for q in shrunk}) == 1
    assert max(v.seg_est[whole]) <= v.seg_est[4]
    assert 20_000 - 3 <= v.est_tokens <= 20_000


def test_nothing_changes_while_the_prompt_fits():
    """The design: sections are evicted only when they do not fit; no caps or markers inside the current turn."""
    run = synth_run(40, seed=4, result_chars=(9_000, 20_000), error_rate=0.0)  # one long user turn
    views = last_view("seed_b", run, Budget(1_000_000, 0))[1]
    for prev, v in zip(views, views[1:], strict=False):
        assert (v.forms == ORIGINAL).all() and v.dirty_from == prev.end


def tool_turns_run(tools: tuple[bool, ...], result_chars: int = 8_000):
    """Turn t: a user message, then (if it used tools) a call and its result, then a reply; one request per turn."""
    items = [{"step": 0, "kind": "system", "chars": 2_000}]
    for t, used in enumerate(tools, start=1):
        items.append({"step": t - 1, "kind": "user_text", "chars": 400, "turn": t})
        if used:
            items += [
                {"step": t - 1, "kind": "tool_call", "chars": 100, "tool_name": "Read", "call_id": f"c{t}", "turn": t},
                {"step": t - 1, "kind": "tool_result", "chars": result_chars, "call_id": f"c{t}", "turn": t},
            ]
        items.append({"step": t - 1, "kind": "assistant_text", "chars": 600, "turn": t})
    return build("tool-turns", items, [{"step": s} for s in range(len(tools))], "real:test")


def test_last_three_history_turns_that_used_tools_capped_older_marked():
    tools = (True, True, True, True, False, True, True, True)  # turn 5 used no tool; turn 8 is the current one
    run = tool_turns_run(tools)
    v = last_view("seed_b", run, Budget(1_000_000, 0))[1][-1]
    res = np.flatnonzero(run.kind[: v.end] == TOOL_RESULT)
    by_turn = dict(zip(run.turn[res].tolist(), res.tolist(), strict=True))
    for t in (4, 6, 7):  # the last three history turns that used tools (turn 5 did not)
        assert v.forms[by_turn[t]] == SHRUNK and v.seg_tokens[by_turn[t]] <= 1_500 + 12
    for t in (1, 2, 3):
        assert v.forms[by_turn[t]] == OMITTED
    assert v.forms[by_turn[8]] == ORIGINAL  # the current turn is untouched
    calls = np.flatnonzero(run.kind[: v.end] == TOOL_CALL)
    assert (v.forms[calls] == ORIGINAL).all()  # pairs kept: every call still there


def parallel_run(n_steps: int, result_chars: int, last_siblings: int, last_chars: int):
    """One user turn: a call and its result per step; the last step has ``last_siblings`` parallel calls."""
    items = [{"step": 0, "kind": "system", "chars": 2_000}, {"step": 0, "kind": "user_text", "chars": 400}]
    cid = 0
    for s in range(n_steps):
        k = last_siblings if s == n_steps - 1 else 1
        chars = last_chars if s == n_steps - 1 else result_chars
        ids = [f"c{cid + i}" for i in range(k)]
        cid += k
        items += [{"step": s, "kind": "tool_call", "chars": 100, "tool_name": "Read", "call_id": c} for c in ids]
        items += [{"step": s, "kind": "tool_result", "chars": chars, "call_id": c} for c in ids]
    return build("parallel", items, [{"step": s} for s in range(n_steps)], "real:test")


def test_newest_step_siblings_never_omitted_and_shortened_when_needed():
    run = parallel_run(6, 8_000, last_siblings=3, last_chars=16_000)  # 3 x 4,000 newest vs a 9,000 budget
    policy = make_policy("seed_b", KEEP)
    _, row = simulate_run(run, policy, make_cache("none"), Budget(10_000, 1_000))
    v = views_of(run, policy, Budget(10_000, 1_000)).views[-1]
    res = np.flatnonzero(run.kind[: v.end] == TOOL_RESULT)
    newest, older = res[-3:], res[:-3]
    assert (v.forms[older] == OMITTED).all()
    assert np.isin(v.forms[newest], (SHRUNK, SPILLED)).all(), "the newest results must be shortened, not omitted"
    assert v.est_tokens <= 9_000 and len(set(v.seg_est[newest].tolist())) == 1  # equal shares
    assert row["overflow_incidents"] == 0


def test_attachments_of_earlier_turns_are_evicted_as_carried_context():
    items = [
        {"step": 0, "kind": "system", "chars": 400},
        {"step": 0, "kind": "user_text", "chars": 400, "turn": 1},
        {"step": 0, "kind": "attachment", "chars": 20_000, "turn": 1, "tool_name": "file"},
        {"step": 0, "kind": "assistant_text", "chars": 400, "turn": 1},
        {"step": 1, "kind": "user_text", "chars": 400, "turn": 2},
        {"step": 1, "kind": "attachment", "chars": 20_000, "turn": 2, "tool_name": "file"},
    ]
    run = build("carried", items, [{"step": 0}, {"step": 1}], "real:test")
    v = views_of(run, make_policy("seed_b"), Budget(7_000, 0)).views[1]
    assert v.forms[2] == DROPPED  # the earlier turn's attachment goes whole, as carried context
    assert v.forms[5] == ORIGINAL  # so the current turn's attachment is not trimmed
    assert v.est_tokens <= 7_000


def test_failover_overflow_judged_against_the_serving_window():
    """A 5,125-token new message served by a 4,096-token model overflows, although the original window is 200,000."""
    items = [
        {"step": 0, "kind": "system", "chars": 400, "tokens": 100},
        {"step": 0, "kind": "user_text", "chars": 400, "tokens": 100, "turn": 1},
        {"step": 1, "kind": "user_text", "chars": 4 * 5_125, "tokens": 5_125, "turn": 2},
    ]
    run = build("failover", items, [{"step": 0}, {"step": 1}], "real:test")
    policy = make_policy("seed_b", {"failover_window": "4096", "failover_at_request": "1"})
    cols, row = simulate_run(run, policy, make_cache("none"), Budget(200_000, 0))
    assert cols["prompt_tokens"][1] > 4_096  # the new message alone does not fit and is never evicted
    assert list(cols["overflow"]) == [0, 1] and row["overflow_incidents"] == 1
