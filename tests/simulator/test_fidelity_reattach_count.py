"""A file past 5,000 tokens at chars/4 but not by the token count is re-read whole after a summary (Claude Code 2.1.132,
a transcript in its writer's shape).

The Read tool of cli.js 2.1.27 to the 2.1.132 binary estimates a file's content at characters / 4 and, past a
quarter of its limit, asks the API's token-count endpoint; the estimate decides only when that call fails. The
post-compact restore reads with a 5,000-token limit and makes a ``compact_file_reference`` note of a file past it.
Here the session reads a file of common long words (about 31,000 characters: chars/4 past 7,700, o200k about 2,600)
and is compacted; the transcript logs the file re-attached whole after the summary, as Eduardodmb/ClaudeWork
2558ae24 (2.1.132) logged a 22,246-character XML file (chars/4 5,561, o200k 3,444). Counted at chars/4 the preset
sends a 50-token note instead, and the prompt after the compaction is some 2,600 tokens short.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.simulator.fidelity import fidelity_frame
from replay.tokens.counting import count_items
from replay.tokens.loading import load_tokenizer
from tests.simulator.cc_transcript import PREFIX, Transcript

WORDS = "international organizations development information professional responsibilities".split()
CONTENT = "\n".join(" ".join(WORDS[(i + j) % len(WORDS)] for j in range(8)) for i in range(290))


def numbered(text: str) -> str:
    """``text`` as Claude Code's Read tool shows it: each line after a six-wide line number and an arrow."""
    return "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(text.split("\n"), 1))


def session(count) -> Transcript:
    t = Transcript(count, "2.1.132", "/w")
    t.user("u0", "Summarise the glossary.", "Summarise the glossary.")
    args = {"file_path": "/w/glossary.txt"}
    t.assistant("a1", {"type": "tool_use", "id": "t1", "name": "Read", "input": args}, str(args))
    shown = numbered(CONTENT)
    t.user(
        "r1", [{"type": "tool_result", "tool_use_id": "t1", "content": shown}], shown, toolUseResult={"type": "text"}
    )
    t.assistant("a2", {"type": "text", "text": "Read it."}, "Read it.")
    t.pastes(3, 9)
    summary = t.compact(9)
    file = {"filePath": "/w/glossary.txt", "content": CONTENT, "numLines": 290, "startLine": 1, "totalLines": 290}
    attachment = {"type": "file", "filename": "/w/glossary.txt", "content": {"type": "text", "file": file}}
    t.add({"type": "attachment", "uuid": "f9", "attachment": attachment})
    t.assistant("a9", {"type": "text", "text": "On it."}, "On it.", prompt=PREFIX + count(summary) + count(shown))
    return t


@pytest.fixture(scope="module")
def event(tmp_path_factory) -> dict:
    tok = load_tokenizer("o200k")
    assert len(CONTENT) / 4 > 5_000 > tok.count(CONTENT)  # past the limit at chars/4 only
    con = session(tok.count).store(Path(tmp_path_factory.mktemp("reattach-count")), "-w")
    count_items(con, tok)
    (row,) = [r for r in fidelity_frame(con, tok.tokenizer_id).to_dicts() if r["kind"] != "run"]
    con.close()
    return row


def test_a_file_under_the_token_limit_is_re_read_whole(event) -> None:
    """The preset re-reads the file whole, as the log shows: the prompt after the compaction within 3% of the log's
    (main, at chars/4, sent a 50-token note: 15% short)."""
    assert event["recorded_request"] == event["simulated_request"]
    assert event["reason"] is None
    assert abs(event["simulated_after"] / event["recorded_after"] - 1) <= 0.03, event
