"""Claude Code 2.1.77 on reads its memory files again after a compaction (a transcript in its writer's shape, 2.1.136).

The session creates ``~/.claude/CLAUDE.md`` with Write (its result's ``type`` "create"), edits it, and is compacted;
the cleanup after the compaction clears the memoised user context (cli.js 2.1.77 on, ``post_compact_cleanup``), so
the first request after the summary sends the file as the edit left it, with no line in the log for it (as
Eduardodmb/ClaudeWork 762cc180, 2.1.136, did with a 17,591-character CLAUDE.md). 2.1.76 does not re-read it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.readers.claude_code_memory import MEMORY_REREAD, memory_file
from replay.simulator.fidelity import fidelity_frame
from replay.tokens.counting import count_items
from replay.tokens.loading import load_tokenizer
from tests.simulator.cc_transcript import PREFIX, Transcript

MEMORY = "\n".join(f"- rule {i}: keep the build green and the docs current for module {i}" for i in range(400))
EDITED = MEMORY.replace("- rule 7:", "- rule 7 (updated):", 1)


def session(count, version: str) -> Transcript:
    t = Transcript(count, version, "/home/u/proj")
    path = "/home/u/.claude/CLAUDE.md"
    t.user("u0", "Write my global instructions.", "Write my global instructions.")
    write = {"file_path": path, "content": MEMORY}
    t.call(1, "Write", write, f"File created successfully at: {path}", {"type": "create", "filePath": path})
    edit = {"file_path": path, "old_string": "- rule 7:", "new_string": "- rule 7 (updated):"}
    t.call(2, "Edit", edit, f"The file {path} has been updated.", {"filePath": path, "originalFile": MEMORY})
    t.pastes(3, 9)
    summary = t.compact(9)
    # the harness re-reads ~/.claude/CLAUDE.md (as edited); the re-read CLAUDE.md is the only change
    t.assistant("a9", {"type": "text", "text": "On it."}, "On it.", prompt=PREFIX + count(summary) + count(EDITED))
    return t


def ingested(root: Path, version: str):
    tok = load_tokenizer("o200k")
    con = session(tok.count, version).store(root, "-home-u-proj")
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
