"""Repeat reads by content: the same lines (or the same command) read again, per-resource counts beside them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from replay.ingest import ingest
from replay.metrics.repeat_reads import read_events
from replay.policies import Budget, make_policy
from replay.readers.tool_targets import END, overlaps, read_span
from replay.run_arrays import ACCESS_CODE, TOOL_CALL, build
from replay.simulator.caches import make_cache
from replay.simulator.load import load_run, run_ids
from replay.simulator.run import simulate_run
from replay.store import open_store


@pytest.mark.parametrize(
    "tool, args, span",
    [
        ("Read", {"file_path": "a.py", "offset": 178, "limit": 25}, (178, 202, None)),
        ("Read", {"file_path": "a.py", "limit": 20}, (1, 20, None)),
        ("Read", {"file_path": "a.py"}, (1, END, None)),
        ("str_replace_editor", {"command": "view", "path": "/t/x.py", "view_range": [250, 270]}, (250, 270, None)),
        ("str_replace_editor", {"command": "view", "path": "/t/x.py", "view_range": [40, -1]}, (40, END, None)),
        (
            "str_replace_editor",
            {"command": "str_replace_editor view /testbed/x.py  --view_range 300 320"},
            (300, 320, None),
        ),
        ("read", {"path": "x.c", "start": 0, "end": -1, "view_range": [282, 449]}, (282, 449, None)),
        ("open", {"command": 'open "src/f.py" 1474'}, (1424, 1523, None)),
        ("exec_command", {"cmd": "sed -n '420,840p' backend/x.go"}, (420, 840, None)),
        ("bash", {"command": "nl -ba requests/models.py | sed -n '360,410p'"}, (360, 410, None)),
        ("Bash", {"command": "head -50 x.txt"}, (1, 50, None)),
        ("Bash", {"command": "tail -n 30 x.log"}, (-30, -1, None)),
        ("Bash", {"command": "cat a.py | head -n 20"}, (1, 20, None)),
        ("exec_command", {"command": ["bash", "-lc", "sed -n '1,200p' Cargo.toml"]}, (1, 200, None)),
        ("Bash", {"command": "wc -l  work/r.md"}, (1, END, "wc -l work/r.md")),
        ("Bash", {"command": "tail -20 x.jsonl | grep -o foo"}, (1, END, "tail -20 x.jsonl | grep -o foo")),
    ],
)
def test_read_span(tool, args, span):
    assert read_span(tool, args) == span
    assert read_span(tool, json.dumps(args)) == span


@pytest.mark.parametrize(
    "a, b, same",
    [
        ((1, 50, None), (40, 60, None), True),
        ((1, 50, None), (100, 150, None), False),
        ((1, END, None), (-20, -1, None), True),
        ((1, 100, None), (-20, -1, None), False),
        ((-5, -1, None), (-20, -1, None), True),
        ((1, END, "wc -l f"), (1, END, "wc -l f"), True),
        ((1, END, "wc -l f"), (1, END, None), False),
    ],
)
def test_overlaps(a, b, same):
    assert overlaps(a, b) is same and overlaps(b, a) is same


def reads_run(spans: list[tuple], write_before: int | None = None):
    """One read of f.py per request with the given spans (an edit of f.py before read ``write_before``)."""
    items = [{"step": 0, "kind": "system", "chars": 400}, {"step": 0, "kind": "user_text", "chars": 40}]
    for k, span in enumerate(spans):
        if k == write_before:
            items += [
                {
                    "step": k + 1,
                    "kind": "tool_call",
                    "tool_name": "Edit",
                    "call_id": f"w{k}",
                    "resource": "f.py",
                    "access": "write",
                    "chars": 200,
                },
                {
                    "step": k + 1,
                    "kind": "tool_result",
                    "call_id": f"w{k}",
                    "resource": "f.py",
                    "access": "write",
                    "chars": 40,
                },
            ]
        items += [
            {
                "step": k + 1,
                "kind": "tool_call",
                "tool_name": "Read",
                "call_id": f"c{k}",
                "resource": "f.py",
                "access": "read",
                "chars": 80,
                "span": span,
            },
            {
                "step": k + 1,
                "kind": "tool_result",
                "call_id": f"c{k}",
                "resource": "f.py",
                "access": "read",
                "chars": 4_000,
            },
        ]
    return build("reads", items, [{"step": k} for k in range(len(spans) + 1)], "real:test")


def test_other_ranges_are_not_repeats():
    run = reads_run([(1, 50, None), (100, 150, None), (40, 60, None), (200, 250, None)])
    ev = read_events(run)
    calls = np.flatnonzero(run.kind == TOOL_CALL)
    assert ev.call.tolist() == [calls[2]] and ev.prev_result.tolist() == [run.pair[calls[0]]]
    assert ev.same_resource == {
        "repeat_same_resource": 3,
        "repeat_same_resource_changed": 0,
        "repeat_same_resource_tokens": 3_000,
    }


def test_the_latest_overlapping_read_and_changes():
    run = reads_run([(1, END, None), (10, 20, None), (15, 30, None), (1, 5, None)], write_before=3)
    ev = read_events(run)
    results = run.pair[np.flatnonzero((run.kind == TOOL_CALL) & (run.access == ACCESS_CODE["read"]))]
    assert ev.prev_result.tolist() == [results[0], results[1], results[0]]
    assert ev.changed.tolist() == [False, False, True]


def test_run_row_has_content_and_resource_counts():
    run = reads_run([(1, 50, None), (100, 150, None), (1, 50, None)])
    _, row = simulate_run(run, make_policy("full"), make_cache("none"), Budget(100_000))
    assert (row["repeat_visible"], row["repeat_evicted"], row["repeat_changed"]) == (1, 0, 0)
    assert row["repeat_same_resource"] == 2 and row["repeat_same_resource_tokens"] == 2_000


def test_store_reads_carry_their_ranges(tmp_path):
    """Claude Code style Read offset/limit stored as args reach the simulator as line ranges."""
    path = tmp_path / "r.jsonl"
    lines = [
        {"type": "run", "format": "replay-canonical/1", "run": "r1", "model": "m"},
        {"type": "item", "kind": "user_text", "role": "user", "text": "go"},
    ]
    for k, (offset, limit) in enumerate([(1, 50), (200, 50), (30, 10), (400, 10)]):
        lines += [
            {"type": "request", "input_tokens": 10 * (k + 1)},
            {
                "type": "item",
                "kind": "tool_call",
                "tool_name": "Read",
                "call_id": f"c{k}",
                "args": {"file_path": "src/a.py", "offset": offset, "limit": limit},
            },
            {"type": "item", "kind": "tool_result", "call_id": f"c{k}", "text": "x\n" * limit},
        ]
    lines.append({"type": "request", "input_tokens": 99})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [path])
    (run_id,) = run_ids(con)
    run = load_run(con, run_id)
    ev = read_events(run)
    assert len(ev.call) == 1 and ev.same_resource["repeat_same_resource"] == 3
    assert run.read_span[ev.call[0]].tolist()[:2] == [30, 39]


def test_corpus_reads_of_other_ranges_are_not_repeats(corpus_db):
    """On the corpus (Codex ``sed -n``, Claude Code offset/limit, editor view ranges) fewer repeats by content
    than by resource, and some runs read other ranges of one file that no longer count."""
    from replay.simulator.load import load_runs

    by_content = by_resource = fewer = 0
    for run in load_runs(corpus_db, prompt=False):
        ev = read_events(run)
        by_content += len(ev.call)
        by_resource += ev.same_resource["repeat_same_resource"]
        fewer += len(ev.call) < ev.same_resource["repeat_same_resource"]
    assert by_content < by_resource and fewer >= 3
