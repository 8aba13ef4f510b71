"""A Claude Code conversation that goes on in another transcript of its project folder
(replay.readers.claude_code_continued).

The layout is CaptainRandom00/Claude-Code's d32a8ce8 and f156e813 (Claude Code 2.0.8), with made-up content: session A
is resumed inside a process whose file is B's, so B's lines carry A's session id and B's first message answers A's
last one; B's history is compacted there; a later process resumes A in A's own file, which gets the boundary, the
summary and the response after it again (same uuids, the response stamped with the resume's instant), then goes on.
"""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import Item, Request, Run
from replay.readers.base import ReadContext
from replay.readers.claude_code import READER
from replay.simulator.fidelity import RESUMED_REASON, unscored_reason

A = "d0000000-0000-4000-8000-00000000000a"
B = "f0000000-0000-4000-8000-00000000000b"


def _line(uuid: str, parent: str | None, kind: str, ts: str, message: dict | None = None, **rest) -> dict:
    out = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/Users/u/app"}
    out.update({"sessionId": A, "version": "2.0.8", "type": kind, "uuid": uuid, "timestamp": ts, **rest})
    if message is not None:
        out["message"] = message
    return out


def _user(uuid: str, parent: str | None, text: str, ts: str, **rest) -> dict:
    return _line(uuid, parent, "user", ts, {"role": "user", "content": text}, **rest)


def _answer(uuid: str, parent: str, text: str, ts: str, request: str, prompt: int) -> dict:
    usage = {"input_tokens": 3, "cache_read_input_tokens": prompt - 3, "cache_creation_input_tokens": 0}
    message = {"id": f"msg_{request}", "role": "assistant", "model": "claude-sonnet-4-5-20250929", "usage": usage}
    message["content"] = [{"type": "text", "text": text}]
    return _line(uuid, parent, "assistant", ts, message, requestId=request)


def _uuid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def _boundary() -> dict:
    meta = {"trigger": "auto", "preTokens": 150_000}
    return _line(_uuid(20), None, "system", "2026-01-02T10:00:00.000Z", subtype="compact_boundary",
                 content="Conversation compacted", logicalParentUuid=_uuid(14), compactMetadata=meta)  # fmt: skip


def _folder(tmp_path: Path, with_a: bool = True) -> Path:
    first = [
        _user(_uuid(1), None, "the task, logged in A", "2026-01-01T09:00:00.000Z"),
        _answer(_uuid(2), _uuid(1), "first answer", "2026-01-01T09:00:05.000Z", "req_1", 20_000),
        _user(_uuid(3), _uuid(2), "more, in A", "2026-01-01T09:01:00.000Z"),
        _answer(_uuid(4), _uuid(3), "second answer", "2026-01-01T09:01:05.000Z", "req_2", 20_500),
    ]
    summary = _user(_uuid(21), _uuid(20), "This session is being continued ...", "2026-01-02T10:00:00.000Z",
                    isCompactSummary=True)  # fmt: skip
    other = [
        {"type": "summary", "summary": "A title", "leafUuid": _uuid(4)},
        _user(_uuid(11), _uuid(4), "go on, in B", "2026-01-01T11:00:00.000Z"),
        _answer(_uuid(12), _uuid(11), "third answer", "2026-01-01T11:00:05.000Z", "req_3", 21_000),
        _user(_uuid(13), _uuid(12), "and more, in B", "2026-01-02T09:59:00.000Z"),
        _answer(_uuid(14), _uuid(13), "fourth answer", "2026-01-02T09:59:05.000Z", "req_4", 150_000),
        _boundary(),
        summary,
        _answer(_uuid(22), _uuid(21), "after the summary", "2026-01-02T10:00:10.000Z", "req_5", 18_000),
    ]
    again = [
        _boundary(),
        summary,
        _answer(_uuid(22), _uuid(21), "after the summary", "2026-01-02T15:00:00.000Z", "req_5", 18_000),
        _user(_uuid(23), _uuid(22), "next, in A again", "2026-01-02T15:00:30.000Z"),
        _answer(_uuid(24), _uuid(23), "fifth answer", "2026-01-02T15:00:35.000Z", "req_6", 18_400),
    ]
    folder = tmp_path / "-Users-u-app"
    folder.mkdir()
    if with_a:
        (folder / f"{A}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in first + again))
    (folder / f"{B}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in other))
    return folder


def _read(path: Path) -> tuple[Run, list[Item], list[Request]]:
    records = list(READER.read(ReadContext(path, "0" * 16)))
    runs = [r for r in records if isinstance(r, Run)]
    assert len(runs) == 1
    return runs[0], [r for r in records if isinstance(r, Item)], [r for r in records if isinstance(r, Request)]


def _texts(items: list[Item]) -> list[str]:
    return [it.text for it in items]


def test_a_file_that_continues_another_is_read_after_that_history(tmp_path: Path) -> None:
    run, items, requests = _read(_folder(tmp_path) / f"{B}.jsonl")
    assert [r.step for r in requests] == [0, 1, 2]  # its own three responses, none of A's
    texts = _texts(items)
    # A's conversation comes first, as context the server was sent with B's first request
    assert texts.index("the task, logged in A") < texts.index("second answer") < texts.index("go on, in B")
    assert {it.step for it in items if it.text in ("the task, logged in A", "go on, in B")} == {0}  # sent at once
    assert run.metadata["continued_from"] == [{"file": f"{A}.jsonl", "lines": 4}]
    assert "cause" not in run.metadata["context_events"][0]  # B made the compaction: scored here


def test_a_compaction_a_resume_logged_again_is_the_other_files(tmp_path: Path) -> None:
    run, items, requests = _read(_folder(tmp_path) / f"{A}.jsonl")
    # req_5 is B's response logged again by the resume (stamped later): B's request, not A's
    assert [r.ts for r in requests] == [
        "2026-01-01T09:00:05.000Z",
        "2026-01-01T09:01:05.000Z",
        "2026-01-02T15:00:35.000Z",
    ]
    event = run.metadata["context_events"][0]
    assert event["cause"] == "resumed" and event["made_in"] == f"{B}.jsonl"
    texts = _texts(items)
    assert texts.index("second answer") < texts.index("go on, in B") < texts.index("fourth answer")
    assert run.metadata["continued_from"] == [{"file": f"{B}.jsonl", "lines": 5}]
    assert unscored_reason({"recorded_request": 2, "requests": 3}, "auto", None, None, "resumed") == RESUMED_REASON


def test_a_second_pass_counts_a_repeated_line_once(tmp_path: Path) -> None:
    """The file is read again with the other transcript's lines: a line logged twice is still dropped once."""
    path = _folder(tmp_path) / f"{B}.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3] + [lines[2]] + lines[3:]))  # B's first response, logged twice
    ctx = ReadContext(path, "0" * 16)
    assert len([r for r in READER.read(ctx) if isinstance(r, Request)]) == 3
    assert ctx.stats["duplicate_lines"] == 1


def test_without_the_other_file_the_run_is_read_as_before(tmp_path: Path) -> None:
    run, items, requests = _read(_folder(tmp_path, with_a=False) / f"{B}.jsonl")
    assert [r.step for r in requests] == [0, 1, 2]
    assert "the task, logged in A" not in _texts(items)
    assert "continued_from" not in run.metadata
