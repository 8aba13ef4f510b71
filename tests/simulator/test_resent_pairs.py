"""Calls and results pair within one copy generation: an original with its original partner, a re-sent copy with
its re-sent partner, never across (replay.run_arrays._pairs). A compaction between a call and its result re-sends
the call only: the result that follows is the original call's partner in every replay but ``recorded``, where the
copy stands for the call (replay.policies.recorded keeps the result when the event drops the original)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from replay.ingest import ingest
from replay.policies import Budget, make_policy
from replay.policies.view import DROPPED
from replay.simulator.caches import make_cache
from replay.simulator.kernels.trace import views_of
from replay.simulator.load import load_run
from replay.simulator.run import simulate_run
from replay.store import open_store

BIG = "x " * 2_000


def _item(kind: str, **kw) -> dict:
    return {"type": "item", "kind": kind, **kw}


def _log(path: Path, events: list[dict]) -> Path:
    """seq 0 the task; 1-2 call a and its result; 3 call b; 4 the summary; 5-7 copies of a, its result, b
    (``resent``); 8 b's result, logged after the compaction; 9 the answer."""
    run = {"type": "run", "format": "replay-canonical/1", "run": "r", "model": "m"}
    run["metadata"] = {"context_events": events}
    call_a = _item("tool_call", tool_name="bash", call_id="a", args={"command": "cat a.py"})
    res_a = _item("tool_result", call_id="a", text=BIG)
    call_b = _item("tool_call", tool_name="bash", call_id="b", args={"command": "cat b.py"})
    lines = [
        run,
        _item("user_text", role="user", text="task"),
        {"type": "request", "input_tokens": 10},
        call_a,
        res_a,
        call_b,
        _item("summary", role="user", text="summary"),
        call_a,
        res_a,
        call_b,
        _item("tool_result", call_id="b", text="y " * 2_000),
        {"type": "request", "input_tokens": 20},
        _item("assistant_text", role="assistant", text="done"),
        {"type": "request", "input_tokens": 30},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


EVENT = {"kind": "compaction", "step": 1, "drop": [[0, 4]], "summary_seq": 4, "trigger": "auto", "resent": [[5, 8]]}


def _run(tmp_path: Path, events: list[dict]):
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [_log(tmp_path / "r.jsonl", events)])
    (run_id,) = con.execute("SELECT run_id FROM runs").fetchone()
    return load_run(con, run_id)


def test_each_copy_pairs_with_its_own_partner(tmp_path: Path) -> None:
    run = _run(tmp_path, [EVENT])
    assert run.pair[[1, 2, 5, 6]].tolist() == [2, 1, 6, 5]  # a: original with original, copy with copy
    assert run.pair[[3, 8]].tolist() == [8, 3]  # b's result follows b's copy, but it is the original's result
    assert run.pair[7] == -1  # b's copy has no re-sent result
    assert run.events.recorded_only.tolist() == [False] * 4 + [True] * 4 + [False] * 2


def test_without_events_pairs_are_the_newest_call(tmp_path: Path) -> None:
    """No context event: the same ids pair as before (the newest open call with the id)."""
    run = _run(tmp_path, [])
    assert run.pair[[2, 6, 8]].tolist() == [1, 5, 7]


def _forms(run, policy: str, budget: Budget) -> list[np.ndarray]:
    return [v.forms for v in views_of(run, make_policy(policy), budget).views]


def test_recorded_keeps_the_result_of_a_resent_call(tmp_path: Path) -> None:
    """The recorded replay sends what the harness sent after the event: the copies and b's result."""
    run = _run(tmp_path, [EVENT])
    forms = _forms(run, "recorded", Budget(128_000, 0))
    assert np.flatnonzero(forms[1] != DROPPED).tolist() == [4, 5, 6, 7, 8]


def test_dropping_the_original_call_drops_its_result(tmp_path: Path) -> None:
    """A policy that drops b's original call drops its result with it (main paired the result with b's copy,
    which only the recorded replay has, and kept it alone)."""
    run = _run(tmp_path, [EVENT])
    forms = _forms(run, "trim_messages", Budget(2_000, 0))
    kept = forms[1] != DROPPED
    assert kept[3] == kept[8], kept.tolist()


def test_compiled_run_matches_the_views(tmp_path: Path) -> None:
    """The pairing is data in RunArrays: the compiled replay's prompts are the per-request views' ones."""
    run = _run(tmp_path, [EVENT])
    for policy, budget in (("trim_messages", Budget(2_000, 0)), ("recorded", Budget(128_000, 0))):
        views = views_of(run, make_policy(policy), budget).views
        cols, _ = simulate_run(run, make_policy(policy), make_cache("anthropic"), budget)
        assert cols["prompt_tokens"].tolist() == [v.prompt_tokens for v in views], policy
