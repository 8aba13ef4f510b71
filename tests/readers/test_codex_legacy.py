"""Codex CLI rollouts from before the line envelope (codex-rs ``core/src/rollout.rs``, npm @openai/codex 0.8.0 to
0.29.0): a bare SessionMeta line, then bare ResponseItems and ``record_type: "state"`` lines, no usage.

The fixtures are synthetic, in the shape that writer serializes: ``SessionMeta`` {id, timestamp, instructions} (plus
``git`` from 0.2x, ``SessionMetaWithGit``), ``ResponseItem`` tagged by ``type`` (a message's ``id`` null, a
function call's ``arguments`` a JSON string, its output a plain string), the ``StateLine`` {record_type: "state"}.
The 0.20.0 binary's strings hold that writer (``core/src/rollout.rs``, ``record_type``) and ``<user_instructions>``;
0.34.0's hold ``session_meta``/``response_item`` instead.
"""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import Item, Request, Run
from replay.readers import detect
from replay.readers.base import ReadContext

META = {"id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e", "timestamp": "2025-08-10T10:00:00.000Z"}
STATE = {"record_type": "state"}


def user(text: str) -> dict:
    return {"type": "message", "id": None, "role": "user", "content": [{"type": "input_text", "text": text}]}


def assistant(text: str) -> dict:
    return {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def call(call_id: str) -> dict:
    args = json.dumps({"command": ["ls"]})
    return {"type": "function_call", "id": f"fc_{call_id}", "name": "shell", "arguments": args, "call_id": call_id}


def output(call_id: str, text: str) -> dict:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def write(tmp_path: Path, lines: list[dict]) -> Path:
    path = tmp_path / "rollout-2025-08-10T10-00-00-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def read(path: Path) -> list:
    reader = detect(path)
    assert reader is not None, "a legacy codex-rs rollout is not an unknown format"
    assert reader.format == "codex-rollout-legacy"
    return list(reader.read(ReadContext(path=path, file_hash="0" * 32)))


def test_legacy_rollout_ingests_items_and_requests_without_usage(tmp_path: Path) -> None:
    """0.20-0.29 shape: a request where the model's output starts after input; two responses here (a reasoning
    item and a shell call, then the answer after the call's output); no usage, and the run says so."""
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "run ls"}]}
    path = write(
        tmp_path,
        [
            {**META, "instructions": "Prefer small diffs.", "git": {"commit_hash": "abc", "branch": "main"}},
            user("<environment_context>\n  <cwd>/tmp/x</cwd>\n</environment_context>"),
            user("list the files"),
            STATE,
            {**reasoning, "encrypted_content": "gAAAA"},
            call("call_1"),
            output("call_1", "a.txt\n"),
            STATE,
            assistant("There is one file, a.txt."),
            STATE,
        ],
    )
    records = read(path)
    run = next(r for r in records if isinstance(r, Run))
    items = [r for r in records if isinstance(r, Item)]
    requests = [r for r in records if isinstance(r, Request)]
    assert [(i.kind, i.step) for i in items] == [
        ("system", 0),  # the session's instructions: no <user_instructions> message carries them
        ("user_text", 0),
        ("user_text", 0),
        ("reasoning", 1),
        ("tool_call", 1),
        ("tool_result", 1),
        ("assistant_text", 2),
    ]
    assert [r.line for r in requests] == [5, 9]
    assert all(r.prompt_tokens is None and r.input_tokens is None and r.output_tokens is None for r in requests)
    assert run.metadata["usage_logged"] is False
    assert run.metadata["session_id"] == META["id"] and run.started_at == META["timestamp"]
    assert "no token usage" in run.metadata["warnings"][0]["message"]


def test_instructions_sent_as_a_message_are_counted_once(tmp_path: Path) -> None:
    """From 0.2x codex-rs sends the user's instructions as a ``<user_instructions>`` message and logs it; the
    meta line's copy is then not a second item."""
    text = "<user_instructions>\n\nPrefer small diffs.\n\n</user_instructions>"
    path = write(
        tmp_path, [{**META, "instructions": "Prefer small diffs."}, user(text), user("hi"), assistant("hello")]
    )
    items = [r for r in read(path) if isinstance(r, Item)]
    assert [i.text for i in items].count(text) == 1
    assert not any(i.kind == "system" for i in items)


def test_a_repeated_message_is_kept(tmp_path: Path) -> None:
    """Legacy lines carry no timestamp: the same prompt typed twice logs two identical lines, both sent."""
    path = write(tmp_path, [META, user("continue"), assistant("ok"), user("continue"), assistant("ok")])
    records = read(path)
    assert [i.text for i in records if isinstance(i, Item)] == ["continue", "ok", "continue", "ok"]
    assert sum(isinstance(r, Request) for r in records) == 2


def test_enveloped_rollout_is_not_legacy(tmp_path: Path) -> None:
    """A 0.34+ rollout stays with the enveloped reader."""
    path = tmp_path / "rollout-new.jsonl"
    meta = {"timestamp": "2025-09-01T00:00:00Z", "type": "session_meta", "payload": {**META, "cwd": "/tmp"}}
    path.write_text(
        json.dumps(meta) + "\n" + json.dumps({"timestamp": "t", "type": "response_item", "payload": user("x")})
    )
    reader = detect(path)
    assert reader is not None and reader.format == "codex-rollout"


def test_typescript_cli_rollout_is_read_too(tmp_path: Path) -> None:
    """@openai/codex 0.1.2504172351 (TypeScript, src/utils/storage/save-rollout.ts): one JSON document
    ``{session: {timestamp, id, instructions}, items: ResponseItem[]}``; the UI's own ``system`` notes are not
    model input. It was an unknown format."""
    doc = {
        "session": {"timestamp": "2025-04-20T10:00:00.000Z", "id": "8d2d8a9e", "instructions": "Prefer small diffs."},
        "items": [
            {**user("list the files"), "id": "msg_u1"},
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Switched model"}]},
            call("call_1"),
            output("call_1", "a.txt\n"),
            assistant("There is one file, a.txt."),
        ],
    }
    path = tmp_path / "rollout-2025-04-20-8d2d8a9e.json"
    path.write_text(json.dumps(doc, indent=2))
    records = read(path)
    items = [r for r in records if isinstance(r, Item)]
    assert [(i.kind, i.step) for i in items] == [
        ("system", 0),
        ("user_text", 0),
        ("tool_call", 1),
        ("tool_result", 1),
        ("assistant_text", 2),
    ]
    assert [r.line for r in records if isinstance(r, Request)] == [3, 5]
    run = next(r for r in records if isinstance(r, Run))
    assert "prefixes of each other" in run.metadata["warnings"][0]["message"]
