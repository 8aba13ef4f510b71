"""Working-set pressure and the closed-loop re-reads (issue 24): on a small built run whose answer is known, and as
properties on the corpus (pressure never rises as the window grows; after the re-reads no edit is blind)."""

from __future__ import annotations

import pytest

from replay.behaviour.measure import behaviour, views
from replay.behaviour.mech import blind_edits, edit_key, first_per_file, insert_reads, mech
from replay.behaviour.pressure import pressured, working_set
from replay.policies import Budget, make_policy
from replay.run_arrays import build
from replay.simulator.load import load_runs


def call(step: int, cid: str, path: str, access: str, chars: int = 400) -> list[dict]:
    """A tool call and its result, appended before request ``step``."""
    return [
        dict(
            step=step,
            kind="tool_call",
            chars=40,
            tool_name="str_replace_editor",
            call_id=cid,
            resource=path,
            access=access,
        ),
        dict(step=step, kind="tool_result", chars=chars, call_id=cid, resource=path, access=access),
    ]


def small_run():
    """read a.py, read b.py, read c.py, edit a.py, edit b.py: one request a call."""
    items = [dict(step=0, kind="system", chars=100), dict(step=0, kind="user_text", chars=100)]
    for i, (path, access) in enumerate([("a", "read"), ("b", "read"), ("c", "read"), ("a", "write"), ("b", "write")]):
        items += call(i + 1, f"c{i}", f"/r/{path}.py", access)
    requests = [dict(step=s) for s in range(6)]
    return build("small", items, requests)


def masking(k: int):
    return make_policy("masking", {"keep_last": k})


def test_small_run_pressure_and_rereads() -> None:
    run = small_run()
    assert pressured(run, views(run, make_policy("full"), Budget())).sum() == 0
    flags = pressured(run, views(run, masking(1), Budget()))
    # from request 2 the view keeps only the newest result while a (then b) is still to be edited
    assert flags.tolist() == [False, False, True, True, True, False]
    assert blind_edits(run, views(run, masking(1), Budget())) == [(3, 2, 8), (4, 4, 10)]
    found = mech(run, lambda r: views(r, masking(1), Budget()))
    assert found.requests == 2 and found.passes == 2 and found.prompt_tokens > 0
    assert mech(run, lambda r: views(r, masking(3), Budget())).requests == 0


def test_small_run_blind_uses_and_exposure() -> None:
    run = small_run()
    ws = working_set(run, views(run, masking(1), Budget()))
    # request 3 edits a, request 4 edits b: each file's read is out of the one-result window by then
    assert ws.blind.tolist() == ws.uses.tolist() == [False, False, False, True, True, False]
    assert ws.start == 2 and ws.recurrence == 1.0 and ws.loop_exposure == 2.0
    wide = working_set(run, views(run, masking(3), Budget()))
    assert not wide.blind.any() and wide.uses.sum() == 2 and wide.loop_exposure == 0.0


def test_inserted_request_holds_a_copy_of_the_read() -> None:
    run = small_run()
    longer, new = insert_reads(run, [(3, 2)])
    assert new == [3] and longer.n_requests == run.n_requests + 1 and longer.n_items == run.n_items + 2
    at = int(longer.req_end[3])
    assert longer.resource[at] == run.resource[2] and longer.tokens[at + 1] == run.tokens[3]
    assert longer.pair[at] == at + 1 and longer.pair[at + 1] == at
    assert longer.req_end[4] == at + 2  # the edit's request now sees the re-read
    before = [v.prompt_tokens for v in views(run, make_policy("full"), Budget())]
    after = [v.prompt_tokens for v in views(longer, make_policy("full"), Budget())]
    assert after[4] - before[3] == run.tokens[2] + run.tokens[3]


@pytest.fixture(scope="module")
def runs(corpus_db):
    return [r for r in load_runs(corpus_db, None) if r.n_requests >= 20][:12]


def test_pressure_and_rereads_never_rise_as_keep_last_grows(runs) -> None:
    for run in runs:
        rows = [behaviour(run, masking(k), Budget())[0] for k in (1, 3, 5, 10, 20, 40)]
        pressure = [r["pressured_requests"] for r in rows]
        assert all(a >= b for a, b in zip(pressure, pressure[1:], strict=False)), (run.run_id, pressure)
        assert rows[0]["pressured_requests"] <= run.n_requests


def test_no_blind_edit_is_left_after_the_rereads(runs) -> None:
    cascaded = 0
    pol = masking(5)
    for run in runs:
        found = mech(run, lambda r: views(r, pol, Budget()))
        cascaded += found.passes > 2
        current = run
        done: set = set()
        for _ in range(found.passes):
            picks = first_per_file(current, blind_edits(current, views(current, pol, Budget())), done)
            done |= {edit_key(current, e) for _, _, e in picks}
            current, _ = insert_reads(current, picks)
        left = first_per_file(current, blind_edits(current, views(current, pol, Budget())), done)
        assert not left, run.run_id
        assert current.n_requests == run.n_requests + found.requests
    assert cascaded  # the corpus holds cascades: one re-read hides the read before a later edit
