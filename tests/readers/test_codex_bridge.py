"""A compaction of codex-rs 0.36-0.50, whose ``compacted`` line holds the summary alone.

Shapes from the npm binaries (strings; content here synthetic): 0.36.0-0.50.0 declare ``CompactedItem`` with one
field (``message``) and hold the history bridge template; 0.63.0's has two fields (``replacement_history``). The
rebuilt history (core/src/codex/compact.rs ``build_compacted_history``, as indexed): the initial context, then one
user message, the bridge over the earlier user messages and the summary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replay.model import Item, Request, Run
from replay.readers.base import ReadContext
from replay.readers.codex_rollout import READER as ROLLOUT

# the template as the 0.36.0 binary holds it (core/templates/compact/history_bridge.md)
HEAD = "You were originally given instructions from a user over one or more turns. Here were the user messages:\n\n"
MIDDLE = (
    "\n\nAnother language model started to solve this problem and produced a summary of its thinking process. You"
    " also have access to the state of the tools that were used by that language model. Use this to build on the"
    " work that has already been done and avoid duplicating work. Here is the summary produced by the other"
    " language model, use the information in this summary to assist with your own analysis:\n\n"
)
UI = "<user_instructions>\n\nPrefer small diffs.\n\n</user_instructions>"
ENV = "<environment_context>\n  <cwd>/tmp/p</cwd>\n</environment_context>"


def msg(role: str, text: str) -> dict:
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def count(total: int, prompt: int) -> tuple[str, dict]:
    last = {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": 10, "total_tokens": prompt + 10}
    info = {"total_token_usage": {**last, "total_tokens": total}, "last_token_usage": last}
    return "event_msg", {"type": "token_count", "info": {**info, "model_context_window": 272_000}}


def rollout(tmp_path: Path, version: str) -> Path:
    meta = {"id": "0199", "timestamp": "2025-10-01T00:00:00Z", "cwd": "/tmp/p", "originator": "codex_cli_rs"}
    lines: list[tuple[str, dict]] = [
        ("session_meta", {**meta, "cli_version": version, "instructions": "Prefer small diffs."}),
        ("response_item", msg("user", UI)),
        ("response_item", msg("user", ENV)),
        ("turn_context", {"cwd": "/tmp/p", "model": "gpt-5-codex"}),
        ("response_item", msg("user", "fix the bug")),
        count(1_010, 1_000),
        ("response_item", msg("assistant", "fixed")),
        ("response_item", msg("user", "now add a test")),
        count(2_030, 1_010),
        ("response_item", msg("assistant", "added")),
        count(3_050, 1_010),  # the summariser's call
        ("compacted", {"message": "The bug is fixed and tested."}),
        ("response_item", msg("user", "run it")),
        count(3_560, 500),
        ("response_item", msg("assistant", "ran")),
    ]
    path = tmp_path / f"rollout-2025-10-01T00-00-00-0199-{version}.jsonl"
    rows = [{"timestamp": f"2025-10-01T00:00:{k:02d}.000Z", "type": t, "payload": p} for k, (t, p) in enumerate(lines)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def read(path: Path) -> tuple[Run, dict[int, Item]]:
    records: list[Any] = list(ROLLOUT.read(ReadContext(path=path, file_hash="0" * 32)))
    run = next(r for r in records if isinstance(r, Run))
    return run, {r.seq: r for r in records if isinstance(r, Item)}


def test_compaction_of_0_45_sends_the_initial_context_and_the_bridge(tmp_path: Path) -> None:
    """After the summary, codex-rs 0.45 sent the user instructions, the environment context and the bridge (the
    two user messages, then the summary); read as the summary alone, that prompt lacked all but the summary."""
    run, items = read(rollout(tmp_path, "0.45.0"))
    (event,) = run.metadata["context_events"]
    summary = items[event["summary_seq"]]
    assert summary.kind == "summary"
    assert summary.text == HEAD + "fix the bug\n\nnow add a test" + MIDDLE + "The bug is fixed and tested."
    (resent,) = event["resent"]
    assert [items[q].text for q in range(*resent)] == [UI, ENV]
    assert event["drop"] == [[0, event["summary_seq"]]]
    assert "warnings" not in run.metadata


def test_other_versions_without_replacement_history_are_warned_about(tmp_path: Path) -> None:
    """0.57.0 also logs the summary alone but rebuilt another way: read as the summary, with a warning."""
    run, items = read(rollout(tmp_path, "0.57.0"))
    (event,) = run.metadata["context_events"]
    assert items[event["summary_seq"]].text == "The bug is fixed and tested."
    assert "known for 0.36-0.50 only" in run.metadata["warnings"][0]["message"]


def test_a_rollout_whose_token_counts_carry_no_usage_still_has_its_requests(tmp_path: Path) -> None:
    """A provider that reports no usage: codex-rs's TokenCountEvent keeps ``info`` null on every token_count
    (protocol ``TokenCountEvent { info: Option<TokenUsageInfo> }``). It read as a run of no request at all; its
    requests are where the model's output starts, usage unknown, and the run says so."""
    meta = {"id": "0199", "timestamp": "2025-09-20T00:00:00Z", "cwd": "/p", "cli_version": "0.39.0"}
    call = {"type": "function_call", "name": "shell", "arguments": '{"command":["ls"]}', "call_id": "c1"}
    null = ("event_msg", {"type": "token_count", "info": None})
    lines: list[tuple[str, dict]] = [
        ("session_meta", meta),
        ("response_item", msg("user", ENV)),
        ("turn_context", {"cwd": "/p", "model": "gpt-oss:20b"}),
        ("response_item", msg("user", "list files")),
        null,  # a rate-limit update before the response: not a call
        ("response_item", call),
        null,
        ("response_item", {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}),
        ("response_item", msg("assistant", "one file")),
        null,
    ]
    path = tmp_path / "rollout-2025-09-20T00-00-00-0199.jsonl"
    rows = [{"timestamp": f"2025-09-20T00:00:{k:02d}.000Z", "type": t, "payload": p} for k, (t, p) in enumerate(lines)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    records: list[Any] = list(ROLLOUT.read(ReadContext(path=path, file_hash="0" * 32)))
    requests = [r for r in records if isinstance(r, Request)]
    assert [(r.line, r.model, r.prompt_tokens) for r in requests] == [
        (6, "gpt-oss:20b", None),
        (9, "gpt-oss:20b", None),
    ]
    assert [(i.kind, i.step) for i in records if isinstance(i, Item)] == [
        ("user_text", 0),
        ("user_text", 0),
        ("tool_call", 1),
        ("tool_result", 1),
        ("assistant_text", 2),
    ]
    run = next(r for r in records if isinstance(r, Run))
    assert run.metadata["usage_logged"] is False
    assert "carries usage" in run.metadata["warnings"][0]["message"]
