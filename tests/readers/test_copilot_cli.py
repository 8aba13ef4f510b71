"""Copilot CLI reader: events.jsonl (turns as requests, toolRequests + tool.execution_*) and the legacy JSON."""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import BadRecord, Item, Request, Run
from replay.readers import detect
from replay.readers.base import ReadContext
from replay.readers.copilot_cli import READER


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def of(records: list, cls: type) -> list:
    return [r for r in records if isinstance(r, cls)]


def test_events_jsonl(corpus: Path) -> None:
    path = corpus / "copilot-cli" / "copilot-vct-events-1.0.34-20260423.jsonl"
    assert detect(path) is READER
    records = read(path)
    assert not of(records, BadRecord)
    (run,) = of(records, Run)
    metrics = run.metadata["session_usage"]["modelMetrics"]["claude-sonnet-4.6"]
    reqs = of(records, Request)
    assert len(reqs) == metrics["requests"]["count"] == 6  # one request per assistant.turn_start
    assert [q.output_tokens for q in reqs] == [311, 170, 141, 153, 1379, 694]
    assert sum(q.output_tokens for q in reqs) == metrics["usage"]["outputTokens"]  # the per-message counts add up
    assert all(q.prompt_tokens is None and q.model == "claude-sonnet-4.6" for q in reqs)
    items = of(records, Item)
    calls = [i for i in items if i.kind == "tool_call"]
    results = {i.call_id: i for i in items if i.kind == "tool_result"}
    assert len(calls) == 13 and set(results) == {c.call_id for c in calls}
    glob = next(c for c in calls if c.tool_name == "glob")  # started without a toolRequest: added at its start
    assert (glob.line, glob.step, glob.access) == (34, 3, "search")
    assert [i.kind for i in items[:3]] == ["system", "user_text", "reasoning"]
    assert items[1].text.startswith("<current_datetime>")  # transformedContent: the text sent
    assert sum(i.kind == "system" for i in items) == 1  # the repeated identical system message is not re-added


def test_legacy_session_json(tmp_path: Path) -> None:
    doc = {"sessionId": "s1", "startTime": "2025-09-01T00:00:00Z", "timeline": [{"type": "info"}], "chatMessages": [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "list files"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls src"}'}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "a.py"}, "junk",
        {"role": "assistant", "content": "one file"}]}
    path = tmp_path / "session.json"
    path.write_text(json.dumps(doc, indent=2))
    assert detect(path) is READER
    records = read(path)
    assert [b.line for b in of(records, BadRecord)] == [4]
    assert len(of(records, Request)) == 2
    call, result = (i for i in of(records, Item) if i.kind in ("tool_call", "tool_result"))
    assert (call.resource, call.access, result.call_id, result.step) == ("src", "search", "t1", 1)
