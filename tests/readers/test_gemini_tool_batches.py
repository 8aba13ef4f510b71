"""Gemini CLI before 0.32: a second tool-only response without thoughts joins the first one's gemini message.

Records are laid out as ChatRecordingService (0.9 to 0.31) writes them: a response with tool calls alone gets
its message from recordToolCalls when its calls finish (``id, timestamp, type, content, toolCalls, thoughts,
model, tokens`` in that order, the message stamped after its calls), and the calls of each later batch are
appended to it with their own timestamps, stamped in one loop per batch.
"""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import Request, Run
from replay.readers.base import ReadContext
from replay.readers.gemini_cli import READER
from replay.readers.gemini_tool_passes import recording_passes

TOKENS = {"input": 9000, "output": 40, "cached": 0, "thoughts": 0, "tool": 0, "total": 9040}


def call(cid: str, ts: str) -> dict:
    return {
        "id": cid,
        "name": "read_file",
        "args": {"absolute_path": f"/w/{cid}.py"},
        "result": [{"functionResponse": {"id": cid, "name": "read_file", "response": {"output": f"body {cid}"}}}],
        "status": "success",
        "timestamp": ts,
        "displayName": "ReadFile",
        "description": "Reads a file",
        "renderOutputAsMarkdown": True,
    }


def session(call_stamps: list[str]) -> dict:
    """A prompt, a gemini message holding one read_file call per stamp, a closing text reply."""
    calls = [call(f"read_file-{i}", ts) for i, ts in enumerate(call_stamps)]
    return {
        "sessionId": "5b1c0d2e-0000-4000-8000-000000000001",
        "projectHash": "ab" * 32,
        "startTime": "2025-11-02T09:00:00.000Z",
        "lastUpdated": "2025-11-02T09:00:30.000Z",
        "messages": [
            {"id": "u-1", "timestamp": "2025-11-02T09:00:00.000Z", "type": "user", "content": "read a and b"},
            {
                "id": "g-1",
                "timestamp": "2025-11-02T09:00:03.012Z",
                "type": "gemini",
                "content": "",
                "toolCalls": calls,
                "thoughts": [],
                "model": "gemini-2.5-pro",
                "tokens": TOKENS,
            },
            {
                "id": "g-2",
                "timestamp": "2025-11-02T09:00:30.000Z",
                "type": "gemini",
                "content": "Both files read.",
                "thoughts": [],
                "tokens": {**TOKENS, "input": 9400},
                "model": "gemini-2.5-pro",
            },
        ],
    }


def read(tmp_path: Path, doc: dict, name: str = "session-2025-11-02T09-00-5b1c0d2e.json") -> list:
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2))
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def run_of(records: list) -> Run:
    return next(r for r in records if isinstance(r, Run))


def test_two_batches_in_one_message_are_flagged(tmp_path: Path) -> None:
    # read_file-0 finished at 03.011 (its message stamped just after); read_file-1 is a second response's call,
    # recorded 6 s later into the same message
    records = read(tmp_path, session(["2025-11-02T09:00:03.011Z", "2025-11-02T09:00:09.480Z"]))
    run = run_of(records)
    assert run.metadata["tool_call_batches"] == [[1, 2]]
    (warning,) = run.metadata["warnings"]
    assert warning["line"] == 1 and "messages[1]: 2 batches" in warning["message"]
    assert "more than one request" in warning["message"]
    assert "usage is lost" in warning["message"]
    assert len([r for r in records if isinstance(r, Request)]) == 2  # not split: which calls were a request is unknown
    assert "unreconstructable" not in run.metadata  # ACP sessions stamp one response's calls apart too


def test_one_batch_of_parallel_calls_is_not_flagged(tmp_path: Path) -> None:
    # one response's three calls, stamped in one loop that straddles a millisecond tick
    stamps = ["2025-11-02T09:00:03.010Z", "2025-11-02T09:00:03.010Z", "2025-11-02T09:00:03.011Z"]
    run = run_of(read(tmp_path, session(stamps)))
    assert "tool_call_batches" not in run.metadata and "warnings" not in run.metadata


def test_jsonl_recordings_are_not_flagged(tmp_path: Path) -> None:
    # 0.39 on (JSONL) every response with a tool call has its own message: calls stamped apart are one request
    doc = session(["2025-11-02T09:00:03.011Z", "2025-11-02T09:00:09.480Z"])
    meta = {k: v for k, v in doc.items() if k != "messages"}
    path = tmp_path / "session-2025-11-02T09-00-5b1c0d2e.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [meta, *doc["messages"]]) + "\n")
    run = run_of(list(READER.read(ReadContext(path=path, file_hash="0" * 32))))
    assert "tool_call_batches" not in run.metadata


def test_recording_passes() -> None:
    stamp = "2025-11-02T09:00:0{}Z".format
    assert recording_passes([]) == 0 and recording_passes([{"timestamp": None}]) == 0
    assert recording_passes([{"timestamp": stamp("3.010")}, {"timestamp": stamp("3.011")}]) == 1
    assert recording_passes([{"timestamp": stamp("3.010")}, {"timestamp": stamp("3.012")}]) == 2
    three = [stamp("3.010"), stamp("5.000"), stamp("5.000"), stamp("8.250")]
    assert recording_passes([{"timestamp": t} for t in three]) == 3
