"""Placeholder re-call rate per wording: extraction from hand-made logs, known rates and intervals, the corpus."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from replay.ingest import ingest
from replay.metrics.placeholders import recall_rates, wilson
from replay.store import open_store

OLD = "Old environment output: (N lines omitted)"


def swe_traj(path: Path, actions: list[str], keep_last: int | None) -> Path:
    """A SWE-agent trajectory; with ``keep_last``, each step records the messages SWE-agent would send next,
    all but the last ``keep_last`` observations replaced by "Old environment output: (N lines omitted)"."""
    history = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Fix the bug."}]
    trajectory = []
    for i, action in enumerate(actions):
        obs = "\n".join(f"{action} output line {j}" for j in range(i + 2))
        history += [
            {"role": "assistant", "content": f"step {i}", "thought": f"step {i}", "action": action},
            {"role": "user", "content": obs},
        ]
        step = {"action": action, "observation": obs, "response": f"step {i}", "thought": f"step {i}"}
        if keep_last is not None:
            observations = [j for j, m in enumerate(history) if m["role"] == "user" and j > 1]
            old = set(observations[:-keep_last])
            step["messages"] = [
                {**m, "content": f"Old environment output: ({m['content'].count(chr(10)) + 1} lines omitted)"}
                if j in old
                else m
                for j, m in enumerate(history)
            ]
        trajectory.append(step)
    doc = {
        "trajectory": trajectory,
        "history": history,
        "info": {"model_stats": {"api_calls": len(actions)}},
        "replay_config": {},
    }
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture()
def store(tmp_path: Path):
    con = open_store(tmp_path / "s.duckdb")
    yield con
    con.close()


# Placeholder run: obs j (read of a, b, a, c) is replaced from request j+2 on (age 1); the call each request
# produces is action r. k=1: a->a (re-call), b->c, a->b: 1/3. k=2: a->{a,c}, b->{c,b}, a->{b}: 2/3.
PLACEHOLDER_ACTIONS = ["open /w/a.py", "open /w/b.py", "open /w/a.py", "open /w/c.py", "open /w/b.py"]
# Baseline run (no recorded prompts: shown whole). Ages 1: obs0 (x) -> next call open x; obs1 (ls) -> ls; obs2 -> none.
BASELINE_ACTIONS = ["open /w/x.py", "ls", "open /w/x.py", "ls"]


def test_events_have_the_wording_item_and_request(store, tmp_path: Path) -> None:
    ingest(store, [swe_traj(tmp_path / "p.traj", PLACEHOLDER_ACTIONS, keep_last=1)])
    rows = store.execute("""
        SELECT p.step, p.seq, p.wording, p.origin, p.chars_shown, p.call_id, i.kind, i.text
        FROM placeholders p JOIN items i USING (run_id, seq) ORDER BY p.step, p.seq""").fetchall()
    # requests 0..4; the last step's messages would be request 5, which was never made
    shown = [(step, seq) for step, seq, *_ in rows]
    results = [r[0] for r in store.execute("SELECT seq FROM items WHERE kind = 'tool_result' ORDER BY seq").fetchall()]
    assert shown == [
        (2, results[0]),
        (3, results[0]),
        (3, results[1]),
        (4, results[0]),
        (4, results[1]),
        (4, results[2]),
    ]
    for _, _, wording, origin, chars, call_id, kind, text in rows:
        assert wording == OLD and origin == "prompt" and kind == "tool_result" and call_id
        assert chars == len(f"Old environment output: ({text.count(chr(10)) + 1} lines omitted)")
    before = store.execute("SELECT count(*) FROM placeholders").fetchone()[0]
    ingest(store, [tmp_path / "p.traj"])  # idempotent: the same file adds nothing
    assert store.execute("SELECT count(*) FROM placeholders").fetchone()[0] == before == 6


def test_rate_interval_and_baseline_for_a_known_case(store, tmp_path: Path) -> None:
    ingest(
        store,
        [
            swe_traj(tmp_path / "p.traj", PLACEHOLDER_ACTIONS, keep_last=1),
            swe_traj(tmp_path / "b.traj", BASELINE_ACTIONS, keep_last=None),
        ],
    )
    one = recall_rates(store, k=1).row(0, named=True)
    assert (one["wording"], one["origin"], one["ages"], one["runs"]) == (OLD, "prompt", "1", 1)
    assert (one["events"], one["recalls"]) == (3, 1) and one["rate"] == pytest.approx(1 / 3)
    assert (one["ci_low"], one["ci_high"]) == pytest.approx((0.0615, 0.7923), abs=1e-4)  # Wilson 95%, 1 of 3
    assert (one["base_events"], one["base_recalls"], one["base_rate"]) == (2, 2, 1.0)
    two = recall_rates(store, k=2).row(0, named=True)
    assert (two["events"], two["recalls"]) == (3, 2)
    per_run = recall_rates(store, k=2, by_run=True)
    assert per_run.height == 1 and per_run["run_id"][0].startswith("p-") and per_run["recalls"][0] == 2


def test_clip_markers_at_source_and_unseen_wordings(store, tmp_path: Path) -> None:
    clipped = "line 1\nline 2\n<response clipped><NOTE>Only part of this file was shown (120 lines).</NOTE>"
    log = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "function": {
                        "name": "str_replace_editor",
                        "arguments": json.dumps({"command": "view", "path": "/w/big.py"}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": clipped},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c2",
                    "function": {
                        "name": "str_replace_editor",
                        "arguments": json.dumps({"command": "view", "path": "/w/big.py", "view_range": [1, 40]}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "the lines"},
        {"role": "assistant", "content": "done"},
    ]
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    assert recall_rates(store).height == 0  # nothing seen: no wording has a rate
    ingest(store, [path])
    ((step, wording, origin, chars),) = store.execute(
        "SELECT step, wording, origin, chars_shown FROM placeholders"
    ).fetchall()
    assert origin == "clip" and step == 1 and chars == len(clipped)
    assert wording == "<response clipped><NOTE>Only part of this file was shown (N lines).</NOTE>"
    row = recall_rates(store, k=1).row(0, named=True)
    assert (row["events"], row["recalls"], row["ages"]) == (1, 1, "0")  # the next call views the same file again


def test_wilson() -> None:
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0
    lo, hi = wilson(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-4) and hi == pytest.approx(0.5962, abs=1e-4)
    assert all(math.isnan(x) for x in wilson(0, 0))


def test_corpus_swe_agent_old_environment_output(corpus_db) -> None:
    table = recall_rates(corpus_db, k=3)
    row = table.filter(table["wording"] == OLD).row(0, named=True)
    # SWE-agent's last_n_observations (n=5): every output is replaced at age 5 in the 5 lgetter/marshmallow runs
    assert row["origin"] == "prompt" and row["ages"] == "5" and row["runs"] == 5
    assert row["events"] >= 100
    assert 0 < row["rate"] < 1 and row["ci_low"] < row["rate"] < row["ci_high"]
    n_shown = corpus_db.execute(f"SELECT count(*) FROM placeholders WHERE wording = '{OLD}'").fetchone()[0]
    assert n_shown == 3089  # 3,225 in the files, less the 136 in each run's last step (a prompt never sent)


def test_cli_table_and_csv(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from replay.cli import app

    db = tmp_path / "cli.duckdb"
    con = open_store(db)
    ingest(con, [swe_traj(tmp_path / "p.traj", PLACEHOLDER_ACTIONS, keep_last=1)])
    con.close()
    out = tmp_path / "rates.csv"
    result = CliRunner().invoke(app, ["placeholders", "--k", "2", "--db", str(db), "--csv", str(out)])
    assert result.exit_code == 0, result.output
    assert "placeholder re-calls within the next 2 calls" in result.output
    lines = out.read_text().splitlines()
    assert lines[0].startswith("wording,origin,events,recalls,rate,ci_low,ci_high") and len(lines) == 2
    assert lines[1].startswith(f"{OLD},prompt,3,2,")


def test_cli_store_without_placeholders_says_to_reingest(tmp_path: Path) -> None:
    """A store from before migration 4 has no placeholder events to add: the error names the fix (a new store)."""
    import duckdb

    from replay.cli import app
    from replay.errors import ReplayError

    db = tmp_path / "old.duckdb"
    duckdb.connect(str(db)).close()
    with pytest.raises(ReplayError, match="re-ingest the logs into a new store"):
        app(["placeholders", "--db", str(db)], standalone_mode=False)
