"""Gemini CLI ``/chat save`` checkpoints: before chat recording (0.4.0) the only file of a session that holds the
model's side of it.

Shapes from google-gemini/gemini-cli packages/core/src/core/logger.ts ``saveCheckpoint``: v0.3.4 writes the chat's
``Content[]`` (``JSON.stringify(conversation, null, 2)``), #13023 (November 2025) ``{history, authType}``; the history
opens with the environment context and the CLI's own reply (client.ts ``startChat``: "Got it. Thanks for the
context!"). Content here is synthetic.
"""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import Item, Request, Run
from replay.readers import detect
from replay.readers.base import ReadContext

HISTORY = [
    {"role": "user", "parts": [{"text": "This is the Gemini CLI. We are setting up the context for our chat."}]},
    {"role": "model", "parts": [{"text": "Got it. Thanks for the context!"}]},
    {"role": "user", "parts": [{"text": "list the files"}]},
    {"role": "model", "parts": [{"functionCall": {"name": "list_directory", "args": {"path": "/tmp/x"}}}]},
    {"role": "user", "parts": [{"functionResponse": {"name": "list_directory", "response": {"output": "a.txt"}}}]},
    {"role": "model", "parts": [{"text": "There is one file, a.txt."}]},
]


def read(path: Path) -> list:
    reader = detect(path)
    assert reader is not None and reader.format == "gemini-cli-checkpoint"
    return list(reader.read(ReadContext(path=path, file_hash="0" * 32)))


def test_checkpoint_is_a_run_without_usage(tmp_path: Path) -> None:
    """Both layouts: one request per model turn the model wrote (not the CLI's acknowledgement), the call's result
    from its function response, and the run says it has no usage. Read as OpenAI messages it was a run of no items
    with the model turns quarantined ("message without a known role")."""
    for name, doc in (("checkpoint-a.json", HISTORY), ("checkpoint-b.json", {"history": HISTORY, "authType": "x"})):
        path = tmp_path / name
        path.write_text(json.dumps(doc, indent=2))
        records = read(path)
        run = next(r for r in records if isinstance(r, Run))
        items = [r for r in records if isinstance(r, Item)]
        requests = [r for r in records if isinstance(r, Request)]
        assert [r.line for r in requests] == [4, 6]
        assert all(r.prompt_tokens is None for r in requests)
        assert [(i.kind, i.step) for i in items] == [
            ("user_text", 0),
            ("assistant_text", 0),
            ("user_text", 0),
            ("tool_call", 1),
            ("tool_result", 1),
            ("assistant_text", 2),
        ]
        assert next(i for i in items if i.kind == "tool_result").text == "a.txt"
        assert run.harness == "gemini-cli" and run.metadata["usage_logged"] is False
        assert "without usage" in run.metadata["warnings"][0]["message"]


def test_openai_messages_still_go_to_their_reader(tmp_path: Path) -> None:
    path = tmp_path / "messages.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    reader = detect(path)
    assert reader is not None and reader.format == "openai-messages"
