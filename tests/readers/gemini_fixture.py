"""A hand-made Gemini CLI session with chat compression, in the recording's own layout (ChatRecordingService):
``{id, timestamp, type, content}`` message records, ``gemini`` messages with ``toolCalls``, ``tokens`` and
``model``, ``$set`` patches of ``lastUpdated`` (JSONL) and the ``info`` note the CLI records after compressing.

The recorded prompts follow a server that counts four characters a token plus a fixed prefix: before the note the
whole history; from the note on a summary of ``SUMMARY`` tokens and the history from the user message the
compression service keeps (the newest 30% of the characters, split before a user message).
"""

from __future__ import annotations

import json
from pathlib import Path

PREFIX, SUMMARY = 6_000, 900
MODEL = "gemini-2.5-pro"
NOTE = "Context compressed from 2% to 1%."  # of the 1,048,576-token limit


def _body(i: int) -> str:
    """A distinct tool output of about 8,000 characters."""
    return "\n".join(f"line {n} of file {i}: value = {n * (i + 7) % 9973}" for n in range(290))


def _msg(mid: str, kind: str, content, **extra) -> dict:
    return {"id": mid, "timestamp": f"2026-03-01T10:{len(mid):02d}:00.000Z", "type": kind, "content": content, **extra}


def message(mid: str, kind: str, content, **extra) -> dict:
    """A chat-recording message at a fixed time (``content``: text or parts)."""
    return {"id": mid, "timestamp": "2026-04-01T00:00:00.000Z", "type": kind, "content": content, **extra}


def read_call(cid: str, size: int) -> dict:
    """A successful read_file tool call of about ``size`` characters of output, as the CLI records it."""
    body = "".join(f"{n:07d}\n" for n in range(size // 8))
    return {
        "id": cid,
        "name": "read_file",
        "args": {"file_path": f"/{cid}"},
        "status": "success",
        "result": [{"functionResponse": {"id": cid, "name": "read_file", "response": {"output": body}}}],
    }


def session(compress_before: int = 7, n_requests: int = 11) -> tuple[list[dict], list[int], dict]:
    """(records in file order, recorded prompt per request, facts): one read_file call per request, a user
    message before requests 0, 3, 6 and 9, the compression note before request ``compress_before``."""
    records: list[dict] = []
    history: list[tuple[str, int]] = []  # (kind, characters) as the server holds it
    prompts: list[int] = []
    kept_from = None
    for k in range(n_requests):
        if k in (0, 3, 6, 9):
            text = f"Please continue with part {k} of the refactor; keep the public API stable."
            records.append(_msg(f"u{k}", "user", [{"text": text}]))
            history.append(("user", len(text)))
        if k == compress_before:
            records.append(_msg(f"note{k}", "info", NOTE))
            total = sum(c for _, c in history)
            before = 0
            for i, (kind, chars) in enumerate(history):
                if kind == "user" and before >= 0.7 * total:
                    kept_from = i
                    break
                before += chars
            assert kept_from is not None, "the fixture must leave a split point after the 70% mark"
            history = [("summary", 4 * SUMMARY)] + history[kept_from:]
        prompts.append(PREFIX + sum(c for _, c in history) // 4)
        call = {
            "id": f"call{k}",
            "name": "read_file",
            "args": {"file_path": f"/src/mod{k}.py"},
            "result": [{"functionResponse": {"id": f"call{k}", "name": "read_file", "response": {"output": _body(k)}}}],
            "status": "success",
            "timestamp": "2026-03-01T10:00:00.000Z",
        }
        text = f"Reading module {k}."
        tokens = {"input": prompts[-1], "output": 40, "cached": 0, "thoughts": 0, "tool": 0, "total": prompts[-1] + 40}
        records.append(_msg(f"g{k}", "gemini", text, toolCalls=[call], thoughts=[], tokens=tokens, model=MODEL))
        call_chars = len("read_file") + len(json.dumps(call["args"])) + 2
        history += [("model", len(text)), ("model", call_chars), ("function_response", len(_body(k)))]
    return records, prompts, {"kept_from_request": 6, "compressed_at": compress_before}


def write_json(path: Path, **kw) -> tuple[Path, list[int], dict]:
    """The <= 0.3x layout: one object holding ``messages``."""
    records, prompts, facts = session(**kw)
    doc = {
        "sessionId": "9c1f",
        "projectHash": "ab12",
        "startTime": "2026-03-01T10:00:00.000Z",
        "lastUpdated": "2026-03-01T11:00:00.000Z",
        "messages": records,
        "kind": "main",
    }
    path.write_text(json.dumps(doc, indent=2))
    return path, prompts, facts


def write_jsonl(path: Path, **kw) -> tuple[Path, list[int], dict]:
    """The >= 0.40 layout: metadata line, each message followed by a ``lastUpdated`` patch."""
    records, prompts, facts = session(**kw)
    lines = [
        {
            "sessionId": "9c1f",
            "projectHash": "ab12",
            "startTime": "2026-03-01T10:00:00.000Z",
            "lastUpdated": "2026-03-01T10:00:00.000Z",
            "kind": "main",
        }
    ]
    for rec in records:
        lines += [rec, {"$set": {"lastUpdated": rec["timestamp"]}}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path, prompts, facts
