"""codex-rs compacts before a turn whose model has another ``comp_hash`` than the previous turn's, whatever the size
(``maybe_run_previous_model_inline_compact``, ``CompactionReason::CompHashChanged``): the codex-rs preset fires at that
turn's first request, and what the turn records (the ``<model_switch>`` instructions, its input) follows the summary.

Hand-written rollout in the shape of Codex Desktop 0.144: a turn on gpt-5.5 (comp_hash "2911") reaching 41k, the
summariser's call and a ``compacted`` line, then a turn on gpt-5.6-luna ("3000") that opens with a 6,000-token
``<model_switch>`` developer message; then gpt-5.6-terra with the same hash (no compaction) and a turn that logs no
hash (none either: codex-rs needs both hashes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.ingest import ingest
from replay.policies.auto_compact import COMPACT_NOW
from replay.simulator.fidelity import fidelity_frame
from replay.simulator.load import load_runs
from replay.simulator.request_windows import comp_hash_turns
from replay.store import open_store

TS = "2026-07-13T12:00:00.000Z"
WINDOW = 258_400


def line(kind: str, payload: dict) -> dict:
    return {"timestamp": TS, "type": kind, "payload": payload}


def message(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


class Log:
    """Lines of a rollout with running total usage."""

    def __init__(self) -> None:
        self.lines: list[dict] = []
        self.total = 0

    def turn(self, turn_id: str, model: str, comp_hash: str | None) -> None:
        ctx = {"turn_id": turn_id, "cwd": "/tmp", "model": model, "approval_policy": "never", "summary": "auto"}
        if comp_hash is not None:
            ctx["comp_hash"] = comp_hash
        self.lines.append(line("turn_context", ctx))
        self.lines.append(
            line("event_msg", {"type": "task_started", "turn_id": turn_id, "model_context_window": WINDOW})
        )

    def item(self, role: str, text: str) -> None:
        self.lines.append(line("response_item", message(role, text)))

    def count(self, prompt: int) -> None:
        self.total += prompt + 20
        usage = {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": 20, "reasoning_output_tokens": 0}
        info = {
            "total_token_usage": {**usage, "total_tokens": self.total},
            "last_token_usage": {**usage, "total_tokens": prompt + 20},
            "model_context_window": WINDOW,
        }
        self.lines.append(line("event_msg", {"type": "token_count", "info": info}))


def rollout() -> list[dict]:
    log = Log()
    meta = {"id": "019f5b77-6b45-77a2-bc54-000000000001", "cwd": "/tmp", "originator": "Codex Desktop"}
    log.lines.append(line("session_meta", {**meta, "cli_version": "0.144.0-alpha.4", "source": "vscode"}))
    log.turn("019f5b77-0000-7000-8000-000000000001", "gpt-5.5", "2911")
    log.item("user", "edit the config")
    log.item("assistant", "done " + "x " * 20_000)
    log.count(1_000)
    log.item("user", "and the catalog")
    log.item("assistant", "done too " + "y " * 20_000)
    log.count(21_000)
    # the summariser's call on the previous model, then the replacement history: the user's messages and the summary
    summary = "SUMMARY: config and catalog edited " + "z " * 400
    log.item("assistant", summary)
    log.count(41_200)
    replacement = [message("user", "edit the config"), message("user", "and the catalog"), message("user", summary)]
    log.lines.append(line("compacted", {"message": summary, "replacement_history": replacement}))
    log.turn("019f5b7b-0000-7000-8000-000000000002", "gpt-5.6-luna", "3000")
    log.item("developer", "<model_switch>\nThe user was previously using a different model. " + "w " * 6_000)
    log.item("user", "check the context limit")
    log.item("assistant", "checked")
    log.count(6_900)
    log.turn("019f5b7c-0000-7000-8000-000000000003", "gpt-5.6-terra", "3000")
    log.item("user", "now on terra")
    log.item("assistant", "ok")
    log.count(7_000)
    log.turn("019f5b7d-0000-7000-8000-000000000004", "gpt-5.6-terra", None)
    log.item("user", "and once more")
    log.item("assistant", "ok")
    log.count(7_100)
    return log.lines


@pytest.fixture
def con(tmp_path: Path):
    path = tmp_path / "rollout-2026-07-13T20-33-00-019f5b77-6b45-77a2-bc54-000000000001.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in rollout()))
    store = open_store(tmp_path / "s.duckdb")
    ingest(store, [path])
    return store


def test_reader_keeps_each_turns_comp_hash(con) -> None:
    (metadata,) = con.execute("SELECT metadata FROM runs").fetchone()
    assert [h for _, h in json.loads(metadata)["comp_hashes"]] == ["2911", "3000", None]


def test_the_turn_after_a_hash_change_compacts_whatever_the_size(con) -> None:
    (run,) = load_runs(con, None, own_windows=True)
    assert run.n_requests == 5  # the summariser's call is the compaction's, not a request
    # only luna's first request: terra keeps luna's hash, and a turn logging none compares with nothing
    assert [k for k in range(run.n_requests) if run.req_trigger[k] == COMPACT_NOW] == [2]


def test_hash_changes_need_both_hashes() -> None:
    rows = {"comp_hashes": [[2, "a"], [9, None], [15, "b"], [30, "c"]]}
    assert comp_hash_turns(rows, [5, 10, 20, 40]) == [3]
    assert comp_hash_turns({}, [5]) == []
    # a fork's copy of its parent: the parent's change (line 15) is followed by its later turns before the child's
    # first request, which compares with the parent's last turn
    assert comp_hash_turns({"comp_hashes": [[2, "a"], [15, "b"], [18, None]]}, [20, 30]) == []


def test_fidelity_scores_the_comp_hash_compaction(con) -> None:
    (event,) = [r for r in fidelity_frame(con, None).to_dicts() if r["kind"] != "run"]
    assert event["preset"] == "codex-rs@272000"
    assert event["reason"] is None
    assert (event["recorded_request"], event["simulated_request"]) == (2, 2)
    # the model_switch instructions and the new input follow the summary, as codex-rs records them after it
    assert event["within"] is True


def early_rollout() -> list[dict]:
    """Codex CLI 0.118 on gpt-5.4: one model, one hash, a compaction at 120k (0.46 of the 258,400 logged window):
    only a limit set in config.toml, which no line records, compacts there."""
    log = Log()
    meta = {"id": "019d6398-6135-76e1-984e-000000000002", "cwd": "/tmp", "originator": "codex_cli_rs"}
    log.lines.append(line("session_meta", {**meta, "cli_version": "0.118.0", "source": "cli"}))
    log.turn("019d6398-0000-7000-8000-000000000001", "gpt-5.4", None)
    for n, prompt in enumerate((40_000, 80_000, 120_000)):
        log.item("user", f"step {n}")
        log.item("assistant", "x " * 40_000)
        log.count(prompt)
    summary = "SUMMARY: three steps done"
    log.item("assistant", summary)
    log.count(120_100)
    log.lines.append(line("compacted", {"message": summary, "replacement_history": [message("user", summary)]}))
    log.item("user", "step 3")
    log.item("assistant", "done")
    log.count(1_500)
    return log.lines


def test_fidelity_says_a_compaction_came_below_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2026-04-06T23-20-23-019d6398-6135-76e1-984e-000000000002.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in early_rollout()))
    store = open_store(tmp_path / "s.duckdb")
    ingest(store, [path])
    (event,) = [r for r in fidelity_frame(store, None).to_dicts() if r["kind"] != "run"]
    # still a miss (no preset can fire there), but not a silent one
    assert event["within"] is False
    assert "below codex-rs's limit 244,800" in event["reason"]
    assert "config.toml" in event["reason"]
