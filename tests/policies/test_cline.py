"""cline (Cline's duplicate-read pass and truncation) on hand-made runs, across the requests it fires at."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from replay.policies import Budget, make_policy
from replay.policies.view import DROPPED, ORIGINAL, PLACEHOLDER
from replay.run_arrays import TOOL_CALL, TOOL_RESULT, RunArrays, build
from replay.simulator.kernels.trace import views_of

FIRES = {"max_allowed": "1"}  # every request after the first is past the limit


def reads(n: int, result_chars: int = 4_000, files: int = 1) -> RunArrays:
    """A user message of 400 characters, then per request one ``read_file`` of file k % ``files`` and its result
    (the call made after request k appended at step k + 1); 4 characters a token."""
    items: list[dict] = [
        {"step": 0, "kind": "system", "chars": 4_000, "tokens": 1_000},
        {"step": 0, "kind": "user_text", "chars": 400, "tokens": 100, "turn": 1},
    ]
    for k in range(n):
        path = f"src/f{k % files}.py"
        call = {"call_id": f"c{k}", "tool_name": "read_file", "resource": path, "access": "read"}
        items.append({"step": k + 1, "kind": "tool_call", "chars": 40, "tokens": 10, **call})
        items.append({"step": k + 1, "kind": "tool_result", "chars": result_chars, "tokens": result_chars // 4, **call})
    return build("reads", items, [{"step": k} for k in range(n + 1)], "real:test")


def forms_by_step(run: RunArrays, params: dict[str, str]) -> list[dict[int, int]]:
    """Per request, the form of each result in its view by the result's step."""
    views = views_of(run, make_policy("cline", params), Budget(1_000_000)).views
    results = np.flatnonzero(run.kind == TOOL_RESULT)
    return [{int(run.step[q]): int(v.forms[q]) for q in results if q < v.end} for v in views]


def test_each_request_replaces_the_previous_newest_read():
    """One file read at every request: from request 2 on every read but the newest is Cline's notice, the pass
    carrying the newest over from the request before."""
    run = reads(12)
    out = forms_by_step(run, {**FIRES, "dedup_share": "0"})
    for k in range(2, 13):
        assert out[k] == {**dict.fromkeys(range(1, k), PLACEHOLDER), k: ORIGINAL}, k


def firings(out: list[dict[int, int]]) -> list[int]:
    """The requests at which the pass replaced reads."""
    count = [sum(f == PLACEHOLDER for f in o.values()) for o in out]
    return [k for k in range(1, len(out)) if count[k] > count[k - 1]]


def test_newest_of_each_file_is_kept_across_passes():
    """Three files; past 5,000 tokens of usage (request 5, then whenever the reads' originals add up again): at
    each pass the newest read of each file stays, however many requests ago it came."""
    run = reads(40, files=3)
    out = forms_by_step(run, {"max_allowed": "5000", "dedup_share": "0"})
    passes = firings(out)
    assert passes[0] == 5 and len(passes) > 3
    for k in passes:
        newest = {max(j for j in range(1, k + 1) if j % 3 == f % 3) for f in range(3)}
        assert {j for j, f in out[k].items() if f == ORIGINAL} == newest, k
        assert set(out[k].values()) == {ORIGINAL, PLACEHOLDER}, k


def test_a_read_the_view_no_longer_holds_leaves_the_one_before():
    """The server drops request 5's read as it comes: the first pass (request 5) keeps request 4's, and the next
    pass replaces that one."""
    run = reads(30)
    gone = np.full(run.n_items, -1, np.int64)
    gone[np.flatnonzero((run.kind == TOOL_RESULT) & (run.step == 5))] = 5
    out = forms_by_step(replace(run, server_gone=gone), {"max_allowed": "5000", "dedup_share": "0"})
    first, second = firings(out)[:2]
    assert first == 5
    assert out[5] == {1: PLACEHOLDER, 2: PLACEHOLDER, 3: PLACEHOLDER, 4: ORIGINAL, 5: DROPPED}
    assert out[second] == {**dict.fromkeys(range(1, second), PLACEHOLDER), 5: DROPPED, second: ORIGINAL}


def test_truncates_once_the_notices_outweigh_the_share():
    """Kept text at request k: the user message (400), k - 2 notices (250) and two reads (4,000 each); replacing a
    read saves 3,750, at least 30% of that up to request 18. At 19 the older three quarters of the 37 messages go
    (26: requests 1-13's user messages and 2-14's responses, each result with its call); after it the kept text is
    back under the share's bound."""
    run = reads(24)
    views = views_of(run, make_policy("cline", FIRES), Budget(1_000_000)).views
    first = [k for k, v in enumerate(views) if (v.forms == DROPPED).any()][0]
    assert first == 19
    step = run.step[: views[19].end]
    dropped = np.flatnonzero(views[19].forms == DROPPED)
    calls, results = run.kind[dropped] == TOOL_CALL, run.kind[dropped] == TOOL_RESULT
    assert list(step[dropped[calls]]) == list(range(1, 15)) and list(step[dropped[results]]) == list(range(1, 15))
    for k in range(20, 25):  # only the pass again: nothing more dropped, the newest read original
        assert (views[k].forms[: views[19].end] == DROPPED).sum() == len(dropped), k
        assert views[k].forms[views[k].end - 1] == ORIGINAL, k
