"""A conversation resumed in a new process, on a transcript in Claude Code's shape (2.1.87, which logs no attachment).

Claude Code loads a conversation to resume it (conversationRecovery) and rebuilds its read-file state from the loaded
messages' Read, Write and Edit calls (``extractReadFilesFromMessages``, in the REPL and in print mode alike): the files
a compaction re-attached are not calls, so they are not in it. LAF-US/IDAHO-VAULT 675b2557 (2.1.92, claude-desktop)
resumed after 5 hours and compacted at once: the prompt after held its summary and no file. Here a session reads a
file, is compacted (the file comes back after the summary), is resumed (the sentinel "No response requested." the
loader appends) and compacted again: the second prompt after holds the summary alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.simulator.fidelity import fidelity_frame
from replay.tokens.counting import count_items
from replay.tokens.loading import load_tokenizer
from tests.simulator.cc_transcript import Transcript

CONTENT = "\n".join(f"line {i}: the quick brown fox jumps over the lazy dog" for i in range(300))


def numbered(text: str) -> str:
    """``text`` as Claude Code's Read tool shows it: each line after a six-wide line number and an arrow."""
    return "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(text.split("\n"), 1))


def session(count) -> Transcript:
    t = Transcript(count, "2.1.87", "/w")
    t.user("u0", "Read the notes.", "Read the notes.")
    shown = numbered(CONTENT)
    file = {"filePath": "/w/notes.md", "content": CONTENT, "numLines": 300, "startLine": 1, "totalLines": 300}
    t.call(1, "Read", {"file_path": "/w/notes.md"}, shown, {"type": "text", "file": file})
    t.assistant("a1x", {"type": "text", "text": "Read it."}, "Read it.")
    t.pastes(2, 8)
    first = t.compact(8)
    t.sent = count(first) + count(shown)  # the summary and the file re-read after it (not logged)
    t.assistant("a9", {"type": "text", "text": "On it."}, "On it.")
    t.user("u11", "Go on.", "Go on.")
    sentinel = {"type": "text", "text": "No response requested."}
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    message = {"id": "m-z", "model": "<synthetic>", "role": "assistant", "content": [sentinel], "usage": usage}
    t.add({"type": "assistant", "uuid": "z", "message": message})
    t.sent += count("No response requested.")
    t.user("u12", "Carry on with the notes.", "Carry on with the notes.")
    t.assistant("a12", {"type": "text", "text": "Carrying on."}, "Carrying on.")
    t.pastes(13, 19)
    second = t.compact(19)
    t.sent = count(second)  # a resumed process re-reads no file: none is in its read-file state
    t.assistant("a20", {"type": "text", "text": "Done."}, "Done.")
    return t


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list[dict]:
    tok = load_tokenizer("o200k")
    con = session(tok.count).store(Path(tmp_path_factory.mktemp("resume")), "-w")
    count_items(con, tok)
    (meta,) = con.execute("SELECT metadata FROM runs").fetchall()[0]
    assert json.loads(meta)["resumes"] == [{"step": 9, "line": 22}], meta  # the sentinel; request 11 follows
    out = [r for r in fidelity_frame(con, tok.tokenizer_id).to_dicts() if r["kind"] != "run"]
    con.close()
    return out


def test_a_resumed_process_re_attaches_no_file_the_log_shows_no_call_for(rows) -> None:
    """Both compactions fire where the log's did; after the second the preset re-reads nothing (before the resume was
    read, it re-read the file the first compaction had re-attached: 5,396 tokens, 25% over)."""
    first, second = rows
    for row in rows:
        assert row["recorded_request"] == row["simulated_request"], row
        assert abs(row["simulated_after"] / row["recorded_after"] - 1) <= 0.03, row
    assert first["simulated_after"] - second["simulated_after"] > 3_000  # the file, after the first only
