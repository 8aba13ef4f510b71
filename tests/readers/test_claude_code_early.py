"""Claude Code transcripts of 0.2.109-1.0.17: a compaction summary logged without ``isCompactSummary``.

Shapes from the npm builds' cli.js (minified; synthetic content here): ``insertMessageChain`` writes each message
with ``parentUuid`` (null for the first of a chain), ``isSidechain``, ``userType``, ``cwd``, ``sessionId``,
``version``. 0.2.109-1.0.3 log one assistant line per response with ``costUSD`` and ``durationMs`` and no
``requestId`` (the response's ``message.id`` identifies it); 1.0.10 on log ``requestId``. After a compaction the
conversation becomes ``[user message(summary), ...re-read files]``: the summary is a plain user message opening
"This session is being continued from a previous conversation that ran out of context." with ``parentUuid`` null;
1.0.21 is the first build that marks it ``isCompactSummary: true``.
"""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import Item, Request, Run
from replay.readers.base import ReadContext
from replay.readers.claude_code import READER

# cli.js 0.2.109-1.0.17, the compaction summary template's first sentence
SUMMARY_OPENING = "This session is being continued from a previous conversation that ran out of context."
SESSION = "8f0e2b1c-0000-4000-8000-000000000001"


def line(uuid: str, parent: str | None, version: str, **rest) -> dict:
    base = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/tmp/p"}
    return {
        **base,
        "sessionId": SESSION,
        "version": version,
        "uuid": uuid,
        "timestamp": f"2025-06-01T10:00:{uuid[-1]}0Z",
        **rest,
    }


def user(uuid: str, parent: str | None, text: str, version: str) -> dict:
    return line(uuid, parent, version, type="user", message={"role": "user", "content": text})


def assistant(uuid: str, parent: str, mid: str, text: str, prompt: int, version: str) -> dict:
    usage = {
        "input_tokens": 4,
        "cache_creation_input_tokens": prompt - 4,
        "cache_read_input_tokens": 0,
        "output_tokens": 9,
    }
    message = {"id": mid, "model": "claude-sonnet-4-20250514", "role": "assistant", "type": "message", "usage": usage}
    extra = {"costUSD": 0.01, "durationMs": 900} if version < "1.0.10" else {"requestId": f"req_{mid}"}
    return line(
        uuid,
        parent,
        version,
        type="assistant",
        message={**message, "content": [{"type": "text", "text": text}]},
        **extra,
    )


def transcript(tmp_path: Path, version: str) -> Path:
    summary = f"{SUMMARY_OPENING} The conversation is summarized below:\nThe user asked for a fix; it was made."
    lines = [
        user("u1", None, "fix the bug " * 300, version),
        assistant("a1", "u1", "msg_1", "fixed", 12_000, version),
        user("u2", "a1", "now add a test", version),
        assistant("a2", "u2", "msg_2", "added", 12_100, version),
        user("s1", None, summary, version),  # the compaction's summary: a new chain
        user("u3", "s1", "thanks, run it", version),
        assistant("a3", "u3", "msg_3", "ran", 800, version),
        {"type": "summary", "summary": "Bug fix and test", "leafUuid": "a3"},
    ]
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def test_unflagged_summary_is_a_compaction_in_1_0_0_and_1_0_17(tmp_path: Path) -> None:
    """The summary drops everything before it from the next request on, as the flagged one of 1.0.21 does: read as
    a user turn, the third prompt held the whole earlier conversation (about 12k tokens where 800 were sent)."""
    for version in ("1.0.0", "1.0.17"):
        records = read(transcript(tmp_path, version))
        run = next(r for r in records if isinstance(r, Run))
        items = {i.seq: i for i in records if isinstance(i, Item)}
        (event,) = run.metadata["context_events"]
        assert event["kind"] == "compaction" and event["step"] == 2 and event["line"] == 5
        assert items[event["summary_seq"]].kind == "summary"
        assert event["drop"] == [[0, event["summary_seq"]]]
        assert [r.prompt_tokens for r in records if isinstance(r, Request)] == [12_000, 12_100, 800]
        assert run.metadata["titles"] == ["Bug fix and test"]


def test_a_flagged_version_is_not_read_by_the_opening_sentence(tmp_path: Path) -> None:
    """From 1.0.21 the flag says it: a user message that merely opens with the sentence is the user's."""
    records = read(transcript(tmp_path, "1.0.21"))
    run = next(r for r in records if isinstance(r, Run))
    assert "context_events" not in run.metadata
    assert sum(isinstance(i, Item) and i.kind == "summary" for i in records) == 0


def test_a_session_that_opens_with_the_summary_has_nothing_to_drop(tmp_path: Path) -> None:
    """A resumed 1.0.x session whose file starts with the summary: no compaction happened in this file."""
    path = transcript(tmp_path, "1.0.3")
    path.write_text("".join(ln + "\n" for ln in path.read_text().splitlines()[4:]))
    records = read(path)
    run = next(r for r in records if isinstance(r, Run))
    assert "context_events" not in run.metadata
