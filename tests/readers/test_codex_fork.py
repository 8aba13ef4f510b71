"""A forked Codex rollout (codex-rs ``spawn_forked_thread``): the copy of its parent is history, not requests."""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import Item, Request, Run
from replay.readers.base import ReadContext
from replay.readers.codex_rollout import READER as ROLLOUT
from replay.readers.codex_rollout import uuid7_ms
from replay.simulator.fidelity import FORKED_REASON, unscored_reason

CHILD = "019e0000-0000-7000-8000-000000000001"  # the child thread (UUIDv7, like every codex-rs thread and turn id)
PARENT = "019dfff0-0000-7000-8000-000000000002"
PARENT_TURN = "019dfff0-1000-7000-8000-0000000000aa"  # a turn the parent ran before the fork
CHILD_TURN = "019e0000-0100-7000-8000-0000000000bb"  # the child's first turn, made after the child thread


def usage(prompt: int, cached: int, out: int = 10) -> dict:
    return {"input_tokens": prompt, "cached_input_tokens": cached, "output_tokens": out, "total_tokens": prompt + out}


def count(total: int, prompt: int, cached: int = 0) -> tuple[str, dict]:
    info = {
        "total_token_usage": usage(total, 0),
        "last_token_usage": usage(prompt, cached),
        "model_context_window": 258400,
    }
    return "event_msg", {"type": "token_count", "info": info}


def message(role: str, text: str, **extra: object) -> tuple[str, dict]:
    kind = "output_text" if role == "assistant" else "input_text"
    return "response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}], **extra}


def meta(thread: str, **extra: object) -> tuple[str, dict]:
    return "session_meta", {"id": thread, "cwd": "/w", "originator": "Codex Desktop", "cli_version": "0.119.0", **extra}


def write(tmp_path: Path, lines: list[tuple[str, dict]]) -> Path:
    path = tmp_path / f"rollout-2026-04-15T11-58-23-{CHILD}.jsonl"
    rows = (
        json.dumps({"timestamp": f"2026-04-15T17:58:{k:02d}.000Z", "type": t, "payload": p})
        for k, (t, p) in enumerate(lines)
    )
    path.write_text("\n".join(rows) + "\n")
    return path


# what codex-rs 0.119 writes for a sub-agent spawned with its parent's context: the child's session_meta, the parent's
# rollout items that keep_forked_rollout_item keeps (its session_meta, messages but tool calls and reasoning, its
# compaction, every event: the parent's token_counts too), then the child's own turn
FORKED = [
    meta(CHILD, forked_from_id=PARENT, source={"subagent": {"thread_spawn": {"parent_thread_id": PARENT, "depth": 1}}}),
    meta(PARENT, source="vscode"),
    ("event_msg", {"type": "task_started", "turn_id": PARENT_TURN, "model_context_window": 258400}),
    message("developer", "parent permissions and tools " * 40),
    ("turn_context", {"turn_id": PARENT_TURN, "model": "gpt-5.4"}),
    message("user", "boot the project"),
    count(30_000, 30_000),  # the parent's calls: billed in the parent's rollout
    ("event_msg", {"type": "agent_message", "message": "reading the docs"}),
    count(70_000, 40_000, 30_000),
    ("compacted", {"message": "parent summary", "replacement_history": [message("user", "parent summary")[1]]}),
    count(70_000, 40_000, 30_000),  # the same total again after the compaction: no call
    message("assistant", "spawning a helper", phase="final_answer"),
    ("event_msg", {"type": "task_started", "turn_id": CHILD_TURN, "model_context_window": 258400}),
    message("developer", "child developer instructions"),
    ("turn_context", {"turn_id": CHILD_TURN, "model": "gpt-5.4-mini"}),
    message("user", "inspect the bootstrap scripts"),
    count(70_000, 70_000),  # the counter the child took over from the parent, unchanged: no call
    ("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
    count(75_000, 5_000, 1_000),  # the child's first call
    ("response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}),
    message("assistant", "done"),
    count(81_000, 6_000, 5_000),
]


def read(path: Path) -> list:
    return list(ROLLOUT.read(ReadContext(path=path, file_hash="0" * 32)))


def test_uuid7_time() -> None:
    assert uuid7_ms(CHILD) == 0x019E00000000
    assert uuid7_ms(PARENT_TURN) < uuid7_ms(CHILD) <= uuid7_ms(CHILD_TURN)  # type: ignore[operator]
    assert uuid7_ms("4e8f2a66-1c2b-4d6a-9f0e-3b1a2c4d5e6f") is None  # a v4 id carries no time
    assert uuid7_ms("0") is None and uuid7_ms(None) is None


def test_parent_calls_in_the_copy_are_not_requests(tmp_path: Path) -> None:
    records = read(write(tmp_path, FORKED))
    run = next(r for r in records if isinstance(r, Run))
    requests = [r for r in records if isinstance(r, Request)]
    assert [r.prompt_tokens for r in requests] == [5_000, 6_000]  # main read the parent's 30,000 and 40,000 too
    assert run.metadata["forked_requests"] == 2 and run.metadata["fork_copy_line"] == 13
    assert run.model == "gpt-5.4-mini" and {r.model for r in requests} == {"gpt-5.4-mini"}
    (event,) = run.metadata["context_events"]
    assert event["cause"] == "forked" and "usage" not in event and event["step"] == 0
    texts = [i.text for i in records if isinstance(i, Item)]
    assert "parent summary" in texts and "child developer instructions" in texts  # the copy stays the history
    assert unscored_reason({"recorded_request": 0, "recorded_after": 5_000}, None, None, cause="forked") == (
        FORKED_REASON
    )


def test_a_fork_without_uuid7_ids_reads_every_call(tmp_path: Path) -> None:
    """Ids that carry no time give no boundary: the rollout is read as before, every token_count a call."""
    plain = [(t, {**p, "id": "child"}) if t == "session_meta" and p["id"] == CHILD else (t, p) for t, p in FORKED]
    records = read(write(tmp_path, plain))
    run = next(r for r in records if isinstance(r, Run))
    # the parent's first call and the child's two (the parent's second, right before `compacted`, is read as its
    # summariser's call)
    assert [r.prompt_tokens for r in records if isinstance(r, Request)] == [30_000, 5_000, 6_000]
    assert "forked_requests" not in run.metadata


def test_a_spawned_agent_without_a_fork_keeps_its_calls(tmp_path: Path) -> None:
    """A sub-agent spawned without its parent's context (no ``forked_from_id``) has no copy: all its calls count."""
    fresh = [meta(CHILD, source={"subagent": {"thread_spawn": {"parent_thread_id": PARENT}}}), *FORKED[12:]]
    records = read(write(tmp_path, fresh))
    assert [r.prompt_tokens for r in records if isinstance(r, Request)] == [70_000, 5_000, 6_000]
