"""Claude Code 2.1.77 on reads its memory files again after a compaction (a transcript in its writer's shape, 2.1.136).

The session creates ``~/.claude/CLAUDE.md`` with Write (its result's ``type`` "create"), edits it, and is compacted;
the cleanup after the compaction clears the memoised user context (cli.js 2.1.77 on, ``post_compact_cleanup``), so
the first request after the summary sends the file as the edit left it, with no line in the log for it (as
Eduardodmb/ClaudeWork 762cc180, 2.1.136, did with a 17,591-character CLAUDE.md). 2.1.76 does not re-read it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.ingest import ingest
from replay.readers.claude_code_memory import MEMORY_REREAD, memory_file
from replay.simulator.fidelity import fidelity_frame
from replay.store import open_store

PREFIX = 20_000  # the harness's system prompt, tools and the memory files it read at start
MODEL = "claude-opus-4-5-20251101"
MEMORY = "\n".join(f"- rule {i}: keep the build green and the docs current for module {i}" for i in range(400))
EDITED = MEMORY.replace("- rule 7:", "- rule 7 (updated):", 1)


def session(count, version: str) -> list[dict]:
    times = iter(f"2026-05-01T10:{m // 60:02d}:{m % 60:02d}.000Z" for m in range(3600))
    base = {"sessionId": "s1", "version": version, "cwd": "/home/u/proj", "entrypoint": "cli", "userType": "external"}
    lines: list[dict] = []
    parent: list[str | None] = [None]
    sent = [0]

    def add(entry: dict) -> None:
        lines.append({**base, "parentUuid": parent[0], "timestamp": next(times), **entry})
        parent[0] = entry["uuid"]

    def user(uuid: str, content: object, text: str, **extra: object) -> None:
        sent[0] += count(text)
        add({"type": "user", "uuid": uuid, "message": {"role": "user", "content": content}, **extra})

    def assistant(uuid: str, block: dict, text: str, prompt: int | None = None) -> None:
        prompt = PREFIX + sent[0] if prompt is None else prompt
        usage = {"input_tokens": 10, "cache_read_input_tokens": prompt - 10, "cache_creation_input_tokens": 0}
        message = {"id": f"m-{uuid}", "model": MODEL, "role": "assistant", "usage": {**usage, "output_tokens": 30}}
        add({"type": "assistant", "uuid": uuid, "requestId": f"r-{uuid}", "message": {**message, "content": [block]}})
        sent[0] += count(text)

    def call(k: int, name: str, args: dict, result: str, outcome: dict) -> None:
        assistant(f"a{k}", {"type": "tool_use", "id": f"t{k}", "name": name, "input": args}, json.dumps(args))
        block = {"type": "tool_result", "tool_use_id": f"t{k}", "content": result}
        user(f"r{k}", [block], result, toolUseResult=outcome)

    path = "/home/u/.claude/CLAUDE.md"
    user("u0", "Write my global instructions.", "Write my global instructions.")
    write = {"file_path": path, "content": MEMORY}
    call(1, "Write", write, f"File created successfully at: {path}", {"type": "create", "filePath": path})
    edit = {"file_path": path, "old_string": "- rule 7:", "new_string": "- rule 7 (updated):"}
    call(2, "Edit", edit, f"The file {path} has been updated.", {"filePath": path, "originalFile": MEMORY})
    for k in range(3, 10):  # long pastes (20,000 tokens each): the last one takes the prompt past 167,000
        paste = f"paste {k} " + "lorem ipsum dolor sit amet " * 4_000
        user(f"u{k}", paste, paste)
        if k < 9:
            assistant(f"a{k}", {"type": "text", "text": f"Noted {k}."}, f"Noted {k}.")
    add(
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b9",
            "logicalParentUuid": parent[0],
            "content": "Conversation compacted",
            "compactMetadata": {"trigger": "auto", "preTokens": PREFIX + sent[0]},
        }
    )
    lines[-1]["parentUuid"] = None
    summary = "summary of the session so far " * 200
    add(
        {
            "type": "user",
            "uuid": "s9",
            "message": {"role": "user", "content": summary},
            "isCompactSummary": True,
            "isVisibleInTranscriptOnly": True,
        }
    )
    # the harness re-reads ~/.claude/CLAUDE.md (as edited); the re-read CLAUDE.md is the only change
    after = PREFIX + count(summary) + count(EDITED)
    assistant("a9", {"type": "text", "text": "On it."}, "On it.", prompt=after)
    return lines


def ingested(root: Path, version: str):
    from replay.tokens.counting import count_items
    from replay.tokens.loading import load_tokenizer

    tok = load_tokenizer("o200k")
    path = root / "projects" / "-home-u-proj" / "s1.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(json.dumps(x) for x in session(tok.count, version)) + "\n")
    con = open_store(root / "s.duckdb")
    ingest(con, [path])
    count_items(con, tok)
    return con, tok


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    con, tok = ingested(Path(tmp_path_factory.mktemp("memory")), "2.1.136")
    yield con, tok
    con.close()


def test_the_reader_adds_the_created_memory_file_as_edited_after_the_summary(store) -> None:
    con, _ = store
    rows = con.execute(
        "SELECT kind, tool_name, text FROM items WHERE tool_name = ? ORDER BY seq", [MEMORY_REREAD]
    ).fetchall()
    assert len(rows) == 1
    kind, _, content = rows[0]
    assert kind == "attachment" and content.endswith(EDITED) and "/home/u/.claude/CLAUDE.md" in content


def test_the_preset_and_the_recorded_policy_send_it(store) -> None:
    """The prompt after the compaction within 3% of the log's (main: the 7,200 tokens of CLAUDE.md short, -25%)."""
    con, tok = store
    (row,) = [r for r in fidelity_frame(con, tok.tokenizer_id).to_dicts() if r["kind"] != "run"]
    assert row["recorded_request"] == row["simulated_request"]
    assert abs(row["simulated_after"] / row["recorded_after"] - 1) <= 0.03, row


def test_2_1_76_does_not_re_read_it(tmp_path) -> None:
    con, _ = ingested(tmp_path, "2.1.76")
    assert con.execute("SELECT count(*) FROM items WHERE tool_name = ?", [MEMORY_REREAD]).fetchone() == (0,)
    con.close()


@pytest.mark.parametrize(
    ("path", "cwd", "read"),
    [
        ("/home/u/.claude/CLAUDE.md", "/home/u/proj", True),
        ("/home/u/proj/CLAUDE.md", "/home/u/proj/sub", True),
        ("/home/u/proj/sub/CLAUDE.md", "/home/u/proj", False),  # nested: read when a file there is, not at start
        ("/home/u/proj/.claude/rules/style.md", "/home/u/proj", True),
        ("/home/u/proj/CLAUDE.local.md", "/home/u/proj", True),
        ("/home/u/.claude/projects/-home-u-proj/memory/MEMORY.md", "/home/u/proj", True),
        ("/home/u/proj/README.md", "/home/u/proj", False),
        ("C:\\Users\\eduar\\.claude\\CLAUDE.md", "C:\\Users\\eduar\\.claude", True),
        (
            "C:\\Users\\eduar\\.claude\\projects\\C--Users-eduar--claude\\memory\\MEMORY.md",
            "C:\\Users\\eduar\\.claude",
            True,
        ),
        ("C:\\Users\\eduar\\docs\\.claude\\enterprise\\CLAUDE.md", "C:\\Users\\eduar\\.claude", False),
    ],
)
def test_memory_files(path: str, cwd: str, read: bool) -> None:
    assert memory_file(path, cwd) is read
